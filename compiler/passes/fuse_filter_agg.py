"""`fuse-filter-agg`: a row filter of a frame followed by full aggregates of its columns becomes one pipeline.

The SQL translation of `SELECT sum(t.a * t.b) FROM t WHERE p` (docs/sql.md; DAPHNE's SQLVisitor) filters the
whole frame (`daphne.filterRow`: a copy or a gather of every column read later), extracts the columns the
aggregates read from the filtered frame (`daphne.extractCol` + `daphne.cast` to a matrix), computes the aggregate
arguments element-wise and aggregates them (`daphne.sumAll`, `minAll`, `maxAll`). This pass evaluates the
selection as a predicate instead: each aggregate reads `daphne.cond(bits, arg, neutral)` over the *unfiltered*
columns (`neutral`: 0 for sums, the type's largest or smallest value for min or max, so a dropped row changes
nothing), and the predicate, the element-wise ops, the selects and the aggregates become one
`daphne.vectorizedPipeline`. Its native kernel reads every column once and writes nothing
(`lower-pipeline-to-loops`); the executor runs it over row blocks on the task scheduler, with per-task partial
aggregates combined in task order, and `distribute` ships it like any pipeline. `count` (`numRows` of a
filtered column) becomes the sum of `bits ? 1 : 0`.

Results: on the default path the pipeline is marked `daphne.ordered` (one call, DAPHNE's sequential fold), so
sums are bit-identical to folding the filtered column (adding 0 never changes a fold that starts at a value;
only a sum of nothing but negative zeros prints 0 instead of -0); with `--vec` the partial sums reassociate
(within 1e-12 relative, the vectorized engine's promise). Min, max and count are exact either way.

The rewrite applies only where it cannot change what runs: every use of the filtered frame is a column extraction
whose matrix feeds, through element-wise ops that cannot fail (no integer division or modulo), only full sums,
mins, maxes and row counts, and every matrix those ops read is such a column (nothing else has the filtered row
count). Anything else (a projected column, `avg` = `meanAll`, GROUP BY) keeps the unfused ops.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, UnitAttr
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from daphnec.compiler.analysis.inference import set_type
from daphnec.compiler.analysis.vectorizable import is_vectorizable
from daphnec.compiler.ir_walk import function_blocks
from daphnec.compiler.passes.pipeline_fusion import fuse_ops, is_legal_fusion
from daphnec.dialects import ops, ops_frame
from daphnec.dialects.attr_names import ORDERED_ATTR
from daphnec.dialects.op_kinds import FROM_SUMS
from daphnec.dialects.ops_matrix import ColBindOp
from daphnec.dialects.ops_relational import GroupedSumOp, GroupIdsOp, GroupResultOp
from daphnec.dialects.types import UNKNOWN, FrameType, MatrixType, is_matrix, vt_name
from daphnec.dialects.value_types import ARITHMETIC_VTS, FLOAT_VTS

_SAFE_BINARY = frozenset(("add", "sub", "mul", "min", "max", "and", "or", "eq", "neq", "lt", "le", "gt", "ge"))
"""Binary kinds evaluated on every row without risk: none raises (integer `/` and `%` by zero would)."""
_SAFE_UNARY = frozenset(("minus", "abs"))


@dataclass
class _Match:
    """One filter and what reads its result: the column matrices, the element-wise ops, the aggregates."""

    filt: ops.FilterRowOp
    columns: list[ops.CastOp] = field(default_factory=list)
    chain: list[Operation] = field(default_factory=list)
    aggs: list[ops.AggOp] = field(default_factory=list)
    counts: list[ops.NumRowsOp] = field(default_factory=list)
    """`numRows` of a column (SQL's `count`): the number of rows kept."""


def _column_cast(use_op: Operation) -> ops.CastOp | None:
    """`cast(extractCol(G, "label"))` to a numeric n x 1 matrix, the extraction used only by the cast."""
    if not isinstance(use_op, ops.ExtractColOp) or not isinstance(ops.constant_value(use_op.selection), str):
        return None
    if not use_op.res.has_one_use():
        return None
    cast = next(iter(use_op.res.uses)).operation
    t = cast.results[0].type if isinstance(cast, ops.CastOp) else None
    if not isinstance(t, MatrixType) or t.is_sparse or t.cols.data != 1 or vt_name(t) not in ARITHMETIC_VTS:
        return None
    return cast  # type: ignore[return-value]


def _element_wise(op: Operation, inside: set[SSAValue]) -> bool:
    """A safe element-wise op over values of the filtered rows (`inside`) and scalars only."""
    if isinstance(op, ops.EwBinaryOp):
        ok_kind = op.KIND in _SAFE_BINARY or (op.KIND == "div" and vt_name(op.res.type) in FLOAT_VTS)
    elif isinstance(op, ops.EwUnaryOp):
        ok_kind = op.KIND in _SAFE_UNARY
    else:
        return False
    t = op.results[0].type
    if not ok_kind or not isinstance(t, MatrixType) or t.is_sparse or vt_name(t) not in ARITHMETIC_VTS:
        return False
    return all(v in inside or not is_matrix(v.type) for v in op.operands)


def _aggregate(op: Operation) -> bool:
    """A full aggregate the pipeline computes natively and combines per task (sum, min, max)."""
    return isinstance(op, ops.AllAggOp) and op.KIND in ("sum", "min", "max")


def match(filt: ops.FilterRowOp) -> _Match | None:
    """The filter's readers if all of them can be fused (see the module docstring), else None."""
    block = filt.parent_block()
    if block is None or match_bits(filt) is None:
        return None
    m = _Match(filt)
    for use in filt.res.uses:
        cast = _column_cast(use.operation)
        if cast is None or cast.parent_block() is not block:
            return None
        m.columns.append(cast)
    inside: set[SSAValue] = {c.res for c in m.columns}
    work = list(inside)
    while work:
        for use in work.pop().uses:
            user = use.operation
            if user in m.chain or user in m.aggs:
                continue
            if user.parent_block() is not block:
                return None
            if _aggregate(user):
                m.aggs.append(user)  # type: ignore[arg-type]
            elif isinstance(user, ops.NumRowsOp):
                m.counts.append(user)
            elif isinstance(user, (ops.EwBinaryOp, ops.EwUnaryOp)):
                m.chain.append(user)
                inside.add(user.results[0])
                work.append(user.results[0])
            else:
                return None
    if not all(_element_wise(op, inside) for op in m.chain):  # checked once every operand is known
        return None
    return m if m.aggs or m.counts else None


def _neutral(agg: ops.AggOp) -> ops.ConstantOp:
    """The value a dropped row contributes: nothing changes a sum, a min or a max by it."""
    vt = vt_name(agg.arg.type)
    if agg.KIND == "sum":
        return ops.ConstantOp.of(0.0 if vt in FLOAT_VTS else 0, vt)
    if vt in FLOAT_VTS:
        return ops.ConstantOp.of(math.inf if agg.KIND == "min" else -math.inf, vt)
    info = np.iinfo(vt.replace("si", "int").replace("ui", "uint"))  # the type's range: min/max over no rows
    return ops.ConstantOp.of(int(info.max if agg.KIND == "min" else info.min), vt)


def _numeric_vectorizable(op: Operation) -> bool:
    """A vectorizable op over numbers only: a string comparison (`t.g <> 'c'`) stays outside, so that the pipeline
    keeps its native kernel (it reads the comparison's 0/1 result instead)."""
    values = [*op.operands, *op.results]
    return is_vectorizable(op) and all(vt_name(v.type) in ARITHMETIC_VTS for v in values if is_matrix(v.type))


def _mask_producers(bits: SSAValue, block: Block, members: set[Operation]) -> None:
    """Add the vectorizable ops computing the filter's bits that nothing but the pipeline reads (to a fixpoint: an
    op read by two members, `x >= lo` and `x <= hi` of one column, joins once both readers have)."""
    changed = True
    while changed:
        changed = False
        stack, seen = [bits], set()
        while stack:
            v = stack.pop()
            p = v.owner
            if not isinstance(p, Operation) or p in seen or p.parent is not block or not _numeric_vectorizable(p):
                continue
            seen.add(p)
            if p not in members:
                if not all(u.operation in members for r in p.results for u in r.uses):
                    continue
                members.add(p)
                changed = True
            stack.extend(x for x in p.operands if is_matrix(x.type))


def _same_column(block: Block, source: SSAValue) -> None:
    """Merge equal column matrices of `source` in `block` (`cast(extractCol(F, "x"))` twice, as the translation of
    `x BETWEEN ...` and of `x` in an aggregate makes them: pure, so the first serves all), so that the pipeline
    reads each column once."""
    first: dict[tuple[object, ...], ops.CastOp] = {}
    for op in list(block.ops):
        if not isinstance(op, ops.CastOp) or not isinstance(op.arg.owner, ops.ExtractColOp):
            continue
        extract = op.arg.owner
        label = ops.constant_value(extract.selection)
        if extract.source is not source or not isinstance(label, str) or not extract.res.has_one_use():
            continue
        key = (label, op.res.type)
        if key not in first:
            first[key] = op
            continue
        op.res.replace_all_uses_with(first[key].res)
        op.detach()
        op.erase()
        extract.detach()
        extract.erase()


def _erase_if_dead(op: object) -> None:
    """Drop a constant the rewrite left without uses (a label the old ops read)."""
    if isinstance(op, ops.ConstantOp) and not op.res.uses:
        op.detach()
        op.erase()


def _count(bits: SSAValue, count: ops.NumRowsOp, block: Block) -> tuple[Operation, Operation]:
    """`numRows` of a filtered column as `sum(bits ? 1 : 0)` (si64, cast to the index `numRows` gives); the sum
    joins the pipeline."""
    one, zero = ops.ConstantOp.of(1, "si64"), ops.ConstantOp.of(0, "si64")
    select = ops.CondOp.create(operands=[bits, one.res, zero.res], result_types=[bits.type]).typed()
    total = ops.SumAllOp.create(operands=[select.results[0]], result_types=[bits.type]).typed()
    rows = ops.CastOp(total.results[0], vt="index", dt="scalar")
    for op in (one, zero, select, total, rows):
        op.location = count.location
        block.insert_op_before(op, count)
    count.results[0].replace_all_uses_with(rows.res)
    count.detach()
    count.erase()
    return select, total


def _reroot(
    columns: list[ops.CastOp], filt: ops.FilterRowOp, block: Block, moved: dict[SSAValue, SSAValue] | None = None
) -> list[Operation]:
    """Each `cast(extractCol(G, label))` of the filtered frame G becomes the same column of the unfiltered frame,
    placed before the filter; the new ops (`moved`: old column -> new column)."""
    created: list[Operation] = []
    for cast in columns:
        extract = cast.arg.owner
        assert isinstance(extract, ops.ExtractColOp)
        old_label = extract.selection.owner
        label = ops.ConstantOp.of(ops.constant_value(extract.selection), "str")  # type: ignore[arg-type]
        new_extract = ops.ExtractColOp.create(operands=[filt.source, label.res], result_types=[cast.res.type])
        new_cast = ops.CastOp(new_extract.typed().results[0], dt="matrix")
        created += [label, new_extract, new_cast]
        for op in (label, new_extract, new_cast.typed()):
            op.location = cast.location
            block.insert_op_before(op, filt)
        cast.res.replace_all_uses_with(new_cast.results[0])
        if moved is not None:
            moved[cast.res] = new_cast.results[0]
        for op in (cast, extract):
            op.detach()
            op.erase()
        _erase_if_dead(old_label)
    return created


def _select(bits: SSAValue, value: SSAValue, neutral: ops.ConstantOp, before: Operation) -> Operation:
    """`bits ? value : neutral`, inserted before `before`."""
    select = ops.CondOp.create(operands=[bits, value, neutral.res], result_types=[value.type]).typed()
    for op in (neutral, select):
        op.location = before.location
        before.parent_block().insert_op_before(op, before)  # type: ignore[union-attr]
    return select


def _retype(chain: list[Operation], block: Block) -> None:
    """Re-infer the element-wise ops in program order: they run over the unfiltered rows now."""
    order = {op: i for i, op in enumerate(block.ops)}
    for op in sorted(chain, key=order.__getitem__):
        op.typed()  # the row count is the unfiltered frame's now


def _drop_filter(filt: ops.FilterRowOp, created: list[Operation], block: Block, members: set[Operation]) -> None:
    """Erase the filter and the new columns nothing reads (a column only counted), read each column once, and let
    the ops computing the bits join the pipeline."""
    for op in reversed(created):
        if not any(r.uses for r in op.results):
            op.detach()
            op.erase()
    bits, source = filt.bits, filt.source
    filt.detach()
    filt.erase()
    _same_column(block, source)
    _mask_producers(bits, block, members)


def rewrite(m: _Match) -> set[Operation]:
    """Read the columns from the unfiltered frame, select each aggregate's argument by the bits, drop the filter;
    the ops that form the pipeline."""
    filt, block = m.filt, m.filt.parent_block()
    assert block is not None
    members: set[Operation] = set(m.chain) | set(m.aggs)
    created = _reroot(m.columns, filt, block)
    for count in m.counts:
        members.update(_count(filt.bits, count, block))
    for agg in m.aggs:
        select = _select(filt.bits, agg.arg, _neutral(agg), agg)
        agg.operands = [select.results[0]]
        members.add(select)
    _retype(m.chain, block)
    _drop_filter(filt, created, block, members)
    return members


# --- GROUP BY: grouped sums per task (`daphne.groupIds`, `daphne.groupedSum`, `daphne.groupResult`) ---------------


@dataclass
class _GroupMatch:
    """A `daphne.group` over a filtered frame with appended aggregate columns (the SQL translation's pass 1)."""

    group: ops_frame.GroupOp
    filt: ops.FilterRowOp
    binds: list[Operation] = field(default_factory=list)
    appended: dict[str, SSAValue] = field(default_factory=dict)
    columns: list[ops.CastOp] = field(default_factory=list)
    chain: list[Operation] = field(default_factory=list)


def _appended(m: _GroupMatch, frame: SSAValue) -> SSAValue | None:
    """Walk the `colBind(frame, createFrame(matrix, "label"))` chain back to its start; record each appended matrix."""
    while isinstance(frame.owner, ColBindOp):
        bind = frame.owner
        made = bind.rhs.owner
        if not isinstance(made, ops.CreateFrameOp) or len(made.cols) != 1 or not made.res.has_one_use():
            return None
        label = ops.constant_value(made.labels[0])
        if not isinstance(label, str) or label in m.appended:
            return None
        m.appended[label] = made.cols[0]
        m.binds += [bind, made]
        frame = bind.lhs
    return frame


def match_group(group: ops_frame.GroupOp) -> _GroupMatch | None:
    """SUM, AVG and COUNT by key columns of a filtered frame, each aggregate an appended column computed by safe
    element-wise ops from columns of the filtered frame (`SELECT k, sum(a * b), count(a) ... WHERE p GROUP BY k`)."""
    block, t = group.parent_block(), group.res.type
    keys = [ops.constant_value(k) for k in group.key_cols]
    aggs = [ops.constant_value(a) for a in group.agg_cols]
    if block is None or not isinstance(t, FrameType) or t.label_names is None or not keys:
        return None
    if any(f not in FROM_SUMS for f in group.funcs) or not all(isinstance(x, str) for x in keys + aggs):
        return None
    m = _GroupMatch(group, None)  # type: ignore[arg-type]
    base = _appended(m, group.frame)
    filt = base.owner if base is not None else None
    if not isinstance(filt, ops.FilterRowOp) or filt.parent_block() is not block or match_bits(filt) is None:
        return None
    m.filt = filt
    if any(k in m.appended or k is None for k in keys) or any(a not in m.appended for a in aggs):
        return None
    frames = [filt.res] + [b.res for b in m.binds if isinstance(b, ColBindOp)]
    for fr in frames:
        for use in fr.uses:
            user = use.operation
            if user in m.binds or user is group:
                continue
            cast = _column_cast(user)
            if cast is None or cast.parent_block() is not block or ops.constant_value(user.selection) in m.appended:
                return None
            m.columns.append(cast)
    return m if _group_chain(m) else None


def _group_chain(m: _GroupMatch) -> bool:
    """The element-wise ops from the columns to the appended matrices; nothing else may read them."""
    inside: set[SSAValue] = {c.res for c in m.columns}
    makers = {b for b in m.binds if isinstance(b, ops.CreateFrameOp)}
    work = list(inside)
    while work:
        for use in work.pop().uses:
            user = use.operation
            if user in m.chain or user in makers:
                continue
            if (
                not isinstance(user, (ops.EwBinaryOp, ops.EwUnaryOp))
                or user.parent_block() is not m.filt.parent_block()
            ):
                return False
            m.chain.append(user)
            inside.add(user.results[0])
            work.append(user.results[0])
    numeric = all(isinstance(v.type, MatrixType) and vt_name(v.type) in ARITHMETIC_VTS for v in m.appended.values())
    return (
        numeric and all(v in inside for v in m.appended.values()) and all(_element_wise(op, inside) for op in m.chain)
    )


def match_bits(filt: ops.FilterRowOp) -> SSAValue | None:
    """The filter's bits if they select rows of a frame as a numeric n x 1 matrix (the translation's WHERE)."""
    bits = filt.bits.type
    if not isinstance(filt.source.type, FrameType):
        return None
    if not isinstance(bits, MatrixType) or bits.is_sparse or bits.cols.data != 1 or vt_name(bits) not in ARITHMETIC_VTS:
        return None
    return filt.bits


def _group_ids(m: _GroupMatch, block: Block) -> tuple[SSAValue, SSAValue, SSAValue]:
    """`daphne.groupIds` of the unfiltered frame and the number of ids (si64), before the filter."""
    labels = [ops.ConstantOp.of(ops.constant_value(k), "str") for k in m.group.key_cols]  # type: ignore[arg-type]
    gids = GroupIdsOp.create(operands=[m.filt.source, *(c.res for c in labels)], result_types=[UNKNOWN] * 2).typed()
    count = ops.NumRowsOp.create(operands=[gids.results[1]], result_types=[UNKNOWN]).typed()
    ngroups = ops.CastOp(count.results[0], vt="si64", dt="scalar")
    for op in (*labels, gids, count, ngroups):
        op.location = m.group.location
        block.insert_op_before(op, m.filt)
    return gids.results[0], gids.results[1], ngroups.res


def _grouped(ids: SSAValue, values: SSAValue, ngroups: SSAValue, before: Operation) -> Operation:
    """`daphne.groupedSum(ids, values, ngroups)` before `before`."""
    op = GroupedSumOp.create(operands=[ids, values, ngroups], result_types=[UNKNOWN]).typed()
    op.location = before.location
    before.parent_block().insert_op_before(op, before)  # type: ignore[union-attr]
    return op


def _group_sums(m: _GroupMatch, ids: SSAValue, ngroups: SSAValue, moved: dict, members: set[Operation]) -> list:
    """One grouped count (`bits ? 1 : 0`) and per aggregated column one grouped sum of `bits ? value : 0` (AVG's
    in f64, as `relational.aggregate` sums it), before the group; the values `daphne.groupResult` takes."""
    group, bits = m.group, m.filt.bits
    block = group.parent_block()
    assert block is not None
    one = ops.ConstantOp.of(1, "si64")
    block.insert_op_before(one, group)
    ones = _select(bits, one.res, ops.ConstantOp.of(0, "si64"), group)
    count = _grouped(ids, ones.results[0], ngroups, group)
    members |= {ones, count}
    sums: dict[tuple[bool, object], SSAValue] = {}
    out = []
    for f, a in zip(group.funcs, group.agg_cols):
        key = (f == "AVG", ops.constant_value(a))
        if f != "COUNT" and key not in sums:
            value = moved.get(m.appended[key[1]], m.appended[key[1]])  # type: ignore[index]
            if f == "AVG" and vt_name(value.type) != "f64":
                conv = ops.CastOp(value, vt="f64")
                block.insert_op_before(conv, group)
                members.add(conv)
                value = conv.res
            vt = vt_name(value.type)
            select = _select(bits, value, ops.ConstantOp.of(0.0 if vt in FLOAT_VTS else 0, vt), group)  # type: ignore[arg-type]
            total = _grouped(ids, select.results[0], ngroups, group)
            members |= {select, total}
            sums[key] = total.results[0]
        out.append(count.results[0] if f == "COUNT" else sums[key])
    return [count.results[0], *out]


def rewrite_group(m: _GroupMatch) -> set[Operation]:
    """Group ids before the filter, the grouped sums (`_group_sums`) in one pipeline, `daphne.groupResult` in
    place of the group (with the group's result type); the filter and the appended frames dropped."""
    group, filt = m.group, m.filt
    block = filt.parent_block()
    assert block is not None
    ids, keys, ngroups = _group_ids(m, block)
    moved: dict[SSAValue, SSAValue] = {}
    created = _reroot(m.columns, filt, block, moved)
    _retype(m.chain, block)
    members: set[Operation] = set(m.chain)
    count, *aggs = _group_sums(m, ids, ngroups, moved, members)
    result = GroupResultOp(keys, count, aggs, group.funcs, group.res.type.label_names)  # type: ignore[union-attr]
    set_type(result.res, group.res.type)  # the group's own result type (labels and value types)
    result.location = group.location
    block.insert_op_before(result, group)
    group.res.replace_all_uses_with(result.res)
    labels = [v.owner for op in [group, *m.binds] for v in op.operands if isinstance(v.owner, ops.ConstantOp)]
    for op in [group, *m.binds]:  # users before what they use
        op.detach()
        op.erase()
    for c in set(labels):
        _erase_if_dead(c)
    _drop_filter(filt, created, block, members)
    return members


def fuse_filters_in(block: Block, ordered: bool) -> None:
    """Rewrite every matching filter and group of the block (nested blocks first: loop bodies hold queries too);
    a set of ops that cannot form one pipeline (an op with effects between them) stays rewritten but unfused."""
    for op in list(block.ops):
        for region in op.regions:
            for b in region.blocks:
                fuse_filters_in(b, ordered)
    for op in [o for o in block.ops if isinstance(o, (ops.FilterRowOp, ops_frame.GroupOp))]:
        if op.parent is not block:
            continue  # erased by an earlier rewrite
        if isinstance(op, ops_frame.GroupOp):
            g = match_group(op)
            if g is None:
                continue
            members = rewrite_group(g)
        else:
            m = match(op)
            if m is None:
                continue
            members = rewrite(m)
        if not is_legal_fusion(block, members):
            continue  # the selects compute the same as the filter did, unfused
        outer_constants = {v.owner for op in members for v in op.operands if isinstance(v.owner, ops.ConstantOp)}
        pipe = fuse_ops(block, members)  # clones the constants into the body
        if ordered:
            pipe.attributes[ORDERED_ATTR] = UnitAttr()
        for c in outer_constants:
            _erase_if_dead(c)


@dataclass(frozen=True)
class FuseFilterAggPass(ModulePass):
    """`ordered`: the default path's bit-identical sums (one call, sequential fold); `--vec` leaves it off."""

    name = "fuse-filter-agg"
    ordered: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for block in function_blocks(op):
            fuse_filters_in(block, self.ordered)
