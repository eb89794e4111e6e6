"""Relational kernels on columns: key encoding, grouping, grouped aggregation, equi- and theta-join pairs.

Everything is vectorised: keys are encoded to dense integer codes (a direct-address table for small integer
ranges, pyarrow's hash-based `dictionary_encode` otherwise, which also covers strings), so that grouping and
joining never loop over rows in Python. Results follow DAPHNE's kernels (src/runtime/local/kernels/Group.h,
InnerJoin.h, ThetaJoin.h, Order.h): groups in ascending key order, join pairs left-major with right matches in
right order, aggregates accumulated in row order (so float sums are bit-identical to DAPHNE's sequential
`std::accumulate`). Key equality is C++ `==`: 0.0 equals -0.0; NaN keys group together (sorted last) and never
join.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from daphnec.dialects.op_kinds import GROUP_AGGREGATES
from daphnec.runtime.columns import Column, DictColumn, materialize
from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.frame import Frame
from daphnec.runtime.values import vt_of

_DIRECT_LIMIT = 1 << 22
"""Integer keys whose value range is at most this (or 4x the rows) are encoded through a direct-address table."""
_COMBINED_LIMIT = 1 << 62
"""Combined (mixed-radix) group keys must stay below this to fit an int64."""


# --- key encoding --------------------------------------------------------------------------------------------------


def arrow_array(col: np.ndarray):  # noqa: ANN202 - a pyarrow array
    import pyarrow as pa

    return pa.array(col, type=pa.string()) if col.dtype == object else pa.array(col)


def canonical_keys(col: np.ndarray) -> np.ndarray:
    """Key values as compared by C++ `==`: -0.0 is 0.0 (adding 0.0 maps -0.0 to 0.0); bools as integers."""
    if col.dtype.kind == "f":
        return col + col.dtype.type(0)
    if col.dtype.kind == "b":
        return col.view(np.uint8)
    return col


def _int_range(col: np.ndarray) -> tuple[int, int] | None:
    """(min, max) of an integer column whose range is small enough for a direct-address table, else None."""
    if col.dtype.kind not in "iu" or len(col) == 0:
        return None
    lo, hi = int(col.min()), int(col.max())
    return (lo, hi) if hi - lo < max(_DIRECT_LIMIT, 4 * len(col)) else None


def dense_codes(col: Column) -> tuple[np.ndarray, np.ndarray]:
    """(codes, uniques): equal values share a code, codes follow ascending value order (NaN last), and
    `uniques[codes]` gives the values back. A dictionary-encoded str column is not hashed again."""
    if isinstance(col, DictColumn):
        return col.dense()
    col = canonical_keys(col)
    rng = _int_range(col)
    if rng is not None:
        lo, hi = rng
        offs = (col - lo).astype(np.int64)
        present = np.bincount(offs, minlength=hi - lo + 1) > 0
        rank = np.cumsum(present) - 1
        return rank[offs], (np.flatnonzero(present) + lo).astype(col.dtype)
    if len(col) == 0:
        return np.zeros(0, dtype=np.int64), col[:0]
    enc = arrow_array(col).dictionary_encode()
    idx = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    dictionary = enc.dictionary.to_numpy(zero_copy_only=False)
    if col.dtype == object:
        dictionary = dictionary.astype(object)
    order = np.argsort(dictionary, kind="stable")
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return rank[idx], dictionary[order].astype(col.dtype, copy=False)


def group_codes(cols: Sequence[Column], n: int) -> tuple[np.ndarray, int, list[np.ndarray]]:
    """Group ids for rows keyed by `cols` (groups numbered in ascending lexicographic key order), the number of
    groups and, per key column, the key of every group."""
    if not cols:
        return np.zeros(n, dtype=np.int64), (1 if n else 0), []
    encoded = [c.keys() if isinstance(c, DictColumn) else dense_codes(c) for c in cols]
    key = encoded[0][0].astype(np.int64, copy=False)
    cards = [len(u) for _, u in encoded]
    combined = 1
    for card in cards:
        combined *= max(card, 1)
    if combined >= _COMBINED_LIMIT:  # re-encode pairwise; rare (huge cardinalities)
        return _group_codes_pairwise(encoded, n)
    for (codes, _), card in zip(encoded[1:], cards[1:]):
        key = key * card + codes
    if combined <= max(_DIRECT_LIMIT, 4 * n):
        present = np.bincount(key, minlength=combined) > 0
        rank = np.cumsum(present) - 1
        groups = np.flatnonzero(present)
        gid = rank[key]
    else:
        groups, gid = np.unique(key, return_inverse=True)
        gid = gid.reshape(-1)
    return gid, len(groups), _decode(groups, encoded, cards)


def _decode(groups: np.ndarray, encoded: list[tuple[np.ndarray, np.ndarray]], cards: list[int]) -> list[np.ndarray]:
    """The key values of each group from its mixed-radix combined key."""
    out = []
    rest = groups
    for (_, uniq), card in zip(reversed(encoded), reversed(cards)):
        out.append(uniq[rest % card] if card else uniq[:0])
        rest = rest // max(card, 1)
    return out[::-1]


def _group_codes_pairwise(encoded: list[tuple[np.ndarray, np.ndarray]], n: int) -> tuple[np.ndarray, int, list]:
    codes = np.stack([c for c, _ in encoded], axis=1)
    uniq, first, gid = np.unique(codes, axis=0, return_index=True, return_inverse=True)
    del first
    keys = [u[uniq[:, i]] for i, (_, u) in enumerate(encoded)]
    return gid.reshape(-1), len(uniq), keys


def first_rows(gid: np.ndarray, ngroups: int) -> np.ndarray:
    """The first row (in input order) of every group."""
    order = np.argsort(gid, kind="stable")
    starts = np.searchsorted(gid[order], np.arange(ngroups))
    return order[starts]


# --- grouped aggregation -------------------------------------------------------------------------------------------


def aggregate(func: str, col: np.ndarray, gid: np.ndarray, ngroups: int) -> np.ndarray:
    """One aggregate per group (Group.h's `aggregate`; the functions are dialects/op_kinds.py's GROUP_AGGREGATES):
    COUNT as si64, AVG as f64, SUM/MIN/MAX in the column's type; on str columns MIN/MAX compare byte-wise, SUM
    yields the group's first string and AVG fails."""
    if func not in GROUP_AGGREGATES:
        raise DaphneRuntimeError(f"aggregate: unknown aggregation function '{func}'")
    if func == "COUNT":
        return np.bincount(gid, minlength=ngroups).astype(np.int64)
    if col.dtype == object:
        return _aggregate_str(func, col, gid, ngroups)
    if func == "SUM":
        return grouped_sum(col, gid, ngroups)
    if func == "AVG":
        sums = np.bincount(gid, weights=col.astype(np.float64), minlength=ngroups)
        with np.errstate(invalid="ignore", divide="ignore"):
            return sums / np.bincount(gid, minlength=ngroups)
    return _grouped_extreme(func, col, gid, ngroups)


def grouped_sum(col: np.ndarray, gid: np.ndarray, ngroups: int) -> np.ndarray:
    """Sums in row order: float64 through bincount (sequential, like std::accumulate); integers through bincount
    when every partial sum is exact in a double, else with wrapping integer adds."""
    if col.dtype == np.float64:  # (bincount of no rows is int64 even with float weights)
        return np.bincount(gid, weights=col, minlength=ngroups).astype(np.float64, copy=False)
    if col.dtype.kind in "iu" and len(col):
        bound = max(abs(int(col.min())), abs(int(col.max()))) * len(col)
        if bound < 2**53:
            return np.bincount(gid, weights=col.astype(np.float64), minlength=ngroups).astype(col.dtype)
    out = np.zeros(ngroups, dtype=col.dtype)
    np.add.at(out, gid, col)
    return out


def _grouped_extreme(func: str, col: np.ndarray, gid: np.ndarray, ngroups: int) -> np.ndarray:
    if col.dtype.kind == "f":
        init = np.inf if func == "MIN" else -np.inf
    elif col.dtype.kind == "b":
        init = func == "MIN"
    else:
        info = np.iinfo(col.dtype)
        init = info.max if func == "MIN" else info.min
    out = np.full(ngroups, init, dtype=col.dtype)
    (np.minimum if func == "MIN" else np.maximum).at(out, gid, col)
    return out


def _aggregate_str(func: str, col: np.ndarray, gid: np.ndarray, ngroups: int) -> np.ndarray:
    if func == "AVG":
        raise DaphneRuntimeError("aggregate: AVG aggregation is not supported for these value types.")
    if func == "SUM":  # the str/str specialisation of Group.h's aggregate: the group's first value
        return col[first_rows(gid, ngroups)]
    codes, uniq = dense_codes(col)
    best = np.full(ngroups, len(uniq) if func == "MIN" else -1, dtype=np.int64)
    (np.minimum if func == "MIN" else np.maximum).at(best, gid, codes)
    return uniq[best] if ngroups else col[:0]


def group_frame(F: Frame, keys: Sequence[str], aggs: Sequence[str], funcs: Sequence[str]) -> Frame:
    """DAPHNE's GroupOp: one row per distinct key combination in ascending key order; key columns keep their
    labels, aggregates are labelled `FUNC(col)`."""
    from daphnec.dialects.frame_labels import group_key_labels

    keys = group_key_labels(F.labels, keys, aggs)
    key_cols = [_key_column(F, _col_idx(F, k, "group")) for k in keys]
    agg_cols = [F.column_at(_col_idx(F, a, "group")) for a in aggs]
    gid, ngroups, key_values = group_codes(key_cols, F.nrow)
    cols = [v.astype(c.dtype, copy=False) for v, c in zip(key_values, key_cols)]
    cols += [aggregate(f, c, gid, ngroups) for f, c in zip(funcs, agg_cols)]
    return Frame(cols, [*keys, *(f"{f}({a})" for f, a in zip(funcs, aggs))], who="group")


def _key_column(F: Frame, i: int) -> Column:
    """A grouping key: dictionary-encoded strings as they are (grouped by their codes), else the array."""
    c = F.raw_columns[i]
    return c if isinstance(c, DictColumn) else F.column_at(i)


# --- labels --------------------------------------------------------------------------------------------------------


def _col_idx(F: Frame, label: str, who: str) -> int:
    """DAPHNE's `Frame::getColumnIdx` with its message (the first five labels, then how many more)."""
    try:
        return F.labels.index(label)
    except ValueError:
        shown = ", ".join(f"'{lbl}'" for lbl in F.labels[:5])
        more = f" (plus {len(F.labels) - 5} more)" if len(F.labels) > 5 else ""
        raise DaphneRuntimeError(f"{who}: column label not found: '{label}', available labels: {shown}{more}") from None


def get_col_idx(F: Frame, label: str) -> int:
    """`daphne.getColIdx`: the position of the column labelled `label`."""
    return _col_idx(F, label, "getColIdx")


# --- joins ---------------------------------------------------------------------------------------------------------


def shared_codes(lk: Column, rk: Column) -> tuple[np.ndarray, np.ndarray]:
    """Two dictionary-encoded str key columns as integer codes of one dictionary (the left one's; right strings
    it lacks get codes past it), so that equal strings have equal codes; other columns as arrays."""
    if not (isinstance(lk, DictColumn) and isinstance(rk, DictColumn)):
        return materialize(lk), materialize(rk)
    import pyarrow as pa
    import pyarrow.compute as pc

    left = pa.array(lk.dictionary, type=pa.string())
    pos = pc.index_in(pa.array(rk.dictionary, type=pa.string()), value_set=left)
    right = pos.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    missing = right < 0
    right[missing] = len(left) + np.arange(np.count_nonzero(missing))
    return lk.codes.astype(np.int64), right[rk.codes]


def comparable_keys(lk: np.ndarray, rk: np.ndarray, who: str) -> tuple[np.ndarray, np.ndarray]:
    """Two key columns in one representation: numbers of different types compare by value."""
    if (lk.dtype == object) != (rk.dtype == object):
        raise DaphneRuntimeError(f"{who}: cannot compare a {vt_of(lk)} key column with a {vt_of(rk)} key column")
    if lk.dtype != rk.dtype and lk.dtype != object:
        common = np.result_type(lk.dtype, rk.dtype)
        return lk.astype(common), rk.astype(common)
    return lk, rk


def equi_pairs(lkeys: Column, rkeys: Column, who: str = "innerJoin") -> tuple[np.ndarray, np.ndarray]:
    """All (i, j) with lkeys[i] == rkeys[j], ordered by i then j (InnerJoin.h's order); unique right keys take
    a hash lookup (a direct-address table for small integer ranges), duplicates a sort of the right side.
    Dictionary-encoded str keys join by their codes."""
    lk, rk = comparable_keys(*shared_codes(lkeys, rkeys), who)
    lk, rk = canonical_keys(lk), canonical_keys(rk)
    hit = unique_lookup(lk, rk)
    if hit is not None:
        li = np.flatnonzero(hit >= 0)
        return li, hit[li]
    return _sorted_pairs(lk, rk)


def unique_lookup(lk: np.ndarray, rk: np.ndarray) -> np.ndarray | None:
    """For each left key the position of the equal right key (-1: none), or None if right keys repeat."""
    rng = _int_range(rk)
    if rng is not None:
        lo, hi = rng
        table = np.full(hi - lo + 1, -1, dtype=np.int64)
        table[(rk - lo).astype(np.int64)] = np.arange(len(rk))
        if np.count_nonzero(table >= 0) != len(rk):
            return None
        inside = (lk >= lo) & (lk <= hi)
        out = np.full(len(lk), -1, dtype=np.int64)
        out[inside] = table[(lk[inside] - lo).astype(np.int64)]
        return out
    if len(rk) == 0 or len(lk) == 0:
        return np.full(len(lk), -1, dtype=np.int64)
    import pyarrow.compute as pc

    right = arrow_array(rk)
    if pc.count_distinct(right, mode="all").as_py() != len(rk):
        return None
    idx = pc.index_in(arrow_array(lk), value_set=right)
    out = idx.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    if lk.dtype.kind == "f":
        out[np.isnan(lk)] = -1  # C++ `==`: NaN matches nothing
    return out


def _sorted_pairs(lk: np.ndarray, rk: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(rk, kind="stable")
    rs = rk[order]
    lo = np.searchsorted(rs, lk, side="left")
    hi = np.searchsorted(rs, lk, side="right")
    counts = hi - lo
    if lk.dtype.kind == "f":
        counts[np.isnan(lk)] = 0
    return _expand(lo, counts, order)


def _expand(lo: np.ndarray, counts: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (i, order[lo[i] + k]) for k < counts[i]: left row i with a run of the sorted right side."""
    li = np.repeat(np.arange(len(lo), dtype=np.int64), counts)
    firsts = np.cumsum(counts) - counts
    offsets = np.arange(len(li), dtype=np.int64) - np.repeat(firsts, counts)
    return li, order[np.repeat(lo, counts) + offsets].astype(np.int64)


_CMP = {
    "Equal": np.equal,
    "NotEqual": np.not_equal,
    "LessThan": np.less,
    "LessEqual": np.less_equal,
    "GreaterThan": np.greater,
    "GreaterEqual": np.greater_equal,
}


def _theta_keys(lk: np.ndarray, rk: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """ThetaJoin.h casts the right key to the left key's type; strings compare with strings only."""
    if (lk.dtype == object) != (rk.dtype == object):
        raise DaphneRuntimeError(f"thetaJoin: cannot compare a {vt_of(lk)} column with a {vt_of(rk)} column")
    return lk, rk if rk.dtype == lk.dtype or lk.dtype == object else rk.astype(lk.dtype)


def theta_pairs(
    lkeys: Sequence[np.ndarray], rkeys: Sequence[np.ndarray], cmps: Sequence[str]
) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (i, j) satisfying every condition, left-major then right order: the first condition through a sort
    of the right side, the others as a vectorised filter of those pairs."""
    lk, rk = _theta_keys(lkeys[0], rkeys[0])
    li, ri = _first_condition(lk, rk, cmps[0])
    for lcol, rcol, cmp in zip(lkeys[1:], rkeys[1:], cmps[1:]):
        a, b = _theta_keys(lcol, rcol)
        keep = _CMP[cmp](a[li], b[ri]).astype(bool)
        li, ri = li[keep], ri[keep]
    return li, ri


def _first_condition(lk: np.ndarray, rk: np.ndarray, cmp: str) -> tuple[np.ndarray, np.ndarray]:
    if cmp == "Equal":
        return _sorted_pairs(canonical_keys(lk), canonical_keys(rk))
    if cmp == "NotEqual" or len(lk) == 0 or len(rk) == 0:
        li, ri = np.nonzero(_CMP[cmp](lk[:, None], rk[None, :]))
        return li.astype(np.int64), ri.astype(np.int64)
    order = np.argsort(rk, kind="stable")
    rs = rk[order]
    valid = ~np.isnan(rs) if rs.dtype.kind == "f" else np.ones(len(rs), dtype=bool)
    nvalid = int(np.count_nonzero(valid))  # NaNs sort last and satisfy no comparison
    side = {"LessThan": "right", "LessEqual": "left", "GreaterThan": "left", "GreaterEqual": "right"}[cmp]
    cut = np.searchsorted(rs[:nvalid], lk, side=side)
    lo, hi = (cut, np.full(len(lk), nvalid)) if cmp in ("LessThan", "LessEqual") else (np.zeros(len(lk), int), cut)
    counts = hi - lo
    if lk.dtype.kind == "f":
        counts[np.isnan(lk)] = 0
    li, ri = _expand(lo, counts, order)
    perm = np.lexsort((ri, li))  # within a left row, right rows in their original order
    return li[perm], ri[perm]


def theta_join(lhs: Frame, rhs: Frame, *labels: str, cmps: Sequence[str]) -> Frame:
    """`daphne.thetaJoin`: all columns of lhs then rhs for every pair of rows satisfying all conditions."""
    k = len(cmps)
    lkeys = [lhs.column_at(_col_idx(lhs, lbl, "thetaJoin")) for lbl in labels[:k]]
    rkeys = [rhs.column_at(_col_idx(rhs, lbl, "thetaJoin")) for lbl in labels[k:]]
    li, ri = theta_pairs(lkeys, rkeys, cmps)
    return joined(lhs, li, rhs, ri, "thetaJoin")


def joined(lhs: Frame, li: np.ndarray, rhs: Frame, ri: np.ndarray, who: str) -> Frame:
    """All columns of lhs at rows `li` then of rhs at rows `ri`, gathered when read (runtime/columns.py): a query
    that reads few of the joined columns gathers only those."""
    cols = lhs.take_rows(li).raw_columns + rhs.take_rows(ri).raw_columns
    return Frame(cols, lhs.labels + rhs.labels, who=who)


# --- grouped aggregation in a pipeline (`fuse-filter-agg`: daphne.groupIds, groupedSum, groupResult) ----------------


FUSED_GROUPS = 1 << 16
"""Key spaces up to this size number the groups by the mixed-radix key itself (every combination an id, empty ones
dropped by `group_result`): no pass to compact them."""


def fused_group_ids(F: Frame, *labels: str) -> tuple[np.ndarray, Frame]:
    """Every row's group id (n x 1 si64, ids in ascending key order, as `group_frame` orders the groups) and the
    keys of each id (a frame with the key columns' labels). A small key space is numbered as it is (three in-place
    passes over the codes); a large one as `group_codes` numbers the groups present."""
    key_cols = [_key_column(F, _col_idx(F, k, "group")) for k in labels]
    encoded = [c.keys() if isinstance(c, DictColumn) else dense_codes(c) for c in key_cols]
    cards = [len(u) for _, u in encoded]
    space = int(np.prod([max(c, 1) for c in cards]))
    if space <= FUSED_GROUPS:
        ids = np.empty((F.nrow, 1), dtype=np.int64)
        ids[:, 0] = encoded[0][0]
        for (codes, _), card in zip(encoded[1:], cards[1:]):
            ids *= card
            ids[:, 0] += codes
        key_values = _decode(np.arange(space), encoded, cards)
    else:
        gid, _, key_values = group_codes(key_cols, F.nrow)
        ids = np.ascontiguousarray(gid.astype(np.int64, copy=False).reshape(-1, 1))
    keys = Frame([v.astype(c.dtype, copy=False) for v, c in zip(key_values, key_cols)], list(labels), who="group")
    return ids, keys


def grouped_sum_block(ids: np.ndarray, values: np.ndarray, ngroups: int) -> np.ndarray:
    """Per group id the sum of `values` over these rows (one task's partial sums, in row order), ngroups x 1."""
    g = int(ngroups)
    out = grouped_sum(np.ascontiguousarray(values[:, 0]), ids[:, 0], g) if len(ids) else np.zeros(g, values.dtype)
    return out.astype(values.dtype, copy=False).reshape(g, 1)


def group_result(
    keys: Frame, count: np.ndarray, *aggs: np.ndarray, funcs: Sequence[str], labels: Sequence[str]
) -> Frame:
    """`group_frame`'s result from grouped sums: the groups that have rows, SUM as summed, AVG as the f64 sum over
    the count (as `aggregate` divides), COUNT as si64."""
    counts = count[:, 0]
    present = np.flatnonzero(counts > 0)
    cols = [c[present] for c in keys.columns]
    for f, a in zip(funcs, aggs, strict=True):
        col = a[present, 0]
        if f == "AVG":
            with np.errstate(invalid="ignore", divide="ignore"):
                col = col / counts[present]
        elif f == "COUNT":
            col = col.astype(np.int64, copy=False)
        cols.append(col)
    return Frame(cols, list(labels), who="group")
