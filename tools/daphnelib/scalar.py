"""`Scalar`: a lazy DAPHNE scalar (DaphneLib's `daphne.operator.nodes.scalar.Scalar`).

Operators build DaphneDSL's binary operations; an operation with a matrix operand gives a `Matrix` (DaphneLib types
`Scalar op Matrix` as a Scalar and then returns only element [0, 0]). `**` and `%` keep their operand order
(DaphneLib swaps them), and `//` floors the quotient (DaphneLib emits invalid DaphneDSL): it is
`floor(as.f64(a) / as.f64(b))`, an f64.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from daphnec.dialects.op_kinds import EW_BINARY, EW_UNARY, EwBinaryKind, EwUnaryKind
from daphnec.tools.daphnelib.dag import MATRIX, SCALAR, Node, rule_vt
from daphnec.tools.daphnelib.operation_node import HANDLES, OperationNode

#: Python operator -> element-wise kind, for Matrix and Scalar alike (reflected forms are added by `add_operators`);
#: the DaphneDSL operator and the result's value type are the kind's (dialects/op_kinds.py).
ARITHMETIC = {"add": "add", "sub": "sub", "mul": "mul", "truediv": "div", "pow": "pow", "mod": "mod"}
COMPARISONS = {"lt": "lt", "le": "le", "gt": "gt", "ge": "ge", "eq": "eq", "ne": "neq"}

#: Element-wise unary methods (`X.sqrt()`): the numeric unary builtins.
UNARY: tuple[EwUnaryKind, ...] = tuple(r for r in EW_UNARY.values() if r.strings != "only" and r.kind != "minus")
#: Element-wise binary methods (`X.pow(2)` is `pow(X, 2)`): the numeric binary builtins.
BINARY_METHODS: tuple[EwBinaryKind, ...] = tuple(r for r in EW_BINARY.values() if r.function and r.operands != "str")


def _binary_operator(kind: str, reflected: bool) -> Callable[[OperationNode, object], Any]:
    def op(self: OperationNode, other: object) -> Any:
        return self._binary(kind, other, reflected)

    return op


def _unary_method(record: EwUnaryKind) -> Callable[[OperationNode], Any]:
    name = record.builtin

    def method(self: OperationNode) -> Any:
        n = self._node
        return self._call(n.kind, name, vt=rule_vt(record.vt_rule, n), shape=n.shape)

    method.__name__ = name
    method.__doc__ = f"Element-wise `{name}` (DaphneDSL's `{name}(x)`)."
    return method


def _binary_method(record: EwBinaryKind) -> Callable[[OperationNode, object], Any]:
    name = record.function

    def method(self: OperationNode, other: object = None, **numpy_kw: Any) -> Any:
        if numpy_kw:  # `np.max(X)` calls `X.max(axis=None, out=None)`: numpy's reduction of the computed value
            import numpy as np

            return getattr(np, name)(np.asarray(self), **numpy_kw)
        o = self._operand(other)
        kind = MATRIX if self._node.kind == MATRIX or getattr(o, "kind", None) == MATRIX else SCALAR
        return self._call(kind, name, other, vt=rule_vt(record.vt_rule, self._node, o), shape=self._node.shape)

    method.__name__ = name  # type: ignore[assignment]
    method.__doc__ = f"Element-wise `{name}(self, other)`."
    return method


def add_operators(cls: type) -> None:
    """The element-wise operators, comparisons and unary/binary methods shared by Matrix and Scalar."""
    for py, kind in ARITHMETIC.items():
        setattr(cls, f"__{py}__", _binary_operator(kind, False))
        setattr(cls, f"__r{py}__", _binary_operator(kind, True))
    for py, kind in COMPARISONS.items():  # Python reflects comparisons itself (`2 < X` is `X > 2`)
        setattr(cls, f"__{py}__", _binary_operator(kind, False))
    for unary in UNARY:
        setattr(cls, unary.builtin, _unary_method(unary))
    for binary in BINARY_METHODS:
        setattr(cls, binary.function, _binary_method(binary))  # type: ignore[arg-type]


class Scalar(OperationNode):
    """A lazy DAPHNE scalar; `compute()` returns a Python int, float, bool or str."""

    __slots__ = ()

    def __neg__(self) -> Scalar:
        return self._make(SCALAR, "unary", "-", (self._node,), self._node.vt)

    def __abs__(self) -> Scalar:
        return self.abs()  # type: ignore[attr-defined,no-any-return]

    def __floordiv__(self, other: object) -> Any:
        return _floor_div(self, other, reflected=False)

    def __rfloordiv__(self, other: object) -> Any:
        return _floor_div(self, other, reflected=True)

    def print(self) -> OperationNode:
        """`print(x);` when computed."""
        return self._sink("print")


def _floor_div(self: OperationNode, other: object, reflected: bool) -> Any:
    """`floor(as.f64(a) / as.f64(b))`: Python's `//` (DaphneDSL's `/` truncates integers toward zero)."""
    a, b = (as_f64(x) for x in (self._node, self._operand(other)))
    kind = MATRIX if MATRIX in (getattr(a, "kind", None), getattr(b, "kind", None)) else SCALAR
    quotient = self._make(kind, "binary", "/", (b, a) if reflected else (a, b), "f64", self._node.shape)
    return quotient.floor()


def as_f64(x: object) -> object:
    """`as.f64(x)` for a node (a matrix stays a matrix), `float(x)` for a literal."""
    if isinstance(x, Node):
        kind = MATRIX if x.kind == MATRIX else SCALAR
        return Node(kind, "call", "as.f64", (x,), vt="f64", shape=x.shape)
    return float(x)  # type: ignore[arg-type]


add_operators(Scalar)
HANDLES[SCALAR] = Scalar
