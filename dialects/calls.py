"""Which user-defined functions an op refers to: calls, and the ops that take a function by name (`map`,
`paramserv`). One place for the question, asked by specialization (dropping unused generic functions) and by
the code that ships functions to MPI workers."""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.ir import Operation

from daphnec.dialects.ops import GenericCallOp, MapOp
from daphnec.dialects.ops_paramserv import ParamservOp


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
