"""`fuse-x-once`: `t(X) @ (X @ v)`, `t(X) @ (w * (X @ v))` and `t(X) @ ((X @ v) - y)` as one op that reads X once.

These are the inner loops of conjugate gradient on the normal equations (lmCG), Newton-CG logistic regression and
GLMs; computed as written, each iteration reads X twice (for `X @ v` and for the transposed product), and X is the
one large operand. The `daphne.gramVector`, `daphne.gramVectorWeighted` and `daphne.gramVectorResidual` ops
(dialects/ops_matrix.py) run one native loop over X's rows, dense or CSR, on several threads with per-task partial
sums added in task order (runtime/kernels/gram_vector.py), so the result does not depend on the thread count. The
order of the additions differs from BLAS's two products, so this is a re-associating rewrite: on by default,
off with `--no-reassociate` (docs/language.md "Rewrites").

A product qualifies when X is an f64 matrix, v an f64 m x 1 column, w or y an f64 n x 1 column, and the inner
values (`X @ v`, the element-wise result) feed only this product, so nothing else needs them materialized. It runs
after `simplify-algebra` and `reorder-matmul-chains` (which turns `(t(X) @ X) @ v` into `t(X) @ (X @ v)`) at the
`phy_op_selection` slot.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from daphnec.compiler.ir_walk import LinearRewriteWalker
from daphnec.compiler.passes.simplify_algebra import as_type, f64_matrix, plain_product
from daphnec.dialects import ops
from daphnec.dialects.attr_names import KERNEL_CHOICE_ATTR
from daphnec.dialects.ops_matrix import (
    GramVectorOp,
    MatMulOp,
    ResidualGramVectorOp,
    WeightedGramVectorOp,
)
from daphnec.dialects.types import MatrixType


def column(v: SSAValue) -> bool:
    """An f64 column vector (n x 1)."""
    return f64_matrix(v, dense=True) and isinstance(v.type, MatrixType) and v.type.shape[1] == 1


def _product_with(u: SSAValue, x: SSAValue) -> SSAValue | None:
    """v when `u` is `x @ v` for a column v, used only here."""
    p = plain_product(u)
    if p is not None and p.lhs is x and column(p.rhs):
        return p.rhs
    return None


def gram_vector(x: SSAValue, u: SSAValue) -> Operation | None:
    """The fused op computing `t(x) @ u`, if `u` is one of the three shapes (see the module docstring)."""
    if not u.has_one_use():
        return None
    if (v := _product_with(u, x)) is not None:
        return GramVectorOp(x, v)
    p = u.owner
    if isinstance(p, ops.EwMulOp):
        for q, w in ((p.rhs, p.lhs), (p.lhs, p.rhs)):
            if (v := _product_with(q, x)) is not None and column(w) and w.type.shape == q.type.shape:
                return WeightedGramVectorOp(x, v, w)
    if isinstance(p, ops.EwSubOp) and (v := _product_with(p.lhs, x)) is not None:
        if column(p.rhs) and p.rhs.type.shape == p.lhs.type.shape:
            return ResidualGramVectorOp(x, v, p.rhs)
    return None


class FuseGramVector(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: MatMulOp, rewriter: PatternRewriter) -> None:
        if op.transa is not None or op.transb is not None or KERNEL_CHOICE_ATTR in op.attributes:
            return
        t = op.lhs.owner
        if not isinstance(t, ops.TransposeOp) or not f64_matrix(t.arg) or not f64_matrix(op.res):
            return
        new = gram_vector(t.arg, op.rhs)
        if new is None:
            return
        new.typed()  # type: ignore[attr-defined]
        new.location = op.location
        rewriter.insert(new, InsertPoint.before(op))
        rewriter.replace(op, [], [as_type(new.results[0], op.res.type, op)])


@dataclass(frozen=True)
class FuseXOncePass(ModulePass):
    name = "fuse-x-once"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        LinearRewriteWalker(FuseGramVector()).rewrite_module(op)
