"""Relational and columnar kernels against naive row-by-row definitions (DAPHNE's nested loops and sorts), on
random keys of every kind: integers (small and wide ranges), floats with NaN and -0.0, and strings."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.frame import Frame
from daphnec.runtime.kernels import columnar, relational

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))

small_ints = st.lists(st.integers(-4, 4), max_size=30).map(lambda v: np.array(v, dtype=np.int64))
wide_ints = st.lists(st.sampled_from([-(2**62), -5, 0, 7, 2**40, 2**62]), max_size=30).map(
    lambda v: np.array(v, dtype=np.int64)
)
floats = st.lists(st.sampled_from([0.0, -0.0, 1.5, -2.25, math.nan, 1e300]), max_size=30).map(
    lambda v: np.array(v, dtype=np.float64)
)
strings = st.lists(st.sampled_from(["", "a", "B", "ab", "b"]), max_size=30).map(lambda v: np.array(v, dtype=object))
keys = st.one_of(small_ints, wide_ints, floats, strings)


def same_kind(a: np.ndarray) -> st.SearchStrategy[np.ndarray]:
    return {np.dtype(np.int64): st.one_of(small_ints, wide_ints), np.dtype(np.float64): floats}.get(a.dtype, strings)


def naive_pairs(lk: np.ndarray, rk: np.ndarray, cmp) -> list[tuple[int, int]]:  # noqa: ANN001
    return [(i, j) for i in range(len(lk)) for j in range(len(rk)) if cmp(lk[i], rk[j])]


@SETTINGS
@given(data=st.data(), lk=keys)
def test_equi_pairs(data: st.DataObject, lk: np.ndarray) -> None:
    rk = data.draw(same_kind(lk))
    li, ri = relational.equi_pairs(lk, rk)
    assert list(zip(li.tolist(), ri.tolist())) == naive_pairs(lk, rk, lambda a, b: a == b)


@SETTINGS
@given(data=st.data(), lk=keys)
def test_unique_right_keys_take_the_hash_path(data: st.DataObject, lk: np.ndarray) -> None:
    rk = np.array(list(dict.fromkeys(data.draw(same_kind(lk)).tolist())), dtype=lk.dtype)
    rk = rk[~np.isnan(rk)] if rk.dtype.kind == "f" else rk
    li, ri = relational.equi_pairs(lk, rk)
    assert list(zip(li.tolist(), ri.tolist())) == naive_pairs(lk, rk, lambda a, b: a == b)


OPS = {
    "Equal": lambda a, b: a == b,
    "NotEqual": lambda a, b: a != b,
    "LessThan": lambda a, b: a < b,
    "LessEqual": lambda a, b: a <= b,
    "GreaterThan": lambda a, b: a > b,
    "GreaterEqual": lambda a, b: a >= b,
}


@SETTINGS
@given(data=st.data(), lk=keys, cmps=st.lists(st.sampled_from(list(OPS)), min_size=1, max_size=3))
def test_theta_pairs(data: st.DataObject, lk: np.ndarray, cmps: list[str]) -> None:
    rk = data.draw(same_kind(lk))
    li, ri = relational.theta_pairs([lk] * len(cmps), [rk] * len(cmps), cmps)
    expect = naive_pairs(lk, rk, lambda a, b: all(OPS[c](a, b) for c in cmps))
    assert list(zip(li.tolist(), ri.tolist())) == expect


def _key(v: object) -> tuple:
    """The order DAPHNE's sort gives (numbers by value, NaN last, strings byte-wise); -0.0 equals 0.0."""
    if isinstance(v, float):
        return (1, 0.0) if math.isnan(v) else (0, v + 0.0)
    return (0, v)


@SETTINGS
@given(cols=st.lists(keys, min_size=1, max_size=3))
def test_group_codes(cols: list[np.ndarray]) -> None:
    n = min(len(c) for c in cols)
    cols = [c[:n] for c in cols]
    gid, ngroups, values = relational.group_codes(cols, n)
    rows = [tuple(_key(c[i]) for c in cols) for i in range(n)]
    distinct = sorted(set(rows))
    assert ngroups == len(distinct)
    assert [distinct[g] for g in gid.tolist()] == rows
    assert [tuple(_key(v[g]) for v in values) for g in range(ngroups)] == distinct


@SETTINGS
@given(k=small_ints, data=st.data())
def test_aggregates(k: np.ndarray, data: st.DataObject) -> None:
    x = np.array(data.draw(st.lists(st.integers(-9, 9).map(lambda i: i / 4), min_size=len(k), max_size=len(k))))
    gid, ng, _ = relational.group_codes([k], len(k))
    for g in range(ng):
        seg = x[gid == g]
        assert relational.aggregate("SUM", x, gid, ng)[g] == sum(seg.tolist())
        assert relational.aggregate("MIN", x, gid, ng)[g] == seg.min()
        assert relational.aggregate("MAX", x, gid, ng)[g] == seg.max()
        assert relational.aggregate("AVG", x, gid, ng)[g] == sum(seg.tolist()) / len(seg)
        assert relational.aggregate("COUNT", x, gid, ng)[g] == len(seg)


def test_string_aggregates() -> None:
    k = np.array([2, 1, 2, 1])
    s = np.array(["q", "z", "a", "b"], dtype=object)
    gid, ng, _ = relational.group_codes([k], 4)
    assert relational.aggregate("MIN", s, gid, ng).tolist() == ["b", "a"]
    assert relational.aggregate("MAX", s, gid, ng).tolist() == ["z", "q"]
    assert relational.aggregate("SUM", s, gid, ng).tolist() == ["z", "q"]  # the group's first value
    with pytest.raises(DaphneRuntimeError, match="AVG aggregation is not supported"):
        relational.aggregate("AVG", s, gid, ng)


def test_wrapping_integer_sums() -> None:
    x = np.array([2**62, 2**62, 1], dtype=np.int64)
    assert relational.aggregate("SUM", x, np.zeros(3, dtype=np.int64), 1).tolist() == [-(2**63) + 1]


def test_group_frame_star_keys() -> None:
    F = Frame([np.array([2, 1, 2]), np.array(["b", "a", "b"], dtype=object), np.array([1.0, 2.0, 3.0])],
              ["t.k", "t.s", "u.v"])  # fmt: skip
    G = relational.group_frame(F, ["*"], [], [])
    assert G.labels == ["t.k", "t.s", "u.v"] and G.nrow == 3
    H = relational.group_frame(F, ["t.*"], ["u.v"], ["SUM"])
    assert H.labels == ["t.k", "t.s", "SUM(u.v)"] and H.columns[2].tolist() == [2.0, 4.0]


def test_get_col_idx_message() -> None:
    F = Frame([np.zeros(1)] * 7, [f"c{i}" for i in range(7)])
    assert relational.get_col_idx(F, "c3") == 3
    with pytest.raises(DaphneRuntimeError, match=r"'c0', 'c1', 'c2', 'c3', 'c4' \(plus 2 more\)"):
        relational.get_col_idx(F, "zz")


# --- columnar kernels ------------------------------------------------------------------------------------------------


@SETTINGS
@given(lk=keys, data=st.data())
def test_col_join_is_n_to_1_last_wins(lk: np.ndarray, data: st.DataObject) -> None:
    rk = data.draw(same_kind(lk))
    lp, rp = columnar.col_join(lk, rk, -1)
    expect = []
    for i, a in enumerate(lk.tolist()):
        hits = [j for j, b in enumerate(rk.tolist()) if a == b]
        if hits:
            expect.append((i, hits[-1]))
    assert list(zip(lp.tolist(), rp.tolist())) == expect
    assert columnar.col_semi_join(lk, rk, -1).tolist() == [i for i, _ in expect]


@SETTINGS
@given(a=keys, data=st.data())
def test_col_group_first_next(a: np.ndarray, data: st.DataObject) -> None:
    b = data.draw(small_ints)
    n = min(len(a), len(b))
    a, b = a[:n], b[:n]
    gid, first = columnar.col_group_first(a)
    gid2, first2 = columnar.col_group_next(b, gid)
    rows = [(_key(a[i]), int(b[i])) for i in range(n)]
    order = list(dict.fromkeys(rows))  # first appearance
    assert [order[g] for g in gid2.tolist()] == rows
    assert first2.tolist() == [rows.index(r) for r in order]
    sums = columnar.col_sum_grp(np.arange(n, dtype=np.int64), gid2, len(first2), False)
    assert sums.tolist() == [sum(i for i in range(n) if rows[i] == r) for r in order]


def test_selections_and_conversions() -> None:
    col = np.array([3, 1, 4, 1, 5])
    eq, gt = columnar.col_select_eq(col, 1), columnar.col_select_gt(col, 2)
    assert eq.tolist() == [1, 3] and gt.tolist() == [0, 2, 4]
    assert columnar.col_intersect(eq, gt).tolist() == [] and columnar.col_merge(eq, gt).tolist() == [0, 1, 2, 3, 4]
    bits = columnar.pos_list_to_bitmap(gt.reshape(-1, 1), 5, "f64")
    assert bits.dtype == np.float64 and bits.ravel().tolist() == [1, 0, 1, 0, 1]
    assert columnar.bitmap_to_pos_list(bits).ravel().tolist() == [0, 2, 4]
    assert columnar.col_project(col, gt).tolist() == [3, 4, 5]
    assert columnar.col_sum_all(np.array([0.1, 0.2, 0.3])).tolist() == [(0.1 + 0.2) + 0.3]
    assert columnar.col_calc_mul(col, np.array([2])).tolist() == [6, 2, 8, 2, 10]
    assert columnar.col_select_le(np.array(["a", "c"], dtype=object), "b").tolist() == [0]
    with pytest.raises(DaphneRuntimeError, match="out of bounds"):
        columnar.col_project(col, np.array([5], dtype=np.uint64))
