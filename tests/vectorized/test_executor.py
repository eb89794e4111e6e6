"""The pipeline executor: batch sizing and combining, independent of how rows are cut into blocks."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from daphnec.dialects.value_types import Combine, Split
from daphnec.runtime.vectorized.kernel import PipelineBody
from daphnec.runtime.vectorized.pipeline import (
    SETTINGS,
    _row_bytes,
    run_pipeline,
)


def test_broadcast_row_vectors_do_not_shrink_batches() -> None:
    G = sp.random_array((1000, 5000), density=0.001, format="csr", random_state=1)
    c = np.ones((1, 5000))  # split ROWS but one row: broadcast, not part of a row block
    per_row = _row_bytes([G, c], [Split.ROWS, Split.ROWS], 1000)
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
            body, [X, v], [Split.ROWS, Split.NONE], [Combine.ROWS, Combine.ADD, Combine.MAX, Combine.COLS]
        )
    finally:
        SETTINGS.phy_batch_size = old
    np.testing.assert_array_equal(rows, X * v)
    np.testing.assert_allclose(total, (X * v).sum(), rtol=1e-12)
    np.testing.assert_array_equal(colmax, (X * v).max(axis=0, keepdims=True))
    np.testing.assert_array_equal(trans, (X * v).T)


def test_csr_row_blocks_share_the_arrays_and_equal_scipys_slices() -> None:
    from daphnec.runtime.values import csr_rows

    G = sp.random_array((300, 40), density=0.1, format="csr", random_state=2)
    G.sum_duplicates()
    for a, b in ((0, 300), (0, 17), (17, 171), (299, 300), (5, 5)):
        block = csr_rows(G, a, b)
        ref = G[a:b]
        assert block.shape == ref.shape and block.nnz == ref.nnz
        np.testing.assert_array_equal(block.toarray(), ref.toarray())
        np.testing.assert_array_equal(block.max(axis=1).toarray(), ref.max(axis=1).toarray())
        if block.nnz:
            assert np.shares_memory(block.data, G.data) and np.shares_memory(block.indices, G.indices)
        assert block.has_canonical_format
    inner = csr_rows(csr_rows(G, 10, 200), 5, 50)  # a block of a block still knows the matrix owning the arrays
    np.testing.assert_array_equal(inner.toarray(), G[15:60].toarray())
    assert inner._daphne_base is G

    seen: list[object] = []

    def body(x: object) -> tuple[object, ...]:
        seen.append(x)
        return (x.sum(axis=1).reshape(-1, 1),)  # type: ignore[attr-defined]

    old = SETTINGS.phy_batch_size, SETTINGS.min_parallel_bytes
    SETTINGS.phy_batch_size = 64  # many blocks (a small input on the workers: one call on this thread otherwise)
    SETTINGS.min_parallel_bytes = 0
    try:
        (rows,) = run_pipeline(body, [G], [Split.ROWS], [Combine.ROWS])
    finally:
        SETTINGS.phy_batch_size, SETTINGS.min_parallel_bytes = old
    assert len(seen) > 1 and all(np.shares_memory(x.indices, G.indices) for x in seen if x.nnz)  # type: ignore[attr-defined]
    np.testing.assert_array_equal(rows, G.sum(axis=1).reshape(-1, 1))


def _ranged_body(X: np.ndarray, fail_at: int | None = None):
    """A body with `prepare`, like a single-stage native kernel's: whole inputs in, each task writes its rows into
    a buffer allocated once; `fail_at`: the task starting at that row asks for the body."""
    ranges: list[tuple[int, int]] = []
    bodies: list[int] = []

    def body(x: np.ndarray) -> tuple[object, ...]:
        bodies.append(x.shape[0])
        return x * 2.0, float(x.sum())

    def prepare(n: int, x: np.ndarray):
        buf = np.empty((n, x.shape[1]))

        def run(s: int, e: int):
            ranges.append((s, e))
            if s == fail_at:
                return None
            np.multiply(x[s:e], 2.0, out=buf[s:e])
            return buf[s:e], float(x[s:e].sum())

        return run, (buf, None)

    return PipelineBody(body, prepare, True, "ranged"), ranges, bodies


def test_ranged_kernels_write_into_one_buffer_without_combining() -> None:
    from daphnec.runtime.scheduling.config import SchedulerConfig

    X = np.random.default_rng(1).random((4000, 3))
    old = (SETTINGS.scheduler, SETTINGS.min_parallel_bytes)
    SETTINGS.scheduler, SETTINGS.min_parallel_bytes = SchedulerConfig(num_threads=2, scheme="GSS"), 0
    try:
        body, ranges, bodies = _ranged_body(X)
        rows, total = run_pipeline(body, [X], [Split.ROWS], [Combine.ROWS, Combine.ADD])
        assert len(ranges) > 1 and not bodies
        assert sorted(ranges)[0][0] == 0 and sum(e - s for s, e in ranges) == 4000
        np.testing.assert_array_equal(rows, X * 2.0)
        np.testing.assert_allclose(total, X.sum(), rtol=1e-12)

        # a task whose kernel hands back runs the body on its row block; the parts are then stacked
        SETTINGS.scheduler = SchedulerConfig(num_threads=2, scheme="STATIC")  # tasks [0, 2000) and [2000, 4000)
        body, ranges, bodies = _ranged_body(X, fail_at=2000)
        rows, total = run_pipeline(body, [X], [Split.ROWS], [Combine.ROWS, Combine.ADD])
        assert sorted(ranges) == [(0, 2000), (2000, 4000)] and bodies == [2000]
        np.testing.assert_array_equal(rows, X * 2.0)
        np.testing.assert_allclose(total, X.sum(), rtol=1e-12)
    finally:
        SETTINGS.scheduler, SETTINGS.min_parallel_bytes = old


def test_small_pipelines_run_as_one_call_on_the_calling_thread() -> None:
    import threading

    from daphnec.runtime.scheduling.config import SchedulerConfig

    X = np.ones((1000, 2))  # 16 KB: below min_parallel_bytes
    threads: list[int] = []

    def body(x: np.ndarray) -> tuple[object, ...]:
        threads.append(threading.get_ident())
        return (x + 1.0,)

    old = SETTINGS.scheduler
    SETTINGS.scheduler = SchedulerConfig(num_threads=2, scheme="SS")
    try:
        (rows,) = run_pipeline(PipelineBody(body, None, True, "small"), [X], [Split.ROWS], [Combine.ROWS])
    finally:
        SETTINGS.scheduler = old
    assert threads == [threading.get_ident()]
    np.testing.assert_array_equal(rows, X + 1.0)
