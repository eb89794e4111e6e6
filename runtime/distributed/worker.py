"""A worker (rank >= 1): waits for pipelines, computes its rows with the local vectorized engine, sends results.

The worker never sees the script. Per PIPELINE message it
1. drops the objects the coordinator no longer has (`free`),
2. posts the receives for the replicas and rows announced in the message, then compiles the shipped IR text
   while they arrive — once per text: compiled bodies are cached by the coordinator's body key, so a pipeline in
   a loop compiles once per worker. The compiler lives above the runtime, so `compile_body` is injected
   (tools/driver.py passes `compiler.host.shipped.compile_shipped_body`);
3. runs its tasks — the one in the message, then (dynamic scheduling) TASK messages until STOP — through the
   compiled body, which runs the local vectorized engine with the coordinator's scheduler flags (`--num-threads`,
   `--partitioning`, `--grain-size`, `--queue_layout`, ..., received once in the CONFIG message; DAPHNE's workers
   hard-code them, its issue #171), sends the results back as raw buffers and keeps the rows of ROWS results.

An exception from compiling or running becomes an ERROR message with the DaphneDSL location of the failing op;
the worker stays ready for the next message. Nothing is printed on stdout (it is redirected to stderr).

A PARAMSERV message makes this rank a worker of one `paramserv` call until that call ends
(runtime/paramserv/mpi.py, `serve_job`); then it is back in this loop.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from daphnec.runtime import testing_hooks
from daphnec.runtime.distributed import serialization as ser
from daphnec.runtime.distributed.liveness import WorkerLiveness, watchable
from daphnec.runtime.distributed.placement import ObjectStore
from daphnec.runtime.distributed.protocol import (
    COORDINATOR,
    Backoff,
    Comms,
    Tag,
    send_control,
    try_recv_control,
    wait_requests,
)
from daphnec.runtime.kernels.blas_threads import one_blas_thread
from daphnec.runtime.options import DEFAULT_MAX_DISTR_CHUNK_SIZE

DEFAULT_CHUNK = DEFAULT_MAX_DISTR_CHUNK_SIZE  # --max-distr-chunk-size

Body = Callable[..., tuple[object, ...]]
Arrivals = tuple[list[Any], list[tuple[int, int, Callable[[], object]]], float]
"""Posted receive requests, per object (id, first row, builder), and when posting began."""


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
        self.liveness = WorkerLiveness(comms.live, self.rank, watchable(comms.peers).get(COORDINATOR))
        self.received = 0.0
        """Seconds spent waiting for shipped data since the last result (reported with it)."""
        self.sending: list[Any] = []
        """Sends of results not known to be complete yet."""
        slow_rank, factor = testing_hooks.dist_slow_rank()
        self.slowdown = factor if slow_rank == self.rank else 1.0

    def serve(self) -> int:
        """The worker loop (DAPHNE's joinComputingTeam); returns the exit status after DETACH. The liveness thread
        stops before DETACHED goes out: the coordinator may end right after it."""
        self.liveness.start()
        try:
            # OpenBLAS at one thread, as in a local run: the same bits (runtime/kernels/blas_threads.py)
            with one_blas_thread():
                while True:
                    tag, msg = self._next()
                    if tag == Tag.CONFIG:
                        self.chunk = max(1, int(msg["config"].get("max_distr_chunk_size", DEFAULT_CHUNK)))
                        self.configure(msg["config"])
                    elif tag == Tag.PIPELINE:
                        self._pipeline(msg)
                    elif tag == Tag.PARAMSERV:  # one paramserv call: this rank is one of its workers
                        from daphnec.runtime.paramserv.mpi import serve_job

                        serve_job(self, msg)
                    elif tag == Tag.DETACH:
                        self.liveness.stop()
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
        """The tasks that came with the message, then (dynamic scheduling) TASK messages until STOP."""
        self.store.free(msg["free"])
        replicas = self._post_receives(msg["ship"])  # the data flows while the body compiles
        rows = [self._post_task_receives(t) for t in msg["tasks"]]
        body = self._body(msg["body"], msg.get("ir"))
        self._store(replicas)
        for task, arrivals in zip(msg["tasks"], rows):
            self._task(body, msg["inputs"], task, arrivals)
        while msg["more"]:
            tag, task = self._next()
            if tag == Tag.STOP:
                break
            self._task(body, msg["inputs"], task, self._post_task_receives(task))
        wait_requests(self.sending, _no_check)  # every result has reached the coordinator
        self.sending = []

    def _body(self, key: int, ir: str | None) -> Callable[..., tuple[object, ...]] | Exception:
        if key not in self.bodies:
            try:
                self.bodies[key] = self.compile_body(ir or "")
            except Exception as e:  # noqa: BLE001 - reported with every task of this body
                self.bodies[key] = e
        return self.bodies[key]

    def _post_receives(self, shipments: list[dict[str, Any]]) -> Arrivals:
        """Post a receive per buffer of the announced replicas, in the announced order."""
        start = time.perf_counter()  # mpich may move a whole message inside Irecv (the sender was there first)
        requests: list[Any] = []
        built: list[tuple[int, int, Callable[[], object]]] = []
        for s in shipments:
            bufs, build = ser.allocate(s["desc"])
            if s["how"] == "bcast":
                requests += ser.ibcast(self.comms.data, bufs, COORDINATOR, self.chunk)
            else:
                requests += ser.irecv(self.comms.data, bufs, COORDINATOR, int(Tag.BROADCAST), self.chunk)
            built.append((s["id"], 0, build))
        return requests, built, start

    def _post_task_receives(self, task: dict[str, Any]) -> Arrivals:
        """Post a receive per buffer of the rows a task ships (pieces with a description)."""
        start = time.perf_counter()
        requests: list[Any] = []
        built: list[tuple[int, int, Callable[[], object]]] = []
        for p in task["pieces"]:
            if "desc" in p:
                bufs, build = ser.allocate(p["desc"])
                requests += ser.irecv(self.comms.data, bufs, COORDINATOR, int(Tag.DATA), self.chunk)
                built.append((p["id"], p["first"], build))
        return requests, built, start

    def _store(self, arrivals: Arrivals) -> None:
        """Wait for the posted receives and keep the objects; the seconds since posting count as receiving time."""
        requests, built, posted = arrivals
        wait_requests(requests, _no_check)
        if requests:
            self.received += time.perf_counter() - posted
        for obj_id, first, build in built:
            self.store.put(obj_id, build(), first)

    def _inputs(self, specs: list[dict[str, Any]], task: dict[str, Any]) -> list[object]:
        a, b = task["rows"]
        out = []
        for s in specs:
            if "scalar" in s:
                out.append(ser.scalar_value(s["scalar"]))
            elif "replica" in s:
                out.append(self.store.whole(s["replica"]))
            else:
                out.append(self.store.rows(task["pieces"][s["split"]]["id"], a, b))
        return out

    def _task(self, body: Body | Exception, specs: list[dict[str, Any]], task: dict[str, Any], rows: Arrivals) -> None:
        """Run one row range and send its results; keep the rows of ROWS results for the next pipeline."""
        self._store(rows)
        a, b = task["rows"]
        t0 = time.perf_counter()
        try:
            if isinstance(body, Exception):
                raise body
            results = body(*self._inputs(specs, task))
        except Exception as e:  # noqa: BLE001 - every failure goes to the coordinator
            send_control(self.comms.ctrl, COORDINATOR, Tag.ERROR, _error(e, a, b))
            return
        seconds = time.perf_counter() - t0
        if self.slowdown > 1.0:  # the slow-node test hook
            time.sleep((self.slowdown - 1.0) * seconds)
            seconds *= self.slowdown
        header = {"rows": [a, b], "out": [ser.describe(r) for r in results], "seconds": seconds,
                  "received": self.received}  # fmt: skip
        self.received = 0.0
        send_control(self.comms.ctrl, COORDINATOR, Tag.COMPUTERESULT, header)
        for r in results:  # completed at the end of the pipeline: the next task need not wait for them
            self.sending += ser.isend(self.comms.data, ser.buffers(r), COORDINATOR, int(Tag.OUTPUT), self.chunk)
        for kid, r in zip(task["keep"], results):
            if kid is not None:
                self.store.put(kid, r, a)


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
