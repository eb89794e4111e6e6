"""Outer binary operations (`outerAdd outerSub ... outerGe`): `lhs` (m x 1) and `rhs` (1 x n) give the m x n
matrix of `lhs[i] op rhs[j]` (DAPHNE's generalized outer product).

Each cell is computed exactly like the element-wise operation (`ew_binary`), so integer wrapping, C division,
`fmod`, `pow` through double and NaN handling of `min`/`max` agree with `+ - * / ...` on matrices.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.kernels import ew_binary
from daphnec.runtime.memory import check_alloc
from daphnec.runtime.values import as_dense

_cache: dict[tuple[str, str, str], Callable[[np.ndarray, np.ndarray], np.ndarray]] = {}


def outer_kernel(kind: str, operand_vt: str, res_vt: str) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """A function `(lhs, rhs) -> m x n matrix` for operands already cast to `operand_vt`."""
    key = (kind, operand_vt, res_vt)
    fn = _cache.get(key)
    if fn is None:
        fn = _cache[key] = _build(kind, operand_vt, res_vt)
    return fn


def _build(kind: str, operand_vt: str, res_vt: str) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    ew = ew_binary.matrix_kernel(kind, operand_vt, res_vt)
    name = "outer" + kind[0].upper() + kind[1:]

    def kernel(lhs, rhs) -> np.ndarray:
        lhs, rhs = as_dense(lhs), as_dense(rhs)
        if not (isinstance(lhs, np.ndarray) and isinstance(rhs, np.ndarray)):
            raise DaphneRuntimeError(f"{name}: both arguments must be matrices")
        (lr, lc), (rr, rc) = lhs.shape, rhs.shape
        if lc != 1 or rr != 1:
            raise DaphneRuntimeError(
                f"{name}: shape mismatch: lhs {lr}x{lc}, rhs {rr}x{rc} "
                f"(lhs must be a column (m x 1), rhs a row (1 x n))"
            )
        check_alloc(name, lr, rc, res_vt, "result")
        if rc == 0 or lr == 0:
            return ew(np.empty((lr, rc), dtype=lhs.dtype), np.empty((1, rc), dtype=rhs.dtype))
        # A read-only broadcast view: the element-wise cores are numpy ufuncs that write a fresh result, so the
        # m x n copy of `lhs` the operation does not need is never made.
        return np.ascontiguousarray(ew(np.broadcast_to(lhs, (lr, rc)), rhs))

    kernel.__name__ = f"{name}_{operand_vt}_{res_vt}"
    return kernel
