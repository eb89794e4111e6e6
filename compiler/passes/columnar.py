"""`columnar`: rewrite frame and matrix ops to columnar ops (`--columnar`; DAPHNE's RewriteToColumnarOpsPass,
src/compiler/lowering/RewriteToColumnarOpsPass.cpp). Runs after inference and is followed by inference,
canonicalization and CSE, which clean up the casts it leaves.

Each op is replaced in isolation, its operands cast to columns and its results cast back, so the rewritten IR has
the same types as before. What is rewritten (any matching op, not only SQL output):
- `ewEq/Neq/Gt/Ge/Lt/Le(X, s)`, X a one-column matrix, s a scalar: `colSelect<Cmp>` (a position list), then
  `convertPosListToBitmap`;
- `ewAnd/ewOr` of such bit vectors: `convertBitmapToPosList` of both, `colIntersect`/`colMerge`, a bit vector;
- `filterRow`/`extractRow` (a position matrix) on a frame with known labels: `colProject` of every column;
- `ewSub/ewMul` of two one-column matrices: `colCalcSub/Mul`; `sumAll` of a one-column matrix: `colSumAll`;
- `innerJoin` (both frames' labels must be known, else the pass fails): `colJoin`, an N:1 join, then `colProject`;
- `semiJoin`: `colSemiJoin`; `group` when every aggregate is SUM: `colGroupFirst`/`colGroupNext` (groups in order
  of first appearance), `colProject` of the representatives, `colSumGrp` per aggregate.
daphnec leaves a `group` alone when a key is a star (DISTINCT; DAPHNE's rewrite breaks it) or a summed column is
a string (DAPHNE's colSumGrp has no string case).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass

from daphnec.compiler.passes.fold_positions import drop_dead_round_trips, fold_positions
from daphnec.dialects import ops, ops_columnar, ops_frame
from daphnec.dialects.errors import CompileError
from daphnec.dialects.frame_labels import is_star
from daphnec.dialects.locations import loc_of
from daphnec.dialects.types import UNKNOWN, FrameType, MatrixType, frame_column_type, is_scalar, vt_name

_SET_OPS = {"and": ops_columnar.ColIntersectOp, "or": ops_columnar.ColMergeOp}
_SELECTIONS = (*ops_columnar.COL_SELECT_OPS.values(), ops_columnar.ColIntersectOp, ops_columnar.ColMergeOp)


def _single_col(t: Attribute) -> bool:
    return isinstance(t, MatrixType) and t.shape[1] == 1 and not t.is_sparse and vt_name(t) is not None


class _Rewrite:
    """Builds the replacement of one op right before it (same location, types inferred on creation)."""

    def __init__(self, anchor: Operation, optimistic_splitting: bool = False):
        self.anchor = anchor
        self.optimistic_splitting = optimistic_splitting

    def emit(self, op: Operation) -> SSAValue:
        if isinstance(op, ops.DaphneOp):
            op.typed()
        op.location = self.anchor.location
        block = self.anchor.parent_block()
        assert block is not None
        block.insert_op_before(op, self.anchor)
        return op.results[0] if op.results else None  # type: ignore[return-value]

    def make(self, cls: type, operands: Sequence[SSAValue]) -> Operation:
        n = len(cls.get_irdl_definition().results)
        op = cls.create(operands=list(operands), result_types=[UNKNOWN] * n)
        self.emit(op)
        return op

    def cast(self, v: SSAValue, dt: str, vt: str | None = None) -> SSAValue:
        return self.emit(ops.CastOp(v, vt, dt))

    def const(self, value: object, vt: str) -> SSAValue:
        return self.emit(ops.ConstantOp.of(value, vt))  # type: ignore[arg-type]

    def bitmap(self, pos_col: SSAValue, like: SSAValue, vt: str) -> SSAValue:
        """A position-list column as the bit vector (value type `vt`) of a matrix shaped like `like`."""
        rows = self.make(ops.NumRowsOp, [like]).results[0]
        return self.emit(ops_columnar.ConvertPosListToBitmapOp(self.cast(pos_col, "matrix"), rows, vt))

    def project_all(self, frame: SSAValue, labels: Sequence[str], pos_col: SSAValue) -> tuple[list, list]:
        """DAPHNE's projectAllColumns: every column of `frame`, by label, projected onto the positions."""
        cols, names = [], []
        for lbl in labels:
            name = self.const(lbl, "str")
            col = self.cast(self.make(ops.ExtractColOp, [frame, name]).results[0], "column")
            projected = self.make(ops_columnar.ColProjectOp, [col, pos_col]).results[0]
            cols.append(self.cast(projected, "matrix"))
            names.append(name)
        return cols, names

    def key_column(self, frame: SSAValue, label: SSAValue) -> SSAValue:
        return self.cast(self.make(ops.ExtractColOp, [frame, label]).results[0], "column")


def _replace(op: Operation, new: Sequence[SSAValue]) -> None:
    for old, v in zip(op.results, new):
        old.replace_all_uses_with(v)
    op.detach()
    op.erase()


def _labels(op: Operation, v: SSAValue, required: bool) -> list[str] | None:
    names = v.type.label_names if isinstance(v.type, FrameType) else None
    if names is None and required:
        raise CompileError(
            f"columnar: the column labels of the arguments of {op.name} must be known at compile time", loc_of(op)
        )
    return names


# --- the rewrites ----------------------------------------------------------------------------------------------------


def _compare(op: ops.EwBinaryOp, r: _Rewrite) -> list[SSAValue] | None:
    if not (_single_col(op.lhs.type) and is_scalar(op.rhs.type)):
        return None
    sel = ops_columnar.COL_SELECT_OPS[op.KIND]
    pos = r.make(sel, [r.cast(op.lhs, "column"), op.rhs]).results[0]
    return [r.bitmap(pos, op.lhs, vt_name(op.res.type))]  # type: ignore[arg-type]


def _is_selection(v: SSAValue) -> bool:
    """A bit vector from a comparison or set op (already rewritten, or not rewritten yet)."""
    owner = v.owner
    if isinstance(owner, ops_columnar.ConvertPosListToBitmapOp):
        cast = owner.pos.owner
        return isinstance(cast, ops.CastOp) and isinstance(cast.arg.owner, _SELECTIONS)
    return isinstance(owner, ops.EwBinaryOp) and owner.KIND in ("eq", "neq", "gt", "ge", "lt", "le", "and", "or")


def _logical(op: ops.EwBinaryOp, r: _Rewrite) -> list[SSAValue] | None:
    if not (_is_selection(op.lhs) and _is_selection(op.rhs)) or not _single_col(op.lhs.type):
        return None
    sides = [r.cast(r.make(ops_columnar.ConvertBitmapToPosListOp, [v]).results[0], "column") for v in op.operands]
    pos = r.make(_SET_OPS[op.KIND], sides).results[0]
    return [r.bitmap(pos, op.lhs, vt_name(op.res.type))]  # type: ignore[arg-type]


def _calc(op: ops.EwBinaryOp, r: _Rewrite) -> list[SSAValue] | None:
    lt, rt = op.lhs.type, op.rhs.type
    if not (_single_col(lt) and _single_col(rt)) or "bool" in (vt_name(lt), vt_name(rt)):
        return None
    res = r.make(ops_columnar.COL_CALC_OPS[op.KIND], [r.cast(op.lhs, "column"), r.cast(op.rhs, "column")])
    return [r.cast(res.results[0], "matrix", vt_name(op.res.type))]


def _sum_all(op: ops.AggOp, r: _Rewrite) -> list[SSAValue] | None:
    if not _single_col(op.arg.type):
        return None
    res = r.make(ops_columnar.ColSumAllOp, [r.cast(op.arg, "column")]).results[0]
    return [r.cast(res, "scalar", vt_name(op.res.type))]


def _rows(op: ops.FilterRowOp | ops.ExtractRowOp, r: _Rewrite) -> list[SSAValue] | None:
    labels = _labels(op, op.source, required=False)
    if labels is None:
        return None
    if isinstance(op, ops.FilterRowOp):
        pos = r.make(ops_columnar.ConvertBitmapToPosListOp, [op.bits]).results[0]
    elif isinstance(op.selection.type, MatrixType) and vt_name(op.selection.type) in ("si64", "index", "ui64"):
        pos = op.selection
    else:
        return None
    cols, names = r.project_all(op.source, labels, r.cast(pos, "column", "index"))
    return [r.emit(ops.CreateFrameOp(cols, names))]


def _inner_join(op: ops_frame.InnerJoinOp, r: _Rewrite) -> list[SSAValue]:
    llabels, rlabels = _labels(op, op.lhs, True), _labels(op, op.rhs, True)
    keys = [r.key_column(op.lhs, op.lhs_on), r.key_column(op.rhs, op.rhs_on)]
    join = r.make(ops_columnar.ColJoinOp, [*keys, op.num_row_res])
    lcols, lnames = r.project_all(op.lhs, llabels, join.results[0])  # type: ignore[arg-type]
    rcols, rnames = r.project_all(op.rhs, rlabels, join.results[1])  # type: ignore[arg-type]
    return [r.emit(ops.CreateFrameOp(lcols + rcols, lnames + rnames))]


def _semi_join(op: ops_frame.SemiJoinOp, r: _Rewrite) -> list[SSAValue]:
    """The left key column of the matching rows (what `semiJoin` returns) and their positions."""
    keys = [r.key_column(op.lhs, op.lhs_on), r.key_column(op.rhs, op.rhs_on)]
    pos = r.make(ops_columnar.ColSemiJoinOp, [*keys, op.num_row_res]).results[0]
    projected = r.make(ops_columnar.ColProjectOp, [keys[0], pos]).results[0]
    res = r.emit(ops.CreateFrameOp([r.cast(projected, "matrix")], [op.lhs_on]))
    return [res, r.cast(pos, "matrix", "index")]


def _group(op: ops_frame.GroupOp, r: _Rewrite) -> list[SSAValue] | None:
    keys, aggs = list(op.key_cols), list(op.agg_cols)
    t = op.frame.type
    key_names = [ops.constant_value(k) for k in keys]
    if not keys or any(f != "SUM" for f in op.funcs) or any(not isinstance(k, str) or is_star(k) for k in key_names):
        return None
    agg_names = [ops.constant_value(a) for a in aggs]
    if any(not isinstance(a, str) or vt_name(frame_column_type(t, a)) in ("str", None) for a in agg_names):
        return None
    key_cols = [r.key_column(op.frame, k) for k in keys]
    grouping = r.make(ops_columnar.ColGroupFirstOp, [key_cols[0]])
    for kc in key_cols[1:]:
        grouping = r.make(ops_columnar.ColGroupNextOp, [kc, grouping.results[0]])
    grp_ids, repr_pos = grouping.results
    cols = [r.cast(r.make(ops_columnar.ColProjectOp, [kc, repr_pos]).results[0], "matrix") for kc in key_cols]
    names = list(keys)
    num_distinct = r.make(ops.NumRowsOp, [r.cast(repr_pos, "matrix")]).results[0]
    split = r.const(r.optimistic_splitting, "bool")  # `--optimistic-splitting` (use_optimistic_splitting)
    for a in aggs:
        summed = r.make(ops_columnar.ColSumGrpOp, [r.key_column(op.frame, a), grp_ids, num_distinct, split])
        cols.append(r.cast(summed.results[0], "matrix"))
        names.append(r.const(f"SUM({ops.constant_value(a)})", "str"))
    return [r.emit(ops.CreateFrameOp(cols, names))]


def _rewrite(op: Operation, r: _Rewrite) -> list[SSAValue] | None:
    if isinstance(op, ops.EwBinaryOp):
        if op.KIND in ops_columnar.COL_SELECT_OPS:
            return _compare(op, r)
        if op.KIND in _SET_OPS:
            return _logical(op, r)
        if op.KIND in ops_columnar.COL_CALC_OPS:
            return _calc(op, r)
        return None
    if isinstance(op, ops.AggOp) and op.KIND == "sum" and op.AXIS == "all":
        return _sum_all(op, r)
    if isinstance(op, (ops.FilterRowOp, ops.ExtractRowOp)) and isinstance(op.operands[0].type, FrameType):
        return _rows(op, r)
    if isinstance(op, ops_frame.InnerJoinOp):
        return _inner_join(op, r)
    if isinstance(op, ops_frame.SemiJoinOp):
        return _semi_join(op, r)
    if isinstance(op, ops_frame.GroupOp):
        return _group(op, r)
    return None


@dataclass(frozen=True)
class ColumnarPass(ModulePass):
    """`optimistic_splitting`: DAPHNE's `--optimistic-splitting` (config key `use_optimistic_splitting`), the
    `optimisticSplit` operand of every `colSumGrp` the group rewrite makes."""

    name = "columnar"
    optimistic_splitting: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for o in list(op.walk()):
            if o.parent is None:
                continue  # already replaced
            new = _rewrite(o, _Rewrite(o, self.optimistic_splitting))
            if new is not None:
                _replace(o, new)
        # Like DAPHNE's rewrite, drop its own position list -> bit vector -> position list round trips between
        # operators before the IR is printed (`--explain=columnar`): each op was rewritten in isolation.
        if fold_positions(op):
            drop_dead_round_trips(op)
