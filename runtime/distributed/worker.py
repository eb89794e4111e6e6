"""A worker (rank >= 1): waits for pipelines, computes its rows with the local vectorized engine, sends results.

The worker never sees the script. Per PIPELINE message it
1. drops the objects the coordinator no longer has (`free`),
2. compiles the shipped IR text — once per text: compiled bodies are cached by the coordinator's body key, so a
   pipeline inside a loop compiles once per worker — with the injected `compile_body` (the compiler lives above
   the runtime; tools/driver.py passes `compiler.passes.distribute.compile_shipped_body`),
3. receives the announced shipments into its object store (`placement.ObjectStore`),
4. runs every TASK (a row range) through the compiled body, which runs the local vectorized engine with the
   coordinator's scheduler flags (`--num-threads`, `--partitioning`, `--grain-size`, `--queue_layout`, ...,
   received once in the CONFIG message: DAPHNE's workers hard-code these, its issue #171), and sends the results
   back as raw buffers, until STOP.

An exception from compiling or running becomes an ERROR message with the DaphneDSL location of the failing op;
the worker stays ready for the next message. Nothing is printed on stdout (it is redirected to stderr).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from runtime.distributed import serialization as ser
from runtime.distributed.liveness import WorkerLiveness
from runtime.distributed.placement import ObjectStore
from runtime.distributed.protocol import (
    COORDINATOR,
    Backoff,
    Comms,
    Tag,
    send_control,
    slow_rank_hook,
    try_recv_control,
    wait_requests,
)

DEFAULT_CHUNK = 2**31 - 1 - 1024


class Worker:
    def __init__(
        self,
        comms: Comms,
        compile_body: Callable[[str], Callable[..., tuple[object, ...]]],
        configure: Callable[[dict[str, Any]], None],
    ):
        self.comms = comms
        self.rank = comms.rank
        self.compile_body = compile_body
        self.configure = configure
        self.store = ObjectStore()
        self.bodies: dict[int, Callable[..., tuple[object, ...]] | Exception] = {}
        self.chunk = DEFAULT_CHUNK
        self.liveness = WorkerLiveness(comms.live, self.rank)
        slow_rank, self.slow_seconds = slow_rank_hook()
        if slow_rank != self.rank:
            self.slow_seconds = 0.0

    def serve(self) -> int:
        """The worker loop (DAPHNE's joinComputingTeam); returns the exit status after DETACH."""
        self.liveness.start()
        try:
            while True:
                tag, msg = self._next()
                if tag == Tag.CONFIG:
                    self.chunk = max(1, int(msg["config"].get("max_distr_chunk_size", DEFAULT_CHUNK)))
                    self.configure(msg["config"])
                elif tag == Tag.PIPELINE:
                    self._pipeline(msg)
                elif tag == Tag.DETACH:
                    self.store.free(msg.get("free", []))
                    send_control(self.comms.ctrl, COORDINATOR, Tag.DETACHED)
                    return 0
        finally:
            self.liveness.stop()

    def _next(self) -> tuple[Tag, dict[str, Any]]:
        """The next control message from the coordinator (polled, with a sleeping backoff when idle)."""
        backoff = Backoff()
        while (m := try_recv_control(self.comms.ctrl, COORDINATOR)) is None:
            backoff.idle()
        return m[1], m[2]

    # -- one pipeline ------------------------------------------------------------------------------------------------

    def _pipeline(self, msg: dict[str, Any]) -> None:
        self.store.free(msg["free"])
        body = self._body(msg["body"], msg.get("ir"))
        self._receive(msg["ship"])
        while True:
            tag, task = self._next()
            if tag == Tag.STOP:
                return
            a, b = task["rows"]
            self._task(body, msg, a, b)

    def _body(self, key: int, ir: str | None) -> Callable[..., tuple[object, ...]] | Exception:
        if key not in self.bodies:
            try:
                self.bodies[key] = self.compile_body(ir or "")
            except Exception as e:  # noqa: BLE001 - reported with every task of this body
                self.bodies[key] = e
        return self.bodies[key]

    def _receive(self, shipments: list[dict[str, Any]]) -> None:
        """Post a receive per announced buffer in the announced order, then store the objects."""
        requests: list[Any] = []
        built: list[tuple[int, int, Callable[[], object]]] = []
        for s in shipments:
            bufs, build = ser.allocate(s["desc"])
            if s["how"] == "bcast":
                requests += ser.ibcast(self.comms.data, bufs, COORDINATOR, self.chunk)
                built.append((s["id"], 0, build))
            else:
                requests += ser.irecv(self.comms.data, bufs, COORDINATOR, int(Tag.DATA), self.chunk)
                built.append((s["id"], s["first"], build))
        wait_requests(requests, _no_check)
        for obj_id, first, build in built:
            self.store.put(obj_id, build(), first)

    def _inputs(self, specs: list[dict[str, Any]], a: int, b: int) -> list[object]:
        out = []
        for s in specs:
            if "scalar" in s:
                out.append(ser.scalar_value(s["scalar"]))
            elif s["split"]:
                out.append(self.store.rows(s["id"], a, b))
            else:
                out.append(self.store.whole(s["id"]))
        return out

    def _task(self, body: Callable[..., tuple[object, ...]] | Exception, msg: dict[str, Any], a: int, b: int) -> None:
        if self.slow_seconds:
            time.sleep(self.slow_seconds)
        t0 = time.perf_counter()
        try:
            if isinstance(body, Exception):
                raise body
            results = body(*self._inputs(msg["inputs"], a, b))
        except Exception as e:  # noqa: BLE001 - every failure goes to the coordinator
            send_control(self.comms.ctrl, COORDINATOR, Tag.ERROR, _error(e, a, b))
            return
        seconds = time.perf_counter() - t0
        descs = [ser.describe(r) for r in results]
        send_control(self.comms.ctrl, COORDINATOR, Tag.COMPUTERESULT, {"rows": [a, b], "out": descs, "seconds": seconds})
        requests = []
        for r in results:
            requests += ser.isend(self.comms.data, ser.buffers(r), COORDINATOR, int(Tag.OUTPUT), self.chunk)
        for kid, r in zip(msg["keep"], results):
            if kid is not None:
                self.store.put(kid, r, a)  # this block of a ROWS result stays here for the next pipeline
        wait_requests(requests, _no_check)


def _error(e: Exception, a: int, b: int) -> dict[str, Any]:
    loc = getattr(e, "loc", None)
    return {"message": getattr(e, "message", None) or str(e) or type(e).__name__, "rows": [a, b],
            "loc": [loc.file, loc.line, loc.col] if loc is not None else None}  # fmt: skip


def _no_check() -> None:
    """Workers wait without a failure check: if the coordinator dies, the process manager (or the liveness
    watchdog) ends this process."""


def redirect_stdout() -> None:
    """Workers print nothing on stdout (only rank 0's output is the program's output)."""
    sys.stdout.flush()
    sys.stdout = sys.stderr
