"""The one summation order of `paramserv`, and the communication schedules that follow it.

Floating-point addition is commutative but not associative, so a sum of k gradients is reproducible only if its
*association* is fixed. Every strategy that sums gradients (the BSP/SSP/SBP servers and their shards, every
ALLREDUCE algorithm, the hierarchical reduction, LOCALSGD's and GOSSIP's averages) sums in one canonical order:
the **binomial tree over the worker indices** 0..k-1,

    level 1: (g0 + g1), (g2 + g3), (g4 + g5), ...
    level 2: ((g0 + g1) + (g2 + g3)), ...
    ...      block [a, a+2s) = block [a, a+s) + block [a+s, a+2s)

where an absent worker (one without a batch at that clock, a smaller partition) is skipped: a block with one
absent half is the other half, unchanged. So ALLREDUCE is bit-identical to BSP at any rank count, whatever the
algorithm, and so is a sharded server.

Why a tree and not the left fold ((g0 + g1) + g2) + g3: a left fold forces every partial sum through the workers
in index order, so no bandwidth-optimal algorithm can follow it (its last addition always happens where g_{k-1}
is). The tree admits all of them:

- binomial tree all-reduce: reduces exactly along the tree (`tree_schedule`), then broadcasts;
- reduce-scatter + ring all-gather (ALLREDUCE's RING): the gradient is cut into k chunks, chunk c owned by worker
  c; each chunk is reduced along the tree, and at each addition one of the two holders sends its partial sum to
  the other (the one on the owner's side stays). So every worker sends each chunk it does not own exactly once:
  (k-1)/k |w| per worker, as a ring's reduce-scatter (`scatter_schedule`); the all-gather is a ring;
- all-gather, master-worker and the parameter servers hold every contribution and sum them locally (`tree_sum`).

The hierarchical mode (threads inside a rank first, ranks second) is the tree over the ranks of the trees over
each rank's threads: for a power-of-two number of threads per rank these are exactly the aligned blocks of the
flat tree over all k * threads workers, so it equals BSP with that many workers bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

T = TypeVar("T")


def tree_fold(items: Sequence[T | None], add: Callable[[T, T], T]) -> T | None:
    """The canonical binomial-tree combination of `items` (None = absent), with `add(left, right)`."""
    vals = list(items)
    k = len(vals)
    step = 1
    while step < k:
        for lo in range(0, k - step, 2 * step):
            a, b = vals[lo], vals[lo + step]
            vals[lo] = a if b is None else (b if a is None else add(a, b))
            vals[lo + step] = None
        step *= 2
    return vals[0] if vals else None


class _Owned:
    """A partial sum and whether its arrays are ours (then later additions may write into them)."""

    __slots__ = ("vals", "owned")

    def __init__(self, vals: tuple, owned: bool):
        self.vals = vals
        self.owned = owned


def add_arrays(a: object, b: object, owned: bool) -> object:
    """a + b; into `a` when it is ours (`owned`) and the result type allows (the same bits either way)."""
    if owned and isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and np.result_type(a, b) == a.dtype \
            and a.shape == b.shape:  # fmt: skip
        np.add(a, b, out=a)
        return a
    return a + b  # type: ignore[operator]


def tree_sum(contributions: Sequence[Sequence[object] | None]) -> tuple:
    """The element-wise sum of gradient lists in the canonical order (None = an absent worker). At least one
    contribution must be present."""

    def add(x: _Owned, y: _Owned) -> _Owned:
        return _Owned(tuple(add_arrays(a, b, x.owned) for a, b in zip(x.vals, y.vals)), True)

    r = tree_fold([None if c is None else _Owned(tuple(c), False) for c in contributions], add)
    if r is None:
        raise ValueError("tree_sum of no contributions")
    return r.vals


class TreeAccumulator:
    """`tree_sum` of one matrix, fed worker by worker in any arrival order: each block of the canonical tree is
    added as soon as both its halves are complete, so most of the sum is done while later contributions are still
    on the wire, and the result is `tree_sum`'s bit for bit (the same additions of the same operands). `present`:
    which workers contribute (the others are absent, as None in `tree_sum`)."""

    def __init__(self, present: Sequence[bool]):
        self.k = len(present)
        self.blocks: dict[tuple[int, int], _Owned | None] = {}
        """Complete blocks (first worker, width) -> their partial sum (None: every worker in it is absent)."""
        self.result: object | None = None
        self.complete = False
        for i, p in enumerate(present):
            if not p:
                self._climb(i, None)

    def add(self, i: int, value: object) -> None:
        """Worker i's contribution."""
        self._climb(i, _Owned((value,), False))

    def _climb(self, lo: int, val: _Owned | None) -> None:
        width = 1
        self.blocks[(lo, width)] = val
        while width < self.k:
            parent = lo - lo % (2 * width)
            left, right = (parent, width), (parent + width, width)
            if right[0] >= self.k:  # no right half: the block passes up unchanged (tree_fold's vals[lo])
                merged = self.blocks.pop(left)
            elif left in self.blocks and right in self.blocks:
                a, b = self.blocks.pop(left), self.blocks.pop(right)
                if a is None or b is None:
                    merged = a if b is None else b
                else:
                    merged = _Owned((add_arrays(a.vals[0], b.vals[0], a.owned),), True)
            else:
                return
            lo, width = parent, 2 * width
            self.blocks[(lo, width)] = merged
        top = self.blocks.pop((0, width))
        if top is None:
            raise ValueError("TreeAccumulator of no contributions")
        self.result, self.complete = top.vals[0], True


def tree_sum_array(parts: Sequence[np.ndarray | None]) -> np.ndarray:
    """`tree_sum` of single arrays (a flat gradient buffer per worker)."""
    return tree_sum([None if p is None else (p,) for p in parts])[0]  # type: ignore[return-value]


def tree_mean(models: Sequence[Sequence[object]]) -> tuple:
    """Element-wise mean of model replicas: their canonical sum divided by their number, in the models' types."""
    return mean_of_sum(tree_sum(models), len(models), models[0])


def mean_of_sum(total: Sequence[object], n: int, like: Sequence[object]) -> tuple:
    """A canonical sum of n models divided by n, cast back to the models' value types (`like`): the mean, whether
    the sum was computed here or by an all-reduce."""
    out = []
    for x, ref in zip(total, like):
        m = x / n  # type: ignore[operator]
        dt = getattr(ref, "dtype", None)
        if dt is not None and getattr(m, "dtype", dt) != dt:
            m = m.astype(dt)
        out.append(m)
    return tuple(out)


# ---------------------------------------------------------------------------------------------------------------
# Communication schedules that follow the tree
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Move:
    """At tree level `level` (1, 2, ...), `src` sends its partial sum of chunk `chunk` to `dst`, which adds it to
    its own. Level 0 moves (after the tree) hand a finished chunk to its owner when the owner had no contribution."""

    level: int
    chunk: int
    src: int
    dst: int


def scatter_schedule(k: int, present: Sequence[bool], owners: Sequence[int]) -> list[list[Move]]:
    """The moves of a reduce-scatter along the canonical tree: chunk c ends, fully summed, at `owners[c]`. Returns
    the moves level by level (the last list: hand-overs to owners without a contribution, usually empty).

    At each addition of two non-empty blocks, the holder on the owner's side stays; when the owner is in neither
    block, the holder that has received less so far stays (ties: the left one). Every rank computes the same
    schedule from the same arguments."""
    levels: list[list[Move]] = []
    received = [0] * k
    holders = [[i if present[i] else None for i in range(k)] for _ in owners]
    step, level = 1, 1
    while step < k:
        moves: list[Move] = []
        for c, o in enumerate(owners):
            h = holders[c]
            for lo in range(0, k - step, 2 * step):
                left, right = h[lo], h[lo + step]
                h[lo + step] = None
                if left is None or right is None:
                    h[lo] = left if right is None else right
                    continue
                if lo + step <= o < lo + 2 * step:
                    stay, send = right, left
                elif lo <= o < lo + step or received[left] <= received[right]:
                    stay, send = left, right
                else:
                    stay, send = right, left
                moves.append(Move(level, c, send, stay))
                received[stay] += 1
                h[lo] = stay
        levels.append(moves)
        step, level = step * 2, level + 1
    fix = [Move(0, c, h[0], o) for c, (h, o) in enumerate(zip(holders, owners)) if h[0] is not None and h[0] != o]
    levels.append(fix)
    return levels


def broadcast_schedule(k: int, root: int) -> list[list[tuple[int, int]]]:
    """A binomial-tree broadcast from `root` among ranks 0..k-1: (src, dst) pairs, step by step (each rank that
    has the value sends it on, so after ceil(log2 k) steps everyone has it)."""
    steps: list[list[tuple[int, int]]] = []
    have = 1
    while have < k:
        steps.append([((root + i) % k, (root + i + have) % k) for i in range(have) if i + have < k])
        have *= 2
    return steps


def chunk_bounds(n: int, k: int) -> list[tuple[int, int]]:
    """k contiguous chunks of n elements (the first n % k one element longer): chunk c = [lo, hi)."""
    q, r = divmod(n, k)
    out, lo = [], 0
    for c in range(k):
        hi = lo + q + (1 if c < r else 0)
        out.append((lo, hi))
        lo = hi
    return out
