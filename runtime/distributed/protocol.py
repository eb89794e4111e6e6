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
| CONFIG 20 | C->W | `{"config": DaphneConfig.to_dict()}` once, before the first pipeline: the workers' scheduler flags |
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
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

import numpy as np

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


def _env_float(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        return default


@dataclass(frozen=True)
class Timing:
    """Liveness and polling knobs. Environment variables override them on every rank (mpiexec passes the
    environment on), which the fault tests use to make failures quick to detect."""

    ping_interval: float = _env_float("DAPHNEC_DIST_PING_INTERVAL", 0.25)
    """Seconds between liveness pings of the coordinator to each worker."""
    deadline: float = _env_float("DAPHNEC_DIST_DEADLINE", 4.0)
    """A worker that has not answered a ping for this long is declared failed (ping_interval + deadline < 10 s)."""
    spin: float = 0.002
    """Seconds a waiting rank re-tests its requests without sleeping (keeps MPI bandwidth on large messages)."""
    max_sleep: float = 0.001
    """Longest sleep between tests once spinning is over (bounds the latency a sleeping rank adds)."""


TIMING = Timing()


def slow_rank_hook() -> tuple[int, float]:
    """Test hook `DAPHNEC_DIST_SLOW_RANK=<rank>:<seconds>`: that worker sleeps this long before every task, to
    show what dynamic inter-node scheduling buys when one node is slow (bench/dist_bench.py, tests)."""
    spec = os.environ.get("DAPHNEC_DIST_SLOW_RANK", "")
    rank, _, secs = spec.partition(":")
    try:
        return int(rank), float(secs or 0.0)
    except ValueError:
        return -1, 0.0


@dataclass
class Comms:
    """The three communicators of the protocol, duplicated from COMM_WORLD at start-up."""

    world: Any
    ctrl: Any
    data: Any
    live: Any

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


def send_control(comm: Any, dest: int, tag: Tag, msg: dict[str, Any] | None = None) -> None:
    """Send one control message. Blocking `Send` is safe here: control messages are small (eager protocol), so the
    call returns as soon as the bytes are buffered, whether or not the receiver is alive."""
    comm.Send([encode(msg or {}), _byte()], dest=dest, tag=int(tag))


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
    """Spin for `TIMING.spin` seconds after the last progress, then sleep with growing pauses up to `max_sleep`:
    a waiting rank neither adds latency to large transfers nor steals a core from the computing ranks."""

    def __init__(self, max_sleep: float = TIMING.max_sleep):
        self.max_sleep = max_sleep
        self.reset()

    def reset(self) -> None:
        self.since = time.perf_counter()
        self.pause = 2e-5

    def idle(self) -> None:
        if time.perf_counter() - self.since < TIMING.spin:
            return
        time.sleep(self.pause)
        self.pause = min(self.pause * 2, self.max_sleep)


def wait_until(done: Callable[[], bool], check: Callable[[], None]) -> None:
    """Poll `done()` until it holds; `check()` runs between polls and raises to give up (a failed peer)."""
    backoff = Backoff()
    while not done():
        check()
        backoff.idle()


def wait_requests(requests: list[Any], check: Callable[[], None]) -> None:
    """Complete MPI requests by testing them (never `Waitall`, which would hang on a dead peer)."""
    if not requests:
        return
    from mpi4py import MPI

    wait_until(lambda: MPI.Request.Testall(requests), check)
