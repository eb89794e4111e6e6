"""`simplify-algebra`: algebraic simplification rewrites of matrix expressions (docs/language.md "Rewrites").

Each rule is one `RewritePattern` below, named by the expression it rewrites, with `EXACT` saying whether the
rewritten program computes every bit the written one computes:

- exact rules (`EXACT = True`) are always on: `t(t(X))` is `X`, `ncol(X)` of a known shape is its constant;
- the other rules re-associate floating-point sums (a product's dot products summed in another order or
  grouping, a sum of products taken as a BLAS dot, a scalar factor applied after the sum instead of to every
  term). They apply to f64 matrices only, where the difference stays within the README's 1e-12 relative promise
  for reductions and DAPHNE's 6-digit printing shows the same digits; `--no-reassociate` (the
  `use_reassociating_rewrites` setting, runtime/options.py) turns them off, and with them `reorder-matmul-chains`
  and `fuse-x-once`.

Why: scripts written in the natural order (`sum(X @ Y)`, `trace(X @ Y)` as `sum(diagVector(X @ Y))`,
`colSums(X @ Y)`, `X @ diagMatrix(v)`, `t(cbind(X, 1)) @ cbind(X, 1)`) do a matrix product, or build a copy, that
the result does not need; these rules compute the same value from the operands with less work (often a factor of
the inner dimension, `bench/optimizer_bench.py`). The pass runs after inference and matrix-representation selection
(shapes and CSR operands are known) at the start of DAPHNE's `phy_op_selection` slot, so `--explain
phy_op_selection` shows its result; a rewritten value keeps its uses, and operands left without uses are removed
by the `dce` that follows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, UnitAttr
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    RewritePattern,
)
from xdsl.rewriter import InsertPoint

from daphnec.compiler.analysis.inference import insert_merge_cast
from daphnec.compiler.ir_walk import LinearRewriteWalker
from daphnec.dialects import ops
from daphnec.dialects.attr_names import KERNEL_CHOICE_ATTR
from daphnec.dialects.ops_matrix import (
    ColBindOp,
    DiagMatrixOp,
    DiagVectorOp,
    GramVectorOp,
    MatMulOp,
    ResidualGramVectorOp,
    RowBindOp,
    SyrkOp,
    TraceOfProductOp,
    WeightedGramVectorOp,
)
from daphnec.dialects.types import MatrixType, is_scalar, vt_name

DOT_MIN_CELLS = 1 << 10
"""Smallest `sum(X * Y)` taken as a BLAS dot: below it the element-wise op costs less than two more kernel calls."""


# --- helpers ---------------------------------------------------------------------------------------------------------


def f64_matrix(v: SSAValue, dense: bool = False) -> bool:
    """An f64 matrix (the value type the re-associating rules apply to), dense when asked."""
    t = v.type
    return isinstance(t, MatrixType) and vt_name(t) == "f64" and not (dense and t.is_sparse)


def cells(v: SSAValue) -> int:
    """The number of cells of a matrix value, -1 if unknown."""
    t = v.type
    if not isinstance(t, MatrixType):
        return -1
    r, c = t.shape
    return r * c if r >= 0 and c >= 0 else -1


def plain_product(v: SSAValue) -> MatMulOp | None:
    """The `X @ Y` that computes `v` and nothing else: no transposition flags, no kernel hint, f64, one use."""
    p = v.owner
    if (
        isinstance(p, MatMulOp)
        and p.transa is None
        and p.transb is None
        and KERNEL_CHOICE_ATTR not in p.attributes
        and v.has_one_use()
        and f64_matrix(p.lhs)
        and f64_matrix(p.rhs)
    ):
        return p
    return None


def scaled(v: SSAValue) -> tuple[SSAValue, SSAValue] | None:
    """`(s, X)` when `v` is `s * X` or `X * s` for an f64 scalar `s` and a matrix `X` used only there."""
    p = v.owner
    if not (isinstance(p, ops.EwMulOp) and v.has_one_use()):
        return None
    for s, x in ((p.lhs, p.rhs), (p.rhs, p.lhs)):
        if is_scalar(s.type) and vt_name(s.type) == "f64" and f64_matrix(x):
            return s, x
    return None


@dataclass
class Builder:
    """Builds typed ops before `anchor`, with its source location (errors of a rewritten op point at the
    expression the user wrote)."""

    rewriter: PatternRewriter
    anchor: Operation

    def add(self, op: Operation) -> SSAValue:
        if isinstance(op, ops.DaphneOp) and not isinstance(op, ops.CastOp):
            op.typed()
        op.location = self.anchor.location
        self.rewriter.insert(op, InsertPoint.before(self.anchor))
        return op.results[0]

    def mm(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.add(MatMulOp(a, b))

    def mul(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.add(ops.EwMulOp(a, b))

    def t(self, a: SSAValue) -> SSAValue:
        return self.add(ops.TransposeOp(a))

    def agg(self, cls: type[ops.AggOp], a: SSAValue) -> SSAValue:
        return self.add(cls(a))

    def scalar(self, m: SSAValue) -> SSAValue:
        return self.add(ops.CastOp(m, None, "scalar"))

    def const(self, value: int | float, vt: str) -> SSAValue:
        return self.add(ops.ConstantOp.of(value, vt))

    def done(self, new: SSAValue) -> None:
        """Replace the anchor's result by `new` (see `as_type`)."""
        self.rewriter.replace(self.anchor, [], [as_type(new, self.anchor.results[0].type, self.anchor)])


def as_type(new: SSAValue, want: Attribute, before: Operation) -> SSAValue:
    """`new` with the type of the value it replaces: the same value, or, where only the representation or the
    sparsity estimate differ (`select-matrix-repr` typed the written value), a merge cast to that type, so every
    consumer keeps the type it was compiled for. Any other difference is a bug of the rule."""
    if new.type == want:
        return new
    t = new.type
    assert isinstance(t, MatrixType) and isinstance(want, MatrixType), (t, want)
    assert t.element_type == want.element_type and t.shape == want.shape, (t, want)
    return insert_merge_cast(new, want, before)


class Rule(RewritePattern):
    """One algebraic rule; `EXACT` rules keep every bit and are always on (see the module docstring)."""

    EXACT: ClassVar[bool] = False

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if len(op.results) == 1:
            self.rewrite(op, Builder(rewriter, op))

    def rewrite(self, op: Operation, b: Builder) -> None:
        raise NotImplementedError


# --- exact rules -----------------------------------------------------------------------------------------------------


class DoubleTranspose(Rule):
    """`t(t(X))` -> `X`."""

    EXACT = True

    def rewrite(self, op: Operation, b: Builder) -> None:
        if isinstance(op, ops.TransposeOp) and isinstance(op.arg.owner, ops.TransposeOp):
            x = op.arg.owner.arg
            if isinstance(x.type, MatrixType) and x.type == op.res.type:
                b.done(x)


class KnownDimension(Rule):
    """`nrow(X)` / `ncol(X)` -> the constant inference knows: the dimension no longer keeps a value (such as
    `cbind(X, 1)` in `ncol(cbind(X, 1))`) alive that the other rules removed from every other use."""

    EXACT = True

    def rewrite(self, op: Operation, b: Builder) -> None:
        if not isinstance(op, (ops.NumRowsOp, ops.NumColsOp)) or not isinstance(op.arg.type, MatrixType):
            return
        n = op.count(*op.arg.type.shape)
        if n >= 0 and vt_name(op.res.type) == "index":
            b.done(b.const(n, "index"))


# --- re-associating rules: aggregations pushed through products ------------------------------------------------------


class SumOfProduct(Rule):
    """`sum(X @ Y)` -> `sum(colSums(X) @ Y)`: the sum of all dot products is the sum of X's column sums times Y
    (one pass over each operand instead of a product). Not `colSums(X) @ rowSums(Y)`, which reads Y as often: Y's
    row sums are DAPHNE's in-order row folds, which transpose Y block by block, while the vector-matrix product
    streams Y's rows through one BLAS call (1500 x 750: 0.3-0.6 ms against 1.4-11 ms, one thread). A product whose
    X has one row is already that product (and this rule's own result: it must not fire again)."""

    def rewrite(self, op: Operation, b: Builder) -> None:
        if not isinstance(op, ops.SumAllOp) or (p := plain_product(op.arg)) is None:
            return
        lhs = p.lhs.type
        if isinstance(lhs, MatrixType) and lhs.shape[0] != 1:
            b.done(b.agg(ops.SumAllOp, b.mm(b.agg(ops.SumColOp, p.lhs), p.rhs)))


class ColSumsOfProduct(Rule):
    """`colSums(X @ Y)` -> `colSums(X) @ Y` (a vector-matrix product instead of a matrix product)."""

    def rewrite(self, op: Operation, b: Builder) -> None:
        if isinstance(op, ops.SumColOp) and (p := plain_product(op.arg)) is not None:
            b.done(b.mm(b.agg(ops.SumColOp, p.lhs), p.rhs))


class RowSumsOfProduct(Rule):
    """`rowSums(X @ Y)` -> `X @ rowSums(Y)`."""

    def rewrite(self, op: Operation, b: Builder) -> None:
        if isinstance(op, ops.SumRowOp) and (p := plain_product(op.arg)) is not None:
            b.done(b.mm(p.lhs, b.agg(ops.SumRowOp, p.rhs)))


class AggregateOfTranspose(Rule):
    """`sum(t(X))` -> `sum(X)`, `colSums(t(X))` -> `t(rowSums(X))`, `rowSums(t(X))` -> `t(colSums(X))`: the
    transpose (a full copy) is never built (after `reorder-matmul-chains`, `sum(t(X) @ (X @ v))` meets it)."""

    SWAP: ClassVar = {ops.SumAllOp: ops.SumAllOp, ops.SumColOp: ops.SumRowOp, ops.SumRowOp: ops.SumColOp}

    def rewrite(self, op: Operation, b: Builder) -> None:
        if type(op) not in self.SWAP or not isinstance(op.arg.owner, ops.TransposeOp):  # type: ignore[attr-defined]
            return
        x = op.arg.owner.arg  # type: ignore[attr-defined]
        if not f64_matrix(x) or vt_name(op.results[0].type) != "f64":
            return
        agg = b.agg(self.SWAP[type(op)], x)
        b.done(agg if isinstance(op, ops.SumAllOp) else b.t(agg))


class TraceOfProduct(Rule):
    """`sum(diagVector(X @ Y))` (the trace) -> `traceOfProduct(X, Y)`: only the diagonal's dot products, one pass
    over X and Y with Y read transposed in place (O(n*k) instead of O(n*n*k), and no t(Y) or X * t(Y) built)."""

    def rewrite(self, op: Operation, b: Builder) -> None:
        if not (isinstance(op, ops.SumAllOp) and isinstance(op.arg.owner, DiagVectorOp) and op.arg.has_one_use()):
            return
        p = plain_product(op.arg.owner.arg)
        if p is not None and not _sparse(p.lhs, p.rhs) and vt_name(op.res.type) == "f64":
            b.done(b.add(TraceOfProductOp(p.lhs, p.rhs)))


class DiagOfProduct(Rule):
    """`diagVector(X @ Y)` -> `rowSums(X * t(Y))`: the diagonal's dot products only."""

    def rewrite(self, op: Operation, b: Builder) -> None:
        if not isinstance(op, DiagVectorOp) or any(isinstance(u.operation, ops.SumAllOp) for u in op.res.uses):
            return  # a trace is `TraceOfProduct`'s (the walker may visit the diagonal first)
        if (p := plain_product(op.arg)) is not None and not _sparse(p.lhs, p.rhs):
            b.done(b.agg(ops.SumRowOp, b.mul(p.lhs, b.t(p.rhs))))


class ProductWithDiagMatrix(Rule):
    """`X @ diagMatrix(v)` -> `X * t(v)` and `diagMatrix(v) @ X` -> `X * v` (a row or column vector broadcast
    over X): scaling columns or rows instead of building an n x n matrix and multiplying by it."""

    def rewrite(self, op: Operation, b: Builder) -> None:
        if not (isinstance(op, MatMulOp) and op.transa is None and op.transb is None and f64_matrix(op.res)):
            return
        if KERNEL_CHOICE_ATTR in op.attributes or _sparse(op.lhs, op.rhs):
            return
        rd, ld = op.rhs.owner, op.lhs.owner
        if isinstance(rd, DiagMatrixOp) and f64_matrix(rd.arg):
            b.done(b.mul(op.lhs, b.t(rd.arg)))
        elif isinstance(ld, DiagMatrixOp) and f64_matrix(ld.arg):
            b.done(b.mul(op.rhs, ld.arg))


class DotOfProduct(Rule):
    """`sum(X * Y)` and `sum(X ^ 2)` of dense f64 matrices of one shape -> one BLAS dot of the two matrices read
    as vectors (`as.scalar(reshape(X, 1, n) @ reshape(Y, n, 1))`; reshape is a view): no element-wise temporary,
    and the sum runs at memory speed."""

    def rewrite(self, op: Operation, b: Builder) -> None:
        if not isinstance(op, ops.SumAllOp) or not op.arg.has_one_use():
            return
        p = op.arg.owner
        if isinstance(p, ops.EwMulOp):
            x, y = p.lhs, p.rhs
        elif isinstance(p, ops.EwPowOp) and ops.constant_value(p.rhs) == 2:
            x = y = p.lhs
        else:
            return
        if not (f64_matrix(x, dense=True) and f64_matrix(y, dense=True) and x.type.shape == y.type.shape):
            return
        n = cells(x)
        if n < DOT_MIN_CELLS:
            return
        one, size = b.const(1, "index"), b.const(n, "index")
        row = b.add(ops.ReshapeOp.create(operands=[x, one, size], result_types=[ops.UNKNOWN]))
        col = b.add(ops.ReshapeOp.create(operands=[y, size, one], result_types=[ops.UNKNOWN]))
        b.done(b.scalar(b.mm(row, col)))


# --- re-associating rules: transposes, indexing and scalars -----------------------------------------------------------


class TransposedFactors(Rule):
    """`t(X) @ t(Y)` -> `t(Y @ X)` when the product is no larger than either operand (one small transpose instead
    of reading both operands transposed) or is itself transposed (`t(t(X) @ t(Y))` becomes `Y @ X`)."""

    def rewrite(self, op: Operation, b: Builder) -> None:
        if not (isinstance(op, MatMulOp) and op.transa is None and op.transb is None and f64_matrix(op.res)):
            return
        tx, ty = op.lhs.owner, op.rhs.owner
        if (
            not (isinstance(tx, ops.TransposeOp) and isinstance(ty, ops.TransposeOp))
            or KERNEL_CHOICE_ATTR in op.attributes
        ):
            return
        if not (op.lhs.has_one_use() and op.rhs.has_one_use() and f64_matrix(tx.arg) and f64_matrix(ty.arg)):
            return
        used_transposed = all(isinstance(u.operation, ops.TransposeOp) for u in op.res.uses)
        n = cells(op.res)
        if used_transposed or 0 <= n <= min(cells(tx.arg), cells(ty.arg)):
            b.done(b.t(b.mm(ty.arg, tx.arg)))


class SliceOfProduct(Rule):
    """`(X @ Y)[lo:hi, ]` -> `X[lo:hi, ] @ Y` and `(X @ Y)[, lo:hi]` -> `X @ Y[, lo:hi]`: only the selected dot
    products are computed."""

    def rewrite(self, op: Operation, b: Builder) -> None:
        if not isinstance(op, (ops.SliceRowOp, ops.SliceColOp)):
            return
        p = plain_product(op.source)
        if p is None:
            return
        if isinstance(op, ops.SliceRowOp):
            part = b.add(ops.SliceRowOp.create(operands=[p.lhs, op.lower, op.upper], result_types=[ops.UNKNOWN]))
            new = b.mm(part, p.rhs)
        else:
            part = b.add(ops.SliceColOp.create(operands=[p.rhs, op.lower, op.upper], result_types=[ops.UNKNOWN]))
            new = b.mm(p.lhs, part)
        b.done(new)


class ScalarOutOfProduct(Rule):
    """`(s * X) @ Y` -> `s * (X @ Y)` (likewise `X @ (s * Y)`) when the product is smaller than the scaled
    operand: the scalar multiplies the result instead of every cell of an operand."""

    def rewrite(self, op: Operation, b: Builder) -> None:
        if not (isinstance(op, MatMulOp) and op.transa is None and op.transb is None and f64_matrix(op.res)):
            return
        if KERNEL_CHOICE_ATTR in op.attributes:
            return
        for side in (0, 1):
            sx = scaled(op.operands[side])
            if sx is None:
                continue
            s, x = sx
            n = cells(op.res)
            if not 0 <= n < cells(x):
                continue
            lhs, rhs = (x, op.rhs) if side == 0 else (op.lhs, x)
            b.done(b.mul(b.mm(lhs, rhs), s))
            return


class ScalarOutOfSum(Rule):
    """`sum(s * X)` -> `s * sum(X)`, likewise `colSums`/`rowSums`: one multiplication per result cell."""

    def rewrite(self, op: Operation, b: Builder) -> None:
        if not isinstance(op, (ops.SumAllOp, ops.SumColOp, ops.SumRowOp)) or vt_name(op.res.type) != "f64":
            return
        sx = scaled(op.arg)
        if sx is not None:
            s, x = sx
            b.done(b.mul(b.agg(type(op), x), s))


# --- re-associating rules: a constant column appended by cbind (the intercept of a linear model) ---------------------


def intercept(v: SSAValue) -> tuple[SSAValue, SSAValue] | None:
    """`(X, c)` when `v` is `cbind(X, fill(c, nrow(X), 1))` of f64 (the design matrix of a model with an
    intercept)."""
    cb = v.owner
    if not (isinstance(cb, ColBindOp) and f64_matrix(cb.lhs) and f64_matrix(v)):
        return None
    f = cb.rhs.owner
    if not (isinstance(f, ops.FillOp) and isinstance(f.res.type, MatrixType) and f.res.type.shape[1] == 1):
        return None
    if vt_name(f.arg.type) != "f64" or (isinstance(cb.lhs.type, MatrixType) and cb.lhs.type.is_sparse):
        return None
    return cb.lhs, f.arg


class GramOfIntercept(Rule):
    """`t(cbind(X, c)) @ cbind(X, c)` (after canonicalization `syrk(cbind(X, c))`) -> the block matrix
    `[[t(X) @ X, c * t(colSums(X))], [c * colSums(X), c * c * n]]`: `cbind` never copies X."""

    def rewrite(self, op: Operation, b: Builder) -> None:
        if not isinstance(op, SyrkOp) or (xc := intercept(op.arg)) is None:
            return
        x, c = xc
        cs = b.mul(b.agg(ops.SumColOp, x), c)  # 1 x m
        one = b.const(1, "index")
        corner = b.add(
            ops.FillOp.create(operands=[b.mul(b.mul(c, c), _nrows(b, x)), one, one], result_types=[ops.UNKNOWN])
        )
        top = b.add(ColBindOp(b.add(SyrkOp(x)), b.t(cs)))
        b.done(b.add(RowBindOp(top, b.add(ColBindOp(cs, corner)))))


def _nrows(b: Builder, x: SSAValue) -> SSAValue:
    """`nrow(X)` as an f64 scalar (a constant when inference knows it)."""
    rows = x.type.shape[0] if isinstance(x.type, MatrixType) else -1
    if rows >= 0:
        return b.const(float(rows), "f64")
    return b.add(ops.CastOp(b.add(ops.NumRowsOp(x)), "f64", "scalar"))


# --- the shapes `fuse-x-once` computes in one pass over X (here, so that the intercept rules can leave them alone) --


def column(v: SSAValue) -> bool:
    """An f64 column vector (n x 1)."""
    return f64_matrix(v, dense=True) and isinstance(v.type, MatrixType) and v.type.shape[1] == 1


def _product_with(u: SSAValue, x: SSAValue) -> SSAValue | None:
    """v when `u` is `x @ v` for a column v, used only here."""
    p = plain_product(u)
    if p is not None and p.lhs is x and column(p.rhs):
        return p.rhs
    return None


def gram_shape(x: SSAValue, u: SSAValue) -> tuple[type[Operation], tuple[SSAValue, ...]] | None:
    """The fused op's class and operands for `t(x) @ u`, if `u` is one of the three shapes (see the module
    docstring); builds nothing, so a rule elsewhere may ask too."""
    if not u.has_one_use():
        return None
    if (v := _product_with(u, x)) is not None:
        return GramVectorOp, (x, v)
    p = u.owner
    if isinstance(p, ops.EwMulOp):
        for q, w in ((p.rhs, p.lhs), (p.lhs, p.rhs)):
            if (v := _product_with(q, x)) is not None and column(w) and w.type.shape == q.type.shape:
                return WeightedGramVectorOp, (x, v, w)
    if isinstance(p, ops.EwSubOp) and (v := _product_with(p.lhs, x)) is not None:
        if column(p.rhs) and p.rhs.type.shape == p.lhs.type.shape:
            return ResidualGramVectorOp, (x, v, p.rhs)
    return None


def feeds_gram_vector(x: SSAValue, v: SSAValue) -> bool:
    """Whether `v` (`t(x) @ u` or `x @ w`) is, or is the inner product of, a `t(x) @ u` `fuse-x-once` fuses:
    the intercept rules below, which run first, leave such products to it (taking `x`'s intercept column out of
    `x @ w` would hide the shape)."""
    owner = v.owner
    if isinstance(owner, MatMulOp) and isinstance(owner.lhs.owner, ops.TransposeOp) and owner.lhs.owner.arg is x:
        return fusable_gram(owner)
    users = [v]
    if v.has_one_use() and isinstance(inner := next(iter(v.uses)).operation, (ops.EwMulOp, ops.EwSubOp)):
        users.append(inner.results[0])
    for u in users:
        if u.has_one_use() and isinstance(mm := next(iter(u.uses)).operation, MatMulOp) and mm.rhs is u:
            t = mm.lhs.owner
            if isinstance(t, ops.TransposeOp) and t.arg is x and fusable_gram(mm):
                return True
    return False


def fusable_gram(op: MatMulOp) -> bool:
    """`op` is a `t(X) @ u` that `fuse-x-once` rewrites."""
    if op.transa is not None or op.transb is not None or KERNEL_CHOICE_ATTR in op.attributes:
        return False
    t = op.lhs.owner
    if not isinstance(t, ops.TransposeOp) or not f64_matrix(t.arg) or not f64_matrix(op.res):
        return False
    return gram_shape(t.arg, op.rhs) is not None


def _left_to_fusion(design: SSAValue, product: SSAValue) -> bool:
    """`product` belongs to a `t(design) @ (design @ v)` that `fuse-x-once` computes in one pass over the design
    matrix: taking the intercept column out of either product would split it into two passes."""
    return feeds_gram_vector(design, product)


class ProductOfInterceptTransposed(Rule):
    """`t(cbind(X, c)) @ Y` -> `rbind(t(X) @ Y, c * colSums(Y))`: `cbind` never copies X."""

    def rewrite(self, op: Operation, b: Builder) -> None:
        if not (isinstance(op, MatMulOp) and op.transa is None and op.transb is None and f64_matrix(op.res)):
            return
        t = op.lhs.owner
        if not isinstance(t, ops.TransposeOp) or KERNEL_CHOICE_ATTR in op.attributes or not f64_matrix(op.rhs):
            return
        xc = intercept(t.arg)
        if xc is None or _left_to_fusion(t.arg, op.res):
            return
        x, c = xc
        b.done(b.add(RowBindOp(b.mm(b.t(x), op.rhs), b.mul(b.agg(ops.SumColOp, op.rhs), c))))


class ProductOfIntercept(Rule):
    """`cbind(X, c) @ B` -> `X @ B[0:m, ] + c * B[m:m+1, ]` (predictions of a model with an intercept):
    `cbind` never copies X."""

    def rewrite(self, op: Operation, b: Builder) -> None:
        if not (isinstance(op, MatMulOp) and op.transa is None and op.transb is None and f64_matrix(op.res)):
            return
        if KERNEL_CHOICE_ATTR in op.attributes or not f64_matrix(op.rhs, dense=True):
            return
        xc = intercept(op.lhs)
        if xc is None or _left_to_fusion(op.lhs, op.res):
            return
        x, c = xc
        m = x.type.shape[1]  # type: ignore[attr-defined]
        if m < 0:
            return
        lo, mid, hi = b.const(0, "si64"), b.const(m, "si64"), b.const(m + 1, "si64")
        head = b.add(ops.SliceRowOp.create(operands=[op.rhs, lo, mid], result_types=[ops.UNKNOWN]))
        last = b.add(ops.SliceRowOp.create(operands=[op.rhs, mid, hi], result_types=[ops.UNKNOWN]))
        new = b.add(ops.EwAddOp(b.mm(x, head), b.mul(last, c)))
        b.done(new)


# --- re-associating rules: products of stacked rows (the training rows of a cross-validation fold) -------------------


def _stacked(v: SSAValue) -> tuple[SSAValue, SSAValue] | None:
    """`(A, B)` when `v` is `rbind(A, B)` of dense f64 matrices."""
    rb = v.owner
    if isinstance(rb, RowBindOp) and f64_matrix(v, dense=True) and f64_matrix(rb.lhs, dense=True):
        if f64_matrix(rb.rhs, dense=True):
            return rb.lhs, rb.rhs
    return None


def _same_rows(a: SSAValue, c: SSAValue) -> bool:
    """Whether `a` and `c` have the same number of rows whenever both exist: equal known row counts, the same
    value, or the same row slice `[lo:hi, ]` (the same bound values) of two matrices of equal known row counts
    (negative bounds count from the end, so the sources' rows must agree too)."""
    ra = a.type.shape[0] if isinstance(a.type, MatrixType) else -1
    rc = c.type.shape[0] if isinstance(c.type, MatrixType) else -1
    if a is c or (ra >= 0 and ra == rc):
        return True
    sa, sc = a.owner, c.owner
    if not (isinstance(sa, ops.SliceRowOp) and isinstance(sc, ops.SliceRowOp)):
        return False
    if not (_same_scalar(sa.lower, sc.lower) and _same_scalar(sa.upper, sc.upper)):
        return False
    na = sa.source.type.shape[0] if isinstance(sa.source.type, MatrixType) else -1
    nc = sc.source.type.shape[0] if isinstance(sc.source.type, MatrixType) else -1
    return na >= 0 and na == nc


def _same_scalar(x: SSAValue, y: SSAValue) -> bool:
    """The same value, or two constants of equal value and type (the pass runs before CSE merges them)."""
    if x is y:
        return True
    cx, cy = x.owner, y.owner
    return isinstance(cx, ops.ConstantOp) and isinstance(cy, ops.ConstantOp) and cx.value == cy.value


class GramOfStackedRows(Rule):
    """`t(rbind(A, B)) @ rbind(A, B)` (after canonicalization `syrk(rbind(A, B))`) -> `syrk(A) + syrk(B)`: the
    stacked copy (a cross-validation fold's training rows, `rbind(X[0:lo, ], X[hi:n, ])`) is never built."""

    def rewrite(self, op: Operation, b: Builder) -> None:
        if not isinstance(op, SyrkOp) or (ab := _stacked(op.arg)) is None:
            return
        b.done(b.add(ops.EwAddOp(b.add(SyrkOp(ab[0])), b.add(SyrkOp(ab[1])))))


class ProductOfStackedRows(Rule):
    """`t(rbind(A, B)) @ rbind(C, D)` (or `matMul {transa}`) -> `t(A) @ C + t(B) @ D` where A and C (so B and D) have
    the same rows: neither stacked copy is built."""

    def rewrite(self, op: Operation, b: Builder) -> None:
        if not isinstance(op, MatMulOp) or op.transb is not None:
            return
        if KERNEL_CHOICE_ATTR in op.attributes or not f64_matrix(op.res):
            return
        if op.transa is not None:
            stacked = op.lhs
        elif isinstance(t := op.lhs.owner, ops.TransposeOp):  # fold-transpose has not run yet
            stacked = t.arg
        else:
            return
        ab, cd = _stacked(stacked), _stacked(op.rhs)
        if ab is None or cd is None or not _same_rows(ab[0], cd[0]):
            return
        transa = {"transa": UnitAttr()}
        left, right = (
            b.add(MatMulOp.create(operands=[x, y], result_types=[ops.UNKNOWN], properties=dict(transa)))
            for x, y in zip(ab, cd)
        )
        b.done(b.add(ops.EwAddOp(left, right)))


def _sparse(*vs: SSAValue) -> bool:
    return any(isinstance(v.type, MatrixType) and v.type.is_sparse for v in vs)


RULES: tuple[type[Rule], ...] = (
    DoubleTranspose,
    KnownDimension,
    TraceOfProduct,
    SumOfProduct,
    AggregateOfTranspose,
    ColSumsOfProduct,
    RowSumsOfProduct,
    DiagOfProduct,
    ProductWithDiagMatrix,
    DotOfProduct,
    TransposedFactors,
    SliceOfProduct,
    ScalarOutOfProduct,
    ScalarOutOfSum,
    GramOfIntercept,
    ProductOfInterceptTransposed,
    ProductOfIntercept,
    GramOfStackedRows,
    ProductOfStackedRows,
)
"""Every rule, in the order they are tried on an op (a more specific rule first: the trace before the diagonal)."""


@dataclass(frozen=True)
class SimplifyAlgebraPass(ModulePass):
    """Apply the rules (`reassociate=False`: the exact ones only) until none applies."""

    name = "simplify-algebra"
    reassociate: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        rules = [r() for r in RULES if r.EXACT or self.reassociate]
        LinearRewriteWalker(GreedyRewritePatternApplier(rules)).rewrite_module(op)  # type: ignore[arg-type]
