"""Operations of the `daphne` dialect.

Op names follow DAPHNE's IR (`daphne.ewAdd`, `daphne.sumRow`, `daphne.matMul`, ...) and every op is printed in
MLIR's generic form, as DAPHNE's `--explain` output is. Type inference lives beside each op, declared by small
rules in the spirit of DAPHNE's inference traits:

- `VT_RULE`: how the result value type follows from the operands' (`from_args`, `from_args_fp`, ...),
- `DT_RULE`: whether the result is a matrix (`mat`), a scalar (`sca`) or a matrix iff any operand is (`args`),
- `shape`:   how the result's rows/cols follow from the operands.

`infer()` returns the result types; the inference pass applies them and iterates to a fixpoint over control flow.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import ClassVar

from xdsl.dialects.builtin import FloatAttr, IntegerAttr, StringAttr
from xdsl.interfaces import HasFolderInterface
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.traits import ConstantLike, HasCanonicalizationPatternsTrait, Pure
from xdsl.utils.exceptions import VerifyException

from daphnec.dialects.attr_names import MERGE_CAST_ATTR, SCALAR_ROLE_ATTR
from daphnec.dialects.constraints import MATRIX, MATRIX_OR_FRAME, SCALAR, type_error
from daphnec.dialects.errors import CompileError
from daphnec.dialects.folding import evaluate
from daphnec.dialects.frame_labels import is_star, star_positions
from daphnec.dialects.locations import loc_of
from daphnec.dialects.op_kinds import AGGREGATIONS, EW_BINARY, EW_UNARY
from daphnec.dialects.types import (
    BOOL,
    INDEX,
    SI64,
    STR,
    UNKNOWN,
    ColumnType,
    FrameType,
    MatrixType,
    StringType,
    UnknownType,
    frame_label_error,
    frame_width,
    is_matrix,
    is_scalar,
    is_unknown,
    value_type,
    vt_name,
)
from daphnec.dialects.value_types import (
    CPP_NAMES,
    VtRule,
    is_float_vt,
    most_general,
    vt_concat,
    vt_fixed,
    vt_from_args,
    vt_from_first,
)

Shape = tuple[int, int]


# --- inference rules ---------------------------------------------------------------------------------------------


def constant_value(v: SSAValue) -> int | float | str | bool | None:
    """The Python value of an SSA value defined by `daphne.constant`, else None."""
    op = v.owner
    if isinstance(op, ConstantOp):
        return op.python_value()
    return None


class RuleOfKind:
    """The `VT_RULE` of an op family whose kinds have records (`dialects/op_kinds.py`): the rule of the op's
    `KIND`, so the dialect, the kernels and the Python API apply the very same rule."""

    def __init__(self, records: Mapping[str, object]):
        self.records = records

    def __get__(self, obj: object, cls: type) -> VtRule:
        kind = getattr(cls, "KIND", None)
        if kind is None:  # the family's base class
            return vt_from_args
        return self.records[kind].vt_rule  # type: ignore[attr-defined,no-any-return]


def shape_of(t: Attribute) -> Shape:
    return t.shape if isinstance(t, MatrixType) else (-1, -1)


def _const_dim(v: SSAValue) -> int:
    c = constant_value(v)
    return int(c) if isinstance(c, (int, float)) and not isinstance(c, bool) and c >= 0 else -1


def shape_ew_binary(op: DaphneOp) -> Shape:
    lhs, rhs = (o.type for o in op.operands[:2])
    if is_matrix(lhs):
        return shape_of(lhs)
    return shape_of(rhs)


def shape_from_arg(op: DaphneOp) -> Shape:
    return shape_of(op.operands[0].type)


def shape_from_dims(rows_idx: int, cols_idx: int) -> Callable[[DaphneOp], Shape]:
    return lambda op: (_const_dim(op.operands[rows_idx]), _const_dim(op.operands[cols_idx]))


def shape_row_agg(op: DaphneOp) -> Shape:
    return (shape_of(op.operands[0].type)[0], 1)


def shape_col_agg(op: DaphneOp) -> Shape:
    return (1, shape_of(op.operands[0].type)[1])


def shape_unknown(op: DaphneOp) -> Shape:
    return (-1, -1)


# --- base classes ------------------------------------------------------------------------------------------------


class DaphneOp(IRDLOperation):
    """Base of all daphne ops: declarative type inference (see the module docstring)."""

    VT_RULE: ClassVar[VtRule] = staticmethod(vt_from_args)
    DT_RULE: ClassVar[str] = "args"
    SHAPE: ClassVar[Callable[[DaphneOp], Shape]] = staticmethod(shape_unknown)
    VT_OPERANDS: ClassVar[int | None] = None
    """How many leading operands take part in the value-type rule (None = all)."""
    ROLES: ClassVar[dict[str, str]] = {}
    """How error messages name operands, by field name, where dialects/constraints.py's defaults do not fit."""

    def verify(self, verify_nested_ops: bool = True) -> None:
        """IRDL's verification, with DaphneDSL's message for an operand of the wrong data type."""
        try:
            super().verify(verify_nested_ops)
        except VerifyException as e:
            better = type_error(self, self.ROLES)
            if better is None:
                raise
            raise better from e

    def infer(self) -> tuple[Attribute, ...]:
        """Result types from operand types; a rule that cannot decide yet yields Unknown."""
        ops = self.operands if self.VT_OPERANDS is None else self.operands[: self.VT_OPERANDS]
        if any(isinstance(o.type, UnknownType) for o in ops) and self.DT_RULE == "args":
            return (UNKNOWN,)
        vt = self.VT_RULE([vt_name(o.type) for o in ops])
        elem = value_type(vt) if vt is not None else UNKNOWN
        is_mat = self.DT_RULE == "mat" or (self.DT_RULE == "args" and any(is_matrix(o.type) for o in ops))
        if not is_mat:
            return (elem,)
        return (MatrixType(elem, *self.SHAPE(self)),)

    def typed(self) -> DaphneOp:
        """This op with its results typed by `infer()`: for an op a builder or rewrite has just created from typed
        operands, or whose operands a rewrite has just changed (the frontend, the SQL translation, the compiler's
        rewrites; the inference pass re-infers with `compiler.analysis.inference`); returns the op."""
        for r, t in zip(self.results, self.infer()):
            r._type = t  # noqa: SLF001 - xDSL has no public setter (its own rewriters set it the same way)
        return self


class UnaryDaphneOp(DaphneOp):
    arg = operand_def()
    res = result_def()
    traits = traits_def(Pure())

    def __init__(self, arg: SSAValue | Operation, result_type: Attribute = UNKNOWN):
        super().__init__(operands=[arg], result_types=[result_type])


class BinaryDaphneOp(DaphneOp):
    lhs = operand_def()
    rhs = operand_def()
    res = result_def()
    traits = traits_def(Pure())

    def __init__(self, lhs: SSAValue | Operation, rhs: SSAValue | Operation, result_type: Attribute = UNKNOWN):
        super().__init__(operands=[lhs, rhs], result_types=[result_type])


def constant_attr(v: int | float | str | bool, vt: str) -> IntegerAttr | FloatAttr | StringAttr:
    """The attribute of a constant of DAPHNE value type `vt` holding the Python value `v`."""
    if vt == "str":
        return StringAttr(str(v))
    if is_float_vt(vt):
        return FloatAttr(float(v), value_type(vt))  # type: ignore[arg-type]
    return IntegerAttr(int(v), value_type(vt))  # type: ignore[arg-type]


def fold_constants(
    op: Operation, check: Callable[[list[object]], None] | None = None
) -> tuple[IntegerAttr | FloatAttr | StringAttr, ...] | None:
    """`op`'s scalar results on its constant operands, as the compiler's evaluator computes them (see
    dialects/folding.py); `check(values)` may raise the compile errors DAPHNE reports for such constants."""
    if not op.operands or not all(is_scalar(r.type) for r in op.results):
        return None
    args = [constant_value(v) for v in op.operands]
    if any(a is None for a in args):
        return None
    if check is not None:
        check(args)
    values = evaluate(op, args)
    if values is None:
        return None
    return tuple(constant_attr(v, vt_name(r.type)) for v, r in zip(values, op.results))  # type: ignore[arg-type]


# --- constants and casts -----------------------------------------------------------------------------------------


@irdl_op_definition
class ConstantOp(DaphneOp, HasFolderInterface):
    """A scalar literal: integer/bool (`IntegerAttr`), float (`FloatAttr`) or string (`StringAttr`)."""

    name = "daphne.constant"
    value = prop_def(IntegerAttr | FloatAttr | StringAttr)
    res = result_def()
    traits = traits_def(Pure(), ConstantLike())

    def __init__(self, value: IntegerAttr | FloatAttr | StringAttr):
        rt = STR if isinstance(value, StringAttr) else value.type
        super().__init__(properties={"value": value}, result_types=[rt])

    @staticmethod
    def of(v: int | float | str | bool, vt: str) -> ConstantOp:
        """Build a constant of DAPHNE value type `vt` from a Python value."""
        return ConstantOp(constant_attr(v, vt))

    def python_value(self) -> int | float | str | bool:
        v = self.value
        if isinstance(v, StringAttr):
            return v.data
        if isinstance(v, FloatAttr):
            return v.value.data
        return bool(v.value.data) if v.type == BOOL else v.value.data

    def infer(self) -> tuple[Attribute, ...]:
        return (self.res.type,)

    def fold(self) -> Sequence[SSAValue | Attribute]:
        return (self.value,)

    def verify_(self) -> None:
        t = self.res.type
        if isinstance(self.value, StringAttr) != isinstance(t, StringType):
            raise VerifyException(f"daphne.constant: value {self.value} does not match result type {t}")
        if not isinstance(self.value, StringAttr) and self.value.type != t:
            raise VerifyException(f"daphne.constant: value type {self.value.type} differs from result type {t}")


@irdl_op_definition
class CastOp(DaphneOp, HasFolderInterface):
    """`as.T(x)`: change value type and/or data type. The properties keep the requested target so that a cast
    built before its argument's type is known can be completed by inference."""

    name = "daphne.cast"
    arg = operand_def()
    res = result_def()
    target_vt = opt_prop_def(StringAttr)
    target_dt = opt_prop_def(StringAttr)
    traits = traits_def(Pure())

    def __init__(self, arg: SSAValue | Operation, vt: str | None = None, dt: str | None = None):
        props = {"target_vt": StringAttr(vt) if vt else None, "target_dt": StringAttr(dt) if dt else None}
        super().__init__(operands=[arg], result_types=[UNKNOWN], properties=props)
        self.res._type = self.infer()[0]

    def infer(self) -> tuple[Attribute, ...]:
        src = self.arg.type
        vt = self.target_vt.data if self.target_vt else vt_name(src)
        dt = self.target_dt.data if self.target_dt else None
        if dt == "column" or isinstance(src, ColumnType):
            return (_column_cast_result(src, vt, dt),)
        if isinstance(src, FrameType) or (dt == "frame" and not isinstance(src, UnknownType)):
            return (_frame_cast_result(src, vt, dt),)
        if isinstance(src, UnknownType) and dt is None:
            return (UNKNOWN,)
        elem = value_type(vt) if vt else UNKNOWN
        if dt == "matrix" or (dt is None and is_matrix(src)):
            rows, cols = shape_of(src) if is_matrix(src) else (1, 1)
            rep = src.representation.data if is_matrix(src) else "dense"
            return (MatrixType(elem, rows, cols, rep),)
        return (elem,)

    def fold(self) -> Sequence[SSAValue | Attribute] | None:
        """A cast to the value's own type is the value (Unknown to Unknown is not: nothing is inferred yet); a
        constant scalar is cast as the cast kernel does."""
        if self.arg.type == self.res.type and not is_unknown(self.arg.type):
            return (self.arg,)
        return fold_constants(self)

    def verify_(self) -> None:
        src, dt = self.arg.type, self.target_dt.data if self.target_dt else None
        role = self.attributes.get(SCALAR_ROLE_ATTR)
        if isinstance(role, StringAttr) and is_matrix(src) and dt == "scalar":
            rows, cols = shape_of(src)
            if rows >= 0 and cols >= 0 and (rows, cols) != (1, 1):
                raise VerifyException(
                    f"{role.data} must be a scalar (or a 1x1 matrix), but it is a {rows}x{cols} matrix"
                )
        if not isinstance(src, FrameType) or MERGE_CAST_ATTR in self.attributes:
            return
        vts = [vt_name(t) for t in src.column_types.data]
        if dt in ("matrix", "scalar") and not self.target_vt and all(vts) and len(set(vts)) > 1:
            raise VerifyException(
                f"as.{dt}: the frame's columns have different value types ({', '.join(vts)}); "  # type: ignore[arg-type]
                f"give the {dt}'s value type, e.g. as.{dt}<{most_general(*vts)}>(...)"
            )  # type: ignore[arg-type]
        if dt is None and self.target_vt:
            raise VerifyException(
                f"casting a frame to value type {self.target_vt.data} is not supported; cast it to a matrix, "
                f"e.g. as.matrix<{self.target_vt.data}>(...)"
            )


def _column_cast_result(src: Attribute, vt: str | None, dt: str | None) -> Attribute:
    """Casts of the columnar rewrite (RewriteToColumnarOpsPass.cpp): a single-column frame or n x 1 matrix to a
    column, a column to an n x 1 matrix, or a single-element column to a scalar."""
    if isinstance(src, FrameType) and vt is None:
        cts = src.column_types.data
        vt = vt_name(cts[0]) if len(cts) == 1 else None
    elem = value_type(vt) if vt else UNKNOWN
    rows = src.rows.data if isinstance(src, (FrameType, ColumnType)) else shape_of(src)[0]
    if dt == "matrix":
        return MatrixType(elem, rows, 1)
    if dt == "scalar":
        return elem
    return ColumnType(elem, rows)


def _frame_cast_result(src: Attribute, vt: str | None, dt: str | None) -> Attribute:
    """Result type of a cast from or to a frame: frame <-> matrix (one column per matrix column, labelled
    `col_0`, ...), 1x1 frame <-> scalar, or the frame itself."""
    if isinstance(src, FrameType):
        ctypes = {vt_name(t) for t in src.column_types.data}
        if dt in ("matrix", "scalar"):  # the requested value type, else the columns' common one
            vt = vt or (ctypes.pop() if len(ctypes) == 1 else None)
        if dt == "matrix":
            return MatrixType(value_type(vt) if vt else UNKNOWN, src.rows.data, frame_width(src))
        if dt == "scalar":
            return value_type(vt) if vt else UNKNOWN
        return src if dt == "frame" or vt is None else UNKNOWN  # as.f64(F) is an error (see verify_)
    elem = value_type(vt) if vt else UNKNOWN
    if is_matrix(src):
        rows, cols = shape_of(src)
        return FrameType([elem] * cols, rows, [f"col_{i}" for i in range(cols)]) if cols >= 0 else UNKNOWN
    return FrameType([elem], 1, ["col_0"]) if is_scalar(src) else UNKNOWN


# --- element-wise binary -----------------------------------------------------------------------------------------


class EwBinaryOp(BinaryDaphneOp, HasFolderInterface):
    """Element-wise binary op on scalars/matrices with matrix-scalar and row/column broadcasting."""

    KIND: ClassVar[str]
    VT_RULE: ClassVar = RuleOfKind(EW_BINARY)
    SHAPE: ClassVar = staticmethod(shape_ew_binary)
    UNIT: ClassVar[int | None] = None
    """The constant u with `x op u == x` (and `u op x == x` if `COMMUTATIVE`): folded away where the result has
    x's type."""
    COMMUTATIVE: ClassVar[bool] = False

    def fold(self) -> Sequence[SSAValue | Attribute] | None:
        same = self._unit_operand()
        return (same,) if same is not None else fold_constants(self, self._check_constants)

    def _unit_operand(self) -> SSAValue | None:
        if self.UNIT is None:
            return None
        pairs = [(self.lhs, self.rhs), (self.rhs, self.lhs)] if self.COMMUTATIVE else [(self.lhs, self.rhs)]
        for x, c in pairs:
            cv = constant_value(c)
            if cv is not None and not isinstance(cv, (bool, str)) and cv == self.UNIT and x.type == self.res.type:
                return x
        return None

    def _check_constants(self, args: list[object]) -> None:
        """DAPHNE reports an integer division or modulo by a constant zero when it folds constants."""
        if self.KIND in ("div", "mod") and args[1] == 0 and not is_float_vt(vt_name(self.res.type) or ""):
            what = "division" if self.KIND == "div" else "modulo"
            raise CompileError(f"integer {what} by zero in a constant expression", loc_of(self))

    def verify_(self) -> None:
        lt, rt = self.lhs.type, self.rhs.type
        if is_matrix(lt) and is_matrix(rt):
            (lr, lc), (rr, rc) = lt.shape, rt.shape
            ok = lambda a, b: a < 0 or b < 0 or a == b or b == 1  # noqa: E731 - rhs broadcasts (DAPHNE)
            if not (ok(lr, rr) and ok(lc, rc)):
                raise VerifyException(f"{self.name}: shape mismatch: lhs {lr}x{lc}, rhs {rr}x{rc}")


class StringAddCanonicalization(HasCanonicalizationPatternsTrait):
    """`ewAdd`'s canonicalization: `StringAddIsConcat`."""

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        return (StringAddIsConcat(),)


@irdl_op_definition
class EwAddOp(EwBinaryOp):
    name = "daphne.ewAdd"
    KIND: ClassVar = "add"
    UNIT: ClassVar = 0
    COMMUTATIVE: ClassVar = True
    traits = traits_def(StringAddCanonicalization())

    def fold(self) -> Sequence[SSAValue | Attribute] | None:
        """A sum of strings is a concatenation (see `StringAddIsConcat`), never `x + 0`."""
        return fold_constants(self) if isinstance(self.res.type, StringType) else super().fold()


@irdl_op_definition
class EwSubOp(EwBinaryOp):
    name = "daphne.ewSub"
    KIND: ClassVar = "sub"
    UNIT: ClassVar = 0


@irdl_op_definition
class EwMulOp(EwBinaryOp):
    name = "daphne.ewMul"
    KIND: ClassVar = "mul"
    UNIT: ClassVar = 1
    COMMUTATIVE: ClassVar = True


@irdl_op_definition
class EwDivOp(EwBinaryOp):
    """`lhs / rhs`; integer division truncates (by a constant zero it is a compile error, see `_check_constants`)."""

    name = "daphne.ewDiv"
    KIND: ClassVar = "div"


@irdl_op_definition
class EwPowOp(EwBinaryOp):
    name = "daphne.ewPow"
    KIND: ClassVar = "pow"


@irdl_op_definition
class EwModOp(EwBinaryOp):
    name = "daphne.ewMod"
    KIND: ClassVar = "mod"


@irdl_op_definition
class EwLogOp(EwBinaryOp):
    """`log(lhs, rhs)`: the logarithm of lhs to base rhs (a float)."""

    name = "daphne.ewLog"
    KIND: ClassVar = "log"


@irdl_op_definition
class EwMinOp(EwBinaryOp):
    name = "daphne.ewMin"
    KIND: ClassVar = "min"


@irdl_op_definition
class EwMaxOp(EwBinaryOp):
    name = "daphne.ewMax"
    KIND: ClassVar = "max"


@irdl_op_definition
class EwAndOp(EwBinaryOp):
    name = "daphne.ewAnd"
    KIND: ClassVar = "and"


@irdl_op_definition
class EwOrOp(EwBinaryOp):
    name = "daphne.ewOr"
    KIND: ClassVar = "or"


@irdl_op_definition
class EwXorOp(EwBinaryOp):
    name = "daphne.ewXor"
    KIND: ClassVar = "xor"


@irdl_op_definition
class EwBitwiseAndOp(EwBinaryOp):
    name = "daphne.ewBitwiseAnd"
    KIND: ClassVar = "bitwiseAnd"


@irdl_op_definition
class EwConcatOp(EwBinaryOp):
    """`concat(lhs, rhs)`, and `+` on strings (see `StringAddIsConcat`)."""

    name = "daphne.ewConcat"
    KIND: ClassVar = "concat"


@irdl_op_definition
class EwEqOp(EwBinaryOp):
    name = "daphne.ewEq"
    KIND: ClassVar = "eq"


@irdl_op_definition
class EwNeqOp(EwBinaryOp):
    name = "daphne.ewNeq"
    KIND: ClassVar = "neq"


@irdl_op_definition
class EwLtOp(EwBinaryOp):
    name = "daphne.ewLt"
    KIND: ClassVar = "lt"


@irdl_op_definition
class EwLeOp(EwBinaryOp):
    name = "daphne.ewLe"
    KIND: ClassVar = "le"


@irdl_op_definition
class EwGtOp(EwBinaryOp):
    name = "daphne.ewGt"
    KIND: ClassVar = "gt"


@irdl_op_definition
class EwGeOp(EwBinaryOp):
    name = "daphne.ewGe"
    KIND: ClassVar = "ge"


class StringAddIsConcat(RewritePattern):
    """`+` on strings is DaphneDSL's concatenation: `ewAdd` with a str result becomes `ewConcat`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: EwAddOp, rewriter: PatternRewriter) -> None:
        if isinstance(op.res.type, StringType):
            concat = EwConcatOp(op.lhs, op.rhs, op.res.type)
            concat.location = op.location
            rewriter.replace(op, concat)


EW_BINARY_OPS: dict[str, type[EwBinaryOp]] = {
    c.KIND: c
    for c in (
        EwAddOp, EwSubOp, EwMulOp, EwDivOp, EwPowOp, EwModOp, EwLogOp, EwMinOp, EwMaxOp, EwAndOp, EwOrOp,
        EwXorOp, EwBitwiseAndOp, EwConcatOp, EwEqOp, EwNeqOp, EwLtOp, EwLeOp, EwGtOp, EwGeOp,
    )
}  # fmt: skip
"""DaphneDSL's element-wise binary ops by kind (`add`, `lt`, ...), the name their kernels know them by."""


# --- element-wise unary ------------------------------------------------------------------------------------------


class EwUnaryOp(UnaryDaphneOp, HasFolderInterface):
    """Element-wise unary op; math functions (`exp`, `sqrt`, trig) produce floats from integers like DAPHNE."""

    KIND: ClassVar[str]
    VT_RULE: ClassVar = RuleOfKind(EW_UNARY)
    SHAPE: ClassVar = staticmethod(shape_from_arg)

    def fold(self) -> Sequence[SSAValue | Attribute] | None:
        return fold_constants(self)


@irdl_op_definition
class EwMinusOp(EwUnaryOp):
    name = "daphne.ewMinus"
    KIND: ClassVar = "minus"


@irdl_op_definition
class EwAbsOp(EwUnaryOp):
    name = "daphne.ewAbs"
    KIND: ClassVar = "abs"


@irdl_op_definition
class EwSignOp(EwUnaryOp):
    """`sign(x)`: -1, 0 or 1 (NaN for NaN)."""

    name = "daphne.ewSign"
    KIND: ClassVar = "sign"


@irdl_op_definition
class EwRoundOp(EwUnaryOp):
    """`round(x)`: half away from zero."""

    name = "daphne.ewRound"
    KIND: ClassVar = "round"


@irdl_op_definition
class EwFloorOp(EwUnaryOp):
    name = "daphne.ewFloor"
    KIND: ClassVar = "floor"


@irdl_op_definition
class EwCeilOp(EwUnaryOp):
    name = "daphne.ewCeil"
    KIND: ClassVar = "ceil"


@irdl_op_definition
class EwIsNanOp(EwUnaryOp):
    """`isNan(x)`: 1 for NaN, else 0 (in x's value type; of strings, which are never NaN, an si64 0 like the result
    of comparing strings)."""

    name = "daphne.ewIsNan"
    KIND: ClassVar = "isNan"


@irdl_op_definition
class EwLowerOp(EwUnaryOp):
    """`lower(s)`: ASCII lower case."""

    name = "daphne.lower"
    KIND: ClassVar = "lower"


@irdl_op_definition
class EwUpperOp(EwUnaryOp):
    """`upper(s)`: ASCII upper case."""

    name = "daphne.upper"
    KIND: ClassVar = "upper"


@irdl_op_definition
class EwExpOp(EwUnaryOp):
    name = "daphne.ewExp"
    KIND: ClassVar = "exp"


@irdl_op_definition
class EwLnOp(EwUnaryOp):
    name = "daphne.ewLn"
    KIND: ClassVar = "ln"


@irdl_op_definition
class EwSqrtOp(EwUnaryOp):
    name = "daphne.ewSqrt"
    KIND: ClassVar = "sqrt"


@irdl_op_definition
class EwSinOp(EwUnaryOp):
    name = "daphne.ewSin"
    KIND: ClassVar = "sin"


@irdl_op_definition
class EwCosOp(EwUnaryOp):
    name = "daphne.ewCos"
    KIND: ClassVar = "cos"


@irdl_op_definition
class EwTanOp(EwUnaryOp):
    name = "daphne.ewTan"
    KIND: ClassVar = "tan"


@irdl_op_definition
class EwSinhOp(EwUnaryOp):
    name = "daphne.ewSinh"
    KIND: ClassVar = "sinh"


@irdl_op_definition
class EwCoshOp(EwUnaryOp):
    name = "daphne.ewCosh"
    KIND: ClassVar = "cosh"


@irdl_op_definition
class EwTanhOp(EwUnaryOp):
    name = "daphne.ewTanh"
    KIND: ClassVar = "tanh"


@irdl_op_definition
class EwAsinOp(EwUnaryOp):
    name = "daphne.ewAsin"
    KIND: ClassVar = "asin"


@irdl_op_definition
class EwAcosOp(EwUnaryOp):
    name = "daphne.ewAcos"
    KIND: ClassVar = "acos"


@irdl_op_definition
class EwAtanOp(EwUnaryOp):
    name = "daphne.ewAtan"
    KIND: ClassVar = "atan"


EW_UNARY_OPS: dict[str, type[EwUnaryOp]] = {
    c.KIND: c
    for c in (
        EwMinusOp, EwAbsOp, EwSignOp, EwRoundOp, EwFloorOp, EwCeilOp, EwIsNanOp, EwLowerOp, EwUpperOp, EwExpOp,
        EwLnOp, EwSqrtOp, EwSinOp, EwCosOp, EwTanOp, EwSinhOp, EwCoshOp, EwTanhOp, EwAsinOp, EwAcosOp, EwAtanOp,
    )
}  # fmt: skip
"""DaphneDSL's element-wise unary ops by kind; each kind is also the builtin's name (`sqrt(X)`), except `minus`."""


# --- aggregations --------------------------------------------------------------------------------------------------


class AggOp(UnaryDaphneOp):
    """Full (`sumAll`), row-wise (`sumRow`, n x 1) and column-wise (`sumCol`, 1 x m) aggregations."""

    arg = operand_def(MATRIX_OR_FRAME)
    KIND: ClassVar[str]
    AXIS: ClassVar[str]
    VT_RULE: ClassVar = RuleOfKind(AGGREGATIONS)
    ROLES: ClassVar = {"arg": "the aggregated argument"}


class AllAggOp(AggOp):
    """Aggregation of all cells to a scalar."""

    AXIS: ClassVar = "all"
    DT_RULE: ClassVar = "sca"
    SHAPE: ClassVar = staticmethod(shape_unknown)


class RowAggOp(AggOp):
    """Aggregation of each row (an n x 1 result)."""

    AXIS: ClassVar = "row"
    DT_RULE: ClassVar = "mat"
    SHAPE: ClassVar = staticmethod(shape_row_agg)


class ColAggOp(AggOp):
    """Aggregation of each column (a 1 x m result)."""

    AXIS: ClassVar = "col"
    DT_RULE: ClassVar = "mat"
    SHAPE: ClassVar = staticmethod(shape_col_agg)


@irdl_op_definition
class SumAllOp(AllAggOp):
    name = "daphne.sumAll"
    KIND: ClassVar = "sum"


@irdl_op_definition
class SumRowOp(RowAggOp):
    name = "daphne.sumRow"
    KIND: ClassVar = "sum"


@irdl_op_definition
class SumColOp(ColAggOp):
    name = "daphne.sumCol"
    KIND: ClassVar = "sum"


@irdl_op_definition
class MinAllOp(AllAggOp):
    name = "daphne.minAll"
    KIND: ClassVar = "min"


@irdl_op_definition
class MinRowOp(RowAggOp):
    name = "daphne.minRow"
    KIND: ClassVar = "min"


@irdl_op_definition
class MinColOp(ColAggOp):
    name = "daphne.minCol"
    KIND: ClassVar = "min"


@irdl_op_definition
class MaxAllOp(AllAggOp):
    name = "daphne.maxAll"
    KIND: ClassVar = "max"


@irdl_op_definition
class MaxRowOp(RowAggOp):
    name = "daphne.maxRow"
    KIND: ClassVar = "max"


@irdl_op_definition
class MaxColOp(ColAggOp):
    name = "daphne.maxCol"
    KIND: ClassVar = "max"


@irdl_op_definition
class MeanAllOp(AllAggOp):
    name = "daphne.meanAll"
    KIND: ClassVar = "mean"


@irdl_op_definition
class MeanRowOp(RowAggOp):
    name = "daphne.meanRow"
    KIND: ClassVar = "mean"


@irdl_op_definition
class MeanColOp(ColAggOp):
    name = "daphne.meanCol"
    KIND: ClassVar = "mean"


@irdl_op_definition
class VarAllOp(AllAggOp):
    name = "daphne.varAll"
    KIND: ClassVar = "var"


@irdl_op_definition
class VarRowOp(RowAggOp):
    name = "daphne.varRow"
    KIND: ClassVar = "var"


@irdl_op_definition
class VarColOp(ColAggOp):
    name = "daphne.varCol"
    KIND: ClassVar = "var"


@irdl_op_definition
class StddevAllOp(AllAggOp):
    name = "daphne.stddevAll"
    KIND: ClassVar = "stddev"


@irdl_op_definition
class StddevRowOp(RowAggOp):
    name = "daphne.stddevRow"
    KIND: ClassVar = "stddev"


@irdl_op_definition
class StddevColOp(ColAggOp):
    name = "daphne.stddevCol"
    KIND: ClassVar = "stddev"


AGG_OPS: dict[tuple[str, str], type[AggOp]] = {
    (c.KIND, c.AXIS): c
    for c in (
        SumAllOp, SumRowOp, SumColOp, MinAllOp, MinRowOp, MinColOp, MaxAllOp, MaxRowOp, MaxColOp, MeanAllOp,
        MeanRowOp, MeanColOp, VarAllOp, VarRowOp, VarColOp, StddevAllOp, StddevRowOp, StddevColOp,
    )
}  # fmt: skip
"""Aggregations by (kind, axis): `("sum", "all")` is `sum(X)`, `("mean", "row")` is `mean(X, 0)`."""


# --- data generation and reorganisation ----------------------------------------------------------------------------


@irdl_op_definition
class FillOp(DaphneOp):
    """`fill(value, rows, cols)`."""

    name = "daphne.fill"
    arg = operand_def()
    num_rows = operand_def()
    num_cols = operand_def()
    res = result_def()
    traits = traits_def(Pure())
    VT_OPERANDS: ClassVar = 1
    DT_RULE: ClassVar = "mat"
    SHAPE: ClassVar = staticmethod(shape_from_dims(1, 2))


@irdl_op_definition
class SeqOp(DaphneOp):
    """`seq(from, to, inc)`: an inclusive column vector; the value type is the most general of the three."""

    name = "daphne.seq"
    start = operand_def()
    stop = operand_def()
    inc = operand_def()
    res = result_def()
    traits = traits_def(Pure())
    DT_RULE: ClassVar = "mat"

    @staticmethod
    def _rows(op: DaphneOp) -> Shape:
        vals = [constant_value(o) for o in op.operands]
        if any(not isinstance(v, (int, float)) or isinstance(v, bool) for v in vals):
            return (-1, 1)
        f, t, i = vals  # type: ignore[misc]
        if not all(math.isfinite(v) for v in vals):  # the kernel says which bound is NaN or infinite
            return (-1, 1)
        if i == 0 or (t - f) * i < 0:
            return (0 if i != 0 and (t - f) * i < 0 else -1, 1)
        n = int(abs(t - f) // abs(i)) + 1
        return (n, 1)

    SHAPE: ClassVar = staticmethod(_rows)


@irdl_op_definition
class RandMatrixOp(DaphneOp):
    """`rand(rows, cols, min, max, sparsity, seed)`: the value type is that of min/max."""

    name = "daphne.randMatrix"
    num_rows = operand_def()
    num_cols = operand_def()
    min = operand_def(SCALAR)
    max = operand_def(SCALAR)
    sparsity = operand_def(SCALAR)
    seed = operand_def(SCALAR)
    res = result_def()
    DT_RULE: ClassVar = "mat"
    SHAPE: ClassVar = staticmethod(shape_from_dims(0, 1))

    def infer(self) -> tuple[Attribute, ...]:
        vt = vt_from_args([vt_name(self.min.type), vt_name(self.max.type)])
        return (MatrixType(value_type(vt) if vt else UNKNOWN, *self.SHAPE(self)),)


@irdl_op_definition
class ReshapeOp(DaphneOp):
    name = "daphne.reshape"
    arg = operand_def(MATRIX)
    num_rows = operand_def()
    num_cols = operand_def()
    res = result_def()
    traits = traits_def(Pure())
    VT_OPERANDS: ClassVar = 1
    DT_RULE: ClassVar = "mat"
    SHAPE: ClassVar = staticmethod(shape_from_dims(1, 2))


@irdl_op_definition
class TransposeOp(UnaryDaphneOp):
    name = "daphne.transpose"
    arg = operand_def(MATRIX)
    VT_RULE: ClassVar = staticmethod(vt_from_first)
    DT_RULE: ClassVar = "mat"

    @staticmethod
    def _t(op: DaphneOp) -> Shape:
        r, c = shape_of(op.operands[0].type)
        return (c, r)

    SHAPE: ClassVar = staticmethod(_t)


@irdl_op_definition
class MatrixLiteralOp(DaphneOp):
    """A matrix literal `[a, b, ...](rows, cols)`; elements are scalars, stored row-major."""

    name = "daphne.matrixLiteral"
    elems = var_operand_def()
    num_rows = operand_def()
    num_cols = operand_def()
    res = result_def()
    traits = traits_def(Pure())
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    DT_RULE: ClassVar = "mat"

    def __init__(self, elems: Sequence[SSAValue], rows: SSAValue, cols: SSAValue):
        super().__init__(operands=[elems, rows, cols], result_types=[UNKNOWN])

    def infer(self) -> tuple[Attribute, ...]:
        vt = vt_from_args([vt_name(e.type) for e in self.elems])
        return (MatrixType(value_type(vt) if vt else UNKNOWN, _const_dim(self.num_rows), _const_dim(self.num_cols)),)


@irdl_op_definition
class CreateFrameOp(DaphneOp):
    """A frame from column matrices and string labels (frame literals, `createFrame`)."""

    name = "daphne.createFrame"
    cols = var_operand_def(MATRIX)
    labels = var_operand_def()
    res = result_def()
    traits = traits_def(Pure())
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    ROLES: ClassVar = {"cols": "the columns of a frame"}

    def __init__(self, cols: Sequence[SSAValue], labels: Sequence[SSAValue]):
        super().__init__(operands=[cols, labels], result_types=[UNKNOWN])

    def infer(self) -> tuple[Attribute, ...]:
        names = [constant_value(lbl) for lbl in self.labels]
        labels = [str(n) for n in names] if all(isinstance(n, str) for n in names) else None
        rows = {shape_of(c.type)[0] for c in self.cols}
        nrows = rows.pop() if len(rows) == 1 else -1
        elems = [c.type.element_type if is_matrix(c.type) else UNKNOWN for c in self.cols]
        return (FrameType(elems, nrows, labels),)

    def verify_(self) -> None:
        if len(self.labels) != len(self.cols):
            raise VerifyException(
                f"{self.name}: expects one label per column, got {len(self.labels)} label(s) for "
                f"{len(self.cols)} column(s)"
            )
        for c in self.cols:
            if is_matrix(c.type) and c.type.shape[1] not in (-1, 1):
                r, k = c.type.shape
                raise VerifyException(
                    f"{self.name}: each column must be a single-column matrix, got {'?' if r < 0 else r}x{k}"
                )
        rows = [shape_of(c.type)[0] for c in self.cols if shape_of(c.type)[0] >= 0]
        if len(set(rows)) > 1:
            raise VerifyException(
                f"{self.name}: all columns must have the same number of rows, got {', '.join(map(str, rows))}"
            )


@irdl_op_definition
class CondOp(DaphneOp, HasFolderInterface):
    """The ternary `c ? a : b`; element-wise when `c` is a matrix."""

    name = "daphne.cond"
    cond = operand_def()
    then_val = operand_def()
    else_val = operand_def()
    res = result_def()
    traits = traits_def(Pure())

    def infer(self) -> tuple[Attribute, ...]:
        ct, tt, et = self.cond.type, self.then_val.type, self.else_val.type
        if is_unknown(tt) or is_unknown(et) or is_unknown(ct):
            return (UNKNOWN,)
        vt = most_general(vt_name(tt) or "f64", vt_name(et) or "f64")
        if is_matrix(ct) or is_matrix(tt) or is_matrix(et):
            shape = next(shape_of(t) for t in (ct, tt, et) if is_matrix(t))
            return (MatrixType(value_type(vt), *shape),)
        if not (is_scalar(tt) and is_scalar(et)):
            return (tt,)
        return (value_type(vt),)

    def fold(self) -> Sequence[SSAValue | Attribute] | None:
        return fold_constants(self)


# --- indexing ------------------------------------------------------------------------------------------------------


class _IndexOp(DaphneOp):
    traits = traits_def(Pure())

    def infer(self) -> tuple[Attribute, ...]:
        src = self.operands[0].type
        if isinstance(src, FrameType):
            return (self._frame_result(src),)
        if not is_matrix(src):
            return (UNKNOWN,)
        return (MatrixType(src.element_type, *self.SHAPE(self), src.representation.data),)

    def _frame_result(self, src: FrameType) -> Attribute:
        """Selecting rows keeps a frame's columns and labels."""
        return FrameType(list(src.column_types.data), self.SHAPE(self)[0], src.label_names)


def _frame_bound(v: SSAValue, src: SSAValue, num: type) -> int | None:
    """A constant index bound (floats floored), or the frame's size when the bound is `nrow(F)`/`ncol(F)`, as for
    an omitted upper bound (`F[, 1:]`)."""
    c = constant_value(v)
    if isinstance(c, (int, float)) and not isinstance(c, bool):
        return math.floor(c)
    owner = v.owner
    if isinstance(owner, CastOp):
        owner = owner.arg.owner
    t = src.type
    if isinstance(owner, num) and owner.operands[0] == src and isinstance(t, FrameType):
        n = t.rows.data if num is NumRowsOp else len(t.column_types.data)
        return n if n >= 0 else None
    return None


def _frame_range(lo: int | None, hi: int | None, n: int) -> tuple[int, int] | None:
    """[lo, hi) normalised like the run-time kernel (negative bounds count from the end); None if unknown/bad."""
    if lo is None or hi is None or n < 0:
        return None
    lo, hi = (lo + n if lo < 0 else lo), (hi + n if hi < 0 else hi)
    return (lo, hi) if 0 <= lo <= hi <= n else None


def _const_positions(v: SSAValue) -> list[int] | None:
    """The positions of a matrix literal of constant numbers (floats floored), e.g. `F[, [0, 2]]`."""
    owner = v.owner
    if not isinstance(owner, MatrixLiteralOp):
        return None
    vals = [constant_value(e) for e in owner.elems]
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in vals):
        return None
    return [math.floor(x) for x in vals]  # type: ignore[arg-type]


def _sel_len(sel: SSAValue, lo: SSAValue | None = None) -> int:
    if lo is None:  # a selector operand: a scalar position (one row/col) or a position matrix
        if is_scalar(sel.type):
            return 1
        return shape_of(sel.type)[0]
    lo_v, hi_v = constant_value(lo), constant_value(sel)
    if isinstance(lo_v, int) and isinstance(hi_v, int) and lo_v >= 0 and hi_v >= lo_v:
        return hi_v - lo_v
    return -1


@irdl_op_definition
class SliceRowOp(_IndexOp):
    """`X[lo:hi, ]`: rows in [lo, hi); negative positions count from the end."""

    name = "daphne.sliceRow"
    source = operand_def()
    lower = operand_def()
    upper = operand_def()
    res = result_def()
    SHAPE: ClassVar = staticmethod(lambda op: (_sel_len(op.upper, op.lower), shape_of(op.source.type)[1]))

    def _frame_result(self, src: FrameType) -> Attribute:
        rng = _frame_range(
            _frame_bound(self.lower, self.source, NumRowsOp),
            _frame_bound(self.upper, self.source, NumRowsOp),
            src.rows.data,
        )
        rows = rng[1] - rng[0] if rng is not None else -1
        return FrameType(list(src.column_types.data), rows, src.label_names)


@irdl_op_definition
class SliceColOp(_IndexOp):
    """`X[, lo:hi]`: columns in [lo, hi)."""

    name = "daphne.sliceCol"
    source = operand_def()
    lower = operand_def()
    upper = operand_def()
    res = result_def()
    SHAPE: ClassVar = staticmethod(lambda op: (shape_of(op.source.type)[0], _sel_len(op.upper, op.lower)))

    def _frame_result(self, src: FrameType) -> Attribute:
        cts, names = list(src.column_types.data), src.label_names
        rng = _frame_range(
            _frame_bound(self.lower, self.source, NumColsOp), _frame_bound(self.upper, self.source, NumColsOp), len(cts)
        )
        if rng is None:
            return UNKNOWN
        lo, hi = rng
        return FrameType(cts[lo:hi], src.rows.data, names[lo:hi] if names else None)


@irdl_op_definition
class ExtractRowOp(_IndexOp):
    """`X[i, ]` or `X[positions, ]`: a scalar position or an n x 1 matrix of positions."""

    name = "daphne.extractRow"
    source = operand_def()
    selection = operand_def()
    res = result_def()
    SHAPE: ClassVar = staticmethod(lambda op: (_sel_len(op.selection), shape_of(op.source.type)[1]))


@irdl_op_definition
class ExtractColOp(_IndexOp):
    """`X[, j]` or `X[, positions]`, or a frame column by label `F[, "name"]`."""

    name = "daphne.extractCol"
    source = operand_def()
    selection = operand_def()
    res = result_def()
    SHAPE: ClassVar = staticmethod(lambda op: (shape_of(op.source.type)[0], _sel_len(op.selection)))

    def _frame_result(self, src: FrameType) -> Attribute:
        """A frame column by label or by position(s); labels are inferred like DAPHNE's InferFrameLabels."""
        sel, names, cts = constant_value(self.selection), src.label_names, list(src.column_types.data)
        rows = src.rows.data
        if isinstance(sel, str) and is_star(sel):  # SQL's `t.*` (frame_labels.star_positions)
            pos = star_positions(names, sel) if names is not None else None
            if pos is None:
                return FrameType([], rows, None)
            return FrameType([cts[p] for p in pos], rows, [names[p] for p in pos])  # type: ignore[index]
        if isinstance(sel, str):
            if names is None:
                return FrameType([UNKNOWN], rows, [sel])
            return FrameType([cts[names.index(sel)]], rows, [sel]) if sel in names else UNKNOWN
        pos = [math.floor(sel)] if isinstance(sel, (int, float)) and not isinstance(sel, bool) else None
        pos = pos if pos is not None else _const_positions(self.selection)
        if pos is not None:
            pos = [p + len(cts) if p < 0 else p for p in pos]
            if not cts:  # a `frame` parameter: columns unknown
                return FrameType([UNKNOWN] * len(pos), rows, None)
            if not all(0 <= p < len(cts) for p in pos):
                return UNKNOWN
            return FrameType([cts[p] for p in pos], rows, [names[p] for p in pos] if names else None)
        st = self.selection.type
        n = 1 if is_scalar(st) else shape_of(st)[0] if is_matrix(st) else -1  # a run-time label or position(s)
        if n < 0:
            return UNKNOWN
        same = cts[0] if cts and all(c == cts[0] for c in cts) else UNKNOWN
        return FrameType([same] * n, rows, None)

    def verify_(self) -> None:
        sel = constant_value(self.selection)
        msg = frame_label_error(self.source.type, sel) if isinstance(sel, str) and not is_star(sel) else None
        if msg is not None:
            raise VerifyException(f"{self.name}: {msg}")


@irdl_op_definition
class FilterRowOp(_IndexOp):
    """`X[[bits, ]]`: keep the rows whose bit is non-zero."""

    name = "daphne.filterRow"
    source = operand_def()
    bits = operand_def()
    res = result_def()
    SHAPE: ClassVar = staticmethod(lambda op: (-1, shape_of(op.source.type)[1]))


@irdl_op_definition
class FilterColOp(_IndexOp):
    """`X[[, bits]]`: keep the columns whose bit is non-zero."""

    name = "daphne.filterCol"
    source = operand_def()
    bits = operand_def()
    res = result_def()
    SHAPE: ClassVar = staticmethod(lambda op: (shape_of(op.source.type)[0], -1))

    def verify_(self) -> None:
        if isinstance(self.source.type, FrameType):
            raise VerifyException(
                f"{self.name}: selecting the columns of a frame by a bit vector is not supported; "
                "select them by position or label"
            )


class InsertCanonicalization(HasCanonicalizationPatternsTrait):
    """`insert`'s canonicalization: `InsertFilledCell`."""

    @classmethod
    def get_canonicalization_patterns(cls) -> tuple[RewritePattern, ...]:
        return (InsertFilledCell(),)


@irdl_op_definition
class InsertOp(DaphneOp):
    """Left indexing `X[rlo:rhi, clo:chi] = M;` (copy-on-write). A scalar `M` is broadcast."""

    name = "daphne.insert"
    arg = operand_def()
    ins = operand_def()
    row_lower = operand_def()
    row_upper = operand_def()
    col_lower = operand_def()
    col_upper = operand_def()
    res = result_def()
    traits = traits_def(Pure(), InsertCanonicalization())

    def infer(self) -> tuple[Attribute, ...]:
        t = self.arg.type
        if not is_matrix(t):
            return (t,)
        return (MatrixType(t.element_type, *t.shape),)


def _one_past(upper: SSAValue, lower: SSAValue) -> bool:
    """Whether `upper` is `lower + 1` (how the frontend writes the bounds of `X[i, j]`), or both are constants
    one apart."""
    lo, hi = constant_value(lower), constant_value(upper)
    if isinstance(lo, int) and isinstance(hi, int) and not isinstance(lo, bool) and not isinstance(hi, bool):
        return hi == lo + 1
    add = upper.owner
    return isinstance(add, EwAddOp) and add.lhs is lower and constant_value(add.rhs) == 1


class InsertFilledCell(RewritePattern):
    """`X[i, j] = fill(v, 1, 1)` writes the scalar v: the insert reads v itself instead of a 1 x 1 matrix made
    for it (one kernel call less per update in a loop). Only where the fill has X's value type (casting v to it
    once or twice is the same) and the region is one cell (a scalar would broadcast over a larger region, where
    the 1 x 1 matrix is a shape mismatch)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: InsertOp, rewriter: PatternRewriter) -> None:
        fill = op.ins.owner
        x, filled = op.arg.type, op.ins.type
        if not (isinstance(fill, FillOp) and is_matrix(x) and is_matrix(filled) and is_scalar(fill.arg.type)):
            return
        if filled.shape != (1, 1) or filled.element_type != x.element_type:
            return
        if _one_past(op.row_upper, op.row_lower) and _one_past(op.col_upper, op.col_lower):
            cell = InsertOp.create(operands=[op.arg, fill.arg, *op.operands[2:]], result_types=[op.res.type],
                                   attributes=dict(op.attributes))  # fmt: skip
            cell.location = op.location
            rewriter.replace(op, cell)


# --- metadata ----------------------------------------------------------------------------------------------------


class _NumOp(UnaryDaphneOp, HasFolderInterface):
    """A dimension of a matrix or frame (size type); folds to a constant where inference knows the matrix's shape."""

    arg = operand_def(MATRIX_OR_FRAME)
    DT_RULE: ClassVar = "sca"
    VT_RULE: ClassVar = staticmethod(vt_fixed("index"))

    @staticmethod
    def count(rows: int, cols: int) -> int:
        """The dimension asked for, from a shape (-1 = unknown)."""
        raise NotImplementedError

    def fold(self) -> Sequence[SSAValue | Attribute] | None:
        t = self.arg.type
        n = self.count(*t.shape) if isinstance(t, MatrixType) else -1
        return (IntegerAttr(n, INDEX),) if n >= 0 else None


@irdl_op_definition
class NumRowsOp(_NumOp):
    name = "daphne.numRows"

    @staticmethod
    def count(rows: int, cols: int) -> int:
        return rows


@irdl_op_definition
class NumColsOp(_NumOp):
    name = "daphne.numCols"

    @staticmethod
    def count(rows: int, cols: int) -> int:
        return cols


@irdl_op_definition
class NumCellsOp(_NumOp):
    name = "daphne.numCells"

    @staticmethod
    def count(rows: int, cols: int) -> int:
        return rows * cols if rows >= 0 and cols >= 0 else -1


@irdl_op_definition
class TypeOfOp(UnaryDaphneOp, HasFolderInterface):
    """`typeOf(x)`: the C++ type name of a value (`DenseMatrix(2x2, double)` for a matrix); of a scalar it is its
    value type's, known while compiling (`typeOf(as.si8(0))` is `int8_t`, a string `const char*`)."""

    name = "daphne.typeOf"
    DT_RULE: ClassVar = "sca"
    VT_RULE: ClassVar = staticmethod(vt_concat)

    def infer(self) -> tuple[Attribute, ...]:
        return (STR,)

    def fold(self) -> Sequence[SSAValue | Attribute] | None:
        vt = vt_name(self.arg.type) if is_scalar(self.arg.type) else None
        if vt is None:
            return None
        return (StringAttr("const char*" if vt == "str" else CPP_NAMES[vt]),)


# --- control, calls and side effects ------------------------------------------------------------------------------


@irdl_op_definition
class StopOp(DaphneOp):
    """`stop([message])`: ends the program with an execution error."""

    name = "daphne.stop"
    message = operand_def(StringType)

    def infer(self) -> tuple[Attribute, ...]:
        return ()


@irdl_op_definition
class NowOp(DaphneOp):
    """`now()`: nanoseconds since the epoch (si64)."""

    name = "daphne.now"
    res = result_def()

    def __init__(self):
        super().__init__(result_types=[SI64])

    def infer(self) -> tuple[Attribute, ...]:
        return (SI64,)


@irdl_op_definition
class ForRangeOp(DaphneOp, HasFolderInterface):
    """The trip count and step of an inclusive DaphneDSL `for (i in from:to[:step])` loop.

    DaphneDSL ranges include `to` and may count down, which `scf.for` cannot express directly; the loop runs
    `scf.for %k = 0 to %count` and computes `i = from + k * step`. Without an explicit step the direction
    follows `from` and `to` (+1 or -1).
    """

    name = "daphne.forRange"
    start = operand_def(SI64)
    stop = operand_def(SI64)
    step = var_operand_def(SI64)
    count = result_def(INDEX)
    step_out = result_def(SI64)
    traits = traits_def(Pure())

    def __init__(self, start: SSAValue, stop: SSAValue, step: SSAValue | None):
        super().__init__(operands=[start, stop, [step] if step is not None else []], result_types=[INDEX, SI64])

    def infer(self) -> tuple[Attribute, ...]:
        return (INDEX, SI64)

    def verify_(self) -> None:
        if len(self.step) > 1:
            raise VerifyException("daphne.forRange takes at most one step")

    def fold(self) -> Sequence[SSAValue | Attribute] | None:
        return fold_constants(self)


@irdl_op_definition
class GenericCallOp(IRDLOperation):
    """A call of an untyped (generic) function before specialization, like DAPHNE's `daphne.generic_call`.

    `func.call` requires operand types equal to the callee's parameter types, which a generic function does not
    have yet; the `specialize` pass turns this op into a `func.call` of the specialized clone.
    """

    name = "daphne.generic_call"
    callee = prop_def(StringAttr)
    args = var_operand_def()
    res = var_result_def()

    def __init__(self, callee: str, args: Sequence[SSAValue], n_results: int):
        super().__init__(
            operands=[args], result_types=[[UNKNOWN] * n_results], properties={"callee": StringAttr(callee)}
        )


@irdl_op_definition
class MapOp(DaphneOp):
    """`map(X, udf)`: apply a unary user-defined function to every element of a matrix (DAPHNE's MapOp).

    `func` names the UDF; the `specialize` pass retargets it to the UDF's specialization for X's value type, and
    the result's value type is that specialization's result type."""

    name = "daphne.map"
    arg = operand_def(MATRIX)
    func = prop_def(StringAttr)
    res = result_def()

    def __init__(self, arg: SSAValue, func: str):
        super().__init__(operands=[arg], result_types=[UNKNOWN], properties={"func": StringAttr(func)})

    def infer(self) -> tuple[Attribute, ...]:
        t = self.res.type
        vt = vt_name(t) if is_matrix(t) else None
        return (MatrixType(value_type(vt) if vt else UNKNOWN, *shape_of(self.arg.type)),)


CORE_OPS: list[type[Operation]] = [
    ConstantOp, CastOp, *EW_BINARY_OPS.values(), *EW_UNARY_OPS.values(), *AGG_OPS.values(), FillOp, SeqOp,
    RandMatrixOp, ReshapeOp, TransposeOp, MatrixLiteralOp, CreateFrameOp, CondOp, SliceRowOp, SliceColOp,
    ExtractRowOp, ExtractColOp, FilterRowOp, FilterColOp, InsertOp, NumRowsOp, NumColsOp, NumCellsOp, StopOp,
    TypeOfOp, NowOp, ForRangeOp, GenericCallOp, MapOp,
]  # fmt: skip
