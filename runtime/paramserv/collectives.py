"""MPI mode: the worker ranks of a call reduce, average and gossip among themselves.

The k worker ranks of a decentralised call form a communicator of their own (ranks 0..k-1 = worker indices,
`MPI_Comm_create_group`, cached). Every algorithm sums in the canonical order (reduction.py), so ALLREDUCE equals
BSP bit for bit whichever algorithm runs, and every replica gets the same bits. |w| below is the size of the
gradient (or model) in bytes; "sent" is what one rank hands to MPI per reduction (the statistics count it; with
TCP the kernel's count is in the statistics too, netbytes.py).

- ALLGATHER: one `Iallgather` of every contribution (fixed-size buffers with a flag, compressed if asked); every
  rank sums all k itself. Sent per rank: (k-1) |w| (mpich's ring all-gather).
- RING: a reduce-scatter along the tree (the vector cut into k chunks, chunk c reduced to worker c, each rank
  sending each chunk it does not own once: `reduction.scatter_schedule`), then a ring all-gather (k-1 steps, each
  passing one chunk on). Sent per rank: 2 (k-1)/k |w|.
- TREE: a binomial-tree reduce to worker 0 (the same tree), then a binomial-tree broadcast. Sent: |w| by every
  other worker in the reduce; in the broadcast |w| per child (worker 0: ceil(log2 k) |w|).
- MASTER: every worker sends its contribution (compressed if asked) to worker 0, which sums and sends the sum to
  each. Sent: |w| per worker, (k-1) |w| by worker 0.

At the call's last clock only worker 0's replica is read (it is the call's result), so ALLREDUCE's last sum goes
to worker 0 alone (`to_root`; `MpiReducer.to_root`): RING sends each reduce-scatter chunk to worker 0 instead of
round the ring, TREE broadcasts nothing, MASTER answers nobody, ALLGATHER gathers point to point; the other ranks
skip that `agg` (costs.reduce_to_root). At k = 3 this saves the ring 4/3 |w| of the 44 |w| that all ranks send
in a call of 11 steps (the FC MLP at 4 ranks: 3 % of its epoch on a link all ranks share).

`Collective.average` (LOCALSGD's model averaging, GOSSIP's final mean) runs the same algorithms on the models
and divides by k. `Collective.exchange` is GOSSIP's step: each rank sends its replica to its neighbours
(topology.py) and receives theirs: |w| per neighbour.

No call blocks: requests are polled (transport.Waiter), and rank 0's PS_ABORT (another worker failed) ends a wait
with `Aborted`; receives still pending are cancelled, and the call's tags (transport.call_tag) keep a left-over
message from matching a later call.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from daphnec.runtime.kernels.lists import DaphneList
from daphnec.runtime.paramserv.layout import FactorLayout, FlatLayout, PayloadLayout
from daphnec.runtime.paramserv.options import Compression
from daphnec.runtime.paramserv.reduction import (
    broadcast_schedule,
    chunk_bounds,
    mean_of_sum,
    scatter_schedule,
    tree_mean,
    tree_sum,
)
from daphnec.runtime.paramserv.stats import EpochStats, Flights
from daphnec.runtime.paramserv.topology import neighbourhood
from daphnec.runtime.paramserv.transport import Waiter, call_tag, mpi
from daphnec.runtime.paramserv.worker import Contribution

_REDUCE, _GATHER, _BCAST, _MASTER, _GOSSIP = range(5)
"""Message kinds (call_tag) of the algorithms."""


class Counter:
    """Bytes one rank sent and received in its collectives (what it handed to MPI)."""

    def __init__(self) -> None:
        self.sent = 0
        self.received = 0


class Collective:
    """One call's reductions among its k worker ranks (this rank is worker `me`)."""

    def __init__(self, comm: Any, k: int, me: int, model: Sequence[object], compression: Compression,
                 algorithm: str, call: int, waiter: Waiter, sf: Sequence[int] = (), batchsize: int = 0):  # fmt: skip
        self.comm = comm
        self.k = k
        self.me = me
        self.algorithm = algorithm
        self.waiter = waiter
        self.call = call
        self.model = model
        self.compression = compression
        self._flat: FlatLayout | None = None
        self._payload: PayloadLayout | None = None
        self.sf = tuple(sf)
        """`sfb=true`: the positions whose sufficient factors travel (worker.sfb_positions)."""
        self.factors = FactorLayout(model, self.sf, batchsize) if self.sf else None
        rest = [j for j in range(len(model)) if j not in self.sf]
        self.whole = rest
        self.others = (Collective(comm, k, me, [model[j] for j in rest], compression, algorithm, call, waiter)
                       if self.sf and rest else None)  # fmt: skip
        """`sfb=true`: the collective of the matrices that travel whole."""
        self.flights: Flights | None = None
        """With the test hook DAPHNEC_PS_TIMELINE: every step of a reduction is written to the timeline (kind
        `rs` a reduce-scatter level from posting its messages to their completion, `add` the additions after it,
        `ag` an all-gather step, `bcast` a broadcast step, `gather` an all-gather or master exchange; the matrix
        column is the level or step), to see where a step's time goes."""

    def trace(self, kind: str, j: int, start: float) -> float:
        """Record an interval from `start` to now on the timeline (if on); returns now."""
        now = time.perf_counter()
        if self.flights is not None:
            self.flights.mark(kind, j, start, now)
        return now

    @property
    def flat(self) -> FlatLayout:
        if self._flat is None:
            self._flat = FlatLayout(self.model, f"allreduce={self.algorithm}")
        return self._flat

    @property
    def payload(self) -> PayloadLayout:
        if self._payload is None:
            self._payload = PayloadLayout(self.model, self.compression)
        return self._payload

    # -- the reductions ----------------------------------------------------------------------------------------------

    def reduce(self, c: Contribution | None, present: Sequence[bool], stats: EpochStats,
               to_root: bool = False) -> tuple | None:  # fmt: skip
        """The canonical sum of the present workers' gradients (this rank's is `c`, None if it has none).
        `to_root`: only worker 0 needs the sum (the call's last clock: only worker 0's replica is the result), so
        the sum goes to worker 0 alone and the other ranks get None (not with `sfb`)."""
        t0 = time.perf_counter()
        counter = Counter()
        computed = stats.compute_seconds
        if self.sf:
            out: tuple | None = self._hybrid_sum(c, present, counter, stats)
        else:
            out = self._sum(c, present, counter, to_root)
        self._count(stats, counter, t0 + stats.compute_seconds - computed)  # the rebuild was no wait
        return out

    def _sum(self, c: Contribution | None, present: Sequence[bool], counter: Counter,
             to_root: bool = False) -> tuple | None:  # fmt: skip
        if self.algorithm == "ALLGATHER":
            return self._allgather_sum(c, present, counter, to_root)
        if self.algorithm == "MASTER":
            return self._master_sum(c, present, counter, to_root)
        flat = self.flat.flatten(c.grads) if c is not None else None
        out = self.sum_flat(flat, present, counter, to_root=to_root)
        return self.flat.unflatten(out) if out is not None else None

    def _hybrid_sum(self, c: Contribution | None, present: Sequence[bool], counter: Counter,
                    stats: EpochStats) -> tuple:  # fmt: skip
        """Poseidon's hybrid communication: the factored positions' factors by one all-gather (every worker
        rebuilds the sum of the products as one product of the stacked factors, FactorLayout.rebuild: counted as
        computation in `stats`), the other matrices by the all-reduce."""
        assert self.factors is not None
        out: list[object] = [None] * len(self.model)
        if self.others is not None:
            mine = Contribution(tuple(c.grads[j] for j in self.whole), None, 0, 0) if c is not None else None
            for j, g in zip(self.whole, self.others._sum(mine, present, counter)):  # type: ignore[arg-type]
                out[j] = g
        parts = self._allgather(self.factors.encode(c), counter)
        t0 = time.perf_counter()
        for j, g in zip(self.sf, self.factors.rebuild([p for p in parts if self.factors.flag(p) == 1])):
            out[j] = g
        stats.compute_seconds += time.perf_counter() - t0  # computation, as with overlap (overlap.py)
        return tuple(out)

    def average(self, model: DaphneList, stats: EpochStats) -> tuple:
        """The canonical mean of every worker's model (all present)."""
        t0 = time.perf_counter()
        counter = Counter()
        everyone = [True] * self.k
        if self.algorithm == "ALLGATHER":
            parts = self._allgather(self.payload_models().encode(Contribution(tuple(model), None, 0, 0)), counter)
            out = tree_mean([self.payload_models().decode(p) for p in parts])
        else:
            flat = self.flat.flatten(model)
            total = self.flat.unflatten(self.sum_flat(flat, everyone, counter))
            out = mean_of_sum(total, self.k, model)
        self._count(stats, counter, t0)
        stats.pushes += 1
        stats.push_raw += sum(int(np.asarray(m).nbytes) for m in model)
        return out

    def payload_models(self) -> PayloadLayout:
        """Models travel uncompressed."""
        if self.compression:
            return PayloadLayout(self.model, Compression())
        return self.payload

    def _count(self, stats: EpochStats, counter: Counter, t0: float) -> None:
        stats.push_sent += counter.sent
        stats.pulled += counter.received
        stats.wait_seconds += time.perf_counter() - t0

    # -- ALLGATHER and MASTER: every contribution travels whole ---------------------------------------------------

    def _allgather(self, send: np.ndarray, counter: Counter) -> list[np.ndarray]:
        MPI = mpi()
        size = send.size
        recv = np.empty(self.k * size, dtype=np.uint8)
        t0 = time.perf_counter()
        req = self.comm.Iallgather([send, MPI.BYTE], [recv, MPI.BYTE])
        self.waiter.requests([req])
        self.trace("gather", 0, t0)
        counter.sent += (self.k - 1) * size
        counter.received += (self.k - 1) * size
        return [recv[i * size : (i + 1) * size] for i in range(self.k)]

    def _gather(self, send: np.ndarray, counter: Counter) -> list[np.ndarray] | None:
        """`_allgather` to worker 0 only: the parts on worker 0, None elsewhere."""
        if self.me != 0:
            self._to_worker_0(send, [], call_tag(self.call, _MASTER), counter, "gather")
            return None
        size = send.size
        recv = np.empty(self.k * size, dtype=np.uint8)
        recv[:size] = send
        parts = [recv[i * size : (i + 1) * size] for i in range(self.k)]
        self._to_worker_0(send, parts[1:], call_tag(self.call, _MASTER), counter, "gather")
        return parts

    def _to_worker_0(self, send: np.ndarray, into: Sequence[np.ndarray], tag: int, counter: Counter,
                     kind: str) -> None:  # fmt: skip
        """Point to point, each rank's part straight to worker 0 (mpich's `Igather` is a binomial tree whose inner
        ranks forward the others' parts, more bytes than the formula): a rank other than worker 0 sends `send`;
        worker 0 receives rank j's part into `into[j - 1]`. On the timeline as `kind`."""
        MPI = mpi()
        t0 = time.perf_counter()
        if self.me != 0:
            reqs = [self.comm.Isend([send, MPI.BYTE], dest=0, tag=tag)]
            counter.sent += send.nbytes
        else:
            reqs = [self.comm.Irecv([buf, MPI.BYTE], source=j, tag=tag) for j, buf in enumerate(into, 1)]
            counter.received += sum(buf.nbytes for buf in into)
        self.waiter.requests(reqs)
        self.trace(kind, 0, t0)

    def _allgather_sum(self, c: Contribution | None, present: Sequence[bool], counter: Counter,
                       to_root: bool = False) -> tuple | None:  # fmt: skip
        lay = self.payload
        parts = self._gather(lay.encode(c), counter) if to_root else self._allgather(lay.encode(c), counter)
        if parts is None:
            return None
        return tree_sum([lay.decode(p) if lay.flag(p) == 1 else None for p in parts])

    def _master_sum(self, c: Contribution | None, present: Sequence[bool], counter: Counter,
                    to_root: bool = False) -> tuple | None:  # fmt: skip
        """Contributions to worker 0, which sums them and sends the sum to every other worker (`to_root`: not)."""
        MPI = mpi()
        lay, flat = self.payload, self.flat
        tag_in, tag_out = call_tag(self.call, _MASTER), call_tag(self.call, _BCAST)
        if self.me != 0:
            reqs = []
            if present[self.me]:
                buf = lay.encode(c)
                reqs.append(self.comm.Isend([buf, MPI.BYTE], dest=0, tag=tag_in))
                counter.sent += buf.size
            if to_root:
                self.waiter.requests(reqs)
                return None
            out = np.empty(flat.n, dtype=flat.dtype)
            reqs.append(self.comm.Irecv([out, MPI.BYTE], source=0, tag=tag_out))
            self.waiter.requests(reqs)
            counter.received += out.nbytes
            return flat.unflatten(out)
        bufs = {j: np.empty(lay.size, dtype=np.uint8) for j in range(1, self.k) if present[j]}
        self.waiter.requests([self.comm.Irecv([b, MPI.BYTE], source=j, tag=tag_in) for j, b in bufs.items()])
        counter.received += sum(b.size for b in bufs.values())
        parts: list[tuple | None] = [c.grads if c is not None else None]
        parts += [lay.decode(bufs[j]) if j in bufs else None for j in range(1, self.k)]
        total = flat.flatten(tree_sum(parts))
        reqs = [self.comm.Isend([total, MPI.BYTE], dest=j, tag=tag_out) for j in range(1, self.k) if not to_root]
        counter.sent += len(reqs) * total.nbytes
        self.waiter.requests(reqs)
        return flat.unflatten(total)

    # -- RING and TREE: partial sums travel along the tree ---------------------------------------------------------

    def sum_flat(self, flat: np.ndarray | None, present: Sequence[bool], counter: Counter,
                 n: int | None = None, to_root: bool = False) -> np.ndarray | None:  # fmt: skip
        """RING or TREE (ALLGATHER/MASTER use `reduce`): the canonical sum of the present workers' vectors (of the
        model's value type; `n` values, default the whole flattened model: a bucket of it with `overlap`).
        `to_root`: on worker 0 only (the others return None): RING gathers the reduce-scatter's chunks to worker
        0 instead of passing them round the ring ((k-1)/k |w| in total instead of (k-1) |w|), TREE broadcasts
        nothing."""
        n = self.flat.n if n is None else n
        if self.algorithm == "TREE":
            return self._tree(flat, present, counter, n, to_root)
        return self._ring(flat, present, counter, n, to_root)

    def _scatter(self, flat: np.ndarray | None, present: Sequence[bool], owners: list[int],
                 bounds: list[tuple[int, int]], out: np.ndarray, counter: Counter) -> None:  # fmt: skip
        """Reduce-scatter along the tree: afterwards out[bounds[c]] is the sum of chunk c on worker owners[c]."""
        MPI = mpi()
        me, item = self.me, out.itemsize
        tag = call_tag(self.call, _REDUCE)
        combined = [False] * len(owners)
        for level, moves in enumerate(scatter_schedule(self.k, present, owners)):
            t0 = time.perf_counter()
            reqs, incoming = [], []
            for m in moves:
                lo, hi = bounds[m.chunk]
                if m.src == me:
                    data = out[lo:hi] if combined[m.chunk] else flat[lo:hi]  # type: ignore[index]
                    reqs.append(self.comm.Isend([data, MPI.BYTE], dest=m.dst, tag=tag))
                    counter.sent += (hi - lo) * item
                elif m.dst == me:
                    buf = np.empty(hi - lo, dtype=out.dtype) if m.level else out[lo:hi]
                    reqs.append(self.comm.Irecv([buf, MPI.BYTE], source=m.src, tag=tag))
                    incoming.append((m, buf))
                    counter.received += (hi - lo) * item
            self.waiter.requests(reqs)
            t1 = self.trace("rs", level, t0) if reqs else t0
            for m, buf in incoming:
                lo, hi = bounds[m.chunk]
                if not m.level:  # a finished chunk handed to its owner: received in place
                    combined[m.chunk] = True
                elif combined[m.chunk]:
                    np.add(out[lo:hi], buf, out=out[lo:hi])
                else:
                    np.add(flat[lo:hi], buf, out=out[lo:hi])  # type: ignore[index]
                    combined[m.chunk] = True
            if incoming:
                self.trace("add", level, t1)
        for c, o in enumerate(owners):
            if o == me and not combined[c]:  # nobody else had this chunk: it is this rank's own
                lo, hi = bounds[c]
                out[lo:hi] = flat[lo:hi]  # type: ignore[index]

    def _ring(self, flat: np.ndarray | None, present: Sequence[bool], counter: Counter, n: int,
              to_root: bool = False) -> np.ndarray | None:  # fmt: skip
        MPI = mpi()
        k, me = self.k, self.me
        out = np.empty(n, dtype=self.flat.dtype)
        bounds = chunk_bounds(n, k)
        self._scatter(flat, present, list(range(k)), bounds, out, counter)
        tag = call_tag(self.call, _GATHER)
        if to_root:  # every chunk straight to worker 0
            lo, hi = bounds[me]
            self._to_worker_0(out[lo:hi], [out[a:b] for a, b in bounds[1:]], tag, counter, "ag")
            return out if me == 0 else None
        right, left = (me + 1) % k, (me - 1) % k
        for step in range(k - 1):
            t0 = time.perf_counter()
            slo, shi = bounds[(me - step) % k]
            rlo, rhi = bounds[(me - step - 1) % k]
            reqs = [self.comm.Isend([out[slo:shi], MPI.BYTE], dest=right, tag=tag),
                    self.comm.Irecv([out[rlo:rhi], MPI.BYTE], source=left, tag=tag)]  # fmt: skip
            counter.sent += (shi - slo) * out.itemsize
            counter.received += (rhi - rlo) * out.itemsize
            self.waiter.requests(reqs)
            self.trace("ag", step, t0)
        return out

    def _tree(self, flat: np.ndarray | None, present: Sequence[bool], counter: Counter, n: int,
              to_root: bool = False) -> np.ndarray | None:  # fmt: skip
        MPI = mpi()
        out = np.empty(n, dtype=self.flat.dtype)
        self._scatter(flat, present, [0], [(0, n)], out, counter)
        if to_root:
            return out if self.me == 0 else None
        tag = call_tag(self.call, _BCAST)
        for step, pairs in enumerate(broadcast_schedule(self.k, 0)):
            t0 = time.perf_counter()
            reqs = []
            for src, dst in pairs:
                if src == self.me:
                    reqs.append(self.comm.Isend([out, MPI.BYTE], dest=dst, tag=tag))
                    counter.sent += out.nbytes
                elif dst == self.me:
                    reqs.append(self.comm.Irecv([out, MPI.BYTE], source=src, tag=tag))
                    counter.received += out.nbytes
            self.waiter.requests(reqs)
            if reqs:
                self.trace("bcast", step, t0)
        return out

    # -- GOSSIP --------------------------------------------------------------------------------------------------------

    def exchange(self, model: DaphneList, clock: int, topology: str, seed: int, stats: EpochStats) -> tuple:
        """GOSSIP: the canonical mean of this rank's replica and its neighbours' at `clock`."""
        MPI = mpi()
        t0 = time.perf_counter()
        lay = self.flat
        group = neighbourhood(self.k, clock, topology, seed)[self.me]
        mine = lay.flatten(model)
        tag = call_tag(self.call, _GOSSIP)
        got: dict[int, np.ndarray] = {self.me: mine}
        reqs = []
        for j in group:
            if j != self.me:
                got[j] = np.empty(lay.n, dtype=lay.dtype)
                reqs.append(self.comm.Isend([mine, MPI.BYTE], dest=j, tag=tag))
                reqs.append(self.comm.Irecv([got[j], MPI.BYTE], source=j, tag=tag))
        self.waiter.requests(reqs)
        peers = len(group) - 1
        stats.pushes += 1
        stats.push_raw += lay.nbytes
        stats.push_sent += peers * lay.nbytes
        stats.pulled += peers * lay.nbytes
        stats.wait_seconds += time.perf_counter() - t0
        mean = tree_mean([(got[j],) for j in group])[0]
        return lay.unflatten(mean)


class MpiReducer:
    """`worker.Reducer` over a `Collective`: knows the clock of each reduction (one per clock for ALLREDUCE), so
    every rank derives the same set of present workers from the plan."""

    def __init__(self, collective: Collective, pushes: list[int], threads: int = 1, clocks: int = 0):
        self.collective = collective
        self.pushes = pushes
        self.threads = threads
        self.clock = 0
        self.clocks = clocks
        """The call's clocks (epochs x the most pushes of a worker); 0: unknown (every reduction to every rank)."""

    def to_root(self, clock: int) -> bool:
        """Whether the reduction at `clock` goes to worker 0 only: the call's last clock, after which only worker
        0's replica is read (it is the call's result), unless the factors of `sfb` travel (an all-gather)."""
        return clock == self.clocks - 1 and not self.collective.sf

    @property
    def flights(self) -> Flights | None:
        """The timeline of this rank's reductions (test hook), None when off."""
        return self.collective.flights

    def present(self, clock: int) -> list[bool]:
        """Per worker rank, whether any of its workers has a batch at `clock`."""
        m = max(self.pushes)
        s, t = clock % m, self.threads
        return [any(p > s for p in self.pushes[r * t : (r + 1) * t]) for r in range(len(self.pushes) // t)]

    def reduce(self, w: int, c: Contribution | None, stats: EpochStats) -> tuple | None:
        """The sum of the clock's gradients; None on a rank other than worker 0's at the call's last clock."""
        present, to_root = self.present(self.clock), self.to_root(self.clock)
        self.clock += 1
        return self.collective.reduce(c, present, stats, to_root)

    def average(self, w: int, model: DaphneList, stats: EpochStats) -> tuple:
        return self.collective.average(model, stats)


class MpiMixer:
    """`worker.Mixer` over a `Collective` (GOSSIP)."""

    def __init__(self, collective: Collective, topology: str, seed: int):
        self.collective = collective
        self.topology = topology
        self.seed = seed

    def mix(self, w: int, clock: int, model: DaphneList, stats: EpochStats) -> tuple:
        return self.collective.exchange(model, clock, self.topology, self.seed, stats)
