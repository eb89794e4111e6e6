"""Calling the update (`upd`) and aggregation (`agg`) functions and checking their results.

`upd(model, hyperparams, X_batch, y_batch) -> gradients` and `agg(model, hyperparams, gradients) -> model` are
compiled DaphneDSL functions (plain Python callables). Their list arguments are `DaphneList`s; a result may be a
list or a 1-tuple wrapping one (a DaphneDSL function's results are a tuple). Gradients must be as many matrices
as the model has, of the same shapes; `agg` must return a model of the same shapes. Violations raise
`DaphneRuntimeError("paramserv: ...")`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.kernels.lists import EMPTY_KIND, DaphneList, element_kind
from daphnec.runtime.paramserv.reduction import add_arrays
from daphnec.runtime.values import is_csr


def as_list(items: Sequence[object], kind: tuple[str, str] | None = None) -> DaphneList:
    """A DaphneList of the given matrices (kind from the first element unless given)."""
    if isinstance(items, DaphneList) and kind is None:
        return items
    if kind is None:
        kind = element_kind(items[0]) if items else EMPTY_KIND
    return DaphneList(tuple(items), kind)


def unwrap(r: object) -> object:
    """A UDF's result without the 1-tuples around its list."""
    while isinstance(r, (tuple, list)) and len(r) == 1 and isinstance(r[0], (tuple, list)):
        r = r[0]
    return r


def _is_matrix(x: object) -> bool:
    return isinstance(x, np.ndarray) or is_csr(x)


def _shape(x: object) -> str:
    s = getattr(x, "shape", ())
    return "x".join(str(d) for d in s) if s else type(x).__name__


def checked(r: object, model: Sequence[object], what: str) -> tuple:
    """The matrices a UDF returned, checked against the model's count and shapes."""
    r = unwrap(r)
    if not isinstance(r, (tuple, list)):
        r = (r,) if _is_matrix(r) else r
    if not isinstance(r, (tuple, list)):
        raise DaphneRuntimeError(f"paramserv: {what} must return a list of matrices, got {type(r).__name__}")
    if len(r) != len(model):
        raise DaphneRuntimeError(f"paramserv: {what} returned {len(r)} matrices for a model of {len(model)}")
    for j, (g, m) in enumerate(zip(r, model)):
        if not _is_matrix(g):
            raise DaphneRuntimeError(f"paramserv: {what} returned a {type(g).__name__} at position {j}, "
                                     "expected a matrix")  # fmt: skip
        if g.shape != m.shape:  # type: ignore[attr-defined]
            raise DaphneRuntimeError(f"paramserv: {what} returned a {_shape(g)} matrix at position {j} for the "
                                     f"{_shape(m)} model matrix")  # fmt: skip
    return tuple(r)


def call_upd(upd: Callable[..., object], model: DaphneList, hp: DaphneList, X: object, y: object) -> tuple:
    return checked(upd(model, hp, X, y), model, "upd")


def call_agg(agg: Callable[..., object], model: DaphneList, hp: DaphneList, grads: Sequence[object]) -> DaphneList:
    r = checked(agg(model, hp, as_list(grads)), model, "agg")
    return as_list(r, model.elem_kind if isinstance(model, DaphneList) else None)


def add(acc: tuple, g: Sequence[object], owned: bool) -> tuple:
    """acc + g element-wise (a worker's batches of one push); in place when `acc`'s arrays are ours (`owned`)."""
    return tuple(add_arrays(a, b, owned) for a, b in zip(acc, g))
