"""Unit tests of the frame and list kernels (runtime/frame.py, runtime/kernels/frame_ops.py, lists.py)."""

from __future__ import annotations

import numpy as np
import pytest

from daphnec.dialects.frame_labels import with_prefix
from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.frame import Frame
from daphnec.runtime.kernels import frame_ops as fo
from daphnec.runtime.kernels import indexing, lists
from daphnec.runtime.printing import format_obj
from daphnec.runtime.values import object_matrix


def strs(*xs: str) -> np.ndarray:
    return object_matrix(list(xs), len(xs), 1)[:, 0]


def col(F: Frame, label: str) -> list:
    return F.columns[F.column_index(label)].tolist()


A = Frame([np.array([1, 2, 2]), np.array([0.5, 1.5, 2.5])], ["k", "v"])
B = Frame([np.array([2, 1, 3, 2]), strs("x", "y", "z", "w")], ["key", "tag"])


# --- Frame --------------------------------------------------------------------------------------------------------


def test_frame_basics() -> None:
    F = Frame([np.array([[1], [2]]), np.array([1.5, 2.5])])
    assert F.labels == ["col_0", "col_1"] and F.shape == (2, 2) and F.schema == ["si64", "f64"]
    assert F.column("col_1").shape == (2, 1)
    assert F.with_labels(["a", "b"]).columns[0] is F.columns[0]  # shared, not copied
    with pytest.raises(DaphneRuntimeError, match="single-column matrix, got 2x2"):
        Frame([np.zeros((2, 2))])
    with pytest.raises(DaphneRuntimeError, match="'a' occurs more than once"):
        Frame([np.zeros(1), np.zeros(1)], ["a", "a"])
    with pytest.raises(DaphneRuntimeError, match="no column with label 'z' \\(labels: col_0, col_1\\)"):
        F.column_index("z")


# --- indexing -----------------------------------------------------------------------------------------------------


def test_extract_rows_and_columns() -> None:
    F = fo.extract(A, (1, None), "v")
    assert F.labels == ["v"] and F.columns[0].tolist() == [1.5, 2.5]
    assert fo.extract(A, -1, None).columns[0].tolist() == [2]
    assert fo.extract(A, 1.7, None).columns[1].tolist() == [1.5]
    assert fo.extract(A, np.array([[2], [0], [2]]), None).columns[0].tolist() == [2, 1, 2]
    assert fo.extract(A, None, np.array([[1.0], [0.0]])).labels == ["v", "k"]
    assert fo.extract(A, None, (-1, None)).labels == ["v"]
    assert indexing.extract(A, None, "k").labels == ["k"]  # the shared indexing kernel dispatches frames


def test_extract_errors() -> None:
    with pytest.raises(DaphneRuntimeError, match="row index 3 is out of bounds for a frame of shape 3x2"):
        fo.extract(A, 3, None)
    with pytest.raises(DaphneRuntimeError, match="column range end 5 is out of bounds"):
        fo.extract(A, None, (0, 5))
    with pytest.raises(DaphneRuntimeError, match="no column with label 'q'"):
        fo.extract(A, None, "q")
    with pytest.raises(DaphneRuntimeError, match="occurs more than once"):
        fo.extract(A, None, np.array([[0], [0]]))


def test_filter_rows() -> None:
    assert indexing.filter_rows(A, np.array([[1.0], [0.0], [1.0]])).columns[1].tolist() == [0.5, 2.5]
    with pytest.raises(DaphneRuntimeError, match="one entry per row"):
        fo.filter_rows(A, np.array([[1], [0]]))
    # FilterRow.h on frames keeps every row whose entry is non-zero (SQL's `WHERE 2` keeps all rows)
    assert fo.filter_rows(A, np.array([[1], [2], [0]])).columns[1].tolist() == [0.5, 1.5]
    with pytest.raises(DaphneRuntimeError, match="not supported"):
        indexing.filter_cols(A, np.array([[1], [0]]))


# --- casts --------------------------------------------------------------------------------------------------------


def test_frame_matrix_casts() -> None:
    M = fo.frame_to_matrix(A, "f64")
    assert M.dtype == np.float64 and M.tolist() == [[1, 0.5], [2, 1.5], [2, 2.5]]
    assert fo.frame_to_matrix(A, "si64").tolist() == [[1, 0], [2, 1], [2, 2]]  # static_cast truncates
    F = fo.matrix_to_frame(np.arange(6).reshape(2, 3))
    assert F.labels == ["col_0", "col_1", "col_2"] and F.columns[2].tolist() == [2, 5]
    S = fo.scalar_to_frame(7, "si64")
    assert S.shape == (1, 1) and fo.frame_to_scalar(S, "f64") == 7.0
    with pytest.raises(DaphneRuntimeError, match="exactly one element \\(1x1\\), but it is 3x2"):
        fo.frame_to_scalar(A, "f64")
    G = fo.frame_to_frame(A, ["f64", "f64"])
    assert G.schema == ["f64", "f64"] and G.labels == ["k", "v"]


# --- labels, binding ------------------------------------------------------------------------------------------------


def test_labels() -> None:
    assert fo.set_col_labels(A, "a", "b").labels == ["a", "b"]
    with pytest.raises(DaphneRuntimeError, match="number of given labels \\(1\\) does not match"):
        fo.set_col_labels(A, "a")
    assert fo.set_col_labels_prefix(A, "p").labels == ["p.k", "p.v"]
    assert with_prefix("q", "p.k") == "q.k" and with_prefix("q", "a.b.c") == "q.b.c"


def test_bind() -> None:
    C = fo.bind(A, Frame([strs("a", "b", "c")], ["s"]), "cbind")
    assert C.labels == ["k", "v", "s"] and C.shape == (3, 3)
    R = fo.bind(A, A, "rbind")
    assert R.shape == (6, 2) and R.columns[0].tolist() == [1, 2, 2, 1, 2, 2]
    with pytest.raises(DaphneRuntimeError, match="same number of rows"):
        fo.cbind(A, B)
    with pytest.raises(DaphneRuntimeError, match="same column names"):
        fo.rbind(A, fo.set_col_labels(A, "a", "b"))
    with pytest.raises(DaphneRuntimeError, match="same schema"):
        fo.rbind(A, Frame([np.array([1.0]), np.array([1.0])], ["k", "v"]))
    with pytest.raises(DaphneRuntimeError, match="both arguments must be frames"):
        fo.bind(A, np.zeros((3, 1)), "cbind")


# --- joins --------------------------------------------------------------------------------------------------------


def test_match_pairs_is_the_nested_loop() -> None:
    rng = np.random.default_rng(0)
    lk, rk = rng.integers(0, 5, 40), rng.integers(0, 5, 30)
    li, ri = fo.match_pairs(lk, rk)
    expect = [(i, j) for i in range(len(lk)) for j in range(len(rk)) if lk[i] == rk[j]]
    assert list(zip(li.tolist(), ri.tolist(), strict=True)) == expect


def test_match_pairs_nan_and_mixed_numbers() -> None:
    li, ri = fo.match_pairs(np.array([np.nan, 1.0, 2.0]), np.array([np.nan, 2.0, 1.0]))
    assert list(zip(li.tolist(), ri.tolist(), strict=True)) == [(1, 2), (2, 1)]  # NaN == NaN is false
    li, _ = fo.match_pairs(np.array([1, 2]), np.array([2.0, 3.5]))
    assert li.tolist() == [1]
    with pytest.raises(DaphneRuntimeError, match="cannot compare a si64 key column with a str key column"):
        fo.match_pairs(np.array([1]), strs("1"))


def test_cartesian() -> None:
    C = fo.cartesian(A, B)
    assert C.shape == (12, 4) and C.labels == ["k", "v", "key", "tag"]
    assert col(C, "k") == [1] * 4 + [2] * 8 and col(C, "tag")[:4] == ["x", "y", "z", "w"]


def test_inner_join() -> None:
    J = fo.inner_join(A, B, "k", "key")
    assert col(J, "k") == [1, 2, 2, 2, 2] and col(J, "tag") == ["y", "x", "w", "x", "w"]
    assert col(J, "v") == [0.5, 1.5, 1.5, 2.5, 2.5]
    E = fo.inner_join(A, Frame([np.array([9])], ["key"]), "k", "key")
    assert E.shape == (0, 3)
    with pytest.raises(DaphneRuntimeError, match="the right frame has no column labeled 'nope'"):
        fo.inner_join(A, B, "k", "nope")


def test_semi_join() -> None:
    F, tids = fo.semi_join(B, A, "key", "k")
    assert F.labels == ["key"] and col(F, "key") == [2, 1, 2]
    assert tids.dtype == np.uint64 and tids.ravel().tolist() == [0, 1, 3]


def test_group_join() -> None:
    L = Frame([strs("a", "b", "c", "a")], ["name"])
    R = Frame([strs("c", "a", "a", "z"), np.array([10, 20, 30, 40])], ["who", "n"])
    G, tids = fo.group_join(L, R, "name", "who", "n")
    assert G.labels == ["name", "SUM(n)"] and col(G, "name") == ["a", "c"] and col(G, "SUM(n)") == [50, 10]
    assert tids.ravel().tolist() == [0, 2]
    with pytest.raises(DaphneRuntimeError, match="cannot sum the column 'who'"):
        fo.group_join(L, R, "name", "who", "who")


def test_group_sum_matches_a_dictionary() -> None:
    rng = np.random.default_rng(1)
    g1, g2, x = rng.integers(0, 3, 50), rng.integers(0, 2, 50), rng.random(50)
    F = Frame([g1, g2, x], ["g1", "g2", "x"])
    G = fo.group(F, "g1", "g2", "x", n_keys=2, funcs=["SUM"])
    expect: dict[tuple[int, int], float] = {}
    for a, b, v in zip(g1.tolist(), g2.tolist(), x.tolist(), strict=True):
        expect[(a, b)] = expect.get((a, b), 0.0) + v  # accumulation in row order, as std::accumulate
    keys = sorted(expect)
    assert G.labels == ["g1", "g2", "SUM(x)"]
    assert list(zip(col(G, "g1"), col(G, "g2"), strict=True)) == keys
    assert col(G, "SUM(x)") == [expect[k] for k in keys]  # bit-identical


def test_group_other_aggregates() -> None:
    F = Frame([strs("b", "a", "b"), np.array([3, 1, 5]), strs("p", "q", "o")], ["k", "x", "s"])
    G = fo.group(F, "k", "x", "x", "x", "x", "s", n_keys=1, funcs=["COUNT", "MIN", "MAX", "AVG", "MAX"])
    assert G.labels == ["k", "COUNT(x)", "MIN(x)", "MAX(x)", "AVG(x)", "MAX(s)"]
    rows = list(zip(*(c.tolist() for c in G.columns), strict=True))
    assert rows == [("a", 1, 1, 1, 1.0, "q"), ("b", 2, 3, 5, 4.0, "p")]
    # Group.h on str columns: SUM yields each group's first string, AVG fails
    assert fo.group(F, "k", "s", n_keys=1, funcs=["SUM"]).columns[1].tolist() == ["q", "p"]
    with pytest.raises(DaphneRuntimeError, match="AVG aggregation is not supported for these value types"):
        fo.group(F, "k", "s", n_keys=1, funcs=["AVG"])


def test_set_operations() -> None:
    U = Frame([np.array([1, 2, 2, 3]), strs("a", "b", "b", "c")], ["n", "s"])
    V = Frame([np.array([3, 2, 4]), strs("c", "x", "d")], ["m", "t"])
    rows = lambda F: list(zip(*(c.tolist() for c in F.columns), strict=True))  # noqa: E731
    assert rows(fo.merge(U, V)) == [(1, "a"), (2, "b"), (3, "c"), (2, "x"), (4, "d")]
    assert rows(fo.intersect(U, V)) == [(3, "c")]
    assert rows(fo.except_(U, V)) == [(1, "a"), (2, "b")]
    assert fo.merge(U, V).labels == ["n", "s"]
    with pytest.raises(DaphneRuntimeError, match="same column value types"):
        fo.intersect(U, Frame([np.array([1.0]), strs("a")], ["n", "s"]))
    with pytest.raises(DaphneRuntimeError, match="same number of columns"):
        fo.merge(U, Frame([np.array([1])], ["n"]))


# --- lists --------------------------------------------------------------------------------------------------------


def test_lists_are_values() -> None:
    a, b = np.array([[1.0]]), np.array([[2.0], [3.0]])
    L = lists.create_list(a, b)
    L2 = lists.append(L, a)
    assert isinstance(L, tuple) and lists.length(L) == 2 and lists.length(L2) == 3
    L3, x = lists.remove(L2, 1)
    assert x is b and lists.length(L3) == 2 and lists.length(L2) == 3
    E, _ = lists.remove(lists.create_list(np.array([[1]])), 0)
    assert format_obj(E) == "List(0, DenseMatrix, int64_t)\n"
    assert format_obj(L).startswith("List(2, DenseMatrix, double)\nDenseMatrix(1x1, double)\n1\n")


def test_list_errors() -> None:
    L = lists.create_list(np.array([[1.0]]))
    with pytest.raises(DaphneRuntimeError, match="remove element at position 1 from a list with 1 elements"):
        lists.remove(L, 1)
    with pytest.raises(DaphneRuntimeError, match="value type \\(si64\\) differs from the list's \\(f64\\)"):
        lists.append(L, np.array([[1]]))
    with pytest.raises(DaphneRuntimeError, match="same value type"):
        lists.create_list(np.array([[1]]), np.array([[1.0]]))
