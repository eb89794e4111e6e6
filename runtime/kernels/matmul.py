"""Matrix multiplication `A @ B` (DAPHNE's MatMul with transa = transb = false)."""

from __future__ import annotations

import numpy as np

from runtime.errors import DaphneRuntimeError
from runtime.values import cast_matrix


def matmul(A: np.ndarray, B: np.ndarray, vt: str) -> np.ndarray:
    """`A @ B` in value type `vt` (the most general of both); inner dimensions must agree.

    Float types use BLAS like DAPHNE; integer products wrap; bool computes OR of ANDs like the C++ loop.
    """
    (ar, ac), (br, bc) = A.shape, B.shape
    if ac != br:
        raise DaphneRuntimeError(f"matMul: shape mismatch: lhs {ar}x{ac}, rhs {br}x{bc} "
                                 f"(#cols of lhs must equal #rows of rhs)")
    if vt == "str":
        raise DaphneRuntimeError("matMul: value type str is not supported")
    a, b = cast_matrix(A, vt), cast_matrix(B, vt)
    with np.errstate(all="ignore"):
        res = np.matmul(a, b)
    return np.ascontiguousarray(res)
