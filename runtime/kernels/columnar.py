"""Kernels of the columnar ops (`--columnar`): columns are 1-D numpy arrays, position lists ascending uint64
(size type) arrays. Semantics follow DAPHNE's src/runtime/local/kernels/Col*.h and Convert*.h: `col_join` is N:1
(the last equal right key wins, left order kept), `col_group_first`/`col_group_next` number groups by first
appearance, sums stay in the column's value type. Everything is vectorised.
"""

from __future__ import annotations

import numpy as np

from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.kernels import relational
from daphnec.runtime.kernels.agg import full_kernel
from daphnec.runtime.values import as_dense, cast_scalar, dtype_of, vt_of

_POS = np.uint64


def _positions(mask: np.ndarray) -> np.ndarray:
    return np.flatnonzero(mask).astype(_POS)


def _comparable(col: np.ndarray, value: object) -> tuple[np.ndarray, object]:
    if (col.dtype == object) != isinstance(value, str):
        raise DaphneRuntimeError(f"colSelect: cannot compare a {vt_of(col)} column with {value!r}")
    return col, value


def _select(ufunc: np.ufunc):  # noqa: ANN202 - a kernel
    def kernel(col: np.ndarray, value: object) -> np.ndarray:
        c, v = _comparable(col, value)
        return _positions(ufunc(c, v))

    kernel.__name__ = f"col_select_{ufunc.__name__}"
    return kernel


col_select_eq = _select(np.equal)
col_select_neq = _select(np.not_equal)
col_select_gt = _select(np.greater)
col_select_ge = _select(np.greater_equal)
col_select_lt = _select(np.less)
col_select_le = _select(np.less_equal)


def _mask(pos: np.ndarray, size: int) -> np.ndarray:
    m = np.zeros(size, dtype=bool)
    m[pos] = True
    return m


def col_intersect(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The positions in both sorted lists (a mask over the positions: linear, no sort)."""
    if len(a) == 0 or len(b) == 0:
        return np.zeros(0, dtype=_POS)
    return b[_mask(a, int(max(a[-1], b[-1])) + 1)[b]].astype(_POS, copy=False)


def col_merge(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The positions in either sorted list, once, ascending."""
    if len(a) == 0 or len(b) == 0:
        return (b if len(a) == 0 else a).astype(_POS, copy=False)
    m = _mask(a, int(max(a[-1], b[-1])) + 1)
    m[b] = True
    return _positions(m)


def col_project(col: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """The values at the given positions (bounds-checked)."""
    if len(pos) and int(pos.max()) >= len(col):
        raise DaphneRuntimeError(f"colProject: position {int(pos.max())} is out of bounds for {len(col)} rows")
    return col[pos.astype(np.int64)]


def _last_match(lk: np.ndarray, rk: np.ndarray) -> np.ndarray:
    """For each left key the last right position with an equal key (-1: none), as a hash table that overwrites
    (ColJoin.h) finds it. Unique right keys (the usual N:1 join on a key column) are looked up directly
    (`relational.unique_lookup`: a direct-address table for a small integer range, else a hash); with repeated
    keys a stable sort keeps equal keys in order, so the last of a run is the last row."""
    lk, rk = relational.comparable_keys(lk, rk, "colJoin")
    hit = relational.unique_lookup(relational.canonical_keys(lk), relational.canonical_keys(rk))
    if hit is not None:
        return hit
    order = np.argsort(rk, kind="stable")
    rs = rk[order]
    lo = np.searchsorted(rs, lk, side="left")
    hi = np.searchsorted(rs, lk, side="right")
    found = hi > lo
    if lk.dtype.kind == "f":
        found &= ~np.isnan(lk)
    out = np.full(len(lk), -1, dtype=np.int64)
    out[found] = order[hi[found] - 1]
    return out


def col_join(lkeys: np.ndarray, rkeys: np.ndarray, num_res: int) -> tuple[np.ndarray, np.ndarray]:
    """`colJoin`: (left positions, right positions) of an N:1 equi-join, in left order; at most `num_res` pairs
    when it is not -1."""
    match = _last_match(lkeys, rkeys)
    li = np.flatnonzero(match >= 0)
    if num_res >= 0:
        li = li[:num_res]
    return li.astype(_POS), match[li].astype(_POS)


def col_semi_join(lkeys: np.ndarray, rkeys: np.ndarray, num_res: int) -> np.ndarray:
    """`colSemiJoin`: the left positions whose key occurs among the right keys, in left order."""
    li = np.flatnonzero(_last_match(lkeys, rkeys) >= 0)
    return (li[:num_res] if num_res >= 0 else li).astype(_POS)


def _first_appearance(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(group id per row, numbered by first appearance; position of each group's first row)."""
    n = len(keys)
    if n == 0:
        return np.zeros(0, dtype=_POS), np.zeros(0, dtype=_POS)
    enc = relational.arrow_array(relational.canonical_keys(keys)).dictionary_encode()
    gid = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    first = np.full(len(enc.dictionary), n, dtype=np.int64)
    np.minimum.at(first, gid, np.arange(n, dtype=np.int64))
    return gid.astype(_POS), first.astype(_POS)


def col_group_first(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`colGroupFirst`: group ids (first-appearance order) and each group's representative position."""
    return _first_appearance(keys)


def col_group_next(keys: np.ndarray, grp_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`colGroupNext`: the groups of `grp_ids` refined by one more key column."""
    codes, uniq = relational.dense_codes(keys)
    combined = grp_ids.astype(np.int64) * max(len(uniq), 1) + codes
    return _first_appearance(combined)


def col_sum_grp(col: np.ndarray, grp_ids: np.ndarray, num_distinct: int, optimistic_split: bool) -> np.ndarray:
    """`colSumGrp`: the sum of every group in the column's value type (`optimistic_split` only tunes DAPHNE's
    parallel kernel; the result is the same)."""
    return relational.grouped_sum(col, grp_ids.astype(np.int64), int(num_distinct))


def col_sum_all(col: np.ndarray) -> np.ndarray:
    """`colSumAll`: a one-element column holding the sum (the sequential sum of `sumAll`)."""
    vt = vt_of(col)
    total = full_kernel("sum", vt, vt)(col.reshape(-1, 1))
    return np.array([total], dtype=col.dtype)


def _calc(ufunc: np.ufunc):  # noqa: ANN202 - a kernel
    def kernel(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        common = np.result_type(a.dtype, b.dtype)
        if len(a) != len(b) and 1 not in (len(a), len(b)):
            raise DaphneRuntimeError(f"colCalc: the columns have different lengths ({len(a)} and {len(b)})")
        with np.errstate(over="ignore"):
            return ufunc(a.astype(common, copy=False), b.astype(common, copy=False))

    kernel.__name__ = f"col_calc_{ufunc.__name__}"
    return kernel


col_calc_sub = _calc(np.subtract)
col_calc_mul = _calc(np.multiply)


def pos_list_to_bitmap(pos: np.ndarray, num_rows: int, vt: str) -> np.ndarray:
    """`convertPosListToBitmap`: an n x 1 matrix of value type `vt`, 1 at the (ascending) positions, else 0."""
    p = as_dense(pos).ravel()
    if len(p) and int(p.max()) >= num_rows:
        raise DaphneRuntimeError(f"convertPosListToBitmap: a position is out of bounds for {num_rows} rows")
    bits = np.zeros(int(num_rows), dtype=dtype_of(vt))
    bits[p] = 1
    return bits.reshape(-1, 1)


def bitmap_to_pos_list(bits: np.ndarray) -> np.ndarray:
    """`convertBitmapToPosList`: the positions of the non-zero entries, as an n x 1 matrix of size type."""
    return _positions(as_dense(bits).ravel()).reshape(-1, 1)


# --- casts between columns and matrices, frames and scalars (the `cast` ops the columnar pass creates) ------------


def frame_to_column(F: object) -> np.ndarray:
    cols = F.columns  # type: ignore[attr-defined]
    if len(cols) != 1:
        raise DaphneRuntimeError(f"cast: only a single-column frame can be cast to a column, got {len(cols)} columns")
    return cols[0]


def matrix_to_column(X: np.ndarray, vt: str) -> np.ndarray:
    X = as_dense(X)
    if X.ndim != 2 or X.shape[1] != 1:
        raise DaphneRuntimeError(f"cast: only a single-column matrix can be cast to a column, got {X.shape}")
    return _with_vt(X.reshape(-1), vt)


def column_to_matrix(col: np.ndarray, vt: str) -> np.ndarray:
    return _with_vt(col, vt).reshape(-1, 1)


def column_to_scalar(col: np.ndarray, vt: str) -> object:
    if len(col) != 1:
        raise DaphneRuntimeError(f"cast: only a single-element column can be cast to a scalar, got {len(col)}")
    v = col[0]
    return cast_scalar(v.item() if isinstance(v, np.generic) else v, vt)


def column_to_column(col: np.ndarray, vt: str) -> np.ndarray:
    return _with_vt(col, vt)


def _with_vt(a: np.ndarray, vt: str) -> np.ndarray:
    from daphnec.runtime.values import cast_matrix

    return a if a.dtype == dtype_of(vt) else cast_matrix(a.reshape(-1, 1), vt).reshape(-1)
