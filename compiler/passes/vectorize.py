"""`vectorize`: fuse chains of row-wise matrix ops into `daphne.vectorizedPipeline` ops (`--vec`).

DAPHNE's rule (VectorizeComputationsPass, facts §2): candidates are vectorizable ops with a matrix operand or
result; walking each block's candidates in reverse program order, an unassigned op starts a pipeline, and a
producer joins its consumer's pipeline when the consumer splits that operand by ROWS and the producer combines that
result by ROWS. Unlike DAPHNE (its issue #375), a merge is only made when the merged set stays *convex*: no op
outside it both depends on it and feeds it, and nothing with side effects has to move — so SSA dominance and the
order of effects always hold. Horizontal fusion then merges independent pipelines that scan the same input.

A pipeline is placed where its first member was; the ops between its members that it depends on move before it.
Constants used by members are cloned into the body, so the body is self-contained (it can be shipped as text).

The cost model (`min_cells` > 0; the CLI's `--vec-min-cells`, on by default except with `--distributed`; issue 23
part 6, "--vec never slower than plain"): a candidate pipeline is formed only where it can run on several threads.
Without `--vec` the same element-wise chains are fused into one native loop anyway (fuse-maps), so a pipeline wins
only by its parallelism, and the executor runs a pipeline whose row-split inputs hold fewer than 4 MiB on the
calling thread (`runtime.vectorized.settings.MIN_PARALLEL_BYTES`: waking the workers costs more than such work).
So a candidate is not formed, and its ops stay plain kernels, when the sizes of its row-split inputs are all known
at compile time (shapes from `.meta` files, literals and inference, which clones library functions for their call
sites' shapes) and add up to fewer than `min_cells` cells (default: 4 MiB of f64 values), or when they are known to
have at most one row (a 1 x n vector in a loop body, whose column count may be unknown: there are no rows to
split), or when it only moves values (transposes, column extractions: no arithmetic to share, and the parts are
copied again to combine them). A row-split input of which the pipeline only extracts single columns counts with
those columns (`nid + (nid == node) * (X[, f] > t)` over a 50000 x 10 data set reads 50000 cells of X, not
500,000: formed, it ran 9 % slower than plain). A row range with bounds computed at run time, cut inside a loop
body (`P[(a + 1):b, ]` of RDP's subdivision loop), counts as small although its size is unknown: a loop cutting a
matrix into parts per iteration makes mostly small ones (RDP under --vec: a pipeline per segment ran ~10 % slower
than the plain kernels). Loops of small per-iteration matrices (decision trees,
row-by-row geometry, 1-row slices) would otherwise run thousands of pipelines, each slower than the plain
kernels. A pipeline whose input sizes are unknown is formed; the executor runs small inputs in one call on the
calling thread. (Products never join pipelines: compiler/analysis/vectorizable.py.)
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.traits import Pure

from daphnec.compiler.analysis.inference import Inference, set_type
from daphnec.compiler.analysis.vectorizable import combines, is_vectorizable, splits
from daphnec.compiler.ir_walk import function_blocks
from daphnec.dialects.ops import ConstantOp, ExtractColOp, SliceRowOp, TransposeOp
from daphnec.dialects.ops_pipeline import PipelineReturnOp, VectorizedPipelineOp
from daphnec.dialects.types import MatrixType, is_matrix
from daphnec.dialects.value_types import Split


def _block_op(op: Operation, block: Block) -> Operation | None:
    """The ancestor of `op` that sits directly in `block` (or None)."""
    while op is not None and op.parent is not block:
        op = op.parent_op()  # type: ignore[assignment]
    return op


def _operands_deep(op: Operation) -> list[SSAValue]:
    """Operands of an op and of every op nested in it (a region may use values from outside)."""
    return [v for o in op.walk() for v in o.operands]


def _is_pure(op: Operation) -> bool:
    return all(o.has_trait(Pure) or isinstance(o, PipelineReturnOp) for o in op.walk())


class _Block:
    """Dependency queries over one block's ops, for legality checks of candidate pipelines."""

    def __init__(self, block: Block):
        self.block = block
        self.ops = list(block.ops)
        self.pos = {op: i for i, op in enumerate(self.ops)}

    def producers(self, op: Operation) -> set[Operation]:
        out = set()
        for v in _operands_deep(op):
            owner = v.owner
            if isinstance(owner, Operation):
                p = _block_op(owner, self.block)
                if p is not None and p is not op:
                    out.add(p)
        return out

    def classify(self, members: set[Operation]) -> tuple[list[Operation], bool]:
        """The non-members between the members that the members depend on, and whether the set is legal."""
        lo = min(self.pos[m] for m in members)
        hi = max(self.pos[m] for m in members)
        between = [op for op in self.ops[lo + 1 : hi] if op not in members]
        down: set[Operation] = set()
        for op in self.ops[lo + 1 : hi + 1]:
            if op not in members and self.producers(op) & (members | down):
                down.add(op)
        up: set[Operation] = set()
        for op in reversed(self.ops[lo:hi]):
            if op in members:
                continue
            users = {self.block_user(u.operation) for r in op.results for u in r.uses}
            if users & (members | up):
                up.add(op)
        legal = (
            not (up & down)
            and all(_is_pure(op) for op in up)
            and _row_wise_inside(members)
            and _no_broadcast_only_member(
                [(m, [v if v.owner not in members else None for v in m.operands]) for m in members]
            )
        )
        return [op for op in between if op in up], legal

    def block_user(self, op: Operation) -> Operation | None:
        return _block_op(op, self.block)


def _row_wise_inside(members: set[Operation]) -> bool:
    """Inside a pipeline, a member may consume another member's result only row block by row block: the use
    splits by ROWS and the producer combines by ROWS (a member cannot read a reduction of the whole input)."""
    for m in members:
        for v, split in zip(m.operands, splits(m)):
            if v.owner in members and (split != Split.ROWS or _combine_of(v.owner, v) != 1):  # type: ignore[arg-type]
                return False
    return True


def _no_broadcast_only_member(members: list[tuple[Operation, list[SSAValue | None]]]) -> bool:
    """A pipeline runs over the rows of its ROWS inputs; one with a single row next to longer ones is broadcast
    (passed whole to every row block, facts §2). Each member must read at least one ROWS operand that runs over
    the pipeline's rows: a member whose row-split operands are all broadcast (`f[, 9]`, `2 * f`, `sum(f, 0)` of a
    1-row `f` next to a 5000-row `X`) would produce one result per row block instead of one (its output would get
    the pipeline's row count, its sum would be counted once per block). Each member comes with its operands as
    pipeline inputs (None where another member produces the operand, which runs over the rows by induction)."""
    rows: dict[SSAValue, int] = {}
    for m, inputs in members:
        for v, split in zip(inputs, splits(m)):
            if v is not None and split == Split.ROWS and isinstance(v.type, MatrixType):
                rows[v] = v.type.rows.data
    if all(r == 1 for r in rows.values()):
        return True  # a single row everywhere: nothing is broadcast
    broadcast = {v for v, r in rows.items() if r == 1}
    for m, inputs in members:
        row_operands = [
            v for v, o, split in zip(inputs, m.operands, splits(m)) if split == Split.ROWS and is_matrix(o.type)
        ]
        if row_operands and all(v in broadcast for v in row_operands):
            return False
    return True


def _combine_of(prod: Operation, v: SSAValue) -> int:
    return combines(prod)[list(prod.results).index(v)]


def _find_pipelines(info: _Block) -> list[set[Operation]]:
    """DAPHNE's greedy grouping in reverse program order, restricted to legal (convex, effect-safe) merges."""
    cands = [op for op in info.ops if is_vectorizable(op)]
    group: dict[Operation, int] = {}
    groups: dict[int, set[Operation]] = {}
    for op in reversed(cands):
        if op not in group:
            group[op] = id(op)
            groups[id(op)] = {op}
        for v, split in zip(op.operands, splits(op)):
            prod = v.owner
            if not isinstance(prod, Operation) or prod.parent is not info.block or not is_vectorizable(prod):
                continue
            if split != Split.ROWS or _combine_of(prod, v) != 1:
                continue
            gid = group[op]
            other = group.get(prod)
            if other == gid:
                continue
            merged = groups[gid] | (groups[other] if other is not None else {prod})
            if not info.classify(merged)[1]:
                continue
            for m in merged:
                group[m] = gid
            if other is not None:
                del groups[other]
            groups[gid] = merged
    return [g for g in groups.values()]


def _build(info: _Block, members: set[Operation]) -> VectorizedPipelineOp:
    """Replace a legal set of ops by one pipeline op."""
    block = info.block
    ordered = sorted(members, key=info.pos.__getitem__)
    upstream, _ = info.classify(members)
    first = ordered[0]
    for op in upstream:  # what the pipeline needs from between its members moves in front of it
        op.detach()
        block.insert_op_before(op, first)
    body = Block()
    mapping: dict[SSAValue, SSAValue] = {}
    inputs: list[SSAValue] = []
    in_splits: list[int] = []
    keys: dict[tuple[SSAValue, int], SSAValue] = {}
    for op in ordered:
        operands = []  # per position: a value used twice with two splits (X @ X) gets two different inputs
        for v, split in zip(op.operands, splits(op)):
            if v in mapping:
                operands.append(mapping[v])
                continue
            owner = v.owner
            if isinstance(owner, ConstantOp):
                c = owner.clone()
                body.add_op(c)
                mapping[v] = c.res
                operands.append(c.res)
                continue
            key = (v, split if is_matrix(v.type) else 0)
            if key not in keys:
                t = v.type
                arg_t = t
                if key[1] == Split.ROWS:  # row blocks: unknown row count, same representation and estimate
                    arg_t = MatrixType(t.element_type, -1, t.cols.data, t.representation.data, t.sparsity_estimate)
                keys[key] = body.insert_arg(arg_t, len(body.args))
                inputs.append(v)
                in_splits.append(key[1])
            operands.append(keys[key])
        clone = op.clone()
        clone.operands = operands
        body.add_op(clone)
        for r, cr in zip(op.results, clone.results):
            mapping[r] = cr
    outs = [r for op in ordered for r in op.results if any(info.block_user(u.operation) not in members for u in r.uses)]
    out_combines = [_combine_of(r.owner, r) for r in outs]  # type: ignore[arg-type]
    body.add_op(PipelineReturnOp(*(mapping[r] for r in outs)))
    pipe = VectorizedPipelineOp(inputs, in_splits, [r.type for r in outs], out_combines, body)
    pipe.location = first.location
    block.insert_op_before(pipe, first)
    for r, nr in zip(outs, pipe.outs):
        r.replace_all_uses_with(nr)
    for op in reversed(ordered):
        Rewriter.erase_op(op)
    _reinfer_rows(body)
    return pipe


def is_legal_fusion(block: Block, members: set[Operation]) -> bool:
    """Whether `members` (ops of `block`) may become one pipeline (convex, effect-safe, row-wise inside)."""
    return _Block(block).classify(members)[1]


def fuse_ops(block: Block, members: set[Operation]) -> VectorizedPipelineOp:
    """One pipeline of a legal set of ops (`is_legal_fusion`), for passes that choose their own sets."""
    return _build(_Block(block), members)


def _reinfer_rows(body: Block) -> None:
    """Row counts inside a pipeline are unknown (-1): re-infer the body's types, but keep every matrix's
    representation and sparsity estimate (a CSR value stays CSR inside the pipeline)."""
    before = {r: r.type for op in body.ops for r in op.results}
    Inference(ModuleOp([]), specialize=False).infer_block(body)
    for r, old in before.items():
        new = r.type
        if isinstance(old, MatrixType) and isinstance(new, MatrixType):
            set_type(r, new.with_representation(old.representation.data, old.sparsity_estimate))


def row_split_cells(members: set[Operation]) -> int | None:
    """The cells of the matrices a candidate pipeline would split by rows (each input once), or None if any size
    is unknown at compile time. An input the pipeline only reads single columns of (`X[, f]` of a data set in a
    tree's loop) counts those columns (`_columns_read`): the work is theirs, not the whole matrix's."""
    seen: set[SSAValue] = set()
    cells = 0
    for m in members:
        for v, split in zip(m.operands, splits(m)):
            t = v.type
            if v.owner in members or split != Split.ROWS or not isinstance(t, MatrixType) or v in seen:
                continue
            seen.add(v)
            rows, cols = t.rows.data, t.cols.data
            if rows < 0 and _loop_slice(v):
                continue  # a part of a matrix cut per iteration: counted as small (see the module docstring)
            picked = _columns_read(v, members)
            if picked is not None:
                cols = picked if cols < 0 else min(cols, picked)
            if rows < 0 or cols < 0:
                return None
            cells += rows * cols
    return cells


def _loop_slice(v: SSAValue) -> bool:
    """`v` is a row range `X[lo:hi, ]` with bounds computed at run time, cut inside a loop body: a part of a matrix
    made per iteration (RDP's segment `P[(a + 1):b, ]` of its subdivision loop)."""
    op = v.owner
    if not isinstance(op, SliceRowOp) or all(isinstance(b.owner, ConstantOp) for b in (op.lower, op.upper)):
        return False
    parent = op.parent_op()
    while parent is not None:
        if isinstance(parent, (scf.ForOp, scf.WhileOp)):
            return True
        parent = parent.parent_op()
    return False


def _columns_read(v: SSAValue, members: set[Operation]) -> int | None:
    """How many columns of `v` the members read when each of them that reads `v` extracts one column of it (a
    scalar position); None otherwise."""
    readers = [use.operation for use in v.uses if use.operation in members]
    if not readers or not all(
        isinstance(r, ExtractColOp) and r.source is v and not isinstance(r.selection.type, MatrixType) for r in readers
    ):
        return None
    return len(readers)


_DATA_MOVEMENT = (TransposeOp, ExtractColOp)
"""Ops that only move values: a pipeline of nothing else splits a copy into tasks and copies the parts again to
combine them (`t(X)` of a 50000 x 51 design matrix as a pipeline: 45 ms, 210 partial transposes; plain: 3 ms)."""


def row_split_rows(members: set[Operation]) -> int | None:
    """The most rows of the matrices a candidate pipeline would split by rows, or None if any row count is unknown
    at compile time (column counts may be unknown)."""
    rows = 0
    for m in members:
        for v, split in zip(m.operands, splits(m)):
            t = v.type
            if v.owner in members or split != Split.ROWS or not isinstance(t, MatrixType):
                continue
            if t.rows.data < 0:
                return None
            rows = max(rows, t.rows.data)
    return rows


def worth_forming(members: set[Operation], min_cells: int) -> bool:
    """The cost model (see the module docstring): whether a legal candidate pipeline should be formed."""
    if min_cells <= 0:
        return True
    if all(isinstance(m, _DATA_MOVEMENT) for m in members):
        return False  # no arithmetic to share: the plain kernel is a view or one copy
    rows = row_split_rows(members)
    if rows is not None and rows <= 1:
        return False  # one row (a 1 x n vector of a loop body): nothing to split, whatever n is
    cells = row_split_cells(members)
    return cells is None or cells >= min_cells


def vectorize_block(block: Block, min_cells: int = 0) -> None:
    for op in list(block.ops):  # nested regions first (loop bodies hold most pipelines)
        if isinstance(op, VectorizedPipelineOp):
            continue  # built by an earlier pass (`fuse-filter-agg`): its body is one pipeline already
        for region in op.regions:
            for b in region.blocks:
                vectorize_block(b, min_cells)
    info = _Block(block)
    chosen = [g for g in _find_pipelines(info) if worth_forming(g, min_cells)]
    for members in sorted(chosen, key=lambda g: min(info.pos[m] for m in g)):
        _build(_Block(block), members)
    _horizontal_fusion(block)


def _horizontal_fusion(block: Block) -> None:
    """Merge two pipelines that split the same input by rows and do not depend on each other (one scan, e.g.
    `aggMin(X)` and `aggMax(X)`). The later one (pure) moves up when all its inputs are defined before the earlier."""
    changed = True
    while changed:
        changed = False
        pipes = [op for op in block.ops if isinstance(op, VectorizedPipelineOp)]
        for i, a in enumerate(pipes):
            for b in pipes[i + 1 :]:
                if _can_fuse_horizontally(block, a, b):
                    _fuse(a, b)
                    changed = True
                    break
            if changed:
                break


def _rows_inputs(p: VectorizedPipelineOp) -> set[SSAValue]:
    return {v for v, s in zip(p.inputs, p.split_modes) if s == Split.ROWS}


def _can_fuse_horizontally(block: Block, a: VectorizedPipelineOp, b: VectorizedPipelineOp) -> bool:
    if not (_rows_inputs(a) & _rows_inputs(b)):
        return False
    members = []
    for p in (a, b):
        inputs = dict(zip(p.body.block.args, p.inputs))
        members += [
            (op, [inputs.get(v) for v in op.operands])  # type: ignore[call-overload]
            for op in p.body.block.ops
            if not isinstance(op, PipelineReturnOp)
        ]
    if not _no_broadcast_only_member(members):
        return False
    ops = list(block.ops)
    defined_before_a = set(ops[: ops.index(a)])
    for v in b.inputs:  # b (pure) may move up to a only if everything it reads exists there already
        owner = v.owner
        if isinstance(owner, Operation) and _block_op(owner, block) not in defined_before_a:
            return False
    return True


def _fuse(a: VectorizedPipelineOp, b: VectorizedPipelineOp) -> None:
    body = Block()
    mapping: dict[SSAValue, SSAValue] = {}
    inputs: list[SSAValue] = []
    in_splits: list[int] = []
    keys: dict[tuple[SSAValue, int], SSAValue] = {}
    rets: list[SSAValue] = []
    for p in (a, b):
        for v, s, arg in zip(p.inputs, p.split_modes, p.body.block.args):
            if (v, s) not in keys:
                keys[(v, s)] = body.insert_arg(arg.type, len(body.args))
                inputs.append(v)
                in_splits.append(s)
            mapping[arg] = keys[(v, s)]
        for op in p.body.block.ops:
            if isinstance(op, PipelineReturnOp):
                rets.extend(mapping[v] for v in op.operands)
                continue
            clone = op.clone(value_mapper=mapping)
            body.add_op(clone)
            for r, cr in zip(op.results, clone.results):
                mapping[r] = cr
    body.add_op(PipelineReturnOp(*rets))
    outs = [*a.outs, *b.outs]
    fused = VectorizedPipelineOp(inputs, in_splits, [r.type for r in outs], [*a.combine_modes, *b.combine_modes], body)
    fused.location = a.location
    blk = a.parent_block()
    assert blk is not None
    blk.insert_op_before(fused, a)
    for r, nr in zip(outs, fused.outs):
        r.replace_all_uses_with(nr)
    Rewriter.erase_op(b)
    Rewriter.erase_op(a)


@dataclass(frozen=True)
class VectorizePass(ModulePass):
    """DAPHNE's fusion rule; with `min_cells` > 0 also the cost model (see the module docstring)."""

    name = "vectorize"
    min_cells: int = 0

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for block in function_blocks(op):
            vectorize_block(block, self.min_cells)
