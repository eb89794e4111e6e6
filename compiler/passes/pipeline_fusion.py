"""Building a `daphne.vectorizedPipeline` from a chosen set of ops, and the legality of such a set.

Shared by every pass that fuses row-wise ops: `vectorize` (DAPHNE's rule and its cost model), and the default
path's ordered one-call loops (`fuse-sums`, `fuse-maps`, `fuse-filter-agg`), which `vectorize` also applies to the
ops its cost model leaves plain. Its own module so that `vectorize` can run those passes without an import cycle.

A set is legal when it stays *convex* (no op outside it both depends on it and feeds it), nothing with side
effects has to move, and every member reads another member's result row block by row block. A pipeline is placed
where its first member was; the ops between its members that it depends on move before it. Constants used by
members are cloned into the body, so the body is self-contained (it can be shipped as text).
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.rewriter import Rewriter
from xdsl.traits import Pure

from daphnec.compiler.analysis.inference import Inference, set_type
from daphnec.compiler.analysis.vectorizable import combines, splits
from daphnec.dialects.ops import ConstantOp
from daphnec.dialects.ops_pipeline import PipelineReturnOp, VectorizedPipelineOp
from daphnec.dialects.types import MatrixType, is_matrix
from daphnec.dialects.value_types import Split


def block_op(op: Operation, block: Block) -> Operation | None:
    """The ancestor of `op` that sits directly in `block` (or None)."""
    while op is not None and op.parent is not block:
        op = op.parent_op()  # type: ignore[assignment]
    return op


def _operands_deep(op: Operation) -> list[SSAValue]:
    """Operands of an op and of every op nested in it (a region may use values from outside)."""
    return [v for o in op.walk() for v in o.operands]


def _is_pure(op: Operation) -> bool:
    return all(o.has_trait(Pure) or isinstance(o, PipelineReturnOp) for o in op.walk())


class BlockDeps:
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
                p = block_op(owner, self.block)
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
            and no_broadcast_only_member(
                [(m, [v if v.owner not in members else None for v in m.operands]) for m in members]
            )
        )
        return [op for op in between if op in up], legal

    def block_user(self, op: Operation) -> Operation | None:
        return block_op(op, self.block)


def _row_wise_inside(members: set[Operation]) -> bool:
    """Inside a pipeline, a member may consume another member's result only row block by row block: the use
    splits by ROWS and the producer combines by ROWS (a member cannot read a reduction of the whole input)."""
    for m in members:
        for v, split in zip(m.operands, splits(m)):
            if v.owner in members and (split != Split.ROWS or combine_of(v.owner, v) != 1):  # type: ignore[arg-type]
                return False
    return True


def no_broadcast_only_member(members: list[tuple[Operation, list[SSAValue | None]]]) -> bool:
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


def combine_of(prod: Operation, v: SSAValue) -> int:
    return combines(prod)[list(prod.results).index(v)]


def build_pipeline(
    info: BlockDeps, members: set[Operation], accept: Callable[[VectorizedPipelineOp], bool] | None = None
) -> VectorizedPipelineOp | None:
    """Replace a legal set of ops by one pipeline op; None, and the ops left as they were, when `accept` refuses
    the built pipeline (a check that needs the pipeline's body, see `lowers_natively`)."""
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
    out_combines = [combine_of(r.owner, r) for r in outs]  # type: ignore[arg-type]
    body.add_op(PipelineReturnOp(*(mapping[r] for r in outs)))
    pipe = VectorizedPipelineOp(inputs, in_splits, [r.type for r in outs], out_combines, body)
    pipe.location = first.location
    block.insert_op_before(pipe, first)
    _reinfer_rows(body)
    if accept is not None and not accept(pipe):
        Rewriter.erase_op(pipe)  # nothing uses it yet; the upstream ops it moved stay legal where they are
        return None
    for r, nr in zip(outs, pipe.outs):
        r.replace_all_uses_with(nr)
    for op in reversed(ordered):
        Rewriter.erase_op(op)
    return pipe


def is_legal_fusion(block: Block, members: set[Operation]) -> bool:
    """Whether `members` (ops of `block`) may become one pipeline (convex, effect-safe, row-wise inside)."""
    return BlockDeps(block).classify(members)[1]


def fuse_ops(block: Block, members: set[Operation]) -> VectorizedPipelineOp:
    """One pipeline of a legal set of ops (`is_legal_fusion`), for passes that choose their own sets."""
    pipe = build_pipeline(BlockDeps(block), members)
    assert pipe is not None
    return pipe


def _reinfer_rows(body: Block) -> None:
    """Row counts inside a pipeline are unknown (-1): re-infer the body's types, but keep every matrix's
    representation and sparsity estimate (a CSR value stays CSR inside the pipeline)."""
    before = {r: r.type for op in body.ops for r in op.results}
    Inference(ModuleOp([]), specialize=False).infer_block(body)
    for r, old in before.items():
        new = r.type
        if isinstance(old, MatrixType) and isinstance(new, MatrixType):
            set_type(r, new.with_representation(old.representation.data, old.sparsity_estimate))
