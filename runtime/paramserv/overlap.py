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

With `sfb` the buckets hold only the matrices that travel whole; the sufficient factors go by one all-gather on
the worker's thread once `upd`'s factors variant has returned, while the communication thread is still reducing
the last buckets, and every rank rebuilds their sum (layout.FactorLayout.rebuild).

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
    """`worker.Reducer` for one MPI worker rank with `overlap=true` (see the module docstring)."""

    def __init__(self, reducer: MpiReducer, bucket: int):
        self.reducer = reducer
        full = reducer.collective
        self.full = full
        self.sf = full.sf
        """`sfb`: the model positions whose factors travel (by one all-gather when `upd` returns); the buckets
        hold the other matrices (`Collective.others`), `slot` maps a model position to its place among them."""
        self.slot = {j: i for i, j in enumerate(full.whole)} if self.sf else {j: j for j in range(len(full.model))}
        collective = full.others if self.sf else full
        assert collective is not None, "sfb with every matrix factored has nothing to reduce in buckets"
        self.collective: Collective = collective
        lay = self.collective.flat
        self.lay = lay
        self.buckets = lay.buckets(bucket or DEFAULT_BUCKET)
        self.members = [[j for j, (a, b) in enumerate(zip(lay.offsets, lay.offsets[1:])) if a < hi and lo < b]
                        for lo, hi in self.buckets]  # fmt: skip
        self.order: list[int] | None = None
        """The buckets in the order they completed at the first clock."""
        self.queue: queue.Queue[int | None] = queue.Queue()
        self.thread: threading.Thread | None = None
        self.error: BaseException | None = None
        self._clock_state(None)

    def _clock_state(self, present: Sequence[bool] | None) -> None:
        self.present = present
        self.to_root = self.reducer.to_root(self.reducer.clock)
        """The call's last clock: the buckets' sums go to worker 0 only (MpiReducer.to_root)."""
        self.vec: np.ndarray | None = None
        self.out = np.empty(self.lay.n, dtype=self.lay.dtype)
        self.final: set[int] = set()
        self.queued: list[int] = []
        self.done = threading.Semaphore(0)
        self.busy = 0.0
        self.gathering = 0.0
        """`sfb`: the seconds of the factors' all-gather (on the worker's thread, beside the communication thread)."""
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
                    lo, hi = self.buckets[b]
                    part = self.vec[lo:hi] if self.vec is not None else None
                    assert self.present is not None
                    got = self.collective.sum_flat(part, self.present, self.counter, hi - lo, self.to_root)
                    if got is not None:
                        self.out[lo:hi] = got
                    self.busy += self.collective.trace("bucket", b, t0) - t0
            except BaseException as e:  # noqa: BLE001 - re-raised by the main thread in `reduce`
                self.error = e
            self.done.release()

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
        self.vec = np.empty(self.lay.n, dtype=self.lay.dtype)
        marks.install("sink", self)

    def ready(self, j: int, g: object) -> None:
        """Gradient j (a model position) is final: copy it into the flat vector and send the buckets it completes."""
        if j not in self.slot:
            return  # `sfb`: its factors travel when upd returns
        j = self.slot[j]
        if j in self.final or self.vec is None or not 0 <= j < len(self.lay.shapes):
            return
        lo, hi = self.lay.offsets[j], self.lay.offsets[j + 1]
        d = np.asarray(as_dense(g))
        if d.shape != self.lay.shapes[j]:
            return  # `upd` returns another matrix here; the checked result is flattened in `reduce`
        self.vec[lo:hi] = d.reshape(-1)
        self.final.add(j)
        if self.order is None:  # the first clock: send what is complete, records the order
            for b in sorted(range(len(self.buckets)), reverse=True):
                if b not in self.queued and self._complete(b):
                    self._send(b)
            return
        while len(self.queued) < len(self.order) and self._complete(self.order[len(self.queued)]):
            self._send(self.order[len(self.queued)])

    def _complete(self, b: int) -> bool:
        return all(m in self.final for m in self.members[b])

    def reduce(self, w: int, c: Contribution | None, stats: EpochStats) -> tuple | None:
        marks.install("sink", None)
        if c is None:  # no batch at this clock: take part in every bucket, in the recorded order
            self._clock_state(self.reducer.present(self.reducer.clock))
            assert self.order is not None, "every worker has a batch at the first clock"
        else:
            for p in range(len(c.grads) - 1, -1, -1):  # what the pass did not mark, and a check of the rest
                j = self.slot.get(p)
                if j is None or j in self.final:
                    continue
                lo, hi = self.lay.offsets[j], self.lay.offsets[j + 1]
                self.ready(p, c.grads[p])
                if j not in self.final:  # not of the model's shape: checked by call_upd already, so unreachable
                    self.vec[lo:hi] = np.asarray(as_dense(c.grads[p])).reshape(-1)  # type: ignore[index]
                    self.final.add(j)
        order = self.order
        if order is None:
            rest = [b for b in range(len(self.buckets)) if b not in self.queued]
            for b in sorted(rest, reverse=True):
                self._send(b)
            self.order = list(self.queued)
        else:
            for b in order[len(self.queued) :]:
                self._send(b)
        factored: tuple = ()
        if self.sf:  # the factors by one all-gather, while the communication thread still reduces buckets
            assert self.full.factors is not None
            counter = Counter()
            t0 = time.perf_counter()
            parts = self.full._allgather(self.full.factors.encode(c), counter)  # noqa: SLF001 - its collective
            t1 = time.perf_counter()
            factored = self.full.factors.rebuild([p for p in parts if self.full.factors.flag(p) == 1])
            self.gathering = t1 - t0  # the all-gather is communication (N), rebuilding the products computation (C)
            stats.compute_seconds += time.perf_counter() - t1
            stats.push_sent += counter.sent
            stats.pulled += counter.received
        for _ in self.queued:
            self.done.acquire()
        self.reducer.clock += 1
        if self.error is not None:
            raise self.error
        stats.push_sent += self.counter.sent
        stats.pulled += self.counter.received
        if self.to_root and self.collective.me != 0:
            return None
        whole = self.lay.unflatten(self.out)
        if not self.sf:
            return whole
        out: list[object] = [None] * len(self.full.model)
        for j, g in zip(self.full.whole, whole):
            out[j] = g
        for j, g in zip(self.sf, factored):
            out[j] = g
        return tuple(out)

    @property
    def flights(self) -> Flights | None:
        """The timeline of this rank's reductions (test hook), None when off."""
        return self.full.flights

    def busy_seconds(self) -> float:
        """The communication thread's time in the last reduction (N of the overlap coefficient)."""
        return self.busy + self.gathering

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
