"""Columnar operations of the `daphne` dialect: what the `columnar` pass (`--columnar`, DAPHNE's
RewriteToColumnarOpsPass, src/compiler/lowering/RewriteToColumnarOpsPass.cpp) rewrites frame and matrix ops into.

They work on `!daphne.Column` values (one typed column; a 1-D array at run time) and on position lists, columns of
row positions (size type) in ascending order. Bit vectors (n x 1 matrices of 0/1, what comparisons yield) and
position lists are converted into each other by `daphne.convertPosListToBitmap` and `daphne.convertBitmapToPosList`.
Semantics follow DAPHNE's kernels (src/runtime/local/kernels/Col*.h): `colJoin` is an N:1 join (the last equal
right key wins), `colGroupFirst`/`colGroupNext` number groups in the order of first appearance.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def, traits_def
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from daphnec.dialects.constraints import COLUMN, MATRIX, SCALAR
from daphnec.dialects.ops import DaphneOp, NumRowsOp, vt_from_args
from daphnec.dialects.types import (
    INDEX,
    UNKNOWN,
    ColumnType,
    MatrixType,
    is_matrix,
    value_type,
    vt_name,
)

POS_LIST = ColumnType(INDEX)
"""A position list of unknown length: row positions (size type), ascending."""


def _check_positions(op: Operation, v: SSAValue, what: str) -> None:
    """A position list is a column (the operand's constraint) of size type."""
    t = v.type
    if isinstance(t, ColumnType) and vt_name(t) not in (None, "index"):
        raise VerifyException(f"{op.name}: {what} must be a position list (a column of size type), got {t}")


def _rows(t: Attribute) -> int:
    return t.rows.data if isinstance(t, ColumnType) else -1


def _col(vt: str | None, rows: int = -1) -> ColumnType:
    return ColumnType(value_type(vt) if vt else UNKNOWN, rows)


class _ColumnarOp(DaphneOp):
    traits = traits_def(Pure())


# --- selections and set operations on position lists -----------------------------------------------------------------


class ColSelectOp(_ColumnarOp):
    """`colSelect<Cmp>(col, value)`: the positions of the rows whose value compares true with a scalar."""

    KIND: ClassVar[str]
    col = operand_def(COLUMN)
    value = operand_def(SCALAR)
    res = result_def()
    ROLES: ClassVar = {"col": "the argument", "value": "the compared value"}

    def infer(self) -> tuple[Attribute, ...]:
        return (POS_LIST,)


@irdl_op_definition
class ColSelectEqOp(ColSelectOp):
    name = "daphne.colSelectEq"
    KIND: ClassVar[str] = "eq"


@irdl_op_definition
class ColSelectNeqOp(ColSelectOp):
    name = "daphne.colSelectNeq"
    KIND: ClassVar[str] = "neq"


@irdl_op_definition
class ColSelectGtOp(ColSelectOp):
    name = "daphne.colSelectGt"
    KIND: ClassVar[str] = "gt"


@irdl_op_definition
class ColSelectGeOp(ColSelectOp):
    name = "daphne.colSelectGe"
    KIND: ClassVar[str] = "ge"


@irdl_op_definition
class ColSelectLtOp(ColSelectOp):
    name = "daphne.colSelectLt"
    KIND: ClassVar[str] = "lt"


@irdl_op_definition
class ColSelectLeOp(ColSelectOp):
    name = "daphne.colSelectLe"
    KIND: ClassVar[str] = "le"


COL_SELECT_OPS: dict[str, type[ColSelectOp]] = {
    c.KIND: c for c in (ColSelectEqOp, ColSelectNeqOp, ColSelectGtOp, ColSelectGeOp, ColSelectLtOp, ColSelectLeOp)
}
"""The columnar selection per comparison kind of the element-wise ops (`ewEq` -> `colSelectEq`, ...)."""


class _PosSetOp(_ColumnarOp):
    lhs = operand_def(COLUMN)
    rhs = operand_def(COLUMN)
    res = result_def()
    ROLES: ClassVar = {"lhs": "the left position list", "rhs": "the right position list"}

    def infer(self) -> tuple[Attribute, ...]:
        return (POS_LIST,)

    def verify_(self) -> None:
        _check_positions(self, self.lhs, "the left position list")
        _check_positions(self, self.rhs, "the right position list")


@irdl_op_definition
class ColIntersectOp(_PosSetOp):
    """`colIntersect(a, b)`: the positions in both sorted lists (AND of two selections)."""

    name = "daphne.colIntersect"


@irdl_op_definition
class ColMergeOp(_PosSetOp):
    """`colMerge(a, b)`: the positions in either sorted list, once (OR of two selections)."""

    name = "daphne.colMerge"


@irdl_op_definition
class ColProjectOp(_ColumnarOp):
    """`colProject(col, positions)`: the values at the given positions, in their order."""

    name = "daphne.colProject"
    col = operand_def(COLUMN)
    pos = operand_def(COLUMN)
    res = result_def()
    ROLES: ClassVar = {"col": "the argument", "pos": "the positions"}

    def infer(self) -> tuple[Attribute, ...]:
        t = self.col.type
        return (ColumnType(t.element_type if isinstance(t, ColumnType) else UNKNOWN, _rows(self.pos.type)),)

    def verify_(self) -> None:
        _check_positions(self, self.pos, "the positions")


# --- joins and grouping --------------------------------------------------------------------------------------------


_KEY_ROLES = {"lhs": "the left keys", "rhs": "the right keys"}


def _check_keys(op: Operation, lhs: SSAValue, rhs: SSAValue) -> None:
    lk, rk = vt_name(lhs.type), vt_name(rhs.type)
    if lk and rk and (lk == "str") != (rk == "str"):
        raise VerifyException(f"{op.name}: cannot join {lk} keys with {rk} keys")


@irdl_op_definition
class ColJoinOp(_ColumnarOp):
    """`lhsPos, rhsPos = colJoin(lhsKeys, rhsKeys, numRes)`: an N:1 equi-join (ColJoin.h): each left row in
    order with the last right row of equal key, if any."""

    name = "daphne.colJoin"
    lhs = operand_def(COLUMN)
    rhs = operand_def(COLUMN)
    num_res = operand_def()
    res_lhs_pos = result_def()
    res_rhs_pos = result_def()
    ROLES: ClassVar = _KEY_ROLES

    def infer(self) -> tuple[Attribute, ...]:
        return (POS_LIST, POS_LIST)

    def verify_(self) -> None:
        _check_keys(self, self.lhs, self.rhs)


@irdl_op_definition
class ColSemiJoinOp(_ColumnarOp):
    """`lhsPos = colSemiJoin(lhsKeys, rhsKeys, numRes)`: the left positions whose key occurs on the right."""

    name = "daphne.colSemiJoin"
    lhs = operand_def(COLUMN)
    rhs = operand_def(COLUMN)
    num_res = operand_def()
    res = result_def()
    ROLES: ClassVar = _KEY_ROLES

    def infer(self) -> tuple[Attribute, ...]:
        return (POS_LIST,)

    def verify_(self) -> None:
        _check_keys(self, self.lhs, self.rhs)


@irdl_op_definition
class ColGroupFirstOp(_ColumnarOp):
    """`grpIds, reprPos = colGroupFirst(keys)`: a group id per row (groups numbered by first appearance) and the
    position of each group's first row."""

    name = "daphne.colGroupFirst"
    keys = operand_def(COLUMN)
    res_grp_ids = result_def()
    res_repr_pos = result_def()
    ROLES: ClassVar = {"keys": "the keys"}

    def infer(self) -> tuple[Attribute, ...]:
        return (_col("index", _rows(self.keys.type)), POS_LIST)


@irdl_op_definition
class ColGroupNextOp(_ColumnarOp):
    """`grpIds, reprPos = colGroupNext(keys, grpIds)`: refines the groups of an earlier key column by one more."""

    name = "daphne.colGroupNext"
    keys = operand_def(COLUMN)
    grp_ids = operand_def(COLUMN)
    res_grp_ids = result_def()
    res_repr_pos = result_def()
    ROLES: ClassVar = {"keys": "the keys", "grp_ids": "the group ids"}

    def infer(self) -> tuple[Attribute, ...]:
        return (_col("index", _rows(self.keys.type)), POS_LIST)

    def verify_(self) -> None:
        _check_positions(self, self.grp_ids, "the group ids")


@irdl_op_definition
class ColSumGrpOp(_ColumnarOp):
    """`colSumGrp(col, grpIds, numDistinct, optimisticSplit)`: the sum of every group, in the column's type."""

    name = "daphne.colSumGrp"
    col = operand_def(COLUMN)
    grp_ids = operand_def(COLUMN)
    num_distinct = operand_def()
    optimistic_split = operand_def()
    res = result_def()
    ROLES: ClassVar = {"col": "the argument", "grp_ids": "the group ids"}

    def infer(self) -> tuple[Attribute, ...]:
        t = self.col.type
        return (ColumnType(t.element_type if isinstance(t, ColumnType) else UNKNOWN),)

    def verify_(self) -> None:
        _check_positions(self, self.grp_ids, "the group ids")
        if vt_name(self.col.type) == "str":
            raise VerifyException(f"{self.name}: cannot sum a str column")


# --- arithmetic and aggregation ------------------------------------------------------------------------------------


@irdl_op_definition
class ColSumAllOp(_ColumnarOp):
    """`colSumAll(col)`: a single-element column holding the sum of all values, in the column's type."""

    name = "daphne.colSumAll"
    col = operand_def(COLUMN)
    res = result_def()
    ROLES: ClassVar = {"col": "the argument"}

    def infer(self) -> tuple[Attribute, ...]:
        t = self.col.type
        return (ColumnType(t.element_type if isinstance(t, ColumnType) else UNKNOWN, 1),)


class ColCalcOp(_ColumnarOp):
    """`colCalc<Op>(a, b)`: element-wise arithmetic on two columns of equal length (most general value type)."""

    KIND: ClassVar[str]
    lhs = operand_def(COLUMN)
    rhs = operand_def(COLUMN)
    res = result_def()

    def infer(self) -> tuple[Attribute, ...]:
        vt = vt_from_args([vt_name(self.lhs.type), vt_name(self.rhs.type)])
        rows = _rows(self.lhs.type)
        return (_col(vt, rows if rows >= 0 else _rows(self.rhs.type)),)

    def verify_(self) -> None:
        lr, rr = _rows(self.lhs.type), _rows(self.rhs.type)
        if lr >= 0 and rr >= 0 and lr != rr:
            raise VerifyException(f"{self.name}: the columns have different lengths ({lr} and {rr})")


@irdl_op_definition
class ColCalcSubOp(ColCalcOp):
    name = "daphne.colCalcSub"
    KIND: ClassVar[str] = "sub"


@irdl_op_definition
class ColCalcMulOp(ColCalcOp):
    name = "daphne.colCalcMul"
    KIND: ClassVar[str] = "mul"


COL_CALC_OPS: dict[str, type[ColCalcOp]] = {c.KIND: c for c in (ColCalcSubOp, ColCalcMulOp)}
"""The columnar arithmetic per kind of the element-wise ops (`ewSub` -> `colCalcSub`, `ewMul` -> `colCalcMul`)."""


# --- bit vectors and position lists --------------------------------------------------------------------------------


def _rows_of_count(v: SSAValue) -> int:
    """The row count a `numRows(X)` operand stands for, when X's shape is known."""
    owner = v.owner
    if isinstance(owner, NumRowsOp) and is_matrix(owner.arg.type):
        return owner.arg.type.shape[0]
    return -1


@irdl_op_definition
class ConvertPosListToBitmapOp(_ColumnarOp):
    """`convertPosListToBitmap(positions, numRows)`: an n x 1 bit vector with 1 at the given positions. `vt` is the
    value type of the bits (that of the element-wise op the bit vector replaces)."""

    name = "daphne.convertPosListToBitmap"
    pos = operand_def(MATRIX)
    num_rows = operand_def()
    vt = prop_def(StringAttr)
    res = result_def()
    ROLES: ClassVar = {"pos": "the positions"}

    def __init__(self, pos: SSAValue, num_rows: SSAValue, vt: str):
        super().__init__(operands=[pos, num_rows], result_types=[UNKNOWN], properties={"vt": StringAttr(vt)})

    def infer(self) -> tuple[Attribute, ...]:
        return (MatrixType(value_type(self.vt.data), _rows_of_count(self.num_rows), 1),)


@irdl_op_definition
class ConvertBitmapToPosListOp(_ColumnarOp):
    """`convertBitmapToPosList(bits)`: the positions (size type, ascending) of the non-zero entries."""

    name = "daphne.convertBitmapToPosList"
    arg = operand_def(MATRIX)
    res = result_def()
    ROLES: ClassVar = {"arg": "the bit vector"}

    def infer(self) -> tuple[Attribute, ...]:
        return (MatrixType(INDEX, -1, 1),)


OPS: list[type[Operation]] = [
    *COL_SELECT_OPS.values(), ColIntersectOp, ColMergeOp, ColProjectOp, ColJoinOp, ColSemiJoinOp, ColGroupFirstOp,
    ColGroupNextOp, ColSumGrpOp, ColSumAllOp, *COL_CALC_OPS.values(), ConvertPosListToBitmapOp,
    ConvertBitmapToPosListOp,
]  # fmt: skip
"""The ops this module defines, registered in the dialect by dialects/daphne.py."""
