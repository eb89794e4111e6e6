"""Liveness: the coordinator pings every worker; a worker that stops answering has failed.

Why pings and not just deadlines on results: a pipeline task may legitimately run for minutes, and a worker may
die while the coordinator computes something locally. A thread on each rank, on its own communicator, keeps the
check independent of what the main thread does (numpy/scipy kernels release the GIL between row batches, so the
thread gets to run even while the worker computes).

mpich's process manager (hydra) matters here (docs/distributed.md, "Faults"):
- by default (`-enable-auto-cleanup`) it SIGKILLs every rank as soon as one dies, so the job ends at once with
  exit status 9 and hydra's "BAD TERMINATION ... PID" report; no rank gets to say anything;
- with `mpiexec -disable-auto-cleanup` the survivors keep running and hydra sends each of them SIGUSR1. The
  coordinator's handler wakes this thread for an immediate ping round; a worker's handler arms a watchdog that
  exits the worker when the coordinator itself has stopped pinging (it was the one that died).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from daphnec.runtime.distributed.protocol import COORDINATOR, TIMING, Tag, send_control, try_recv_control

AFTER_SIGNAL_DEADLINE = 1.5
"""Seconds a worker may stay silent after hydra reported a dead process (SIGUSR1) before it is the suspect."""


class CoordinatorLiveness:
    """Pings each worker every `TIMING.ping_interval` seconds; `on_failure(rank, reason)` is called once for the
    first worker without an answer for `TIMING.deadline` seconds."""

    def __init__(self, comm: Any, workers: list[int], on_failure: Callable[[int, str], None]):
        self.comm = comm
        self.workers = workers
        self.on_failure = on_failure
        self.alarm = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="daphnec-liveness", daemon=True)
        now = time.monotonic()
        self.sent: dict[int, float | None] = dict.fromkeys(workers)
        self.answered: dict[int, float] = dict.fromkeys(workers, now)
        self.signalled_at: float | None = None

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self.alarm.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._drain()  # answers first: a late look at the queue must not look like a late answer
            suspect = self._suspect(time.monotonic())
            if suspect is not None:
                self.on_failure(*suspect)
                return
            self._ping(time.monotonic())
            if self.alarm.wait(TIMING.ping_interval / 2) and not self._stop.is_set():
                self.alarm.clear()
                self.signalled_at = time.monotonic()
                self.sent = dict.fromkeys(self.workers)  # a fresh round right away

    def _drain(self) -> None:
        from mpi4py import MPI

        while (m := try_recv_control(self.comm, MPI.ANY_SOURCE, int(Tag.PONG))) is not None:
            self.answered[m[0]] = time.monotonic()
            self.sent[m[0]] = None

    def _ping(self, now: float) -> None:
        for w in self.workers:
            if self.sent[w] is None and now - self.answered[w] >= TIMING.ping_interval:
                send_control(self.comm, w, Tag.PING)
                self.sent[w] = now

    def _suspect(self, now: float) -> tuple[int, str] | None:
        deadline = TIMING.deadline if self.signalled_at is None else min(TIMING.deadline, AFTER_SIGNAL_DEADLINE)
        for w in self.workers:
            sent = self.sent[w]
            if sent is not None and now - sent > deadline:
                why = "the process manager reported a dead process and this rank" if self.signalled_at else "it"
                return w, f"{why} did not answer a liveness check within {deadline:g} s (the process died or hangs)"
        return None


class WorkerLiveness:
    """Answers the coordinator's pings. After hydra's SIGUSR1 (some rank died), a worker that hears no ping from
    the coordinator for `TIMING.deadline` seconds concludes the coordinator died and exits: no orphans."""

    def __init__(self, comm: Any, rank: int):
        self.comm = comm
        self.rank = rank
        self.alarm = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="daphnec-liveness", daemon=True)
        self.last_ping = time.monotonic()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.is_set():
            while try_recv_control(self.comm, COORDINATOR, int(Tag.PING)) is not None:
                send_control(self.comm, COORDINATOR, Tag.PONG)
                self.last_ping = time.monotonic()
            if self.alarm.is_set() and time.monotonic() - self.last_ping > TIMING.deadline:
                sys.stderr.write(f"daphnec: distributed worker rank {self.rank}: the coordinator (rank 0) stopped "
                                 "answering after a process failure; exiting\n")  # fmt: skip
                sys.stderr.flush()
                os._exit(1)
            time.sleep(0.02)
