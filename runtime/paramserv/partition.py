"""Data partitioning and the batch/clock plan of a `paramserv` run.

Schemes (SystemDS's meaning), for N rows and k workers:

| scheme | worker i gets |
|---|---|
| DISJOINT_CONTIGUOUS | rows [i*N//k, (i+1)*N//k) (views: no copy) |
| DISJOINT_ROUND_ROBIN | rows r with r % k == i, in order (gathered once) |
| DISJOINT_RANDOM | one seeded permutation of the rows, cut into the contiguous blocks above (gathered once) |
| OVERLAP_RESHUFFLE | all rows, in its own seeded order (gathered per batch locally, shipped gathered over MPI) |

Randomness: `numpy.random.Generator(PCG64(seed))` with seed = the script's seed, or `DEFAULT_SEED` when none is
given (seed=-1), so every run is reproducible. OVERLAP_RESHUFFLE's worker i uses `PCG64(SeedSequence([seed, i]))`.
The permutation is drawn once per call (not per epoch), as SystemDS does.

Each epoch a worker walks its partition in batches of `batchsize` rows (the last batch of an epoch may be
smaller). Batches are grouped into *pushes*: BATCH one batch per push, NBATCHES `nbatches` batches per push (the
last group of an epoch may be smaller), EPOCH all batches of the epoch. `pushes(i)` = P_i pushes per epoch.

Clocks: the synchronous strategies number the steps globally: epoch e has `max_i P_i` clocks, and worker i's
s-th push of epoch e happens at clock e*maxP + s. A worker with fewer pushes in an epoch takes no part in that
epoch's last clocks (`participants`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from daphnec.runtime.values import csr_rows, is_csr


def take_rows(x: object, idx: np.ndarray) -> object:
    """Rows `idx` of a dense or CSR matrix, as a new matrix (CSR stays CSR)."""
    if is_csr(x):
        return _csr_take(x, idx)
    return np.ascontiguousarray(x[idx])  # type: ignore[index]


def _csr_take(x: object, idx: np.ndarray) -> object:
    from daphnec.runtime.values import csr_from_parts

    ptr = x.indptr  # type: ignore[attr-defined]
    lens = ptr[idx + 1] - ptr[idx]
    indptr = np.zeros(len(idx) + 1, dtype=ptr.dtype)
    np.cumsum(lens, out=indptr[1:])
    total = int(indptr[-1])
    src = np.repeat(ptr[idx] - indptr[:-1], lens) + np.arange(total, dtype=ptr.dtype)
    return csr_from_parts(x.data[src], x.indices[src], indptr, (len(idx), x.shape[1]))  # type: ignore[attr-defined]


def row_slice(x: object, a: int, b: int) -> object:
    """Rows a..b-1: a view for dense matrices, shared arrays for CSR (runtime.values.csr_rows)."""
    if is_csr(x):
        return csr_rows(x, a, b)
    return x[a:b]  # type: ignore[index]


@dataclass
class Partition:
    """One worker's rows: `X`/`y` hold them in the worker's order, or (`order` set) they are the full matrices and
    `order` lists the worker's rows (gathered per batch)."""

    X: object
    y: object
    order: np.ndarray | None = None

    @property
    def rows(self) -> int:
        return len(self.order) if self.order is not None else self.X.shape[0]  # type: ignore[attr-defined]

    def batch(self, a: int, b: int) -> tuple[object, object]:
        """Rows a..b-1 of the partition (views unless the partition is an index order)."""
        if self.order is None:
            return row_slice(self.X, a, b), row_slice(self.y, a, b)
        idx = self.order[a:b]
        return take_rows(self.X, idx), take_rows(self.y, idx)

    def materialized(self) -> Partition:
        """The same rows held contiguously (what an MPI worker receives)."""
        if self.order is None:
            return self
        return Partition(take_rows(self.X, self.order), take_rows(self.y, self.order))


def contiguous_bounds(n: int, k: int) -> list[tuple[int, int]]:
    return [(i * n // k, (i + 1) * n // k) for i in range(k)]


def partition(X: object, y: object, k: int, scheme: str, seed: int) -> list[Partition]:
    """Split the rows of X and y among k workers by `scheme` (see the module docstring)."""
    n = X.shape[0]  # type: ignore[attr-defined]
    if scheme == "DISJOINT_CONTIGUOUS":
        return [Partition(row_slice(X, a, b), row_slice(y, a, b)) for a, b in contiguous_bounds(n, k)]
    if scheme == "DISJOINT_ROUND_ROBIN":
        return [_gathered(X, y, np.arange(i, n, k)) for i in range(k)]
    if scheme == "DISJOINT_RANDOM":
        perm = np.random.Generator(np.random.PCG64(seed)).permutation(n)
        return [_gathered(X, y, perm[a:b]) for a, b in contiguous_bounds(n, k)]
    if scheme == "OVERLAP_RESHUFFLE":
        return [Partition(X, y, np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, i]))).permutation(n))
                for i in range(k)]  # fmt: skip
    raise ValueError(scheme)


def _gathered(X: object, y: object, idx: np.ndarray) -> Partition:
    return Partition(take_rows(X, idx), take_rows(y, idx))


# ---------------------------------------------------------------------------------------------------------------
# The batch and clock plan
# ---------------------------------------------------------------------------------------------------------------


def batch_count(rows: int, batchsize: int) -> int:
    return -(-rows // batchsize)


def group_size(freq: str, nbatches: int, batches: int) -> int:
    """Batches per push."""
    if freq == "BATCH":
        return 1
    if freq == "NBATCHES":
        return nbatches
    return max(batches, 1)  # EPOCH


@dataclass(frozen=True)
class Plan:
    """The batch plan of one worker: its rows, batches per epoch and pushes per epoch."""

    rows: int
    batchsize: int
    group: int

    @property
    def batches(self) -> int:
        return batch_count(self.rows, self.batchsize)

    @property
    def pushes(self) -> int:
        return batch_count(self.batches, self.group)

    def push_batches(self, s: int) -> list[tuple[int, int]]:
        """Row ranges of the batches of the s-th push of an epoch."""
        bs, out = self.batchsize, []
        for j in range(s * self.group, min((s + 1) * self.group, self.batches)):
            out.append((j * bs, min((j + 1) * bs, self.rows)))
        return out


def plans(rows: list[int], batchsize: int, freq: str, nbatches: int) -> list[Plan]:
    return [Plan(r, batchsize, group_size(freq, nbatches, batch_count(r, batchsize))) for r in rows]


def participants(pushes: list[int], clock: int) -> list[int]:
    """Workers with a push at `clock` (in worker order)."""
    s = clock % max(pushes)
    return [i for i, p in enumerate(pushes) if p > s]


def exchange_at(clock: int, period: int, total: int) -> bool:
    """LOCALSGD's averaging and EASGD's elastic exchange: after every `period` clocks and after the last."""
    return (clock + 1) % period == 0 or clock == total - 1


def exchanges_per_epoch(epochs: int, clocks: int, period: int) -> list[int]:
    """How many exchanges (`exchange_at`) fall into each epoch of `clocks` clocks."""
    total = epochs * clocks
    out = [0] * epochs
    for clock in range(total):
        if exchange_at(clock, period, total):
            out[clock // clocks] += 1
    return out
