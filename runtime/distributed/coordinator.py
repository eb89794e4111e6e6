"""The coordinator (rank 0): runs the script and hands every distributed pipeline to the workers.

One call (`Coordinator.run`), DAPHNE's DistributedWrapper::execute with daphnec's additions:

1. Plan the inputs: scalars travel inside the message; matrices are looked up in the placement cache
   (`placement.py`) and shipped only if the workers do not hold them yet — replicated (`Ibcast`) when a worker
   needs the whole matrix, or partitioned into DAPHNE's contiguous row blocks (`Isend` per worker).
2. Send each worker a PIPELINE message: the body's key (its IR text only the first time), how to find every
   input, what is about to arrive, which dead objects to drop.
3. Schedule row ranges (TASK messages):
   - STATIC (`--partitioning=STATIC`): DAPHNE's even split, one task per worker, over partitioned data. Each
     worker keeps its block of every ROWS-combined result, so a result read by the next pipeline is not sent
     back (the placement cache learns it).
   - dynamic (any other scheme): the rows are cut by the same partitioning scheme with P = number of workers, and
     a worker receives its next chunk whenever it returns a result (two chunks in flight hide the round trip).
     A worker may get any chunk, so every input is replicated on every worker once; afterwards only row ranges
     travel. The slow-rank benchmark shows what this buys (bench/dist_bench.py).
4. Collect results from any worker in arrival order and combine them in row order with the local executor's
   own `combine` (ROWS/COLS/ADD/MIN/MAX), so the result equals the local run's.

Nothing waits in a blocking MPI call: a dead worker is found by the liveness thread, and every wait loop here
checks its verdict (`_check`).
"""

from __future__ import annotations

import json
import math
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from runtime.distributed import serialization as ser
from runtime.distributed.liveness import CoordinatorLiveness
from runtime.distributed.placement import BLOCKS, REPLICATED, Placement, PlacementCache
from runtime.distributed.protocol import Backoff, Comms, Tag, send_control, try_recv_control
from runtime.errors import DaphneRuntimeError
from runtime.scheduling.partitioning import SCHEMES, tasks
from runtime.vectorized.pipeline import COMBINE_ROWS, SPLIT_ROWS, combine, row_count
from runtime.values import is_csr

DEFAULT_CHUNK = 2**31 - 1 - 1024
IN_FLIGHT = 2
"""Chunks a worker holds under dynamic scheduling: the next one is already there when it finishes one."""
MAX_CHUNKS_PER_WORKER = 64
"""Inter-node grain floor: at most about this many chunks per worker, however fine the scheme (SS would otherwise
send one message round per row)."""


class WorkerFailure(DaphneRuntimeError):
    """A worker died or hangs (no answer to the liveness check)."""

    def __init__(self, rank: int, reason: str):
        super().__init__(f"distributed worker rank {rank} failed: {reason}")
        self.rank = rank


class RemoteError(DaphneRuntimeError):
    """The pipeline raised on a worker; `source_loc` is the DaphneDSL location of the failing op there."""

    def __init__(self, rank: int, message: str, loc: Sequence[object] | None):
        super().__init__(f"{message} (on distributed worker rank {rank})")
        self.rank = rank
        self.source_loc = tuple(loc) if loc else None


def static_blocks(n: int, workers: int) -> tuple[tuple[int, int], ...]:
    """DAPHNE's contiguous even split (facts §5): block i = [i*k + min(i, m), (i+1)*k + min(i+1, m)), k = n // W,
    m = n % W."""
    k, m = divmod(n, workers)
    return tuple((i * k + min(i, m), (i + 1) * k + min(i + 1, m)) for i in range(workers))


def inter_node_scheme(scheme: str) -> str:
    """The scheme that cuts rows between nodes: the configured one (ADAPTIVE, a per-pipeline local choice, runs
    GSS between nodes)."""
    return scheme if scheme in SCHEMES else "GSS"


@dataclass
class Stats:
    """What the coordinator did, for the benchmark (`DAPHNEC_DIST_STATS=<file>` writes it as JSON at the end)."""

    calls: int = 0
    call_seconds: float = 0.0
    ship_seconds: float = 0.0
    shipped_bytes: int = 0
    shipments: int = 0
    result_bytes: int = 0
    combine_seconds: float = 0.0
    compute_seconds: float = 0.0
    """Sum over calls of the busiest worker's compute time."""
    tasks: int = 0
    shipped: dict[str, int] = field(default_factory=dict)
    """Times each shipped object (by shape/dtype/layout) was sent."""
    per_call: list[dict[str, float]] = field(default_factory=list)


@dataclass
class _Call:
    """The state of one pipeline call on the coordinator."""

    inputs: list[dict[str, Any]]
    ship: list[tuple[object, str, Placement]]
    keep: list[int | None]
    static: bool
    n: int
    parts: dict[int, list[object]] = field(default_factory=dict)
    compute: dict[int, float] = field(default_factory=dict)
    errors: list[RemoteError] = field(default_factory=list)
    shipped_at: float = 0.0
    """When the last input buffer had arrived at the workers."""


class Coordinator:
    def __init__(self, comms: Comms):
        self.comms = comms
        self.workers = comms.workers
        self.cache = PlacementCache()
        self.bodies: dict[str, int] = {}
        self.failed: dict[int, str] = {}
        self.call_lock = threading.Lock()
        self.scheme = "STATIC"
        self.grain = 1
        self.chunk = DEFAULT_CHUNK
        self.stats = Stats()
        self.liveness = CoordinatorLiveness(comms.live, self.workers, self._on_failure)

    # -- start-up and shutdown -------------------------------------------------------------------------------------

    def start(self) -> None:
        self.liveness.start()

    def configure(self, config: dict[str, Any]) -> None:
        """Ship the user config to every worker once: their local schedulers use the coordinator's flags."""
        self.scheme = inter_node_scheme(str(config.get("taskPartitioningScheme", "STATIC")))
        self.grain = max(1, int(config.get("minimumTaskSize", 1)))
        self.chunk = max(1, int(config.get("max_distr_chunk_size", DEFAULT_CHUNK)))
        with self.call_lock:
            for w in self.workers:
                send_control(self.comms.ctrl, w, Tag.CONFIG, {"config": config})

    def detach(self) -> None:
        """DETACH every worker and wait for their acknowledgements (DAPHNE: DETACHED -> TERMINATED)."""
        with self.call_lock:
            self._check()
            for w in self.workers:
                send_control(self.comms.ctrl, w, Tag.DETACH, {"free": self.cache.take_freed()})
            waiting = set(self.workers)
            backoff = Backoff()
            while waiting:
                m = try_recv_control(self.comms.ctrl, _any_source())
                if m is not None and m[1] == Tag.DETACHED:
                    waiting.discard(m[0])
                    continue
                self._check()
                backoff.idle()
        self.liveness.stop()
        self._write_stats()

    def _on_failure(self, rank: int, reason: str) -> None:
        """Called by the liveness thread. Inside a call, the main thread raises at its next check; otherwise the
        main thread is busy with local work, so the thread reports the failure itself and aborts the job."""
        self.failed[rank] = reason
        if self.call_lock.acquire(blocking=False):
            report_and_abort(str(WorkerFailure(rank, reason)), self.comms)

    def _check(self) -> None:
        if self.failed:
            rank, reason = next(iter(self.failed.items()))
            raise WorkerFailure(rank, reason)

    # -- one pipeline ------------------------------------------------------------------------------------------------

    def run(self, ir: str, inputs: Sequence[object], splits: Sequence[int], combines: Sequence[int]) -> tuple[object, ...]:
        with self.call_lock:
            self._check()
            t0 = time.perf_counter()
            n = row_count(inputs, splits)
            whole = [s != SPLIT_ROWS or (x.shape[0] == 1 and n != 1) for x, s in zip(inputs, splits)]  # type: ignore[attr-defined]
            static = self.scheme == "STATIC"
            blocks = static_blocks(n, len(self.workers))
            call = self._plan(inputs, whole, blocks, static, n, combines)
            self._announce(ir, call, blocks)
            self._schedule(call, blocks, self._ship(call, blocks))
            if call.errors:
                raise min(call.errors, key=lambda e: e.rank)
            results = self._combine(call, combines)
            self._record(call, t0)
            return results

    def _plan(self, inputs: Sequence[object], whole: list[bool], blocks: tuple[tuple[int, int], ...], static: bool,
              n: int, combines: Sequence[int]) -> _Call:  # fmt: skip
        """Input specs (per worker: the first row each stored piece holds), shipments, result ids to keep."""
        need_whole: dict[int, bool] = {}
        for x, w in zip(inputs, whole):
            if _is_matrix(x):
                need_whole[id(x)] = need_whole.get(id(x), False) or w or not static
        specs: list[dict[str, Any]] = []
        ship: list[tuple[object, str, Placement]] = []
        placed: dict[int, Placement] = {}
        for x, w in zip(inputs, whole):
            if not _is_matrix(x):
                specs.append({"scalar": ser.describe_scalar(x)})
                continue
            if id(x) not in placed:
                placed[id(x)] = self._place(x, need_whole[id(x)], blocks, ship)
            p = placed[id(x)]
            specs.append({"id": p.obj_id, "split": not w, "first": [p.first_row(i) for i in range(len(self.workers))]})
        keep: list[int | None] = [None] * len(combines)
        if static and n >= len(self.workers):
            keep = [self.cache.new_id() if c == COMBINE_ROWS else None for c in combines]
        return _Call(specs, ship, keep, static, n)

    def _place(self, x: object, replicate: bool, blocks: tuple[tuple[int, int], ...],
               ship: list[tuple[object, str, Placement]]) -> Placement:  # fmt: skip
        """Where the workers find `x`: an existing placement (a replica serves every use), else a new one."""
        p = self.cache.find(x, REPLICATED)
        if p is None and not replicate:
            p = self.cache.find(x, BLOCKS, blocks)
        if p is None:
            layout = REPLICATED if replicate else BLOCKS
            p = self.cache.add(x, layout, blocks if layout == BLOCKS else ())
            ship.append((x, layout, p))
        return p

    def _announce(self, ir: str, call: _Call, blocks: tuple[tuple[int, int], ...]) -> None:
        """One PIPELINE message per worker; the IR text goes only with the first call of a body."""
        new_body = ir not in self.bodies
        if new_body:
            self.bodies[ir] = len(self.bodies)
        freed = self.cache.take_freed()
        for i, w in enumerate(self.workers):
            msg: dict[str, Any] = {"body": self.bodies[ir], "free": freed, "keep": call.keep,
                                   "inputs": [_for_worker(s, i) for s in call.inputs],
                                   "ship": [_shipment(x, layout, p, blocks[i]) for x, layout, p in call.ship]}  # fmt: skip
            if new_body:
                msg["ir"] = ir
            send_control(self.comms.ctrl, w, Tag.PIPELINE, msg)

    def _ship(self, call: _Call, blocks: tuple[tuple[int, int], ...]) -> list[Any]:
        """Post the data transfers in the announced order: Ibcast for replicas, one Isend per worker for blocks."""
        requests: list[Any] = []
        for x, layout, _p in call.ship:
            if layout == REPLICATED:
                bufs = ser.buffers(x)
                requests += ser.ibcast(self.comms.data, bufs, 0, self.chunk)
                sent = sum(b.nbytes for b in bufs) * len(self.workers)
            else:
                sent = 0
                for w, (a, b) in zip(self.workers, blocks):
                    bufs = ser.buffers(ser.row_block(x, a, b))
                    requests += ser.isend(self.comms.data, bufs, w, int(Tag.DATA), self.chunk)
                    sent += sum(buf.nbytes for buf in bufs)
            self.stats.shipped_bytes += sent
            self.stats.shipments += 1
            label = f"{layout} {'csr' if is_csr(x) else 'dense'} {x.shape[0]}x{x.shape[1]}"  # type: ignore[attr-defined]
            self.stats.shipped[label] = self.stats.shipped.get(label, 0) + 1
        return requests

    # -- scheduling rows and collecting results ------------------------------------------------------------------------

    def _schedule(self, call: _Call, blocks: tuple[tuple[int, int], ...], ship_requests: list[Any]) -> None:
        ctrl = self.comms.ctrl
        queue: deque[tuple[int, int]] = deque()
        outstanding = dict.fromkeys(self.workers, 0)
        stopped: set[int] = set()
        if call.static:
            for w, (a, b) in zip(self.workers, blocks):
                if b > a or (call.n == 0 and w == self.workers[0]):
                    send_control(ctrl, w, Tag.TASK, {"rows": [a, b]})
                    outstanding[w] = 1
        else:
            queue.extend(self._chunks(call.n))
            for _ in range(IN_FLIGHT):
                for w in self.workers:
                    if queue:
                        send_control(ctrl, w, Tag.TASK, {"rows": list(queue.popleft())})
                        outstanding[w] += 1
        pending: list[tuple[list[Any], Callable[[], None]]] = []
        backoff = Backoff()
        while True:
            if not queue:
                for w in set(self.workers) - stopped:
                    send_control(ctrl, w, Tag.STOP)
                    stopped.add(w)
            m = try_recv_control(ctrl, _any_source())
            if m is not None:
                backoff.reset()
                self._on_reply(call, m, outstanding, pending)
                if call.errors:
                    queue.clear()
                if queue and m[1] in (Tag.COMPUTERESULT, Tag.ERROR):
                    send_control(ctrl, m[0], Tag.TASK, {"rows": list(queue.popleft())})
                    outstanding[m[0]] += 1
                continue
            pending = [p for p in pending if not _completed(p)]
            if not call.shipped_at and _all_done(ship_requests):
                call.shipped_at = time.perf_counter()
            if not any(outstanding.values()) and not pending and call.shipped_at:
                return
            self._check()
            backoff.idle()

    def _chunks(self, n: int) -> list[tuple[int, int]]:
        """Dynamic inter-node chunks: the configured scheme over P = workers, with the inter-node grain floor."""
        if n == 0:
            return [(0, 0)]
        workers = len(self.workers)
        grain = max(self.grain, math.ceil(n / (MAX_CHUNKS_PER_WORKER * workers)))
        return list(tasks(self.scheme, 0, n, workers, grain))

    def _on_reply(self, call: _Call, m: tuple[int, Tag, dict[str, Any]], outstanding: dict[int, int],
                  pending: list[tuple[list[Any], Callable[[], None]]]) -> None:  # fmt: skip
        w, tag, body = m
        if tag == Tag.ERROR:
            outstanding[w] -= 1
            call.errors.append(RemoteError(w, body["message"], body.get("loc")))
            return
        if tag != Tag.COMPUTERESULT:
            raise DaphneRuntimeError(f"distributed runtime: unexpected message {tag.name} from rank {w}")
        outstanding[w] -= 1
        call.compute[w] = call.compute.get(w, 0.0) + body["seconds"]
        start = body["rows"][0]
        outs: list[object] = [None] * len(body["out"])
        requests: list[Any] = []
        finishers = []
        for j, desc in enumerate(body["out"]):
            bufs, build = ser.allocate(desc)
            requests += ser.irecv(self.comms.data, bufs, w, int(Tag.OUTPUT), self.chunk)
            finishers.append((j, build))
            self.stats.result_bytes += ser.nbytes(desc)

        def finish() -> None:
            for j, build in finishers:
                outs[j] = build()
            call.parts[start] = outs

        pending.append((requests, finish))

    def _combine(self, call: _Call, combines: Sequence[int]) -> tuple[object, ...]:
        t0 = time.perf_counter()
        ordered = [call.parts[s] for s in sorted(call.parts)]
        results = tuple(combine([p[j] for p in ordered], mode) for j, mode in enumerate(combines))
        for j, kid in enumerate(call.keep):
            if kid is None:
                continue
            r = results[j]
            if _is_matrix(r) and r.shape[0] == call.n:  # type: ignore[attr-defined]
                self.cache.add(r, BLOCKS, static_blocks(call.n, len(self.workers)), obj_id=kid)
            else:
                self.cache._freed.append(kid)  # noqa: SLF001 - never registered: let the workers drop it
        self.stats.combine_seconds += time.perf_counter() - t0
        return results

    def _record(self, call: _Call, t0: float) -> None:
        """Per call: total seconds, the busiest worker's compute seconds, seconds until the inputs had arrived."""
        s = self.stats
        total = time.perf_counter() - t0
        busiest = max(call.compute.values(), default=0.0)
        shipping = max(call.shipped_at - t0, 0.0) if call.ship else 0.0
        s.calls += 1
        s.call_seconds += total
        s.ship_seconds += shipping
        s.compute_seconds += busiest
        s.tasks += len(call.parts)
        if len(s.per_call) < 10000:
            s.per_call.append({"seconds": total, "compute": busiest, "ship": shipping, "rows": call.n})

    def _write_stats(self) -> None:
        path = os.environ.get("DAPHNEC_DIST_STATS")
        if path:
            with open(path, "w", encoding="utf-8") as f:
                json.dump({**asdict(self.stats), "workers": len(self.workers), "scheme": self.scheme}, f)


class LocalRunner:
    """`--distributed` without workers (not under mpiexec, or one rank): every distributed pipeline is compiled
    from its shipped IR text and run in this process, exactly as a worker would run it."""

    def __init__(self, compile_body: Callable[[str], Callable[..., tuple[object, ...]]]):
        self.compile_body = compile_body
        self.bodies: dict[str, Callable[..., tuple[object, ...]]] = {}

    def run(self, ir: str, inputs: Sequence[object], splits: Sequence[int], combines: Sequence[int]) -> tuple[object, ...]:
        body = self.bodies.get(ir)
        if body is None:
            body = self.bodies[ir] = self.compile_body(ir)
        return body(*inputs)


ACTIVE: Coordinator | LocalRunner | None = None
"""The distributed runtime of this process, set by `launch.start` on rank 0."""


def run_distributed(ir: str, inputs: Sequence[object], splits: Sequence[int], combines: Sequence[int]) -> tuple[object, ...]:
    """What the generated host code calls for a `daphne.distributedPipeline`."""
    if ACTIVE is None:
        raise DaphneRuntimeError("distributed pipeline: the distributed runtime is not running (use daphnec --distributed)")
    return ACTIVE.run(ir, inputs, splits, combines)


def report_and_abort(message: str, comms: Comms, code: int = 3) -> None:
    """Print the failure after whatever the script printed so far and end every rank (MPI_Abort: the process
    manager kills the job, so no worker is left behind)."""
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass
    sys.stderr.write(f"error: {message}\n")
    sys.stderr.flush()
    comms.world.Abort(code)


def _is_matrix(x: object) -> bool:
    import numpy as np

    return isinstance(x, np.ndarray) or is_csr(x)


def _for_worker(spec: dict[str, Any], i: int) -> dict[str, Any]:
    if "scalar" in spec:
        return spec
    return {"id": spec["id"], "split": spec["split"], "first": spec["first"][i]}


def _shipment(x: object, layout: str, p: Placement, block: tuple[int, int]) -> dict[str, Any]:
    if layout == REPLICATED:
        return {"id": p.obj_id, "how": "bcast", "desc": ser.describe(x)}
    return {"id": p.obj_id, "how": "part", "first": block[0], "desc": ser.describe(ser.row_block(x, *block))}


def _completed(p: tuple[list[Any], Callable[[], None]]) -> bool:
    from mpi4py import MPI

    requests, finish = p
    if requests and not MPI.Request.Testall(requests):
        return False
    finish()
    return True


def _all_done(requests: list[Any]) -> bool:
    from mpi4py import MPI

    return not requests or MPI.Request.Testall(requests)


def _any_source() -> int:
    from mpi4py import MPI

    return MPI.ANY_SOURCE

