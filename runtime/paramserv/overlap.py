"""`overlap=true`: each gradient's all-reduce runs beside the rest of the backward pass (wait-free backpropagation).

The `wait-free-backprop` pass puts `daphne.gradientReady(g) {position = j}` into `upd` right where gradient j is
final (and hoists each gradient's computation there). Its kernel (marks.py) hands g to the *sink* of the calling
thread: on an MPI worker rank running ALLREDUCE with `overlap=true`, an `OverlapReducer`. Everywhere else
there is no sink (or worker.EarlyPushes / worker.MatrixPushes, with parameter servers) and the call does nothing.

The reducer lays the model out flat (layout.FlatLayout) and cuts it into *buckets* of at most `bucket` bytes
(`FlatLayout.buckets`: consecutive small matrices share one, MG-WFBP's merging and BAGUA's flattening; a large matrix
is split into chunks that are reduced one after the other, CARAMEL's pipelining). A bucket is complete when every
matrix it touches is final; complete buckets go, in the order they complete, to the rank's communication thread,
which all-reduces each (the RING or TREE algorithm of collectives.py on that slice) while the main thread keeps
computing. After `upd` returns, the main thread marks the gradients the pass did not mark (in descending position)
and waits for the remaining buckets.

Every rank must reduce the buckets in the same order. The order in which they complete is a property of `upd`'s
program, the same on every rank; it is recorded at the first clock (when every worker has a batch) and then
replayed by a rank that has no batch at a clock (the end of a smaller partition). The sum is element-wise along
the canonical tree (reduction.py) whatever the bucketing, so the result equals BSP's bit for bit.

With `sfb` the buckets hold only the matrices that travel whole; the sufficient factors travel as *segments* of
the one all-gather buffer of layout.FactorLayout (its bytes, split: the sum is the same formula's), each factor by
its own all-gather on the communication thread as soon as upd's factors variant marks it final: an affine layer's
A factor (its input) during the FORWARD pass, the first layer's (the batch) before the first op, its B factor (the
gradient of its output) during the backward pass, beside the buckets, in one order that every rank replays. Every
rank rebuilds each factored sum (layout.FactorLayout.rebuild_one, as without overlap) as soon as its segments are
in, while the later segments are still being gathered.
With freq=NBATCHES (the factors of several batches stacked) they are sent once the push's factors are complete.

Statistics: a worker's communication seconds are the thread's busy time (N), its compute seconds the gradients'
and updates' time (C); the epoch's seconds T then give the overlap coefficient alpha = (N + C - T) / min(N, C).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Sequence

import numpy as np

from daphnec.runtime.kernels.lists import DaphneList
from daphnec.runtime.paramserv import marks
from daphnec.runtime.paramserv.collectives import Collective, Counter, MpiReducer
from daphnec.runtime.paramserv.options import DEFAULT_BUCKET
from daphnec.runtime.paramserv.stats import EpochStats, Flights
from daphnec.runtime.paramserv.worker import Contribution
from daphnec.runtime.values import as_dense


class OverlapReducer:
    """`worker.Reducer` for one MPI worker rank with `overlap=true` (see the module docstring). `factored`: with
    `sfb`, the positions upd's factors variant returns as factors (PSOptions.factored: A_j at position j, the B
    factors after the model's n gradients); `early`: each factor is sent as soon as it is marked final (not with
    NBATCHES, whose factors are those of several batches stacked, complete only when the push is)."""

    def __init__(self, reducer: MpiReducer, bucket: int, factored: Sequence[int] = (), early: bool = True):
        self.reducer = reducer
        full = reducer.collective
        self.full = full
        self.sf = full.sf
        """`sfb`: the model positions whose factors travel (segment by segment); the buckets hold the other
        matrices (`Collective.others`), `slot` maps a model position to its place among them."""
        self.slot = {j: i for i, j in enumerate(full.whole)} if self.sf else {j: j for j in range(len(full.model))}
        self.collective: Collective | None = full.others if self.sf else full
        self.factors = full.factors
        self.segment: dict[int, int] = {}
        """A position of the factors variant's result -> the segment of its factor (`FactorLayout.segments`)."""
        n = len(full.model)
        self.variant_only = set(factored) | {n + i for i in range(len(factored))}
        """Positions of the factors variant's result that are not a whole gradient (a factor)."""
        for i, j in enumerate(factored):
            if j in self.sf and early:
                s = 2 * self.sf.index(j)
                self.segment[j], self.segment[n + i] = s, s + 1
        if self.collective is not None:
            lay = self.collective.flat
            self.buckets = lay.buckets(bucket or DEFAULT_BUCKET)
            self.members = [[j for j, (a, b) in enumerate(zip(lay.offsets, lay.offsets[1:])) if a < hi and lo < b]
                            for lo, hi in self.buckets]  # fmt: skip
        else:  # every matrix factored
            self.buckets, self.members = [], []
        self.segments = self.factors.segments if self.factors is not None else []
        self.items = len(self.buckets) + len(self.segments)
        """What the communication thread sends: bucket b is item b, factor segment s item len(buckets) + s."""
        self.order: list[int] | None = None
        """The items in the order they completed at the first clock."""
        self.queue: queue.Queue[int | None] = queue.Queue()
        self.thread: threading.Thread | None = None
        self.error: BaseException | None = None
        self._clock_state(None)

    def _clock_state(self, present: Sequence[bool] | None) -> None:
        self.present = present
        self.to_root = self.reducer.to_root(self.reducer.clock)
        """The call's last clock: the buckets' sums go to worker 0 only (MpiReducer.to_root)."""
        self.vec: np.ndarray | None = None
        self.out = np.empty(self.collective.flat.n, dtype=self.collective.flat.dtype) if self.collective else None
        self.final: set[int] = set()
        """The buckets' matrices that are final (by slot)."""
        self.final_factors: set[int] = set()
        """`sfb`: the factor segments that are final (by item)."""
        self.fsend = self.factors.encode(None) if self.factors is not None else None
        """`sfb`: this rank's factors buffer (zeros: no batch at this clock), filled segment by segment."""
        self.frecv = np.empty(self.full.k * self.factors.size, dtype=np.uint8) if self.factors is not None else None
        """`sfb`: every rank's factors buffer, one after the other, as the all-gather of the whole would give it."""
        self.queued: list[int] = []
        self.done = threading.Semaphore(0)
        self.busy = 0.0
        self.counter = Counter()

    # -- the communication thread --------------------------------------------------------------------------------

    def _serve(self) -> None:
        while True:
            b = self.queue.get()
            if b is None:
                return
            try:
                if self.error is None:
                    t0 = time.perf_counter()
                    if b < len(self.buckets):
                        self._reduce_bucket(b)
                        self.busy += self.full.trace("bucket", b, t0) - t0
                    else:
                        self._gather_segment(b - len(self.buckets))
                        self.busy += time.perf_counter() - t0
            except BaseException as e:  # noqa: BLE001 - re-raised by the main thread in `reduce`
                self.error = e
            self.done.release()

    def _reduce_bucket(self, b: int) -> None:
        assert self.collective is not None and self.present is not None and self.out is not None
        lo, hi = self.buckets[b]
        part = self.vec[lo:hi] if self.vec is not None else None
        got = self.collective.sum_flat(part, self.present, self.counter, hi - lo, self.to_root)
        if got is not None:
            self.out[lo:hi] = got

    def _gather_segment(self, s: int) -> None:
        """All-gather factor segment s of every rank into its place in `frecv` (the "gather" of the timeline)."""
        assert self.factors is not None and self.fsend is not None and self.frecv is not None
        lo, hi = self.segments[s]
        size = self.factors.size
        for i, part in enumerate(self.full._allgather(self.fsend[lo:hi], self.counter)):  # noqa: SLF001
            self.frecv[i * size + lo : i * size + hi] = part

    def _send(self, b: int) -> None:
        if self.thread is None:
            self.thread = threading.Thread(target=self._serve, name="daphnec-paramserv-overlap", daemon=True)
            self.thread.start()
        self.queued.append(b)
        self.queue.put(b)

    # -- the worker's side ---------------------------------------------------------------------------------------

    def begin(self, w: int) -> None:
        """Before the clock's `upd`: this thread's gradients go to this reducer as they become final."""
        self._clock_state(self.reducer.present(self.reducer.clock))
        if self.collective is not None:
            self.vec = np.empty(self.collective.flat.n, dtype=self.collective.flat.dtype)
        marks.install("sink", self)

    def ready(self, j: int, g: object) -> None:
        """Element j of upd's result (a gradient; with `sfb` possibly a factor) is final: copy it into the flat
        vector (or the factors buffer) and send the items it completes."""
        if j in self.segment:
            s = self.segment[j]
            item = len(self.buckets) + s
            if item in self.final_factors or self.fsend is None:
                return
            assert self.factors is not None
            self.factors.put(self.fsend, s, g)
            self.final_factors.add(item)
        else:
            if j not in self.slot or j in self.variant_only:
                return  # `sfb`: a factor not sent early, or whose product the cost model sends whole (after upd)
            j = self.slot[j]
            if j in self.final or self.vec is None or self.collective is None:
                return
            lay = self.collective.flat
            if not 0 <= j < len(lay.shapes):
                return
            lo, hi = lay.offsets[j], lay.offsets[j + 1]
            d = np.asarray(as_dense(g))
            if d.shape != lay.shapes[j]:
                return  # `upd` returns another matrix here; the checked result is flattened in `reduce`
            self.vec[lo:hi] = d.reshape(-1)
            self.final.add(j)
        if self.order is None:  # the first clock: send what is complete, records the order
            for b in self._candidates():
                if b not in self.queued and self._complete(b):
                    self._send(b)
            return
        while len(self.queued) < len(self.order) and self._complete(self.order[len(self.queued)]):
            self._send(self.order[len(self.queued)])

    def _candidates(self) -> list[int]:
        """The items in the order the first clock sends those complete at once: the factor segments, then the
        buckets from the last (the output layer's gradients are final first)."""
        return list(range(len(self.buckets), self.items)) + sorted(range(len(self.buckets)), reverse=True)

    def _complete(self, b: int) -> bool:
        if b >= len(self.buckets):
            return b in self.final_factors
        return all(m in self.final for m in self.members[b])

    def reduce(self, w: int, c: Contribution | None, stats: EpochStats) -> tuple | None:
        marks.install("sink", None)
        if c is None:  # no batch at this clock: take part in every item, in the recorded order
            self._clock_state(self.reducer.present(self.reducer.clock))
            assert self.order is not None, "every worker has a batch at the first clock"
        else:
            for p in range(len(c.grads) - 1, -1, -1):  # what the pass did not mark, and a check of the rest
                j = self.slot.get(p)
                if j is None or j in self.final or self.collective is None:
                    continue
                lay = self.collective.flat
                lo, hi = lay.offsets[j], lay.offsets[j + 1]
                self.ready(p, c.grads[p])
                if j not in self.final:  # a product of factors the cost model sends whole (computed after upd)
                    self.vec[lo:hi] = np.asarray(as_dense(c.grads[p])).reshape(-1)  # type: ignore[index]
                    self.final.add(j)
            late = {s for s in range(len(self.segments)) if len(self.buckets) + s not in self.final_factors}
            if self.factors is not None and late:  # the factors not sent yet (NBATCHES, or not marked)
                self.factors.encode(c, self.fsend, late)
        order = self.order
        if order is None:
            for b in self._candidates():
                if b not in self.queued:
                    self._send(b)
            self.order = list(self.queued)
        else:
            for b in order[len(self.queued) :]:
                self._send(b)
        factored = self._rebuild(stats)
        self.reducer.clock += 1
        if self.error is not None:
            raise self.error
        stats.push_sent += self.counter.sent
        stats.pulled += self.counter.received
        if self.to_root and self.full.me != 0:
            return None
        whole = self.collective.flat.unflatten(self.out) if self.collective is not None else ()
        if not self.sf:
            return whole
        out: list[object] = [None] * len(self.full.model)
        for j, g in zip(self.full.whole, whole):
            out[j] = g
        for j, g in zip(self.sf, factored):
            out[j] = g
        return tuple(out)

    def _rebuild(self, stats: EpochStats) -> tuple:
        """Wait for every queued item; with `sfb`, rebuild each factored position's sum (computation, C) as soon
        as its factors (and the flags, in the first segment) are in, while the communication thread still gathers
        the later ones: the items complete in queue order, so after the n-th `done` the first n have."""
        waited = 0
        factored: list[np.ndarray] = []
        if self.factors is not None and self.frecv is not None:
            size, base = self.factors.size, len(self.buckets)
            parts = [self.frecv[i * size : (i + 1) * size] for i in range(self.full.k)]
            need = {i: 1 + max(self.queued.index(base + s) for s in (0, 2 * i, 2 * i + 1)) for i in range(len(self.sf))}
            got: dict[int, np.ndarray] = {}
            present: list[np.ndarray] | None = None  # the flag-1 buffers (the flags travel in segment 0)
            for i in sorted(need, key=need.__getitem__):
                while waited < need[i]:
                    self.done.acquire()
                    waited += 1
                if self.error is not None:
                    break
                t0 = time.perf_counter()
                if present is None:
                    present = [p for p in parts if self.factors.flag(p) == 1]
                got[i] = self.factors.rebuild_one(present, i)
                stats.compute_seconds += time.perf_counter() - t0
            factored = [got[i] for i in sorted(got)]
        for _ in self.queued[waited:]:
            self.done.acquire()
        return tuple(factored)

    @property
    def flights(self) -> Flights | None:
        """The timeline of this rank's reductions (test hook), None when off."""
        return self.full.flights

    def busy_seconds(self) -> float:
        """The communication thread's time in the last reduction (N of the overlap coefficient)."""
        return self.busy

    def average(self, w: int, model: DaphneList, stats: EpochStats) -> tuple:
        return self.reducer.average(w, model, stats)

    def close(self) -> None:
        """End the communication thread; the thread's sink is cleared even when `upd` failed mid-clock, so that no
        later call's `upd` hands gradients to this reducer."""
        if marks.current("sink") is self:
            marks.install("sink", None)
        if self.thread is not None:
            self.queue.put(None)
            self.thread.join()
