"""The worker loops of `paramserv`, shared by LOCAL threads (local.py) and MPI worker ranks (mpi.py).

A worker owns its partition (partition.py), walks it in batches, and per *push* (one batch, NBATCHES batches or an
epoch) computes gradients with `upd`. When a push spans several batches the worker applies `agg` to its own copy
of the model after each batch but the last and pushes the sum of the batches' gradients; then it pulls the
server's model (its local updates are discarded). The loops:

- `run_server_worker` (BSP, SSP, ASP, SBP): push gradients to the server, pull the model (an `Endpoint`; with
  sharded servers a `ShardedEndpoint` over one endpoint per shard).
- `run_allreduce_worker` (ALLREDUCE): no server; every worker keeps a replica. Each clock the workers' gradients
  are summed in the canonical order (reduction.py) by a `Reducer` (a barrier in LOCAL mode, one of the all-reduce
  algorithms among the worker ranks in MPI mode) and every worker applies `agg` to its replica, so the replicas
  stay identical and equal BSP's model. A worker without a batch at a clock (a smaller partition) contributes
  nothing but still applies the update.
- `run_localsgd_worker` (LOCALSGD, period tau): every worker applies its own gradient after each batch; after every
  tau clocks (and at the end) the replicas are replaced by their element-wise mean (`Reducer.average`).
- `run_gossip_worker` (GOSSIP, D-PSGD of Lian et al. 2017): every clock a worker computes its gradient on its own
  replica, averages the replica with its neighbours' (`Mixer`: a ring, or a seeded random pairing per clock) and
  applies the gradient to the average. No global model exists until the end, when the replicas are averaged.
- `run_easgd_worker` (EASGD, period tau): plain SGD on the worker's own replica; every tau clocks (and at the end)
  an elastic exchange with the server's master model (server.py, `ElasticServer`).

A test hook (`runtime.testing_hooks.ps_slow_worker`) makes one worker sleep after each batch, a straggler: the
tests and the benchmark use it to show that ASP and SBP do not wait for a slow worker.
"""

from __future__ import annotations

import functools
import itertools
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from daphnec.runtime import testing_hooks
from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.kernels.lists import DaphneList
from daphnec.runtime.paramserv import costs, marks
from daphnec.runtime.paramserv.compression import Compressor, Payload, decode, factors, raw_bytes
from daphnec.runtime.paramserv.options import PSOptions
from daphnec.runtime.paramserv.partition import Partition, Plan, exchange_at
from daphnec.runtime.paramserv.pulls import OrderedPull, PullStopped, pull_sequence
from daphnec.runtime.paramserv.reduction import add_arrays
from daphnec.runtime.paramserv.server import STOP, Pulled
from daphnec.runtime.paramserv.stats import EpochLog, EpochStats, Flights
from daphnec.runtime.paramserv.udf import add, call_agg, call_upd
from daphnec.runtime.values import as_dense


class Aborted(Exception):
    """Another worker failed: this one stops (the first failure is what the caller sees)."""


@dataclass
class Contribution:
    """One worker's gradients for a push: as the server should see them (decoded after compression) and, for a
    transport, the compressed payloads (None where a matrix goes raw)."""

    grads: tuple
    payloads: list[Payload | None] | None
    raw: int
    sent: int


class Endpoint(Protocol):
    """A worker's view of one server: `send` pushes a contribution (and asks for the model it needs next, `nxt`;
    None: nothing, its last push), `receive` waits for the answer. Split so that a worker can push to every shard
    before it waits for any of them."""

    def send(self, w: int, clock: int, used: int, nxt: int | None, c: Contribution, stats: EpochStats) -> None: ...

    def receive(self, w: int, nxt: int | None, used: int, stats: EpochStats) -> Pulled: ...

    def close(self, w: int) -> None:
        """The worker is done with this server (no more pushes)."""


class Reducer(Protocol):
    def reduce(self, w: int, c: Contribution | None, stats: EpochStats) -> tuple | None:
        """The sum of the clock's gradients; None where nobody needs it (an MPI rank other than worker 0's at
        the call's last clock: collectives.MpiReducer.to_root)."""
        ...

    def average(self, w: int, model: DaphneList, stats: EpochStats) -> tuple: ...


class Mixer(Protocol):
    def mix(self, w: int, clock: int, model: DaphneList, stats: EpochStats) -> tuple:
        """The mean of this worker's replica and its neighbours' at `clock` (GOSSIP)."""
        ...


def push_pull(endpoint: Endpoint, w: int, clock: int, used: int, nxt: int | None, c: Contribution,
              stats: EpochStats) -> Pulled:  # fmt: skip
    endpoint.send(w, clock, used, nxt, c, stats)
    return endpoint.receive(w, nxt, used, stats)


def slice_contribution(c: Contribution, a: int, b: int) -> Contribution:
    """The part of a contribution a shard holding matrices a..b-1 receives."""
    payloads = c.payloads[a:b] if c.payloads is not None else None
    return Contribution(c.grads[a:b], payloads, 0, 0)


class ShardedEndpoint:
    """The servers of a sharded model: shard s holds matrices ranges[s]. A push sends each shard its slice, then
    the answers of all shards are collected (every shard answers every push that asks, even after another shard
    said STOP, so the conversation with each stays in step) and the model is put together again. Each shard has
    its own version; the worker tells each the version of that shard's matrices it computed with."""

    def __init__(self, endpoints: list[Endpoint], ranges: list[tuple[int, int]], model: DaphneList):
        self.endpoints = endpoints
        self.ranges = ranges
        self.parts = [DaphneList(tuple(model[a:b]), model.elem_kind) for a, b in ranges]
        self.versions = [0] * len(ranges)
        self.kind = model.elem_kind
        self.order: list[int] = list(range(len(model)))
        """The pull order of the model's positions (pulls.pull_sequence), for ordered pulls."""

    def _first_pulled(self, s: int) -> int:
        a, b = self.ranges[s]
        return min(self.order.index(j) for j in range(a, b))

    def send(self, w: int, clock: int, used: int, nxt: int | None, c: Contribution, stats: EpochStats,
             skip: frozenset[int] | set[int] = frozenset()) -> None:  # fmt: skip
        """Push each shard its slice (except the shards in `skip`, which got theirs early: EarlyPushes)."""
        for s, (e, (a, b), v) in enumerate(zip(self.endpoints, self.ranges, self.versions)):
            if s not in skip:
                e.send(w, clock, v, nxt, slice_contribution(c, a, b), stats)

    def receive(self, w: int, nxt: int | None, used: int, stats: EpochStats,
                arrive: Callable[[int, object], None] | None = None) -> Pulled:  # fmt: skip
        """Every shard's answer; with `arrive` (an ordered pull, pulls.py) each matrix is handed to it as it
        arrives, the shards in the order of their first matrix in the pull order (`order`)."""
        if arrive is None:
            answers = [e.receive(w, nxt, v, stats) for e, v in zip(self.endpoints, self.versions)]
        else:
            answers = [None] * len(self.endpoints)
            for s in sorted(range(len(self.endpoints)), key=self._first_pulled):
                a = self.ranges[s][0]
                answers[s] = self.endpoints[s].receive(  # type: ignore[call-arg]
                    w, nxt, self.versions[s], stats, lambda j, m, a=a: arrive(a + j, m))  # fmt: skip
        if nxt is None:
            return None
        if any(r is None or r == STOP for r in answers):
            return STOP
        for s, r in enumerate(answers):
            self.parts[s], self.versions[s] = r  # type: ignore[misc]
        return DaphneList(tuple(m for p in self.parts for m in p), self.kind), min(self.versions)

    def close(self, w: int) -> None:
        for e in self.endpoints:
            e.close(w)


class EarlyPushes:
    """`overlap=true` with sharded (or co-located) servers, BSP or SSP, one batch per push, without compression or
    sufficient factors: a shard's slice of the gradients is pushed as soon as every gradient in its range is final
    (`daphne.gradientReady`, the wait-free-backprop pass), while the backward pass goes on; the backward pass
    finalises the last layers first, so their shard's push travels under the first layers' backward pass. The
    pushed matrices are the ones `upd` returns, so the servers sum the same values. Before the first early push
    the pull in flight is completed (its answer sets the shards' versions the push reports)."""

    def __init__(self, endpoint: ShardedEndpoint, w: int, tag: int, nxt: int, model: DaphneList, stats: EpochStats,
                 pull: OrderedPull | None):  # fmt: skip
        self.endpoint, self.w, self.tag, self.nxt, self.stats, self.pull = endpoint, w, tag, nxt, stats, pull
        self.shapes = [getattr(m, "shape", None) for m in model]
        self.grads: list[object | None] = [None] * len(model)
        self.sent: set[int] = set()
        self.off = False
        """Set when a gradient does not fit the model or the pull was stopped: the rest goes the usual way."""
        self.drive: Callable[[], object] | None = getattr(endpoint.endpoints[0], "progress", None)
        self.progress: threading.Thread | None = None
        self.done = threading.Event()

    def ready(self, j: int, g: object) -> None:
        if self.off or not 0 <= j < len(self.grads):
            return
        if getattr(g, "shape", None) != self.shapes[j]:
            self.off = True  # call_upd reports it
            return
        self.grads[j] = g
        for s, (a, b) in enumerate(self.endpoint.ranges):
            if s in self.sent or any(self.grads[i] is None for i in range(a, b)):
                continue
            if not self._finish_pull():
                return
            part = Contribution(tuple(self.grads[a:b]), None, 0, 0)
            self.endpoint.endpoints[s].send(self.w, self.tag, self.endpoint.versions[s], self.nxt, part, self.stats)
            self.sent.add(s)
            self._start_progress()

    def _finish_pull(self) -> bool:
        """Complete the pull in flight before the first early push (its answer sets the versions the push
        reports); False when it was stopped (the rest goes the usual way)."""
        if self.pull is None:
            return True
        r = self.pull.finish()
        self.pull = None
        if r is None or r == STOP:
            self.off = True
            return False
        self._pulled(r)
        return True

    def _pulled(self, answer: object) -> None:
        """The completed pull's answer (the sharded endpoint keeps its versions itself)."""

    def _start_progress(self) -> None:
        """Start driving MPI's progress once the first early push is in flight."""
        if self.progress is None and self.drive is not None:
            self.progress = threading.Thread(target=self._drive, name="daphnec-paramserv-push", daemon=True)
            self.progress.start()

    def _drive(self) -> None:
        """MPI moves a large message only inside MPI calls (no asynchronous progress by default), and while `upd`
        computes this rank makes none: poll MPI's progress until `upd` returns, so the early pushes travel. Every
        1 ms: often enough to keep a 1 Gbit/s link busy with 64 KiB chunks in flight, rare enough that the poll (it
        takes the GIL) steals little of `upd`'s time on a shared core."""
        assert self.drive is not None
        while not self.done.wait(PROGRESS_PERIOD):
            self.drive()

    def close(self) -> None:
        """`upd` has returned: stop driving MPI's progress (the usual waits take over)."""
        self.done.set()
        if self.progress is not None:
            self.progress.join()


class MatrixPushes(EarlyPushes):
    """`overlap=true` with one server (BSP, SSP; the same conditions as `EarlyPushes`): each gradient matrix is
    pushed on its own as soon as it is final (`RemoteEndpoint.send_part`), so the last layers' gradients travel, and
    the server sums them (`SyncServer.push_part`), while the backward pass computes the first layers'. The push
    after `upd` returns carries the matrices not sent yet and asks for the next model. With streamed pulls
    (options.streamed_pulls) the first early push asks for it instead, and the next model's `OrderedPull`
    (`next_pull`) starts receiving at once: the server sends each matrix as soon as it is updated, so the last
    layers' matrices come back while this backward pass still computes the first layers' gradients."""

    def __init__(self, endpoint: Endpoint, w: int, tag: int, nxt: int | None, model: DaphneList, stats: EpochStats,
                 pull: OrderedPull | None, stream: bool = False):  # fmt: skip
        self.endpoint1 = endpoint
        self.w, self.tag, self.nxt, self.stats, self.pull = w, tag, nxt, stats, pull
        self.shapes = [getattr(m, "shape", None) for m in model]
        self.grads = [None] * len(model)
        self.sent = set()
        self.off = False
        self.used = 0
        self.drive = getattr(endpoint, "progress", None)
        self.progress = None
        self.done = threading.Event()
        self.stream = stream
        """Streamed pulls: the first early push asks for the next model."""
        self.next_pull: OrderedPull | None = None
        self.side = EpochStats()
        """The next pull's counts (its communication thread's)."""
        self.kind = model.elem_kind

    def ready(self, j: int, g: object) -> None:
        if self.off or not 0 <= j < len(self.grads) or j in self.sent:
            return
        if getattr(g, "shape", None) != self.shapes[j] or not isinstance(g, np.ndarray):
            self.off = True  # call_upd reports a wrong shape; another value kind goes whole
            return
        if not self._finish_pull():
            return
        ask = self.nxt if self.stream and self.next_pull is None and self.nxt is not None else None
        self.endpoint1.send_part(self.tag, self.used, j, g, self.stats, ask)  # type: ignore[attr-defined]
        if ask is not None:
            receive = functools.partial(self.endpoint1.receive, self.w, ask, self.used, self.side)  # type: ignore[attr-defined]
            self.next_pull = OrderedPull(receive, len(self.grads), self.kind)
        self.sent.add(j)
        self._start_progress()

    def _pulled(self, answer: object) -> None:
        self.used = answer[1]  # type: ignore[index]  # the model version the push reports


PROGRESS_PERIOD = 1e-3
"""Seconds between two polls of MPI's progress while early pushes are in flight (`EarlyPushes._drive`)."""


@dataclass
class Job:
    """Everything one worker needs."""

    index: int
    model: DaphneList
    hp: DaphneList
    upd: Callable[..., object]
    agg: Callable[..., object]
    part: Partition
    plan: Plan
    pushes: list[int]
    """P_i (pushes per epoch) of every worker."""
    opts: PSOptions
    log: EpochLog = field(init=False)
    compressor: Compressor | None = field(init=False)
    slow: float = field(init=False)
    aborted: Callable[[], bool] = lambda: False
    transport_counts: bool = False
    """The transport counts the bytes this worker sends (MPI collectives, whose sends are not the contribution)."""
    epoch_ends: list[float] = field(default_factory=list)
    """Decentralised strategies: when this worker finished each epoch (worker 0's are the call's epoch times)."""
    epoch_models: list[DaphneList] = field(default_factory=list)
    """Decentralised strategies: this worker's replica at the end of each epoch (for `val`)."""
    factors: Callable[..., object] | None = None
    """`sfb=true`: `upd`'s factors function (compiler/passes/sufficient_factors.py), same arguments as `upd`; it
    returns the gradients with the positions `opts.factored` replaced by their A factors, then their B factors."""
    rebuild: bool = True
    """`sfb=true`: rebuild the worker's own factored gradients (LOCAL mode; an MPI collective rebuilds every
    worker's factors itself)."""

    def __post_init__(self) -> None:
        self.log = EpochLog(self.opts.epochs)
        c = self.opts.compressor
        self.compressor = Compressor(c) if c else None
        slow_index, seconds = testing_hooks.ps_slow_worker()
        self.slow = seconds if slow_index == self.index else 0.0
        self.sf = sfb_positions(self.opts, self.model, len(self.pushes)) if self.factors is not None else ()

    @property
    def max_pushes(self) -> int:
        return max(self.pushes)

    # -- computing ---------------------------------------------------------------------------------------------------

    def gradients(self, model: DaphneList, s: int, stats: EpochStats, pull: OrderedPull | None = None) -> tuple:
        """The gradients of the s-th push of an epoch, computed from `model` (the seconds count as the epoch's
        compute time). With a `pull` in flight, `model` is the previous step's (its shapes) and the first `upd`
        reads the pulled matrices as they arrive (pulls.py); the time it waits for them is not compute time."""
        t0 = time.perf_counter()
        ranges = self.plan.push_batches(s)
        last = len(ranges) - 1
        local, acc = model, None
        for j, (a, b) in enumerate(ranges):
            if self.aborted():
                raise Aborted
            X, y = self.part.batch(a, b)
            if pull is not None:
                with pull.installed():
                    g = call_upd(self.upd, local, self.hp, X, y)
                local, pull = pull.model(), None
            else:
                g = call_upd(self.upd, local, self.hp, X, y)
            if self.slow:
                time.sleep(self.slow)
            acc = g if acc is None else add(acc, g, owned=j > 1)
            if j < last:
                local = call_agg(self.agg, local, self.hp, g)
        assert acc is not None
        stats.compute_seconds += time.perf_counter() - t0
        return acc

    def push(self, model: DaphneList, s: int, stats: EpochStats, pull: OrderedPull | None = None) -> Contribution:
        """The contribution of the s-th push of an epoch: its gradients, or with `sfb` the sufficient factors of
        the positions `self.sf` (with a `pull` in flight: see `gradients`)."""
        if not self.sf:
            return self.contribution(self.gradients(model, s, stats, pull), stats)
        t0 = time.perf_counter()
        assert self.factors is not None
        ranges = self.plan.push_batches(s)
        last = len(ranges) - 1
        local, rest, stacks = model, None, {j: ([], []) for j in self.sf}
        for i, (a, b) in enumerate(ranges):  # NBATCHES: the factors of the push's batches, stacked
            if self.aborted():
                raise Aborted
            X, y = self.part.batch(a, b)
            if pull is not None:
                with pull.installed():
                    r = self.factors(local, self.hp, X, y)
                local, pull = pull.model(), None
            else:
                r = self.factors(local, self.hp, X, y)
            grads, sf = split_factors(r, local, self.opts.factored)
            for j, (A, B) in sf.items():
                if j in self.sf:
                    stacks[j][0].append(A)
                    stacks[j][1].append(B)
                    grads[j] = A.T @ B if i < last else None  # the local update needs the product
                else:
                    grads[j] = A.T @ B  # the cost model sends this one whole
            if i < last:
                local = call_agg(self.agg, local, self.hp, tuple(grads))
            for j in self.sf:
                grads[j] = None
            rest = grads if rest is None else [g if g is None else add_arrays(x, g, i > 1) for x, g in zip(rest, grads)]
        assert rest is not None
        grads = list(rest)
        payloads: list[Payload | None] = [None] * len(grads)
        for j, (As, Bs) in stacks.items():  # t(A_1) @ B_1 + t(A_2) @ B_2 = t([A_1; A_2]) @ [B_1; B_2]
            A, B = (As[0], Bs[0]) if len(As) == 1 else (np.concatenate(As), np.concatenate(Bs))
            payloads[j] = factors(A, B)
            grads[j] = decode(payloads[j].desc, payloads[j].buffers) if self.rebuild else None
        if self.slow:
            time.sleep(self.slow)
        stats.compute_seconds += time.perf_counter() - t0
        raw = sum(raw_bytes(m) for m in model)
        sent = sum(raw_bytes(g) if p is None else p.nbytes for g, p in zip(grads, payloads))
        c = Contribution(tuple(grads), payloads, raw, sent)
        stats.pushes += 1
        stats.push_raw += raw
        if not self.transport_counts:
            stats.push_sent += sent
        return c

    def local_step(self, model: DaphneList, s: int, stats: EpochStats) -> DaphneList:
        """LOCALSGD/EASGD: the s-th push's gradients applied to the worker's own replica."""
        g = self.gradients(model, s, stats)
        t0 = time.perf_counter()
        out = call_agg(self.agg, model, self.hp, g)
        stats.compute_seconds += time.perf_counter() - t0
        stats.updates += 1
        return out

    def contribution(self, grads: tuple, stats: EpochStats, compress: bool = True) -> Contribution:
        if self.compressor is None or not compress:
            raw = sum(raw_bytes(g) for g in grads)
            c = Contribution(grads, None, raw, raw)
        else:
            payloads, decoded, raw, sent = self.compressor.compress(grads)
            c = Contribution(tuple(decoded), payloads, raw, sent)
        stats.pushes += 1
        stats.push_raw += c.raw
        if not self.transport_counts:
            stats.push_sent += c.sent
        return c

    # -- the push sequence -------------------------------------------------------------------------------------------

    def clocks(self) -> Iterator[tuple[int, int, int]]:
        """(clock, epoch, push of the epoch) of this worker's pushes: BSP/SSP its epochs' pushes at their global
        clocks; ASP/SBP an endless stream over its partition (the server says when to stop)."""
        p, m = self.plan.pushes, self.max_pushes
        if self.opts.utype in ("BSP", "SSP"):
            for e in range(self.opts.epochs):
                for s in range(p):
                    yield e * m + s, e, s
            return
        for g in itertools.count():
            e, s = divmod(g, p)
            yield g, e, s


def sfb_positions(opts: PSOptions, model: DaphneList, k: int) -> tuple[int, ...]:
    """The factored positions whose factors travel (Poseidon's choice, costs.sfb_wins, for k workers and full
    pushes: `push_rows` rows of factors); the others' products are computed on the worker and reduced whole."""
    if not opts.sfb:
        return ()
    out = []
    for j in opts.factored:
        m = model[j]
        algorithm = "PS" if opts.has_server else opts.algorithm
        if len(m.shape) == 2 and costs.sfb_wins(algorithm, k, opts.push_rows, m.shape, m.dtype.itemsize):
            out.append(j)
    return tuple(out)


def split_factors(r: object, model: DaphneList, factored: tuple[int, ...]) -> tuple[list, dict[int, tuple]]:
    """The factors function's result as (gradients with None at the factored positions, {position: (A, B)}),
    checked: A is K x M, B is K x N for an M x N model matrix."""
    while isinstance(r, (tuple, list)) and len(r) == 1 and isinstance(r[0], (tuple, list)):
        r = r[0]
    items = list(r)  # type: ignore[call-overload]
    n = len(model)
    if len(items) != n + len(factored):
        raise DaphneRuntimeError(f"paramserv: the factors of upd returned {len(items)} matrices, expected "
                                 f"{n + len(factored)}")  # fmt: skip
    grads: list = items[:n]
    sf: dict[int, tuple] = {}
    for i, j in enumerate(factored):
        A, B = np.asarray(as_dense(items[j])), np.asarray(as_dense(items[n + i]))
        M, N = model[j].shape
        if A.ndim != 2 or B.ndim != 2 or A.shape[0] != B.shape[0] or A.shape[1] != M or B.shape[1] != N:
            raise DaphneRuntimeError(f"paramserv: upd's gradient at position {j} is t(A) @ B with A {A.shape} and B "
                                     f"{B.shape}, not a {M}x{N} matrix")  # fmt: skip
        grads[j] = None
        sf[j] = (A, B)
    return grads, sf


def run_server_worker(job: Job, endpoint: Endpoint, ordered: bool = False) -> None:
    """BSP/SSP/ASP/SBP: compute, push, pull, until the pushes run out or the server says STOP. `ordered`
    (`overlap=true` over MPI, pulls.py): the pull arrives matrix by matrix on a communication thread while the
    next `upd` already runs on the matrices that are there."""
    model, version = job.model, 0
    utype = job.opts.utype
    stream = job.clocks()
    cur = next(stream, None)
    pull: OrderedPull | None = None
    side = EpochStats()  # the communication thread's counts of the pull in flight, added when it is complete
    pushing_early = (ordered and utype in ("BSP", "SSP") and job.compressor is None and not job.sf
                     and job.opts.freq == "BATCH"
                     and (isinstance(endpoint, ShardedEndpoint) or hasattr(endpoint, "send_part")))  # fmt: skip
    early: EarlyPushes | None = None
    flights = in_flight(endpoint)

    def communicated(stats: EpochStats, seconds: float) -> None:
        """N: the time this worker's messages were on the wire (MPI), else the wall time of the exchange."""
        stats.comm_seconds += seconds if flights is None else flights.take()

    if ordered:
        order = pull_sequence(job.opts.pull_order or (), len(model))
        if isinstance(endpoint, ShardedEndpoint):
            endpoint.order = order
    try:
        while cur is not None:
            clock, e, s = cur
            stats = job.log[e]
            nxt_item = next(stream, None)
            early = None
            if pushing_early and not isinstance(endpoint, ShardedEndpoint):
                # one server: every push goes matrix by matrix, the call's first (no pull in flight) and last (no next
                # model) too; with streamed pulls the first early push asks for the next model
                nxt_clock = nxt_item[0] if nxt_item is not None else None
                early = MatrixPushes(endpoint, job.index, clock, nxt_clock, model, stats, pull,
                                     stream=job.opts.streamed_pulls and nxt_clock is not None)
            elif pull is not None and pushing_early and nxt_item is not None:  # the push asks for the next clock
                early = EarlyPushes(endpoint, job.index, clock, nxt_item[0], model, stats, pull)  # type: ignore[arg-type]
            tc = time.perf_counter()
            try:
                with marks.Installed("sink", early):
                    c: Contribution | None = job.push(model, s, stats, pull)
            except PullStopped:
                if pull is None:
                    raise
                c = None
            finally:
                if early is not None:
                    early.close()
            if flights is not None:
                flights.compute(tc, time.perf_counter())
            if pull is not None:
                r = pull.finish()
                pull.trace(job.index)
                stats.pulled += side.pulled
                communicated(stats, pull.busy)
                stats.wait_seconds += pull.blocked
                stats.compute_seconds -= pull.blocked
                pull = None
                if r is None or r == STOP:
                    return
                model, version = r  # type: ignore[misc]
                assert c is not None, "a pull that was not stopped brings every matrix"
            if utype in ("BSP", "SSP"):
                tag, nxt = clock, (nxt_item[0] if nxt_item is not None else None)
            elif utype == "SBP":
                tag, nxt = version, version + 1
            else:
                tag, nxt = version, 0
            t0 = time.perf_counter()
            streamed = early.next_pull if isinstance(early, MatrixPushes) else None
            if streamed is not None:  # the next model is already arriving: end the push without asking again
                assert early is not None
                endpoint.send(job.index, tag, version, None, c, stats, skip=early.sent)  # type: ignore[call-arg]
                communicated(stats, time.perf_counter() - t0)
                side, pull = early.side, streamed
                cur = nxt_item
                continue
            if ordered and nxt is not None:
                if early is not None and early.sent:
                    endpoint.send(job.index, tag, version, nxt, c, stats, skip=early.sent)  # type: ignore[call-arg]
                else:
                    endpoint.send(job.index, tag, version, nxt, c, stats)
                communicated(stats, time.perf_counter() - t0)
                side = EpochStats()
                pull = OrderedPull(functools.partial(endpoint.receive, job.index, nxt, version, side),
                                   len(model), model.elem_kind)  # type: ignore[arg-type]  # fmt: skip
                cur = nxt_item
                continue
            if early is not None and early.sent:  # the call's last push, matrix by matrix
                endpoint.send(job.index, tag, version, nxt, c, stats, skip=early.sent)  # type: ignore[call-arg]
                r = endpoint.receive(job.index, nxt, version, stats)
            else:
                r = push_pull(endpoint, job.index, tag, version, nxt, c, stats)
            communicated(stats, time.perf_counter() - t0)
            if r is None or r == STOP:
                return
            model, version = r  # type: ignore[misc]
            cur = nxt_item
    finally:
        if pull is not None:  # `upd` failed while the pull was arriving: the shard answers it in any case
            pull.thread.join()
        if isinstance(early, MatrixPushes) and early.next_pull is not None and early.next_pull is not pull:
            early.next_pull.thread.join()  # a streamed pull asked for before `upd` stopped: answered too
        endpoint.close(job.index)
        if flights is not None:
            flights.flush()


def in_flight(endpoint: Endpoint) -> Flights | None:
    """The in-flight record of an MPI worker's endpoint (shared by its shards), None in LOCAL mode."""
    first = getattr(endpoint, "endpoints", [endpoint])[0]
    return getattr(first, "flights", None)


def run_allreduce_worker(job: Job, reducer: Reducer) -> DaphneList:
    """ALLREDUCE: every clock, sum the workers' gradients (in worker order) and apply them to the replica."""
    replica = job.model
    m, p = job.max_pushes, job.plan.pushes
    begin = getattr(reducer, "begin", None)  # overlap.OverlapReducer: gradients go out while upd runs
    flights: Flights | None = getattr(reducer, "flights", None)  # MPI with the timeline hook: each step's phases
    try:
        for clock in range(job.opts.epochs * m):
            e, s = divmod(clock, m)
            stats = job.log[e]
            if begin is not None and s < p:
                begin(job.index)
            tc = time.perf_counter()
            c = job.push(replica, s, stats) if s < p else None
            t0 = time.perf_counter()
            computed = stats.compute_seconds
            summed = reducer.reduce(job.index, c, stats)
            t1 = time.perf_counter()
            if begin is not None:  # communication time is the communication thread's; the rest was waiting
                stats.comm_seconds += reducer.busy_seconds()  # type: ignore[attr-defined]
                stats.wait_seconds += t1 - t0
            else:  # less what the reduction counted as computation (sfb's rebuild of the factored sums)
                stats.comm_seconds += t1 - t0 - (stats.compute_seconds - computed)
            if summed is not None:  # None: the call's last clock on a rank whose replica nobody reads
                replica = call_agg(job.agg, replica, job.hp, summed)
            t2 = time.perf_counter()
            stats.compute_seconds += t2 - t1
            if flights is not None:
                if c is not None:
                    flights.compute(tc, t0)
                flights.mark("reduce", -1, t0, t1)
                if summed is not None:
                    flights.mark("agg", -1, t1, t2)
            if job.index == 0:
                stats.updates += 1
            if s == m - 1:
                job.epoch_ends.append(time.perf_counter())
                job.epoch_models.append(replica)
    finally:
        if flights is not None:
            flights.flush()
    return replica


def run_localsgd_worker(job: Job, reducer: Reducer) -> DaphneList:
    """LOCALSGD: local updates every batch, replicas averaged every `period` clocks and at the end."""

    def average(replica: DaphneList, stats: EpochStats) -> DaphneList:
        return DaphneList(reducer.average(job.index, replica, stats), replica.elem_kind)

    result = local_steps(job, average)
    assert result is not None
    return result


def local_steps(job: Job, exchange: Callable[[DaphneList, EpochStats], DaphneList | None]) -> DaphneList | None:
    """Every batch applied to the worker's own replica; every `period` clocks and after the last the replica is
    exchanged (LOCALSGD: averaged; EASGD: an elastic exchange). None if an exchange says the run is over."""
    replica: DaphneList | None = job.model
    m, p, tau = job.max_pushes, job.plan.pushes, job.opts.period
    total = job.opts.epochs * m
    for clock in range(total):
        e, s = divmod(clock, m)
        stats = job.log[e]
        if s < p:
            replica = job.local_step(replica, s, stats)  # type: ignore[arg-type]
        if exchange_at(clock, tau, total):
            t0 = time.perf_counter()
            replica = exchange(replica, stats)  # type: ignore[arg-type]
            stats.comm_seconds += time.perf_counter() - t0
            if replica is None:
                return None
        if s == m - 1:
            job.epoch_ends.append(time.perf_counter())
            job.epoch_models.append(replica)
    return replica


def run_gossip_worker(job: Job, mixer: Mixer, reducer: Reducer) -> DaphneList:
    """GOSSIP (D-PSGD): gradient on the own replica, replica averaged with the neighbours', gradient applied to
    the average; at the end the replicas' global mean is the result."""
    replica = job.model
    m, p = job.max_pushes, job.plan.pushes
    total = job.opts.epochs * m
    for clock in range(total):
        e, s = divmod(clock, m)
        stats = job.log[e]
        g = job.gradients(replica, s, stats) if s < p else None
        t0 = time.perf_counter()
        mixed = DaphneList(mixer.mix(job.index, clock, replica, stats), replica.elem_kind)
        t1 = time.perf_counter()
        stats.comm_seconds += t1 - t0
        if g is not None:
            replica = call_agg(job.agg, mixed, job.hp, g)
            stats.updates += 1
            stats.compute_seconds += time.perf_counter() - t1
        else:
            replica = mixed
        if s == m - 1:
            job.epoch_ends.append(time.perf_counter())
            job.epoch_models.append(replica)
    t0 = time.perf_counter()
    final = DaphneList(reducer.average(job.index, replica, job.log[job.opts.epochs - 1]), replica.elem_kind)
    job.log[job.opts.epochs - 1].comm_seconds += time.perf_counter() - t0
    if job.epoch_models:
        job.epoch_models[-1] = final
    return final


def run_easgd_worker(job: Job, endpoint: Endpoint) -> None:
    """EASGD: local SGD steps; every `period` clocks and at the end push the replica to the master, receive the
    elastic difference e and subtract it."""

    def elastic(replica: DaphneList, stats: EpochStats) -> DaphneList | None:
        c = job.contribution(tuple(replica), stats, compress=False)
        r = push_pull(endpoint, job.index, 0, -1, 0, c, stats)
        if r is None or r == STOP:
            return None
        diff, _ = r  # type: ignore[misc]
        return DaphneList(tuple(x - d for x, d in zip(replica, diff)), replica.elem_kind)

    try:
        local_steps(job, elastic)
    finally:
        endpoint.close(job.index)
