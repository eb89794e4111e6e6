"""Aggregations `sum aggMin aggMax mean var stddev`: full (`sum(X)` -> scalar), row-wise (`sum(X, 0)` -> n x 1) and
column-wise (`sum(X, 1)` -> 1 x m).

Result value types (`result_vt`: the kind's record in dialects/op_kinds.py, DaphneOps.td): sum/aggMin/aggMax keep
the argument's type (sum of si64 is si64 and wraps); mean/var/stddev give the argument's type if it is f32/f64, else
f64. The argument is cast to the result type first (CastArgsToResType).

Reductions reproduce DAPHNE's `AggAll.h`/`AggRow.h`/`AggCol.h` loops exactly, so results are deterministic and bit-
identical to the C++ ones: float sums are sequential left folds (numpy's pairwise `sum` is NOT used; native loops
from `native_folds` once built, else numpy's in-order axis-0 reduce for row/column sums, `cumsum` otherwise), full
aggregation starts from the neutral element (0,
+inf, -inf), row/column aggregation starts from the first element. min/max are `std::min`/`std::max` folds: NaNs
after the first element are ignored, a NaN first element of a row/column wins, and of equal values (+0/-0) the first
is kept. var is the population variance (divides by n) and stddev its square root. Empty input: sum 0, min +inf
(integer max), max -inf (integer min), mean/var/stddev -nan (0/0 on x86).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from daphnec.dialects.op_kinds import AGGREGATIONS, AggKind
from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.fperr import quiet
from daphnec.runtime.kernels import native_folds
from daphnec.runtime.values import FLOAT_VTS, NEG_NAN, as_dense, cast_matrix, dtype_of, has_implicit_zeros, is_csr

#: The aggregations by DaphneDSL builtin (`sum`, `aggMin`, ...; dialects/op_kinds.py), the names the kernels use.
_BY_BUILTIN: dict[str, AggKind] = {r.builtin: r for r in AGGREGATIONS.values()}
AGG_OPS: tuple[str, ...] = tuple(_BY_BUILTIN)
#: mean, var and stddev: computed in floating point.
_STAT_OPS = frozenset(b for b, r in _BY_BUILTIN.items() if r.floating)
#: IR-style names (`minAll`, `maxRow`, ...) are accepted as aliases of the DSL names.
_ALIASES = {r.kind: r.builtin for r in AGGREGATIONS.values() if r.kind != r.builtin}


def result_vt(op: str, vt_in: str) -> str:
    """Result value type of aggregation `op` over a matrix of type `vt_in` (`AggKind.vt_rule`)."""
    op = _ALIASES.get(op, op)
    r = _BY_BUILTIN.get(op)
    if r is None:
        raise DaphneRuntimeError(f"unknown aggregation '{op}'")
    if vt_in == "str" and not r.strings:
        raise DaphneRuntimeError(f"{op}: aggregation is not supported on value type str")
    return r.result_vt(vt_in)


def _to_py(x, vt: str):
    """numpy scalar -> the Python scalar representing `vt`."""
    v = x.item() if isinstance(x, np.generic) else x
    return float(v) if vt in FLOAT_VTS else v


# ---------------------------------------------------------------------------------------------------------------------
# Building blocks (axis=None: all elements row-major; axis=1: per row; axis=0: per column)
# ---------------------------------------------------------------------------------------------------------------------


def _seq_sum(A: np.ndarray, axis: int | None) -> np.ndarray:
    """Sequential (left-fold) sum; integer sums wrap; bool sums are logical or."""
    if A.dtype.kind in "iub":
        if axis is None:
            return A.sum(dtype=A.dtype)
        return A.sum(axis=axis, dtype=A.dtype)
    if A.dtype == object:
        raise DaphneRuntimeError("sum: aggregation is not supported on value type str")
    if axis is None:
        if A.size == 0:
            return A.dtype.type(0)
        return _fold(A, None)
    if A.shape[axis] == 0:
        return np.zeros(A.shape[1 - axis], dtype=A.dtype)
    return _fold(A, axis)


def _fold(A: np.ndarray, axis: int | None):
    """The sequential float fold of a non-empty matrix: all cells from 0 (axis None, never -0), or per row (axis 1)
    or column (axis 0) from its first cell. Native loops for large inputs, numpy's sequential cumsum otherwise."""
    ordered = A.ndim == 2 and A.shape[0] > 1 and axis is not None and _ordered_sum_pays(A.shape[1], axis)
    if native_folds.applies(A, first_build=not (ordered and axis == 0)):  # column folds: numpy's are as fast
        if axis is None:
            return native_folds.fold_all(A)
        return native_folds.fold_rows(A) if axis == 1 else native_folds.fold_cols(A)
    if axis is None:
        flat = A.ravel()
        s = _integer_sum(flat)
        if s is None:
            s = _fold_nonzeros(flat)
        if s is None:
            s = np.cumsum(flat, dtype=A.dtype)[-1]
        return s + A.dtype.type(0) if s == 0 else s  # starting from the neutral 0 makes -0 impossible
    if ordered:
        return _ordered_sum(A, axis)  # type: ignore[arg-type]
    return np.take(np.cumsum(A, axis=axis, dtype=A.dtype), -1, axis=axis)


#: Full sums of at least this many cells look for integer cells (`_integer_sum`) before a `cumsum`: below it the
#: check's fixed cost (~4 us) exceeds what it saves.
_MIN_INTEGER_CHECK = 2048
#: Per float type: the magnitude up to which every integer, and every sum of two of them, is exact.
_EXACT_INTEGERS = {np.dtype(np.float64): float(1 << 53), np.dtype(np.float32): float(1 << 24)}


def _integer_sum(flat: np.ndarray):
    """The sum of a float vector in any order, when that is provably the sequential fold's sum: every cell is an
    integer and cells * max |cell| <= 2^53 (2^24 for f32), so every partial sum in any order is exact (a 0/1 label
    or a bootstrap count read from a file; the compiler proves it for masks, `agg.exact_sum_kernel`). Checking
    costs three fast passes (~9 us on 10k cells; the `cumsum` ~30 us); three probe cells fail most float data
    first. NaN fails the integer test; an infinity the bound. None: not shown, fold in order."""
    n = flat.size
    exact = _EXACT_INTEGERS.get(flat.dtype)
    if exact is None or n < _MIN_INTEGER_CHECK:
        return None
    if not (flat.item(0).is_integer() and flat.item(n // 2).is_integer() and flat.item(-1).is_integer()):
        return None
    if not (np.trunc(flat) == flat).all():
        return None
    hi = max(float(np.maximum.reduce(flat)), -float(np.minimum.reduce(flat)))
    if not hi * n <= exact:
        return None
    return np.add.reduce(flat)


#: Full sums of at least this many cells probe for mostly-zero vectors (`_fold_nonzeros`); the probe reads
#: `_ZERO_PROBES` cells spread over the vector (~1 us).
_MIN_ZERO_CHECK = 2048
_ZERO_PROBES = 32


def _fold_nonzeros(flat: np.ndarray):
    """The sequential fold of a float vector that is mostly zeros (a masked vector, `sum((nid == node) * w * y)`
    of a tree node's rows), over its non-zero cells alone: the fold starts from +0 and never holds -0 (x + -x is
    +0), so adding a +-0 leaves it unchanged, and the remaining cells are added in the same order: the same bits
    (NaN is non-zero and kept). A 25k-cell vector with 1/8 non-zeros: 25 us instead of the cumsum's 100 us. None:
    the probe cells are mostly non-zero (compressing would cost more than it saves), fold all cells."""
    n = flat.size
    if n < _MIN_ZERO_CHECK:
        return None
    probes = flat[:: max(1, n // _ZERO_PROBES)]
    if 2 * np.count_nonzero(probes) > probes.size:
        return None
    nz = flat[flat != 0]
    return np.cumsum(nz, dtype=flat.dtype)[-1] if nz.size else flat.dtype.type(0)


#: Narrower matrices keep `cumsum` for column folds: numpy's axis-0 reduce pays a per-row step (2-3 columns: 1.4x).
_MIN_COL_FOLD_WIDTH = 4
#: Rows per block of `_ordered_sum`'s row folds: a block's transpose (cells x 8 bytes) stays in the L2 cache.
_BLOCK_CELLS = 1 << 15
#: ... but at least this many (wide rows: numpy's axis-0 reduce of a block walks an inner loop this long; 128 rows of
#: 2,500 columns: 1.8x faster than 16), unless that block would exceed `_MAX_BLOCK_CELLS` (a bounded temporary).
_MIN_BLOCK_ROWS = 128
_MAX_BLOCK_CELLS = 1 << 21


def _ordered_sum_pays(cols: int, axis: int) -> bool:
    """Whether `_ordered_sum` beats `cumsum` for a matrix of `cols` columns: not for column folds of 2-3 columns
    (a per-row step in numpy's reduce), nor for row folds of rows so wide that a bounded block holds < 16 rows."""
    if axis == 0:
        return cols >= _MIN_COL_FOLD_WIDTH
    return 2 <= cols <= _MAX_BLOCK_CELLS // 16


def _ordered_sum(A: np.ndarray, axis: int) -> np.ndarray:
    """Per column (axis 0) or row (axis 1) of a 2-D float matrix with at least 2 rows and 2 columns: the left fold
    `((a0 + a1) + a2) ...` from the first cell, bit-identical to DAPHNE's AggCol/AggRow loops, at numpy speed.

    numpy reduces pairwise only along the axis it walks innermost (the contiguous one); reducing a C-contiguous
    matrix over axis 0 walks the rows in order and adds whole rows, i.e. the left fold of every
    column, vectorised across columns. Row folds therefore transpose blocks of rows (in cache) and fold those
    over axis 0. numpy may start a reduction from its identity +0 (+0 + -0 is +0): starting from -0 instead
    changes no value (-0 + x is x, bit for bit). This replaces `cumsum` (which writes a matrix of prefix sums:
    3-10x slower) when the native loops are not built."""
    out = _ordered_sum_unchecked(A, axis)
    nan = np.flatnonzero(out != out)
    if nan.size:  # numpy may add two NaNs in the other operand order (the other payload): redo those in order
        lines = A[:, nan].T if axis == 0 else A[nan]
        out[nan] = np.cumsum(lines, axis=1, dtype=A.dtype)[:, -1]
    return out


def _ordered_sum_unchecked(A: np.ndarray, axis: int) -> np.ndarray:
    """`_ordered_sum`'s reductions; a NaN result may carry the payload of another NaN than the C++ fold's."""
    if axis == 0:  # a view of contiguous rows (a column slice) is read in place: numpy walks its rows in order
        return np.add.reduce(native_folds.rows_of(A)[0], axis=0, initial=A.dtype.type(-0.0))
    n, m = A.shape
    out = np.empty(n, dtype=A.dtype)
    step = max(_BLOCK_CELLS // m, min(_MIN_BLOCK_ROWS, _MAX_BLOCK_CELLS // m), 2)
    for r0 in range(0, n, step):
        block = A[r0 : r0 + step]
        if block.shape[0] == 1:  # a 1-row transpose is contiguous both ways: numpy would reduce it pairwise
            out[r0] = np.cumsum(block[0], dtype=A.dtype)[-1]
        else:
            out[r0 : r0 + step] = np.add.reduce(np.ascontiguousarray(block.T), axis=0, initial=A.dtype.type(-0.0))
    return out


#: Rows at most this wide take `_narrow_rows_reduce`: numpy's own row reductions run one short inner loop per row.
_NARROW_ROW = 32


def _narrow_rows_reduce(ufunc: np.ufunc, A: np.ndarray) -> np.ndarray:
    """`ufunc.reduce(A, axis=1)` for `fmin`/`fmax` over blocks of transposed rows: one vectorised pass per column
    instead of a short inner loop per row (~6x numpy's `min(axis=1)` on 8 columns), with a NaN first cell winning
    as in `std::min`'s fold (done per block, in cache: a strided gather of the first column costs as much as the
    reduction). The caller fixes up the signs of zero results."""
    n, m = A.shape
    out = np.empty(n, dtype=A.dtype)
    step = max(_BLOCK_CELLS // m, 1)
    for r0 in range(0, n, step):
        block = np.ascontiguousarray(A[r0 : r0 + step].T)
        res = out[r0 : r0 + step]
        ufunc.reduce(block, axis=0, out=res)
        np.copyto(res, block[0], where=np.isnan(block[0]))
    return out


def _neutral(op: str, dt: np.dtype):
    """DAPHNE's AggOpCodeUtils::getNeutral for min/max."""
    if dt.kind == "f":
        return dt.type(np.inf if op == "aggMin" else -np.inf)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return dt.type(info.max if op == "aggMin" else info.min)
    if dt.kind == "b":
        return np.bool_(op == "aggMin")
    raise DaphneRuntimeError(f"{op}: no neutral element for dtype {dt}")


def _minmax(op: str, A: np.ndarray, axis: int | None):
    """`std::min`/`std::max` fold (see module docstring for NaN/-0 behaviour). numpy's NaN-skipping `fmin`/`fmax`
    reductions give the value in one vectorised pass (a full one tries NaN-propagating `minimum`/`maximum` first,
    which equal them on data without NaN); only a zero result looks for the sign of the first zero."""
    is_min = op == "aggMin"
    if A.dtype == object:
        return _minmax_object(is_min, A, axis)
    if axis is None:
        flat = A.ravel()
        if flat.size == 0:
            return _neutral(op, A.dtype)
        if A.dtype.kind != "f":
            return flat.min() if is_min else flat.max()
        res = (np.minimum if is_min else np.maximum).reduce(flat)  # 1.4x faster than fmin/fmax's reduce
        if res != res:  # a NaN somewhere: skip the NaNs; only NaNs: the neutral element survives the fold
            res = (np.fmin if is_min else np.fmax).reduce(flat)
            if res != res:
                return _neutral(op, A.dtype)
        return flat[np.argmax(flat == 0)] if res == 0 else res
    n_out = A.shape[1 - axis]
    if A.shape[axis] == 0:
        return np.full(n_out, _neutral(op, A.dtype), dtype=A.dtype)
    if A.dtype.kind != "f":
        return A.min(axis=axis) if is_min else A.max(axis=axis)
    ufunc = np.fmin if is_min else np.fmax
    narrow = axis == 1 and A.ndim == 2 and 1 < A.shape[1] <= _NARROW_ROW
    res = _narrow_rows_reduce(ufunc, A) if narrow else ufunc.reduce(A, axis=axis)
    zero = np.flatnonzero(res == 0)
    if zero.size:  # +0 and -0 tie: the first zero of the row/column is kept
        lines = A[zero] if axis == 1 else A[:, zero].T
        res[zero] = lines[np.arange(zero.size), np.argmax(lines == 0, axis=1)]
    if narrow:  # the NaN first cells are in already
        return res
    first = np.take(A, 0, axis=axis)
    return np.where(np.isnan(first), first, res)


def _minmax_object(is_min: bool, A: np.ndarray, axis: int | None):
    """min/max over str matrices (sequential Python fold)."""

    def fold(vals: list):
        if not vals:
            raise DaphneRuntimeError("aggMin/aggMax: empty string matrix")
        acc = vals[0]
        for v in vals[1:]:
            if (v < acc) if is_min else (acc < v):
                acc = v
        return acc

    if axis is None:
        return fold(A.ravel().tolist())
    lines = A.tolist() if axis == 1 else A.T.tolist()
    out = np.empty(len(lines), dtype=object)
    out[:] = [fold(v) for v in lines]
    return out


def _count_div(x, n: int, dt: np.dtype):
    """`x / n` in the float type `dt` (n is size_t converted to dt); 0/0 gives -nan like x86."""
    with quiet():
        r = np.divide(x, dt.type(n), dtype=dt)
    if n == 0:
        r = np.where(np.isnan(r), dt.type(NEG_NAN), r) if isinstance(r, np.ndarray) else dt.type(NEG_NAN)
    return r


def _stat(op: str, A: np.ndarray, axis: int | None):
    """mean/var/stddev: sum then divide; var sums squared deviations from the mean sequentially from 0."""
    dt = A.dtype
    n = A.size if axis is None else A.shape[axis]
    if axis is None:
        total = dt.type(0) + _seq_sum(A, None)
        mean = _count_div(total, n, dt)
        if op == "mean":
            return mean
        dev = A.ravel() - mean
        sq = dev * dev
        acc = _fold(sq, None) if sq.size else dt.type(0)
        var = _count_div(acc, n, dt)
    else:
        mean = _count_div(_seq_sum(A, axis), n, dt)
        if op == "mean":
            return mean
        by_columns = axis == 0 and n > 1 and _ordered_sum_pays(A.shape[1], 0)  # numpy's: same bits, same speed
        if n and native_folds.applies(A, first_build=not by_columns):
            acc = native_folds.fold_squared_deviations(A, mean, 0 if axis == 0 else 1)
        elif by_columns:
            acc = _column_squared_deviations(A, mean)
        else:
            dev = A - np.expand_dims(mean, axis)
            sq = dev * dev
            acc = _fold(sq, axis) if n else np.zeros(mean.shape, dt)
        var = _count_div(acc, n, dt)
    if op == "var":
        return var
    with quiet():
        return np.sqrt(var)


def _column_squared_deviations(A: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """Per column: the fold of `(a - mean)^2` over the rows in order, from the first row, computed block by block in
    the cache: a block's squared deviations are written under the running sums (one row above them), and an axis-0
    reduce adds its rows in order (`_ordered_sum_unchecked`). No n x m temporaries (numpy's `A - mean` and its
    square: two fresh allocations, first-touched, each as large as A: PCA's scaling of 50k x 50 spent 2x numpy's
    `std` there). The same bits as the fold of the materialised squares, except NaN payloads, which are redone in
    order as `_ordered_sum` does."""
    n, m = A.shape
    step = max(_BLOCK_CELLS // m, 2)
    buf = np.empty((min(step, n) + 1, m), dtype=A.dtype)
    acc = None
    for r0 in range(0, n, step):
        rows = min(step, n - r0)
        sq = buf[1 : rows + 1]
        np.subtract(A[r0 : r0 + rows], mean, out=sq)
        np.multiply(sq, sq, out=sq)
        if acc is None:
            acc = np.add.reduce(sq, axis=0, initial=A.dtype.type(-0.0))
        else:
            buf[0] = acc
            acc = np.add.reduce(buf[: rows + 1], axis=0)
    assert acc is not None
    nan = np.flatnonzero(acc != acc)
    if nan.size:
        dev = A[:, nan] - mean[nan]
        acc[nan] = np.cumsum(dev * dev, axis=0, dtype=A.dtype)[-1]
    return acc


def _aggregate(op: str, A: np.ndarray, axis: int | None):
    if is_csr(A):
        return _csr_aggregate(op, A, axis)
    if op == "sum":
        return _seq_sum(A, axis)
    if op in ("aggMin", "aggMax"):
        return _minmax(op, A, axis)
    if op in _STAT_OPS:
        if A.dtype.kind != "f":
            raise DaphneRuntimeError(f"{op}: argument must be cast to a float type first")
        return _stat(op, A, axis)
    raise DaphneRuntimeError(f"unknown aggregation '{op}'")


# ---------------------------------------------------------------------------------------------------------------------
# CSR arguments: sum, aggMin, aggMax and mean work on the stored values only, with results identical to the dense
# folds (adding a zero never changes a float sum, so a sequential fold over the stored values of a row equals the
# dense left fold over the whole row); min/max also account for the implicit zeros. var/stddev densify.
# ---------------------------------------------------------------------------------------------------------------------

_LONG_SEGMENT = 256


def _segments(A, axis: int | None):
    """(values, offsets, cells per segment) of the rows (axis 1) or columns (axis 0, via CSC) of a CSR matrix."""
    if axis == 0:
        C = A.tocsc()
        C.sort_indices()
        return C.data, C.indptr, C.indices, A.shape[0]
    return A.data, A.indptr, A.indices, A.shape[1]


def _segment_sums(data: np.ndarray, offsets: np.ndarray, dt: np.dtype) -> np.ndarray:
    """Per-segment sums of `data[offsets[i]:offsets[i+1]]`; float sums are sequential left folds from the first
    value, like the dense row/column fold (numpy's `add.reduceat` may sum pairwise)."""
    lens = np.diff(offsets)
    out = np.zeros(lens.size, dtype=dt)
    nonempty = np.flatnonzero(lens)
    if nonempty.size == 0:
        return out
    starts = offsets[:-1]
    if dt.kind != "f":
        out[nonempty] = np.add.reduceat(data, starts[nonempty], dtype=dt)
        return out
    out[nonempty] = data[starts[nonempty]]
    for r in np.flatnonzero(lens > _LONG_SEGMENT):  # few long segments: one sequential cumsum each
        out[r] = np.cumsum(data[starts[r] : starts[r] + lens[r]], dtype=dt)[-1]
    short = nonempty[lens[nonempty] <= _LONG_SEGMENT]
    if short.size == 0:
        return out
    short = short[np.argsort(-lens[short], kind="stable")]  # longest first: the k-th values form a prefix
    longer_than = short.size - np.cumsum(np.bincount(lens[short]))  # [k]: how many segments are longer than k
    pos = starts[short]
    acc = out[short]
    for k in range(1, longer_than.size - 1):
        m = int(longer_than[k])
        acc[:m] += data[pos[:m] + k]
    out[short] = acc
    return out


def _csr_sum(A, axis: int | None):
    if axis is None:
        return _seq_sum(A.data.reshape(1, -1), None)
    if A.dtype.kind == "f":
        return _csr_float_sums(A, axis)
    data, offsets, _, _ = _segments(A, axis)
    return _segment_sums(data, offsets, A.dtype)


#: Zero sums of stored values `_csr_float_sums` checks for -0 one by one; more take the general segment fold.
_MAX_ZERO_CHECKS = 16


def _csr_float_sums(A, axis: int) -> np.ndarray:
    """Row (axis 1) or column (axis 0) sums of a float CSR matrix as scipy's sparse matrix-vector product with
    ones: `A @ 1` adds each row's values in storage order, `t(A) @ 1` (CSC view, no copy) each column's values in
    row order, in the value type, each from 0 (`v * 1` is exact) -- the dense fold's order, at scipy's speed (a
    PageRank's out-degrees: 8 ms -> 0.5 ms for 400k edges) instead of a gather per position. Starting from +0
    instead of the first value differs only where every value is -0 (the fold gives -0): those are fixed."""
    ones = np.ones(A.shape[axis], dtype=A.dtype)
    with quiet():
        out = np.asarray(A @ ones if axis == 1 else A.T @ ones, dtype=A.dtype)
    zero = np.flatnonzero(out == 0)
    if zero.size:
        stored = np.diff(A.indptr) if axis == 1 else np.bincount(A.indices, minlength=out.size)
        check = zero[stored[zero] > 0]  # segments of values that cancel, or of -0 only
        if check.size > _MAX_ZERO_CHECKS:
            data, offsets, _, _ = _segments(A, axis)
            return _segment_sums(data, offsets, A.dtype)
        for i in check:
            vals = A.data[A.indptr[i] : A.indptr[i + 1]] if axis == 1 else A.data[A.indices == i]
            if np.all(np.signbit(vals)):
                out[i] = -0.0
    return out


def _csr_minmax(op: str, A, axis: int | None):
    """min/max over the stored values (NaNs skipped, as the dense fold does) and, where a row/column has implicit
    zeros, zero; a NaN in the first cell of a row/column wins, like the dense row/column fold."""
    dt = A.dtype
    is_min = op == "aggMin"
    fold = np.minimum if is_min else np.maximum
    if axis is None:
        vals = A.data[~np.isnan(A.data)] if dt.kind == "f" else A.data
        res = _neutral(op, dt) if vals.size == 0 else (vals.min() if is_min else vals.max())
        return fold(res, dt.type(0)) if has_implicit_zeros(A) else res
    data, offsets, index, cells = _segments(A, axis)
    lens = np.diff(offsets)
    nans = np.isnan(data) if dt.kind == "f" else None
    has_nan = nans is not None and bool(nans.any())
    clean = np.where(nans, np.inf if is_min else -np.inf, data) if has_nan else data
    starts = offsets[:-1].astype(np.intp)
    nonempty = np.flatnonzero(lens)
    if nonempty.size == lens.size:  # every row/column stores a value (a graph without isolated vertices)
        out = fold.reduceat(clean, starts)
    else:
        out = np.full(lens.size, _neutral(op, dt), dtype=dt)
        if nonempty.size:
            out[nonempty] = fold.reduceat(clean, starts[nonempty])
    with_zeros = lens < cells
    if with_zeros.all():
        fold(out, dt.type(0), out=out)
    else:
        out[with_zeros] = fold(out[with_zeros], dt.type(0))
    if has_nan and nonempty.size:  # without NaNs no first cell is NaN: nothing to fix up
        starts = starts[nonempty]
        first = np.where(index[starts] == 0, data[starts], 0).astype(dt)
        out[nonempty] = np.where(np.isnan(first), first, out[nonempty])
    return out


def _csr_aggregate(op: str, A, axis: int | None):
    if A.shape[0] == 0 or A.shape[1] == 0:
        return _aggregate(op, as_dense(A), axis)
    if op == "sum":
        return _csr_sum(A, axis)
    if op in ("aggMin", "aggMax"):
        return _csr_minmax(op, A, axis)
    if op in _STAT_OPS and A.dtype.kind != "f":
        raise DaphneRuntimeError(f"{op}: argument must be cast to a float type first")
    if op == "mean":
        n = A.shape[0] * A.shape[1] if axis is None else A.shape[axis]
        total = _csr_sum(A, axis)
        return _count_div(A.dtype.type(0) + total if axis is None else total, n, A.dtype)
    if op in _STAT_OPS:
        return _stat(op, as_dense(A), axis)
    raise DaphneRuntimeError(f"unknown aggregation '{op}'")


# ---------------------------------------------------------------------------------------------------------------------
# Public kernels
# ---------------------------------------------------------------------------------------------------------------------


def _prepare(op: str, vt_in: str, vt_out: str | None) -> tuple[str, str]:
    op = _ALIASES.get(op, op)
    out = vt_out or result_vt(op, vt_in)
    dtype_of(out)
    return op, out


def full_kernel(op: str, vt_in: str, vt_out: str | None = None) -> Callable[[np.ndarray], object]:
    """`agg(X)`: a function `X -> scalar` of type `vt_out` (default `result_vt(op, vt_in)`); `op` is one of AGG_OPS
    (or `min`/`max`)."""
    op, out = _prepare(op, vt_in, vt_out)

    def kernel(X: np.ndarray):
        A = cast_matrix(X, out)
        with quiet():
            return _to_py(_aggregate(op, A, None), out)

    kernel.__name__ = f"{op}All_{vt_in}_{out}"
    return kernel


def exact_sum_kernel(vt: str, max_cells: int) -> Callable[[np.ndarray], object]:
    """`sum(X)` of a float matrix whose cells the compiler proved to be integers of a magnitude B
    (compiler/analysis/integer_valued.py), with `max_cells` = 2^53 // B (f64; 2^24 // B for f32; -1: every cell is
    0): then every partial sum, in any order, is an exact integer, so numpy's pairwise sum (~15x faster than the
    sequential fold's `cumsum`) gives the fold's bits. A zero comes out +0 as from the fold, which starts at +0.
    Larger inputs (shapes known only at run time) take the sequential fold."""
    fold = full_kernel("sum", vt, vt)
    zero = dtype_of(vt).type(0)

    def kernel(X: np.ndarray):
        if type(X) is np.ndarray and X.dtype == zero.dtype and (max_cells < 0 or X.size <= max_cells):
            s = np.add.reduce(X, axis=None)
            return float(s + zero if s == 0 else s)
        return fold(X)

    kernel.__name__ = f"sumAll_exact_{vt}"
    return kernel


class ComparedSum(float):
    """The value of a full f64 sum that the program only compares (compiler/analysis/order_only.py): numpy's
    pairwise sum, which answers every comparison as the sequential fold would. Both sums are within
    gamma_n * sum|x| of the exact sum (gamma_n = n u / (1 - n u), any order of additions), so a comparison with a
    threshold farther than twice that from the pairwise sum has the fold's outcome; a closer one computes the fold
    (once) and compares that. Only comparisons may see it: its float value is not the fold's."""

    __slots__ = ("_cells", "_margin", "_fold")
    __array_ufunc__ = None  # numpy scalars (`np.float64(t) < x`) defer to these comparisons instead of converting

    def _exact(self) -> float:
        if self._fold is None:
            self._fold = full_kernel("sum", "f64")(self._cells)
            self._cells = None
        return self._fold

    def _sides(self, other: object) -> tuple[float, float]:
        """(this sum, `other`) as floats that compare like the folds' values."""
        o = other._exact() if isinstance(other, ComparedSum) else float(other)  # type: ignore[arg-type]
        s = float(self)
        return (s if abs(s - o) > self._margin else self._exact()), o

    def __lt__(self, other: object) -> bool:
        s, o = self._sides(other)
        return s < o

    def __le__(self, other: object) -> bool:
        s, o = self._sides(other)
        return s <= o

    def __gt__(self, other: object) -> bool:
        s, o = self._sides(other)
        return s > o

    def __ge__(self, other: object) -> bool:
        s, o = self._sides(other)
        return s >= o

    def __eq__(self, other: object) -> bool:
        s, o = self._sides(other)
        return s == o

    def __ne__(self, other: object) -> bool:
        s, o = self._sides(other)
        return s != o

    __hash__ = float.__hash__


#: Below this many cells a compared sum folds in order at once (the fold is cheap; the bound's passes are not).
_MIN_COMPARED_CELLS = 4096


def compared_sum_kernel() -> Callable[[np.ndarray], float]:
    """`sum(X)` of an f64 matrix whose value the program only compares (`ComparedSum`; the compiler's proof is
    compiler/analysis/order_only.py): PageRank's `delta = sum(abs(q - p))` per iteration, a 50k-cell `cumsum`
    (~140 us), becomes two pairwise sums (~20 us). Non-finite sums, CSR and small inputs fold in order."""
    fold = full_kernel("sum", "f64")
    u = 2.0**-53

    def kernel(X: np.ndarray):
        if type(X) is not np.ndarray or X.dtype != np.float64 or X.size < _MIN_COMPARED_CELLS:
            return fold(X)
        flat = X.ravel()
        s = float(np.add.reduce(flat))
        mag = float(np.add.reduce(np.abs(flat)))
        nu = flat.size * u
        if not (mag < 1e300 and s == s):  # finite, far from overflow (the fold stays finite too)
            return fold(X)
        out = ComparedSum(s + 0.0 if s == 0 else s)
        out._margin = 4.0 * nu / (1.0 - nu) * mag  # twice the two sums' distance bound, with slack for `mag`'s own
        out._cells = flat
        out._fold = None
        return out

    kernel.__name__ = "sumAll_compared_f64"
    return kernel


def row_kernel(op: str, vt_in: str, vt_out: str | None = None) -> Callable[[np.ndarray], np.ndarray]:
    """`agg(X, 0)`: one aggregate per row, a function `X (n x m) -> n x 1 matrix`."""
    op, out = _prepare(op, vt_in, vt_out)

    def kernel(X: np.ndarray) -> np.ndarray:
        A = cast_matrix(X, out)
        with quiet():
            r = _aggregate(op, A, 1)
        return np.ascontiguousarray(np.asarray(r, dtype=A.dtype).reshape(A.shape[0], 1))

    kernel.__name__ = f"{op}Row_{vt_in}_{out}"
    return kernel


def col_kernel(op: str, vt_in: str, vt_out: str | None = None) -> Callable[[np.ndarray], np.ndarray]:
    """`agg(X, 1)`: one aggregate per column, a function `X (n x m) -> 1 x m matrix`."""
    op, out = _prepare(op, vt_in, vt_out)

    def kernel(X: np.ndarray) -> np.ndarray:
        A = cast_matrix(X, out)
        with quiet():
            r = _aggregate(op, A, 0)
        return np.ascontiguousarray(np.asarray(r, dtype=A.dtype).reshape(1, A.shape[1]))

    kernel.__name__ = f"{op}Col_{vt_in}_{out}"
    return kernel


# ---------------------------------------------------------------------------------------------------------------------
# idxMin / idxMax (row- and column-wise only): positions as the size type (uint64)
# ---------------------------------------------------------------------------------------------------------------------


def idx_kernel(kind: str, axis: str) -> Callable[[np.ndarray], np.ndarray]:
    """`idxMin(X, 0)` etc.: the position of the first minimum (`kind="min"`) or maximum per row (`axis="row"`,
    n x 1) or per column (`axis="col"`, 1 x m), like AggRow.h/AggCol.h: a strict `<`/`>` scan from the first
    element, so NaNs after the first element are skipped and a NaN first element wins."""
    if kind not in ("min", "max") or axis not in ("row", "col"):
        raise DaphneRuntimeError(f"unknown arg-aggregation idx{kind} {axis}")

    lane = 1 if axis == "row" else 0  # numpy axis scanned per output element
    first_min = kind == "min"

    def kernel(X) -> np.ndarray:
        if type(X) is np.ndarray and X.ndim == 2 and X.shape[1 - lane] == 1 and X.shape[lane] and X.dtype.kind in "fiu":
            # one vector (`idxMin(area, 1)` in a loop): numpy's argmin/argmax find the first extreme like the strict
            # scan; a NaN found (numpy's pick when there is one) takes the general path, which skips it
            i = int(X.argmin() if first_min else X.argmax())  # a closure of plain values: the program cache
            if X.dtype.kind != "f" or X.flat[i] == X.flat[i]:
                return np.array([[i]], dtype=np.uint64)
        from daphnec.runtime.values import as_dense

        A = as_dense(X)
        n_out = A.shape[1 - lane]
        if A.shape[lane] == 0:
            what = "row" if axis == "row" else "column"
            raise DaphneRuntimeError(f"idx{kind.capitalize()}: cannot aggregate an empty {what}")
        if A.dtype == object:
            raise DaphneRuntimeError(f"idx{kind.capitalize()}: not supported on value type str")
        if A.dtype.kind == "f":
            clean = np.where(np.isnan(A), np.inf if kind == "min" else -np.inf, A)
            idx = np.argmin(clean, axis=lane) if kind == "min" else np.argmax(clean, axis=lane)
            idx = np.where(np.isnan(np.take(A, 0, axis=lane)), 0, idx)
        else:
            idx = np.argmin(A, axis=lane) if kind == "min" else np.argmax(A, axis=lane)
        shape = (n_out, 1) if axis == "row" else (1, n_out)
        return np.ascontiguousarray(idx.astype(np.uint64).reshape(shape))

    kernel.__name__ = f"idx{kind}{'Row' if axis == 'row' else 'Col'}"
    return kernel


def idx_scalar_kernel(kind: str, axis: str) -> Callable[[np.ndarray], int]:
    """`as.scalar(idxMin(X, 1))` etc. of a vector (the host code fuses the two when the result is 1 x 1 by its
    type, compiler/host/generator.py): the position as a Python int, without the 1 x 1 matrix between. Anything but
    a NaN-free numeric vector takes `idx_kernel` and `as.scalar`."""
    if kind not in ("min", "max") or axis not in ("row", "col"):
        raise DaphneRuntimeError(f"unknown arg-aggregation idx{kind} {axis}")
    lane = 1 if axis == "row" else 0
    first_min = kind == "min"

    def kernel(X) -> int:
        if type(X) is np.ndarray:
            shape = X.shape
            vk = X.dtype.kind
            if len(shape) == 2 and shape[1 - lane] == 1 and shape[lane] and vk in "fiu":
                i = int(X.argmin() if first_min else X.argmax())
                if vk != "f":
                    return i
                v = X.item(i)  # one item read for the NaN test (RDP's farthest point per segment)
                if v == v:
                    return i
        from daphnec.runtime.kernels.meta import as_scalar

        return as_scalar(idx_kernel(kind, axis)(X))

    kernel.__name__ = f"idx{kind}{'Row' if axis == 'row' else 'Col'}_scalar"
    return kernel
