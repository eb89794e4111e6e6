"""MPI mode: the pieces every paramserv rank uses to talk (rank 0, server shards, workers).

- `Idle`: how a paramserv rank waits between polls (nothing ever blocks in MPI: see protocol.py).
- `Waiter`: a worker rank's waits, which also notice rank 0's PS_ABORT (another rank of the call failed).
- `pack` / `Packed`: the buffers of a push or a model as one message.
- `call_tag`: the tag space of one call's messages among worker ranks, so that a message left over from a call
  that was cut short can never match a receive of a later call.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from daphnec.runtime.distributed import serialization as ser
from daphnec.runtime.distributed.protocol import COORDINATOR, Backoff, Tag, try_recv_control
from daphnec.runtime.paramserv.worker import Aborted


def mpi() -> Any:
    from mpi4py import MPI

    return MPI


class Idle(Backoff):
    """How paramserv's ranks wait: a very short spin, then sleeps of 20 µs doubling up to 200 µs. A paramserv step
    is short (a batch), so messages come often; but rank 0 and the workers usually share cores with each other
    (and the workers compute), so spinning long (the pipeline protocol's `Backoff` spins 0.5-5 ms) takes the core
    from a computing worker: on 2 cores with 3 ranks that doubled the time per step."""

    SPIN = 5e-5
    CAP = 2e-4

    def idle(self, transfer: bool = False) -> None:
        if time.perf_counter() - self.since < self.SPIN:
            return
        time.sleep(self.pause)
        self.pause = min(self.pause * 2, self.CAP)


class Waiter:
    """A rank's waits in a call. Workers do not check the liveness of others (if rank 0 dies, the process manager
    or the liveness watchdog ends this process), but they do listen for PS_ABORT: when a rank of the call fails,
    rank 0 tells the others, and an abortable wait (a collective, which the failed rank would never join) ends
    with `Aborted`. A wait that is not abortable (an answer every shard sends, even when stopping) still looks
    for the abort, so that a shard on this rank learns of it: once seen, `aborted` stays set for the call. An
    abort of another (earlier, cut short) call is dropped."""

    CHECK_EVERY = 0.002
    """Seconds between two looks for PS_ABORT while waiting."""

    def __init__(self, ctrl: Any, call: int | None = None):
        self.ctrl = ctrl
        self.call = call
        self.aborted = False
        self._last = 0.0

    def poll(self) -> bool:
        """Look for PS_ABORT now; True once this call is aborted."""
        while not self.aborted:
            m = try_recv_control(self.ctrl, COORDINATOR, int(Tag.PS_ABORT))
            if m is None:
                break
            if m[2].get("call") == self.call:
                self.aborted = True
        return self.aborted

    def check(self, abortable: bool = True) -> None:
        now = time.perf_counter()
        if now - self._last >= self.CHECK_EVERY:
            self._last = now
            self.poll()
        if self.aborted and abortable:
            raise Aborted

    def wait(self, done: Callable[[], bool], transfer: bool = True, abortable: bool = True) -> None:
        """Poll `done()` until it holds; raises `Aborted` on PS_ABORT when `abortable`."""
        b = Idle()
        while not done():
            self.check(abortable)
            b.idle(transfer)

    def requests(self, reqs: list[Any], abortable: bool = True) -> None:
        if reqs:
            MPI = mpi()
            try:
                self.wait(lambda: MPI.Request.Testall(reqs), abortable=abortable)
            except Aborted:
                cancel(reqs)
                raise


def cancel(reqs: list[Any]) -> None:
    """Give up requests of an aborted call: receives are cancelled (their buffers are freed); sends cannot be, they
    complete or are dropped with the call (their tags match no later call)."""
    for r in reqs:
        try:
            if not r.Test():
                r.Cancel()
        except Exception:  # noqa: BLE001 - a send's cancel may fail; nothing else can be done about it
            pass


def call_tag(call: int, kind: int) -> int:
    """A tag of call `call` for message kind `kind` (< 16) among worker ranks: distinct for 2^24 calls."""
    return 1024 + (call % (1 << 24)) * 16 + kind


def pack(bufs: list[np.ndarray]) -> np.ndarray:
    """The buffers of a push or a model as one byte buffer: one message per step instead of one per matrix (each
    large message costs a rendezvous of both ranks; the copy is cheap next to that)."""
    views = [ser._bytes(b) for b in bufs]
    if not views:
        return np.empty(0, dtype=np.uint8)
    return views[0] if len(views) == 1 else np.concatenate(views)


class Packed:
    """The receiving side of `pack`: one receive, then the bytes are copied into the given buffers."""

    def __init__(self, comm: Any, bufs: list[np.ndarray], source: int, tag: int, chunk: int):
        self.views = [ser._bytes(b) for b in bufs]
        one = len(self.views) == 1
        self.big = self.views[0] if one else np.empty(sum(v.size for v in self.views), dtype=np.uint8)
        self.requests = ser.irecv(comm, [self.big], source, tag, chunk)

    def done(self) -> bool:
        return bool(mpi().Request.Testall(self.requests))

    def finish(self) -> None:
        if len(self.views) > 1:
            pos = 0
            for v in self.views:
                v[:] = self.big[pos : pos + v.size]
                pos += v.size


def json_size(msg: dict[str, Any]) -> int:
    return len(json.dumps(msg, separators=(",", ":")).encode("utf-8"))
