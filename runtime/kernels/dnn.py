"""Deep-neural-network builtins on NCHW images stored one per row (DAPHNE's CPU kernels Conv2DForward.h,
Pooling.cpp, BatchNorm2DTestForward.h, BiasAdd.h, Softmax.h, plus `relu` and `affine`) and their backward passes
(DAPHNE's Conv2DBackwardFilter.h, Conv2DBackwardData.h, MaxPoolBackward.h, AvgPoolBackward.h,
BatchNorm2DBackward.h), which are the exact gradients of the forward kernels here.

The forward kernels mirror DAPHNE's observable behaviour, quirks included:
- `conv2d` computes, per output cell, the sum of `padded * filter` over channel, filter row and filter column,
  then adds `bias[f]`; DaphneDSL's 12-argument form passes the *filter* as the bias (its first F values);
- pooling computes the output height with the width stride and the output width with the height stride; windows
  are accumulated row by row (average = sum of `rowSum * (1 / (poolH * poolW))`, max folds from 0 with
  `std::max`, so a window of negative values pools to 0); a window row below the (padded) image is skipped, a
  window reaching past the right edge is cut there, and one starting past the right edge (possible only with
  strideHeight > strideWidth) keeps its full length and reads on in the rows below (past the end of the input: an
  error); for 1x1 outputs of 1-pixel-wide images the max starts from the type's largest value;
- `batch_norm2d` takes gamma/beta/mean/var of row (image) i for row i;
- `biasAdd` splits the columns into `nrow(bias)` channels.

Speed: a convolution is BLAS products between native im2col/col2im loops (`runtime/kernels/dnn_loops.py`) over
chunks of images, in parallel on the task scheduler, each product on its task's thread (`_chunk_images`: small
products stay below OpenBLAS's threading threshold; for large ones OpenBLAS is held at one thread,
`blas_threads.one_blas_thread`); pooling runs native loops in parallel over images. A task writes only its own
images, chunks are fixed by the shapes and summed in chunk order, so results do not depend on the number of
threads. A convolution's sums are BLAS's (in BLAS's order, not DAPHNE's channel/row/column order), so they may
differ from DAPHNE's loop in the last bits. f32 stays f32.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.fperr import quiet
from daphnec.runtime.kernels import dnn_loops
from daphnec.runtime.kernels.blas_threads import one_blas_thread
from daphnec.runtime.values import as_dense

#: Below this many cells of work a loop runs as one call on the calling thread (waking workers costs more).
MIN_PARALLEL_CELLS = 1 << 18


def _float_matrix(X, who: str, dtype: np.dtype | None = None) -> np.ndarray:
    A = as_dense(X)
    if not isinstance(A, np.ndarray) or A.dtype.kind != "f" or A.dtype.itemsize not in (4, 8):
        raise DaphneRuntimeError(f"{who}: the data arguments must be f32/f64 matrices")
    if dtype is not None and A.dtype != dtype:
        A = A.astype(dtype)
    return np.ascontiguousarray(A)


def _out_extent(who: str, img: int, win: int, pad: int, stride: int) -> int:
    """(img + 2 * pad - win) / stride + 1 in unsigned arithmetic, as DAPHNE's getPQ."""
    if stride <= 0:
        raise DaphneRuntimeError(f"{who}: strides must be positive")
    if win <= 0 or win > img + 2 * pad:
        raise DaphneRuntimeError(f"{who}: the window ({win}) must fit into the padded image extent ({img + 2 * pad})")
    return (img + 2 * pad - win) // stride + 1


def _check_shape(who: str, A: np.ndarray, what: str, rows: int, cols: int, meaning: str) -> None:
    if A.shape != (rows, cols):
        raise DaphneRuntimeError(
            f"{who}: {what} must be {rows}x{cols} ({meaning}), but it is {A.shape[0]}x{A.shape[1]}"
        )


def _ints(who: str, *vals) -> list[int]:
    out = [int(v) for v in vals]
    if any(v < 0 for v in out):
        raise DaphneRuntimeError(f"{who}: sizes, strides and paddings must not be negative")
    return out


@dataclass(frozen=True)
class _Window:
    """The geometry of a sliding window (a convolution's filter, a pooling window): N images of C x H x W, windows
    of kh x kw with strides sh, sw and paddings ph, pw, P x Q outputs."""

    n: int
    c: int
    h: int
    w: int
    kh: int
    kw: int
    sh: int
    sw: int
    ph: int
    pw: int
    p: int
    q: int


@dataclass(frozen=True)
class _Conv(_Window):
    """A convolution: the windows are the C x kh x kw filters."""

    @property
    def ckk(self) -> int:
        return self.c * self.kh * self.kw

    @property
    def pq(self) -> int:
        return self.p * self.q

    def loop_args(self, ldcol: int) -> tuple[int, ...]:
        return (ldcol, self.c, self.h, self.w, self.kh, self.kw, self.sh, self.sw, self.ph, self.pw, self.p, self.q)


def _conv_geometry(who: str, n, c, h, w, fh, fw, sh, sw, ph, pw) -> _Conv:
    n, c, h, w, fh, fw, sh, sw, ph, pw = _ints(who, n, c, h, w, fh, fw, sh, sw, ph, pw)
    p, q = _out_extent(who, h, fh, ph, sh), _out_extent(who, w, fw, pw, sw)
    return _Conv(n, c, h, w, fh, fw, sh, sw, ph, pw, p, q)


def over_images(n: int, cells_per_image: int, run) -> list:
    """Run `run(n0, n1)` over the images [0, n) as tasks of the task scheduler (one call on this thread when the
    work is small); the results in image order."""
    if n == 0:
        return []
    if n * cells_per_image < MIN_PARALLEL_CELLS or n == 1:
        return [run(0, n)]
    from daphnec.runtime.vectorized.pipeline import schedule_tasks

    return [r for _, r in schedule_tasks(("dnn.images", getattr(run, "__code__", None)), n, run)]


class _Workspace(threading.local):
    """Per-thread scratch memory for the im2col matrices and products (tens of MB for a batch): a fresh buffer of
    that size is mapped anew by the allocator on every call, and touching its pages costs as much as the loop that
    fills it. A kernel's scratch arrays are views into this thread's buffers, dead when the kernel returns."""

    def __init__(self) -> None:
        self.buffers: dict[tuple[str, int], np.ndarray] = {}

    def array(self, slot: int, shape: tuple[int, int], dtype: np.dtype) -> np.ndarray:
        size = shape[0] * shape[1]
        buf = self.buffers.get((dtype.str, slot))
        if buf is None or buf.size < size:
            buf = self.buffers[(dtype.str, slot)] = np.empty(size, dtype=dtype)
        return buf[:size].reshape(shape)


_WORKSPACE = _Workspace()

BLAS_SERIAL_MACS = 65536 * 4
"""OpenBLAS computes a product of at most m*n*k = 65536 * GEMM_MULTITHREAD_THRESHOLD (4) multiply-adds on the
calling thread, with the same result whatever its thread count; larger ones are split over its own threads."""

MIN_PARALLEL_MACS = 1 << 23
"""A convolution with fewer multiply-adds runs its chunks on the calling thread."""

LARGE_CHUNK_MACS = 1 << 25
"""Multiply-adds per chunk of a large convolution (one image's product above BLAS_SERIAL_MACS; chunks of equal
whole numbers of images, at most this size unless one image is larger): products big enough for BLAS to run at
full speed on one thread, chunks small enough to balance over the workers and to keep the per-thread im2col
buffers a fraction of the batch's."""


def _chunk_images(g: _Conv, nf: int) -> int:
    """Images per chunk of a convolution's products, fixed by the shapes (never by the thread count, so results
    do not depend on it).

    Each chunk's im2col matrix and products are made by one task of the task scheduler. A small convolution's
    chunks stay at most BLAS_SERIAL_MACS multiply-adds, so OpenBLAS runs them on the calling thread without waking
    its own threads per product (which costs more than such a product, and far more on a busy machine). A large
    convolution's chunks hold LARGE_CHUNK_MACS, computed with OpenBLAS at one thread (`_over_chunks`): the cores
    are used by daphnec's workers, not by OpenBLAS's threads, which spin-wait for each other and wait for the OS
    scheduler on a busy machine (bench/README.md)."""
    per_image = max(nf * g.ckk * g.pq, 1)
    if per_image <= BLAS_SERIAL_MACS:
        return BLAS_SERIAL_MACS // per_image
    chunks = max(1, -(-g.n * per_image // LARGE_CHUNK_MACS))
    return max(1, -(-g.n // chunks))


def _over_chunks(g: _Conv, nf: int, run_chunk) -> int:
    """Run `run_chunk(c, n0, n1)` for the chunks of `_chunk_images` images (serially when the convolution is
    small); returns the number of chunks."""
    k = _chunk_images(g, nf)
    chunks = -(-g.n // k)

    def run(c0: int, c1: int) -> None:
        for c in range(c0, c1):
            run_chunk(c, c * k, min(g.n, (c + 1) * k))

    if chunks <= 1 or g.n * nf * g.ckk * g.pq < MIN_PARALLEL_MACS:
        run(0, chunks)
    else:
        from daphnec.runtime.vectorized.pipeline import schedule_tasks

        with one_blas_thread():
            schedule_tasks(("dnn.conv_chunks", getattr(run_chunk, "__code__", None)), chunks, run)
    return chunks


def _im2col(A: np.ndarray, g: _Conv, n0: int, n1: int, col: np.ndarray) -> np.ndarray:
    """Fill `col` ((C*fh*fw) x ((n1-n0)*P*Q), C-contiguous) with the im2col matrix of images [n0, n1): column
    (n-n0)*P*Q + p*Q + q holds the input cells output (p, q) of image n multiplies with the filter (0 for
    padding)."""
    fn = dnn_loops.function("im2col", A.dtype)
    args = g.loop_args(col.shape[1])
    fn(A.ctypes.data, col.ctypes.data, args[0], n0, n1, *args[1:])
    return col


def _col2im(dcol: np.ndarray, g: _Conv, n0: int, n1: int, dx: np.ndarray) -> None:
    """The adjoint of `_im2col`: every cell of `dcol` (the columns of images [n0, n1)) added to the cell of dx it
    was read from."""
    fn = dnn_loops.function("col2im", dcol.dtype)
    args = g.loop_args(dcol.shape[1])
    fn(dcol.ctypes.data, dx.ctypes.data, args[0], n0, n1, *args[1:])


def _per_filter(D: np.ndarray, g: _Conv, nf: int, n0: int, n1: int) -> np.ndarray:
    """Rows [n0, n1) of dout (N x F*P*Q) as F x ((n1-n0)*P*Q), the layout of the im2col products (workspace)."""
    out = _WORKSPACE.array(1, (nf, (n1 - n0) * g.pq), D.dtype)
    out.reshape(nf, n1 - n0, g.pq)[...] = D[n0:n1].reshape(n1 - n0, nf, g.pq).transpose(1, 0, 2)
    return out


# ---------------------------------------------------------------------------------------------------------------------
# conv2d
# ---------------------------------------------------------------------------------------------------------------------


def conv2d(data, filt, bias, n, c, h, w, fh, fw, sh, sw, ph, pw) -> tuple[np.ndarray, int, int]:
    """`out, P, Q = conv2d(...)`: out is N x (F * P * Q) with F = nrow(filter)."""
    g = _conv_geometry("conv2d", n, c, h, w, fh, fw, sh, sw, ph, pw)
    A = _float_matrix(data, "conv2d")
    F = _float_matrix(filt, "conv2d", A.dtype)
    B = _float_matrix(bias, "conv2d", A.dtype).ravel()
    nf = F.shape[0]
    if F.shape[1] != g.ckk:
        raise DaphneRuntimeError(
            f"conv2d: the filter must be F x {g.ckk} (numChannels*filterHeight*filterWidth), "
            f"but it is {F.shape[0]}x{F.shape[1]}"
        )
    if B.size < nf:
        raise DaphneRuntimeError(f"conv2d: the bias must have at least {nf} value(s), one per filter")
    _check_shape("conv2d", A, "the input", g.n, g.c * g.h * g.w, "numImages x numChannels*imgHeight*imgWidth")
    out = np.empty((g.n, nf * g.pq), dtype=A.dtype)
    bias_col = B[:nf, None]

    def finish(prod: np.ndarray, n0: int, n1: int) -> None:
        """F x ((n1-n0)*P*Q) products -> rows n0..n1 of out, plus the bias."""
        m = n1 - n0
        np.add(prod.reshape(nf, m, g.pq).transpose(1, 0, 2), bias_col, out=out[n0:n1].reshape(m, nf, g.pq))

    def chunk(_: int, n0: int, n1: int) -> None:
        col = _im2col(A, g, n0, n1, _WORKSPACE.array(0, (g.ckk, (n1 - n0) * g.pq), A.dtype))
        finish(np.matmul(F, col, out=_WORKSPACE.array(1, (nf, col.shape[1]), A.dtype)), n0, n1)

    with quiet():
        _over_chunks(g, nf, chunk)
    return out, g.p, g.q


def _conv_backward_args(who, dout, sh, sw, ph, pw, n, c, h, w, nf, fc, fh, fw) -> tuple[_Conv, int, np.ndarray]:
    g = _conv_geometry(who, n, c, h, w, fh, fw, sh, sw, ph, pw)
    nf, fc = _ints(who, nf, fc)
    if fc != g.c:
        raise DaphneRuntimeError(f"{who}: filterNumChannels ({fc}) must equal inputNumChannels ({g.c})")
    D = _float_matrix(dout, who)
    _check_shape(who, D, "the output gradient", g.n, nf * g.pq, f"inputBatchSize x filterNumFilters*{g.p}*{g.q}")
    return g, nf, D


def conv2d_backward_filter(data, dout, sh, sw, ph, pw, n, c, h, w, nf, fc, fh, fw) -> np.ndarray:
    """`conv2d_backward_filter(input, output, strideH, strideW, padH, padW, inputBatchSize, inputNumChannels,
    inputH, inputW, filterNumFilters, filterNumChannels, filterH, filterW)`: d loss / d filter (F x C*fh*fw) of
    `conv2d` given d loss / d output (`output`, N x F*P*Q). The batch's sum runs over chunks of images in chunk
    order, so it does not depend on the number of threads."""
    g, nf, D = _conv_backward_args("conv2d_backward_filter", dout, sh, sw, ph, pw, n, c, h, w, nf, fc, fh, fw)
    A = _float_matrix(data, "conv2d_backward_filter", D.dtype)
    _check_shape(
        "conv2d_backward_filter",
        A,
        "the input",
        g.n,
        g.c * g.h * g.w,
        "inputBatchSize x inputNumChannels*inputH*inputW",
    )
    partial = np.zeros((-(-g.n // _chunk_images(g, nf)), nf, g.ckk), dtype=D.dtype)

    def chunk(i: int, n0: int, n1: int) -> None:
        col = _im2col(A, g, n0, n1, _WORKSPACE.array(0, (g.ckk, (n1 - n0) * g.pq), D.dtype))
        np.matmul(_per_filter(D, g, nf, n0, n1), col.T, out=partial[i])

    with quiet():
        _over_chunks(g, nf, chunk)
        return partial.sum(axis=0)


def conv2d_backward_data(filt, dout, sh, sw, ph, pw, n, c, h, w, nf, fc, fh, fw) -> np.ndarray:
    """`conv2d_backward_data(filter, output, strideH, ...)` (the arguments of `conv2d_backward_filter`, the filter
    first): d loss / d input (N x C*H*W) of `conv2d` given d loss / d output."""
    g, nf, D = _conv_backward_args("conv2d_backward_data", dout, sh, sw, ph, pw, n, c, h, w, nf, fc, fh, fw)
    F = _float_matrix(filt, "conv2d_backward_data", D.dtype)
    _check_shape(
        "conv2d_backward_data", F, "the filter", nf, g.ckk, "filterNumFilters x filterNumChannels*filterH*filterW"
    )
    dx = np.zeros((g.n, g.c * g.h * g.w), dtype=D.dtype)

    def chunk(_: int, n0: int, n1: int) -> None:
        d2 = _per_filter(D, g, nf, n0, n1)
        _col2im(np.matmul(F.T, d2, out=_WORKSPACE.array(0, (g.ckk, d2.shape[1]), D.dtype)), g, n0, n1, dx)

    with quiet():
        _over_chunks(g, nf, chunk)
    return dx


# ---------------------------------------------------------------------------------------------------------------------
# pooling
# ---------------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Pool(_Window):
    """A pooling of kind `max` or `avg`."""

    kind: str

    @property
    def quick(self) -> bool:
        """DAPHNE's shortcut for P = Q = 1 and 1-pixel-wide images (no padding or stride applied)."""
        return self.p == 1 and self.q == 1 and self.w == 1

    @property
    def spills(self) -> bool:
        """A window starts past the right edge and reads on in the next rows (possibly of the next image)."""
        return self.ph == 0 and self.pw == 0 and (self.q - 1) * self.sw > self.w

    def loop_args(self) -> tuple[int, ...]:
        return (self.c, self.h, self.w, self.ph, self.pw, self.p, self.q, self.kh, self.kw, self.sh, self.sw)


def _pool_geometry(kind: str, who: str, n, c, h, w, kh, kw, sh, sw, ph, pw) -> _Pool:
    n, c, h, w, kh, kw, sh, sw, ph, pw = _ints(who, n, c, h, w, kh, kw, sh, sw, ph, pw)
    p = _out_extent(who, h, kh, ph, sw)  # sic: DAPHNE uses the width stride for the height
    q = _out_extent(who, w, kw, pw, sh)
    return _Pool(n, c, h, w, kh, kw, sh, sw, ph, pw, p, q, kind)


def avg_pool2d(data, n, c, h, w, pool_h, pool_w, sh, sw, ph, pw) -> tuple[np.ndarray, int, int]:
    """`out, P, Q = avg_pool2d(...)`."""
    return _pool_forward(_pool_geometry("avg", "avg_pool2d", n, c, h, w, pool_h, pool_w, sh, sw, ph, pw), data)


def max_pool2d(data, n, c, h, w, pool_h, pool_w, sh, sw, ph, pw) -> tuple[np.ndarray, int, int]:
    """`out, P, Q = max_pool2d(...)`."""
    return _pool_forward(_pool_geometry("max", "max_pool2d", n, c, h, w, pool_h, pool_w, sh, sw, ph, pw), data)


def avg_pool2d_backward(data, dout, n, c, h, w, pool_h, pool_w, sh, sw, ph, pw) -> np.ndarray:
    """`avg_pool2d_backward(input, dOut, batchSize, numChannels, imgH, imgW, poolH, poolW, strideH, strideW, padH,
    padW)`: d loss / d input of `avg_pool2d` given d loss / d output."""
    g = _pool_geometry("avg", "avg_pool2d_backward", n, c, h, w, pool_h, pool_w, sh, sw, ph, pw)
    return _pool_backward(g, data, dout)


def max_pool2d_backward(data, dout, n, c, h, w, pool_h, pool_w, sh, sw, ph, pw) -> np.ndarray:
    """`max_pool2d_backward(...)` (the arguments of `avg_pool2d_backward`): d loss / d output goes to the first
    cell of each window holding its maximum, if that maximum is above 0 (the forward fold starts from 0)."""
    g = _pool_geometry("max", "max_pool2d_backward", n, c, h, w, pool_h, pool_w, sh, sw, ph, pw)
    return _pool_backward(g, data, dout)


def _pool_input(g: _Pool, data, who: str, dtype: np.dtype | None = None) -> np.ndarray:
    A = _float_matrix(data, who, dtype)
    _check_shape(who, A, "the input", g.n, g.c * g.h * g.w, "numImages x numChannels*imgHeight*imgWidth")
    return A


def _plen(g: _Pool, dt: np.dtype):
    return dt.type(1) / dt.type(g.kw * g.kh)


def _pool_forward(g: _Pool, data) -> tuple[np.ndarray, int, int]:
    who = f"{g.kind}_pool2d"
    A = _pool_input(g, data, who)
    if g.quick:
        return _quick_forward(g, A), g.p, g.q
    out = np.empty((g.n, g.c * g.p * g.q), dtype=A.dtype)
    fn = dnn_loops.function(f"{g.kind}pool_fwd{'_pad' if g.ph or g.pw else ''}", A.dtype)
    plen, args = _plen(g, A.dtype), g.loop_args()

    def run(n0: int, n1: int) -> int:
        return fn(A.ctypes.data, A.size, out.ctypes.data, 0, n0, n1, *args, plen)

    if any(over_images(g.n, g.c * g.p * g.q * g.kh * g.kw, run)):
        raise DaphneRuntimeError(f"{who}: a pooling window reads past the end of the input")
    return out, g.p, g.q


def _pool_backward(g: _Pool, data, dout) -> np.ndarray:
    who = f"{g.kind}_pool2d_backward"
    D = _float_matrix(dout, who)
    _check_shape(who, D, "dOut", g.n, g.c * g.p * g.q, f"batchSize x numChannels*{g.p}*{g.q}")
    A = _pool_input(g, data, who, D.dtype)
    if g.quick:
        return _quick_backward(g, D)
    dx = np.zeros((g.n, g.c * g.h * g.w), dtype=D.dtype)
    fn = dnn_loops.function(f"{g.kind}pool_bwd{'_pad' if g.ph or g.pw else ''}", D.dtype)
    plen, args = _plen(g, D.dtype), g.loop_args()

    def run(n0: int, n1: int) -> int:
        return fn(A.ctypes.data, A.size, D.ctypes.data, dx.ctypes.data, n0, n1, *args, plen)

    # A spilling window adds into the rows of the next image: one task then.
    statuses = [run(0, g.n)] if g.spills else over_images(g.n, g.c * g.p * g.q * g.kh * g.kw, run)
    if any(statuses):
        raise DaphneRuntimeError(f"{who}: a pooling window reads past the end of the input")
    return dx


def _quick_forward(g: _Pool, A: np.ndarray) -> np.ndarray:
    seg = A.reshape(g.n, g.c, g.h)[:, :, : min(g.kh, g.h)]
    if g.kind == "avg":
        s = np.zeros((g.n, g.c), dtype=A.dtype)
        with quiet():
            for k in range(seg.shape[2]):
                s = s + seg[:, :, k]
            return np.ascontiguousarray(s * _plen(g, A.dtype))
    top = np.finfo(A.dtype).max
    hit_inf = np.isposinf(seg).any(axis=2)
    return np.where(hit_inf, np.inf, top).astype(A.dtype)


def _quick_backward(g: _Pool, D: np.ndarray) -> np.ndarray:
    """The quick path's max is a constant (gradient 0); its average weighs the first min(poolH, imgH) cells."""
    dx = np.zeros((g.n, g.c, g.h), dtype=D.dtype)
    if g.kind == "avg":
        with quiet():
            dx[:, :, : min(g.kh, g.h)] = (D * _plen(g, D.dtype))[:, :, None]
    return dx.reshape(g.n, g.c * g.h)


# ---------------------------------------------------------------------------------------------------------------------
# batch_norm2d, biasAdd, relu, softmax, affine
# ---------------------------------------------------------------------------------------------------------------------


def batch_norm2d(data, gamma, beta, ema_mean, ema_var, eps) -> np.ndarray:
    """`batch_norm2d(inputData, gamma, beta, emaMean, emaVar, eps)`: inference-mode batch normalisation."""
    A = _float_matrix(data, "batch_norm2d")
    params = [_float_matrix(x, "batch_norm2d", A.dtype).ravel() for x in (gamma, beta, ema_mean, ema_var)]
    n = A.shape[0]
    if any(v.size < n for v in params):
        raise DaphneRuntimeError(
            f"batch_norm2d: gamma, beta, emaMean and emaVar need at least {n} value(s) (one per row of inputData)"
        )
    g, b, mean, var = (v[:n, None] for v in params)
    e = A.dtype.type(eps)
    with quiet():
        x_hat = (A - mean) / np.sqrt(var + e)
        return np.ascontiguousarray(g * x_hat + b)


def batch_norm2d_backward(mean, inv_var, data, dout, gamma, eps) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`dX, dGamma, dBeta = batch_norm2d_backward(mean, invVar, input, dout, gamma, eps)`: the gradients of
    training-mode batch normalisation `gamma[c] * (x - mean[c]) * invVar[c] + beta[c]` with the per-channel batch
    mean and invVar = 1 / sqrt(var + eps) (so `eps` is not used, as in DAPHNE). C = nrow(gamma) channels split
    the columns of input; the per-channel sums are taken in f64 like DAPHNE's (its `double` accumulators)."""
    who = "batch_norm2d_backward"
    D = _float_matrix(dout, who)
    X = _float_matrix(data, who, D.dtype)
    G, M, V = (_float_matrix(v, who, D.dtype).ravel() for v in (gamma, mean, inv_var))
    n, chw = D.shape
    nch = G.size
    if X.shape != D.shape:
        raise DaphneRuntimeError(f"{who}: input ({X.shape[0]}x{X.shape[1]}) and dout ({n}x{chw}) must have one shape")
    if nch == 0 or chw % nch:
        raise DaphneRuntimeError(f"{who}: the {chw} columns of input do not split into nrow(gamma) = {nch} channels")
    if M.size != nch or V.size != nch:
        raise DaphneRuntimeError(f"{who}: mean and invVar must have one value per channel ({nch})")
    hw = chw // nch
    m = float(n * hw)
    d3, x3 = D.reshape(n, nch, hw), X.reshape(n, nch, hw)
    with quiet():
        centered = x3 - M[None, :, None]
        d_beta = d3.sum(axis=(0, 2), dtype=np.float64)
        dc = (d3 * centered).sum(axis=(0, 2), dtype=np.float64)  # sum(dout * (x - mean)) per channel
        g64, v64 = G.astype(np.float64), V.astype(np.float64)
        d_gamma = dc * v64
        d_var = -(g64 * dc) * 0.5 * v64**3
        d_mean = -(g64 * d_beta) * v64 + d_var * (-2.0 / m) * centered.sum(axis=(0, 2), dtype=np.float64)
        a = (g64 * v64).astype(D.dtype)[None, :, None]
        bcoef = (d_var * (2.0 / m)).astype(D.dtype)[None, :, None]
        ccoef = (d_mean / m).astype(D.dtype)[None, :, None]
        dx = d3 * a + centered * bcoef + ccoef
    return dx.reshape(n, chw), d_gamma.astype(D.dtype).reshape(nch, 1), d_beta.astype(D.dtype).reshape(nch, 1)


def bias_add(data, bias) -> np.ndarray:
    """`biasAdd(input, bias)`: bias[c] added to the c-th of `nrow(bias)` equal column blocks of each row."""
    A = _float_matrix(data, "biasAdd")
    B = _float_matrix(bias, "biasAdd", A.dtype)
    nch = B.shape[0]
    if nch == 0:
        raise DaphneRuntimeError("biasAdd: the bias must have at least one row")
    hw = A.shape[1] // nch
    res = np.zeros_like(A)
    used = nch * hw
    with quiet():
        res[:, :used] = (A[:, :used].reshape(A.shape[0], nch, hw) + B.ravel()[:nch, None]).reshape(A.shape[0], used)
    return res


def relu(data) -> np.ndarray:
    """`relu(X)`: max(0, x) per element."""
    A = _float_matrix(data, "relu")
    return np.ascontiguousarray(np.where(A > 0, A, A.dtype.type(0)))


def softmax(data) -> np.ndarray:
    """`softmax(X)`: exp(x - rowMax) / rowSum per row (Softmax.h)."""
    A = _float_matrix(data, "softmax")
    if A.shape[1] == 0:
        return A.copy()
    clean = np.where(np.isnan(A), -np.inf, A)
    row_max = np.max(clean, axis=1, keepdims=True)
    row_max = np.where(np.isnan(A[:, :1]), A[:, :1], row_max)
    with quiet():
        e = np.exp(A - row_max)
        total = np.cumsum(e, axis=1, dtype=A.dtype)[:, -1:]
        inv = A.dtype.type(1) / total
        return np.ascontiguousarray(e * inv)


def affine(data, weights, bias) -> np.ndarray:
    """`affine(inputData, weightData, biasData)`: inputData @ weightData + biasData (bias broadcast per row)."""
    A = _float_matrix(data, "affine")
    W = _float_matrix(weights, "affine", A.dtype)
    B = _float_matrix(bias, "affine", A.dtype)
    if A.shape[1] != W.shape[0]:
        raise DaphneRuntimeError(
            f"affine: shape mismatch: lhs {A.shape[0]}x{A.shape[1]}, rhs {W.shape[0]}x{W.shape[1]}"
        )
    if B.shape != (1, W.shape[1]):
        raise DaphneRuntimeError(f"affine: the bias must be a 1x{W.shape[1]} row, but it is {B.shape[0]}x{B.shape[1]}")
    with quiet():
        prod = _product_on_workers(A, W)
        prod += B
        return prod


def _product_on_workers(A: np.ndarray, W: np.ndarray) -> np.ndarray:
    """A @ W (C-contiguous). A large product (a LeNet's 64 x 3136 @ 3136 x 512 layer) runs as blocks of rows of
    equal size, fixed by the shapes, on the task scheduler with OpenBLAS at one thread, like a large convolution's
    chunks (`_chunk_images`); each result cell is the same BLAS dot product whatever the blocks or threads."""
    m, k = A.shape
    n = W.shape[1]
    blocks = -(-m * k * n // LARGE_CHUNK_MACS)
    if blocks <= 1 or m * k * n < MIN_PARALLEL_MACS or m < 2:
        return np.ascontiguousarray(A @ W)
    rows = -(-m // blocks)
    out = np.empty((m, n), dtype=np.result_type(A, W))

    def run(b0: int, b1: int) -> None:
        for b in range(b0, b1):
            np.matmul(A[b * rows : (b + 1) * rows], W, out=out[b * rows : (b + 1) * rows])

    from daphnec.runtime.vectorized.pipeline import schedule_tasks

    with one_blas_thread():
        schedule_tasks("dnn.product", -(-m // rows), run)
    return out
