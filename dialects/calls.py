"""User-defined functions and their calls.

- Which functions an op refers to: calls, and the ops that take a function by name (`map`, `paramserv`); asked by
  specialization (dropping unused generic functions) and by the code that ships functions to MPI workers.
- Which overload of a function a call means (`choose_overload`), asked by the frontend when it builds a call and
  again by specialization for calls whose argument types were unknown then.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.ir import Attribute, Operation

from daphnec.dialects.ops import GenericCallOp, MapOp
from daphnec.dialects.ops_paramserv import ParamservOp
from daphnec.dialects.types import (
    FrameType,
    ListType,
    MatrixType,
    UnknownType,
    dsl_type,
    is_unknown,
    vt_name,
)
from daphnec.dialects.value_types import NUMERIC_VTS


def callees(op: Operation) -> tuple[str, ...]:
    """The function symbols `op` calls or passes on (empty for every other op)."""
    if isinstance(op, func.CallOp):
        return (op.callee.root_reference.data,)
    if isinstance(op, GenericCallOp):
        return (op.callee.data,)
    if isinstance(op, MapOp):
        return (op.func.data,)
    if isinstance(op, ParamservOp):
        return tuple(sym for _, sym in op.udfs)
    return ()


def reachable_functions(functions: dict[str, func.FuncOp], roots: list[str]) -> list[func.FuncOp]:
    """`roots` and every function they reach through `callees`, in first-reached order."""
    seen: list[str] = []
    todo = list(roots)
    while todo:
        sym = todo.pop(0)
        if sym in seen or sym not in functions:
            continue
        seen.append(sym)
        for op in functions[sym].walk():
            todo.extend(callees(op))
    return [functions[s] for s in seen]


# --- overloads -----------------------------------------------------------------------------------------------------

NO_MATCH, CONVERTS, EXACT = 0, 1, 2
"""How a parameter takes an argument (`accepts`)."""


def accepts(param: Attribute, arg: Attribute) -> int:
    """EXACT where DAPHNE's frontend finds parameter and argument compatible (equal types, either unknown, or
    matrices one of whose value types is unknown; src/parser/daphnedsl/DaphneDSLVisitor.cpp
    `argAndUDFParamCompatible`), else NO_MATCH: DAPHNE no longer casts an argument to a typed parameter's value
    type, so `f(3)` for `def f(x: f64)` is an error (an si64 literal is not an f64), as is a matrix<si64> for a
    matrix<f64> parameter. CONVERTS is left for frames whose parameter names a schema the argument does not have."""
    if param == arg or isinstance(param, UnknownType) or isinstance(arg, UnknownType):
        return EXACT
    if isinstance(param, MatrixType) and isinstance(arg, MatrixType):
        return EXACT if is_unknown(param) or is_unknown(arg) or param.element_type == arg.element_type else NO_MATCH
    if isinstance(param, FrameType) and isinstance(arg, FrameType):
        return EXACT if not param.column_types.data or param.column_types == arg.column_types else CONVERTS
    if isinstance(param, ListType) and isinstance(arg, ListType):
        return EXACT
    return NO_MATCH


def _numeric(t: Attribute) -> bool:
    return vt_name(t) in NUMERIC_VTS


@dataclass(frozen=True)
class Overload:
    """One definition of a user-defined function: its IR symbol and parameter types (Unknown where untyped)."""

    sym: str
    params: tuple[Attribute, ...]


def choose_overload(
    calls: Sequence[tuple[Overload, Sequence[Attribute]]],
) -> tuple[list[Overload], bool]:
    """Which overloads a call may mean, given per overload the argument types bound to its parameters; in
    definition order, and whether they match exactly. DAPHNE takes the first exact match (its function table keeps
    definition order); without one, the overloads the arguments convert to (more than one is ambiguous)."""
    fitting = [(o, args) for o, args in calls if len(o.params) == len(args)]
    grades = [[accepts(p, a) for p, a in zip(o.params, args)] for o, args in fitting]
    exact = [o for (o, _), g in zip(fitting, grades) if all(x == EXACT for x in g)]
    if exact:
        return exact, True
    return [o for (o, _), g in zip(fitting, grades) if all(x != NO_MATCH for x in g)], False


def signature(name: str, types: Sequence[Attribute]) -> str:
    """`f(si64, matrix<f64>)`: a call's or a definition's types as a DaphneDSL user reads them."""
    return f"{name}({', '.join(dsl_type(t) for t in types)})"


def overload_error(name: str, overloads: Sequence[Overload], args: Sequence[Attribute], found: int) -> str:
    """Why no single overload of `name` fits a call with argument types `args` (`found` = how many convert)."""
    options = ", ".join(signature(name, o.params) for o in overloads)
    if found > 1:
        return f"the call {signature(name, args)} is ambiguous: its arguments convert to several of {options}"
    return (
        f"no definition of function `{name}` for argument types ({', '.join(dsl_type(a) for a in args)}), "
        f"available options: {options}"
    )
