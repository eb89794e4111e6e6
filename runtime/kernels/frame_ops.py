"""Frame kernels: indexing, casts between frames and matrices, label manipulation, cbind/rbind and DAPHNE's
extended relational algebra (`cartesian`, `innerJoin`, `semiJoin`, `groupJoin`, `groupSum`, set operations).

Semantics follow DAPHNE's kernels (`Cartesian.h`, `InnerJoin.h`, `SemiJoin.h`, `GroupJoin.h`, `Group.h`,
`SetColLabels*.h`, `ColBind.h`, `RowBind.h`, `CastObj.h`), generalised to every value type where DAPHNE only
instantiates a few. Where DAPHNE leaves an order unspecified (groupJoin iterates an `unordered_map`), the result
follows the left frame's row order. Key equality is C++ `==`: NaN keys never match.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from daphnec.dialects.frame_labels import is_star, star_positions, with_prefix
from daphnec.runtime.columns import Column, DictColumn
from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.frame import Frame, default_label
from daphnec.runtime.kernels import relational
from daphnec.runtime.kernels.positions import position, positions
from daphnec.runtime.memory import check_bytes
from daphnec.runtime.values import as_dense, cast_matrix, cast_scalar, dtype_of, vt_of

Selector = None | int | float | str | tuple | np.ndarray

_AXIS = ("row", "column")


# --- indexing ------------------------------------------------------------------------------------------------------


def create_frame(*args: object, n_cols: int) -> Frame:
    """`createFrame(c0, c1, ..., "l0", "l1", ...)` as the IR passes it: the `n_cols` columns, then their labels."""
    return Frame(list(args[:n_cols]), list(args[n_cols:]))  # type: ignore[arg-type]


def _shape_txt(F: Frame) -> str:
    return f"{F.nrow}x{F.ncol}"


def _position(name: str, p: object, axis: int, F: Frame) -> int:
    """One position (floats truncated toward zero, negative counts from the end), bounds-checked."""
    i = position(name, p, _AXIS[axis])
    n = F.shape[axis]
    j = i + n if i < 0 else i
    if not 0 <= j < n:
        raise DaphneRuntimeError(
            f"{name}: {_AXIS[axis]} index {i} is out of bounds for a frame of shape {_shape_txt(F)}"
        )
    return j


def _range(name: str, lo: object, hi: object, axis: int, F: Frame) -> slice:
    """[lo, hi) with omitted bounds meaning 0 / the end; negative bounds count from the end."""
    n = F.shape[axis]
    s = 0 if lo is None else position(name, lo, _AXIS[axis])
    e = n if hi is None else position(name, hi, _AXIS[axis])
    s2, e2 = (s + n if s < 0 else s), (e + n if e < 0 else e)
    for what, v, v2 in (("start", s, s2), ("end", e, e2)):
        if not 0 <= v2 <= n:
            raise DaphneRuntimeError(
                f"{name}: {_AXIS[axis]} range {what} {v} is out of bounds for a frame of shape {_shape_txt(F)}"
            )
    if s2 > e2:
        raise DaphneRuntimeError(f"{name}: {_AXIS[axis]} range {s}:{e} has its start after its end")
    return slice(s2, e2)


def _positions(name: str, sel: np.ndarray, axis: int, F: Frame) -> np.ndarray:
    """A position matrix (n x 1 or 1 x n; floats truncated) as bounds-checked int64 positions."""
    sel = as_dense(sel)
    if sel.ndim == 2 and sel.shape[0] != 1 and sel.shape[1] != 1:
        raise DaphneRuntimeError(f"{name}: a {_AXIS[axis]} position list must be a single column (or row)")
    flat = sel.ravel()
    if flat.dtype.kind not in "iuf":
        raise DaphneRuntimeError(f"{name}: {_AXIS[axis]} positions must be numbers, got {vt_of(sel)}")
    flat = positions(name, flat, _AXIS[axis])
    n = F.shape[axis]
    bad = (flat < 0) | (flat >= n)
    if bad.any():
        p = flat[np.flatnonzero(bad)[0]]
        raise DaphneRuntimeError(
            f"{name}: {_AXIS[axis]} index {int(p)} is out of bounds for a frame of shape {_shape_txt(F)}"
        )
    return flat.astype(np.int64)


def _row_index(name: str, sel: Selector, F: Frame) -> slice | np.ndarray:
    if sel is None:
        return slice(0, F.nrow)
    if isinstance(sel, tuple):
        return _range(name, sel[0], sel[1], 0, F)
    if isinstance(sel, np.ndarray) or getattr(sel, "format", None) == "csr":
        return _positions(name, sel, 0, F)  # type: ignore[arg-type]
    if isinstance(sel, str):
        raise DaphneRuntimeError(f"{name}: frame rows cannot be selected by label ('{sel}')")
    j = _position(name, sel, 0, F)
    return slice(j, j + 1)


def _col_positions(name: str, sel: Selector, F: Frame) -> list[int]:
    if sel is None:
        return list(range(F.ncol))
    if isinstance(sel, str):
        return star_positions(F.labels, sel) if is_star(sel) else [F.column_index(sel)]
    if isinstance(sel, tuple):
        return list(range(F.ncol))[_range(name, sel[0], sel[1], 1, F)]
    if isinstance(sel, np.ndarray) or getattr(sel, "format", None) == "csr":
        return _positions(name, sel, 1, F).tolist()  # type: ignore[arg-type]
    return [_position(name, sel, 1, F)]


def extract(F: Frame, rows: Selector = None, cols: Selector = None) -> Frame:
    """`F[rows, cols]`: always a frame (LanguageRef: indexing keeps the data type); columns may be given by label."""
    sub = F if cols is None else F.take_columns(_col_positions("extract", cols, F))
    return sub if rows is None else sub.take_rows(_row_index("extract", rows, F))


def filter_rows(F: Frame, bits: np.ndarray) -> Frame:
    """`F[[bits, ]]` and SQL's WHERE/HAVING: the rows whose entry in the column vector is non-zero (FilterRow.h
    on frames tests `sel[r]` for truth)."""
    bits = as_dense(bits)
    if not isinstance(bits, np.ndarray) or bits.ndim != 2 or 1 not in bits.shape or bits.size != F.nrow:
        got = f"{bits.shape[0]}x{bits.shape[1]}" if isinstance(bits, np.ndarray) and bits.ndim == 2 else "?"
        raise DaphneRuntimeError(
            f"filterRow: the bit vector ({got}) must have one entry per row of the frame ({_shape_txt(F)})"
        )
    flat = bits.ravel()
    if flat.dtype == object:
        raise DaphneRuntimeError("filterRow: the bit vector must be numeric")
    return F.take_rows(np.flatnonzero(flat))


def filter_cols(F: Frame, bits: np.ndarray) -> Frame:
    """`F[[, bits]]` is not supported on frames (DAPHNE's FilterColOp handles matrices only)."""
    raise DaphneRuntimeError("filterCol: selecting the columns of a frame by a bit vector is not supported")


# --- casts ---------------------------------------------------------------------------------------------------------


def frame_to_matrix(F: Frame, vt: str) -> np.ndarray:
    """`as.matrix<vt>(F)`: column-major to row-major, each value cast like C++ `static_cast` (CastObj.h)."""
    if F.ncol == 0:
        return np.empty((F.nrow, 0), dtype=dtype_of(vt))
    if F.ncol == 1:  # one column (SQL's extractCol + cast): a view, no copy
        return cast_matrix(F.column_at(0).reshape(-1, 1), vt)
    cols = [cast_matrix(c.reshape(-1, 1), vt) for c in F.columns]
    return np.ascontiguousarray(np.hstack(cols))


def matrix_to_frame(X: np.ndarray) -> Frame:
    """`as.frame(X)`: one column per matrix column, labelled `col_0`, `col_1`, ..."""
    X = as_dense(X)
    return Frame([X[:, j].copy() for j in range(X.shape[1])], who="as.frame", rows=X.shape[0])


def scalar_to_frame(x: object, vt: str) -> Frame:
    """`as.frame(x)` of a scalar: a 1x1 frame."""
    col = np.empty(1, dtype=dtype_of(vt))
    col[0] = cast_scalar(x, vt)
    return Frame([col], who="as.frame")


def frame_to_scalar(F: Frame, vt: str) -> object:
    """`as.scalar(F)`: the only value of a 1x1 frame, cast to `vt`."""
    if F.shape != (1, 1):
        raise DaphneRuntimeError(f"as.scalar: the frame must have exactly one element (1x1), but it is {_shape_txt(F)}")
    v = F.column_at(0)[0]
    return cast_scalar(v.item() if isinstance(v, np.generic) else v, vt)


def frame_to_frame(F: Frame, vts: Sequence[str]) -> Frame:
    """A frame with its columns cast to `vts` (joining frame types at a control-flow merge)."""
    pairs = zip(F.columns, vts, strict=True)
    cols = [c if vt_of(c) == vt else cast_matrix(c.reshape(-1, 1), vt)[:, 0] for c, vt in pairs]
    return Frame(cols, F.labels, who="cast")


# --- labels --------------------------------------------------------------------------------------------------------


def set_col_labels(F: Frame, *labels: str) -> Frame:
    """`setColLabels(F, labels...)`: one label per column (SetColLabels.h)."""
    if len(labels) != F.ncol:
        raise DaphneRuntimeError(
            f"setColLabels: the number of given labels ({len(labels)}) does not match the number of columns of the "
            f"given frame ({F.ncol})"
        )
    return F.with_labels(labels)


def set_col_labels_prefix(F: Frame, prefix: str) -> Frame:
    """`setColLabelsPrefix(F, prefix)`: `a` becomes `prefix.a`, `old.a` becomes `prefix.a`."""
    return F.with_labels([with_prefix(prefix, lbl) for lbl in F.labels])


# --- binding -------------------------------------------------------------------------------------------------------


def cbind(lhs: Frame, rhs: Frame) -> Frame:
    """`cbind(F, G)`: the columns of both frames side by side; labels must stay unique."""
    if lhs.nrow != rhs.nrow:
        raise DaphneRuntimeError(
            f"cbind: both input frames must have the same number of rows, got {lhs.nrow} and {rhs.nrow}"
        )
    return Frame(lhs.raw_columns + rhs.raw_columns, lhs.labels + rhs.labels, who="cbind")


def rbind(ups: Frame, lows: Frame) -> Frame:
    """`rbind(F, G)`: the rows of `lows` below those of `ups`; same schema and same labels (RowBind.h)."""
    if ups.ncol != lows.ncol:
        raise DaphneRuntimeError(
            f"rbind: the two operands must have the same number of columns, but ups has {ups.ncol} and lows has "
            f"{lows.ncol} columns"
        )
    if ups.schema != lows.schema:
        raise DaphneRuntimeError(f"rbind: ups and lows must have the same schema, got {ups.schema} and {lows.schema}")
    if ups.labels != lows.labels:
        raise DaphneRuntimeError(
            f"rbind: ups and lows must have the same column names, got {ups.labels} and {lows.labels}"
        )
    cols = [np.concatenate([a, b]) for a, b in zip(ups.columns, lows.columns, strict=True)]
    return Frame(cols, ups.labels, who="rbind")


def bind(lhs: object, rhs: object, kind: str) -> Frame:
    """cbind/rbind entry point for frames; mixing a frame with a matrix is an error."""
    if not (isinstance(lhs, Frame) and isinstance(rhs, Frame)):
        raise DaphneRuntimeError(f"{kind}: both arguments must be frames (or both matrices)")
    return cbind(lhs, rhs) if kind == "cbind" else rbind(lhs, rhs)


# --- joins ---------------------------------------------------------------------------------------------------------


def _key(F: Frame, label: str, who: str, side: str, encoded: bool = False) -> Column:
    """The key column `label`; with `encoded`, a dictionary-encoded str column as it is (runtime/columns.py)."""
    try:
        i = F.column_index(label)
        return F.raw_columns[i] if encoded and isinstance(F.raw_columns[i], DictColumn) else F.column_at(i)
    except DaphneRuntimeError as e:
        raise DaphneRuntimeError(
            f"{who}: the {side} frame has no column labeled '{label}' (labels: {', '.join(F.labels)})"
        ) from e


def match_pairs(lkeys: np.ndarray, rkeys: np.ndarray, who: str = "join") -> tuple[np.ndarray, np.ndarray]:
    """All (i, j) with lkeys[i] == rkeys[j], ordered by i then j (the nested loop of InnerJoin.h), by hashing."""
    return relational.equi_pairs(lkeys, rkeys, who)


def cartesian(lhs: Frame, rhs: Frame) -> Frame:
    """`cartesian(F, G)`: every row of F combined with every row of G (F's row order outermost)."""
    n, m = lhs.nrow, rhs.nrow
    width = sum(c.dtype.itemsize for c in (*lhs.columns, *rhs.columns)) + 16  # the columns and both row indices
    check_bytes("cartesian", f"a frame of {n * m} rows", n * m * width)
    return relational.joined(lhs, np.repeat(np.arange(n), m), rhs, np.tile(np.arange(m), n), "cartesian")


def inner_join(lhs: Frame, rhs: Frame, lhs_on: str, rhs_on: str, num_row_res: int = -1) -> Frame:
    """`innerJoin(F, G, fOn, gOn)`: all columns of F then of G for each pair of rows with equal keys.

    `num_row_res` is DAPHNE's optional size hint for the result (-1 = unknown); it does not change the result.
    """
    lk, rk = _key(lhs, lhs_on, "innerJoin", "left", True), _key(rhs, rhs_on, "innerJoin", "right", True)
    li, ri = relational.equi_pairs(lk, rk, "innerJoin")
    return relational.joined(lhs, li, rhs, ri, "innerJoin")


def semi_join(lhs: Frame, rhs: Frame, lhs_on: str, rhs_on: str, num_row_res: int = -1) -> tuple[Frame, np.ndarray]:
    """`semiJoin(F, G, fOn, gOn)` (SemiJoin.h): a one-column frame (label `fOn`) of F's keys that occur in G's key
    column, in F's order, and the n x 1 positions (size type) of those rows in F."""
    lk = _key(lhs, lhs_on, "semiJoin", "left")
    li, _ = match_pairs(lk, _key(rhs, rhs_on, "semiJoin", "right"), "semiJoin")
    hits = np.unique(li)
    return Frame([lk[hits]], [lhs_on], who="semiJoin"), hits.astype(np.uint64).reshape(-1, 1)


def group_join(lhs: Frame, rhs: Frame, lhs_on: str, rhs_on: str, rhs_agg: str) -> tuple[Frame, np.ndarray]:
    """`groupJoin(F, G, fOn, gOn, gAgg)` (GroupJoin.h): inner join on fOn == gOn, grouped on fOn, summing gAgg.

    Results: a frame [fOn, SUM(gAgg)] with one row per distinct F key that has a match (in F's order of first
    occurrence), and the n x 1 positions (size type) of the first F row of each such key.
    """
    lk = _key(lhs, lhs_on, "groupJoin", "left")
    rk = _key(rhs, rhs_on, "groupJoin", "right")
    agg = _key(rhs, rhs_agg, "groupJoin", "right")
    if agg.dtype == object:
        raise DaphneRuntimeError(f"groupJoin: cannot sum the column '{rhs_agg}' of value type str")
    first = _first_occurrences(lk)
    li, ri = match_pairs(lk[first], rk, "groupJoin")
    sums = np.zeros(len(first), dtype=agg.dtype)
    np.add.at(sums, li, agg[ri])
    hit = np.zeros(len(first), dtype=bool)
    hit[li] = True
    res = Frame([lk[first][hit], sums[hit]], [lhs_on, f"SUM({rhs_agg})"], who="groupJoin")
    return res, first[hit].astype(np.uint64).reshape(-1, 1)


def _first_occurrences(keys: np.ndarray) -> np.ndarray:
    """Positions of the first occurrence of each distinct key, in row order (NaNs stay distinct, as in C++)."""
    if len(keys) == 0:
        return np.zeros(0, dtype=np.int64)
    opts = {"equal_nan": False} if keys.dtype.kind == "f" else {}
    _, first = np.unique(keys, return_index=True, **opts)
    return np.sort(first).astype(np.int64)


# --- grouping ------------------------------------------------------------------------------------------------------


def group_ids(cols: Sequence[np.ndarray], n: int) -> tuple[np.ndarray, np.ndarray]:
    """Group id per row for the key columns (groups numbered in ascending lexicographic key order) and the first
    row of each group."""
    gid, ngroups, _ = relational.group_codes(cols, n)
    return gid, relational.first_rows(gid, ngroups)


def group(F: Frame, *labels: str, n_keys: int, funcs: Sequence[str]) -> Frame:
    """DAPHNE's GroupOp on frames (`groupSum(F, keys..., col)` uses SUM): one row per distinct key combination,
    in ascending key order; key columns keep their labels, aggregates are labelled `FUNC(col)`."""
    return relational.group_frame(F, labels[:n_keys], labels[n_keys:], funcs)


# --- set operations ------------------------------------------------------------------------------------------------


def _row_ids(lhs: Frame, rhs: Frame, who: str) -> tuple[Frame, np.ndarray]:
    """The rows of lhs then rhs as one frame, plus an id per row (equal rows, equal ids)."""
    if lhs.ncol != rhs.ncol:
        raise DaphneRuntimeError(
            f"{who}: both frames must have the same number of columns, got {lhs.ncol} and {rhs.ncol}"
        )
    if lhs.schema != rhs.schema:
        raise DaphneRuntimeError(
            f"{who}: both frames must have the same column value types, got "
            f"[{', '.join(lhs.schema)}] and [{', '.join(rhs.schema)}]"
        )
    both = Frame([np.concatenate([a, b]) for a, b in zip(lhs.columns, rhs.columns, strict=True)], lhs.labels, who=who)
    gid, _ = group_ids(both.columns, both.nrow)
    return both, gid


def _distinct(both: Frame, gid: np.ndarray, keep: np.ndarray) -> Frame:
    """The kept rows, each distinct row once, in order of first occurrence."""
    cand = np.flatnonzero(keep)
    _, first = np.unique(gid[cand], return_index=True)
    return both.take_rows(np.sort(cand[first]))


def merge(lhs: Frame, rhs: Frame) -> Frame:
    """`merge(F, G)`: union with set semantics (distinct rows of F then of G, first occurrence order)."""
    both, gid = _row_ids(lhs, rhs, "merge")
    return _distinct(both, gid, np.ones(len(gid), dtype=bool))


def intersect(lhs: Frame, rhs: Frame) -> Frame:
    """`intersect(F, G)`: the distinct rows of F that also occur in G (set semantics, F's order)."""
    both, gid = _row_ids(lhs, rhs, "intersect")
    n = lhs.nrow
    keep = np.zeros(len(gid), dtype=bool)
    keep[:n] = np.isin(gid[:n], gid[n:])
    return _distinct(both, gid, keep)


def except_(lhs: Frame, rhs: Frame) -> Frame:
    """`except(F, G)`: the distinct rows of F that do not occur in G (set semantics, F's order)."""
    both, gid = _row_ids(lhs, rhs, "except")
    n = lhs.nrow
    keep = np.zeros(len(gid), dtype=bool)
    keep[:n] = ~np.isin(gid[:n], gid[n:])
    return _distinct(both, gid, keep)


__all__ = [
    "bind", "cartesian", "cbind", "default_label", "except_", "extract", "filter_cols",
    "filter_rows", "frame_to_frame", "frame_to_matrix", "frame_to_scalar", "group", "group_join", "inner_join",
    "intersect", "match_pairs", "matrix_to_frame", "merge", "rbind", "scalar_to_frame", "semi_join",
    "set_col_labels", "set_col_labels_prefix",
]  # fmt: skip
