"""`fuse-sums`: without `--vec`, `sum(expr)` of element-wise ops runs as one ordered native loop.

DAPHNE's full sum folds the cells one by one in row-major order (AggAll), and the plain path reproduces that order
bit for bit (`runtime/kernels/native_folds.py`); the element-wise ops before it each write a full-size temporary.
This pass puts a full `sum` of f64 and the chain of element-wise ops feeding only it into one
`daphne.vectorizedPipeline` marked `daphne.ordered`: the native kernel then folds in the same sequential order
(no reassociation, see `lower-pipeline-to-loops`), the executor runs it as one call over all rows on the calling
thread, and the element-wise ops compute what their kernels compute, so the result is bit-identical to the
unfused ops, without the temporaries. `--vec` keeps DAPHNE's vectorization instead (parallel partial sums).

A chain qualifies when every op in it has a native lowering (`compiler/lowering/ew_kinds.py`), every value it
computes is a dense f64 matrix of the summed shape (its inputs may also be row or column vectors an op
broadcasts), each intermediate value feeds only the next op, and the sum covers at least `MIN_CELLS` cells (known
at compile time): smaller sums are not worth a kernel.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, UnitAttr
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from daphnec.compiler.ir_walk import function_blocks
from daphnec.compiler.lowering import ew_kinds
from daphnec.compiler.passes.pipeline_fusion import fuse_ops, is_legal_fusion
from daphnec.dialects import ops
from daphnec.dialects.attr_names import ORDERED_ATTR
from daphnec.dialects.types import MatrixType, vt_name

MIN_CELLS = 1 << 16
"""Smallest sum fused: below it the whole chain takes microseconds and a kernel's compile would not pay off."""


def plain_f64(v: SSAValue, shape: tuple[int, int]) -> bool:
    """A dense f64 matrix of exactly `shape` (every value a fused chain computes)."""
    t = v.type
    return isinstance(t, MatrixType) and not t.is_sparse and vt_name(t) == "f64" and t.shape == shape


def fusable_operand(v: SSAValue, shape: tuple[int, int]) -> bool:
    """A matrix operand of an op in a chain of `shape`: of that shape, or a dense f64 row (1 x m) or column
    (n x 1) vector that the op broadcasts, as its kernel and the native loop both do."""
    if plain_f64(v, shape):
        return True
    t, (rows, cols) = v.type, shape
    if not (isinstance(t, MatrixType) and not t.is_sparse and vt_name(t) == "f64"):
        return False
    return (t.shape == (1, cols) and rows > 1) or (t.shape == (rows, 1) and cols > 1)


def native_elementwise(op: Operation) -> bool:
    """An element-wise op with a native lowering (what a fused chain is made of)."""
    if isinstance(op, ops.EwBinaryOp):
        return bool(ew_kinds.BINARY.get(op.KIND, ("", ""))[0])
    return isinstance(op, ops.EwUnaryOp) and op.KIND in ew_kinds.UNARY


def _chain(total: ops.AggOp, block: Block) -> set[Operation]:
    """The sum and the element-wise ops that feed only it (transitively), within `block`."""
    return chain(total, [total.arg], block, total.arg.type.shape)  # type: ignore[attr-defined]


def chain(root: Operation, start: list[SSAValue], block: Block, shape: tuple[int, int]) -> set[Operation]:
    """`root` and the native element-wise ops of `block` whose dense f64 `shape` results feed only the chain
    (transitively, from the values in `start`)."""
    members: set[Operation] = {root}
    stack = list(start)
    while stack:
        v = stack.pop()
        p = v.owner
        if not (isinstance(p, Operation) and p.parent is block and native_elementwise(p) and v.has_one_use()):
            continue
        matrices = [o for o in p.operands if isinstance(o.type, MatrixType)]
        if not plain_f64(v, shape) or not all(fusable_operand(o, shape) for o in matrices):
            continue
        members.add(p)
        stack.extend(p.operands)
    return members


def _candidate(op: Operation) -> bool:
    if not (isinstance(op, ops.AggOp) and op.AXIS == "all" and op.KIND == "sum"):
        return False
    t = op.arg.type
    if not isinstance(t, MatrixType) or not plain_f64(op.arg, t.shape):
        return False
    rows, cols = t.shape
    return rows >= 0 and cols >= 0 and rows * cols >= MIN_CELLS


def fuse_sums_in(block: Block) -> None:
    for op in list(block.ops):
        for region in op.regions:
            for b in region.blocks:
                fuse_sums_in(b)
    for op in [o for o in block.ops if _candidate(o)]:
        members = _chain(op, block)  # type: ignore[arg-type]
        if len(members) > 1 and is_legal_fusion(block, members):
            fuse_ops(block, members).attributes[ORDERED_ATTR] = UnitAttr()


@dataclass(frozen=True)
class FuseSumsPass(ModulePass):
    name = "fuse-sums"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for block in function_blocks(op):
            fuse_sums_in(block)
