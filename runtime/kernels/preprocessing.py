"""Data preprocessing: `oneHot`, `recode` and `bin` (DAPHNE's OneHot.h, Recode.h, Bin.h)."""

from __future__ import annotations

import math

import numpy as np

from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.memory import check_alloc
from daphnec.runtime.values import as_dense, cast_scalar, vt_of


def one_hot(arg, info) -> np.ndarray:
    """`oneHot(arg, info)`: column j is kept (info[0, j] == -1), dropped (0) or replaced by info[0, j] 0/1
    columns with a 1 at position arg[i, j]; the result keeps arg's value type."""
    A, spec_m = as_dense(arg), as_dense(info)
    if spec_m.shape[0] != 1:
        raise DaphneRuntimeError(
            f"oneHot: parameter info must be a row matrix, but it is {spec_m.shape[0]}x{spec_m.shape[1]}"
        )
    if spec_m.shape[1] != A.shape[1]:
        raise DaphneRuntimeError(
            f"oneHot: parameter info must provide information for each column of parameter arg "
            f"({A.shape[1]} column(s)), but has {spec_m.shape[1]}"
        )
    spec = spec_m[0].astype(np.int64)
    if (spec < -1).any():
        raise DaphneRuntimeError("oneHot: parameter info values must be -1, 0, or a positive integer")
    check_alloc("oneHot", A.shape[0], int(sum(1 if d == -1 else d for d in spec.tolist())), vt_of(A), "result")
    parts = [_encode_column(A[:, j], int(d), j) for j, d in enumerate(spec.tolist()) if d != 0]
    if not parts:
        return np.zeros((A.shape[0], 0), dtype=A.dtype)
    return np.ascontiguousarray(np.concatenate(parts, axis=1))


def _encode_column(col: np.ndarray, d: int, j: int) -> np.ndarray:
    if d == -1:
        return col.reshape(-1, 1)
    if col.dtype == object:
        return _encode_str_column(col, d, j)
    with np.errstate(invalid="ignore"):
        pos = np.trunc(col).astype(np.int64) if col.dtype.kind == "f" else col.astype(np.int64)
    bad = (pos < 0) | (pos >= d) | (np.isnan(col) if col.dtype.kind == "f" else False)
    if np.any(bad):
        v = col[np.argmax(bad)]
        raise DaphneRuntimeError(f"oneHot: value {v} in column {j} is out of the range [0, {d - 1}] given by info")
    out = np.zeros((len(col), d), dtype=col.dtype)
    out[np.arange(len(col)), pos] = 1
    return out


def _encode_str_column(col: np.ndarray, d: int, j: int) -> np.ndarray:
    """A str column: each cell must spell an integer position in [0, d-1]; the encoded cells are "0" and "1" (the
    result keeps the value type str)."""
    pos = np.empty(len(col), dtype=np.int64)
    for i, v in enumerate(col.tolist()):
        try:
            pos[i] = int(v.strip())
        except ValueError:
            raise DaphneRuntimeError(f"oneHot: value '{v}' in column {j} is not an integer position") from None
        if not 0 <= pos[i] < d:
            raise DaphneRuntimeError(f"oneHot: value {v} in column {j} is out of the range [0, {d - 1}] given by info")
    out = np.full((len(col), d), "0", dtype=object)
    out[np.arange(len(col)), pos] = "1"
    return out


def recode(arg, order_preserving: bool) -> tuple[np.ndarray, np.ndarray]:
    """`codes, dict = recode(arg, orderPreserving)`: si64 codes per element of the n x 1 `arg` and the distinct
    values (sorted if `orderPreserving`, else in order of first occurrence) as the decoding dictionary."""
    A = as_dense(arg)
    if A.shape[1] != 1:
        raise DaphneRuntimeError(
            f"recode: the argument must have exactly one column, but it is {A.shape[0]}x{A.shape[1]}"
        )
    col = A[:, 0]
    if col.size == 0:
        return np.empty((0, 1), dtype=np.int64), np.empty((0, 1), dtype=A.dtype)
    distinct, first, inverse = np.unique(col, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    if order_preserving:
        codes, dictionary = inverse, distinct
    else:
        by_first = np.argsort(first, kind="stable")
        rank = np.empty_like(by_first)
        rank[by_first] = np.arange(len(by_first))
        codes, dictionary = rank[inverse], distinct[by_first]
    d = np.empty((len(dictionary), 1), dtype=A.dtype)
    d[:, 0] = dictionary
    return np.ascontiguousarray(codes.astype(np.int64).reshape(-1, 1)), d


def bin(arg, num_bins, min_, max_) -> np.ndarray:  # noqa: A001 - DaphneDSL's name
    """`bin(arg, numBins[, min, max])`: bin number ceil((v - min) / binSize) - 1 clamped to [0, numBins - 1]
    with binSize = (max - min) / numBins; v <= min gives 0 and NaN stays NaN (float results)."""
    A = as_dense(arg)
    if A.dtype == object:
        raise DaphneRuntimeError("bin: not supported on value type str")
    vt = vt_of(A)
    lo, hi, n = cast_scalar(min_, vt), cast_scalar(max_, vt), int(num_bins)
    _validate(n, lo, hi, A.dtype.kind == "f")
    if lo == hi and n == 1:
        return np.zeros_like(A)
    with np.errstate(all="ignore"):
        bin_size = float(A.dtype.type(hi) - A.dtype.type(lo)) / n
        diff = (A - A.dtype.type(lo)).astype(np.float64)
        b = np.ceil(diff / bin_size) - 1
        b = np.where(b < 0, 0.0, np.where(b >= n, float(n - 1), b))
        b = np.where(A <= A.dtype.type(lo), 0.0, b)
    return np.ascontiguousarray(b.astype(A.dtype))


def _validate(n: int, lo, hi, is_float: bool) -> None:
    """Bin.h's argument checks, in its order."""
    if n <= 0:
        raise DaphneRuntimeError("bin-kernel: numBins must be greater than zero")
    if lo > hi:
        raise DaphneRuntimeError("bin-kernel: min must not be greater than max")
    if lo == hi and n > 1:
        raise DaphneRuntimeError("bin-kernel: min equals max, so numBins must not be greater than 1")
    if is_float:
        checks = [
            ("min", lo, "NaN"),
            ("max", hi, "NaN"),
            ("min", lo, "infinity"),
            ("max", hi, "infinity"),
            ("min", lo, "-infinity"),
            ("max", hi, "-infinity"),
        ]
        for name, v, what in checks:
            hit = math.isnan(v) if what == "NaN" else v == (math.inf if what == "infinity" else -math.inf)
            if hit:
                raise DaphneRuntimeError(f"bin-kernel: {name} must not be {what}")
