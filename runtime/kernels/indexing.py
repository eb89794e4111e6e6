"""Right and left indexing of matrices: `X[rows, cols]`, `X[[rowBits, colBits]]` and `X[rows, cols] = V`.

A selector is one of
- `None`: all rows/columns;
- an `int` position (negative counts from the end);
- a `(start, stop)` tuple of numbers or None: the half-open range [start, stop), negative positions count from the
  end;
- an n x 1 (or 1 x n) position matrix: unsorted, repeats allowed.
Float positions are truncated toward zero (runtime/kernels/positions.py).
Out-of-bounds positions raise DaphneRuntimeError naming the offending position and the matrix shape. Results are
always 2-D matrices (also 1x1); ranges of rows, and ranges of most columns, of a dense matrix are views of it (run-time
values are immutable, so sharing cannot be observed); `insert` is copy-on-write (returns a new matrix).
"""

from __future__ import annotations

import numpy as np

from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.frame import Frame
from daphnec.runtime.kernels import frame_ops
from daphnec.runtime.kernels.dead_operands import owns_buffer
from daphnec.runtime.kernels.positions import position, positions
from daphnec.runtime.values import as_dense, cast_matrix, cast_scalar, csr_from_parts, is_csr, vt_of

Selector = None | int | tuple | np.ndarray

_AXIS = ("row", "column")


def _shape_txt(X: np.ndarray) -> str:
    return f"{X.shape[0]}x{X.shape[1]}"


def _normalize(name: str, sel: Selector, axis: int, X: np.ndarray) -> slice | np.ndarray:
    """Turn a selector into a slice or an int64 position array, checking bounds."""
    n = X.shape[axis]
    if sel is None:
        return slice(0, n)
    sel = as_dense(sel)
    if not isinstance(sel, (tuple, np.ndarray)):
        i = position(name, sel, _AXIS[axis])
        j = i + n if i < 0 else i
        if not 0 <= j < n:
            raise DaphneRuntimeError(
                f"{name}: {_AXIS[axis]} index {i} is out of bounds for a matrix of shape {_shape_txt(X)}"
            )
        return slice(j, j + 1)
    if isinstance(sel, tuple):
        start, stop = sel
        s = 0 if start is None else position(name, start, _AXIS[axis])
        e = n if stop is None else position(name, stop, _AXIS[axis])
        s2 = s + n if s < 0 else s
        e2 = e + n if e < 0 else e
        if not 0 <= s2 <= n:
            raise DaphneRuntimeError(
                f"{name}: {_AXIS[axis]} range start {s} is out of bounds for a matrix of shape {_shape_txt(X)}"
            )
        if not 0 <= e2 <= n:
            raise DaphneRuntimeError(
                f"{name}: {_AXIS[axis]} range end {e} is out of bounds for a matrix of shape {_shape_txt(X)}"
            )
        if s2 > e2:
            raise DaphneRuntimeError(
                f"{name}: {_AXIS[axis]} range {s}:{e} is empty-reversed (start > end) for a matrix of shape "
                f"{_shape_txt(X)}"
            )
        return slice(s2, e2)
    return _positions(name, sel, axis, X)


def _positions(name: str, sel: np.ndarray, axis: int, X: np.ndarray) -> np.ndarray:
    """A position matrix as a flat int64 array (floats floored), bounds-checked."""
    if sel.ndim == 2 and sel.shape[0] != 1 and sel.shape[1] != 1:
        raise DaphneRuntimeError(
            f"{name}: a {_AXIS[axis]} position list must be a single column (or row), got {_shape_txt(sel)}"
        )
    flat = sel.ravel()
    if flat.dtype.kind not in "iubf":
        raise DaphneRuntimeError(f"{name}: {_AXIS[axis]} positions must be numbers, got {vt_of(sel)}")
    pos = positions(name, flat, _AXIS[axis])
    n = X.shape[axis]
    bad = (pos < 0) | (pos >= n)
    if bad.any():
        p = pos[np.flatnonzero(bad)[0]]
        p = int(p) if abs(float(p)) < 2**63 else p
        raise DaphneRuntimeError(
            f"{name}: {_AXIS[axis]} index {p} is out of bounds for a matrix of shape {_shape_txt(X)}"
        )
    return pos.astype(np.int64)


def _select(X: np.ndarray, r, c) -> np.ndarray:
    if isinstance(r, np.ndarray) and isinstance(c, np.ndarray):
        return X[np.ix_(r, c)]
    return X[r][:, c] if isinstance(r, np.ndarray) else X[r, c]


def extract(X: np.ndarray, rows: Selector = None, cols: Selector = None) -> np.ndarray:
    """`X[rows, cols]`: a 2-D matrix (1x1 for two int positions). A range of rows with all columns of a
    C-ordered matrix is a view, as DAPHNE's `DenseMatrix::sliceRow` is (run-time values are never mutated in
    place, so sharing is safe). A range of at least half of its columns is a view too (`VIEW_MIN_COLUMN_SHARE`):
    copying it would read and write nearly the whole matrix (the feature columns of a data set, `X = D[, 0:m]`),
    while BLAS and numpy read a strided view directly. Anything else is copied (a few columns become compact)."""
    if isinstance(X, Frame):  # frames (also columns by label): runtime.kernels.frame_ops
        return frame_ops.extract(X, rows, cols)
    r = _normalize("extract", rows, 0, X)
    c = _normalize("extract", cols, 1, X)
    if is_csr(X):
        return _csr_extract(X, r, c)
    if isinstance(r, slice) and isinstance(c, slice) and X.flags.c_contiguous and X.dtype != object:
        if c == slice(0, X.shape[1]):
            return X[r]
        if (c.stop - c.start) >= VIEW_MIN_COLUMN_SHARE * X.shape[1] and r.stop > r.start:
            return X[r, c]
    return np.array(_select(X, r, c), copy=True, order="C")


VIEW_MIN_COLUMN_SHARE = 0.5
"""A column range of at least this share of a dense matrix's columns is a view (see `extract`)."""


def _csr_extract(X, r: slice | np.ndarray, c: slice | np.ndarray):
    """`X[rows, cols]` of a CSR matrix as CSR. A range of rows with all columns shares X's value and column
    arrays (a view: run-time values are never mutated); anything else goes through scipy's CSR indexing."""
    if isinstance(r, slice) and isinstance(c, slice) and (c.start, c.stop) == (0, X.shape[1]):
        lo, hi = X.indptr[r.start], X.indptr[r.stop]
        indptr = (X.indptr[r.start : r.stop + 1] - lo).astype(X.indices.dtype)  # one index type: no copy in scipy
        return csr_from_parts(X.data[lo:hi], X.indices[lo:hi], indptr, (r.stop - r.start, X.shape[1]))
    res = X[r][:, c] if isinstance(r, np.ndarray) and isinstance(c, np.ndarray) else X[r, c]
    res = res.tocsr()
    res.sum_duplicates()
    return res


# The indexing ops as the IR passes their selections: `X[lo:hi, ]`, `X[, lo:hi]`, `X[sel, ]`, `X[, sel]` and
# `X[rl:rh, cl:ch] = v`.


def slice_row(X: np.ndarray, lo: object, hi: object) -> np.ndarray:
    if type(X) is np.ndarray and type(lo) is int and type(hi) is int and 0 <= lo <= hi <= X.shape[0]:
        if X.flags.c_contiguous and X.dtype.kind != "O":
            return X[lo:hi]  # `extract`'s view of a row range, without its general path (`Q = P[(a + 1):b, ]`)
    return extract(X, (lo, hi), None)  # type: ignore[arg-type]


slice_row.host_view = (  # type: ignore[attr-defined]  # compiler/host/generator.py inlines the fast path (`_inline_view`)
    "type({0}) is {ndarray} and type({1}) is int and type({2}) is int and 0 <= {1} <= {2} <= {0}.shape[0] "
    "and {0}.flags.c_contiguous and {0}.dtype.kind != 'O'",
    "{0}[{1}:{2}]",
)


def slice_col(X: np.ndarray, lo: object, hi: object) -> np.ndarray:
    return extract(X, None, (lo, hi))  # type: ignore[arg-type]


def extract_row(X: np.ndarray, sel: Selector) -> np.ndarray:
    if (
        type(sel) is int
        and type(X) is np.ndarray
        and 0 <= sel < X.shape[0]
        and X.flags.c_contiguous
        and X.dtype.kind != "O"
    ):
        return X[sel : sel + 1]  # one row of a loop over points: `extract`'s view, without its general path
    return extract(X, sel, None)


def extract_col(X: np.ndarray, sel: Selector) -> np.ndarray:
    if type(sel) is int and type(X) is np.ndarray and 0 <= sel < X.shape[1] and X.dtype.kind != "O":
        if X.shape[0] == 1:
            return X[:, sel : sel + 1]  # one cell of one row: a view, C-ordered as one row is
        if X.flags.c_contiguous and X.shape[0] and X.shape[1] <= 1 / VIEW_MIN_COLUMN_SHARE:
            return X[:, sel : sel + 1]  # `extract`'s view of a column of a narrow matrix (`Q[, 0]` of points)
    return extract(X, None, sel)


def extract_col_view(X: np.ndarray, sel: Selector) -> np.ndarray:
    """`X[, j]` as a strided view of any dense matrix, where the compiler saw that the column is read once right
    after (by element-wise or outer ops, compiler/selection/matrix.py: `select_extract_col`): reading the view
    touches the cache lines a copy would read, without the copy's write and re-read (`outerLe(X[, j], thr)` in a
    tree's split search: ~20 us saved per 25k-row column). Values are never mutated in place (in-place writes
    check `owns_buffer`), so sharing X's memory is safe; anything but one in-range position takes `extract_col`."""
    if type(sel) is int and type(X) is np.ndarray:
        shape = X.shape
        if len(shape) == 2 and 0 <= sel < shape[1] and X.dtype.kind != "O":
            return X[:, sel : sel + 1]
    return extract_col(X, sel)


extract_col_view.host_view = (  # type: ignore[attr-defined]  # inlined like `slice_row`'s
    "type({1}) is int and type({0}) is {ndarray} and len({0}.shape) == 2 and 0 <= {1} < {0}.shape[1] "
    "and {0}.dtype.kind != 'O'",
    "{0}[:, {1}:{1} + 1]",
)


def cell(X: np.ndarray, i: object, j: object, vt: str | None = None) -> object:
    """`as.scalar(X[i, j])` in one read (compiler/host/generator.py fuses the three ops when they follow each other):
    the cell as a Python scalar of X's value type, or cast to `vt`, without the two 1-row/1-cell views a loop
    over points would otherwise make per read. Positions other than in-range ints of a dense numeric matrix
    (negative, out of range, CSR, strings) take the three kernels' own path, checks and messages."""
    if type(X) is np.ndarray and type(i) is int and type(j) is int and X.ndim == 2:
        r, c = X.shape
        if 0 <= i < r and 0 <= j < c and X.dtype.kind != "O":
            v = X.item(i, j)
            return v if vt is None else cast_scalar(v, vt)
    from daphnec.runtime.kernels.meta import as_scalar

    return as_scalar(as_dense(extract_col(extract_row(X, i), j)), vt)  # as.scalar has no CSR path: dense 1 x 1


def insert_range(X: np.ndarray, value: object, rl: object, rh: object, cl: object, ch: object) -> np.ndarray:
    return insert(X, (rl, rh), (cl, ch), value)  # type: ignore[arg-type]


def insert_range_in_place(X: np.ndarray, value: object, rl: object, rh: object, cl: object, ch: object) -> np.ndarray:
    """`X[rl:rh, cl:ch] = value` written into X's buffer, which is returned, where the compiler proved that nothing
    reads the old value of X again (`daphne.in_place`: compiler/passes/in_place_insert.py, or a parfor's result
    buffer, compiler/passes/parfor.py). The buffer is written only if the program owns it (`owns_buffer`): the
    first write to a view, a read-only input or data another object keeps copies, as `insert` does, and the
    copy is what later writes update. Checks and casts are those of `insert`."""
    if type(X) is np.ndarray and owns_buffer(X):
        if type(rl) is int and type(cl) is int and rh == rl + 1 and ch == cl + 1:  # one cell: `keep[c, 0] = 1`
            if 0 <= rl < X.shape[0] and 0 <= cl < X.shape[1]:
                cell = _cell_value(value, X.dtype)
                if cell is not None:
                    X[rl, cl] = cell
                    return X
        elif (
            type(value) is np.ndarray
            and type(rl) is int
            and type(rh) is int
            and type(cl) is int
            and type(ch) is int
            and 0 <= rl <= rh <= X.shape[0]
            and 0 <= cl <= ch <= X.shape[1]
            and value.shape == (rh - rl, ch - cl)
            and value.dtype == X.dtype
            and X.dtype.kind != "O"
        ):  # a block of X's value type in range (`stack[sp, ] = [a, c](1, 2)`): `insert`'s store, without its checks
            X[rl:rh, cl:ch] = value
            return X
        return insert(X, (rl, rh), (cl, ch), value, in_place=True)  # type: ignore[arg-type]
    return insert(X, (rl, rh), (cl, ch), value)  # type: ignore[arg-type]


def _cell_value(value: object, dtype: np.dtype) -> object | None:
    """A 1 x 1 matrix or a scalar written into one cell of a matrix of `dtype` exactly as `insert` casts it, when
    no cast is needed (same value type); None otherwise (`insert` casts and checks)."""
    if type(value) is np.ndarray:
        return value[0, 0] if value.shape == (1, 1) and value.dtype == dtype and dtype.kind != "O" else None
    if (type(value) is float and dtype == np.float64) or (type(value) is int and dtype == np.int64):
        return value  # a Python int of a DaphneDSL si64 is always within its range
    return None


def insert(X: np.ndarray, rows: Selector, cols: Selector, value, in_place: bool = False) -> np.ndarray:
    """`X[rows, cols] = value` (copy-on-write): returns a NEW matrix (X itself with `in_place`, see
    `insert_range_in_place`); `value`'s shape must match the region.

    A scalar `value` is broadcast over the region; the value is cast to X's value type.
    """
    X, value = as_dense(X), as_dense(value)  # no CSR path: copy-on-write needs a dense copy anyway
    r = _normalize("insert", rows, 0, X)
    c = _normalize("insert", cols, 1, X)
    nr = len(r) if isinstance(r, np.ndarray) else r.stop - r.start
    nc = len(c) if isinstance(c, np.ndarray) else c.stop - c.start
    vt = vt_of(X)
    if isinstance(value, np.ndarray):
        if value.shape != (nr, nc):
            raise DaphneRuntimeError(
                f"insert: shape mismatch: the indexed region is {nr}x{nc}, but the inserted matrix is "
                f"{_shape_txt(value)}"
            )
        v = cast_matrix(value, vt)
    else:
        v = cast_scalar(value, vt)
    res = X if in_place else X.copy(order="C")
    if isinstance(r, np.ndarray) and isinstance(c, np.ndarray):
        res[np.ix_(r, c)] = v
    else:
        res[r, c] = v
    return res


def _bits(name: str, bits: np.ndarray, n: int, axis: int, X: np.ndarray) -> np.ndarray:
    """A 0/1 vector of length n as a boolean mask."""
    if not isinstance(bits, np.ndarray):
        raise DaphneRuntimeError(f"{name}: the selection must be a 0/1 matrix")
    flat = bits.ravel()
    if bits.ndim != 2 or (bits.shape[0] != 1 and bits.shape[1] != 1) or flat.size != n:
        raise DaphneRuntimeError(
            f"{name}: the bit vector ({_shape_txt(bits)}) must have one entry per {_AXIS[axis]} of the matrix "
            f"({_shape_txt(X)})"
        )
    if flat.dtype == object:
        raise DaphneRuntimeError(f"{name}: the bit vector must be numeric")
    ok = (flat == 0) | (flat == 1)
    if not ok.all():
        bad = flat[np.flatnonzero(~ok)[0]]
        raise DaphneRuntimeError(f"{name}: the bit vector must contain only 0 and 1, found {bad}")
    return flat != 0


def filter_rows(X: np.ndarray, bits: np.ndarray) -> np.ndarray:
    """`X[[bits, ]]`: the rows whose bit is 1, in order."""
    if isinstance(X, Frame):
        return frame_ops.filter_rows(X, bits)
    X, bits = as_dense(X), as_dense(bits)
    return np.ascontiguousarray(X[_bits("filterRow", bits, X.shape[0], 0, X)])


def filter_cols(X: np.ndarray, bits: np.ndarray) -> np.ndarray:
    """`X[[, bits]]`: the columns whose bit is 1, in order."""
    if isinstance(X, Frame):
        return frame_ops.filter_cols(X, bits)
    X, bits = as_dense(X), as_dense(bits)
    return np.ascontiguousarray(X[:, _bits("filterCol", bits, X.shape[1], 1, X)])
