"""Long reductions (`t(X) @ X`, `t(X) @ y`, syrk, gemv of a tall X) run as shape-determined blocks of rows on
daphnec's workers, partials summed in block order: the same bits at every thread count and scheme."""

from __future__ import annotations

import numpy as np
import pytest

from daphnec.runtime.config import DaphneConfig
from daphnec.runtime.kernels.blas_threads import (
    GEMV_SPLIT_BYTES,
    REDUCTION_BLOCK_MIN,
    REDUCTION_MAX_BLOCKS,
    one_blas_thread,
    reduction_blocks,
)
from daphnec.runtime.kernels.matmul import matmul
from daphnec.runtime.kernels.matrix_ops import gemv, syrk
from daphnec.runtime.vectorized.settings import SETTINGS
from daphnec.tools.driver import configure_runtime


def test_reduction_blocks_depend_on_the_shapes_only():
    assert reduction_blocks(51, 1000, 51, 8) == 0  # small input: one call
    size = reduction_blocks(51, 100000, 51, 8)
    assert size >= REDUCTION_BLOCK_MIN and -(-100000 // size) <= REDUCTION_MAX_BLOCKS
    assert reduction_blocks(51, 10**6, 1, 8) > 0  # t(X) @ y of a 408 MB X: split
    assert reduction_blocks(51, 100000, 1, 8) == 0  # a 40 MB gemv: memory bound, one call


def _at_thread_counts(f):
    saved = SETTINGS.scheduler
    results = []
    try:
        for threads, scheme in ((1, "STATIC"), (2, "STATIC"), (3, "SS"), (2, "GSS")):
            configure_runtime(DaphneConfig(numberOfThreads=threads, taskPartitioningScheme=scheme))
            with one_blas_thread():
                results.append(f())
    finally:
        SETTINGS.scheduler = saved
    for r in results[1:]:
        assert np.array_equal(r, results[0])
    return results[0]


@pytest.mark.parametrize("rows,cols", [(100000, 51), (50000, 20)])
def test_tall_gram_products_are_the_same_bits_at_every_thread_count(rows: int, cols: int):
    rng = np.random.default_rng(5)
    X, y = rng.standard_normal((rows, cols)), rng.standard_normal((rows, 1))
    g = _at_thread_counts(lambda: matmul(X, X, "f64", transa=True))
    np.testing.assert_allclose(g, X.T @ X, rtol=1e-11, atol=1e-9)
    s = _at_thread_counts(lambda: syrk(X))
    assert np.array_equal(s, s.T)
    np.testing.assert_allclose(s, X.T @ X, rtol=1e-11, atol=1e-9)
    v = _at_thread_counts(lambda: gemv(X, y))
    np.testing.assert_allclose(v, X.T @ y, rtol=1e-11, atol=1e-9)


def test_large_gemv_is_split_and_the_same_bits_at_every_thread_count():
    rows = GEMV_SPLIT_BYTES // (8 * 16) + 4096
    assert reduction_blocks(16, rows, 1, 8) > 0
    rng = np.random.default_rng(6)
    X, y = rng.standard_normal((rows, 16)), rng.standard_normal((rows, 1))
    v = _at_thread_counts(lambda: gemv(X, y))
    np.testing.assert_allclose(v, X.T @ y, rtol=1e-11, atol=1e-9)
