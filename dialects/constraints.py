"""Operand type constraints of daphne ops (IRDL), and the one place their violations become DaphneDSL messages.

Ops declare what data their operands must be: `arg = operand_def(MATRIX)`. Every constraint here also admits
`!daphne.Unknown`, because ops are built before inference has typed their operands (untyped function parameters,
for instance); value-type and shape rules stay in the ops' `verify_`.

IRDL reports a violation as `operand 'arg' at position 0 does not verify: ...`; a script's author wants
`daphne.sparsity: the argument must be a matrix, got si64` (DAPHNE names the op and the argument). `type_error`
builds that message from the violated constraint (`WORDS`) and the operand's role (`DaphneOp.ROLES`, by field
name), and `DaphneOp.verify` raises it in place of IRDL's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from xdsl.dialects.builtin import Float32Type, Float64Type, IndexType, IntegerType
from xdsl.ir import SSAValue
from xdsl.irdl import (
    AttrConstraint,
    IRDLOperation,
    RangeConstraint,
    RangeLengthConstraint,
    RangeOf,
    SingleOf,
    VariadicDef,
    irdl_to_attr_constraint,
)
from xdsl.utils.exceptions import VerifyException

from daphnec.dialects.types import ColumnType, FrameType, ListType, MatrixType, StringType, UnknownType, dsl_type

MATRIX = irdl_to_attr_constraint(MatrixType | UnknownType)
FRAME = irdl_to_attr_constraint(FrameType | UnknownType)
MATRIX_OR_FRAME = irdl_to_attr_constraint(MatrixType | FrameType | UnknownType)
LIST = irdl_to_attr_constraint(ListType | UnknownType)
STRING = irdl_to_attr_constraint(StringType | UnknownType)
COLUMN = irdl_to_attr_constraint(ColumnType | UnknownType)
"""A column of the columnar ops (`--columnar`); position lists are columns of size type (checked by the ops)."""
SCALAR = irdl_to_attr_constraint(IntegerType | IndexType | Float32Type | Float64Type | StringType | UnknownType)
"""A scalar of any value type (bool is `i1`, str is `!daphne.String`)."""

WORDS: dict[AttrConstraint, tuple[str, str]] = {
    MATRIX: ("a matrix", "matrices"),
    FRAME: ("a frame", "frames"),
    MATRIX_OR_FRAME: ("a matrix or a frame", "matrices or frames"),
    LIST: ("a list", "lists"),
    STRING: ("a string", "strings"),
    COLUMN: ("a column", "columns"),
    SCALAR: ("a scalar", "scalars"),
}
"""What a constraint asks for, for one value and for every value of a variadic operand."""

DEFAULT_ROLES: dict[str, str] = {"arg": "the argument", "lhs": "the left operand", "rhs": "the right operand"}
"""How an error message names an operand, by its field name, unless the op's `ROLES` say otherwise."""


def _attr_constraint(c: RangeConstraint) -> AttrConstraint | None:
    """The constraint on each value of an operand or result definition."""
    while isinstance(c, RangeLengthConstraint):
        c = c.constraint
    return c.constr if isinstance(c, (RangeOf, SingleOf)) else None


def _values(v: SSAValue | Sequence[SSAValue] | None) -> Sequence[SSAValue]:
    if v is None:
        return ()
    return v if isinstance(v, Sequence) else (v,)


def type_error(op: IRDLOperation, roles: Mapping[str, str]) -> VerifyException | None:
    """DaphneDSL's message for the first operand or result of `op` whose type violates one of the constraints
    above; None if there is none (another check failed, whose message stands)."""
    op_def = type(op).get_irdl_definition()
    for name, d in (*op_def.operands, *op_def.results):
        constr = _attr_constraint(d.constr)
        words = WORDS.get(constr) if constr is not None else None
        if words is None:
            continue
        bad = next((v.type for v in _values(getattr(op, name)) if not constr.verifies(v.type)), None)  # type: ignore[union-attr]
        if bad is not None:
            what = words[1] if isinstance(d, VariadicDef) else words[0]
            role = roles.get(name, DEFAULT_ROLES.get(name, name))
            return VerifyException(f"{op.name}: {role} must be {what}, got {dsl_type(bad)}")
    return None
