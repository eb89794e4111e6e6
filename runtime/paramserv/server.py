"""The parameter server's update strategies, independent of the transport, for one server or one shard of many.

A worker talks to a server with two calls (in LOCAL mode under a lock, local.py; in MPI mode from a server rank's
message loop, mpi_server.py):

    push(worker, clock, grads, used)  # a gradient computed on model version `used`, for step `clock`
    try_pull(worker, clock)           # (model, version) if the worker may go on to compute for `clock`,
                                      # STOP if the run is over, None if it must wait

`version` counts the model updates applied so far (version 0 = the initial model).

- **BSP** (bulk synchronous): clock c is complete when every worker with a push at c (`partition.participants`)
  has pushed; the server then sums the clock's gradients in the canonical order (reduction.py: the binomial tree
  over the worker indices) and calls `agg` once (SystemDS's accrue-then-update):
  model_{c+1} = agg(model_c, hp, sum_c). A worker pulls for its next clock c' only once model_{c'} exists. The
  result does not depend on thread or message timing.
- **SSP** (stale synchronous, staleness s): the server applies clocks exactly as BSP, but a worker may compute its
  next push (clock c') as soon as model_{c'-s} exists, with the freshest model there is. Staleness of a gradient
  = its clock - the version of the model it was computed on, always <= s (recorded, max in the stats). s = 0 is
  exactly BSP.
- **ASP** (asynchronous): each gradient is applied on arrival (`agg` under the server's lock); a pull returns the
  current model. Staleness = version at arrival - version used. With a value bound Delta_max > 0, a pull leaves
  the worker with the model it has as long as no element of the current model differs from it by Delta_max or
  more (so fewer models travel, and the model a gradient is computed on is never further than that from the
  server's when it was pulled).
- **SBP** (synchronous with backup workers, b of them): each step the server takes the first k - b gradients
  pushed for the current version, sums them in the canonical order, applies them and publishes the next version;
  gradients computed on an older version arrive late and are dropped (counted). A worker that pushed for version
  v waits for version v+1 (or newer) and goes on with the newest model.
- **EASGD** (elastic averaging, Zhang et al. 2015): the server holds the master model w~. Every tau local steps a
  worker pushes its own model w_i; the server computes e = alpha (w_i - w~), sets w~ += e and answers e; the worker
  sets w_i -= e. Exchanges are applied in arrival order (asynchronous); the run's result is w~.

ASP and SBP have a *budget*: they apply epochs * sum_i P_i gradients, as many as BSP sums (ASP one per update,
SBP k - b per step, so SBP takes k / (k - b) times as many steps as BSP). Their workers stream batches from their
partitions epoch after epoch until the server has spent the budget (then pulls answer STOP): a worker slowed down
does not hold the run back, the others cover for it (so with a straggler these finish sooner than BSP; see
docs/paramserv.md).

**Shards.** With `servers=M` the model's matrices are split into M contiguous ranges of about equal size
(`shard_ranges`); each shard is a server of its own (its own version, its own lock or rank) that holds only its
matrices and applies `agg` to them (`ShardUpdate`: the update of a matrix must depend only on that matrix and its
gradient, the condition for sharding any parameter server). A worker pushes each shard its slice of the gradients
and pulls each shard's matrices. Every strategy keeps its meaning per shard: BSP's shards all apply clock c from the
same gradients (so the model equals the one-server model bit for bit), SSP's bound holds on every shard, ASP applies
on arrival per shard.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.kernels.lists import DaphneList
from daphnec.runtime.paramserv.options import PSOptions
from daphnec.runtime.paramserv.partition import exchanges_per_epoch
from daphnec.runtime.paramserv.reduction import TreeAccumulator, tree_sum
from daphnec.runtime.paramserv.stats import EpochLog
from daphnec.runtime.paramserv.udf import as_list, call_agg, checked, unwrap

STOP = "STOP"
"""What `try_pull` returns once the run is over."""

Pulled = tuple[DaphneList, int] | str | None


def shard_ranges(sizes: Sequence[int], shards: int) -> list[tuple[int, int]]:
    """Split matrices of the given sizes (in model order) into `shards` non-empty contiguous ranges [a, b) that
    minimise the largest range's size (a linear-partition dynamic programme: the model has few matrices)."""
    n = len(sizes)
    if not 1 <= shards <= n:
        raise DaphneRuntimeError(f"paramserv: servers={shards} but the model has {n} matrices (every server holds "
                                 "at least one)")  # fmt: skip
    prefix = [0]
    for s in sizes:
        prefix.append(prefix[-1] + int(s))
    inf = float("inf")
    # best[m][j]: the smallest possible largest range when matrices 0..j-1 are split into m ranges
    best = [[inf] * (n + 1) for _ in range(shards + 1)]
    cut = [[0] * (n + 1) for _ in range(shards + 1)]
    best[0][0] = 0
    for m in range(1, shards + 1):
        for j in range(m, n - (shards - m) + 1):
            for i in range(m - 1, j):
                cost = max(best[m - 1][i], prefix[j] - prefix[i])
                if cost < best[m][j]:
                    best[m][j], cut[m][j] = cost, i
    out, j = [], n
    for m in range(shards, 0, -1):
        i = cut[m][j]
        out.append((i, j))
        j = i
    return out[::-1]


class ShardUpdate:
    """`agg` applied to one shard's matrices. `agg` sees a model list of the full length and shapes: the positions
    the shard does not own hold the initial matrices with zero gradients (read-only zero-stride views, no memory),
    and their results are discarded. So every update that computes each matrix from that matrix and its gradient
    (SGD, momentum, Adam, ...: the condition for sharding any parameter server) gives the shard's matrices exactly
    what one server computes; the price is `agg`'s work on the whole model on every shard, a few element-wise
    passes, small next to a gradient."""

    def __init__(self, agg: Callable[..., object], hp: DaphneList, own: range, initial: DaphneList):
        self.agg = agg
        self.hp = hp
        self.own = own
        self.initial = initial
        self.whole = len(own) == len(initial)
        self.zeros = [np.broadcast_to(np.zeros((), dtype=m.dtype), m.shape) for m in initial]  # type: ignore[attr-defined]

    def __call__(self, part: DaphneList, grads: Sequence[object]) -> DaphneList:
        if self.whole:
            return call_agg(self.agg, part, self.hp, grads)
        a, b = self.own.start, self.own.stop
        model = list(self.initial[:a]) + list(part) + list(self.initial[b:])
        full = self.zeros[:a] + list(grads) + self.zeros[b:]
        whole = as_list(model, self.initial.elem_kind)
        r = checked(self.agg(whole, self.hp, as_list(full)), whole, "agg")
        return as_list(r[a:b], part.elem_kind)

    def some(self, model: DaphneList, grads: dict[int, object]) -> dict[int, object]:
        """The updated matrices at the positions of `grads` (the sums complete so far) of the whole `model` (one
        server; `SyncServer.apply_ready`). Valid for a per-matrix `agg` only (options.per_matrix_agg): its output j
        depends on model j, gradient j and the hyperparameters alone, not on the other positions' values or shapes,
        so they get 1x1 zero stand-ins and their results are discarded, and an update of a few matrices costs what
        their share of `agg` costs. Should `agg` fail on a stand-in (a product with a matrix of the model's shape
        from the hyperparameters), the stand-ins are zero gradients of the real shapes on the real model."""
        tiny = [np.zeros((1, 1), dtype=z.dtype) for z in self.zeros]
        stand = as_list([model[j] if j in grads else t for j, t in enumerate(tiny)], model.elem_kind)
        full = as_list([grads[j] if j in grads else t for j, t in enumerate(tiny)])
        try:
            r = unwrap(self.agg(stand, self.hp, full))
            out = {j: r[j] for j in grads}
            checked([out[j] for j in grads], [model[j] for j in grads], "agg")
            return out
        except Exception:  # noqa: BLE001 - the stand-ins did not fit agg: the same update on real shapes
            full = as_list([grads[j] if j in grads else z for j, z in enumerate(self.zeros)])
            r = checked(self.agg(model, self.hp, full), model, "agg")
            return {j: r[j] for j in grads}


class Server:
    """State shared by the strategies: the (shard's) model, its version, the statistics and epoch timing.

    `progress` measures the run against its epochs: clocks for BSP/SSP (max_i P_i per epoch), gradients applied
    for ASP and SBP (sum_i P_i per epoch), exchanges for EASGD."""

    def __init__(self, model: DaphneList, update: Callable[[DaphneList, Sequence[object]], DaphneList],
                 log: EpochLog, per_epoch: int, epochs: int, ends: list[int] | None = None):  # fmt: skip
        self.model = model
        self.update = update
        self.log = log
        self.version = 0
        self.progress = 0
        self.stopped = False
        self.epochs = epochs
        self.ends = ends if ends is not None else [max(per_epoch, 1) * (e + 1) for e in range(epochs)]
        """The progress at which each epoch ends."""
        self.epoch_ends: list[float] = []
        self.epoch_models: list[DaphneList] = []
        """The model at the end of each epoch (models are values, so a reference is a snapshot); for `val`."""

    def epoch(self) -> int:
        return min(len(self.epoch_ends), self.epochs - 1)

    def _advance(self, weight: int) -> None:
        """One more version, `weight` more progress (the epoch bookkeeping of every strategy)."""
        self.version += 1
        self.progress += weight
        while len(self.epoch_ends) < self.epochs and self.progress >= self.ends[len(self.epoch_ends)]:
            self.epoch_ends.append(time.perf_counter())
            self.epoch_models.append(self.model)

    def _apply(self, grads: Sequence[object], weight: int = 1) -> None:
        """model = agg(model, hp, grads); one more version, `weight` more progress."""
        self._install(self.update(self.model, grads), weight)

    def _install(self, model: DaphneList, weight: int = 1) -> None:
        """The updated model: one more version, `weight` more progress."""
        e = self.epoch()
        self.model = model
        self.log[e].updates += 1
        self._advance(weight)

    def _drop(self) -> None:
        self.log[self.epoch()].dropped += 1

    def push(self, w: int, clock: int, grads: tuple, used: int) -> bool:
        """Take a worker's gradients; True if the model version changed (or the run stopped)."""
        raise NotImplementedError

    def try_pull(self, w: int, clock: int) -> Pulled:
        raise NotImplementedError

    def finish(self) -> None:
        """The run is over: stamp the epochs that have not ended yet (a run cut short by an error)."""
        while len(self.epoch_ends) < self.epochs:
            self.epoch_ends.append(time.perf_counter())
            self.epoch_models.append(self.model)


class SyncServer(Server):
    """BSP (staleness 0) and SSP."""

    def __init__(self, model: DaphneList, update: Callable[..., DaphneList], log: EpochLog, pushes: list[int],
                 epochs: int, staleness: int = 0):  # fmt: skip
        self.max_pushes = max(pushes)
        super().__init__(model, update, log, self.max_pushes, epochs)
        self.staleness = staleness
        self.k = len(pushes)
        self.pushes = list(pushes)
        self.needed = [sum(1 for p in pushes if p > s) for s in range(self.max_pushes)]
        self.pending: dict[int, dict[int, tuple | None]] = {}
        """Per clock, the pushes complete so far by worker (None: its matrices went by `push_part`)."""
        self.partial: dict[int, list[TreeAccumulator]] = {}
        """Per clock, one running canonical sum per matrix of the pushes that arrive matrix by matrix."""
        self.per_matrix: Callable[[DaphneList, dict[int, object]], dict[int, object]] | None = None
        """Set for a per-matrix `agg` (streamed pulls): `apply_ready` updates each matrix once its sum is complete."""
        self.fresh: dict[int, object] = {}
        """The matrices of the next version (clock `version`) updated so far, in the order they were updated."""

    def push(self, w: int, clock: int, grads: tuple, used: int) -> bool:
        self._stale(clock, used)
        self.pending.setdefault(clock, {})[w] = grads
        return self._complete()

    def push_part(self, w: int, clock: int, j: int, grad: object) -> None:
        """Matrix j of worker w's push for `clock`, ahead of the rest (`overlap=true` with one server: each
        gradient leaves the worker when it is final). It is added into the clock's sum of matrix j at once, along
        the canonical tree in worker order (`TreeAccumulator`: an early arrival waits for its sibling block), so the
        summation runs while the other matrices are on the wire and the sum is BSP's bit for bit. `push_done`
        ends the push once all its matrices are here."""
        accs = self.partial.get(clock)
        if accs is None:
            present = [p > clock % self.max_pushes for p in self.pushes]
            accs = self.partial[clock] = [TreeAccumulator(present) for _ in self.model]
        accs[j].add(w, grad)

    def apply_ready(self) -> list[int]:
        """Streamed pulls: update the matrices of the next version whose sums are complete and that are not updated
        yet (one `agg` call for all of them); their positions. A per-matrix `agg` gives each matrix the value the
        whole update gives it, so the model is BSP's bit for bit."""
        accs = self.partial.get(self.version)
        if self.per_matrix is None or accs is None:
            return []
        ready = {j: a.result for j, a in enumerate(accs) if a.complete and j not in self.fresh}
        if not ready:
            return []
        self.fresh.update(self.per_matrix(self.model, ready))
        return list(ready)

    def push_done(self, w: int, clock: int, used: int) -> bool:
        """Every matrix of worker w's push for `clock` went by `push_part`; True if the model version changed."""
        self._stale(clock, used)
        self.pending.setdefault(clock, {})[w] = None
        return self._complete()

    def _stale(self, clock: int, used: int) -> None:
        entry = self.log[min(clock // self.max_pushes, self.epochs - 1)]
        stale = clock - used
        if stale > entry.max_staleness:
            entry.max_staleness = stale

    def _complete(self) -> bool:
        """Apply every clock whose pushes are all here, in order."""
        changed = False
        while True:
            got = self.pending.get(self.version)
            if got is None or len(got) < self.needed[self.version % self.max_pushes]:
                return changed
            del self.pending[self.version]
            accs = self.partial.pop(self.version, None)
            if accs is None:
                total = tree_sum([got.get(i) for i in range(self.k)])
            else:  # some pushes came matrix by matrix; a whole push (a worker's last, without a next model to
                # overlap) joins the same sums, whose order does not depend on arrival
                for i, g in got.items():
                    if g is not None:
                        for acc, m in zip(accs, g):
                            acc.add(i, m)
                assert all(a.complete for a in accs)
                total = tuple(a.result for a in accs)
            if self.fresh:  # streamed pulls: some matrices are updated already, the rest now
                rest = {j: g for j, g in enumerate(total) if j not in self.fresh}
                fresh = {**self.fresh, **(self.per_matrix(self.model, rest) if rest else {})}  # type: ignore[misc]
                self.fresh = {}
                self._install(as_list([fresh[j] for j in range(len(self.model))], self.model.elem_kind))
            else:
                self._apply(total)
            changed = True

    def try_pull(self, w: int, clock: int) -> Pulled:
        if self.version >= clock - self.staleness:
            return self.model, self.version
        return None


class AsyncServer(Server):
    """ASP: apply every gradient on arrival, until `budget` updates are applied; with `delta_max` > 0 a pull
    keeps the worker's model while it is within the value bound."""

    def __init__(self, model: DaphneList, update: Callable[..., DaphneList], log: EpochLog, pushes: list[int],
                 epochs: int, delta_max: float = 0.0):  # fmt: skip
        super().__init__(model, update, log, sum(pushes), epochs)
        self.budget = sum(pushes) * epochs
        self.delta_max = delta_max
        self.held: dict[int, tuple[DaphneList, int]] = {}
        """Value bound: the model (and version) each worker computes with."""

    def push(self, w: int, clock: int, grads: tuple, used: int) -> bool:
        if self.stopped:
            self._drop()
            return False
        entry = self.log[self.epoch()]
        stale = self.version - used
        if stale > entry.max_staleness:
            entry.max_staleness = stale
        self._apply(grads)
        if self.version >= self.budget:
            self.stopped = True
        return True

    def try_pull(self, w: int, clock: int) -> Pulled:
        if self.stopped:
            return STOP
        if self.delta_max > 0.0:
            held = self.held.get(w)
            if held is not None and held[1] != self.version and within(held[0], self.model, self.delta_max):
                return held
            self.held[w] = (self.model, self.version)
        return self.model, self.version


def within(a: Sequence[object], b: Sequence[object], bound: float) -> bool:
    """Whether every element of a differs from b's by less than `bound` (the value bound's test)."""
    for x, y in zip(a, b):
        if x is y:
            continue
        d = np.abs(np.asarray(x, dtype=np.float64) - np.asarray(y, dtype=np.float64))
        if d.size and not float(d.max()) < bound:
            return False
    return True


class BackupServer(Server):
    """SBP: each step applies the first k - b gradients pushed for the current version, until as many gradients
    as BSP sums (epochs * sum_i P_i) are applied."""

    def __init__(self, model: DaphneList, update: Callable[..., DaphneList], log: EpochLog, pushes: list[int],
                 epochs: int, backup: int):  # fmt: skip
        super().__init__(model, update, log, sum(pushes), epochs)
        self.k = len(pushes)
        self.need = max(1, self.k - backup)
        self.budget = sum(pushes) * epochs
        self.pending: dict[int, tuple] = {}

    def push(self, w: int, clock: int, grads: tuple, used: int) -> bool:
        if self.stopped or clock < self.version:
            self._drop()
            return False
        self.pending[w] = grads
        if len(self.pending) < self.need:
            return False
        got, self.pending = self.pending, {}
        self._apply(tree_sum([got.get(i) for i in range(self.k)]), len(got))
        if self.progress >= self.budget:
            self.stopped = True
        return True

    def try_pull(self, w: int, clock: int) -> Pulled:
        if self.stopped:
            return STOP
        return (self.model, self.version) if self.version >= clock else None


class ElasticServer(Server):
    """EASGD's master model: each push of a worker's model is one elastic exchange, answered with its e."""

    def __init__(self, model: DaphneList, log: EpochLog, exchanges: list[int], epochs: int, k: int,
                 alpha: float):  # fmt: skip
        """`exchanges`: the exchanges every worker makes in each epoch."""
        ends = [k * sum(exchanges[: e + 1]) for e in range(epochs)]
        super().__init__(model, lambda m, g: m, log, 1, epochs, ends)
        self.alpha = alpha
        self.k = k
        self.answers: dict[int, tuple[DaphneList, int]] = {}

    def push(self, w: int, clock: int, grads: tuple, used: int) -> bool:
        master = self.model
        e = tuple(elastic(x, m, self.alpha) for x, m in zip(grads, master))
        self.model = as_list([m + d for m, d in zip(master, e)], master.elem_kind)
        self.log[self.epoch()].updates += 1
        self._advance(1)
        self.answers[w] = (as_list(e, master.elem_kind), self.version)
        return True

    def try_pull(self, w: int, clock: int) -> Pulled:
        return self.answers.pop(w, None)


def elastic(x: object, master: object, alpha: float) -> np.ndarray:
    """e = alpha (x - master), in the model's value type."""
    m = np.asarray(master)
    d = np.asarray(x) - m
    return (d * m.dtype.type(alpha)).astype(m.dtype, copy=False) if m.dtype.kind == "f" else d * alpha


def make_server(utype: str, model: DaphneList, update: Callable[..., DaphneList], log: EpochLog,
                pushes: list[int], epochs: int, staleness: int, backup: int, delta_max: float = 0.0,
                exchanges: list[int] | None = None, alpha: float = 0.0) -> Server:  # fmt: skip
    if utype == "BSP":
        return SyncServer(model, update, log, pushes, epochs, 0)
    if utype == "SSP":
        return SyncServer(model, update, log, pushes, epochs, staleness)
    if utype == "ASP":
        return AsyncServer(model, update, log, pushes, epochs, delta_max)
    if utype == "SBP":
        return BackupServer(model, update, log, pushes, epochs, backup)
    if utype == "EASGD":
        return ElasticServer(model, log, exchanges or [1], epochs, len(pushes), alpha)
    raise ValueError(utype)


def model_shards(model: Sequence[object], opts: PSOptions, k: int) -> list[tuple[int, int]]:
    """The matrix ranges of the call's servers, balanced by bytes: `servers` of them, or with `colocated` and no
    `servers` one per worker (at most one per matrix)."""
    shards = opts.servers if opts.servers > 0 else (min(k, len(model)) if opts.colocated else 1)
    return shard_ranges([int(getattr(m, "nbytes", 0)) for m in model], shards)


def make_shard(opts: PSOptions, model: DaphneList, hp: DaphneList, agg: Callable[..., object],
               pushes: list[int], own: tuple[int, int], log: EpochLog) -> Server:  # fmt: skip
    """The server of the shard holding matrices own = [a, b) of `model` (the whole model for one server)."""
    a, b = own
    part = DaphneList(tuple(model[a:b]), model.elem_kind)
    update = ShardUpdate(agg, hp, range(a, b), model)
    k = len(pushes)
    exchanges = exchanges_per_epoch(opts.epochs, max(pushes), opts.period) if opts.utype == "EASGD" else None
    server = make_server(opts.utype, part, update, log, pushes, opts.epochs, opts.staleness, opts.backup_workers,
                         opts.delta_max, exchanges, opts.elastic(k))  # fmt: skip
    if opts.streamed_pulls and isinstance(server, SyncServer) and update.whole:
        server.per_matrix = update.some
    return server
