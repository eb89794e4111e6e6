"""The DNN kernels (runtime/kernels/dnn.py, native loops in dnn_loops.py): the backward passes are the exact
gradients of the forward kernels (central finite differences in f64, over random shapes, strides, paddings and
channel counts, DAPHNE's pooling quirks included), agree with JAX's autodiff of the same networks (an independent
reference), keep f32 in f32, and do not depend on the number of threads. The forward pooling loops reproduce a
plain-Python transcription of DAPHNE's Pooling.cpp bit for bit."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.kernels import dnn
from daphnec.runtime.kernels.blas_threads import blas_threads
from daphnec.runtime.vectorized.settings import SETTINGS

jax.config.update("jax_enable_x64", True)

PROPERTY = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
JAX_PROPERTY = settings(max_examples=10, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
"""JAX compiles every new shape (~0.1-0.5 s): fewer examples than the finite-difference properties."""


# --- helpers ------------------------------------------------------------------------------------------------------


def numeric_grad(f, x: np.ndarray, weights: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """d sum(f(x) * weights) / dx by central differences, one cell at a time."""
    g = np.zeros_like(x)
    for i in range(x.size):
        hi, lo = x.copy(), x.copy()
        hi.flat[i] += eps
        lo.flat[i] -= eps
        g.flat[i] = (np.sum(f(hi) * weights) - np.sum(f(lo) * weights)) / (2 * eps)
    return g


def close(a: np.ndarray, b: np.ndarray, tol: float) -> bool:
    return a.shape == b.shape and bool(np.all(np.abs(a - b) <= tol * (1.0 + np.abs(b))))


@st.composite
def conv_cases(draw):
    n, c, nf = draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 3))
    h, w = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    ph, pw = draw(st.integers(0, 2)), draw(st.integers(0, 2))
    fh, fw = draw(st.integers(1, h + 2 * ph)), draw(st.integers(1, w + 2 * pw))
    sh, sw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    return (n, c, h, w, fh, fw, sh, sw, ph, pw), nf, draw(st.integers(0, 2**31))


@st.composite
def pool_cases(draw, equal_strides: bool = False):
    n, c = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    h, w = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    ph, pw = draw(st.integers(0, 1)), draw(st.integers(0, 1))
    kh, kw = draw(st.integers(1, h + 2 * ph)), draw(st.integers(1, w + 2 * pw))
    sh = draw(st.integers(1, 3))
    sw = sh if equal_strides else draw(st.integers(1, 3))
    return (n, c, h, w, kh, kw, sh, sw, ph, pw), draw(st.integers(0, 2**31))


def pool_forward(kind: str, X: np.ndarray, args) -> tuple[np.ndarray, int, int] | None:
    """The forward kernel, or None where DAPHNE's addressing reads past the input (an error, checked below)."""
    try:
        return getattr(dnn, f"{kind}_pool2d")(X, *args)
    except DaphneRuntimeError as e:
        assert "reads past the end" in str(e)
        return None


# --- forward pooling: bit-identical to a transcription of DAPHNE's loops --------------------------------------------


def daphne_pool_reference(kind: str, X: np.ndarray, n, c, h, w, kh, kw, sh, sw, ph, pw) -> np.ndarray | None:
    """Pooling.cpp's loops in plain Python, in the input's float type: P from the width stride, Q from the height
    stride, a window row past the bottom skipped, cells past the right edge cut (or, for a window starting past
    it, read on in the next rows of the flat buffer: the whole input without padding, the padded plane with it);
    max folds from 0, average adds row sums times 1 / (kh * kw). None where a window reads past its buffer."""
    t = X.dtype.type
    p_, q_ = (h + 2 * ph - kh) // sw + 1, (w + 2 * pw - kw) // sh + 1
    plen = t(1) / t(kh * kw)
    out = np.zeros((n, c * p_ * q_), dtype=X.dtype)
    flat = X.ravel()
    rows, width = h + 2 * ph, w + 2 * pw
    for img in range(n):
        for ch in range(c):
            if ph or pw:
                buf = np.zeros((rows, width), dtype=X.dtype)
                buf[ph : ph + h, pw : pw + w] = X[img].reshape(c, h, w)[ch]
                buf, base = buf.ravel(), 0
            else:
                buf, base = flat, (img * c + ch) * h * w
            for p in range(p_):
                for q in range(q_):
                    if p_ == 1 and q_ == 1 and w == 1:  # DAPHNE's quick path
                        seg = X[img].reshape(c, h)[ch, : min(kh, h)]
                        if kind == "max":
                            acc = t(math.inf) if np.isposinf(seg).any() else np.finfo(X.dtype).max
                        else:
                            acc = t(0)
                            for v in seg:
                                acc = t(acc + v)
                            acc = t(acc * plen)
                        out[img, ch] = acc
                        continue
                    acc = t(0)
                    seg_len = kw if q * sw > width else min(kw, width - q * sw)
                    for k in range(kh):
                        row = p * sh + k
                        if row >= rows:
                            continue
                        row_sum = t(0)
                        for j in range(seg_len):
                            at = base + row * width + q * sw + j
                            if at >= buf.size:
                                return None
                            v = buf[at]
                            if kind == "max":
                                acc = v if acc < v else acc
                            else:
                                row_sum = t(row_sum + v)
                        if kind == "avg":
                            acc = t(t(row_sum * plen) + acc)
                    out[img, (ch * p_ + p) * q_ + q] = acc
    return out


@PROPERTY
@given(pool_cases(), st.sampled_from(["max", "avg"]), st.sampled_from([np.float32, np.float64]))
def test_pool_forward_matches_daphne_loops(case, kind, dtype) -> None:
    args, seed = case
    n, c, h, w = args[:4]
    X = np.random.default_rng(seed).standard_normal((n, c * h * w)).astype(dtype)
    want = daphne_pool_reference(kind, X, *args)
    got = pool_forward(kind, X, args)
    assert (want is None) == (got is None)
    if got is not None:
        assert got[0].dtype == dtype and got[0].tobytes() == want.tobytes()


# --- gradients: finite differences ---------------------------------------------------------------------------------


@PROPERTY
@given(conv_cases())
def test_conv2d_backward_is_the_gradient(case) -> None:
    args, nf, seed = case
    n, c, h, w, fh, fw, sh, sw, ph, pw = args
    rng = np.random.default_rng(seed)
    X, F, B = rng.standard_normal((n, c * h * w)), rng.standard_normal((nf, c * fh * fw)), rng.standard_normal((nf, 1))
    out, p, q = dnn.conv2d(X, F, B, *args)
    R = rng.standard_normal(out.shape)
    back = (sh, sw, ph, pw, n, c, h, w, nf, c, fh, fw)
    dF = dnn.conv2d_backward_filter(X, R, *back)
    dX = dnn.conv2d_backward_data(F, R, *back)
    assert dF.shape == F.shape and dX.shape == X.shape
    assert close(dF, numeric_grad(lambda v: dnn.conv2d(X, v, B, *args)[0], F, R), 1e-6)
    assert close(dX, numeric_grad(lambda v: dnn.conv2d(v, F, B, *args)[0], X, R), 1e-6)


@PROPERTY
@given(pool_cases(), st.sampled_from(["max", "avg"]))
def test_pool_backward_is_the_gradient(case, kind) -> None:
    """Any strides (DAPHNE's swapped extents, cut and spilling windows), paddings, channel counts."""
    args, seed = case
    n, c, h, w = args[:4]
    X = np.random.default_rng(seed).standard_normal((n, c * h * w))
    fwd = pool_forward(kind, X, args)
    if fwd is None:
        _, _, _, _, kh, kw, sh, sw, ph, pw = args
        dout = np.zeros((n, c * ((h + 2 * ph - kh) // sw + 1) * ((w + 2 * pw - kw) // sh + 1)))
        with pytest.raises(DaphneRuntimeError, match="reads past the end"):
            getattr(dnn, f"{kind}_pool2d_backward")(X, dout, *args)
        return
    R = np.random.default_rng(seed + 1).standard_normal(fwd[0].shape)
    got = getattr(dnn, f"{kind}_pool2d_backward")(X, R, *args)
    assert got.shape == X.shape
    if kind == "max" and fwd[1] == fwd[2] == 1 and w == 1:  # the quick path's max is a constant
        assert not got.any()
        return
    assert close(got, numeric_grad(lambda v: pool_forward(kind, v, args)[0], X, R), 1e-6)


def train_batch_norm(X, gamma, beta, nch: int, eps: float, xp=np):
    """Training-mode batch normalisation (per-channel batch statistics): the forward of batch_norm2d_backward."""
    n = X.shape[0]
    x3 = X.reshape(n, nch, -1)
    mean = x3.mean(axis=(0, 2))
    var = ((x3 - mean[None, :, None]) ** 2).mean(axis=(0, 2))
    inv = 1.0 / xp.sqrt(var + eps)
    y = (x3 - mean[None, :, None]) * inv[None, :, None] * gamma[None, :, None] + beta[None, :, None]
    return y.reshape(n, -1), mean, inv


@PROPERTY
@given(st.integers(1, 4), st.integers(1, 3), st.integers(1, 5), st.integers(0, 2**31))
def test_batch_norm2d_backward_is_the_gradient(n, nch, hw, seed) -> None:
    rng = np.random.default_rng(seed)
    X, gamma, beta = rng.standard_normal((n, nch * hw)), rng.standard_normal(nch), rng.standard_normal(nch)
    eps = 1e-3
    y, mean, inv = train_batch_norm(X, gamma, beta, nch, eps)
    R = rng.standard_normal(y.shape)
    dX, dG, dB = dnn.batch_norm2d_backward(mean[:, None], inv[:, None], X, R, gamma[:, None], eps)
    assert dX.shape == X.shape and dG.shape == dB.shape == (nch, 1)
    assert close(dX, numeric_grad(lambda v: train_batch_norm(v, gamma, beta, nch, eps)[0], X, R), 1e-5)
    assert close(dG.ravel(), numeric_grad(lambda v: train_batch_norm(X, v, beta, nch, eps)[0], gamma, R), 1e-5)
    assert close(dB.ravel(), numeric_grad(lambda v: train_batch_norm(X, gamma, v, nch, eps)[0], beta, R), 1e-5)


# --- gradients: JAX's autodiff as an independent reference ---------------------------------------------------------


def jax_conv(X, F, B, n, c, h, w, fh, fw, sh, sw, ph, pw):
    x = X.reshape(n, c, h, w)
    f = F.reshape(F.shape[0], c, fh, fw)
    y = jax.lax.conv_general_dilated(x, f, (sh, sw), ((ph, ph), (pw, pw)), dimension_numbers=("NCHW", "OIHW", "NCHW"))
    return (y + B.reshape(1, -1, 1, 1)).reshape(n, -1)


def jax_pool(kind: str, X, n, c, h, w, kh, kw, s, ph, pw):
    """Pooling with equal strides: every window lies in the padded image; max folds from 0 (DAPHNE)."""
    x = jnp.pad(X.reshape(n, c, h, w), ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    if kind == "max":
        y = jnp.maximum(jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 1, kh, kw), (1, 1, s, s), "VALID"), 0.0)
    else:
        y = jax.lax.reduce_window(x, 0.0, jax.lax.add, (1, 1, kh, kw), (1, 1, s, s), "VALID") / (kh * kw)
    return y.reshape(n, -1)


@JAX_PROPERTY
@given(conv_cases(), st.sampled_from([np.float32, np.float64]))
def test_conv2d_matches_jax(case, dtype) -> None:
    args, nf, seed = case
    n, c, h, w, fh, fw, sh, sw, ph, pw = args
    # XLA aborts the process (no exception) compiling the input gradient when a padding is at least the filter size
    # (its transposed convolution gets a negative padding larger than the input); finite differences cover those
    assume(ph < fh and pw < fw)
    rng = np.random.default_rng(seed)
    X, F, B = rng.standard_normal((n, c * h * w)), rng.standard_normal((nf, c * fh * fw)), rng.standard_normal((nf, 1))
    out = jax_conv(X, F, B, *args)
    R = rng.standard_normal(out.shape)
    dF, dX = jax.grad(lambda f, x: jnp.sum(jax_conv(x, f, B, *args) * R), argnums=(0, 1))(F, X)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    t = [a.astype(dtype) for a in (X, F, B, R)]
    got, p, q = dnn.conv2d(t[0], t[1], t[2], *args)
    back = (sh, sw, ph, pw, n, c, h, w, nf, c, fh, fw)
    got_dF = dnn.conv2d_backward_filter(t[0], t[3], *back)
    got_dX = dnn.conv2d_backward_data(t[1], t[3], *back)
    assert got.dtype == got_dF.dtype == got_dX.dtype == dtype
    assert (
        close(got, np.asarray(out), tol) and close(got_dF, np.asarray(dF), tol) and close(got_dX, np.asarray(dX), tol)
    )


@JAX_PROPERTY
@given(pool_cases(equal_strides=True), st.sampled_from(["max", "avg"]), st.sampled_from([np.float32, np.float64]))
def test_pool_matches_jax(case, kind, dtype) -> None:
    args, seed = case
    n, c, h, w, kh, kw, s, _, ph, pw = args
    assume(not ((h + 2 * ph - kh) // s == 0 and (w + 2 * pw - kw) // s == 0 and w == 1))  # not the quick path
    X = np.random.default_rng(seed).standard_normal((n, c * h * w))
    ref = jax_pool(kind, X, n, c, h, w, kh, kw, s, ph, pw)
    R = np.random.default_rng(seed + 1).standard_normal(ref.shape)
    dX = jax.grad(lambda x: jnp.sum(jax_pool(kind, x, n, c, h, w, kh, kw, s, ph, pw) * R))(X)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    got, _, _ = getattr(dnn, f"{kind}_pool2d")(X.astype(dtype), *args)
    got_dX = getattr(dnn, f"{kind}_pool2d_backward")(X.astype(dtype), R.astype(dtype), *args)
    assert got_dX.dtype == dtype
    assert close(got, np.asarray(ref), tol) and close(got_dX, np.asarray(dX), tol)


@JAX_PROPERTY
@given(st.integers(1, 4), st.integers(1, 3), st.integers(1, 5), st.integers(0, 2**31))
def test_batch_norm2d_backward_matches_jax(n, nch, hw, seed) -> None:
    rng = np.random.default_rng(seed)
    X, gamma, beta = rng.standard_normal((n, nch * hw)), rng.standard_normal(nch), rng.standard_normal(nch)
    y, mean, inv = train_batch_norm(X, gamma, beta, nch, 1e-5)
    R = rng.standard_normal(y.shape)

    def loss(x, g, b):
        return jnp.sum(train_batch_norm(x, g, b, nch, 1e-5, jnp)[0] * R)

    want = jax.grad(loss, argnums=(0, 1, 2))(X, gamma, beta)
    for dtype, tol in ((np.float64, 1e-9), (np.float32, 2e-3)):
        got = dnn.batch_norm2d_backward(
            *(a.astype(dtype) for a in (mean[:, None], inv[:, None], X, R, gamma[:, None])), 1e-5
        )
        assert all(g.dtype == dtype for g in got)
        assert close(got[0], np.asarray(want[0]), tol)
        assert close(got[1].ravel(), np.asarray(want[1]), tol) and close(got[2].ravel(), np.asarray(want[2]), tol)


# --- threads, shapes, errors ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_results_do_not_depend_on_threads(dtype) -> None:
    """Large enough to run on the task scheduler: 1 and 2 worker threads give the same bits."""
    rng = np.random.default_rng(7)
    n, c, h, w, nf = 32, 3, 12, 12, 4
    X = rng.standard_normal((n, c * h * w)).astype(dtype)
    F = rng.standard_normal((nf, c * 9)).astype(dtype)
    B = rng.standard_normal((nf, 1)).astype(dtype)
    conv = (n, c, h, w, 3, 3, 1, 1, 1, 1)
    pool = (n, nf, h, w, 2, 2, 2, 2, 0, 0)
    pool_pad = (n, nf, h, w, 3, 3, 2, 2, 1, 1)

    def run() -> list[bytes]:
        out, _, _ = dnn.conv2d(X, F, B, *conv)
        D = rng_d.standard_normal(out.shape).astype(dtype)
        res = [out, dnn.conv2d_backward_filter(X, D, 1, 1, 1, 1, n, c, h, w, nf, c, 3, 3)]
        res.append(dnn.conv2d_backward_data(F, D, 1, 1, 1, 1, n, c, h, w, nf, c, 3, 3))
        for kind in ("max", "avg"):
            for args in (pool, pool_pad):
                po, _, _ = getattr(dnn, f"{kind}_pool2d")(out, *args)
                res += [po, getattr(dnn, f"{kind}_pool2d_backward")(out, po, *args)]
        return [r.tobytes() for r in res]

    SETTINGS.scheduler.num_threads = 1
    rng_d = np.random.default_rng(8)
    one = run()
    SETTINGS.scheduler.num_threads = 2
    rng_d = np.random.default_rng(8)
    assert run() == one
    scheme, SETTINGS.scheduler.scheme = SETTINGS.scheduler.scheme, "ADAPTIVE"  # resolved per kernel, like pipelines
    try:
        rng_d = np.random.default_rng(8)
        assert run() == one
    finally:
        SETTINGS.scheduler.scheme = scheme


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_large_convolutions_match_jax_the_same_at_1_and_2_threads_and_restore_blas_threads(dtype) -> None:
    """A convolution whose per-image product is above OpenBLAS's threading threshold runs in chunks of images on
    the task scheduler with OpenBLAS at one thread: JAX's results, the same bits at 1 and 2 workers, and OpenBLAS's
    thread count as it was afterwards."""
    rng = np.random.default_rng(11)
    args = (32, 8, 14, 14, 5, 5, 1, 1, 2, 2)
    n, c, h, w, fh, fw, sh, sw, ph, pw = args
    nf = 32
    assert dnn._chunk_images(dnn._conv_geometry("t", *args), nf) < n  # several chunks, each above the threshold
    X, F, B = rng.standard_normal((n, c * h * w)), rng.standard_normal((nf, c * fh * fw)), rng.standard_normal((nf, 1))
    out = jax_conv(X, F, B, *args)
    R = rng.standard_normal(out.shape)
    dF, dX = jax.grad(lambda f, x: jnp.sum(jax_conv(x, f, B, *args) * R), argnums=(0, 1))(F, X)
    t = [a.astype(dtype) for a in (X, F, B, R)]
    back = (sh, sw, ph, pw, n, c, h, w, nf, c, fh, fw)
    before = blas_threads()

    def run() -> list[np.ndarray]:
        got = dnn.conv2d(t[0], t[1], t[2], *args)[0]
        return [got, dnn.conv2d_backward_filter(t[0], t[3], *back), dnn.conv2d_backward_data(t[1], t[3], *back)]

    SETTINGS.scheduler.num_threads = 1
    one = run()
    SETTINGS.scheduler.num_threads = 2
    two = run()
    assert blas_threads() == before
    assert [a.tobytes() for a in one] == [a.tobytes() for a in two]
    tol = 1e-3 if dtype == np.float32 else 1e-10
    assert all(close(a, np.asarray(b), tol) for a, b in zip(two, (out, dF, dX)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_large_affine_runs_in_row_blocks_with_the_same_bits_at_1_and_2_threads(dtype) -> None:
    rng = np.random.default_rng(12)
    X, W, B = (rng.standard_normal(s).astype(dtype) for s in ((64, 3136), (3136, 512), (1, 512)))
    before = blas_threads()
    SETTINGS.scheduler.num_threads = 1
    one = dnn.affine(X, W, B)
    SETTINGS.scheduler.num_threads = 2
    two = dnn.affine(X, W, B)
    assert blas_threads() == before and two.dtype == dtype and two.flags.c_contiguous
    assert one.tobytes() == two.tobytes()
    ref = X.astype(np.float64) @ W.astype(np.float64) + B
    assert close(two, ref, 1e-3 if dtype == np.float32 else 1e-12)


def test_backward_shapes_and_types_follow_daphne() -> None:
    """Result shapes as DAPHNE's kernels create them; the output gradient's value type wins."""
    X = np.ones((2, 1 * 4 * 4), dtype=np.float64)
    D = np.ones((2, 3 * 2 * 2), dtype=np.float32)
    dF = dnn.conv2d_backward_filter(X, D, 2, 2, 0, 0, 2, 1, 4, 4, 3, 1, 2, 2)
    dX = dnn.conv2d_backward_data(np.ones((3, 4)), D, 2, 2, 0, 0, 2, 1, 4, 4, 3, 1, 2, 2)
    assert dF.shape == (3, 4) and dX.shape == (2, 16) and dF.dtype == dX.dtype == np.float32
    dP = dnn.max_pool2d_backward(X, np.ones((2, 4), dtype=np.float32), 2, 1, 4, 4, 2, 2, 2, 2, 0, 0)
    assert dP.shape == (2, 16) and dP.dtype == np.float32
    bn = dnn.batch_norm2d_backward(
        np.zeros((2, 1)), np.ones((2, 1)), np.ones((3, 8)), np.ones((3, 8)), np.ones((2, 1)), 1e-5
    )
    assert [a.shape for a in bn] == [(3, 8), (2, 1), (2, 1)]


def test_max_pool_gradient_goes_to_the_first_positive_maximum() -> None:
    X = np.array([[3.0, 3.0, -1.0, -2.0, -4.0, -2.0, -3.0, -5.0]])  # two 2x2 windows of a 2x4 image
    out, _, _ = dnn.max_pool2d(X, 1, 1, 2, 4, 2, 2, 2, 2, 0, 0)
    assert out.tolist() == [[3.0, 0.0]]  # the second window is all negative: DAPHNE's fold from 0
    dX = dnn.max_pool2d_backward(X, np.array([[10.0, 20.0]]), 1, 1, 2, 4, 2, 2, 2, 2, 0, 0)
    assert dX.tolist() == [[10.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: dnn.conv2d_backward_filter(np.ones((2, 16)), np.ones((2, 5)), 1, 1, 0, 0, 2, 1, 4, 4, 1, 1, 2, 2),
            "the output gradient must be 2x9",
        ),
        (
            lambda: dnn.conv2d_backward_filter(np.ones((2, 16)), np.ones((2, 9)), 1, 1, 0, 0, 2, 1, 4, 4, 1, 2, 2, 2),
            "filterNumChannels \\(2\\) must equal inputNumChannels \\(1\\)",
        ),
        (
            lambda: dnn.conv2d_backward_data(np.ones((1, 5)), np.ones((2, 9)), 1, 1, 0, 0, 2, 1, 4, 4, 1, 1, 2, 2),
            "the filter must be 1x4",
        ),
        (
            lambda: dnn.conv2d_backward_data(np.ones((1, 4)), np.ones((2, 9)), 0, 1, 0, 0, 2, 1, 4, 4, 1, 1, 2, 2),
            "strides must be positive",
        ),
        (
            lambda: dnn.max_pool2d_backward(np.ones((1, 16)), np.ones((1, 3)), 1, 1, 4, 4, 2, 2, 2, 2, 0, 0),
            "dOut must be 1x4",
        ),
        (
            lambda: dnn.avg_pool2d_backward(np.ones((1, 15)), np.ones((1, 4)), 1, 1, 4, 4, 2, 2, 2, 2, 0, 0),
            "the input must be 1x16",
        ),
        (
            lambda: dnn.batch_norm2d_backward(
                np.ones((3, 1)), np.ones((3, 1)), np.ones((2, 8)), np.ones((2, 8)), np.ones((3, 1)), 1e-5
            ),
            "do not split into nrow\\(gamma\\) = 3 channels",
        ),
        (
            lambda: dnn.conv2d_backward_filter(
                np.ones((2, 16), dtype=np.int64), np.ones((2, 9)), 1, 1, 0, 0, 2, 1, 4, 4, 1, 1, 2, 2
            ),
            "must be f32/f64 matrices",
        ),
    ],
)
def test_bad_arguments_are_clear_errors(call, message) -> None:
    with pytest.raises(DaphneRuntimeError, match=message):
        call()
