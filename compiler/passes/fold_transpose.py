"""`fold-transpose`: a transposed factor of a matrix product is read transposed instead of being built.

`t(A) @ B` becomes `matMul(A, B) {transa}` and `A @ t(B)` `matMul(A, B) {transb}`: DAPHNE's MatMulOp carries
`transa`/`transb` (src/ir/daphneir/DaphneOps.td), its canonicalization factors transposed inputs into them and its
physical operator selection computes `t(M) @ M` as syrk and `t(M) @ v` as gemv
(src/compiler/lowering/PhyOperatorSelectionPass.cpp). The kernel hands the flags to BLAS, so the transposed copy (a
full read and write of the operand) disappears, `t(M) @ v` is a transposed gemv and `t(M) @ M` one symmetric
rank-k update (numpy's matmul runs syrk for a matrix times its own transpose and mirrors the computed triangle), so
that result is exactly symmetric, as `isSymmetric` and `eigen` require. A transpose left without uses is removed.

Runs at DAPHNE's `phy_op_selection` slot, after inference and representation selection, so `--explain
phy_op_selection` shows the flags; `--no-phy-op-selection` turns it off.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, UnitAttr
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from daphnec.compiler.ir_walk import LinearRewriteWalker
from daphnec.dialects.attr_names import KERNEL_CHOICE_ATTR
from daphnec.dialects.ops import TransposeOp
from daphnec.dialects.ops_matrix import MatMulOp
from daphnec.dialects.types import is_matrix, is_unknown


def _transposed(v: SSAValue) -> SSAValue | None:
    """The matrix `X` when `v` is `t(X)` of a matrix with inferred type (frames keep their transpose)."""
    t = v.owner
    if isinstance(t, TransposeOp) and is_matrix(t.arg.type) and not is_unknown(t.arg.type):
        return t.arg
    return None


class FoldTransposeIntoMatMul(RewritePattern):
    """`matMul(t(A), B)` -> `matMul(A, B) {transa}`, likewise for the right factor (a flag already set toggles)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: MatMulOp, rewriter: PatternRewriter) -> None:
        if KERNEL_CHOICE_ATTR in op.attributes:
            return  # a kernel hint or extension names the kernel, which takes the operands as written
        operands, flags = [op.lhs, op.rhs], [op.transa is not None, op.transb is not None]
        folded = []
        for i in range(2):
            src = _transposed(operands[i])
            if src is not None:
                folded.append(operands[i].owner)
                operands[i], flags[i] = src, not flags[i]
        if not folded:
            return
        props = {name: UnitAttr() for name, on in zip(("transa", "transb"), flags) if on}
        new = MatMulOp.create(
            operands=operands, result_types=[op.res.type], properties=props, attributes=dict(op.attributes)
        )
        new.location = op.location
        rewriter.replace(op, new)
        for t in folded:
            if t.parent is not None and not t.res.uses:
                rewriter.erase(t)


@dataclass(frozen=True)
class FoldTransposePass(ModulePass):
    name = "fold-transpose"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        LinearRewriteWalker(FoldTransposeIntoMatMul()).rewrite_module(op)  # xDSL's walker, linear on deep nesting
