"""Task queues (DAPHNE's TaskQueues.h): one CENTRALIZED queue, one PERGROUP queue per CPU package, or one PERCPU
queue per worker. A queue is a FIFO of row ranges that is closed once filled; workers pop until it is empty."""

from __future__ import annotations

import threading
from collections import deque

Task = tuple[int, int]

LAYOUTS = ("CENTRALIZED", "PERGROUP", "PERCPU")


class TaskQueue:
    """A thread-safe FIFO of row ranges [start, end); `pop` returns None once it is empty (all tasks are enqueued
    before the workers start, so empty means done: DAPHNE's EOF)."""

    def __init__(self) -> None:
        self._tasks: deque[Task] = deque()
        self._lock = threading.Lock()

    def push(self, task: Task) -> None:
        self._tasks.append(task)

    def pop(self) -> Task | None:
        with self._lock:
            return self._tasks.popleft() if self._tasks else None

    def __len__(self) -> int:
        return len(self._tasks)


def num_queues(layout: str, num_workers: int, num_packages: int) -> int:
    if layout == "CENTRALIZED":
        return 1
    if layout == "PERGROUP":
        return max(1, num_packages)
    if layout == "PERCPU":
        return num_workers
    raise ValueError(f"unknown queue layout '{layout}' (valid: {', '.join(LAYOUTS)})")


def home_queue(layout: str, worker: int, package_index: int) -> int:
    """The queue a worker starts on: 0 (CENTRALIZED), its package's (PERGROUP) or its own (PERCPU)."""
    if layout == "CENTRALIZED":
        return 0
    return package_index if layout == "PERGROUP" else worker
