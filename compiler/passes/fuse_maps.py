"""`fuse-maps`: without `--vec`, a chain of element-wise ops computing one matrix runs as one native loop.

Op by op, `(a - b) * 3.0 + a * b` writes a full-size temporary per op and reads it back (numpy's own expression
reuses one or two of them); one loop reads `a` and `b` once and writes only the result. Element-wise ops compute
each cell on its own, so fusing them changes no bit of the result, as long as each op computes what its kernel
computes: the chain holds only ops with a native lowering (`compiler/lowering/ew_kinds.py`, the same lowering as
`--vec`'s kernels and `fuse-sums`), every value it computes is a dense f64 matrix of one shape (its inputs may
also be row or column vectors an op broadcasts), and every intermediate value feeds only the next op (a value
used elsewhere is computed, and kept, by its own op). The pipeline is marked `daphne.ordered`, so it runs as one
call on the calling thread like the unfused ops: the default path stays single-threaded, and `--vec` keeps
DAPHNE's vectorization.

The pass runs after `fuse-sums` (a chain feeding a full sum is that pass's), on results of at least
`fuse_sums.MIN_CELLS` cells known at compile time.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, UnitAttr
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass

from daphnec.compiler.ir_walk import function_blocks
from daphnec.compiler.passes.fuse_sums import MIN_CELLS, chain, fusable_operand, native_elementwise, plain_f64
from daphnec.compiler.passes.pipeline_fusion import fuse_ops, is_legal_fusion
from daphnec.dialects.attr_names import ORDERED_ATTR
from daphnec.dialects.types import MatrixType


def _root_shape(op: Operation) -> tuple[int, int] | None:
    """The shape of a chain this op may end: a native element-wise op with one dense f64 result of a known
    shape of at least `MIN_CELLS` cells, whose matrix operands have that shape or broadcast to it."""
    if not native_elementwise(op) or len(op.results) != 1:
        return None
    t = op.results[0].type
    if not isinstance(t, MatrixType):
        return None
    rows, cols = t.shape
    if rows < 0 or cols < 0 or rows * cols < MIN_CELLS or not plain_f64(op.results[0], t.shape):
        return None
    matrices = [o for o in op.operands if isinstance(o.type, MatrixType)]
    return t.shape if all(fusable_operand(o, t.shape) for o in matrices) else None


def fuse_maps_in(block: Block) -> None:
    for op in list(block.ops):
        for region in op.regions:
            for b in region.blocks:
                fuse_maps_in(b)
    seen: set[Operation] = set()
    for op in reversed(list(block.ops)):  # the last op of a chain first: it takes the ops before it along
        if op in seen or op.parent is not block:
            continue
        shape = _root_shape(op)
        if shape is None:
            continue
        members = chain(op, list(op.operands), block, shape)
        seen |= members
        if len(members) > 1 and is_legal_fusion(block, members):
            fuse_ops(block, members).attributes[ORDERED_ATTR] = UnitAttr()


@dataclass(frozen=True)
class FuseMapsPass(ModulePass):
    name = "fuse-maps"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for block in function_blocks(op):
            fuse_maps_in(block)
