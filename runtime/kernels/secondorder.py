"""Second-order builtins: `map(X, udf)` applies a compiled DaphneDSL function to every element."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from daphnec.runtime.values import as_dense, cast_matrix, dtype_of


def map_matrix(x: np.ndarray, fn: Callable[[object], object], vt: str) -> np.ndarray:
    """Element-wise `fn` over a matrix (row-major order, as DAPHNE's Map kernel); the result has value type `vt`.

    The UDF is generated Python, so each element costs one call; elements go in as Python scalars."""
    dense = as_dense(x)
    values = [fn(v) for v in dense.ravel().tolist()]
    if vt == "str":
        out = np.empty(len(values), dtype=object)
        out[:] = values
        return out.reshape(dense.shape)
    arr = np.array(values, dtype=object).reshape(dense.shape) if values else np.empty(dense.shape, dtype=object)
    return cast_matrix(arr.astype(dtype_of(vt)) if vt != "bool" else arr.astype(bool), vt)
