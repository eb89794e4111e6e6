"""`fuse-split-stats` (compiler/passes/fuse_split_stats.py, kernel runtime/kernels/split_stats.py): the split
statistics `t(v) @ outerLe(x, thr)` computed by per-row threshold bins give the written program's result
(`--no-reassociate`) within 1e-12 relative, bit for bit for integer-valued vectors -- with ties between x and the
thresholds, NaN and -0.0 in x, one threshold, unsorted thresholds (the run-time fallback) and no rows."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_rewrites import receive, run  # the sibling module: compile with or without re-associating rewrites

from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.kernels.matmul import matmul
from daphnec.runtime.kernels.outer import outer_kernel
from daphnec.runtime.kernels.split_stats import split_stats

KINDS = ("le", "lt", "ge", "gt")
VALUES = st.sampled_from([0.0, -0.0, 1.0, 2.0, 2.5, 3.0, -1.0, float("nan"), float("inf")])
"""x values: ties with the thresholds below, signed zeros, NaN, infinity."""
THRESHOLDS = st.lists(st.sampled_from([-0.0, 0.0, 1.0, 2.0, 2.5, 4.0, -2.0]), min_size=1, max_size=6)


def written(x: np.ndarray, thr: np.ndarray, vs: list[np.ndarray], kind: str) -> np.ndarray:
    """numpy's 0/1 matrix and products, as the unfused program computes them."""
    L = {"le": np.less_equal, "lt": np.less, "ge": np.greater_equal, "gt": np.greater}[kind](x, thr)
    return np.concatenate([v.T @ L.astype(np.float64) for v in vs], axis=0)


def close(got: np.ndarray, want: np.ndarray, exact: bool) -> None:
    assert got.shape == want.shape
    if exact:
        assert np.array_equal(got, want), (got, want)
    else:
        assert np.allclose(got, want, rtol=1e-12, atol=1e-12 * max(1.0, float(np.abs(want).max(initial=0.0)))), (
            got,
            want,
        )


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    xs=st.lists(VALUES, min_size=1, max_size=40),
    thr=THRESHOLDS,
    kind=st.sampled_from(KINDS),
    seed=st.integers(0, 2**16),
)
def test_fused_program_equals_written(xs, thr, kind, seed):
    """The compiled program with the rewrite equals it without (and the rewrite fired: no outer op is left)."""
    rng = np.random.default_rng(seed)
    x = np.array(xs).reshape(-1, 1)
    t = np.sort(np.array(thr)).reshape(1, -1)
    counts = rng.integers(0, 4, x.shape).astype(np.float64)
    sums = rng.uniform(-1.0, 1.0, x.shape)
    outer = "outer" + kind.capitalize()
    text = receive([x, t, counts, sums]) + (
        f"L = {outer}(M0, M1);\nR = rbind(t(M2) @ L, t(M3) @ L);\nsaveDaphneLibResult(R);\n"
    )
    want, plain_ir = run(text, [x, t, counts, sums], reassociate=False)
    got, ir = run(text, [x, t, counts, sums], reassociate=True)
    assert f'"daphne.{outer}"' in plain_ir and f'"daphne.{outer}"' not in ir and '"daphne.splitStats"' in ir, ir
    got, want = np.asarray(got), np.asarray(want)
    close(got[:1], want[:1], exact=True)  # counts: sums of integers, exact in any order
    close(got[1:], want[1:], exact=False)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    "x, thr",
    [
        ([[1.0], [2.0], [np.nan], [-0.0], [0.0], [3.0]], [[-0.0, 1.0, 1.0, 2.0]]),  # ties, NaN, signed zeros
        ([[1.0], [5.0], [np.nan]], [[2.0]]),  # k = 1
        ([[1.0], [5.0], [2.0], [0.0]], [[3.0, 1.0, 2.0]]),  # unsorted: the written computation
        ([[1.0], [5.0], [2.0]], [[1.0, np.nan, 2.0]]),  # NaN threshold: the written computation
        (np.empty((0, 1)), [[1.0, 2.0]]),  # no rows
        ([[1.0], [2.0]], np.empty((1, 0))),  # no thresholds
    ],
)
def test_kernel_cases(kind, x, thr):
    x, thr = np.asarray(x, dtype=np.float64), np.asarray(thr, dtype=np.float64)
    rng = np.random.default_rng(7)
    counts = rng.integers(0, 5, x.shape).astype(np.float64)
    sums = rng.uniform(-1.0, 1.0, x.shape)
    got = split_stats(x, thr, counts, sums, kind=kind)
    want = written(x, thr, [counts, sums], kind)
    close(got[:1], want[:1], exact=True)
    close(got[1:], want[1:], exact=False)


@pytest.mark.parametrize("kind", KINDS)
def test_kernel_reads_column_views(kind):
    """x and the vectors as column views of wider matrices (what `X[, j]` passes): read through their strides."""
    rng = np.random.default_rng(3)
    X = rng.integers(0, 8, (500, 5)).astype(np.float64)
    V = np.hstack([rng.integers(0, 3, (500, 1)).astype(np.float64), rng.uniform(-1.0, 1.0, (500, 2))])
    thr = np.arange(0.0, 7.0).reshape(1, -1)
    vs = [V[:, 0:1], V[:, 2:3]]
    got = split_stats(X[:, 3:4], thr, *vs, kind=kind)
    want = written(X[:, 3:4], thr, vs, kind)
    close(got[:1], want[:1], exact=True)
    close(got[1:], want[1:], exact=False)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
@pytest.mark.filterwarnings("ignore:invalid value encountered in matmul")
def test_kernel_nonfinite_vector(kind, bad):
    """An infinite or NaN vector value makes every threshold's sum NaN, as `inf * 0` does in the written product."""
    x = np.array([[0.0], [1.0], [2.0], [3.0]])
    thr = np.array([[0.5, 1.5, 2.5]])
    v = np.array([[1.0], [bad], [2.0], [3.0]])
    w = np.ones((4, 1))
    got, want = split_stats(x, thr, v, w, kind=kind), written(x, thr, [v, w], kind)
    assert np.array_equal(got, want, equal_nan=True), (got, want)


@pytest.mark.parametrize(
    "shapes", [((3, 2), (1, 2), (3, 1)), ((3, 1), (2, 2), (3, 1)), ((3, 1), (1, 2), (4, 1))]
)
def test_kernel_shape_errors_are_the_written_kernels(shapes):
    """Operands of the wrong shapes raise what the outer kernel or the product would raise in the written program."""
    x, thr, v = (np.ones(s) for s in shapes)
    with pytest.raises(DaphneRuntimeError) as fused:
        split_stats(x, thr, v, kind="le")
    with pytest.raises(DaphneRuntimeError) as unfused:
        matmul(v, outer_kernel("le", "f64", "f64")(x, thr), "f64", transa=True)
    assert str(fused.value) == str(unfused.value)
