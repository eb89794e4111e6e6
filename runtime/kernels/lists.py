"""List kernels: `createList`, `length`, `append`, `remove` (DAPHNE's CreateList.h, Length.h, Append.h, Remove.h)
and `L[i]` (daphnec's).

A list is a value (docs/architecture.md): a Python tuple of data objects; `append` and `remove` return new tuples
and never change their argument. The tuples are `DaphneList`s, which also remember the element's data and value
type, so that an empty list (after removing its last element) still prints DAPHNE's `List(0, DenseMatrix, double)`.
"""

from __future__ import annotations

import numpy as np

from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.values import is_csr, vt_of

EMPTY_KIND: tuple[str, str] = ("DenseMatrix", "f64")
"""The element kind of a list created empty (DAPHNE's default `List<DenseMatrix<double>>`)."""


def element_kind(x: object) -> tuple[str, str]:
    """(data type name, value type) of a list element, as DAPHNE's `List::print` names them."""
    if isinstance(x, np.ndarray) or is_csr(x):
        return ("CSRMatrix" if is_csr(x) else "DenseMatrix", vt_of(x))
    raise DaphneRuntimeError(f"list elements must be matrices, got a value of Python type {type(x).__name__}")


class DaphneList(tuple):
    """A tuple of data objects that knows its element type (kept when the tuple is empty)."""

    elem_kind: tuple[str, str]

    def __new__(cls, items: tuple | list, elem_kind: tuple[str, str]) -> DaphneList:
        self = super().__new__(cls, items)
        self.elem_kind = elem_kind
        return self


def _kind_of(lst: tuple) -> tuple[str, str] | None:
    kind = getattr(lst, "elem_kind", None)
    return kind if kind is not None else (element_kind(lst[0]) if lst else None)


def list_kind(lst: tuple) -> tuple[str, str]:
    """(data type name, value type) of a list's elements; a plain empty tuple counts as a list of f64 matrices."""
    return _kind_of(lst) or EMPTY_KIND


def create_list(*elems: object) -> DaphneList:
    """`createList(X, ...)`: at least one matrix, all of the same value type."""
    if not elems:
        raise DaphneRuntimeError("createList: expects at least one element")
    kinds = [element_kind(x) for x in elems]
    if any(k[1] != kinds[0][1] for k in kinds):
        raise DaphneRuntimeError(
            "createList: all elements must be matrices of the same value type, got " + ", ".join(k[1] for k in kinds)
        )
    return DaphneList(elems, kinds[0])


def length(lst: tuple) -> int:
    """`length(L)`: the number of elements (size type)."""
    return len(lst)


def append(lst: tuple, elem: object) -> DaphneList:
    """`append(L, X)`: a new list with X at the end."""
    kind = element_kind(elem)
    have = _kind_of(lst)
    if have is not None and have[1] != kind[1]:
        raise DaphneRuntimeError(f"append: the element's value type ({kind[1]}) differs from the list's ({have[1]})")
    return DaphneList((*lst, elem), have or kind)


def remove(lst: tuple, idx: int) -> tuple[DaphneList, object]:
    """`L2, X = remove(L, i)`: the list without its i-th element (0-based), and that element (List::remove)."""
    i = int(idx)
    if not 0 <= i < len(lst):
        raise DaphneRuntimeError(
            f"remove: trying to remove element at position {i} from a list with {len(lst)} elements"
        )
    kind = _kind_of(lst)
    assert kind is not None
    return DaphneList(lst[:i] + lst[i + 1 :], kind), lst[i]


def get(lst: tuple, idx: int) -> object:
    """`L[i]`: the i-th element (0-based); daphnec's addition, see dialects/ops_frame.py ListGetOp."""
    i = int(idx)
    if not 0 <= i < len(lst):
        raise DaphneRuntimeError(f"list index {i} is out of bounds for a list with {len(lst)} elements")
    return lst[i]
