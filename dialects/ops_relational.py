"""Operations of the `daphne` dialect for SQL on frames (see dialects/ops.py for the conventions).

`daphne.registerView` and `daphne.sql` are what the DaphneDSL builtins `registerView(name, frame)` and `sql(query)`
build; the compiler's `sql` pass (DAPHNE's RewriteSqlOpPass, src/compiler/lowering/RewriteSqlOpPass.cpp) resolves
both at compile time and replaces each query by relational ops of this dialect (frame column extraction,
element-wise comparisons, `daphne.filterRow`, joins, `daphne.group`, `daphne.order`, `daphne.colBind`). The ops a
query needs beyond the frame builtins are defined here: `daphne.thetaJoin` (a join on comparisons other than one
equality) and `daphne.getColIdx` (a label to a column position, for ORDER BY). Names and operands follow DAPHNE's
DaphneOps.td.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar

from xdsl.dialects.builtin import ArrayAttr, StringAttr
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from daphnec.dialects.constraints import FRAME, STRING
from daphnec.dialects.ops import DaphneOp
from daphnec.dialects.ops_frame import check_label
from daphnec.dialects.types import INDEX, UNKNOWN, FrameType


@irdl_op_definition
class RegisterViewOp(DaphneOp):
    """`registerView(name, frame)`: makes `frame` (its value at this point of the program) known to later `sql`
    queries as table `name`. No result; the `sql` pass erases it. Not pure: CSE and DCE must keep it in place."""

    name = "daphne.registerView"
    view_name = operand_def(STRING)
    view = operand_def(FRAME)
    ROLES: ClassVar = {"view_name": "the view name", "view": "the view"}

    def infer(self) -> tuple[Attribute, ...]:
        return ()


SQL_PLACEHOLDER = FrameType([], -1, None)
"""The result type of `daphne.sql` before the `sql` pass: a frame whose columns are not known yet."""


@irdl_op_definition
class SqlOp(DaphneOp):
    """`sql(query)`: the result of a SQL query over the views registered before it. The `sql` pass replaces it
    by relational ops; until then its result is a frame of unknown columns. Not pure: two equal queries may read
    different views (a name can be registered again in between), so CSE must not merge them."""

    name = "daphne.sql"
    query = operand_def(STRING)
    res = result_def()
    ROLES: ClassVar = {"query": "the query"}

    def infer(self) -> tuple[Attribute, ...]:
        return (SQL_PLACEHOLDER,)


QueryLowering = Callable[[SqlOp, dict[str, SSAValue], set[str]], SSAValue]
"""Parses a `daphne.sql` op's constant query and builds its relational ops before the op (given the views visible
there and the names of views registered but not visible); returns the query's result."""

_QUERY_LOWERING: list[QueryLowering] = []


def register_query_lowering(lowering: QueryLowering) -> None:
    """The SQL frontend (frontend/sql/) registers itself here when it is imported, like an MLIR external interface
    model: the compiler's `sql` pass finds it through the op's dialect and never imports the frontend."""
    _QUERY_LOWERING[:] = [lowering]


def query_lowering(op: SqlOp) -> QueryLowering:
    """The registered SQL frontend; a compile error if none was imported (IR read from text by a tool that does
    not load the frontend)."""
    from daphnec.dialects.errors import CompileError
    from daphnec.dialects.locations import loc_of

    if not _QUERY_LOWERING:
        raise CompileError("sql: no SQL frontend is loaded (import daphnec.frontend.sql)", loc_of(op))
    return _QUERY_LOWERING[0]


THETA_CMPS = ("Equal", "NotEqual", "LessThan", "LessEqual", "GreaterThan", "GreaterEqual")
"""DAPHNE's CompareOperation enum, the comparisons of `daphne.thetaJoin`."""


@irdl_op_definition
class ThetaJoinOp(DaphneOp):
    """DAPHNE's ThetaJoinOp: the pairs of rows (left-major, then right order) for which every condition
    `lhs.lhsOn[i] cmp[i] rhs.rhsOn[i]` holds; all columns of lhs, then of rhs."""

    name = "daphne.thetaJoin"
    lhs = operand_def(FRAME)
    rhs = operand_def(FRAME)
    lhs_on = var_operand_def()
    rhs_on = var_operand_def()
    cmp = prop_def(ArrayAttr[StringAttr])
    res = result_def()
    traits = traits_def(Pure())
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    ROLES: ClassVar = {"lhs": "the left argument", "rhs": "the right argument"}

    def __init__(
        self, lhs: SSAValue, rhs: SSAValue, lhs_on: Sequence[SSAValue], rhs_on: Sequence[SSAValue], cmps: Sequence[str]
    ):
        props = {"cmp": ArrayAttr([StringAttr(c) for c in cmps])}
        super().__init__(operands=[lhs, rhs, lhs_on, rhs_on], result_types=[UNKNOWN], properties=props)

    @property
    def cmps(self) -> list[str]:
        return [c.data for c in self.cmp.data]

    def infer(self) -> tuple[Attribute, ...]:
        lt, rt = self.lhs.type, self.rhs.type
        if not (isinstance(lt, FrameType) and isinstance(rt, FrameType)):
            return (UNKNOWN,)
        la, lb = lt.label_names, rt.label_names
        labels = la + lb if la is not None and lb is not None else None
        return (FrameType([*lt.column_types.data, *rt.column_types.data], -1, labels),)

    def verify_(self) -> None:
        if not (len(self.lhs_on) == len(self.rhs_on) == len(self.cmps) >= 1):
            raise VerifyException(
                f"{self.name}: expects one left column, one right column and one comparison per condition"
            )
        bad = [c for c in self.cmps if c not in THETA_CMPS]
        if bad:
            raise VerifyException(
                f"{self.name}: unknown comparison '{bad[0]}' (expected one of {', '.join(THETA_CMPS)})"
            )
        for lo, ro in zip(self.lhs_on, self.rhs_on):
            check_label(self, self.lhs, lo, "a left join column")
            check_label(self, self.rhs, ro, "a right join column")


@irdl_op_definition
class GetColIdxOp(DaphneOp):
    """DAPHNE's GetColIdxOp: the position (size type) of the column with this label; ORDER BY sorts by it."""

    name = "daphne.getColIdx"
    frame = operand_def(FRAME)
    label = operand_def(STRING)
    res = result_def()
    traits = traits_def(Pure())
    ROLES: ClassVar = {"frame": "the argument", "label": "the label"}

    def infer(self) -> tuple[Attribute, ...]:
        return (INDEX,)


OPS: list[type[Operation]] = [RegisterViewOp, SqlOp, ThetaJoinOp, GetColIdxOp]
"""The ops this module defines, registered in the dialect by dialects/daphne.py."""
