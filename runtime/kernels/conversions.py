"""Conversions: `quantize(X, min, max)` (DAPHNE's Quantize.h), f32 -> ui8 min/max quantization.

All arithmetic happens in float32 like the C++ kernel: scale = (max' - min') / 256 with [min', max'] widened to
contain 0, the zero point is `roundf(255 - max'/scale)` clamped to [0, 255], and each value becomes
`roundf(clamp(zero + x / scale, 0, 255))` (`roundf` rounds halves away from zero).
"""

from __future__ import annotations

import numpy as np

from daphnec.runtime.values import as_dense, float_array_to_int

_F = np.float32


def _roundf(x: np.ndarray) -> np.ndarray:
    """C `roundf`: half away from zero (exact: `x - trunc(x)` is exact in float32)."""
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= _F(0.5), t + np.copysign(_F(1), x), t).astype(np.float32)


def quantize(X, min_, max_) -> np.ndarray:
    """`quantize(X, min, max)`: a ui8 matrix of the same shape."""
    A = np.asarray(as_dense(X), dtype=np.float32)
    lo, hi = _F(min_), _F(max_)
    lo = _F(0) if lo > 0 else lo
    hi = _F(0) if hi < 0 else hi
    with np.errstate(all="ignore"):
        scale = (hi - lo) / _F(256)
        mapped_zero = _F(255) - hi / scale
        if mapped_zero < 0:
            q_zero = _F(0)
        elif mapped_zero > 255:
            q_zero = _F(255)
        else:
            q_zero = _F(float_array_to_int(_roundf(np.array([mapped_zero], dtype=np.float32)), "ui8")[0])
        value = q_zero + A / scale
        value = np.where(value > 255, _F(255), value)
        value = np.where(value < 0, _F(0), value)
        return np.ascontiguousarray(float_array_to_int(_roundf(value), "ui8").reshape(A.shape))
