"""`vectorize`: fuse chains of row-wise matrix ops into `daphne.vectorizedPipeline` ops (`--vec`).

DAPHNE's rule (VectorizeComputationsPass, facts §2): candidates are vectorizable ops with a matrix operand or
result; walking each block's candidates in reverse program order, an unassigned op starts a pipeline, and a
producer joins its consumer's pipeline when the consumer splits that operand by ROWS and the producer combines that
result by ROWS. Unlike DAPHNE (its issue #375), a merge is only made when the merged set stays *convex*: no op
outside it both depends on it and feeds it, and nothing with side effects has to move — so SSA dominance and the
order of effects always hold (the legality and the building: compiler/passes/pipeline_fusion.py). Horizontal
fusion then merges independent pipelines that scan the same input.

The cost model (`min_cells` > 0; the CLI's `--vec-min-cells`, on by default except with `--distributed`; issue 23
part 6, "--vec never slower than plain"): a candidate pipeline is formed only where it can run on several threads.
Without `--vec` the same element-wise chains are fused into one native loop anyway (fuse-maps), so a pipeline wins
only by its parallelism, and the executor runs a pipeline whose row-split inputs hold fewer than 4 MiB on the
calling thread (`runtime.vectorized.settings.MIN_PARALLEL_BYTES`: waking the workers costs more than such work). So
a candidate is not formed, and its ops stay plain kernels, when the sizes of its row-split inputs are all known at
compile time (shapes from `.meta` files, literals and inference, which clones library functions for their call
sites' shapes) and add up to fewer than `min_cells` cells (default: 4 MiB of f64 values), or when they are known to
have at most one row (a 1 x n vector in a loop body, whose column count may be unknown: there are no rows to split),
where an input of unknown rows counts the rows of another row-split input known to have several (they must match, or
the executor raises its row-count error: lmCG's `beta + alpha * p` of a 51 x 1 and a `?` x 1 vector, a pipeline call
in every iteration, and restoreBeta's `sum(t(shift) * beta[0:m, ])` stay plain), or when it only moves values
(transposes, column extractions: no arithmetic to share, and the parts are copied again to combine them). A
row-split input of which the pipeline only extracts single columns counts with those columns (`nid + (nid == node) *
(X[, f] > t)` over a 50000 x 10 data set reads 50000 cells of X, not 500,000: formed, it ran 9 % slower than plain).
A row range with bounds computed at run time, cut inside a loop body (`P[(a + 1):b, ]` of RDP's subdivision loop),
counts as small although its size is unknown: a loop cutting a matrix into parts per iteration makes mostly small
ones (RDP under --vec: a pipeline per segment ran ~10 % slower than the plain kernels). One aggregation alone
(`colSums(X)`: a memory-bound numpy pass, nothing to fuse into it) needs `LONE_REDUCTION_FACTOR` times `min_cells`.
Loops of small per-iteration matrices (decision trees, row-by-row geometry, 1-row slices) would otherwise run
thousands of pipelines, each slower than the plain kernels. A pipeline whose input sizes are unknown is formed; the
executor runs small inputs in one call on the calling thread. (Products never join pipelines:
compiler/analysis/vectorizable.py.) A candidate that would get no native kernel (`lowers_natively`: e.g. a column
count unknown at compile time) is not formed either: its Python body calls the plain ops' numpy kernels per row
block. And what the cost model leaves as plain ops gets the default path's ordered fusions (`_plain_fusions`:
fuse-sums, fuse-maps), as it would without `--vec`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func, scf
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp, StringAttr, SymbolRefAttr
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from daphnec.compiler.analysis.vectorizable import is_vectorizable, splits
from daphnec.compiler.ir_walk import function_blocks, preorder
from daphnec.compiler.lowering.kernel_plan import try_plan
from daphnec.compiler.passes.fuse_maps import fuse_maps_in
from daphnec.compiler.passes.fuse_sums import fuse_sums_in
from daphnec.compiler.passes.pipeline_fusion import (
    BlockDeps,
    block_op,
    build_pipeline,
    combine_of,
    no_broadcast_only_member,
)
from daphnec.dialects.ops import ConstantOp, ExtractColOp, SliceRowOp, TransposeOp
from daphnec.dialects.ops_pipeline import PipelineReturnOp, VectorizedPipelineOp
from daphnec.dialects.types import MatrixType
from daphnec.dialects.value_types import Combine, Split


def _find_pipelines(info: BlockDeps) -> list[set[Operation]]:
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
            if split != Split.ROWS or combine_of(prod, v) != 1:
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


def _row_split_inputs(members: set[Operation]) -> list[SSAValue]:
    """The matrices a candidate pipeline would split by rows, each once, in a fixed order."""
    out: dict[SSAValue, None] = {}
    for m in members:
        for v, split in zip(m.operands, splits(m)):
            if v.owner not in members and split == Split.ROWS and isinstance(v.type, MatrixType):
                out[v] = None
    return list(out)


def _known_rows(inputs: list[SSAValue]) -> int | None:
    """The rows of a pipeline over `inputs` when one of them is known to have more than one: every row-split
    input then has that many rows or one (a broadcast row; anything else is the executor's row-count error), so
    an input of unknown rows (`beta[0:m, ]` of a run-time `m` beside a 50 x 1 `t(scale)`) is no larger."""
    known = {v.type.rows.data for v in inputs}  # type: ignore[attr-defined]
    many = sorted(r for r in known if r > 1)
    return many[-1] if many else None


def row_split_cells(members: set[Operation]) -> int | None:
    """The cells of the matrices a candidate pipeline would split by rows (each input once), or None if any size
    is unknown at compile time. An input of unknown rows counts the rows of another input known to have several
    (`_known_rows`). An input the pipeline only reads single columns of (`X[, f]` of a data set in a tree's loop)
    counts those columns (`_columns_read`): the work is theirs, not the whole matrix's."""
    inputs = _row_split_inputs(members)
    known = _known_rows(inputs)
    cells = 0
    for v in inputs:
        t = v.type
        rows, cols = t.rows.data, t.cols.data  # type: ignore[attr-defined]
        if rows < 0 and _loop_slice(v):
            continue  # a part of a matrix cut per iteration: counted as small (see the module docstring)
        if rows < 0 and known is not None:
            rows = known
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
    """The rows of a candidate pipeline: those of an input known to have several (`_known_rows`), else the most
    rows of its row-split inputs, or None if any of those is unknown at compile time (column counts may be
    unknown)."""
    inputs = _row_split_inputs(members)
    known = _known_rows(inputs)
    if known is not None:
        return known
    rows = [v.type.rows.data for v in inputs]  # type: ignore[attr-defined]
    return None if any(r < 0 for r in rows) else max(rows, default=0)


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
    if cells is not None and _lone_reduction(members):
        return cells >= LONE_REDUCTION_FACTOR * min_cells
    return cells is None or cells >= min_cells


LONE_REDUCTION_FACTOR = 16
"""A candidate of one aggregation alone (`colSums(X)`, `sum(X)`: nothing fused, no intermediate saved) is formed only
over this many times `min_cells` (by default 64 MiB of f64 values). Its plain kernel is one memory-bound numpy pass,
which two threads hardly beat: lmDS' `colSums(X)` of a 100000 x 50 X (40 MB; from `t(cbind(X, 1)) @ cbind(X, 1)`
rewritten) took 1.13-1.89 ms plain and 1.26-1.29 ms as a pipeline on 2 threads (best of 40 in one process, two
rounds), and the pipeline's native kernel made the --vec run load llvmlite (~50-150 ms of start-up) for nothing
(issue 23 part 6). Larger ones keep their pipelines (on a quiet machine two threads stream more memory): the same
bound as a matrix-vector product's split (`runtime.kernels.blas_threads.GEMV_SPLIT_BYTES`, memory bound as well)."""


def _lone_reduction(members: set[Operation]) -> bool:
    """`members` is a single op whose results are all aggregates (combined by ADD, MIN or MAX)."""
    if len(members) != 1:
        return False
    (op,) = members
    return all(combine_of(op, r) not in (Combine.ROWS, Combine.COLS) for r in op.results)


def vectorize_block(block: Block, min_cells: int = 0) -> None:
    for op in list(block.ops):  # nested regions first (loop bodies hold most pipelines)
        if isinstance(op, VectorizedPipelineOp):
            continue  # built by an earlier pass (`fuse-filter-agg`): its body is one pipeline already
        for region in op.regions:
            for b in region.blocks:
                vectorize_block(b, min_cells)
    info = BlockDeps(block)
    chosen = [g for g in _find_pipelines(info) if worth_forming(g, min_cells)]
    accept = lowers_natively if min_cells > 0 else None
    for members in sorted(chosen, key=lambda g: min(info.pos[m] for m in g)):
        build_pipeline(BlockDeps(block), members, accept)
    _horizontal_fusion(block)


def lowers_natively(pipe: VectorizedPipelineOp) -> bool:
    """The cost model's check on a built candidate: it gets a native kernel (compiler/lowering/kernel_plan.py).
    One that keeps its Python body calls, per row block, the very numpy kernels the plain ops call once each, and
    adds the split and the combine copies: multiLogReg's `exp(Z - aggMax(Z, 0)) / sum(E, 0)` over a 50000 x k `Z`
    whose k is unknown at compile time (no kernel without column counts) ran at 0.84x of plain on 2 threads
    (issue 23). Refused, its ops stay plain kernels. (With `DAPHNEC_NO_NATIVE=1` no pipeline gets its kernel, but
    the same pipelines are formed, so that the comparison runs the same IR.)"""
    return try_plan(pipe)[0] is not None


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
    if not no_broadcast_only_member(members):
        return False
    ops = list(block.ops)
    defined_before_a = set(ops[: ops.index(a)])
    for v in b.inputs:  # b (pure) may move up to a only if everything it reads exists there already
        owner = v.owner
        if isinstance(owner, Operation) and block_op(owner, block) not in defined_before_a:
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
        named = _named_functions(op) if self.min_cells > 0 else None
        for block in function_blocks(op):
            f = block.parent_op()
            if named is not None and isinstance(f, func.FuncOp) and f.sym_name.data not in named:
                continue  # never runs (see `_named_functions`): a pipeline there could only cost
            vectorize_block(block, self.min_cells)
        if self.min_cells > 0:
            _plain_fusions(op)


def _named_functions(module: ModuleOp) -> set[str]:
    """`main` and every function some op names (a call, map's and paramserv's UDFs, ...): any string or symbol in
    any op's attributes counts, so nothing that may run is left out. The cost model forms no pipeline in the other
    functions: they never run (the rest of an imported module: RDP's script imports `geometry.daph`, whose unused
    `vw` had a pipeline of unknown size, so every `--vec` run loaded llvmlite for its kernel, ~45 ms of a 0.2 s
    process, issue 23). Leaving a function that does run unvectorised would only cost speed, never a result."""
    names = {"main"}
    for op in preorder(module):
        if isinstance(op, func.FuncOp):
            continue  # its own name
        for attr in (*op.attributes.values(), *op.properties.values()):
            _collect_names(attr, names)
    return names


def _collect_names(attr: Attribute, names: set[str]) -> None:
    if isinstance(attr, StringAttr):
        names.add(attr.data)
    elif isinstance(attr, SymbolRefAttr):
        names.add(attr.root_reference.data)
        names.update(a.data for a in attr.nested_references.data)
    elif isinstance(attr, (ArrayAttr, DictionaryAttr)):
        for a in attr.data.values() if isinstance(attr, DictionaryAttr) else attr.data:
            _collect_names(a, names)


def _plain_fusions(module: ModuleOp) -> None:
    """What the cost model refused gets the default path's fusions (`fuse-sums`, `fuse-maps`: ordered one-call
    native loops) instead of op-by-op kernels, so `--vec` never runs a chain slower than the run without it.
    GNMF's `W * ((X @ t(H)) / (W @ (H @ t(H)) + eps))` over 5000 x 20 factors (800 KB, too small for threads)
    ran as three numpy kernels under `--vec`, one fused loop without it (issue 23). Both passes only fuse plain
    ops of known shapes, so the pipelines formed above (row counts unknown inside) are left alone."""
    for block in function_blocks(module):
        fuse_sums_in(block)
        fuse_maps_in(block)
