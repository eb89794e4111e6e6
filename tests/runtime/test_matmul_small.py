"""The matmul kernel's path for small dense f64 products inside a program run (runtime/kernels/matmul.py): the
same bits as the general path (taken outside a run, where `STATE.ignoring` is false), transposed operands, the
swapped BLAS call of a thin `t(W) @ X`, empty products, and the general path's errors and conversions."""

from __future__ import annotations

import numpy as np
import pytest

from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.fperr import STATE, ignoring
from daphnec.runtime.kernels.matmul import BLAS_SERIAL_MACS, matmul
from daphnec.runtime.kernels.product_form import swapped

RNG = np.random.default_rng(5)

CASES = {
    "vector dot": (RNG.random((1, 15)), RNG.random((15, 1)), False, False),
    "matrix-vector": (RNG.random((100, 15)), RNG.random((15, 1)), False, False),
    "t(X) @ y": (RNG.random((300, 7)), RNG.random((300, 1)), True, False),
    "X @ t(Y)": (RNG.random((20, 30)), RNG.random((40, 30)), False, True),
    "thin t(W) @ X, swapped": (RNG.random((1000, 2)), RNG.random((1000, 100)), True, False),
    "empty inner dimension": (np.empty((3, 0)), np.empty((0, 4)), False, False),
    "with NaN and inf": (np.array([[np.nan, 1.0], [np.inf, -np.inf]]), np.array([[0.0], [1.0]]), False, False),
}


@pytest.mark.parametrize("name", list(CASES))
def test_small_products_in_a_run_equal_the_general_path(name: str) -> None:
    A, B, ta, tb = CASES[name]
    assert not STATE.ignoring
    with np.errstate(all="ignore"):
        want = matmul(A, B, "f64", ta, tb)
    with ignoring():
        got = matmul(A, B, "f64", ta, tb)
    assert got.dtype == want.dtype and got.shape == want.shape and got.flags.c_contiguous
    assert got.tobytes() == want.tobytes()


def test_the_swapped_case_is_small_and_swapped() -> None:
    A, B, ta, _ = CASES["thin t(W) @ X, swapped"]
    assert swapped(A.T, B) and A.shape[1] * A.shape[0] * B.shape[1] <= BLAS_SERIAL_MACS and ta


def test_a_shape_mismatch_in_a_run_reports_daphnes_error() -> None:
    with ignoring(), pytest.raises(DaphneRuntimeError, match=r"lhs 2x3, rhs 4x1"):
        matmul(RNG.random((2, 3)), RNG.random((4, 1)), "f64")


def test_other_value_types_in_a_run_take_the_general_path() -> None:
    A, B = RNG.integers(0, 5, (3, 4)), RNG.integers(0, 5, (4, 2))
    with ignoring():
        assert matmul(A, B, "si64").tolist() == (A @ B).tolist()
        got = matmul(A.astype(np.float32), B.astype(np.float64), "f64")
    assert got.dtype == np.float64 and got.tolist() == (A @ B).astype(np.float64).tolist()
