"""The coordinator (rank 0): runs the script and hands every distributed pipeline to the workers.

One call (`Coordinator.run`), DAPHNE's DistributedWrapper::execute with daphnec's additions:

1. Inputs a worker needs whole (split NONE, or a one-row ROWS input) become *replicas*: shipped to every worker
   once (the placement cache remembers them). Scalars travel inside the messages.
2. The rows are cut into tasks: STATIC (`--partitioning=STATIC`) gives worker i DAPHNE's contiguous block i;
   any other scheme cuts the rows with that scheme over P = number of workers, and hands a chunk to a worker
   whenever it returns a result (self-scheduling between nodes).
3. A task carries the rows it needs of every ROWS input: a piece the worker already holds (placement cache), or
   the rows themselves, shipped with the task and then kept there. Under dynamic scheduling a worker asking for
   work gets a chunk whose rows it already holds if there is one, else an unclaimed chunk, else it takes over the
   last chunk of the worker with the most left ("stealing"): the graph travels once, and a slow node's share
   moves to the others.
4. Each worker keeps the rows it computed of every ROWS-combined result, so when the next pipeline reads that
   result (connected components' next `c`) nothing moves.
5. Results come back from any worker in arrival order and are combined in row order with the local executor's
   own `combine` (ROWS/COLS/ADD/MIN/MAX), so a distributed run combines like a local one.

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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from daphnec.dialects.value_types import Combine, Split
from daphnec.runtime import testing_hooks
from daphnec.runtime.distributed import serialization as ser
from daphnec.runtime.distributed.liveness import CoordinatorLiveness, watchable
from daphnec.runtime.distributed.placement import PlacementCache
from daphnec.runtime.distributed.protocol import (
    Backoff,
    Comms,
    Tag,
    pmi_abort,
    send_control,
    try_recv_control,
    wait_until_read,
)
from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.options import DEFAULT_MAX_DISTR_CHUNK_SIZE
from daphnec.runtime.scheduling.partitioning import SCHEMES, tasks
from daphnec.runtime.values import INT_VTS, is_csr, wrap_int
from daphnec.runtime.vectorized.pipeline import combine, row_count

DEFAULT_CHUNK = DEFAULT_MAX_DISTR_CHUNK_SIZE  # --max-distr-chunk-size
BCAST_MIN_WORKERS = int(os.environ.get("DAPHNEC_DIST_BCAST_MIN_WORKERS", 8))
"""From this many workers on, replicas are broadcast with a tree (`Ibcast`) instead of one send per worker."""
IN_FLIGHT = int(os.environ.get("DAPHNEC_DIST_IN_FLIGHT", 1))
"""Chunks a worker holds at once under dynamic scheduling. 2 hides the round trip between chunks, but commits
chunks before anyone knows which node is slow: with rank 2 three times slower (bench/dist_bench.py) it kept 32-38 %
of the rows instead of the ideal 25 %, and GSS lost to STATIC; with 1 it kept 26-27 % and GSS won."""
MAX_CHUNKS_PER_WORKER = int(os.environ.get("DAPHNEC_DIST_MAX_CHUNKS", 64))
"""Inter-node grain floor: at most about this many chunks per worker, however fine the scheme (SS would otherwise
send one message round per row)."""

Task = tuple[int, int]
Results = tuple[object, ...]


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


def static_blocks(n: int, workers: int) -> list[Task]:
    """DAPHNE's contiguous even split (facts §5): block i = [i*k + min(i, m), (i+1)*k + min(i+1, m)), k = n // W,
    m = n % W."""
    k, m = divmod(n, workers)
    return [(i * k + min(i, m), (i + 1) * k + min(i + 1, m)) for i in range(workers)]


SLOWER = 2.0
"""A worker's only pending chunk is stolen only from a worker this many times slower than the thief."""


def pick_chunk(pending: Sequence[Task], holders: Sequence[frozenset[int]], w: int,
               speed: Mapping[int, float] | None = None) -> int | None:  # fmt: skip
    """Locality-aware self-scheduling: the index of the chunk worker `w` should compute next — the first chunk
    whose rows it already holds, else the first chunk nobody holds, else the last chunk of the worker with the
    most rows left (stealing from the tail, which that worker would reach last). A worker's only pending chunk is
    next in line there, while a thief would first receive its rows (and keep a second copy of them for every later
    call): it is stolen only from a worker `SLOWER` times slower than `w` (`speed`: measured rows per second).
    None when there is nothing (worth taking) for `w`."""
    if not pending:
        return None
    for i, h in enumerate(holders):
        if w in h:
            return i
    for i, h in enumerate(holders):
        if not h:
            return i
    left: dict[int, int] = {}
    count: dict[int, int] = {}
    for (a, b), h in zip(pending, holders):
        for o in h:
            left[o] = left.get(o, 0) + b - a
            count[o] = count.get(o, 0) + 1
    speed = speed or {}
    victims = [o for o in left if count[o] > 1 or speed.get(o, math.inf) * SLOWER < speed.get(w, 0.0)]
    if not victims:
        return None
    victim = max(victims, key=left.__getitem__)
    return max(i for i, h in enumerate(holders) if victim in h)


def inter_node_scheme(scheme: str) -> str:
    """The scheme that cuts rows between nodes: the configured one (ADAPTIVE, a per-pipeline local choice, runs
    GSS between nodes)."""
    return scheme if scheme in SCHEMES else "GSS"


@dataclass
class Stats:
    """What the coordinator did, for the benchmark (the `DAPHNEC_DIST_STATS` test hook writes it as JSON at the end)."""

    calls: int = 0
    call_seconds: float = 0.0
    compute_seconds: float = 0.0
    """Sum over calls of the busiest worker's compute time."""
    coordinator_seconds: float = 0.0
    """The coordinator's own work: planning, messages, posting transfers, handling results, combining."""
    ship_seconds: float = 0.0
    """Seconds from the start of a call until the coordinator saw its input data delivered (calls that ship; an
    upper bound: mpich completes a large send when the receiver next polls, often only with its result)."""
    receive_seconds: float = 0.0
    """Sum over calls of the longest time a worker waited for shipped data after posting its receives."""
    shipped_bytes: int = 0
    result_bytes: int = 0
    tasks: int = 0
    stolen: int = 0
    rows: dict[str, int] = field(default_factory=dict)
    """Rows computed per worker rank (the share a slow rank ends up with)."""
    shipped: dict[str, int] = field(default_factory=dict)
    """Bytes shipped per object (labelled by kind and shape)."""
    per_call: list[dict[str, float]] = field(default_factory=list)


@dataclass
class _Split:
    """A ROWS input of the current call."""

    x: object
    label: str


@dataclass
class _Call:
    """The state of one pipeline call on the coordinator."""

    n: int
    static: bool
    specs: list[dict[str, Any]]
    splits: list[_Split]
    rows_outputs: list[bool]
    pending_tasks: list[Task]
    blocks: list[Task]
    parts: dict[int, list[object]] = field(default_factory=dict)
    kept: list[tuple[Task, int, list[int | None]]] = field(default_factory=list)
    compute: dict[int, float] = field(default_factory=dict)
    received: dict[int, float] = field(default_factory=dict)
    """Per worker, seconds it waited for shipped data (from posting its receives until they completed)."""
    errors: list[RemoteError] = field(default_factory=list)
    requests: list[Any] = field(default_factory=list)
    shipped_bytes: int = 0
    shipped_at: float = 0.0
    work: float = 0.0
    messages: dict[int, list[tuple[dict[str, Any], list[tuple[object, int]]]]] = field(default_factory=dict)
    """First tasks, built with the PIPELINE messages, whose rows are posted right after them."""
    owners: dict[Task, frozenset[int]] = field(default_factory=dict)
    """Per dynamic chunk, the workers that hold its rows (computed once per call)."""


class Coordinator:
    """Rank 0's side of the protocol: one instance per run, created by `launch.start`."""

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
        self.work_done: dict[int, tuple[int, float]] = {}
        """Per worker, rows computed and seconds spent computing them."""
        self.speed: dict[int, float] = {}
        """Per worker, rows per second (what stealing a worker's last chunk may pay off against)."""
        self.detached: set[int] = set()
        self.liveness = CoordinatorLiveness(comms.live, self.workers, self._on_failure, watchable(comms.peers),
                                            self._has_detached)  # fmt: skip

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
                send_control(self.comms.ctrl, w, Tag.DETACH)
            backoff = Backoff()
            while self.detached != set(self.workers):
                with self.liveness.lock:  # a worker that has detached may end: see _has_detached
                    m = try_recv_control(self.comms.ctrl, _any_source())
                    if m is not None and m[1] == Tag.DETACHED:
                        self.detached.add(m[0])
                        continue
                self._check()
                backoff.idle()
        self.liveness.stop()
        self._write_stats()

    def _has_detached(self, rank: int) -> bool:
        """Whether worker `rank`, whose process has ended, had detached first (the liveness thread asks, holding
        the lock under which `detach` receives DETACHED messages)."""

        return rank in self.detached or self.comms.ctrl.iprobe(source=rank, tag=int(Tag.DETACHED))

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

    def run(self, ir: str, inputs: Sequence[object], splits: Sequence[int], combines: Sequence[int],
            result_vts: Sequence[str | None] | None = None) -> Results:  # fmt: skip
        with self.call_lock:
            self._check()
            t0 = time.perf_counter()
            call = self._plan(inputs, splits, combines)
            replicas = self._replicate(inputs, call)
            first = self._first_tasks(call)
            self._announce(ir, call, replicas, first)
            call.requests += self._post_replicas(call, replicas)
            for w in self.workers:
                for _msg, ship in call.messages.pop(w):
                    self._post_rows(call, w, ship)
            call.work += time.perf_counter() - t0
            self._collect(call, {w: len(t) for w, t in first.items()})
            if call.errors:
                raise min(call.errors, key=lambda e: e.rank)
            t1 = time.perf_counter()
            results = _wrap(self._combine(call, combines), result_vts)
            call.work += time.perf_counter() - t1
            self._record(call, t0)
            return results

    def _plan(self, inputs: Sequence[object], splits: Sequence[int], combines: Sequence[int]) -> _Call:
        """Which inputs are scalars, replicas or split by rows, and the tasks (STATIC blocks or dynamic chunks)."""
        n = row_count(inputs, splits)
        specs: list[dict[str, Any]] = []
        split_inputs: list[_Split] = []
        for x, s in zip(inputs, splits):
            if not _is_matrix(x):
                specs.append({"scalar": ser.describe_scalar(x)})
            elif s != Split.ROWS or (x.shape[0] == 1 and n != 1):  # type: ignore[attr-defined]
                specs.append({"replica": None})
            else:
                specs.append({"split": len(split_inputs)})
                split_inputs.append(_Split(x, _label(x)))
        static = self.scheme == "STATIC"
        blocks = static_blocks(n, len(self.workers))
        pending = [] if static else self._chunks(n)
        call = _Call(n, static, specs, split_inputs, [c == Combine.ROWS for c in combines], pending, blocks)
        call.owners = self._owners(split_inputs, pending)
        return call

    def _owners(self, split_inputs: list[_Split], chunks: list[Task]) -> dict[Task, frozenset[int]]:
        """Per chunk, the workers holding its rows of the largest ROWS input (none: nobody, or everybody)."""
        if not split_inputs or not chunks:
            return {}
        big = max(split_inputs, key=lambda s: 0 if _is_str(s.x) else ser.nbytes(ser.describe(s.x)))
        return {t: self.cache.holders(big.x, t[0], t[1], self.workers) for t in chunks}

    def _chunks(self, n: int) -> list[Task]:
        """Dynamic inter-node chunks: the configured scheme over P = workers, with the inter-node grain floor."""
        if n == 0:
            return [(0, 0)]
        workers = len(self.workers)
        grain = max(self.grain, math.ceil(n / (MAX_CHUNKS_PER_WORKER * workers)))
        return list(tasks(self.scheme, 0, n, workers, grain))

    def _replicate(self, inputs: Sequence[object], call: _Call) -> list[tuple[object, int]]:
        """Replica ids for the inputs needed whole; the ones the workers do not hold yet are returned to ship."""
        ship: list[tuple[object, int]] = []
        for x, spec in zip(inputs, call.specs):
            if "replica" in spec:
                rid = self.cache.replica(x)
                if rid is None:
                    rid = self.cache.add_replica(x)
                    ship.append((x, rid))
                spec["replica"] = rid
        return ship

    # -- tasks ---------------------------------------------------------------------------------------------------------

    def _first_tasks(self, call: _Call) -> dict[int, list[Task]]:
        """The tasks each worker gets with its PIPELINE message: STATIC, its block (the only one); dynamic, its first
        `IN_FLIGHT` chunks."""
        if call.static:
            first: dict[int, list[Task]] = {}
            for w, (a, b) in zip(self.workers, call.blocks):
                first[w] = [(a, b)] if b > a or (call.n == 0 and w == self.workers[0]) else []
            return first
        first = {w: [] for w in self.workers}
        for _ in range(IN_FLIGHT):
            for w in self.workers:
                task = self._next_chunk(call, w)
                if task is not None:
                    first[w].append(task)
        return first

    def _next_chunk(self, call: _Call, w: int) -> Task | None:
        holders = [call.owners.get(t, frozenset()) for t in call.pending_tasks]
        i = pick_chunk(call.pending_tasks, holders, w, self.speed)
        if i is None:
            return None
        if holders[i] and w not in holders[i]:
            self.stats.stolen += 1
        return call.pending_tasks.pop(i)

    def _task_message(self, call: _Call, w: int, task: Task) -> tuple[dict[str, Any], list[tuple[object, int]]]:
        """The TASK body for worker `w`: per ROWS input its piece id (existing, or new with the rows shipped now),
        and ids under which to keep the task's ROWS results."""
        a, b = task
        pieces: list[dict[str, Any]] = []
        ship: list[tuple[object, int]] = []
        new: dict[int, dict[str, Any]] = {}
        for s in call.splits:
            if id(s.x) in new:  # the same matrix twice in one task
                pieces.append({"id": new[id(s.x)]["id"], "first": a})
                continue
            rid = self.cache.replica(s.x)
            p = self.cache.piece(s.x, w, a, b) if b > a else None
            if rid is not None:
                pieces.append({"id": rid, "first": 0})
            elif p is not None:
                pieces.append({"id": p.obj_id, "first": p.first})
            else:
                new[id(s.x)] = self._ship_rows(call, s, w, a, b, ship)
                pieces.append(new[id(s.x)])
        keep = [self.cache.new_id() if rows and b > a else None for rows in call.rows_outputs]
        call.kept.append((task, w, keep))
        return {"rows": [a, b], "pieces": pieces, "keep": keep}, ship

    def _ship_rows(self, call: _Call, s: _Split, w: int, a: int, b: int, ship: list[tuple[object, int]]
                   ) -> dict[str, Any]:  # fmt: skip
        """Rows a..b-1 of a ROWS input go with the task and stay on the worker as a new piece."""
        block = ser.row_block(s.x, a, b)
        piece = self.cache.add_piece(s.x, w, a, b) if b > a else None
        obj_id = piece.obj_id if piece is not None else self.cache.new_id()
        if piece is None:
            self.cache.drop([obj_id])  # an empty block: the worker drops it with the next message
        spec = {"id": obj_id, "first": a, "desc": ser.describe(block)}
        ship.append((block, obj_id))
        size = ser.nbytes(spec["desc"])
        call.shipped_bytes += size
        self.stats.shipped[s.label] = self.stats.shipped.get(s.label, 0) + size
        return spec

    def _post_rows(self, call: _Call, w: int, ship: list[tuple[object, int]]) -> None:
        """Post the rows a task ships, right after its message."""
        for block, _obj_id in ship:
            call.requests += ser.isend(self.comms.data, ser.buffers(block), w, int(Tag.DATA), self.chunk)

    # -- messages ------------------------------------------------------------------------------------------------------

    def _announce(self, ir: str, call: _Call, replicas: list[tuple[object, int]], first: dict[int, list[Task]]
                  ) -> None:  # fmt: skip
        """One PIPELINE message per worker: body key (the IR text only the first time), inputs, replicas to receive,
        its first task, ids to drop."""
        tree = len(self.workers) >= BCAST_MIN_WORKERS
        new_body = ir not in self.bodies
        if new_body:
            self.bodies[ir] = len(self.bodies)
        freed = self.cache.take_freed()
        ship = [{"id": rid, "how": "bcast" if tree else "copy", "desc": ser.describe(x)} for x, rid in replicas]
        call.messages = {}
        for w in self.workers:
            call.messages[w] = [self._task_message(call, w, t) for t in first[w]]
            msg: dict[str, Any] = {"body": self.bodies[ir], "free": freed, "inputs": call.specs, "ship": ship,
                                   "more": not call.static, "tasks": [m for m, _ in call.messages[w]]}  # fmt: skip
            if new_body:
                msg["ir"] = ir
            send_control(self.comms.ctrl, w, Tag.PIPELINE, msg)

    def _post_replicas(self, call: _Call, replicas: list[tuple[object, int]]) -> list[Any]:
        requests: list[Any] = []
        for x, _rid in replicas:
            bufs = ser.buffers(x)
            if len(self.workers) >= BCAST_MIN_WORKERS:
                requests += ser.ibcast(self.comms.data, bufs, 0, self.chunk)
            else:
                for w in self.workers:
                    requests += ser.isend(self.comms.data, bufs, w, int(Tag.BROADCAST), self.chunk)
            size = sum(b.nbytes for b in bufs) * len(self.workers)
            call.shipped_bytes += size
            label = _label(x)
            self.stats.shipped[label] = self.stats.shipped.get(label, 0) + size
        return requests

    # -- collecting results ------------------------------------------------------------------------------------------

    def _collect(self, call: _Call, outstanding: dict[int, int]) -> None:
        """Receive every result, hand out the remaining chunks, complete all transfers."""
        stopped: set[int] = set(self.workers) if call.static else set()
        pending: list[tuple[list[Any], Callable[[], None]]] = []
        backoff = Backoff()
        while True:
            if not call.pending_tasks or call.errors:
                call.pending_tasks.clear()
                for w in set(self.workers) - stopped:
                    send_control(self.comms.ctrl, w, Tag.STOP)
                    stopped.add(w)
            m = try_recv_control(self.comms.ctrl, _any_source())
            if m is not None:
                t = time.perf_counter()
                backoff.reset()
                self._on_reply(call, m, pending)
                outstanding[m[0]] -= 1
                task = self._next_chunk(call, m[0]) if not call.errors else None
                if task is not None:
                    msg, ship = self._task_message(call, m[0], task)
                    send_control(self.comms.ctrl, m[0], Tag.TASK, msg)
                    self._post_rows(call, m[0], ship)
                    outstanding[m[0]] += 1
                call.work += time.perf_counter() - t
                continue
            pending = [p for p in pending if not _completed(p)]
            if call.requests and _all_done(call.requests):
                call.requests = []
            if not call.requests and not call.shipped_at:
                call.shipped_at = time.perf_counter()
            if not any(outstanding.values()) and not pending and not call.requests:
                return
            self._check()
            backoff.idle(transfer=bool(pending) or bool(call.requests))

    def _measure(self, w: int, rows: int, seconds: float) -> None:
        """Worker w's speed in rows per second over all its tasks so far (for `pick_chunk`): totals, not a
        per-task average, which small tasks (dominated by their fixed cost) would swing."""
        rows_done, busy = self.work_done.get(w, (0, 0.0))
        rows_done, busy = rows_done + rows, busy + seconds
        self.work_done[w] = (rows_done, busy)
        if busy > 0:
            self.speed[w] = rows_done / busy

    def _on_reply(self, call: _Call, m: tuple[int, Tag, dict[str, Any]],
                  pending: list[tuple[list[Any], Callable[[], None]]]) -> None:  # fmt: skip
        w, tag, body = m
        if tag == Tag.ERROR:
            call.errors.append(RemoteError(w, body["message"], body.get("loc")))
            return
        if tag != Tag.COMPUTERESULT:
            raise DaphneRuntimeError(f"distributed runtime: unexpected message {tag.name} from rank {w}")
        if not call.shipped_at and _all_done(call.requests):
            call.shipped_at = time.perf_counter()
        call.compute[w] = call.compute.get(w, 0.0) + body["seconds"]
        self._measure(w, body["rows"][1] - body["rows"][0], body["seconds"])
        self.stats.rows[str(w)] = self.stats.rows.get(str(w), 0) + body["rows"][1] - body["rows"][0]
        call.received[w] = call.received.get(w, 0.0) + body.get("received", 0.0)
        start = body["rows"][0]
        outs: list[object] = [None] * len(body["out"])
        requests: list[Any] = []
        builders = []
        for j, desc in enumerate(body["out"]):
            bufs, build = ser.allocate(desc)
            requests += ser.irecv(self.comms.data, bufs, w, int(Tag.OUTPUT), self.chunk)
            builders.append((j, build))
            self.stats.result_bytes += ser.nbytes(desc)

        def finish() -> None:
            for j, build in builders:
                outs[j] = build()
            call.parts[start] = outs

        pending.append((requests, finish))

    def _combine(self, call: _Call, combines: Sequence[int]) -> tuple[object, ...]:
        """Combine in row order; register the workers' kept rows of each ROWS result as its pieces."""
        ordered = [call.parts[s] for s in sorted(call.parts)]
        results = tuple(combine([p[j] for p in ordered], mode) for j, mode in enumerate(combines))
        for (a, b), w, keep in call.kept:
            for j, kid in enumerate(keep):
                if kid is None:
                    continue
                r = results[j]
                if _is_matrix(r) and r.shape[0] == call.n:  # type: ignore[attr-defined]
                    self.cache.add_piece(r, w, a, b, obj_id=kid)
                else:
                    self.cache.drop([kid])
        return results

    def _record(self, call: _Call, t0: float) -> None:
        s = self.stats
        total = time.perf_counter() - t0
        busiest = max(call.compute.values(), default=0.0)
        shipping = max(call.shipped_at - t0, 0.0) if call.shipped_bytes else 0.0
        s.calls += 1
        s.call_seconds += total
        s.compute_seconds += busiest
        s.coordinator_seconds += call.work
        s.ship_seconds += shipping
        s.receive_seconds += max(call.received.values(), default=0.0)
        s.shipped_bytes += call.shipped_bytes
        s.tasks += len(call.parts)
        if len(s.per_call) < 10000:
            s.per_call.append({"seconds": total, "compute": busiest, "coordinator": call.work, "ship": shipping,
                               "received": max(call.received.values(), default=0.0),
                               "shipped_bytes": call.shipped_bytes, "rows": call.n})  # fmt: skip

    def _write_stats(self) -> None:
        path = testing_hooks.dist_stats_file()
        if path:
            with open(path, "w", encoding="utf-8") as f:
                json.dump({**asdict(self.stats), "workers": len(self.workers), "scheme": self.scheme}, f)


SINGLE_RANK_WARNING = (
    "daphnec: warning: --distributed needs at least 2 MPI ranks (e.g. `mpiexec -n 3 daphnec "
    "--distributed ...`); running the distributed pipelines in this process"
)


class LocalRunner:
    """`--distributed` without workers (not under mpiexec, or one rank): every distributed pipeline is compiled
    from its shipped IR text and run in this process, exactly as a worker would run it."""

    def __init__(self, compile_body: Callable[[str], Callable[..., tuple[object, ...]]],
                 warn: Callable[[str], None] | None = None):  # fmt: skip
        self.compile_body = compile_body
        self.bodies: dict[str, Callable[..., tuple[object, ...]]] = {}
        self.warn = warn

    def warn_once(self) -> None:
        if self.warn is not None:
            self.warn(SINGLE_RANK_WARNING)
            self.warn = None

    def run(self, ir: str, inputs: Sequence[object], splits: Sequence[int], combines: Sequence[int],
            result_vts: Sequence[str | None] | None = None) -> Results:  # fmt: skip
        body = self.bodies.get(ir)
        if body is None:
            body = self.bodies[ir] = self.compile_body(ir)
        return body(*inputs)


ACTIVE: Coordinator | LocalRunner | None = None
"""The distributed runtime of this process, set by `launch.start` on rank 0."""


def run_distributed(ir: str, inputs: Sequence[object], splits: Sequence[int], combines: Sequence[int],
                    result_vts: Sequence[str | None] | None = None) -> Results:  # fmt: skip
    """What the generated host code calls for a `daphne.distributedPipeline`."""
    if ACTIVE is None:
        raise DaphneRuntimeError("distributed pipeline: the distributed runtime is not running (daphnec --distributed)")
    return ACTIVE.run(ir, inputs, splits, combines, result_vts)


def _wrap(results: Results, result_vts: Sequence[str | None] | None) -> Results:
    """Integer sums combined from the workers' partial sums wrap to the result's value type once more, as the local
    executor does (runtime/vectorized/pipeline.py::run_pipeline)."""
    if result_vts is None:
        return results
    return tuple(wrap_int(x, vt) if type(x) is int and vt in INT_VTS else x for x, vt in zip(results, result_vts))


def report_and_abort(message: str | None, comms: Comms, code: int = 3) -> None:
    """Print the failure (if not None) after whatever the script printed so far and end every rank: the process
    manager kills the job (`pmi_abort`, else MPI_Abort), so no worker is left behind."""
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass
    if message is not None:
        sys.stderr.write(f"error: {message}\n")
        sys.stderr.flush()
    wait_until_read((1, 2))
    if pmi_abort(code):
        time.sleep(10)  # hydra kills this process within milliseconds; if not, MPI_Abort does
    comms.world.Abort(code)


def _is_matrix(x: object) -> bool:
    import numpy as np

    return isinstance(x, np.ndarray) or is_csr(x)


def _is_str(x: object) -> bool:
    return getattr(getattr(x, "dtype", None), "kind", "") == "O"


def _label(x: object) -> str:
    return f"{'csr' if is_csr(x) else 'dense'} {x.shape[0]}x{x.shape[1]}"  # type: ignore[attr-defined]


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
