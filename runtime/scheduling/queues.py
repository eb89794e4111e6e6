"""Task queues (DAPHNE's TaskQueues.h): one CENTRALIZED queue, one PERGROUP queue per CPU package, or one PERCPU
queue per worker. A queue is a FIFO of row ranges that is closed once filled; workers pop until it is empty."""

from __future__ import annotations

import threading
from collections import deque

from daphnec.runtime.scheduling.config import LAYOUTS

Task = tuple[int, int]


class TaskQueue:
    """A thread-safe FIFO of tasks (row ranges [start, end)), stored as strided runs of equal chunks so that a
    million one-row tasks take one entry; `pop` returns None once it is empty (all tasks are enqueued before the
    workers start, so empty means done: DAPHNE's EOF)."""

    def __init__(self) -> None:
        self._runs: deque[list[int]] = deque()  # [start, count, chunk, stride]
        self._lock = threading.Lock()
        self._count = 0
        self._rows = 0  # rows of the tasks still queued

    def push(self, task: Task) -> None:
        self.push_run(task[0], 1, task[1] - task[0], task[1] - task[0])

    def push_run(self, start: int, count: int, chunk: int, stride: int) -> None:
        """`count` tasks of `chunk` rows starting at `start`, `start + stride`, ..."""
        if count > 0:
            self._runs.append([start, count, chunk, stride])
            self._count += count
            self._rows += count * chunk

    def pop(self) -> Task | None:
        return self.pop_run(0)

    def pop_run(self, max_rows: int, share: int = 0) -> Task | None:
        """Pop the next task and, while they continue it and the rows stay within the limit, the tasks after it,
        as one range: fine-grained schemes (SS) then pay the per-call overhead once per physical batch, not once
        per row, while the distribution over workers still follows the scheme. The limit is `max_rows`, and with
        `share` > 0 also at most 1/`share` of the rows still queued, but not below `max_rows // 16` (nor below one
        task): batches shrink as the queue drains, so the last ones are fine and the workers finish together.
        """
        with self._lock:
            if not self._runs:
                return None
            if share > 0:
                max_rows = max(max_rows // 16, min(max_rows, self._rows // share))
            run = self._runs[0]
            start, count, chunk, stride = run
            take = max(1, min(count, max_rows // chunk)) if stride == chunk and chunk > 0 else 1
            run[0] += take * stride
            run[1] -= take
            self._count -= take
            if run[1] == 0:
                self._runs.popleft()
            end = start + (take - 1) * stride + chunk
            while stride == chunk and self._runs and self._runs[0][0] == end:  # a following run continues it
                nxt = self._runs[0]
                more = min(nxt[1], (max_rows - (end - start)) // nxt[2]) if nxt[2] == nxt[3] else 0
                if more <= 0:
                    break
                nxt[0] += more * nxt[3]
                nxt[1] -= more
                self._count -= more
                end += more * nxt[2]
                if nxt[1] == 0:
                    self._runs.popleft()
            self._rows -= end - start
            return start, end

    def __len__(self) -> int:
        return self._count


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
