"""Compile-time sparsity estimates of matrices (the kernels' side of the representation choice is
compiler/selection/representations.py).

**Estimates** (DAPHNE's sparsity inference, `DaphneInferSparsityOpInterface.cpp`): the sparsity of a matrix is its
fraction of non-zeros, -1 when unknown. Sources: `rand` with a constant sparsity argument, `fill` with a constant
(0 gives 0, anything else 1), a matrix literal of numeric constants (its exact fraction; bool and str literals stay
unknown, as in DAPHNE), `seq` (completely dense), `readMatrix` of a file whose `.meta` has `numNonZeros`.
Propagation follows DAPHNE's traits: `ewAdd`/`ewSub` combine two known estimates as a + b - ab, `ewMul` as ab or
takes the one known side (a scalar is unknown), `transpose` and `reshape` keep the argument's, `matMul` is
1 - (1 - ab)^k (and `syrk(X)`, the canonical form of `t(X) @ X`, that of the product), `lowerTri`/`upperTri` half
the argument's, `diagMatrix` the column's (1 if unknown) over n. Beyond DAPHNE, zero-preserving element-wise unary
ops, value-type casts and row and column slices keep their argument's estimate, so CSR survives them.
Values merged by control flow keep an estimate only if every incoming one agrees; function parameters and results
are unknown.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects import func, scf
from xdsl.ir import Attribute, Block, Operation, SSAValue

from daphnec.compiler.analysis.infer_io import read_sparsity
from daphnec.compiler.ir_walk import enclosing_function
from daphnec.dialects import ops
from daphnec.dialects.attr_names import MERGE_CAST_ATTR
from daphnec.dialects.op_kinds import EW_UNARY
from daphnec.dialects.ops_io import ReadOp
from daphnec.dialects.ops_matrix import DiagMatrixOp, MatMulOp, SyrkOp, TriOp
from daphnec.dialects.types import MatrixType, vt_name
from daphnec.dialects.value_types import NUMERIC_VTS
from daphnec.runtime import values

UNKNOWN = -1.0

#: Value types a CSR matrix can hold: the numbers (not strings).
CSR_VALUE_TYPES = NUMERIC_VTS
_LITERAL_VALUE_TYPES = CSR_VALUE_TYPES - {"bool"}  # DAPHNE computes no estimate for bool matrix constants
_MAX_ROUNDS = 32


def type_sparsity(t: Attribute) -> float:
    """The estimate recorded in a matrix type (-1 for anything else)."""
    return t.sparsity_estimate if isinstance(t, MatrixType) else UNKNOWN


def is_sparse_type(t: Attribute) -> bool:
    return isinstance(t, MatrixType) and t.is_sparse


# ---------------------------------------------------------------------------------------------------------------------
# Per-op rules
# ---------------------------------------------------------------------------------------------------------------------

Lookup = Callable[[SSAValue], float]


def _both(a: float, b: float) -> float:
    """Non-zero if either side is (DAPHNE's EwSparseIfBoth: add, sub)."""
    return a + b - a * b if a != UNKNOWN and b != UNKNOWN else UNKNOWN


def _either(a: float, b: float) -> float:
    """Zero if either side is (DAPHNE's EwSparseIfEither: mul)."""
    if a != UNKNOWN and b != UNKNOWN:
        return a * b
    return a if a != UNKNOWN else b


def _literal(op: ops.MatrixLiteralOp) -> float:
    """The exact fraction of non-zeros of a literal whose elements are all numeric constants."""
    vt = vt_name(op.res.type)
    elems = [ops.constant_value(e) for e in op.elems]
    if vt not in _LITERAL_VALUE_TYPES or not elems or any(e is None for e in elems):
        return UNKNOWN
    nonzero = sum(1 for e in elems if values.cast_scalar(e, vt) != 0)
    return nonzero / len(elems)


def _fill(op: ops.FillOp) -> float:
    v = ops.constant_value(op.arg)
    if v is None or isinstance(v, str):
        return UNKNOWN
    return 0.0 if v == 0 else 1.0


def _rand(op: ops.RandMatrixOp) -> float:
    v = ops.constant_value(op.sparsity)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else UNKNOWN


def _product(a: float, b: float, k: int) -> float:
    """DAPHNE's unbiased estimate of a matrix product, 1 - (1 - ab)^k, k the inner dimension."""
    if a == UNKNOWN or b == UNKNOWN or k < 0:
        return UNKNOWN
    return 1.0 - (1.0 - a * b) ** k


def _matmul(op: MatMulOp, sp: Lookup) -> float:
    """The product's estimate, k the inner dimension of the factors as multiplied (`transa`/`transb`)."""
    (_, k), (kb, _) = op.operand_shapes()
    return _product(sp(op.lhs), sp(op.rhs), k if k >= 0 else kb)


def _syrk(op: SyrkOp, sp: Lookup) -> float:
    """`syrk(X)` is `t(X) @ X` (its canonical form): the product's estimate, k the rows of X."""
    a = sp(op.arg)
    return _product(a, a, op.arg.type.shape[0] if isinstance(op.arg.type, MatrixType) else -1)


def _diag_matrix(op: DiagMatrixOp, sp: Lookup) -> float:
    """DAPHNE's DiagMatrixOp::inferSparsity: the column's estimate (1 when unknown) over n."""
    n = op.arg.type.shape[0] if isinstance(op.arg.type, MatrixType) else -1
    if n <= 0:
        return UNKNOWN
    a = sp(op.arg)
    return (1.0 if a == UNKNOWN else a) / n


def _cast(op: ops.CastOp, sp: Lookup) -> float:
    src, dst = op.arg.type, op.res.type
    if MERGE_CAST_ATTR in op.attributes and isinstance(dst, MatrixType) and is_sparse_type(src) != dst.is_sparse:
        return dst.sparsity_estimate  # a representation conversion made by select-matrix-repr: keep its target
    if isinstance(src, MatrixType) and isinstance(dst, MatrixType) and vt_name(dst) in CSR_VALUE_TYPES:
        return sp(op.arg)
    return UNKNOWN


def op_sparsity(op: Operation, sp: Lookup) -> float:
    """The estimate of a daphne op's (single) matrix result, from the estimates of its operands."""
    if isinstance(op, ops.MatrixLiteralOp):
        return _literal(op)
    if isinstance(op, ops.FillOp):
        return _fill(op)
    if isinstance(op, ops.RandMatrixOp):
        return _rand(op)
    if isinstance(op, ops.SeqOp):
        return 1.0
    if isinstance(op, (ops.EwAddOp, ops.EwSubOp)):
        return _both(sp(op.lhs), sp(op.rhs))
    if isinstance(op, ops.EwMulOp):
        return _either(sp(op.lhs), sp(op.rhs))
    if isinstance(op, ops.EwUnaryOp) and EW_UNARY[op.KIND].zero_preserving:
        return sp(op.arg)
    if isinstance(op, (ops.TransposeOp, ops.ReshapeOp, ops.SliceRowOp, ops.SliceColOp)):
        return sp(op.operands[0])
    if isinstance(op, MatMulOp):
        return _matmul(op, sp)
    if isinstance(op, SyrkOp):
        return _syrk(op, sp)
    if isinstance(op, TriOp):
        return sp(op.arg) / 2.0 if sp(op.arg) != UNKNOWN else UNKNOWN
    if isinstance(op, DiagMatrixOp):
        return _diag_matrix(op, sp)
    if isinstance(op, ops.CastOp):
        return _cast(op, sp)
    if isinstance(op, ReadOp):
        return read_sparsity(op)
    return UNKNOWN


# ---------------------------------------------------------------------------------------------------------------------
# Estimates over a function body (control flow joins to a fixpoint)
# ---------------------------------------------------------------------------------------------------------------------


def _join(a: float | None, b: float | None) -> float | None:
    """None is "no value seen yet"; two different estimates join to unknown."""
    if a is None:
        return b
    if b is None or a == b:
        return a
    return UNKNOWN


class SparsityEstimates:
    """The estimate of every value in one function (`of(v)`), computed to a fixpoint over loops."""

    def __init__(self, f: func.FuncOp) -> None:
        self.est: dict[SSAValue, float] = {}
        for _ in range(_MAX_ROUNDS):
            if not self._block(f.body.block):
                break

    def of(self, v: SSAValue) -> float:
        e = self.est.get(v)
        return type_sparsity(v.type) if e is None else e

    def _set(self, v: SSAValue, e: float | None) -> bool:
        e = UNKNOWN if e is None or not isinstance(v.type, MatrixType) else e
        if self.est.get(v) == e:
            return False
        self.est[v] = e
        return True

    def _seen(self, v: SSAValue) -> float | None:
        """A value's estimate so far: None for an op result not reached yet (a loop's yield in the first round)."""
        if v in self.est:
            return self.est[v]
        return None if isinstance(v.owner, Operation) else type_sparsity(v.type)

    def _merge(self, targets: Sequence[SSAValue], *sources: Sequence[SSAValue]) -> bool:
        """targets[i] := the join of its previous estimate and every sources[k][i] seen so far."""
        changed = False
        for i, t in enumerate(targets):
            e = self.est.get(t)
            for src in sources:
                if i < len(src):
                    e = _join(e, self._seen(src[i]))
            changed |= self._set(t, e)
        return changed

    def _block(self, block: Block) -> bool:
        changed = False
        for op in block.ops:
            changed |= self._op(op)
        return changed

    def _op(self, op: Operation) -> bool:
        if isinstance(op, scf.ForOp):
            return self._for(op)
        if isinstance(op, scf.WhileOp):
            return self._while(op)
        if isinstance(op, scf.IfOp):
            return self._if(op)
        changed = False
        if isinstance(op, ops.DaphneOp) and len(op.results) == 1:
            return self._set(op.results[0], op_sparsity(op, self.of))
        for r in op.results:
            changed |= self._set(r, type_sparsity(r.type))
        return changed

    def _for(self, op: scf.ForOp) -> bool:
        block = op.body.block
        args = block.args[1:]
        y = block.last_op
        yields = list(y.operands) if isinstance(y, scf.YieldOp) else []
        changed = self._merge(args, list(op.iter_args), yields)
        changed |= self._block(block)
        for r, a in zip(op.results, args):
            changed |= self._set(r, self.est.get(a))
        return changed

    def _while(self, op: scf.WhileOp) -> bool:
        before, after = op.before_region.block, op.after_region.block
        y = after.last_op
        yields = list(y.operands) if isinstance(y, scf.YieldOp) else []
        changed = self._merge(before.args, list(op.arguments), yields)
        changed |= self._block(before)
        cond = before.last_op
        cond_args = list(cond.args) if isinstance(cond, scf.ConditionOp) else []
        for a, c in zip(after.args, cond_args):
            changed |= self._set(a, self.of(c))
        changed |= self._block(after)
        for r, c in zip(op.results, cond_args):
            changed |= self._set(r, self.of(c))
        return changed

    def _if(self, op: scf.IfOp) -> bool:
        changed = self._block(op.true_region.block)
        blocks = [op.true_region.block]
        if op.false_region.blocks:
            changed |= self._block(op.false_region.block)
            blocks.append(op.false_region.block)
        for i, r in enumerate(op.results):
            e: float | None = None
            for b in blocks:
                y = b.last_op
                if isinstance(y, scf.YieldOp):
                    e = _join(e, self.of(y.operands[i]))
            changed |= self._set(r, e)
        return changed


def estimate(v: SSAValue) -> float:
    """The compiler's estimate for one value: from its type once `select-matrix-repr` ran, else computed."""
    t = type_sparsity(v.type)
    if t != UNKNOWN:
        return t
    owner = v.owner
    f = enclosing_function(owner if isinstance(owner, Operation) else owner.parent_op())
    return SparsityEstimates(f).of(v) if f is not None else UNKNOWN
