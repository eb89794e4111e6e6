"""Cumulative aggregation `cumSum cumProd cumMin cumMax` (DAPHNE's AggCum.h): per column, row r of the result
folds row r of the argument into row r - 1 of the result; the first row is copied. Same shape and value type.

The fold is DAPHNE's scalar function: integer sums/products wrap, float sums/products accumulate sequentially
(numpy's `cumsum`/`cumprod` along an axis are sequential too), `min`/`max` are `std::min`/`std::max`
(`b < a ? b : a`), so a NaN in the first row sticks while later NaNs are skipped; bool sums are logical or.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from daphnec.dialects.op_kinds import CUM_AGGREGATIONS
from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.values import as_dense


def cum_kernel(kind: str) -> Callable[[np.ndarray], np.ndarray]:
    """The kernel of `cum<Kind>(X)` (the kinds: dialects/op_kinds.py's CUM_AGGREGATIONS)."""
    if kind not in CUM_AGGREGATIONS:
        raise DaphneRuntimeError(f"unknown cumulative aggregation '{kind}'")
    return _KERNELS[kind]


def cum_sum(X) -> np.ndarray:
    X = _prepare(X, "sum")
    if X.dtype.kind == "b":
        return np.logical_or.accumulate(X, axis=0) if X.size else X.copy()
    with np.errstate(all="ignore"):
        return np.ascontiguousarray(np.cumsum(X, axis=0, dtype=X.dtype))


def cum_prod(X) -> np.ndarray:
    X = _prepare(X, "prod")
    if X.dtype.kind == "b":
        return np.logical_and.accumulate(X, axis=0) if X.size else X.copy()
    with np.errstate(all="ignore"):
        return np.ascontiguousarray(np.cumprod(X, axis=0, dtype=X.dtype))


def cum_min(X) -> np.ndarray:
    return _cum_select(_prepare(X, "min"), lambda prev, new: new < prev, np.minimum)


def cum_max(X) -> np.ndarray:
    return _cum_select(_prepare(X, "max"), lambda prev, new: prev < new, np.maximum)


def _prepare(X, kind: str) -> np.ndarray:
    X = as_dense(X)
    record = CUM_AGGREGATIONS[kind]
    if not isinstance(X, np.ndarray):
        raise DaphneRuntimeError(f"{record.builtin}: the argument must be a matrix")
    if X.dtype == object and not record.strings:
        raise DaphneRuntimeError(f"{record.builtin}: not supported on value type str")
    return X


def _cum_select(X: np.ndarray, take_new: Callable[[np.ndarray, np.ndarray], np.ndarray], ufunc: np.ufunc) -> np.ndarray:
    """Row-by-row `std::min`/`std::max` fold (vectorised over the columns)."""
    if X.dtype.kind in "iub":  # no NaN: numpy's accumulate is the same fold
        return np.ascontiguousarray(ufunc.accumulate(X, axis=0)) if X.size else X.copy()
    res = X.copy()
    for r in range(1, X.shape[0]):
        prev, new = res[r - 1], X[r]
        res[r] = np.where(take_new(prev, new), new, prev)
    return res


_KERNELS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "sum": cum_sum,
    "prod": cum_prod,
    "min": cum_min,
    "max": cum_max,
}
