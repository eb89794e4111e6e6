"""Unit tests of the matrix-builtin kernels against DAPHNE's semantics (values reasoned out from its kernels;
`sample` draws were checked against a libstdc++ build of Sample.h's algorithm)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.frame import Frame
from daphnec.runtime.kernels import (
    agg,
    conversions,
    cum_agg,
    datagen,
    decomposition,
    dnn,
    matrix_ops,
    meta,
    outer,
    preprocessing,
    reorg,
)


def col(*vals, dtype=np.int64) -> np.ndarray:
    return np.array(vals, dtype=dtype).reshape(-1, 1)


# --- data generation -------------------------------------------------------------------------------------------------


def test_sample_matches_std_mt19937() -> None:
    assert datagen.sample(10, 5, True, 42, "si64").ravel().tolist() == [3, 7, 9, 1, 7]
    assert datagen.sample(10, 10, False, 42, "si64").ravel().tolist() == [4, 7, 1, 6, 2, 3, 0, 9, 5, 8]
    assert datagen.sample(7, 6, False, 123, "si32").ravel().tolist() == [3, 1, 2, 5, 0, 4]
    f = datagen.sample(1.0, 3, True, 42, "f64").ravel()
    assert [f"{v:.8g}" for v in f] == ["0.79654298", "0.18343479", "0.779691"]
    g = datagen.sample(5.0, 4, False, 3, "f32")
    assert g.dtype == np.float32 and f"{g[0, 0]:.8g}" == "2.7539895"


def test_sample_without_replacement_is_a_permutation() -> None:
    s = datagen.sample(50, 50, False, -1, "ui32").ravel()
    assert s.dtype == np.uint32 and sorted(s.tolist()) == list(range(50))


@pytest.mark.parametrize(
    ("args", "msg"),
    [
        ((3, 5, False, 1), "must be >= size"),
        ((3, 0, True, 1), "size must be > 0"),
        ((0, 2, True, 1), "range must be > 0"),
    ],
)
def test_sample_errors(args: tuple, msg: str) -> None:
    with pytest.raises(DaphneRuntimeError, match=msg):
        datagen.sample(*args, "si64")


def test_diag_matrix_dense_and_csr() -> None:
    assert datagen.diag_matrix(col(1, 2)).tolist() == [[1, 0], [0, 2]]
    assert datagen.diag_matrix(sp.csr_array(col(0.0, 3.0, dtype=np.float64))).tolist() == [[0, 0], [0, 3]]
    with pytest.raises(DaphneRuntimeError, match="column matrix"):
        datagen.diag_matrix(np.ones((2, 2)))


# --- metadata, outer, aggregation ------------------------------------------------------------------------------------


def test_is_symmetric() -> None:
    assert meta.is_symmetric(np.array([[1, 2], [2, 1]])) is True
    assert meta.is_symmetric(np.array([[1.0, math.nan], [math.nan, 1.0]])) is False
    assert meta.is_symmetric(sp.csr_array(np.array([[0.0, 2.0], [2.0, 0.0]]))) is True
    with pytest.raises(DaphneRuntimeError, match="not square"):
        meta.is_symmetric(np.ones((2, 3)))


def test_outer_uses_element_wise_semantics() -> None:
    div = outer.outer_kernel("div", "si64", "si64")
    assert div(col(7, -7), np.array([[2, 3]])).tolist() == [[3, 2], [-3, -2]]
    with pytest.raises(DaphneRuntimeError, match="division by zero"):
        div(col(1), np.array([[0]]))
    with pytest.raises(DaphneRuntimeError, match="shape mismatch: lhs 1x2, rhs 1x2"):
        div(np.array([[1, 2]]), np.array([[1, 2]]))
    lt = outer.outer_kernel("lt", "f64", "f64")
    assert lt(col(1.0, math.nan, dtype=np.float64), np.array([[2.0]])).tolist() == [[1.0], [0.0]]


def test_idx_min_max_with_nan() -> None:
    X = np.array([[1.0, math.nan, 0.5], [math.nan, 0.0, 2.0]])
    assert agg.idx_kernel("min", "row")(X).ravel().tolist() == [2, 0]
    assert agg.idx_kernel("max", "col")(X).ravel().tolist() == [0, 0, 1]  # a NaN first element wins
    r = agg.idx_kernel("max", "row")(np.array([[3, 3, 1]]))
    assert r.dtype == np.uint64 and r.tolist() == [[0]]


def test_cumulative_aggregation() -> None:
    X = np.array([[1, 5], [2, -1], [3, 4]])
    assert cum_agg.cum_sum(X).tolist() == [[1, 5], [3, 4], [6, 8]]
    assert cum_agg.cum_prod(X).tolist() == [[1, 5], [2, -5], [6, -20]]
    assert cum_agg.cum_min(X).tolist() == [[1, 5], [1, -1], [1, -1]]
    assert cum_agg.cum_max(X).tolist() == [[1, 5], [2, 5], [3, 5]]
    wrap = cum_agg.cum_sum(np.array([[np.iinfo(np.int64).max], [1]]))
    assert wrap[1, 0] == np.iinfo(np.int64).min
    m = cum_agg.cum_min(col(math.nan, 1.0, dtype=np.float64))
    assert np.isnan(m).all()
    assert cum_agg.cum_sum(np.zeros((0, 2))).shape == (0, 2)


# --- reorganisation --------------------------------------------------------------------------------------------------


def test_bind_and_reverse() -> None:
    a, b = np.array([[1, 2]]), np.array([[3, 4]])
    assert reorg.cbind(a, b).tolist() == [[1, 2, 3, 4]]
    assert reorg.rbind(sp.csr_array(a), b).tolist() == [[1, 2], [3, 4]]
    assert reorg.reverse(col(1, 2, 3)).ravel().tolist() == [3, 2, 1]
    with pytest.raises(DaphneRuntimeError, match="shape mismatch: lhs 1x2, rhs 2x1"):
        reorg.cbind(a, col(1, 2))


def test_order_is_stable_and_multi_column() -> None:
    M = np.array([[2, 9], [1, 3], [2, 1], [1, 7]])
    assert reorg.order(M, 0, True, False).tolist() == [[1, 3], [1, 7], [2, 9], [2, 1]]
    assert reorg.order(M, 0, 1, True, False, True).ravel().tolist() == [3, 1, 0, 2]
    f = Frame([np.array([2, 1, 2]), np.array(["a", "b", "c"], dtype=object)], ["k", "v"])
    res = reorg.order(f, 0, False, False)
    assert res.labels == ["k", "v"] and res.columns[1].tolist() == ["a", "c", "b"]
    assert reorg.order(f, 1, False, True).ravel().tolist() == [2, 1, 0]


# --- other matrix operations -----------------------------------------------------------------------------------------


def test_tri_diag_vector_syrk_gemv() -> None:
    S = np.array([[1, 2], [3, 0]])
    assert matrix_ops.tri(S, False, True, False).tolist() == [[1, 0], [1, 0]]
    assert matrix_ops.tri(S, True, False, True).tolist() == [[0, 2], [0, 0]]
    assert matrix_ops.diag_vector(S).tolist() == [[1], [0]]
    assert matrix_ops.syrk(S).tolist() == [[10, 2], [2, 4]]
    assert matrix_ops.gemv(S, col(1, 1)).tolist() == [[4], [2]]


def test_solve_and_replace() -> None:
    x = matrix_ops.solve(np.array([[2.0, 1.0], [1.0, 3.0]]), col(3.0, 5.0, dtype=np.float64))
    assert np.allclose(x.ravel(), [0.8, 1.4])
    with pytest.raises(DaphneRuntimeError, match="singular"):
        matrix_ops.solve(np.ones((2, 2)), col(1.0, 1.0, dtype=np.float64))
    r = matrix_ops.replace(np.array([[1.0, math.nan]]), math.nan, -1.0)
    assert r.tolist() == [[1.0, -1.0]]


def test_ctable_accumulates_in_order_and_crops() -> None:
    res = matrix_ops.ctable(col(0, 0, 0, 1), col(1, 1, 1, 0), 0.1, -1, -1, "f64")
    assert res[0, 1] == 0.1 + 0.1 + 0.1 and res.shape == (2, 2)
    assert matrix_ops.ctable(col(0, 5), col(0, 0), 2, 2, 1, "si64").tolist() == [[2], [0]]
    with pytest.raises(DaphneRuntimeError, match="same number of rows"):
        matrix_ops.ctable(col(0, 1), col(0), 1, -1, -1, "si64")


# --- decomposition, DNN, conversions, preprocessing ------------------------------------------------------------------


def test_eigen_of_symmetric_matrix() -> None:
    vals, vecs = decomposition.eigen(np.array([[2.0, 1.0], [1.0, 2.0]]))
    assert sorted(vals.ravel().round(12).tolist()) == [1.0, 3.0]
    A = np.array([[2.0, 1.0], [1.0, 2.0]])
    assert np.allclose(A @ vecs, vecs * vals.ravel())
    with pytest.raises(DaphneRuntimeError, match="symmetric"):
        decomposition.eigen(np.array([[1.0, 2.0], [3.0, 4.0]]))


def test_conv2d_uses_given_bias_and_padding() -> None:
    X = np.arange(1.0, 10.0).reshape(1, 9)
    out, p, q = dnn.conv2d(X, np.ones((1, 4)), np.array([[0.5]]), 1, 1, 3, 3, 2, 2, 1, 1, 0, 0)
    assert (p, q) == (2, 2) and out.tolist() == [[12.5, 16.5, 24.5, 28.5]]


def test_pooling_quirks() -> None:
    X = np.array([[-1.0, -2.0, -3.0, -4.0]])
    m, p, q = dnn.max_pool2d(X, 1, 1, 2, 2, 2, 2, 1, 1, 0, 0)
    assert (p, q) == (1, 1) and m.tolist() == [[0.0]]  # DAPHNE's max folds from 0
    col_img = np.array([[1.0, 5.0, 2.0]])
    top, _, _ = dnn.max_pool2d(col_img, 1, 1, 3, 1, 3, 1, 1, 1, 0, 0)
    assert top[0, 0] == np.finfo(np.float64).max  # quick path starts from the largest value
    avg, _, _ = dnn.avg_pool2d(col_img, 1, 1, 3, 1, 3, 1, 1, 1, 0, 0)
    assert avg[0, 0] == (1.0 + 5.0 + 2.0) * (1.0 / 3.0)


def test_softmax_bias_add_batch_norm() -> None:
    s = dnn.softmax(np.array([[0.0, 0.0]]))
    assert s.tolist() == [[0.5, 0.5]]
    assert dnn.bias_add(np.array([[1.0, 2.0, 3.0]]), np.array([[10.0], [20.0]])).tolist() == [[11.0, 22.0, 0.0]]
    bn = dnn.batch_norm2d(
        np.array([[3.0]]),
        col(2.0, dtype=np.float64),
        col(1.0, dtype=np.float64),
        col(1.0, dtype=np.float64),
        col(4.0, dtype=np.float64),
        0.0,
    )
    assert bn.tolist() == [[3.0]]


def test_quantize_rounds_half_away_from_zero() -> None:
    q = conversions.quantize(np.array([[0.0, 1.0, -1.0, 0.5, math.nan]], dtype=np.float32), -1.0, 1.0)
    assert q.dtype == np.uint8 and q.tolist() == [[127, 255, 0, 191, 0]]


def test_one_hot_recode_bin() -> None:
    assert preprocessing.one_hot(np.array([[1, 7]]), np.array([[3, -1]])).tolist() == [[0, 1, 0, 7]]
    with pytest.raises(DaphneRuntimeError, match="row matrix"):
        preprocessing.one_hot(np.array([[1]]), np.array([[1], [1]]))
    codes, d = preprocessing.recode(col(10, 5, 20, 5), False)
    assert codes.ravel().tolist() == [0, 1, 2, 1] and d.ravel().tolist() == [10, 5, 20]
    b = preprocessing.bin(np.array([[10, 20, 30, 40, 50, 60, 70]]), 3, 10, 70)
    assert b.tolist() == [[0, 0, 0, 1, 1, 2, 2]]
    with pytest.raises(DaphneRuntimeError, match="max must not be infinity"):
        preprocessing.bin(np.array([[1.0]]), 2, 0.0, math.inf)
