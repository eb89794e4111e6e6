"""Matrix/frame dimensions (`nrow ncol ncell`, size type) and `as.scalar(X)`."""

from __future__ import annotations

import numpy as np

from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.frame import Frame
from daphnec.runtime.values import cast_scalar


def nrow(X: np.ndarray | Frame) -> int:
    """Number of rows (index/size_t scalar)."""
    return X.nrow if isinstance(X, Frame) else X.shape[0]


def ncol(X: np.ndarray | Frame) -> int:
    """Number of columns (index/size_t scalar)."""
    return X.ncol if isinstance(X, Frame) else X.shape[1]


def ncell(X: np.ndarray | Frame) -> int:
    """Number of cells, rows * cols (index/size_t scalar)."""
    return X.nrow * X.ncol if isinstance(X, Frame) else X.shape[0] * X.shape[1]


def as_scalar(X: np.ndarray, vt: str | None = None):
    """`as.scalar(X)`: the only element of a 1x1 matrix as a Python scalar of the matrix's value type, or cast to
    value type `vt` (`as.scalar<f64>(X)`, or a cast inference inserted)."""
    if type(X) is np.ndarray and X.shape == (1, 1):
        v = X.item()  # the cell as a Python scalar (a `str` of a str matrix), in one call
    elif not isinstance(X, np.ndarray):
        v = X  # already a scalar
    else:
        r, c = X.shape
        if r != 1 or c != 1:
            raise DaphneRuntimeError(f"as.scalar: the matrix must have exactly one element (1x1), but it is {r}x{c}")
        v = X[0, 0]
        v = v.item() if isinstance(v, np.generic) else v
    return v if vt is None else cast_scalar(v, vt)


def sparsity(X: object, estimate: float) -> float:
    """`sparsity(X)`: the compiler's estimate of X's fraction of non-zeros (-1: unknown), which the compiler
    passes in; X itself is not looked at (DAPHNE folds the op to a constant when the estimate is known, and its
    kernel returns -1 otherwise)."""
    return estimate


def is_symmetric(X) -> bool:
    """`isSymmetric(X)`: X[i, j] == X[j, i] for all i, j (IsSymmetric.h; a NaN off the diagonal makes it false,
    0x0 and 1x1 matrices are symmetric); a non-square matrix is an error."""
    from daphnec.runtime.values import as_dense

    r, c = X.shape
    if r != c:
        raise DaphneRuntimeError(f"isSymmetric: provided matrix is not square ({r}x{c})")
    if r <= 1:
        return True
    A = as_dense(X)
    upper = np.triu_indices(r, 1)
    return bool(np.all(A[upper] == A.T[upper]))
