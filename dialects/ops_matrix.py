"""Operations of the `daphne` dialect for the matrix builtins (see dialects/ops.py for the conventions).

Op names, operand orders and result types follow DAPHNE's `DaphneOps.td` (`daphne.colBind`, `daphne.outerAdd`,
`daphne.idxminRow`, `daphne.sumCum`, `daphne.eigenCal`, ...). Verifiers report statically detectable misuse
(shape mismatches with both shapes, scalars where a matrix is required); the kernels repeat the checks at run time
for shapes unknown at compile time.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import ArrayAttr, IntAttr, StringAttr, UnitAttr
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.traits import HasCanonicalizationPatternsTrait, Pure
from xdsl.utils.exceptions import VerifyException

from daphnec.dialects.constraints import MATRIX, MATRIX_OR_FRAME, SCALAR
from daphnec.dialects.op_kinds import CUM_AGGREGATIONS, EW_BINARY
from daphnec.dialects.ops import (
    BinaryDaphneOp,
    DaphneOp,
    RuleOfKind,
    Shape,
    TransposeOp,
    UnaryDaphneOp,
    constant_value,
    shape_col_agg,
    shape_from_arg,
    shape_of,
    shape_row_agg,
)
from daphnec.dialects.types import (
    INDEX,
    UNKNOWN,
    FrameType,
    MatrixType,
    is_matrix,
    is_unknown,
    value_type,
    vt_name,
)
from daphnec.dialects.value_types import (
    is_float_vt,
    vt_fixed,
    vt_from_args,
    vt_from_first,
)

# --- helpers -------------------------------------------------------------------------------------------------------


def _mat(vt: str | None, rows: int = -1, cols: int = -1) -> MatrixType:
    return MatrixType(value_type(vt) if vt else UNKNOWN, rows, cols)


def _dims(t: Attribute) -> str:
    r, c = shape_of(t)
    return f"{'?' if r < 0 else r}x{'?' if c < 0 else c}"


def _const_int(v: SSAValue) -> int | None:
    c = constant_value(v)
    return int(c) if isinstance(c, (int, float)) and not isinstance(c, bool) else None


def _const_dim(v: SSAValue) -> int:
    c = _const_int(v)
    return c if c is not None and c >= 0 else -1


def need_float(op: Operation, t: Attribute, what: str = "the argument") -> None:
    """DAPHNE has only f32/f64 kernels for linear-algebra and DNN ops (`MatrixOf<[FloatScalar]>`)."""
    vt = vt_name(t)
    if is_matrix(t) and vt is not None and not is_float_vt(vt):
        raise VerifyException(f"{op.name}: {what} must be a matrix of f32 or f64, got value type {vt}")


def _shape_mismatch(op: Operation, lhs: Attribute, rhs: Attribute, why: str) -> VerifyException:
    return VerifyException(f"{op.name}: shape mismatch: lhs {_dims(lhs)}, rhs {_dims(rhs)} ({why})")


def _known(a: int, b: int) -> bool:
    return a >= 0 and b >= 0


def _check_square(op: Operation, t: Attribute) -> None:
    r, c = shape_of(t)
    if _known(r, c) and r != c:
        raise VerifyException(f"{op.name}: the argument must be a square matrix, got {_dims(t)}")


# --- data generation -----------------------------------------------------------------------------------------------


@irdl_op_definition
class DiagMatrixOp(UnaryDaphneOp):
    """`diagMatrix(arg)`: an n x n matrix with the n x 1 column `arg` on its diagonal."""

    name = "daphne.diagMatrix"
    arg = operand_def(MATRIX)
    VT_RULE: ClassVar = staticmethod(vt_from_first)
    DT_RULE: ClassVar = "mat"
    SHAPE: ClassVar = staticmethod(lambda op: (shape_of(op.arg.type)[0], shape_of(op.arg.type)[0]))

    def verify_(self) -> None:
        cols = shape_of(self.arg.type)[1]
        if cols >= 0 and cols != 1:
            shape = _dims(self.arg.type)
            raise VerifyException(f"{self.name}: the argument must be a column matrix (n x 1), got {shape}")


@irdl_op_definition
class SampleOp(DaphneOp):
    """`sample(range, size, withReplacement, seed)`: a size x 1 column of values in [0, range)."""

    name = "daphne.sample"
    range = operand_def(SCALAR)
    size = operand_def()
    with_replacement = operand_def()
    seed = operand_def()
    res = result_def()
    VT_OPERANDS: ClassVar = 1
    ROLES: ClassVar = {"range": "the range"}
    DT_RULE: ClassVar = "mat"
    SHAPE: ClassVar = staticmethod(lambda op: (_const_dim(op.size), 1))

    def verify_(self) -> None:
        if vt_name(self.range.type) in ("str", "bool"):
            raise VerifyException(f"{self.name}: the range must be a number, got {self.range.type}")


# --- metadata ------------------------------------------------------------------------------------------------------


@irdl_op_definition
class IsSymmetricOp(UnaryDaphneOp):
    """`isSymmetric(arg)`: bool; the argument must be square."""

    name = "daphne.isSymmetric"
    arg = operand_def(MATRIX)
    VT_RULE: ClassVar = staticmethod(vt_fixed("bool"))
    DT_RULE: ClassVar = "sca"

    def infer(self) -> tuple[Attribute, ...]:
        return (value_type("bool"),)

    def verify_(self) -> None:
        _check_square(self, self.arg.type)


@irdl_op_definition
class SparsityOp(UnaryDaphneOp):
    """`sparsity(X)`: the compiler's estimate of X's fraction of non-zeros (f64), -1 if it has none (DAPHNE's
    SparsityOp; the estimate is bound at compile time, see compiler/analysis/sparsity.py)."""

    name = "daphne.sparsity"
    arg = operand_def(MATRIX)
    DT_RULE: ClassVar = "sca"
    VT_RULE: ClassVar = staticmethod(vt_fixed("f64"))


# --- outer binary ----------------------------------------------------------------------------------------------------


class OuterBinaryOp(BinaryDaphneOp):
    """`outerX(lhs, rhs)`: lhs (m x 1) and rhs (1 x n) give an m x n matrix of `lhs[i] op rhs[j]`."""

    lhs = operand_def(MATRIX)
    rhs = operand_def(MATRIX)
    KIND: ClassVar[str]
    VT_RULE: ClassVar = RuleOfKind(EW_BINARY)
    DT_RULE: ClassVar = "mat"
    SHAPE: ClassVar = staticmethod(lambda op: (shape_of(op.lhs.type)[0], shape_of(op.rhs.type)[1]))

    def verify_(self) -> None:
        lc, rr = shape_of(self.lhs.type)[1], shape_of(self.rhs.type)[0]
        if (lc >= 0 and lc != 1) or (rr >= 0 and rr != 1):
            raise _shape_mismatch(self, self.lhs.type, self.rhs.type, "lhs must be a column (m x 1), rhs a row (1 x n)")


@irdl_op_definition
class OuterAddOp(OuterBinaryOp):
    name = "daphne.outerAdd"
    KIND: ClassVar = "add"


@irdl_op_definition
class OuterSubOp(OuterBinaryOp):
    name = "daphne.outerSub"
    KIND: ClassVar = "sub"


@irdl_op_definition
class OuterMulOp(OuterBinaryOp):
    name = "daphne.outerMul"
    KIND: ClassVar = "mul"


@irdl_op_definition
class OuterDivOp(OuterBinaryOp):
    name = "daphne.outerDiv"
    KIND: ClassVar = "div"


@irdl_op_definition
class OuterPowOp(OuterBinaryOp):
    name = "daphne.outerPow"
    KIND: ClassVar = "pow"


@irdl_op_definition
class OuterModOp(OuterBinaryOp):
    name = "daphne.outerMod"
    KIND: ClassVar = "mod"


@irdl_op_definition
class OuterLogOp(OuterBinaryOp):
    name = "daphne.outerLog"
    KIND: ClassVar = "log"


@irdl_op_definition
class OuterMinOp(OuterBinaryOp):
    name = "daphne.outerMin"
    KIND: ClassVar = "min"


@irdl_op_definition
class OuterMaxOp(OuterBinaryOp):
    name = "daphne.outerMax"
    KIND: ClassVar = "max"


@irdl_op_definition
class OuterAndOp(OuterBinaryOp):
    name = "daphne.outerAnd"
    KIND: ClassVar = "and"


@irdl_op_definition
class OuterOrOp(OuterBinaryOp):
    name = "daphne.outerOr"
    KIND: ClassVar = "or"


@irdl_op_definition
class OuterXorOp(OuterBinaryOp):
    name = "daphne.outerXor"
    KIND: ClassVar = "xor"


@irdl_op_definition
class OuterConcatOp(OuterBinaryOp):
    name = "daphne.outerConcat"
    KIND: ClassVar = "concat"


@irdl_op_definition
class OuterEqOp(OuterBinaryOp):
    name = "daphne.outerEq"
    KIND: ClassVar = "eq"


@irdl_op_definition
class OuterNeqOp(OuterBinaryOp):
    name = "daphne.outerNeq"
    KIND: ClassVar = "neq"


@irdl_op_definition
class OuterLtOp(OuterBinaryOp):
    name = "daphne.outerLt"
    KIND: ClassVar = "lt"


@irdl_op_definition
class OuterLeOp(OuterBinaryOp):
    name = "daphne.outerLe"
    KIND: ClassVar = "le"


@irdl_op_definition
class OuterGtOp(OuterBinaryOp):
    name = "daphne.outerGt"
    KIND: ClassVar = "gt"


@irdl_op_definition
class OuterGeOp(OuterBinaryOp):
    name = "daphne.outerGe"
    KIND: ClassVar = "ge"


OUTER_OPS: dict[str, type[OuterBinaryOp]] = {
    c.name.removeprefix("daphne."): c
    for c in (
        OuterAddOp, OuterSubOp, OuterMulOp, OuterDivOp, OuterPowOp, OuterModOp, OuterLogOp, OuterMinOp, OuterMaxOp,
        OuterAndOp, OuterOrOp, OuterXorOp, OuterConcatOp, OuterEqOp, OuterNeqOp, OuterLtOp, OuterLeOp, OuterGtOp,
        OuterGeOp,
    )
}  # fmt: skip
"""DaphneDSL name (`outerAdd`, ...) -> op class."""


# --- aggregation: arg-min/max and cumulative ---------------------------------------------------------------------


class IdxAggOp(UnaryDaphneOp):
    """`idxMin(X, axis)` / `idxMax(X, axis)`: positions (size type) of the first minimum/maximum per row/column."""

    arg = operand_def(MATRIX)
    KIND: ClassVar[str]
    AXIS: ClassVar[str]
    DT_RULE: ClassVar = "mat"
    VT_RULE: ClassVar = staticmethod(vt_fixed("index"))

    def verify_(self) -> None:
        if vt_name(self.arg.type) == "str":
            raise VerifyException(f"{self.name}: the argument must be a numeric matrix, got value type str")


class RowIdxAggOp(IdxAggOp):
    """Positions per row (an n x 1 result)."""

    AXIS: ClassVar = "row"
    SHAPE: ClassVar = staticmethod(shape_row_agg)


class ColIdxAggOp(IdxAggOp):
    """Positions per column (a 1 x m result)."""

    AXIS: ClassVar = "col"
    SHAPE: ClassVar = staticmethod(shape_col_agg)


@irdl_op_definition
class RowAggIdxMinOp(RowIdxAggOp):
    name = "daphne.idxminRow"
    KIND: ClassVar = "min"


@irdl_op_definition
class RowAggIdxMaxOp(RowIdxAggOp):
    name = "daphne.idxmaxRow"
    KIND: ClassVar = "max"


@irdl_op_definition
class ColAggIdxMinOp(ColIdxAggOp):
    name = "daphne.idxminCol"
    KIND: ClassVar = "min"


@irdl_op_definition
class ColAggIdxMaxOp(ColIdxAggOp):
    name = "daphne.idxmaxCol"
    KIND: ClassVar = "max"


IDX_OPS: dict[tuple[str, str], type[IdxAggOp]] = {
    (c.KIND, c.AXIS): c for c in (RowAggIdxMinOp, ColAggIdxMinOp, RowAggIdxMaxOp, ColAggIdxMaxOp)
}
"""(kind "min"/"max", axis "row"/"col") -> op class."""


class CumAggOp(UnaryDaphneOp):
    """`cumSum/cumProd/cumMin/cumMax(X)`: column-wise running aggregate, same shape and value type as `X`."""

    arg = operand_def(MATRIX)
    KIND: ClassVar[str]
    DT_RULE: ClassVar = "mat"
    VT_RULE: ClassVar = staticmethod(vt_from_first)
    SHAPE: ClassVar = staticmethod(shape_from_arg)

    def verify_(self) -> None:
        if not CUM_AGGREGATIONS[self.KIND].strings and vt_name(self.arg.type) == "str":
            raise VerifyException(f"{self.name}: the argument must be a numeric matrix, got value type str")


@irdl_op_definition
class CumAggSumOp(CumAggOp):
    name = "daphne.sumCum"
    KIND: ClassVar = "sum"


@irdl_op_definition
class CumAggProdOp(CumAggOp):
    name = "daphne.prodCum"
    KIND: ClassVar = "prod"


@irdl_op_definition
class CumAggMinOp(CumAggOp):
    name = "daphne.minCum"
    KIND: ClassVar = "min"


@irdl_op_definition
class CumAggMaxOp(CumAggOp):
    name = "daphne.maxCum"
    KIND: ClassVar = "max"


CUM_OPS: dict[str, type[CumAggOp]] = {
    CUM_AGGREGATIONS[c.KIND].builtin: c for c in (CumAggSumOp, CumAggProdOp, CumAggMinOp, CumAggMaxOp)
}
"""DaphneDSL name (`cumSum`, ...) -> op class."""


# --- reorganisation ------------------------------------------------------------------------------------------------


class BindOp(BinaryDaphneOp):
    """`cbind`/`rbind` of two matrices (most general value type, CastArgsToResType) or two frames."""

    lhs = operand_def(MATRIX_OR_FRAME)
    rhs = operand_def(MATRIX_OR_FRAME)
    AXIS: ClassVar[int]  # 1: columns are concatenated (cbind), 0: rows (rbind)

    def infer(self) -> tuple[Attribute, ...]:
        lt, rt = self.lhs.type, self.rhs.type
        if isinstance(lt, FrameType) or isinstance(rt, FrameType):
            return (self._frame_type(lt, rt),)
        if isinstance(lt, MatrixType) and isinstance(rt, MatrixType):
            vt = vt_from_args([vt_name(lt), vt_name(rt)])
            return (_mat(vt, *self._shape(lt.shape, rt.shape)),)
        if is_unknown(lt) or is_unknown(rt):
            return (UNKNOWN,)
        return (_mat(vt_from_args([vt_name(lt), vt_name(rt)])),)

    def _shape(self, ls: Shape, rs: Shape) -> Shape:
        keep, cat = (0, 1) if self.AXIS == 1 else (1, 0)
        same = ls[keep] if ls[keep] >= 0 else rs[keep]
        summed = ls[cat] + rs[cat] if _known(ls[cat], rs[cat]) else -1
        return (same, summed) if self.AXIS == 1 else (summed, same)

    def _frame_type(self, lt: Attribute, rt: Attribute) -> Attribute:
        if not (isinstance(lt, FrameType) and isinstance(rt, FrameType)):
            return UNKNOWN
        if self.AXIS == 1:
            rows = lt.rows.data if lt.rows.data >= 0 else rt.rows.data
            ll, rl = lt.label_names, rt.label_names
            labels = ll + rl if ll is not None and rl is not None else None
            return FrameType([*lt.column_types.data, *rt.column_types.data], rows, labels)
        rows = lt.rows.data + rt.rows.data if _known(lt.rows.data, rt.rows.data) else -1
        return FrameType(list(lt.column_types.data), rows, lt.label_names)

    def verify_(self) -> None:
        lt, rt = self.lhs.type, self.rhs.type
        if isinstance(lt, FrameType) != isinstance(rt, FrameType) and not (is_unknown(lt) or is_unknown(rt)):
            raise VerifyException(f"{self.name}: cannot bind a matrix and a frame")
        if is_matrix(lt) and is_matrix(rt):
            dim = 0 if self.AXIS == 1 else 1
            a, b = lt.shape[dim], rt.shape[dim]
            if _known(a, b) and a != b:
                what = "#rows of lhs and rhs must be equal" if dim == 0 else "#cols of lhs and rhs must be equal"
                raise _shape_mismatch(self, lt, rt, what)


@irdl_op_definition
class ColBindOp(BindOp):
    name = "daphne.colBind"
    AXIS: ClassVar = 1


@irdl_op_definition
class RowBindOp(BindOp):
    name = "daphne.rowBind"
    AXIS: ClassVar = 0


@irdl_op_definition
class ReverseOp(UnaryDaphneOp):
    """`reverse(arg)`: the rows in reverse order."""

    name = "daphne.reverse"
    arg = operand_def(MATRIX)
    VT_RULE: ClassVar = staticmethod(vt_from_first)
    DT_RULE: ClassVar = "mat"
    SHAPE: ClassVar = staticmethod(shape_from_arg)


@irdl_op_definition
class OrderOp(DaphneOp):
    """`order(arg, colIdxs..., ascs..., returnIndexes)`: a stable multi-column sort of the rows of `arg`, or the
    sorting permutation as an n x 1 matrix of positions (size type) if `returnIndexes` is true."""

    name = "daphne.order"
    arg = operand_def(MATRIX_OR_FRAME)
    col_idxs = var_operand_def()
    ascs = var_operand_def()
    return_idxs = operand_def()
    res = result_def()
    traits = traits_def(Pure())
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(self, arg: SSAValue, col_idxs: Sequence[SSAValue], ascs: Sequence[SSAValue], return_idxs: SSAValue):
        super().__init__(operands=[arg, col_idxs, ascs, return_idxs], result_types=[UNKNOWN])

    def infer(self) -> tuple[Attribute, ...]:
        t = self.arg.type
        if constant_value(self.return_idxs) is True:
            return (MatrixType(INDEX, shape_of(t)[0] if isinstance(t, MatrixType) else -1, 1),)
        if isinstance(t, FrameType):
            return (FrameType(list(t.column_types.data), t.rows.data, t.label_names),)
        if isinstance(t, MatrixType):
            return (MatrixType(t.element_type, *t.shape),)
        return (UNKNOWN,)

    def verify_(self) -> None:
        if len(self.col_idxs) != len(self.ascs) or not self.col_idxs:
            raise VerifyException(f"{self.name}: expects as many (at least one) column indexes as sort orders")
        ncols = self._num_cols()
        for v in self.col_idxs:
            c = _const_int(v)
            if c is not None and ncols >= 0 and not 0 <= c < ncols:
                raise VerifyException(f"{self.name}: column index {c} is out of bounds for {ncols} column(s)")

    def _num_cols(self) -> int:
        t = self.arg.type
        if isinstance(t, FrameType):
            return len(t.column_types.data)
        return shape_of(t)[1]


# --- matrix products and linear systems ------------------------------------------------------------------------


class MatMulCanonicalization(HasCanonicalizationPatternsTrait):
    """`matMul`'s canonicalization: `TransposedProductIsSyrk`."""

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        return (TransposedProductIsSyrk(),)


@irdl_op_definition
class MatMulOp(BinaryDaphneOp):
    """`X @ Y`; the value type is the most general of both. `transa`/`transb` (set by `fold-transpose`, DAPHNE's
    MatMulOp operands of these names in src/ir/daphneir/DaphneOps.td) multiply by an operand's transpose."""

    name = "daphne.matMul"
    lhs = operand_def(MATRIX_OR_FRAME)
    rhs = operand_def(MATRIX_OR_FRAME)
    transa = opt_prop_def(UnitAttr)
    transb = opt_prop_def(UnitAttr)
    traits = traits_def(MatMulCanonicalization())
    DT_RULE: ClassVar = "mat"

    def operand_shapes(self) -> tuple[Shape, Shape]:
        """The shapes of the two factors as multiplied (an operand's transposed when its flag is set)."""
        (ar, ac), (br, bc) = shape_of(self.lhs.type), shape_of(self.rhs.type)
        return ((ac, ar) if self.transa else (ar, ac)), ((bc, br) if self.transb else (br, bc))

    @staticmethod
    def _mm(op: MatMulOp) -> Shape:
        (ar, _), (_, bc) = op.operand_shapes()
        return (ar, bc)

    SHAPE: ClassVar = staticmethod(_mm)

    def verify_(self) -> None:
        if not (is_matrix(self.lhs.type) and is_matrix(self.rhs.type)):
            return
        (ar, ac), (br, bc) = self.operand_shapes()
        if ac >= 0 and br >= 0 and ac != br:
            raise VerifyException(f"daphne.matMul: shape mismatch: lhs {ar}x{ac}, rhs {br}x{bc}")


class TransposedProductIsSyrk(RewritePattern):
    """`t(X) @ X` is `syrk(X)` (DAPHNE's MatMulOp canonicalization): the product of a matrix's transpose with
    itself is computed as a symmetric rank-k update, so the result is exactly symmetric (`isSymmetric` and `eigen`
    accept it) and the transpose is never built."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: MatMulOp, rewriter: PatternRewriter) -> None:
        t = op.lhs.owner
        plain = op.transa is None and op.transb is None  # matMul(t(X), X) with a flag set is another product
        if (
            plain
            and isinstance(t, TransposeOp)
            and t.arg is op.rhs
            and is_matrix(op.rhs.type)
            and not is_unknown(op.rhs.type)
        ):
            syrk = SyrkOp.create(operands=[op.rhs], result_types=[op.res.type])
            syrk.location = op.location
            rewriter.replace(op, syrk)


@irdl_op_definition
class SyrkOp(UnaryDaphneOp):
    """`syrk(A)`: t(A) @ A, exactly symmetric."""

    name = "daphne.syrk"
    arg = operand_def(MATRIX)
    VT_RULE: ClassVar = staticmethod(vt_from_first)
    DT_RULE: ClassVar = "mat"
    SHAPE: ClassVar = staticmethod(lambda op: (shape_of(op.arg.type)[1], shape_of(op.arg.type)[1]))

    def verify_(self) -> None:
        if vt_name(self.arg.type) == "str":
            raise VerifyException(f"{self.name}: the argument must be a numeric matrix, got value type str")


@irdl_op_definition
class GemvOp(BinaryDaphneOp):
    """`gemv(A, x)`: t(A) @ x for A (n x m) and x (n x 1)."""

    name = "daphne.gemv"
    lhs = operand_def(MATRIX)
    rhs = operand_def(MATRIX)
    ROLES: ClassVar = {"lhs": "A", "rhs": "x"}
    DT_RULE: ClassVar = "mat"
    SHAPE: ClassVar = staticmethod(lambda op: (shape_of(op.lhs.type)[1], 1))

    def verify_(self) -> None:
        a, x = self.lhs.type, self.rhs.type
        if vt_from_args([vt_name(a), vt_name(x)]) == "str":
            raise VerifyException(f"{self.name}: the arguments must be numeric matrices")
        (ar, _), (xr, xc) = shape_of(a), shape_of(x)
        if (_known(ar, xr) and ar != xr) or (xc >= 0 and xc != 1):
            raise _shape_mismatch(self, a, x, "A must be n x m and x n x 1")


class GramVectorBase(DaphneOp):
    """`t(X) @ s(X @ v)` computed in one pass over X (built by `fuse-x-once`, kernel runtime/kernels/gram_vector.py):
    the inner loop of CG on the normal equations, Newton-CG logistic regression and GLMs. X is n x m, v m x 1 and
    the third operand, if any, n x 1; the result is m x 1 (the pass builds these ops for f64 operands only)."""

    DT_RULE: ClassVar = "mat"
    KIND: ClassVar[str]
    SHAPE: ClassVar = staticmethod(lambda op: (shape_of(op.operands[0].type)[1], 1))

    def verify_(self) -> None:
        x = self.operands[0].type
        (n, m), (vr, vc) = shape_of(x), shape_of(self.operands[1].type)
        if (_known(m, vr) and m != vr) or (vc >= 0 and vc != 1):
            raise _shape_mismatch(self, x, self.operands[1].type, "X must be n x m and v m x 1")
        if len(self.operands) == 3:
            ar, ac = shape_of(self.operands[2].type)
            if (_known(n, ar) and n != ar) or (ac >= 0 and ac != 1):
                raise _shape_mismatch(self, x, self.operands[2].type, "X must be n x m and the vector n x 1")


@irdl_op_definition
class GramVectorOp(GramVectorBase):
    """`t(X) @ (X @ v)`."""

    name = "daphne.gramVector"
    x = operand_def(MATRIX)
    v = operand_def(MATRIX)
    res = result_def()
    traits = traits_def(Pure())
    KIND: ClassVar = "plain"

    def __init__(self, x: SSAValue, v: SSAValue):
        super().__init__(operands=[x, v], result_types=[UNKNOWN])


@irdl_op_definition
class WeightedGramVectorOp(GramVectorBase):
    """`t(X) @ (w * (X @ v))`."""

    name = "daphne.gramVectorWeighted"
    x = operand_def(MATRIX)
    v = operand_def(MATRIX)
    w = operand_def(MATRIX)
    res = result_def()
    traits = traits_def(Pure())
    KIND: ClassVar = "weighted"

    def __init__(self, x: SSAValue, v: SSAValue, w: SSAValue):
        super().__init__(operands=[x, v, w], result_types=[UNKNOWN])


@irdl_op_definition
class ResidualGramVectorOp(GramVectorBase):
    """`t(X) @ ((X @ v) - y)`."""

    name = "daphne.gramVectorResidual"
    x = operand_def(MATRIX)
    v = operand_def(MATRIX)
    y = operand_def(MATRIX)
    res = result_def()
    traits = traits_def(Pure())
    KIND: ClassVar = "residual"

    def __init__(self, x: SSAValue, v: SSAValue, y: SSAValue):
        super().__init__(operands=[x, v, y], result_types=[UNKNOWN])


@irdl_op_definition
class TraceOfProductOp(BinaryDaphneOp):
    """`traceOfProduct(X, Y)`: trace(X @ Y) = sum over i, j of X[i, j] * Y[j, i] for X n x k and Y k x n, an f64
    scalar (built by `simplify-algebra` for `sum(diagVector(X @ Y))`; kernel runtime/kernels/matrix_ops.py): only
    the diagonal's dot products, reading Y transposed in place (neither the product nor t(Y) is built)."""

    name = "daphne.traceOfProduct"
    lhs = operand_def(MATRIX)
    rhs = operand_def(MATRIX)
    ROLES: ClassVar = {"lhs": "X", "rhs": "Y"}
    DT_RULE: ClassVar = "sca"
    VT_RULE: ClassVar = staticmethod(vt_fixed("f64"))

    def verify_(self) -> None:
        (n, k), (yr, yc) = shape_of(self.lhs.type), shape_of(self.rhs.type)
        if (_known(k, yr) and k != yr) or (_known(n, yc) and n != yc):
            raise _shape_mismatch(self, self.lhs.type, self.rhs.type, "X must be n x k and Y k x n")


@irdl_op_definition
class MatMulChainOp(DaphneOp):
    """`A1 @ A2 @ ... @ Ak` whose order the kernel decides at run time from the actual shapes (built by
    `reorder-matmul-chains` for a chain with a shape unknown at compile time; runtime/kernels/matmul_chain.py).
    `transposed` marks the factors read transposed (the `t(X)` of a `t(X) @ X`)."""

    name = "daphne.matMulChain"
    factors = var_operand_def(MATRIX)
    transposed = prop_def(ArrayAttr[IntAttr])
    res = result_def()
    traits = traits_def(Pure())
    DT_RULE: ClassVar = "mat"

    def __init__(self, factors: Sequence[SSAValue], transposed: Sequence[bool]):
        props = {"transposed": ArrayAttr([IntAttr(int(t)) for t in transposed])}
        super().__init__(operands=[list(factors)], result_types=[UNKNOWN], properties=props)

    def flags(self) -> list[bool]:
        return [bool(a.data) for a in self.transposed.data]

    @staticmethod
    def _shape(op: MatMulChainOp) -> Shape:
        flags = op.flags()
        first, last = shape_of(op.factors[0].type), shape_of(op.factors[-1].type)
        rows = first[1] if flags[0] else first[0]
        cols = last[0] if flags[-1] else last[1]
        return (rows, cols)

    SHAPE: ClassVar = staticmethod(_shape)

    def verify_(self) -> None:
        if len(self.factors) < 2 or len(self.transposed.data) != len(self.factors):
            raise VerifyException(f"{self.name}: needs at least two factors and one flag per factor")


@irdl_op_definition
class SolveOp(BinaryDaphneOp):
    """`solve(A, b)`: x with A @ x = b for square A (n x n) and b (n x 1)."""

    name = "daphne.solve"
    lhs = operand_def(MATRIX)
    rhs = operand_def(MATRIX)
    ROLES: ClassVar = {"lhs": "A", "rhs": "b"}
    DT_RULE: ClassVar = "mat"
    SHAPE: ClassVar = staticmethod(lambda op: (shape_of(op.lhs.type)[0], 1))

    def verify_(self) -> None:
        a, b = self.lhs.type, self.rhs.type
        vt = vt_from_args([vt_name(a), vt_name(b)])
        if vt is not None and not is_float_vt(vt):
            raise VerifyException(f"{self.name}: A and b must be matrices of f32 or f64, got value type {vt}")
        (ar, ac), (br, bc) = shape_of(a), shape_of(b)
        if (_known(ar, ac) and ar != ac) or (_known(ar, br) and ar != br) or (bc >= 0 and bc != 1):
            raise _shape_mismatch(self, a, b, "A must be n x n and b n x 1")


# --- matrix decomposition ------------------------------------------------------------------------------------------


@irdl_op_definition
class EigenOp(DaphneOp):
    """`eigen(arg)`: eigenvalues (n x 1) and eigenvectors (n x n, one per column) of a symmetric matrix."""

    name = "daphne.eigenCal"
    arg = operand_def(MATRIX)
    eigen_values = result_def()
    eigen_vectors = result_def()
    traits = traits_def(Pure())

    def infer(self) -> tuple[Attribute, ...]:
        vt = vt_name(self.arg.type)
        n = shape_of(self.arg.type)[0]
        return (_mat(vt, n, 1), _mat(vt, n, n))

    def verify_(self) -> None:
        need_float(self, self.arg.type)
        _check_square(self, self.arg.type)


# --- deep neural networks --------------------------------------------------------------------------------------------


def _out_extent(img: SSAValue, win: SSAValue, pad: SSAValue, stride: SSAValue) -> int:
    """(img + 2 * pad - win) / stride + 1 for constant operands, -1 otherwise."""
    vals = [_const_int(v) for v in (img, win, pad, stride)]
    if any(v is None or v < 0 for v in vals):
        return -1
    i, w, p, s = vals  # type: ignore[misc]
    if s == 0 or i + 2 * p < w:
        return -1
    return (i + 2 * p - w) // s + 1


class _DnnOp(DaphneOp):
    """DNN ops: their data arguments (declared `MATRIX`) are f32 or f64 matrices."""

    traits = traits_def(Pure())
    ROLES: ClassVar = dict.fromkeys(
        ("input", "filter", "bias", "gamma", "beta", "ema_mean", "ema_var", "weights", "dout", "mean", "inv_var"),
        "every data argument",
    )

    def _check_float_inputs(self, n: int) -> None:
        for v in self.operands[:n]:
            need_float(self, v.type, "every data argument")


@irdl_op_definition
class Conv2DForwardOp(_DnnOp):
    """`conv2d(input, filter, numImages, numChannels, imgHeight, imgWidth, filterHeight, filterWidth, strideHeight,
    strideWidth, paddingHeight, paddingWidth[, bias])`: output (N x F*P*Q), P and Q. Without `bias`, DAPHNE's
    builtin passes the filter as the bias (its first F values are added per filter)."""

    name = "daphne.Convolution_Forward"
    input = operand_def(MATRIX)
    filter = operand_def(MATRIX)
    bias = operand_def(MATRIX)
    batch = operand_def()
    channels = operand_def()
    img_h = operand_def()
    img_w = operand_def()
    filter_h = operand_def()
    filter_w = operand_def()
    stride_h = operand_def()
    stride_w = operand_def()
    pad_h = operand_def()
    pad_w = operand_def()
    output = result_def()
    out_h = result_def()
    out_w = result_def()

    def infer(self) -> tuple[Attribute, ...]:
        p = _out_extent(self.img_h, self.filter_h, self.pad_h, self.stride_h)
        q = _out_extent(self.img_w, self.filter_w, self.pad_w, self.stride_w)
        f = shape_of(self.filter.type)[0]
        cols = f * p * q if min(f, p, q) >= 0 else -1
        return (_mat(vt_name(self.input.type), shape_of(self.input.type)[0], cols), INDEX, INDEX)

    def verify_(self) -> None:
        self._check_float_inputs(3)


class PoolForwardOp(_DnnOp):
    """`avg_pool2d` / `max_pool2d`: output (N x C*P*Q), P and Q."""

    input = operand_def(MATRIX)
    batch = operand_def()
    channels = operand_def()
    img_h = operand_def()
    img_w = operand_def()
    pool_h = operand_def()
    pool_w = operand_def()
    stride_h = operand_def()
    stride_w = operand_def()
    pad_h = operand_def()
    pad_w = operand_def()
    output = result_def()
    out_h = result_def()
    out_w = result_def()

    def infer(self) -> tuple[Attribute, ...]:
        # DAPHNE's Pooling.cpp computes P with strideWidth and Q with strideHeight.
        p = _out_extent(self.img_h, self.pool_h, self.pad_h, self.stride_w)
        q = _out_extent(self.img_w, self.pool_w, self.pad_w, self.stride_h)
        c = _const_dim(self.channels)
        cols = c * p * q if min(c, p, q) >= 0 else -1
        return (_mat(vt_name(self.input.type), shape_of(self.input.type)[0], cols), INDEX, INDEX)

    def verify_(self) -> None:
        self._check_float_inputs(1)


@irdl_op_definition
class AvgPoolForwardOp(PoolForwardOp):
    name = "daphne.NN_Avg_Forward"


@irdl_op_definition
class MaxPoolForwardOp(PoolForwardOp):
    name = "daphne.NN_Max_Forward"


class _SameAsInputDnnOp(_DnnOp):
    """DNN ops whose result has the type and shape of their first operand."""

    N_DATA: ClassVar[int]

    def infer(self) -> tuple[Attribute, ...]:
        t = self.operands[0].type
        return (_mat(vt_name(t), *shape_of(t)),)

    def verify_(self) -> None:
        self._check_float_inputs(self.N_DATA)


@irdl_op_definition
class BatchNorm2DInferenceForwardOp(_SameAsInputDnnOp):
    """`batch_norm2d(inputData, gamma, beta, emaMean, emaVar, eps)` (inference)."""

    name = "daphne.BatchNorm_Forward"
    input = operand_def(MATRIX)
    gamma = operand_def(MATRIX)
    beta = operand_def(MATRIX)
    ema_mean = operand_def(MATRIX)
    ema_var = operand_def(MATRIX)
    eps = operand_def()
    res = result_def()
    N_DATA: ClassVar = 5


@irdl_op_definition
class BiasAddOp(_SameAsInputDnnOp):
    """`biasAdd(input, bias)`."""

    name = "daphne.biasAdd"
    input = operand_def(MATRIX)
    bias = operand_def(MATRIX)
    res = result_def()
    N_DATA: ClassVar = 2


@irdl_op_definition
class ReluForwardOp(_SameAsInputDnnOp):
    name = "daphne.NN_Relu_Forward"
    input = operand_def(MATRIX)
    res = result_def()
    N_DATA: ClassVar = 1


@irdl_op_definition
class SoftmaxOp(_SameAsInputDnnOp):
    name = "daphne.softmax"
    input = operand_def(MATRIX)
    res = result_def()
    N_DATA: ClassVar = 1


@irdl_op_definition
class AffineForwardOp(_DnnOp):
    """`affine(inputData, weightData, biasData)`: inputData @ weightData + biasData (a 1 x m row)."""

    name = "daphne.NN_Affine_Forward"
    input = operand_def(MATRIX)
    weights = operand_def(MATRIX)
    bias = operand_def(MATRIX)
    res = result_def()

    def infer(self) -> tuple[Attribute, ...]:
        return (_mat(vt_name(self.input.type), shape_of(self.input.type)[0], shape_of(self.weights.type)[1]),)

    def verify_(self) -> None:
        self._check_float_inputs(3)
        it, wt = self.input.type, self.weights.type
        if is_matrix(it) and is_matrix(wt) and _known(it.shape[1], wt.shape[0]) and it.shape[1] != wt.shape[0]:
            raise _shape_mismatch(self, it, wt, "#cols of inputData must equal #rows of weightData")


def _const_product(*vals: SSAValue) -> int:
    """The product of constant sizes, -1 if one is unknown."""
    dims = [_const_dim(v) for v in vals]
    return -1 if min(dims) < 0 else math.prod(dims)


class _ConvBackwardOp(_DnnOp):
    """`conv2d_backward_filter` / `conv2d_backward_data`: a data matrix, the gradient of conv2d's output, then
    strideH, strideW, padH, padW, inputBatchSize, inputNumChannels, inputH, inputW, filterNumFilters,
    filterNumChannels, filterH, filterW (DAPHNE's DaphneDSLBuiltins.cpp and DaphneOps.td)."""

    dout = operand_def(MATRIX)
    stride_h = operand_def()
    stride_w = operand_def()
    pad_h = operand_def()
    pad_w = operand_def()
    batch = operand_def()
    channels = operand_def()
    img_h = operand_def()
    img_w = operand_def()
    num_filters = operand_def()
    filter_channels = operand_def()
    filter_h = operand_def()
    filter_w = operand_def()
    res = result_def()

    def verify_(self) -> None:
        self._check_float_inputs(2)


@irdl_op_definition
class Conv2DBackwardFilterOp(_ConvBackwardOp):
    """`conv2d_backward_filter(input, output, ...)`: d loss / d filter, filterNumFilters x
    filterNumChannels*filterH*filterW, in the value type of `output` (the gradient of conv2d's output)."""

    name = "daphne.conv2DBackwardFilter"
    input = operand_def(MATRIX)

    def infer(self) -> tuple[Attribute, ...]:
        rows = _const_dim(self.num_filters)
        cols = _const_product(self.filter_channels, self.filter_h, self.filter_w)
        return (_mat(vt_name(self.dout.type), rows, cols),)


@irdl_op_definition
class Conv2DBackwardDataOp(_ConvBackwardOp):
    """`conv2d_backward_data(filter, output, ...)`: d loss / d input, inputBatchSize x
    inputNumChannels*inputH*inputW, in the value type of `output`."""

    name = "daphne.conv2DBackwardData"
    filter = operand_def(MATRIX)

    def infer(self) -> tuple[Attribute, ...]:
        rows = _const_dim(self.batch)
        return (_mat(vt_name(self.dout.type), rows, _const_product(self.channels, self.img_h, self.img_w)),)


class PoolBackwardOp(_DnnOp):
    """`avg_pool2d_backward` / `max_pool2d_backward(input, dOut, batchSize, numChannels, imgH, imgW, poolH, poolW,
    strideH, strideW, padH, padW)`: d loss / d input, batchSize x numChannels*imgH*imgW, in dOut's value type."""

    input = operand_def(MATRIX)
    dout = operand_def(MATRIX)
    batch = operand_def()
    channels = operand_def()
    img_h = operand_def()
    img_w = operand_def()
    pool_h = operand_def()
    pool_w = operand_def()
    stride_h = operand_def()
    stride_w = operand_def()
    pad_h = operand_def()
    pad_w = operand_def()
    res = result_def()

    def infer(self) -> tuple[Attribute, ...]:
        rows = _const_dim(self.batch)
        return (_mat(vt_name(self.dout.type), rows, _const_product(self.channels, self.img_h, self.img_w)),)

    def verify_(self) -> None:
        self._check_float_inputs(2)


@irdl_op_definition
class AvgPoolBackwardOp(PoolBackwardOp):
    name = "daphne.avgPoolBackward"


@irdl_op_definition
class MaxPoolBackwardOp(PoolBackwardOp):
    name = "daphne.maxPoolBackward"


@irdl_op_definition
class BatchNorm2DBackwardOp(_DnnOp):
    """`dX, dGamma, dBeta = batch_norm2d_backward(mean, invVar, input, dout, gamma, eps)`: the gradients of
    training-mode batch normalisation; dX has dout's shape, dGamma and dBeta gamma's (one row per channel)."""

    name = "daphne.batchNorm2DBackward"
    mean = operand_def(MATRIX)
    inv_var = operand_def(MATRIX)
    input = operand_def(MATRIX)
    dout = operand_def(MATRIX)
    gamma = operand_def(MATRIX)
    eps = operand_def()
    d_x = result_def()
    d_gamma = result_def()
    d_beta = result_def()

    def infer(self) -> tuple[Attribute, ...]:
        vt = vt_name(self.dout.type)
        return (
            _mat(vt, *shape_of(self.dout.type)),
            _mat(vt, shape_of(self.gamma.type)[0], 1),
            _mat(vt, shape_of(self.gamma.type)[0], 1),
        )

    def verify_(self) -> None:
        self._check_float_inputs(5)


# --- other matrix operations ---------------------------------------------------------------------------------------


@irdl_op_definition
class DiagVectorOp(UnaryDaphneOp):
    """`diagVector(arg)`: the diagonal of a square matrix as an n x 1 column."""

    name = "daphne.diagVector"
    arg = operand_def(MATRIX)
    VT_RULE: ClassVar = staticmethod(vt_from_first)
    DT_RULE: ClassVar = "mat"
    SHAPE: ClassVar = staticmethod(shape_row_agg)

    def verify_(self) -> None:
        _check_square(self, self.arg.type)


@irdl_op_definition
class TriOp(DaphneOp):
    """`lowerTri(arg, diag, values)` / `upperTri(...)`, distinguished by the constant operand `upper`."""

    name = "daphne.tri"
    arg = operand_def(MATRIX)
    upper = operand_def()
    diag = operand_def()
    values = operand_def()
    res = result_def()
    traits = traits_def(Pure())
    VT_OPERANDS: ClassVar = 1
    DT_RULE: ClassVar = "mat"
    SHAPE: ClassVar = staticmethod(shape_from_arg)

    def verify_(self) -> None:
        _check_square(self, self.arg.type)


@irdl_op_definition
class ReplaceOp(DaphneOp):
    """`replace(arg, pattern, replacement)`: every element equal to `pattern` (NaN matches NaN) replaced."""

    name = "daphne.replace"
    arg = operand_def(MATRIX)
    pattern = operand_def(SCALAR)
    replacement = operand_def(SCALAR)
    res = result_def()
    traits = traits_def(Pure())
    ROLES: ClassVar = {"pattern": "the pattern", "replacement": "the replacement"}
    DT_RULE: ClassVar = "mat"
    SHAPE: ClassVar = staticmethod(shape_from_arg)


@irdl_op_definition
class CTableOp(DaphneOp):
    """`ctable(ys, xs[, weight][, numRows, numCols])`: a contingency table; the weight's type is the result's."""

    name = "daphne.ctable"
    lhs = operand_def(MATRIX)
    rhs = operand_def(MATRIX)
    weight = operand_def(SCALAR)
    num_rows = operand_def()
    num_cols = operand_def()
    res = result_def()
    traits = traits_def(Pure())
    ROLES: ClassVar = {"lhs": "ys", "rhs": "xs", "weight": "the weight"}

    def infer(self) -> tuple[Attribute, ...]:
        r, c = _const_int(self.num_rows), _const_int(self.num_cols)
        rows, cols = (d if d is not None and d >= 0 else -1 for d in (r, c))
        return (_mat(vt_name(self.weight.type), rows, cols),)

    def verify_(self) -> None:
        (lr, lc), (rr, rc) = shape_of(self.lhs.type), shape_of(self.rhs.type)
        if (lc >= 0 and lc != 1) or (rc >= 0 and rc != 1) or (_known(lr, rr) and lr != rr):
            raise _shape_mismatch(self, self.lhs.type, self.rhs.type, "ys and xs must be columns of equal length")


# --- conversions and preprocessing ------------------------------------------------------------------------------------


@irdl_op_definition
class QuantizeOp(DaphneOp):
    """`quantize(arg, min, max)`: min/max quantization of an f32 matrix to ui8."""

    name = "daphne.quantize"
    arg = operand_def(MATRIX)
    min = operand_def(SCALAR)
    max = operand_def(SCALAR)
    res = result_def()
    traits = traits_def(Pure())

    def infer(self) -> tuple[Attribute, ...]:
        return (_mat("ui8", *shape_of(self.arg.type)),)

    def verify_(self) -> None:
        need_float(self, self.arg.type)


@irdl_op_definition
class OneHotOp(BinaryDaphneOp):
    """`oneHot(arg, info)`: one-hot encoding per column as described by the 1 x m si64 row `info`."""

    name = "daphne.oneHot"
    lhs = operand_def(MATRIX)
    rhs = operand_def(MATRIX)
    ROLES: ClassVar = {"lhs": "the argument", "rhs": "info"}
    DT_RULE: ClassVar = "mat"
    VT_OPERANDS: ClassVar = 1
    SHAPE: ClassVar = staticmethod(lambda op: (shape_of(op.lhs.type)[0], -1))

    def verify_(self) -> None:
        ir, ic = shape_of(self.rhs.type)
        ac = shape_of(self.lhs.type)[1]
        if (ir >= 0 and ir != 1) or (_known(ic, ac) and ic != ac):
            raise _shape_mismatch(self, self.lhs.type, self.rhs.type, "info must be a 1 x m row for an n x m argument")


@irdl_op_definition
class RecodeOp(DaphneOp):
    """`recode(arg, orderPreserving)`: si64 codes (n x 1) and the decoding dictionary (#distinct x 1)."""

    name = "daphne.recode"
    arg = operand_def(MATRIX)
    order_preserving = operand_def()
    res = result_def()
    decode_dict = result_def()
    traits = traits_def(Pure())

    def infer(self) -> tuple[Attribute, ...]:
        t = self.arg.type
        return (_mat("si64", shape_of(t)[0], 1), _mat(vt_name(t), -1, 1))

    def verify_(self) -> None:
        c = shape_of(self.arg.type)[1]
        if c >= 0 and c != 1:
            raise VerifyException(f"{self.name}: the argument must have exactly one column, got {_dims(self.arg.type)}")


@irdl_op_definition
class BinOp(DaphneOp):
    """`bin(arg, numBins[, min, max])`: equi-width bin numbers (starting at 0), same value type as `arg`."""

    name = "daphne.bin"
    arg = operand_def(MATRIX)
    num_bins = operand_def()
    min = operand_def()
    max = operand_def()
    res = result_def()
    traits = traits_def(Pure())
    VT_OPERANDS: ClassVar = 1
    DT_RULE: ClassVar = "mat"
    SHAPE: ClassVar = staticmethod(shape_from_arg)

    def verify_(self) -> None:
        if vt_name(self.arg.type) == "str":
            raise VerifyException(f"{self.name}: the argument must be a numeric matrix, got value type str")


@irdl_op_definition
class SplitStatsOp(DaphneOp):
    """`t(v1) @ outer<kind>(x, thr)`, `t(v2) @ ...`: row r of the p x k result is the product with the r-th vector
    (built by `fuse-split-stats` for the split statistics of decision trees, kernel runtime/kernels/split_stats.py:
    per-row threshold bins, no n x k 0/1 matrix). x and the vectors are n x 1, thr 1 x k; `kind` is the
    comparison (le, lt, ge, gt); the pass builds it for f64 operands only."""

    name = "daphne.splitStats"
    x = operand_def(MATRIX)
    thr = operand_def(MATRIX)
    vs = var_operand_def(MATRIX)
    kind = prop_def(StringAttr)
    res = result_def()
    traits = traits_def(Pure())
    DT_RULE: ClassVar = "mat"
    VT_RULE: ClassVar = staticmethod(vt_fixed("f64"))
    SHAPE: ClassVar = staticmethod(lambda op: (len(op.vs), shape_of(op.thr.type)[1]))

    def __init__(self, x: SSAValue, thr: SSAValue, vs: Sequence[SSAValue], kind: str):
        super().__init__(operands=[x, thr, list(vs)], result_types=[UNKNOWN], properties={"kind": StringAttr(kind)})

    def verify_(self) -> None:
        (n, xc), (tr, _) = shape_of(self.x.type), shape_of(self.thr.type)
        if (xc >= 0 and xc != 1) or (tr >= 0 and tr != 1) or self.kind.data not in ("le", "lt", "ge", "gt"):
            raise _shape_mismatch(self, self.x.type, self.thr.type, "x must be n x 1, thr 1 x k")
        for v in self.vs:
            vr, vc = shape_of(v.type)
            if (_known(n, vr) and n != vr) or (vc >= 0 and vc != 1):
                raise _shape_mismatch(self, self.x.type, v.type, "x and the vectors must be n x 1")


OPS: list[type[Operation]] = [
    DiagMatrixOp, SampleOp, IsSymmetricOp, SparsityOp, *OUTER_OPS.values(), *IDX_OPS.values(), *CUM_OPS.values(),
    ColBindOp, RowBindOp, ReverseOp, OrderOp, EigenOp, Conv2DForwardOp, AvgPoolForwardOp, MaxPoolForwardOp,
    BatchNorm2DInferenceForwardOp, BiasAddOp, ReluForwardOp, SoftmaxOp, AffineForwardOp, Conv2DBackwardFilterOp,
    Conv2DBackwardDataOp, AvgPoolBackwardOp, MaxPoolBackwardOp, BatchNorm2DBackwardOp, DiagVectorOp, TriOp,
    MatMulOp, MatMulChainOp, TraceOfProductOp, SyrkOp, GemvOp, GramVectorOp, WeightedGramVectorOp,
    ResidualGramVectorOp, SolveOp, ReplaceOp, CTableOp, QuantizeOp, OneHotOp, RecodeOp, BinOp, SplitStatsOp,
]  # fmt: skip
"""The ops this module defines, registered in the dialect by dialects/daphne.py."""
