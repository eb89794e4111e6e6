"""Operations of the `daphne` dialect for frames and lists (see dialects/ops.py for the conventions).

Relational ops mirror DAPHNE's DaphneOps.td (`daphne.cartesian`, `daphne.innerJoin`, `daphne.semiJoin`,
`daphne.groupJoin`, `daphne.group`, `daphne.setColLabels`, `daphne.setColLabelsPrefix`, `daphne.intersect`,
`daphne.merge`, `daphne.except`) and infer column types *and labels* like DAPHNE's InferTypes and InferFrameLabels
interfaces, so a label that names no column is reported at compile time when the labels are constant. List ops
(`daphne.createList`, `daphne.length`, `daphne.append`, `daphne.remove`) type lists as `!daphne.List<matrix>`.
"""

from __future__ import annotations

from collections.abc import Sequence
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

from daphnec.dialects.constraints import FRAME, LIST, MATRIX
from daphnec.dialects.frame_labels import group_key_labels, is_star, with_prefix
from daphnec.dialects.op_kinds import GROUP_AGGREGATES
from daphnec.dialects.ops import DaphneOp, constant_value
from daphnec.dialects.types import (
    INDEX,
    UNKNOWN,
    FrameType,
    ListType,
    MatrixType,
    StringType,
    frame_column_type,
    frame_label_error,
    frame_width,
    is_matrix,
    is_unknown,
    value_type,
    vt_name,
)

TIDS = MatrixType(INDEX, -1, 1)
"""The positions result of semiJoin/groupJoin: a column matrix of the size type."""


# --- helpers -------------------------------------------------------------------------------------------------------


def _str(v: SSAValue) -> str | None:
    c = constant_value(v)
    return c if isinstance(c, str) else None


def _frame(t: Attribute) -> FrameType | None:
    return t if isinstance(t, FrameType) else None


def _cols(t: FrameType) -> list[Attribute]:
    return list(t.column_types.data)


def _concat_labels(a: FrameType, b: FrameType) -> list[str] | None:
    la, lb = a.label_names, b.label_names
    return la + lb if la is not None and lb is not None else None


def check_label(op: Operation, frame: SSAValue, label: SSAValue, what: str) -> None:
    """A constant label must name a column of a frame whose labels are known; any label must be a string."""
    if not isinstance(label.type, (StringType,)) and not is_unknown(label.type):
        raise VerifyException(f"{op.name}: {what} must be a string (a column label), got {label.type}")
    name = _str(label)
    msg = frame_label_error(frame.type, name) if name is not None else None
    if msg is not None:
        raise VerifyException(f"{op.name}: {what}: {msg}")


class _FrameOp(DaphneOp):
    traits = traits_def(Pure())
    ROLES: ClassVar = {"lhs": "the left argument", "rhs": "the right argument"}


# --- cartesian product and joins ------------------------------------------------------------------------------------


@irdl_op_definition
class CartesianOp(_FrameOp):
    """`cartesian(lhs, rhs)`: every row of lhs combined with every row of rhs; columns and labels concatenated."""

    name = "daphne.cartesian"
    lhs = operand_def(FRAME)
    rhs = operand_def(FRAME)
    res = result_def()

    def infer(self) -> tuple[Attribute, ...]:
        lt, rt = _frame(self.lhs.type), _frame(self.rhs.type)
        if lt is None or rt is None:
            return (UNKNOWN,)
        nl, nr = lt.rows.data, rt.rows.data
        rows = nl * nr if nl >= 0 and nr >= 0 else -1
        return (FrameType(_cols(lt) + _cols(rt), rows, _concat_labels(lt, rt)),)


def _check_join_keys(op: Operation, lhs: SSAValue, rhs: SSAValue, lhs_on: SSAValue, rhs_on: SSAValue) -> None:
    check_label(op, lhs, lhs_on, "the left join column")
    check_label(op, rhs, rhs_on, "the right join column")
    lk, rk = (vt_name(frame_column_type(f.type, _str(c))) for f, c in ((lhs, lhs_on), (rhs, rhs_on)))
    if lk and rk and (lk == "str") != (rk == "str"):
        raise VerifyException(
            f"{op.name}: cannot join the {lk} column '{_str(lhs_on)}' with the {rk} column '{_str(rhs_on)}'"
        )


@irdl_op_definition
class InnerJoinOp(_FrameOp):
    """`innerJoin(lhs, rhs, lhsOn, rhsOn[, numRowRes])`: rows with lhs.lhsOn == rhs.rhsOn, all columns of both."""

    name = "daphne.innerJoin"
    lhs = operand_def(FRAME)
    rhs = operand_def(FRAME)
    lhs_on = operand_def()
    rhs_on = operand_def()
    num_row_res = operand_def()
    res = result_def()

    def infer(self) -> tuple[Attribute, ...]:
        lt, rt = _frame(self.lhs.type), _frame(self.rhs.type)
        if lt is None or rt is None:
            return (UNKNOWN,)
        return (FrameType(_cols(lt) + _cols(rt), -1, _concat_labels(lt, rt)),)

    def verify_(self) -> None:
        _check_join_keys(self, self.lhs, self.rhs, self.lhs_on, self.rhs_on)


@irdl_op_definition
class SemiJoinOp(_FrameOp):
    """`res, lhsTids = semiJoin(lhs, rhs, lhsOn, rhsOn[, numRowRes])`: the lhs keys (one column, labelled lhsOn)
    that occur in rhs.rhsOn, and their row positions in lhs."""

    name = "daphne.semiJoin"
    lhs = operand_def(FRAME)
    rhs = operand_def(FRAME)
    lhs_on = operand_def()
    rhs_on = operand_def()
    num_row_res = operand_def()
    res = result_def()
    lhs_tids = result_def()

    def infer(self) -> tuple[Attribute, ...]:
        label = _str(self.lhs_on)
        ct = frame_column_type(self.lhs.type, label)
        return (FrameType([ct], -1, [label] if label is not None else None), TIDS)

    def verify_(self) -> None:
        _check_join_keys(self, self.lhs, self.rhs, self.lhs_on, self.rhs_on)


@irdl_op_definition
class GroupJoinOp(_FrameOp):
    """`res, lhsTids = groupJoin(lhs, rhs, lhsOn, rhsOn, rhsAgg)`: join on lhsOn == rhsOn, group on lhsOn and sum
    rhs.rhsAgg; columns labelled lhsOn and `SUM(rhsAgg)`."""

    name = "daphne.groupJoin"
    lhs = operand_def(FRAME)
    rhs = operand_def(FRAME)
    lhs_on = operand_def()
    rhs_on = operand_def()
    rhs_agg = operand_def()
    res = result_def()
    lhs_tids = result_def()

    def infer(self) -> tuple[Attribute, ...]:
        on, agg = _str(self.lhs_on), _str(self.rhs_agg)
        cts = [frame_column_type(self.lhs.type, on), frame_column_type(self.rhs.type, agg)]
        labels = [on, f"SUM({agg})"] if on is not None and agg is not None else None
        return (FrameType(cts, -1, labels), TIDS)

    def verify_(self) -> None:
        _check_join_keys(self, self.lhs, self.rhs, self.lhs_on, self.rhs_on)
        check_label(self, self.rhs, self.rhs_agg, "the aggregated column")
        if vt_name(frame_column_type(self.rhs.type, _str(self.rhs_agg))) == "str":
            raise VerifyException(f"{self.name}: cannot sum the str column '{_str(self.rhs_agg)}'")


# --- grouping ------------------------------------------------------------------------------------------------------


@irdl_op_definition
class GroupOp(_FrameOp):
    """DAPHNE's GroupOp: group a frame on key columns and aggregate columns (`groupSum` uses SUM). The result has
    the key columns (their labels) and one `FUNC(col)` column per aggregate, one row per key combination."""

    name = "daphne.group"
    frame = operand_def(FRAME)
    key_cols = var_operand_def()
    agg_cols = var_operand_def()
    agg_funcs = prop_def(ArrayAttr[StringAttr])
    res = result_def()
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    ROLES: ClassVar = {"frame": "the argument"}

    def __init__(self, frame: SSAValue, keys: Sequence[SSAValue], aggs: Sequence[SSAValue], funcs: Sequence[str]):
        super().__init__(
            operands=[frame, keys, aggs],
            result_types=[UNKNOWN],
            properties={"agg_funcs": ArrayAttr([StringAttr(f) for f in funcs])},
        )

    @property
    def funcs(self) -> list[str]:
        return [f.data for f in self.agg_funcs.data]

    def infer(self) -> tuple[Attribute, ...]:
        t = self.frame.type
        keys = [_str(k) for k in self.key_cols]
        aggs = [_str(a) for a in self.agg_cols]
        if any(k is not None and is_star(k) for k in keys):  # SQL's DISTINCT (`*`) and `GROUP BY t.*`
            names = t.label_names if isinstance(t, FrameType) else None
            if names is None or any(k is None for k in keys) or any(a is None for a in aggs):
                return (FrameType([], -1, None),)
            keys = group_key_labels(names, keys, aggs)  # type: ignore[arg-type]
        cts = [frame_column_type(t, k) for k in keys]
        for f, a in zip(self.funcs, aggs, strict=False):
            cts.append(_agg_type(f, frame_column_type(t, a)))
        names = [*keys, *(f"{f}({a})" for f, a in zip(self.funcs, aggs, strict=False))]
        known = all(k is not None for k in keys) and all(a is not None for a in aggs)
        return (FrameType(cts, -1, names if known else None),)  # type: ignore[arg-type]

    def verify_(self) -> None:
        if len(self.funcs) != len(self.agg_cols) or any(f not in GROUP_AGGREGATES for f in self.funcs):
            names = tuple(GROUP_AGGREGATES)
            raise VerifyException(f"{self.name}: expects one aggregation function of {names} per column")
        for k in self.key_cols:
            if not is_star(_str(k) or ""):
                check_label(self, self.frame, k, "a grouping column")
        for a in self.agg_cols:  # str columns: MIN/MAX compare, SUM takes the first, AVG fails at run time (Group.h)
            check_label(self, self.frame, a, "an aggregated column")


def _agg_type(func: str, col: Attribute) -> Attribute:
    """Result value type of a group aggregate (DAPHNE's GroupOp::inferTypes; `GroupAggKind.vt_rule`)."""
    record = GROUP_AGGREGATES.get(func)
    vt = record.vt_rule([vt_name(col)]) if record is not None else None
    return value_type(vt) if vt is not None and vt != vt_name(col) else col


# --- labels --------------------------------------------------------------------------------------------------------


@irdl_op_definition
class SetColLabelsOp(_FrameOp):
    """`setColLabels(arg, labels...)`: the same frame under new column labels (one per column)."""

    name = "daphne.setColLabels"
    arg = operand_def(FRAME)
    labels = var_operand_def()
    res = result_def()

    def infer(self) -> tuple[Attribute, ...]:
        t = _frame(self.arg.type)
        if t is None:
            return (UNKNOWN,)
        names = [_str(v) for v in self.labels]
        return (FrameType(_cols(t), t.rows.data, names if all(n is not None for n in names) else None),)  # type: ignore[arg-type]

    def verify_(self) -> None:
        t = _frame(self.arg.type)
        if t is not None and frame_width(t) >= 0 and len(self.labels) != frame_width(t):
            raise VerifyException(
                f"{self.name}: the number of labels ({len(self.labels)}) does not match the "
                f"number of columns of the frame ({len(t.column_types.data)})"
            )
        names = [n for n in (_str(v) for v in self.labels) if n is not None]
        dup = next((n for i, n in enumerate(names) if n in names[:i]), None)
        if dup is not None:
            raise VerifyException(
                f"{self.name}: a frame's column labels must be unique, but '{dup}' occurs more than once"
            )


@irdl_op_definition
class SetColLabelsPrefixOp(_FrameOp):
    """`setColLabelsPrefix(arg, prefix)`: label `a` becomes `prefix.a`, `old.a` becomes `prefix.a`."""

    name = "daphne.setColLabelsPrefix"
    arg = operand_def(FRAME)
    prefix = operand_def()
    res = result_def()

    def infer(self) -> tuple[Attribute, ...]:
        t = _frame(self.arg.type)
        if t is None:
            return (UNKNOWN,)
        p, names = _str(self.prefix), t.label_names
        labels = [with_prefix(p, n) for n in names] if p is not None and names is not None else None
        return (FrameType(_cols(t), t.rows.data, labels),)


# --- set operations ------------------------------------------------------------------------------------------------


class _SetOp(_FrameOp):
    """Set operations on frames with the same column value types (set semantics: distinct rows)."""

    lhs = operand_def(FRAME)
    rhs = operand_def(FRAME)
    res = result_def()

    def infer(self) -> tuple[Attribute, ...]:
        t = _frame(self.lhs.type)
        return (FrameType(_cols(t), -1, t.label_names),) if t is not None else (UNKNOWN,)

    def verify_(self) -> None:
        lt, rt = _frame(self.lhs.type), _frame(self.rhs.type)
        if lt is None or rt is None or frame_width(lt) < 0 or frame_width(rt) < 0:
            return
        la, ra = [vt_name(c) for c in _cols(lt)], [vt_name(c) for c in _cols(rt)]
        if len(la) != len(ra) or any(a and b and a != b for a, b in zip(la, ra, strict=True)):
            raise VerifyException(
                f"{self.name}: both frames must have the same column value types, got "
                f"[{', '.join(a or '?' for a in la)}] and [{', '.join(b or '?' for b in ra)}]"
            )


@irdl_op_definition
class IntersectOp(_SetOp):
    """`intersect(lhs, rhs)`: distinct rows of lhs that occur in rhs."""

    name = "daphne.intersect"


@irdl_op_definition
class MergeOp(_SetOp):
    """`merge(lhs, rhs)`: distinct rows of lhs, then those of rhs (union)."""

    name = "daphne.merge"


@irdl_op_definition
class ExceptOp(_SetOp):
    """`except(lhs, rhs)`: distinct rows of lhs that do not occur in rhs."""

    name = "daphne.except"


# --- lists ---------------------------------------------------------------------------------------------------------


def list_element_type(t: Attribute) -> Attribute:
    """DAPHNE's list element type for a matrix: the value type only (`withSameElementType`), any shape."""
    return MatrixType(t.element_type) if isinstance(t, MatrixType) else UNKNOWN


@irdl_op_definition
class CreateListOp(_FrameOp):
    """`createList(X, ...)`: a list of matrices of one value type."""

    name = "daphne.createList"
    elems = var_operand_def(MATRIX)
    ROLES: ClassVar = {"elems": "the elements of a list"}
    res = result_def()

    def __init__(self, elems: Sequence[SSAValue]):
        super().__init__(operands=[elems], result_types=[UNKNOWN])

    def infer(self) -> tuple[Attribute, ...]:
        known = [e.type for e in self.elems if is_matrix(e.type) and vt_name(e.type)]
        return (ListType(list_element_type(known[0])),) if known else (UNKNOWN,)

    def verify_(self) -> None:
        if not self.elems:
            raise VerifyException(f"{self.name}: expects at least one element")
        vts = set()
        for e in self.elems:
            if vt_name(e.type):
                vts.add(vt_name(e.type))
        if len(vts) > 1:
            raise VerifyException(
                f"{self.name}: all elements must be matrices of the same value type, got {', '.join(sorted(vts))}"
            )


class _ListOp(_FrameOp):
    """An op on a list (its first operand)."""

    ROLES: ClassVar = {
        "arg": "the first argument",
        "arg_list": "the first argument",
        "elem": "the appended element",
    }


@irdl_op_definition
class LengthOp(_ListOp):
    """`length(L)`: the number of elements of a list (size type)."""

    name = "daphne.length"
    arg = operand_def(LIST)
    res = result_def()

    def infer(self) -> tuple[Attribute, ...]:
        return (INDEX,)


@irdl_op_definition
class AppendOp(_ListOp):
    """`append(L, X)`: a new list with X at its end (lists are values)."""

    name = "daphne.append"
    arg_list = operand_def(LIST)
    elem = operand_def(MATRIX)
    res = result_def()

    def infer(self) -> tuple[Attribute, ...]:
        t = self.arg_list.type
        return (t,) if isinstance(t, ListType) else (UNKNOWN,)

    def verify_(self) -> None:
        t, e = self.arg_list.type, self.elem.type
        have = vt_name(t.element_type) if isinstance(t, ListType) else None
        if have and vt_name(e) and vt_name(e) != have:
            raise VerifyException(
                f"{self.name}: the element's value type ({vt_name(e)}) differs from the list's ({have})"
            )


@irdl_op_definition
class RemoveOp(_ListOp):
    """`L2, X = remove(L, i)`: the list without its i-th element, and that element."""

    name = "daphne.remove"
    arg_list = operand_def(LIST)
    idx = operand_def()
    res_list = result_def()
    elem = result_def()

    def infer(self) -> tuple[Attribute, ...]:
        t = self.arg_list.type
        return (t, t.element_type) if isinstance(t, ListType) else (UNKNOWN, UNKNOWN)


@irdl_op_definition
class ListGetOp(_ListOp):
    """`L[i]`: the i-th element of a list (0-based). DaphneDSL has no such read (only `remove`); daphnec adds it so
    that paramserv's update functions can take their model list apart."""

    name = "daphne.listGet"
    arg_list = operand_def(LIST)
    idx = operand_def()
    res = result_def()

    def infer(self) -> tuple[Attribute, ...]:
        t = self.arg_list.type
        return (t.element_type,) if isinstance(t, ListType) else (UNKNOWN,)


OPS: list[type[Operation]] = [
    CartesianOp, InnerJoinOp, SemiJoinOp, GroupJoinOp, GroupOp, SetColLabelsOp, SetColLabelsPrefixOp,
    IntersectOp, MergeOp, ExceptOp, CreateListOp, LengthOp, AppendOp, RemoveOp, ListGetOp,
]  # fmt: skip
"""The ops this module defines, registered in the dialect by dialects/daphne.py."""
