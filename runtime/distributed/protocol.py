"""The coordinator/worker protocol: message tags, control-message format, communicators, polling with deadlines.

Three communicators (duplicates of COMM_WORLD) keep the traffic apart, so a probe for one kind of message can
never match another kind:
- `ctrl`: control messages, small UTF-8 JSON objects (`send_control` / `recv_control`); every one is matched with
  `Improbe` + `Recv`, so its length needs no separate size message (DAPHNE sends DATASIZE/MLIRSIZE first).
- `data`: raw numpy buffers of matrices (`serialization.py`), posted in the order the control messages announce.
- `live`: the liveness pings of `liveness.py`, answered by a thread on every rank.

Nothing ever blocks in MPI: requests are tested in a loop (`wait_until`) that also checks a failure flag, because a
blocking receive from a rank that has died never returns (mpich keeps waiting; see docs/distributed.md, "Faults").

Tags (DAPHNE's MPIHelper.h numbers in brackets where the meaning is the same):

| tag | dir | payload |
|---|---|---|
| CONFIG 20 | C->W | `{"config": DaphneConfig.to_dict()}`, once before the first pipeline: the workers' flags |
| PIPELINE 21 | C->W | one pipeline call: body key (+ IR text the first time) [MLIR 9], inputs, shipments, ids to free |
| BROADCAST 0 | data | buffers of a replicated object (`Ibcast`) [BROADCAST 0] |
| DATA 4 | data | buffers of one row block of a partitioned object (`Isend`) [DATA 4] |
| TASK 22 | C->W | `{"rows": [a, b]}`: compute rows a..b-1 of the current pipeline |
| STOP 23 | C->W | no more tasks for the current pipeline |
| COMPUTERESULT 11 | W->C | result header of one task: descriptions of the outputs, compute seconds [COMPUTERESULT 11] |
| OUTPUT 12 | data | buffers of a task's outputs [OUTPUT 12] |
| ERROR 24 | W->C | `{"message", "loc"}`: the pipeline raised on the worker |
| DETACH 14 / DETACHED 25 | C->W / W->C | end of the run and its acknowledgement [DETACH 14] |
| PING 26 / PONG 27 | live | liveness check and answer |
| PARAMSERV 30 | C->W | one `paramserv` call (runtime/paramserv/mpi.py): IR key (+ text), UDFs, options, data |
| PS_PUSH 31 | W->C | paramserv gradients: clock, model version used, next clock, gradient descriptions |
| PS_MODEL 32 | C->W | answer to a push's pull: model version (or "same", or "stop") and descriptions |
| PS_DONE 33 / PS_ERROR 34 | W->C | a worker's end of a paramserv call: its statistics (+ final model) / failure |
| PS_DATA 35 | data | paramserv: model, hyperparameters and the worker's partition rows |
| PS_GRAD 36 / PS_WEIGHTS 37 / PS_FINAL 38 | data | paramserv: gradients (packed) / models (packed) / final model |
| PS_ABORT 39 | C->W | paramserv: another rank of the call failed; stop (answer every pull with STOP) |

The paramserv messages between worker ranks (all-reduce, gossip) and to server shards on worker ranks use the
same tags (PS_PUSH/PS_MODEL/PS_GRAD/PS_WEIGHTS between a worker and a shard) or a communicator of their own
(runtime/paramserv/collectives.py).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

import numpy as np

from daphnec.runtime import testing_hooks

COORDINATOR = 0
"""Rank 0 coordinates; ranks 1..size-1 are workers (DAPHNE's roles)."""


class Tag(IntEnum):
    BROADCAST = 0
    DATA = 4
    COMPUTERESULT = 11
    OUTPUT = 12
    DETACH = 14
    CONFIG = 20
    PIPELINE = 21
    TASK = 22
    STOP = 23
    ERROR = 24
    DETACHED = 25
    PING = 26
    PONG = 27
    PARAMSERV = 30
    PS_PUSH = 31
    PS_MODEL = 32
    PS_DONE = 33
    PS_ERROR = 34
    PS_DATA = 35
    PS_GRAD = 36
    PS_WEIGHTS = 37
    PS_FINAL = 38
    PS_ABORT = 39


@dataclass(frozen=True)
class Timing:
    """Liveness and polling knobs. The fault tests shorten the liveness times on every rank to make failures quick
    to detect (runtime.testing_hooks)."""

    ping_interval: float = testing_hooks.dist_ping_interval(0.25)
    """Seconds between liveness pings of the coordinator to each worker."""
    deadline: float = testing_hooks.dist_deadline(4.0)
    """A rank whose process stays stopped (SIGSTOP) this long hangs; after hydra's SIGUSR1, a worker that hears no
    ping for this long concludes the coordinator died (ping_interval + deadline < 10 s)."""
    hang: float = 60.0
    """A worker that answers no ping for this long while its process uses no CPU time (or, on another machine,
    shows no other sign of life) hangs. Never a verdict on speed: a busy worker that computes is only slow."""
    spin: float = 0.005
    """Seconds a rank re-tests in-flight transfers without sleeping (keeps MPI bandwidth on large messages)."""
    max_sleep: float = 0.001
    """Longest sleep between tests once spinning is over (bounds the latency a sleeping rank adds)."""


TIMING = Timing()


def pmi_abort(code: int) -> bool:
    """Ask the process manager to end the whole job: PMI-1's `abort` command on the PMI socket (what MPI_Abort
    sends, without mpich's `Abort(n) on node ...` banner; hydra then kills every rank on every node). False when
    this process has no PMI socket (not started by mpiexec)."""
    pmi_fd = os.environ.get("PMI_FD", "")
    if not pmi_fd.isdigit():
        return False
    try:
        os.write(int(pmi_fd), f"cmd=abort exitcode={code}\n".encode("ascii"))
    except OSError:
        return False
    return True


def wait_until_read(fds: tuple[int, ...], limit: float = 2.0) -> None:
    """Wait (at most `limit` s) until what this process wrote to the pipes `fds` has been read. Under mpiexec they
    lead to hydra's proxy, which forwards them; the abort that follows makes hydra kill the job, and a message
    still in the pipe then (the located error the driver just printed) was lost in about 1 run in 7."""
    import fcntl
    import stat
    import sys
    import termios

    deadline = time.monotonic() + limit
    for fd in fds:
        try:
            if not stat.S_ISFIFO(os.fstat(fd).st_mode):
                continue
            while time.monotonic() < deadline:
                unread = fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0")
                if int.from_bytes(unread, sys.byteorder) == 0:
                    break
                time.sleep(0.005)
        except OSError:
            continue


@dataclass
class Comms:
    """The three communicators of the protocol, duplicated from COMM_WORLD at start-up."""

    world: Any
    ctrl: Any
    data: Any
    live: Any
    peers: list[Any] = field(default_factory=list)
    """Per rank, who its MPI process is (`liveness.Peer`), exchanged at start-up."""

    @property
    def rank(self) -> int:
        return self.world.Get_rank()

    @property
    def size(self) -> int:
        return self.world.Get_size()

    @property
    def workers(self) -> list[int]:
        return list(range(1, self.size))


def make_comms(world: Any) -> Comms:
    """Duplicate COMM_WORLD three times; errors are returned (raised as exceptions), not fatal."""
    from mpi4py import MPI

    world.Set_errhandler(MPI.ERRORS_RETURN)
    comms = [world.Dup() for _ in range(3)]
    for c in comms:
        c.Set_errhandler(MPI.ERRORS_RETURN)
    return Comms(world, *comms)


# ---------------------------------------------------------------------------------------------------------------
# Control messages
# ---------------------------------------------------------------------------------------------------------------


def encode(msg: dict[str, Any]) -> np.ndarray:
    return np.frombuffer(json.dumps(msg, separators=(",", ":")).encode("utf-8"), dtype=np.uint8)


def decode(buf: np.ndarray) -> dict[str, Any]:
    return json.loads(buf.tobytes().decode("utf-8"))


class _Outbox:
    """Control messages in flight. Sends are nonblocking: a blocking `Send`, even of a few bytes, stops once the
    receiver's queue is full, and a stopped (SIGSTOP) or hung peer never drains it — the sender would hang instead
    of noticing the failure. Completed sends are released whenever another one is posted."""

    def __init__(self) -> None:
        self._inflight: list[tuple[Any, np.ndarray]] = []
        self._lock = threading.Lock()

    def post(self, comm: Any, dest: int, tag: int, buf: np.ndarray) -> None:
        from mpi4py import MPI

        req = comm.Isend([buf, MPI.BYTE], dest=dest, tag=tag)
        with self._lock:
            self._inflight = [(r, b) for r, b in self._inflight if not r.Test()]
            self._inflight.append((req, buf))


_OUTBOX = _Outbox()


def send_control(comm: Any, dest: int, tag: Tag, msg: dict[str, Any] | None = None) -> None:
    """Send one control message (nonblocking; see `_Outbox`)."""
    _OUTBOX.post(comm, dest, int(tag), encode(msg or {}))


def try_recv_control(comm: Any, source: int, tag: int | None = None) -> tuple[int, Tag, dict[str, Any]] | None:
    """One pending control message (source, tag, body) from `source` (ANY_SOURCE allowed), or None."""
    from mpi4py import MPI

    status = MPI.Status()
    msg = comm.improbe(source=source, tag=MPI.ANY_TAG if tag is None else tag, status=status)
    if msg is None:
        return None
    buf = np.empty(status.Get_count(MPI.BYTE), dtype=np.uint8)
    msg.Recv([buf, _byte()])
    return status.Get_source(), Tag(status.Get_tag()), decode(buf)


def _byte() -> Any:
    from mpi4py import MPI

    return MPI.BYTE


# ---------------------------------------------------------------------------------------------------------------
# Waiting without blocking
# ---------------------------------------------------------------------------------------------------------------


class Backoff:
    """How a rank waits without blocking in MPI. Busy waiting costs a core, and on a node shared with computing
    workers that core is taken from them; sleeping adds latency. So: while data is in flight (`transfer=True`,
    mpich moves large messages only while both sides poll), re-test for `TIMING.spin` seconds and then sleep at
    most 0.2 ms; while merely waiting for a message (a worker computing), spin briefly and then sleep with growing
    pauses up to `TIMING.max_sleep`."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.since = time.perf_counter()
        self.pause = 2e-5

    def idle(self, transfer: bool = False) -> None:
        quiet = time.perf_counter() - self.since
        if quiet < (TIMING.spin if transfer else TIMING.spin / 10):
            return
        time.sleep(self.pause)
        self.pause = min(self.pause * 2, 2e-4 if transfer else self._cap(quiet))

    @staticmethod
    def _cap(quiet: float) -> float:
        """The longest pause while waiting for a message: short right after activity (a loop of pipelines sends
        the next one within milliseconds; 0.1 ms pauses cost a few % of a core), longer when the other side is
        evidently busy for a while."""
        if quiet < 0.05:
            return 1e-4
        return TIMING.max_sleep if quiet < 1.0 else 5 * TIMING.max_sleep


def wait_until(done: Callable[[], bool], check: Callable[[], None], transfer: bool = True) -> None:
    """Poll `done()` until it holds; `check()` runs between polls and raises to give up (a failed peer)."""
    backoff = Backoff()
    while not done():
        check()
        backoff.idle(transfer)


def wait_requests(requests: list[Any], check: Callable[[], None]) -> None:
    """Complete MPI requests by testing them (never `Waitall`, which would hang on a dead peer)."""
    if not requests:
        return
    from mpi4py import MPI

    wait_until(lambda: MPI.Request.Testall(requests), check)
