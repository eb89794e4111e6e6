"""Kernels behind DaphneDSL control flow: inclusive `for` ranges and the ternary `c ? a : b`."""

from __future__ import annotations

import numpy as np

from daphnec.runtime.errors import DaphneRuntimeError


def for_range(start: int, stop: int, step: int | None = None) -> tuple[int, int]:
    """Trip count and step of `for (i in start:stop[:step])`: inclusive bounds; without a step the direction
    follows start and stop (+1 or -1); a step of the wrong sign runs zero times; a zero step is an error."""
    if step is None:
        step = 1 if stop >= start else -1
    if step == 0:
        raise DaphneRuntimeError("for loop: the step must not be zero")
    count = (stop - start) // step + 1
    return (count if count > 0 else 0), step


def cond_scalar(c: object, then_val: object, else_val: object) -> object:
    """`c ? a : b` with a scalar condition (both values are already computed)."""
    return then_val if c else else_val


def cond_matrix(c: object, then_val: object, else_val: object) -> np.ndarray:
    """Element-wise `c ? a : b`: c is a matrix; a and b are matrices of c's shape or scalars (broadcast)."""
    cm = np.asarray(c)
    for v in (then_val, else_val):
        if isinstance(v, np.ndarray) and v.shape != cm.shape:
            raise DaphneRuntimeError(
                f"cond: shape mismatch: condition {cm.shape[0]}x{cm.shape[1]}, value {v.shape[0]}x{v.shape[1]}"
            )
    mask = cm != 0 if cm.dtype != object else np.vectorize(bool, otypes=[bool])(cm)
    return np.where(mask, then_val, else_val)
