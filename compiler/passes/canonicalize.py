"""`canonicalize`: constant folding and local simplifications of daphne ops (DAPHNE's Fold.cpp/Canonicalize.cpp).

Folding evaluates an op whose operands are constant scalars with the very runtime kernel that would run it, so a
folded result is bit-identical to the unfolded one. Integer division or modulo of constants by zero is a compile
error, as in DAPHNE. Shape queries fold when inference knows the shape; `ewAdd` on strings becomes `ewConcat`;
casts to the value's own type and `x * 1`, `x + 0` (same type) disappear.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.traits import Pure

from daphnec.compiler.kernel_select import FoldError, fold_scalar_op
from daphnec.dialects import ops
from daphnec.dialects.errors import CompileError
from daphnec.dialects.locations import loc_of
from daphnec.dialects.types import StringType, is_matrix, is_scalar, is_unknown, vt_name


def _replace(op: Operation, values: list[SSAValue]) -> None:
    for r, v in zip(op.results, values):
        r.replace_all_uses_with(v)
    op.detach()
    op.erase()


def _constant_before(op: Operation, value: object, vt: str) -> SSAValue:
    c = ops.ConstantOp.of(value, vt)  # type: ignore[arg-type]
    c.location = op.location
    block = op.parent_block()
    assert block is not None
    block.insert_op_before(c, op)
    return c.res


def _fold_shape(op: Operation) -> int | None:
    t = op.operands[0].type
    if not is_matrix(t):
        return None
    rows, cols = t.shape
    if isinstance(op, ops.NumRowsOp):
        return rows if rows >= 0 else None
    if isinstance(op, ops.NumColsOp):
        return cols if cols >= 0 else None
    return rows * cols if rows >= 0 and cols >= 0 else None


def _is_identity(op: Operation) -> SSAValue | None:
    """`x * 1`, `1 * x`, `x + 0`, `0 + x`, `x - 0` where the result type equals x's type."""
    if not isinstance(op, (ops.EwMulOp, ops.EwAddOp, ops.EwSubOp)):
        return None
    unit = 1 if isinstance(op, ops.EwMulOp) else 0
    pairs = [(op.lhs, op.rhs)] if isinstance(op, ops.EwSubOp) else [(op.lhs, op.rhs), (op.rhs, op.lhs)]
    for x, c in pairs:
        cv = ops.constant_value(c)
        if cv is not None and not isinstance(cv, (bool, str)) and cv == unit and x.type == op.res.type:
            return x
    return None


def canonicalize_op(op: Operation) -> bool:
    """Simplify one op in place; True if the IR changed."""
    if isinstance(op, ops.CastOp) and op.arg.type == op.res.type and not is_unknown(op.arg.type):
        _replace(op, [op.arg])  # (an Unknown -> Unknown cast is not a no-op: the types are not inferred yet)
        return True
    if isinstance(op, ops.EwAddOp) and isinstance(op.res.type, StringType):
        new = ops.EwConcatOp(op.lhs, op.rhs, op.res.type)
        new.location = op.location
        op.parent_block().insert_op_before(new, op)  # type: ignore[union-attr]
        _replace(op, [new.res])
        return True
    if isinstance(op, (ops.NumRowsOp, ops.NumColsOp, ops.NumCellsOp)):
        n = _fold_shape(op)
        if n is not None:
            _replace(op, [_constant_before(op, n, "index")])
            return True
        return False
    ident = _is_identity(op)
    if ident is not None:
        _replace(op, [ident])
        return True
    if (
        isinstance(op, ops.DaphneOp)
        and op.operands
        and op.results
        and op.has_trait(Pure)
        and all(ops.constant_value(v) is not None for v in op.operands)
    ):
        if not all(is_scalar(r.type) for r in op.results):
            return False
        try:
            values = fold_scalar_op(op)
        except FoldError as e:
            raise CompileError(str(e), loc_of(op)) from e
        if values is None:
            return False
        _replace(op, [_constant_before(op, v, vt_name(r.type)) for v, r in zip(values, op.results)])  # type: ignore[arg-type]
        return True
    return False


@dataclass(frozen=True)
class CanonicalizePass(ModulePass):
    name = "canonicalize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        changed = True
        while changed:
            changed = False
            for o in list(op.walk()):
                if o.parent is not None and canonicalize_op(o):
                    changed = True
