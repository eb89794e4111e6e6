"""OpenBLAS at one thread while a program runs, and daphnec's own blocks for large products: a product's bits depend
on no thread count (OpenBLAS's do: its sums are split differently at another thread count), so a `parfor` whose
body runs products gives the `for` loop's bits, and `--num-threads` never changes a result."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import numpy as np
import pytest

from daphnec.runtime.config import DaphneConfig
from daphnec.runtime.kernels import blas_threads
from daphnec.runtime.kernels.blas_threads import (
    GEMV_SPLIT_BYTES,
    PARALLEL_PRODUCT_MACS,
    REDUCTION_BLOCK_MIN,
    REDUCTION_MAX_BLOCKS,
    one_blas_thread,
    product_blocks,
    reduction_blocks,
    streaming_halves,
)
from daphnec.runtime.kernels.matmul import matmul
from daphnec.runtime.kernels.matrix_ops import gemv, syrk
from daphnec.runtime.vectorized.settings import SETTINGS
from daphnec.tools.driver import compile_source, configure_runtime


def _run(text: str, **config: object) -> str:
    cfg = DaphneConfig(**config)  # type: ignore[arg-type]
    configure_runtime(cfg)
    program = compile_source(text, "blas.daph", cfg, {})
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        program.run()
    return out.getvalue()


def _at_threads(n: int, f):
    fns = blas_threads._OPENBLAS.get()
    if fns is None:
        pytest.skip("numpy's BLAS is not OpenBLAS")
    get, set_ = fns
    before = get()
    set_(n)
    try:
        return f()
    finally:
        set_(before)


# Products whose OpenBLAS result differs between one and two threads on the project's machine: a long reduction
# into a vector (gemv of t(X) @ u), a general product with a long inner dimension, and a square product whose inner
# dimension is blocked differently. `FOLDS` cross-validates with them in a loop body.
FOLDS = """
X = rand(30000, 100, -1.0, 1.0, 1.0, 42);
Y = rand(500, 500, -1.0, 1.0, 1.0, 5);
u = rand(30000, 1, -1.0, 1.0, 1.0, 7);
G = fill(0.0, 100, 4);
S = fill(0.0, 4, 1);
Q = fill(0.0, 500, 4);
P = fill(0.0, 4, 1);
parfor (f in 0:3) {
    lo = f * 7500;
    Xtr = rbind(X[0:lo, ], X[lo + 7500:30000, ]);
    G[, f] = t(Xtr) @ rbind(u[0:lo, ], u[lo + 7500:30000, ]);
    S[f, 0] = sum(t(Xtr[, 0:51]) @ (Xtr[, 0:51] + 1.0));
    Q[, f] = (Y + f) @ Y[, f];
    P[f, 0] = sum(((Y * f) @ Y)[f, ]);
}
writeMatrix(G, "OUT/G.dbdf");
writeMatrix(S, "OUT/S.dbdf");
writeMatrix(Q, "OUT/Q.dbdf");
writeMatrix(P, "OUT/P.dbdf");
"""


def test_openblas_would_round_these_products_differently_at_two_threads():
    """The shapes of `FOLDS` are ones where the thread count matters, so the parfor test below means something."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((22500, 100))
    u = rng.standard_normal((22500, 1))
    one = _at_threads(1, lambda: X.T @ u)
    two = _at_threads(2, lambda: X.T @ u)
    assert not np.array_equal(one, two)
    np.testing.assert_allclose(one, two, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("scheme", ["STATIC", "SS"])
def test_parfor_products_are_bit_identical_to_for(tmp_path: Path, scheme: str):
    (tmp_path / "for").mkdir()
    (tmp_path / "parfor").mkdir()
    _run(FOLDS.replace("parfor (", "for (").replace("OUT", str(tmp_path / "for")), numberOfThreads=2)
    _run(FOLDS.replace("OUT", str(tmp_path / "parfor")), numberOfThreads=2, taskPartitioningScheme=scheme)
    for name in ("G.dbdf", "S.dbdf", "Q.dbdf", "P.dbdf"):
        assert (tmp_path / "parfor" / name).read_bytes() == (tmp_path / "for" / name).read_bytes(), name


def test_a_program_runs_at_one_blas_thread_and_restores_the_count():
    fns = blas_threads._OPENBLAS.get()
    if fns is None:
        pytest.skip("numpy's BLAS is not OpenBLAS")
    before = blas_threads.blas_threads()
    # t(X) @ u at the program's one thread is numpy's t(X) @ u at one thread, bit for bit
    out = _run('X = rand(30000, 100, -1.0, 1.0, 1.0, 42);\nu = rand(30000, 1, -1.0, 1.0, 1.0, 7);\n'
               'print(sum(t(X) @ u) * 1000000.0);\nprint(sum(X));\n')  # fmt: skip
    assert blas_threads.blas_threads() == before
    with one_blas_thread():
        assert blas_threads.blas_threads() == 1
    assert blas_threads.blas_threads() == before
    assert out.splitlines()[0]


def test_product_blocks_depend_on_the_shapes_only():
    assert product_blocks(100, 100, 100) == (0, 0)  # small: one call
    assert product_blocks(100000, 51, 51) == (0, 0) or product_blocks(100000, 51, 51)[0] == 0
    axis, rows = product_blocks(2000, 1000, 1000)
    assert axis == 0 and 256 <= rows <= 1000
    assert product_blocks(40, 100000, 2000)[0] == 1  # a wide result: blocks of columns
    assert product_blocks(51, 200000, 51) == (0, 0)  # t(X) @ X of a tall X: one call (a long reduction)
    assert 2000 * 1000 * 1000 > PARALLEL_PRODUCT_MACS


def _at_thread_counts(f):
    """`f()` at 1-3 threads and three schemes: every result the same bits; the first is returned."""
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


@pytest.mark.parametrize("shape", [(1200, 700, 900), (40, 3000, 2500), (3000, 300, 40)])
def test_large_products_are_the_same_bits_at_every_thread_count(shape: tuple[int, int, int]):
    m, k, n = shape
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))

    def product() -> np.ndarray:
        r = matmul(a, b, "f64")
        assert r.flags.c_contiguous
        return r

    res = _at_thread_counts(product)
    np.testing.assert_allclose(res, a @ b, rtol=1e-11, atol=1e-11)


def test_streaming_products_split_in_halves_and_are_the_same_bits_at_every_thread_count():
    """PCA's `X @ V` (a large left operand, a thin result, below `PARALLEL_PRODUCT_MACS`): two halves of rows."""
    rng = np.random.default_rng(4)
    X, V = rng.standard_normal((50001, 50)), rng.standard_normal((50, 5))
    assert product_blocks(50001, 50, 5) == (0, 0) and streaming_halves(X, V) == 25001
    assert streaming_halves(X[:1000], V) == 0  # small: one call
    assert streaming_halves(np.asfortranarray(X), V) == 0  # rows not contiguous: each half would sweep all of X
    assert streaming_halves(X.T.copy().T, V) == 0
    res = _at_thread_counts(lambda: matmul(X, V, "f64"))
    assert res.flags.c_contiguous
    np.testing.assert_allclose(res, X @ V, rtol=1e-12, atol=1e-12)


def test_large_product_in_parfor_equals_for():
    text = """
A = rand(1200, 700, -1.0, 1.0, 1.0, 1);
B = rand(700, 900, -1.0, 1.0, 1.0, 2);
R = fill(0.0, 3, 900);
parfor (i in 0:2)
    R[i, ] = sum((A + i) @ B, 1);
print(sum(R));
print(R[2, 0:3]);
"""
    assert _run(text, numberOfThreads=2) == _run(text.replace("parfor (", "for ("), numberOfThreads=2)


# Long reductions into a small result: shape-determined blocks of rows, partials summed in block order.


def test_reduction_blocks_depend_on_the_shapes_only():
    assert reduction_blocks(51, 1000, 51, 8) == 0  # small input: one call
    size = reduction_blocks(51, 100000, 51, 8)
    assert size >= REDUCTION_BLOCK_MIN and -(-100000 // size) <= REDUCTION_MAX_BLOCKS
    assert reduction_blocks(51, 10**6, 1, 8) > 0  # t(X) @ y of a 408 MB X: split
    assert reduction_blocks(51, 100000, 1, 8) == 0  # a 40 MB gemv: memory bound, one call


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
