"""`fuse-split-stats`: `t(v) @ outerLe(x, thr)` (and outerLt/Ge/Gt) without the n x k 0/1 matrix.

Decision-tree code computes the split statistics of a feature as `L = outerLe(X[, j], thr)`, then
`cL = t(w) @ L` and `sL = t(wy) @ L`: an n x k f64 matrix (1.2 MB at 10,000 rows and 15 thresholds) written and
read twice, for 2k numbers. When every consumer of an outer comparison is such a product, this pass replaces them
all by one `daphne.splitStats(x, thr, v1, v2, ...)` (a p x k matrix, row r the r-th product, sliced back out),
whose kernel bins each row once (a branch-free count over the thresholds) and sums the vectors per bin
(runtime/kernels/split_stats.py; unsorted thresholds fall back to the written computation at run time). The sums
are added in another order than BLAS's dot products, so this is a re-associating rewrite: on by default, off with
`--no-reassociate` (bench/README.md "Algebraic rewrites"); integer-valued vectors (counts) give the same bits.

A product qualifies when it is `t(v) @ L` with v an f64 n x 1 column, L the f64 result of an outerLe/Lt/Ge/Gt of
an f64 column and an f64 row. It runs after `fuse-x-once`, while transposes are still ops (before `fold-transpose`)
at the `phy_op_selection` slot.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from daphnec.compiler.ir_walk import LinearRewriteWalker
from daphnec.compiler.passes.simplify_algebra import Builder, as_type, f64_matrix
from daphnec.dialects import ops
from daphnec.dialects.ops import shape_of
from daphnec.dialects.ops_matrix import MatMulOp, OuterBinaryOp, SplitStatsOp

KINDS = frozenset({"le", "lt", "ge", "gt"})
"""The outer comparisons the kernel bins (a row's bin: how many thresholds the comparison holds for)."""


def _column(v: SSAValue) -> bool:
    return f64_matrix(v, dense=True) and shape_of(v.type)[1] == 1


def split_vector(use: object, L: SSAValue) -> SSAValue | None:
    """v when `use` is the product `t(v) @ L` (L its right factor, no transpose flags) with v an f64 column."""
    if not isinstance(use, MatMulOp) or use.rhs != L or use.lhs == L or use.transa or use.transb:
        return None
    t = use.lhs.owner
    if not isinstance(t, ops.TransposeOp) or not _column(t.arg) or not f64_matrix(use.res, dense=True):
        return None
    return t.arg


def _defined_before(v: SSAValue, use: Operation) -> bool:
    """Whether `v` is defined before `use` (so a new op inserted right before `use` may read it)."""
    anc: Operation | None = use
    while anc is not None:
        block = anc.parent_block()
        if block is None:
            return False
        if isinstance(v.owner, Block):
            if v.owner is block:
                return True
        elif v.owner.parent_block() is block:
            return block.get_operation_index(v.owner) < block.get_operation_index(anc)
        anc = block.parent_op()
    return False


class FuseSplitStats(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: OuterBinaryOp, rewriter: PatternRewriter) -> None:
        if op.KIND not in KINDS or not _column(op.lhs) or not f64_matrix(op.rhs, dense=True):
            return
        if shape_of(op.rhs.type)[0] != 1 or not f64_matrix(op.res) or not op.res.uses:
            return
        products = [u.operation for u in op.res.uses]
        vs = [split_vector(p, op.res) for p in products]
        if any(v is None for v in vs) or len(set(products)) != len(products):
            return
        block = op.parent_block()
        if block is None or any(p.parent_block() is not block for p in products):
            return
        first = min(products, key=block.get_operation_index)
        if not all(_defined_before(v, first) for v in vs):  # type: ignore[arg-type]
            return
        new = SplitStatsOp(op.lhs, op.rhs, vs, op.KIND)  # type: ignore[arg-type]
        new.typed()
        new.location = op.location
        rewriter.insert(new, InsertPoint.before(first))
        b = Builder(rewriter, first)
        for r, p in enumerate(products):
            lo, hi = b.const(r, "si64"), b.const(r + 1, "si64")
            row = b.add(ops.SliceRowOp.create(operands=[new.res, lo, hi], result_types=[ops.UNKNOWN]))
            rewriter.replace(p, [], [as_type(row, p.results[0].type, p)])
        rewriter.erase(op)


@dataclass(frozen=True)
class FuseSplitStatsPass(ModulePass):
    name = "fuse-split-stats"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        LinearRewriteWalker(FuseSplitStats()).rewrite_module(op)
