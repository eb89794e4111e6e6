"""Data generation straight into CSR, for results the compiler gave the `rep[sparse]` representation (DAPHNE's
`RandMatrix<CSRMatrix<VT>>` and `Fill`): the matrix is never materialised densely.

`rand` reproduces DAPHNE's CSR RandMatrix, which is a different algorithm from the dense one (so the same seed gives
other values than `rand` with a dense result, exactly as in DAPHNE). One `std::default_random_engine(seed)` -- in
libstdc++ that is `minstd_rand0`, x' = 16807 x mod (2^31 - 1) -- drives, in this order:

1. the `nnz = round(rows * cols * sparsity)` values, uniform in [min, max) (floats) or [min, max] (integers); unlike
   the dense kernel a drawn zero is kept (stored explicitly);
2. the number of non-zeros per row: for sparsity <= 0.5 start from empty rows and add one to a uniformly drawn row
   (skipping full rows) until nnz are assigned, else start from full rows and remove;
3. per row, a `std::set` of distinct uniformly drawn columns: the row's columns (sparsity <= 0.5), or the columns
   left out (sparsity > 0.5).

libstdc++'s distributions on this 31-bit engine: `uniform_real_distribution<double>` combines two draws
((g1 - 1) + (g2 - 1) * r) / r^2 with r = 2^31 - 2 (one draw for float), `uniform_int_distribution` scales down with
rejection (`scaling = (2^31 - 3) / (range + 1)`, draws past `scaling * (range + 1)` are redrawn) or up for ranges
wider than the engine's. Everything is vectorised; the engine is positional (output i is x0 * 16807^i mod m), so a
batch that drew more than needed is rewound exactly.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable

import numpy as np

from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.kernels.datagen import check_rand_args, diag_column
from daphnec.runtime.memory import check_alloc
from daphnec.runtime.values import FLOAT_VTS, cast_scalar, csr_from_parts, dtype_of

_M = 2147483647  # 2^31 - 1
_A = 16807
_ENGINE_RANGE = _M - 2  # max() - min() of minstd_rand0: outputs are 1 .. 2^31 - 2
_R = _M - 1  # the engine's range + 1, `__r` in generate_canonical
_U64 = (1 << 64) - 1
_BLOCK = 1 << 16


@functools.cache
def _powers() -> np.ndarray:
    """16807^1 .. 16807^_BLOCK modulo m (doubling: the second half is the first times 16807^half)."""
    p = np.array([_A], dtype=np.int64)
    while p.size < _BLOCK:
        p = np.concatenate([p, p * p[-1] % _M])
    return p


class MinstdRand0:
    """`std::minstd_rand0` with a position: `take(n)` returns the next n outputs, `pos` may be set back."""

    def __init__(self, seed: int) -> None:
        x = (seed & _U64) % _M  # the constructor takes an unsigned long, then x0 = seed mod m (0 becomes 1)
        self.x0 = x or 1
        self.pos = 0

    def take(self, n: int) -> np.ndarray:
        """The next n raw outputs (int64)."""
        out = np.empty(n, dtype=np.int64)
        x = self.x0 * pow(_A, self.pos, _M) % _M
        powers = _powers()
        for start in range(0, n, _BLOCK):
            k = min(_BLOCK, n - start)
            out[start : start + k] = x * powers[:k] % _M
            x = int(out[start + k - 1])
        self.pos += n
        return out

    def next(self) -> int:
        return int(self.take(1)[0])


class UniformInt:
    """libstdc++'s `uniform_int_distribution` over [0, urange] on a MinstdRand0, drawn in vectorised batches."""

    def __init__(self, gen: MinstdRand0, urange: int) -> None:
        self.gen = gen
        self.urange = urange
        if urange < _ENGINE_RANGE:
            self.scaling = _ENGINE_RANGE // (urange + 1)
            self.past = (urange + 1) * self.scaling

    def take(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """n values (as uint64 offsets from the distribution's minimum) and, for each, the engine position just
        after it (to rewind the engine to any prefix of the batch)."""
        if n == 0:
            return np.empty(0, dtype=np.uint64), np.empty(0, dtype=np.int64)
        if self.urange > _ENGINE_RANGE:
            vals, ends = [], []
            for _ in range(n):
                vals.append(_uniform_one(self.gen, self.urange))
                ends.append(self.gen.pos)
            return np.array(vals, dtype=np.uint64), np.array(ends, dtype=np.int64)
        vals_parts, end_parts, have = [], [], 0
        while have < n:
            need = n - have
            start = self.gen.pos
            raw = self.gen.take(need + need // 16 + 16) - 1
            if self.urange == _ENGINE_RANGE:
                idx = np.arange(raw.size)
                vals = raw
            else:
                idx = np.flatnonzero(raw < self.past)
                vals = raw[idx] // self.scaling
            vals, idx = vals[:need], idx[:need]
            vals_parts.append(vals.astype(np.uint64))
            end_parts.append(start + idx + 1)
            have += vals.size
            if have == n:
                self.gen.pos = int(end_parts[-1][-1])
        return np.concatenate(vals_parts), np.concatenate(end_parts)


def _uniform_one(gen: MinstdRand0, urange: int) -> int:
    """One draw of `uniform_int_distribution` over [0, urange] (any range, upscaling included)."""
    if urange < _ENGINE_RANGE:
        scaling = _ENGINE_RANGE // (urange + 1)
        past = (urange + 1) * scaling
        while True:
            ret = gen.next() - 1
            if ret < past:
                return ret // scaling
    if urange == _ENGINE_RANGE:
        return gen.next() - 1
    while True:  # upscaling: a high part from a recursive draw, the low part from one more engine output
        tmp = (_R * _uniform_one(gen, urange // _R)) & _U64
        ret = (tmp + gen.next() - 1) & _U64
        if not (ret > urange or ret < tmp):
            return ret


# ---------------------------------------------------------------------------------------------------------------------
# values
# ---------------------------------------------------------------------------------------------------------------------


def _real_values(gen: MinstdRand0, n: int, lo: float, hi: float, vt: str) -> np.ndarray:
    """n draws of `uniform_real_distribution<vt>(lo, hi)` through libstdc++'s `generate_canonical`."""
    if vt == "f64":
        raw = (gen.take(2 * n) - 1).astype(np.float64).reshape(n, 2)
        u = (raw[:, 0] + raw[:, 1] * float(_R)) / float(_R * _R)
        u[u >= 1.0] = np.nextafter(1.0, 0.0)
        return u * (np.float64(hi) - np.float64(lo)) + np.float64(lo)
    f = np.float32
    u = (gen.take(n) - 1).astype(f) / f(_R)
    u[u >= f(1.0)] = np.nextafter(f(1.0), f(0.0))
    return u * (f(hi) - f(lo)) + f(lo)


def _int_values(gen: MinstdRand0, n: int, lo: int, hi: int, vt: str) -> np.ndarray:
    """n draws of `uniform_int_distribution<vt>(lo, hi)` (offsets computed in unsigned 64-bit, like libstdc++)."""
    urange = (hi - lo) & _U64
    offsets, _ = UniformInt(gen, urange).take(n)
    vals = offsets + np.uint64(lo & _U64)  # wraps modulo 2^64, then the cast to vt keeps the low bits
    return vals.astype(dtype_of(vt)) if dtype_of(vt).kind == "u" else vals.view(np.int64).astype(dtype_of(vt))


# ---------------------------------------------------------------------------------------------------------------------
# non-zeros per row
# ---------------------------------------------------------------------------------------------------------------------


def _occurrence_rank(r: np.ndarray) -> np.ndarray:
    """For every element, how many earlier elements have the same value."""
    n = r.size
    order = np.argsort(r, kind="stable")
    sr = r[order]
    first = np.ones(n, dtype=bool)
    first[1:] = sr[1:] != sr[:-1]
    group_start = np.maximum.accumulate(np.where(first, np.arange(n), 0))
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n) - group_start
    return rank


def _row_draws_kept(r: np.ndarray, counts: np.ndarray, cols: int, grow: bool) -> np.ndarray:
    """Which draws of a batch change their row: the k-th draw of row r in the batch does iff the row is not yet
    full (empty) after the k earlier ones. Occurrence ranks are computed only for rows that could fill up."""
    occurrences = np.bincount(r, minlength=counts.size)
    risky = (counts + occurrences > cols) if grow else (occurrences > counts)
    ok = np.ones(r.size, dtype=bool)
    at = np.flatnonzero(risky[r])
    if at.size:
        rank = _occurrence_rank(r[at])
        ok[at] = counts[r[at]] + rank < cols if grow else rank < counts[r[at]]
    return ok


def _nnz_per_row(gen: MinstdRand0, rows: int, cols: int, nnz: int, grow: bool) -> np.ndarray:
    """Random rows gain (grow) or lose one non-zero until nnz are assigned; a full (empty) row is skipped."""
    counts = np.zeros(rows, dtype=np.int64) if grow else np.full(rows, cols, dtype=np.int64)
    todo = nnz if grow else rows * cols - nnz
    dist = UniformInt(gen, rows - 1)
    while todo:
        start = gen.pos
        r, ends = dist.take(todo + todo // 8 + 16)
        r = r.astype(np.int64)
        ok = _row_draws_kept(r, counts, cols, grow)
        done = np.cumsum(ok)
        if done[-1] >= todo:
            last = int(np.searchsorted(done, todo))
            r, ok, ends = r[: last + 1], ok[: last + 1], ends[: last + 1]
        gen.pos = int(ends[-1]) if r.size else start
        changed = np.bincount(r[ok], minlength=rows)
        counts = counts + changed if grow else counts - changed
        todo -= int(ok.sum())
    return counts


# ---------------------------------------------------------------------------------------------------------------------
# distinct columns per row
# ---------------------------------------------------------------------------------------------------------------------


class _Stream:
    """Buffered draws of one distribution: every row takes its columns from the same stream of draws, so the
    stream is drawn once and only cut into rows; the engine is set to just after the last value used."""

    def __init__(self, dist: UniformInt) -> None:
        self.dist = dist
        self.vals = np.empty(0, dtype=np.int64)
        self.ends = np.empty(0, dtype=np.int64)
        self.start = dist.gen.pos

    def ensure(self, n: int) -> None:
        """At least n values buffered."""
        if n > self.vals.size:
            vals, ends = self.dist.take(max(n - self.vals.size, self.vals.size // 2, 1024))
            self.vals = np.concatenate([self.vals, vals.astype(np.int64)])
            self.ends = np.concatenate([self.ends, ends])

    def finish(self, used: int) -> None:
        self.dist.gen.pos = int(self.ends[used - 1]) if used else self.start


def _distinct_one(stream: _Stream, p: int, need: int) -> tuple[np.ndarray, int]:
    """`while (set.size() < need) set.emplace(draw)` from stream position p: the sorted set and the next position."""
    seen: set[int] = set()
    while len(seen) < need:
        stream.ensure(p + need - len(seen))
        for v in stream.vals[p : p + need - len(seen)].tolist():
            seen.add(v)
            p += 1
            if len(seen) == need:
                break
    return np.array(sorted(seen), dtype=np.int64), p


def _distinct_per_row(gen: MinstdRand0, cols: int, need: np.ndarray) -> np.ndarray:
    """Row by row, `need[r]` distinct columns drawn uniformly (the `std::set` loop), sorted within each row.

    A window of rows is cut from the stream assuming no repeated draw and checked at once; rows up to the first
    one with a repeat are accepted, that row is collected on its own, and the window adapts to how often repeats
    occur.
    """
    stream = _Stream(UniformInt(gen, cols - 1))
    out = np.empty(int(need.sum()), dtype=np.int64)
    bounds = np.concatenate(([0], np.cumsum(need)))
    r, p, rows, window = 0, 0, need.size, 64
    while r < rows:
        r2 = min(rows, r + window)
        total = int(bounds[r2] - bounds[r])
        stream.ensure(p + total)
        seg = np.repeat(np.arange(r2 - r, dtype=np.int64), need[r:r2])
        keys = np.sort(seg * cols + stream.vals[p : p + total])
        repeats = np.flatnonzero(keys[1:] == keys[:-1])
        bad = r2 if repeats.size == 0 else r + int(keys[repeats[0]] // cols)
        good = int(bounds[bad] - bounds[r])
        out[bounds[r] : bounds[bad]] = keys[:good] % cols
        p += good
        if bad == r2:
            window = min(2 * window, max(1, (1 << 16) // max(1, total // window)))
            r = r2
            continue
        out[bounds[bad] : bounds[bad + 1]], p = _distinct_one(stream, p, int(need[bad]))
        window = max(1, 2 * (bad - r))
        r = bad + 1
    stream.finish(p)
    return out


def _complement_per_row(drawn: np.ndarray, need: np.ndarray, cols: int) -> np.ndarray:
    """Per row, the columns not drawn (sorted), for sparsity > 0.5."""
    rows = need.size
    mask = np.ones((rows, cols), dtype=bool)
    mask[np.repeat(np.arange(rows), need), drawn] = False
    return np.nonzero(mask)[1].astype(np.int64)


# ---------------------------------------------------------------------------------------------------------------------
# kernels
# ---------------------------------------------------------------------------------------------------------------------


def _c_round(x: float) -> int:
    """C `round` for a non-negative double: half away from zero."""
    f = math.floor(x)
    return int(f + 1 if x - f >= 0.5 else f)


def rand(rows: int, cols: int, min_, max_, sparsity: float, seed: int, vt: str):
    """`rand(rows, cols, min, max, sparsity, seed)` with a CSR result (see the module docstring)."""
    rows, cols, seed, sparsity = int(rows), int(cols), int(seed), float(sparsity)
    lo, hi = cast_scalar(min_, vt), cast_scalar(max_, vt)
    check_rand_args(rows, cols, lo, hi, sparsity, vt)
    if seed == -1:
        seed = time.time_ns()
    gen = MinstdRand0(seed)
    nnz = _c_round(rows * cols * sparsity)
    check_alloc("rand", rows, cols, vt, "CSR matrix", cells=nnz, index_bytes=8)
    draw: Callable[..., np.ndarray] = _real_values if vt in FLOAT_VTS else _int_values
    values = draw(gen, nnz, lo, hi, vt)
    grow = sparsity <= 0.5
    counts = _nnz_per_row(gen, rows, cols, nnz, grow)
    if grow:
        indices = _distinct_per_row(gen, cols, counts)
    else:
        left_out = cols - counts
        indices = _complement_per_row(_distinct_per_row(gen, cols, left_out), left_out, cols)
    indptr = np.zeros(rows + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    return csr_from_parts(values.astype(dtype_of(vt)), indices, indptr, (rows, cols))


def fill(value, rows: int, cols: int, vt: str):
    """`fill(value, rows, cols)` with a CSR result: no stored values for 0, every cell stored otherwise."""
    rows, cols = int(rows), int(cols)
    if rows < 0 or cols < 0:
        raise DaphneRuntimeError(f"fill: the number of rows and columns must not be negative, got {rows}x{cols}")
    v = cast_scalar(value, vt)
    n = rows * cols if v != 0 else 0
    check_alloc("fill", rows, cols, vt, "CSR matrix", cells=n, index_bytes=8)
    per_row = cols if n else 0
    indptr = np.arange(rows + 1, dtype=np.int64) * per_row
    indices = np.tile(np.arange(cols, dtype=np.int64), rows if n else 0)
    return csr_from_parts(np.full(n, v, dtype=dtype_of(vt)), indices, indptr, (rows, cols))


def diag_matrix(arg):
    """`diagMatrix(arg)` with a CSR result: the n x 1 column's non-zeros on the diagonal, one per row at most (the
    n x n matrix is never dense)."""
    v = diag_column(arg)[:, 0]
    n = v.shape[0]
    rows = np.flatnonzero(v)
    indptr = np.zeros(n + 1, dtype=np.int64)
    indptr[rows + 1] = 1
    return csr_from_parts(np.ascontiguousarray(v[rows]), rows.astype(np.int64), np.cumsum(indptr), (n, n))
