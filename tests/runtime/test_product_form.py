"""`t(A) @ B` with a thin A computed as `t(t(B) @ A)` (runtime/kernels/product_form.py): which products take the
swapped BLAS call, that the matmul kernel's result is that call's, in one call and in the workers' blocks, the same
bits at every thread count, and within 1e-12 of numpy's product."""

from __future__ import annotations

import numpy as np
import pytest

from daphnec.runtime.config import DaphneConfig
from daphnec.runtime.kernels.blas_threads import one_blas_thread, product_blocks
from daphnec.runtime.kernels.matmul import matmul
from daphnec.runtime.kernels.product_form import product, swapped
from daphnec.runtime.vectorized.settings import SETTINGS
from daphnec.tools.driver import configure_runtime

RNG = np.random.default_rng(23)


def test_which_products_are_swapped() -> None:
    W, X = RNG.random((5000, 20)), RNG.random((5000, 300))
    assert swapped(W.T, X)  # GNMF's t(W) @ X
    assert swapped(W.T, X[:, :150])  # one of its column blocks
    assert not swapped(RNG.random((5000, 1)).T, X)  # t(w) @ X: a matrix-vector product either way
    assert not swapped(W.T, X[:, :60])  # a result not wide enough
    assert not swapped(RNG.random((5000, 40)).T, X)  # a result with too many rows
    assert not swapped(np.ascontiguousarray(W.T), X)  # not a transposed view: numpy's call
    assert not swapped(W.T, np.asfortranarray(X))  # B's rows not contiguous
    assert not swapped(W.T.astype(np.float32), X.astype(np.float32)[:, :1])


@pytest.mark.parametrize("shape", [(1000, 5, 150), (5000, 20, 300), (20000, 20, 300)])
def test_the_kernel_computes_swapped_products_by_the_swapped_call(shape: tuple[int, int, int]) -> None:
    """`matmul(A, B, transa=True)` is `t(t(B) @ A)` bit for bit, in one call (small) and in the column blocks of
    daphnec's workers (20000 x 20 by 20000 x 300: two halves), at every thread count; numpy's own call agrees
    within 1e-12."""
    k, m, n = shape
    A, B = RNG.random((k, m)), RNG.random((k, n))
    axis, size = product_blocks(m, k, n)
    results = []
    saved = SETTINGS.scheduler
    try:
        for threads, scheme in ((1, "STATIC"), (2, "STATIC"), (3, "SS")):
            configure_runtime(DaphneConfig(numberOfThreads=threads, taskPartitioningScheme=scheme))
            with one_blas_thread():
                results.append(matmul(A, B, "f64", transa=True))
    finally:
        SETTINGS.scheduler = saved
    for r in results:
        assert r.flags.c_contiguous and r.shape == (m, n)
        assert np.array_equal(r, results[0])
    with one_blas_thread():
        if size:
            assert axis == 1
            want = np.empty((m, n))
            for lo in range(0, n, size):
                want[:, lo : lo + size] = np.matmul(B[:, lo : lo + size].T, A).T
        else:
            want = np.matmul(B.T, A).T
        assert np.array_equal(results[0], want)
        np.testing.assert_allclose(results[0], np.matmul(A.T, B), rtol=1e-12)


def test_product_writes_into_a_given_output() -> None:
    A, B = RNG.random((800, 8)), RNG.random((800, 200))
    out = np.full((8, 200), np.nan)
    assert product(A.T, B, out=out) is out
    assert np.array_equal(out, np.ascontiguousarray(np.matmul(B.T, A).T))
    np.testing.assert_allclose(product(A.T, B[:, :50]), A.T @ B[:, :50], rtol=1e-12)
