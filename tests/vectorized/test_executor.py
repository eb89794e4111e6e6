"""The pipeline executor: batch sizing and combining, independent of how rows are cut into blocks."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from runtime.vectorized.pipeline import (
    COMBINE_ADD,
    COMBINE_COLS,
    COMBINE_MAX,
    COMBINE_ROWS,
    SETTINGS,
    SPLIT_NONE,
    SPLIT_ROWS,
    _row_bytes,
    run_pipeline,
)


def test_broadcast_row_vectors_do_not_shrink_batches() -> None:
    G = sp.random_array((1000, 5000), density=0.001, format="csr", random_state=1)
    c = np.ones((1, 5000))  # split ROWS but one row: broadcast, not part of a row block
    per_row = _row_bytes([G, c], [SPLIT_ROWS, SPLIT_ROWS], 1000)
    assert per_row < 200  # ~5 non-zeros x 12 bytes, not 5000 x 8 bytes


def test_combines_match_the_whole_computation() -> None:
    rng = np.random.default_rng(0)
    X = rng.random((1003, 7))
    v = rng.random((1, 7))

    def body(x: np.ndarray, w: np.ndarray) -> tuple[object, ...]:
        y = x * w
        return y, float(y.sum()), y.max(axis=0, keepdims=True), y.T.copy()

    old = SETTINGS.phy_batch_size
    SETTINGS.phy_batch_size = 64 * 7  # 8 rows per call: many blocks
    try:
        rows, total, colmax, trans = run_pipeline(
            body, [X, v], [SPLIT_ROWS, SPLIT_NONE], [COMBINE_ROWS, COMBINE_ADD, COMBINE_MAX, COMBINE_COLS]
        )
    finally:
        SETTINGS.phy_batch_size = old
    np.testing.assert_array_equal(rows, X * v)
    np.testing.assert_allclose(total, (X * v).sum(), rtol=1e-12)
    np.testing.assert_array_equal(colmax, (X * v).max(axis=0, keepdims=True))
    np.testing.assert_array_equal(trans, (X * v).T)
