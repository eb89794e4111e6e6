"""Deep-neural-network builtins on NCHW images stored one per row (DAPHNE's CPU kernels Conv2DForward.h,
Pooling.cpp, BatchNorm2DTestForward.h, BiasAdd.h, Softmax.h, plus `relu` and `affine`).

The kernels mirror DAPHNE's observable behaviour, quirks included:
- `conv2d` accumulates `padded * filter` per output over channel, filter row, filter column (in that order),
  then adds `bias[f]`; DaphneDSL's 12-argument form passes the *filter* as the bias;
- pooling computes the output height with the width stride and the output width with the height stride; windows
  are accumulated row by row (average = sum of `rowSum * (1 / (poolH * poolW))`, max folds from 0 with
  `std::max`); for 1x1 outputs of 1-pixel-wide images the max starts from the type's largest value;
- `batch_norm2d` takes gamma/beta/mean/var of row (image) i for row i;
- `biasAdd` splits the columns into `nrow(bias)` channels.
"""

from __future__ import annotations

import numpy as np

from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.values import as_dense

_U32 = 0xFFFFFFFF


def _float_matrix(X, who: str, dtype: np.dtype | None = None) -> np.ndarray:
    A = as_dense(X)
    if not isinstance(A, np.ndarray) or A.dtype.kind != "f":
        raise DaphneRuntimeError(f"{who}: the data arguments must be f32/f64 matrices")
    return A if dtype is None or A.dtype == dtype else A.astype(dtype)


def _out_extent(who: str, img: int, win: int, pad: int, stride: int) -> int:
    """(img + 2 * pad - win) / stride + 1 in unsigned arithmetic, as DAPHNE's getPQ."""
    if stride <= 0:
        raise DaphneRuntimeError(f"{who}: strides must be positive")
    if win <= 0 or win > img + 2 * pad:
        raise DaphneRuntimeError(f"{who}: the window ({win}) must fit into the padded image extent ({img + 2 * pad})")
    return (img + 2 * pad - win) // stride + 1


def _images(A: np.ndarray, who: str, n: int, c: int, h: int, w: int) -> np.ndarray:
    if A.shape != (n, c * h * w):
        raise DaphneRuntimeError(
            f"{who}: the input must be {n}x{c * h * w} (numImages x numChannels*imgHeight*imgWidth), "
            f"but it is {A.shape[0]}x{A.shape[1]}"
        )
    return A.reshape(n, c, h, w)


def _pad(imgs: np.ndarray, ph: int, pw: int) -> np.ndarray:
    if ph == 0 and pw == 0:
        return imgs
    n, c, h, w = imgs.shape
    out = np.zeros((n, c, h + 2 * ph, w + 2 * pw), dtype=imgs.dtype)
    out[:, :, ph : ph + h, pw : pw + w] = imgs
    return out


# ---------------------------------------------------------------------------------------------------------------------
# conv2d
# ---------------------------------------------------------------------------------------------------------------------


def conv2d(data, filt, bias, n, c, h, w, fh, fw, sh, sw, ph, pw) -> tuple[np.ndarray, int, int]:
    """`out, P, Q = conv2d(...)`: out is N x (F * P * Q) with F = nrow(filter)."""
    n, c, h, w, fh, fw, sh, sw, ph, pw = (int(v) for v in (n, c, h, w, fh, fw, sh, sw, ph, pw))
    A = _float_matrix(data, "conv2d")
    F = _float_matrix(filt, "conv2d", A.dtype)
    B = _float_matrix(bias, "conv2d", A.dtype).ravel()
    p, q = _out_extent("conv2d", h, fh, ph, sh), _out_extent("conv2d", w, fw, pw, sw)
    nf = F.shape[0]
    if F.shape[1] != c * fh * fw:
        raise DaphneRuntimeError(
            f"conv2d: the filter must be F x {c * fh * fw} (numChannels*filterHeight*filterWidth), "
            f"but it is {F.shape[0]}x{F.shape[1]}"
        )
    if B.size < nf:
        raise DaphneRuntimeError(f"conv2d: the bias must have at least {nf} value(s), one per filter")
    padded = _pad(_images(A, "conv2d", n, c, h, w), ph, pw)
    filt4 = F.reshape(nf, c, fh, fw)
    out = np.zeros((n, nf, p, q), dtype=A.dtype)
    with np.errstate(all="ignore"):
        for ch in range(c):
            for i in range(fh):
                for j in range(fw):
                    patch = padded[:, ch, i : i + sh * (p - 1) + 1 : sh, j : j + sw * (q - 1) + 1 : sw]
                    out = out + patch[:, None, :, :] * filt4[None, :, ch, i, j, None, None]
        out = out + B[:nf][None, :, None, None]
    return np.ascontiguousarray(out.reshape(n, nf * p * q)), p, q


# ---------------------------------------------------------------------------------------------------------------------
# pooling
# ---------------------------------------------------------------------------------------------------------------------


def avg_pool2d(data, n, c, h, w, pool_h, pool_w, sh, sw, ph, pw) -> tuple[np.ndarray, int, int]:
    """`out, P, Q = avg_pool2d(...)`."""
    return _pool("avg", data, n, c, h, w, pool_h, pool_w, sh, sw, ph, pw)


def max_pool2d(data, n, c, h, w, pool_h, pool_w, sh, sw, ph, pw) -> tuple[np.ndarray, int, int]:
    """`out, P, Q = max_pool2d(...)`."""
    return _pool("max", data, n, c, h, w, pool_h, pool_w, sh, sw, ph, pw)


def _pool(kind: str, data, *dims) -> tuple[np.ndarray, int, int]:
    who = f"{kind}_pool2d"
    n, c, h, w, pool_h, pool_w, sh, sw, ph, pw = (int(v) for v in dims)
    A = _float_matrix(data, who)
    imgs = _images(A, who, n, c, h, w)
    p = _out_extent(who, h, pool_h, ph, sw)  # sic: DAPHNE uses the width stride for the height
    q = _out_extent(who, w, pool_w, pw, sh)
    plen = A.dtype.type(1) / A.dtype.type(pool_w * pool_h)
    if p == 1 and q == 1 and w == 1:
        out = _pool_column_quick(kind, imgs, min(pool_h, h), plen)
    elif ph == 0 and pw == 0:
        base = (np.arange(n)[:, None] * (c * h * w) + np.arange(c)[None, :] * (h * w))[:, :, None, None]
        out = _pool_windows(kind, A.ravel(), base, (h, w), (p, q), (pool_h, pool_w), (sh, sw), plen, who)
    else:
        padded = _pad(imgs, ph, pw)
        hp, wp = padded.shape[2], padded.shape[3]
        planes = padded.reshape(n * c, hp * wp)
        base = np.zeros((n, c, 1, 1), dtype=np.int64)
        rows = [
            _pool_windows(kind, planes[k], base[:1, :1], (hp, wp), (p, q), (pool_h, pool_w), (sh, sw), plen, who)
            for k in range(n * c)
        ]
        out = np.concatenate(rows, axis=0).reshape(n, c, p, q) if rows else np.zeros((n, c, p, q), dtype=A.dtype)
    return np.ascontiguousarray(out.reshape(n, c * p * q).astype(A.dtype, copy=False)), p, q


def _pool_column_quick(kind: str, imgs: np.ndarray, lenh: int, plen) -> np.ndarray:
    """DAPHNE's quick path for P = Q = 1 and 1-pixel-wide images (no padding or stride applied)."""
    seg = imgs[:, :, :lenh, 0]
    if kind == "avg":
        s = np.zeros(seg.shape[:2], dtype=imgs.dtype)
        for k in range(lenh):
            s = s + seg[:, :, k]
        return (s * plen)[:, :, None, None]
    top = np.finfo(imgs.dtype).max
    hit_inf = np.isposinf(seg).any(axis=2) if lenh else np.zeros(seg.shape[:2], dtype=bool)
    return np.where(hit_inf, np.inf, top).astype(imgs.dtype)[:, :, None, None]


def _pool_windows(
    kind: str,
    buf: np.ndarray,
    base: np.ndarray,
    extent: tuple[int, int],
    out: tuple[int, int],
    pool: tuple[int, int],
    stride: tuple[int, int],
    plen,
    who: str,
) -> np.ndarray:
    """Accumulate every window row by row over the flat buffer `buf` (image planes start at `base`)."""
    (rows, width), (p, q), (pool_h, pool_w), (sh, sw) = extent, out, pool, stride
    pp, qq = np.arange(p)[:, None], np.arange(q)[None, :]
    acc = np.zeros(base.shape[:2] + (p, q), dtype=buf.dtype)
    seg_len = np.where(qq * sw > width, pool_w, np.minimum(pool_w, width - qq * sw))  # unsigned wrap -> pool_w
    with np.errstate(all="ignore"):
        for k in range(pool_h):
            row = pp * sh + k
            row_ok = row < rows
            row_sum = np.zeros_like(acc)
            for j in range(pool_w):
                ok = row_ok & (j < seg_len)
                idx = base + np.where(ok, row * width + qq * sw + j, 0)
                if idx.size and int(idx.max()) >= buf.size:
                    raise DaphneRuntimeError(f"{who}: a pooling window reads past the end of the input")
                vals = buf[idx]
                if kind == "avg":
                    row_sum = np.where(ok, row_sum + vals, row_sum)
                else:
                    acc = np.where(ok & (acc < vals), vals, acc)
            if kind == "avg":
                acc = np.where(row_ok, row_sum * plen + acc, acc)
    return acc


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
    with np.errstate(all="ignore"):
        x_hat = (A - mean) / np.sqrt(var + e)
        return np.ascontiguousarray(g * x_hat + b)


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
    with np.errstate(all="ignore"):
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
    with np.errstate(all="ignore"):
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
    with np.errstate(all="ignore"):
        return np.ascontiguousarray(A @ W + B)
