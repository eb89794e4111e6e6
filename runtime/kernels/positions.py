"""How DaphneDSL positions become integer positions, for matrices and frames alike.

DAPHNE's frontend casts a position given as a number to si64 (`castSI64If` in DaphneDSLVisitor.cpp), a C++ cast
that truncates toward zero: `X[1.9, ]` is row 1 and `X[-3.7, ]` is position -3 (daphnec counts a negative
position from the end). Position matrices are truncated the same way; negative entries in them are out of bounds.
"""

from __future__ import annotations

import math

import numpy as np

from daphnec.runtime.errors import DaphneRuntimeError


def position(name: str, p: object, what: str) -> int:
    """One position (a number; a float truncated toward zero). `what`: 'row' or 'column', for messages."""
    if isinstance(p, (bool, np.bool_)):
        raise DaphneRuntimeError(f"{name}: a bool is not a valid {what} position")
    if isinstance(p, (float, np.floating)):
        if not math.isfinite(p):
            raise DaphneRuntimeError(f"{name}: {what} position {p} is not a finite number")
        return math.trunc(p)
    if isinstance(p, (int, np.integer)):
        return int(p)
    raise DaphneRuntimeError(f"{name}: unsupported {what} selector of type {type(p).__name__}")


def positions(name: str, flat: np.ndarray, what: str) -> np.ndarray:
    """The entries of a position matrix (1-D, numeric) as positions: floats truncated toward zero."""
    if flat.dtype.kind == "f":
        if not np.isfinite(flat).all():
            raise DaphneRuntimeError(f"{name}: the {what} position list contains NaN or infinity")
        return np.trunc(flat)
    return flat
