"""`fuse-x-once`: `t(X) @ (X @ v)`, `t(X) @ (w * (X @ v))` and `t(X) @ ((X @ v) - y)` as one op that reads X once.

These are the inner loops of conjugate gradient on the normal equations (lmCG), Newton-CG logistic regression and
GLMs; computed as written, each iteration reads X twice (for `X @ v` and for the transposed product), and X is the
one large operand. The `daphne.gramVector`, `daphne.gramVectorWeighted` and `daphne.gramVectorResidual` ops
(dialects/ops_matrix.py) run one pass over X's rows, dense or CSR, on several threads with per-task partial sums
added in task order (runtime/kernels/gram_vector.py: a native loop, or for dense X of about 100 columns and more
two BLAS products per cache-sized block of rows), so the result does not depend on the thread count. The
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
from daphnec.compiler.passes.simplify_algebra import Builder, as_type, f64_matrix, fusable_gram, gram_shape, intercept
from daphnec.dialects import ops
from daphnec.dialects.ops_matrix import (
    GramVectorOp,
    MatMulOp,
    ResidualGramVectorOp,
    RowBindOp,
)


class FuseGramVector(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: MatMulOp, rewriter: PatternRewriter) -> None:
        if not fusable_gram(op):
            return
        t = op.lhs.owner
        assert isinstance(t, ops.TransposeOp)
        shape = gram_shape(t.arg, op.rhs)
        assert shape is not None
        if shape[0] is GramVectorOp and (res := intercept_gram(Builder(rewriter, op), *shape[1])) is not None:
            rewriter.replace(op, [], [as_type(res, op.res.type, op)])
            return
        new = shape[0](*shape[1])
        new.typed()  # type: ignore[attr-defined]
        new.location = op.location
        rewriter.insert(new, InsertPoint.before(op))
        rewriter.replace(op, [], [as_type(new.results[0], op.res.type, op)])


def intercept_gram(b: Builder, d: SSAValue, p: SSAValue) -> SSAValue | None:
    """`t(D) @ (D @ p)` for a design matrix with an intercept column, `D = cbind(A, fill(c, n, 1))` (A dense, m
    columns), without reading the `cbind` copy: with `h = p[0:m, ]`, `l = p[m, 0]` and `u = A @ h + c * l` (D's
    rows times p, the same terms in another order), it is `rbind(t(A) @ u, c * sum(u))`, where `t(A) @ u` is
    `gramVectorResidual(A, h, fill(-(c * l), n, 1))` (one pass over A) and `sum(u)` is `colSums(A) @ h + n * c * l`
    with `colSums(A)` computed once, right where A is defined (before a loop that multiplies by D). The `cbind`
    (a copy of A, fresh memory each time) is no longer read; `dce` removes it. None when D is not such a matrix."""
    xc = intercept(d)
    if xc is None or not f64_matrix(xc[0], dense=True):
        return None
    a, c = xc
    m = a.type.shape[1]  # type: ignore[attr-defined]
    if m < 0:
        return None
    bounds = [b.const(k, "si64") for k in (0, m, m + 1)]
    head = b.add(ops.SliceRowOp.create(operands=[p, bounds[0], bounds[1]], result_types=[ops.UNKNOWN]))
    last = b.scalar(b.add(ops.SliceRowOp.create(operands=[p, bounds[1], bounds[2]], result_types=[ops.UNKNOWN])))
    cl = b.mul(c, last)
    rows = b.add(ops.NumRowsOp(a))
    one = b.const(1, "index")
    shift = b.add(ops.FillOp.create(operands=[b.add(ops.EwMinusOp(cl)), rows, one], result_types=[ops.UNKNOWN]))
    g = b.add(ResidualGramVectorOp(a, head, shift))
    sums = _col_sums_where_defined(b, a)
    n = b.add(ops.CastOp(rows, "f64", "scalar"))
    total = b.add(ops.EwAddOp(b.scalar(b.mm(sums, head)), b.mul(n, cl)))
    corner = b.add(ops.FillOp.create(operands=[b.mul(c, total), one, one], result_types=[ops.UNKNOWN]))
    return b.add(RowBindOp(g, corner))


def _col_sums_where_defined(b: Builder, a: SSAValue) -> SSAValue:
    """`colSums(a)` inserted right after `a`'s definition (outside the loop that reads it, if any)."""
    owner = a.owner
    anchor = owner.next_op if isinstance(owner, Operation) else owner.first_op  # type: ignore[union-attr]
    assert anchor is not None  # `a` is used later in its block (by the cbind)
    return Builder(b.rewriter, anchor).agg(ops.SumColOp, a)


@dataclass(frozen=True)
class FuseXOncePass(ModulePass):
    name = "fuse-x-once"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        LinearRewriteWalker(FuseGramVector()).rewrite_module(op)
