"""Reorganisation: `reshape(X, rows, cols)` (row-major, like DAPHNE's Reshape.h) and `t(X)` / `transpose(X)`."""

from __future__ import annotations

import numpy as np

from runtime.errors import DaphneRuntimeError


def reshape(X: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """Row-major reshape; the number of cells must be retained.

    Returns a view of `X` (run-time values are never mutated in place, so sharing is safe, as in DAPHNE).
    """
    rows, cols = int(rows), int(cols)
    r, c = X.shape
    if rows < 0 or cols < 0 or rows * cols != r * c:
        raise DaphneRuntimeError(
            f"reshape: cannot reshape a {r}x{c} matrix ({r * c} cells) into {rows}x{cols} ({rows * cols} cells)")
    return np.ascontiguousarray(X).reshape(rows, cols)


def transpose(X: np.ndarray) -> np.ndarray:
    """`t(X)`: a new C-contiguous matrix with rows and columns swapped."""
    return np.ascontiguousarray(X.T)
