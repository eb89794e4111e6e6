"""Liveness: how the coordinator finds a dead or hung worker, and a worker a dead coordinator.

A failure is decided by evidence, never by how fast an answer comes: on a busy node a healthy rank may take many
seconds to answer (the old fixed 4 s answer time raised false alarms with 4 ranks on 2 loaded cores).

- **Process state.** At start-up every rank tells every other one who it is (`Peer`: host, boot id, pid and start
  time of its MPI process). A peer on the same machine is watched through /proc: a process that is gone (or a
  zombie, or its pid reused) is dead at once; one *stopped* (state T, SIGSTOP) for `TIMING.deadline` seconds hangs;
  one that runs or sleeps is alive however late its answer.
- **Progress.** The coordinator pings every worker every `TIMING.ping_interval` seconds (on its own communicator,
  answered by a thread on the worker, so a computing worker answers too). A worker without an answer for
  `TIMING.hang` seconds is hung only if its process also used no CPU time meanwhile (same machine; a remote worker
  has only its answers to show).
- **Lost connections.** A ping MPI cannot send (the peer's endpoint is gone) is a failure. mpich's process manager
  (hydra) notices a dead process by its closed PMI socket: by default it SIGKILLs every rank at once; with
  `mpiexec -disable-auto-cleanup` it sends the survivors SIGUSR1, which wakes the check: a remote worker that then
  stays silent for `AFTER_SIGNAL` seconds is the suspect (docs/distributed.md, "Faults").
- **Start-up** (before and inside MPI_Init, the communicator set-up) is the supervisor's (`launch.supervise`).
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from daphnec.runtime.distributed.protocol import COORDINATOR, TIMING, Tag, send_control, try_recv_control

AFTER_SIGNAL = 1.5
"""Seconds a remote worker may stay silent after hydra reported a dead process (SIGUSR1) before it is the suspect."""

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class Peer:
    """Who a rank's MPI process is: enough to find it in /proc on the same machine (and only there)."""

    host: str
    boot: str
    pid: int
    start: int
    """Start time in clock ticks since boot (/proc/<pid>/stat field 22): tells a reused pid apart."""


@dataclass(frozen=True)
class Observed:
    """A peer's process as /proc shows it: `state` is its letter (R, S, D, T, ...) and `cpu` its CPU seconds;
    `gone` when the process has ended."""

    gone: bool
    state: str = ""
    cpu: float = 0.0


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            return f.read().strip()
    except OSError:
        return ""


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name (field 3 onwards), or None when there is none."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def process_state(pid: int) -> str:
    """The state letter of process `pid` (R, S, D, T, Z, ...; "" when there is none)."""
    fields = _stat(pid)
    return fields[0] if fields else ""


def me() -> Peer:
    fields = _stat(os.getpid())
    return Peer(socket.gethostname(), _boot_id(), os.getpid(), int(fields[19]) if fields else -1)


def watchable(peers: list[Peer]) -> dict[int, Peer]:
    """The ranks whose process this one can watch: same host and boot, and /proc shows that very process (a
    container with its own pid namespace under the same name would not)."""
    here = me()
    out: dict[int, Peer] = {}
    for rank, p in enumerate(peers):
        if p.pid == here.pid or p.host != here.host or p.boot != here.boot or not p.boot:
            continue
        fields = _stat(p.pid)
        if fields is not None and int(fields[19]) == p.start:
            out[rank] = p
    return out


def observe(p: Peer) -> Observed:
    fields = _stat(p.pid)
    if fields is None or int(fields[19]) != p.start or fields[0] in "ZXx":
        return Observed(gone=True)
    return Observed(False, fields[0], (int(fields[11]) + int(fields[12])) / _TICK)


class CoordinatorLiveness:
    """Rank 0's check of the workers (see the module docstring); `on_failure(rank, reason)` is called once, for the
    first failed worker. `excused(rank)` (called under `lock`) says whether a worker whose process ended had
    detached first: the coordinator holds `lock` while it receives DETACHED messages."""

    def __init__(self, comm: Any, workers: list[int], on_failure: Callable[[int, str], None],
                 watched: dict[int, Peer] | None = None, excused: Callable[[int], bool] | None = None):  # fmt: skip
        self.comm = comm
        self.workers = workers
        self.on_failure = on_failure
        self.watched = watched or {}
        self.excused = excused or (lambda rank: False)
        self.lock = threading.Lock()
        self.alarm = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="daphnec-liveness", daemon=True)
        now = time.monotonic()
        self.sent: dict[int, float | None] = dict.fromkeys(workers)
        self.answered: dict[int, float] = dict.fromkeys(workers, now)
        self.cpu_at_answer: dict[int, float] = {}
        self.stopped_since: dict[int, float] = {}
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
            verdict = self._verdict(time.monotonic())
            if verdict is not None:
                self.on_failure(*verdict)
                return
            if self.alarm.wait(TIMING.ping_interval / 2) and not self._stop.is_set():
                self.alarm.clear()
                self.signalled_at = time.monotonic()
                self.sent = dict.fromkeys(self.workers)  # a fresh round right away

    def _drain(self) -> None:
        from mpi4py import MPI

        while (m := try_recv_control(self.comm, MPI.ANY_SOURCE, int(Tag.PONG))) is not None:
            w = m[0]
            self.answered[w] = time.monotonic()
            self.sent[w] = None
            if w in self.watched:
                self.cpu_at_answer[w] = observe(self.watched[w]).cpu

    def _verdict(self, now: float) -> tuple[int, str] | None:
        for w in self.workers:
            reason = self._process_verdict(w, now) if w in self.watched else None
            reason = reason or self._answer_verdict(w, now) or self._ping(w, now)
            if reason is not None:
                return w, reason
        return None

    def _process_verdict(self, w: int, now: float) -> str | None:
        """What /proc says about worker w's process: ended, or stopped for `TIMING.deadline` seconds."""
        p = self.watched[w]
        seen = observe(p)
        if seen.gone:
            with self.lock:
                if self.excused(w):
                    self.workers = [o for o in self.workers if o != w]
                    return None
            return f"its process (pid {p.pid}) has ended"
        if seen.state not in "Tt":
            self.stopped_since.pop(w, None)
            return None
        since = self.stopped_since.setdefault(w, now)
        if now - since < TIMING.deadline:
            return None
        return f"its process (pid {p.pid}) is stopped (state {seen.state}) and made no progress for {now - since:.0f} s"

    def _answer_verdict(self, w: int, now: float) -> str | None:
        """A worker silent for `TIMING.hang` seconds whose process used no CPU meanwhile (or, remote, that shows
        nothing else); after hydra's SIGUSR1 a remote worker silent for `AFTER_SIGNAL` seconds."""
        sent = self.sent[w]
        if sent is None:
            return None
        silent = now - sent
        if w not in self.watched:
            if self.signalled_at is not None and silent > AFTER_SIGNAL:
                return (f"the process manager reported a dead process and this rank did not answer a liveness "
                        f"check for {silent:.1f} s")  # fmt: skip
            if silent > TIMING.hang:
                return f"it answered no liveness check for {silent:.0f} s"
            return None
        if silent > TIMING.hang and observe(self.watched[w]).cpu <= self.cpu_at_answer.get(w, 0.0):
            return f"it answered no liveness check for {silent:.0f} s and its process (pid {self.watched[w].pid}) " \
                   "used no CPU time meanwhile (it hangs)"  # fmt: skip
        return None

    def _ping(self, w: int, now: float) -> str | None:
        if self.sent[w] is not None or now - self.answered[w] < TIMING.ping_interval:
            return None
        try:
            send_control(self.comm, w, Tag.PING)
        except Exception as e:  # noqa: BLE001 - mpi4py raises MPI.Exception: the connection is gone
            return f"the connection to it was lost ({str(e).strip() or type(e).__name__})"
        self.sent[w] = now
        return None


class WorkerLiveness:
    """Answers the coordinator's pings, and ends this worker when the coordinator is gone: at once when its
    process (on this machine) has ended; after hydra's SIGUSR1, when no ping came for `TIMING.deadline` seconds.
    No orphans either way."""

    def __init__(self, comm: Any, rank: int, coordinator: Peer | None = None):
        self.comm = comm
        self.rank = rank
        self.coordinator = coordinator
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
        looked = 0.0
        while not self._stop.is_set():
            while try_recv_control(self.comm, COORDINATOR, int(Tag.PING)) is not None:
                send_control(self.comm, COORDINATOR, Tag.PONG)
                self.last_ping = time.monotonic()
            now = time.monotonic()
            if self.coordinator is not None and now - looked > TIMING.ping_interval:
                looked = now
                if observe(self.coordinator).gone and not self._stop.is_set():
                    self._exit(f"the coordinator's process (rank 0, pid {self.coordinator.pid}) has ended")
            if self.alarm.is_set() and now - self.last_ping > TIMING.deadline:
                self._exit("the coordinator (rank 0) stopped answering after a process failure")
            time.sleep(0.02)

    def _exit(self, why: str) -> None:
        sys.stderr.write(f"daphnec: distributed worker rank {self.rank}: {why}; exiting\n")
        sys.stderr.flush()
        os._exit(1)
