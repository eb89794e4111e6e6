"""The daphne dialect's own semantics: op classes written out, folds on the ops, operand type constraints with
DaphneDSL's messages, and the one kernel table that covers every op."""

from __future__ import annotations

import inspect
import re

import pytest
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, ModuleOp
from xdsl.ir import Operation
from xdsl.utils.exceptions import VerifyException

from daphnec.compiler.passes.canonicalize import CanonicalizePass
from daphnec.compiler.selection.table import KERNELS, evaluate_constant, kernel_of, select_kernel
from daphnec.dialects import make_context
from daphnec.dialects import ops as o
from daphnec.dialects import ops_frame as of
from daphnec.dialects import ops_io as oi
from daphnec.dialects import ops_matrix as om
from daphnec.dialects.daphne import DAPHNE_OPS
from daphnec.dialects.errors import CompileError, Loc
from daphnec.dialects.folding import evaluating_with
from daphnec.dialects.locations import loc_of, to_attr
from daphnec.dialects.types import F64, INDEX, SI64, STR, UNKNOWN, MatrixType

STRUCTURAL = {
    "ConstantOp",
    "GenericCallOp",
    "VectorizedPipelineOp",
    "PipelineReturnOp",
    "DistributedPipelineOp",
    "ParForOp",
}
"""Ops the host code generator handles itself instead of calling a kernel."""
COMPILE_TIME = {"RegisterViewOp", "SqlOp"}
"""Ops a pass replaces before kernel selection (the `sql` pass binds views and expands queries)."""


def const(v: object, vt: str) -> o.ConstantOp:
    return o.ConstantOp.of(v, vt)  # type: ignore[arg-type]


# --- op classes ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", DAPHNE_OPS, ids=lambda c: c.__name__)
def test_every_op_class_is_written_out(cls: type) -> None:
    """`grep SumAllOp` finds the class: none is generated into a module's globals()."""
    source = inspect.getsource(inspect.getmodule(cls))  # type: ignore[arg-type]
    assert re.search(rf"^class {cls.__name__}\(", source, re.M), cls.__name__


def test_family_tables_are_built_from_the_classes() -> None:
    assert o.AGG_OPS[("sum", "all")] is o.SumAllOp and o.AGG_OPS[("stddev", "col")] is o.StddevColOp
    assert o.EW_UNARY_OPS["isNan"] is o.EwIsNanOp and o.EW_BINARY_OPS["bitwiseAnd"] is o.EwBitwiseAndOp
    assert om.OUTER_OPS["outerLt"] is om.OuterLtOp and om.CUM_OPS["cumProd"] is om.CumAggProdOp
    assert om.IDX_OPS[("max", "col")] is om.ColAggIdxMaxOp


# --- folds ---------------------------------------------------------------------------------------------------------


def test_unit_operands_fold_away() -> None:
    x = const(2.5, "f64")
    one = const(1, "f64")
    zero = const(0, "f64")
    assert o.EwMulOp(one, x, F64).fold() == (x.res,)
    assert o.EwAddOp(x, zero, F64).fold() == (x.res,)
    assert o.EwSubOp(x, zero, F64).fold() == (x.res,)
    # 0 - x is not x; and without an evaluator, constants are not computed
    assert o.EwSubOp(zero, x, F64).fold() is None


def test_casts_to_the_own_type_and_shapes_fold() -> None:
    m = o.CastOp(const(1, "f64"), dt="matrix")
    m.res._type = MatrixType(F64, 4, 3)  # noqa: SLF001 - a matrix of known shape
    assert o.NumCellsOp(m, INDEX).fold() == (IntegerAttr(12, INDEX),)
    assert o.NumRowsOp(m, INDEX).fold() == (IntegerAttr(4, INDEX),)
    m.res._type = MatrixType(F64, -1, 3)  # noqa: SLF001
    assert o.NumCellsOp(m, INDEX).fold() is None
    x = const(3, "si64")
    assert o.CastOp(x, vt="si64").fold() == (x.res,)


def test_constant_operands_fold_with_the_kernel() -> None:
    big, one = const(9223372036854775807, "si64"), const(1, "si64")
    add = o.EwAddOp(big, one, SI64)
    assert add.fold() is None  # no evaluator: the dialect does not know the kernels
    with evaluating_with(evaluate_constant):
        assert add.fold() == (IntegerAttr(-9223372036854775808, SI64),)  # si64 wraps, as the kernel does
        sqrt = o.EwSqrtOp(const(2, "si64"), F64)
        assert sqrt.fold() == (FloatAttr(2**0.5, F64),)
        s = o.EwAddOp(const("a", "str"), const(0, "si64"), STR)
        assert s.fold() is not None and s.fold()[0].data == "a0"  # type: ignore[union-attr]


def test_integer_division_by_a_constant_zero_is_a_compile_error() -> None:
    div = o.EwDivOp(const(7, "si64"), const(0, "si64"), SI64)
    div.location = to_attr(Loc("s.daph", 3, 9))
    with pytest.raises(CompileError) as e, evaluating_with(evaluate_constant):
        div.fold()
    assert e.value.render() == "s.daph:3:9: error: integer division by zero in a constant expression"
    assert o.EwDivOp(const(7.0, "f64"), const(0.0, "f64"), F64).fold() is None  # no evaluator, no error: inf


def test_canonicalize_keeps_the_location_of_folded_constants() -> None:
    a, b = const(2, "si64"), const(3, "si64")
    mul = o.EwMulOp(a, b, SI64)
    mul.location = to_attr(Loc("s.daph", 1, 7))
    out = oi.PrintOp.create(operands=[mul.res, const(True, "bool").res, const(False, "bool").res])
    module = ModuleOp([a, b, mul, out.operands[1].owner, out.operands[2].owner, out])
    CanonicalizePass().apply(make_context(), module)
    folded = out.operands[0].owner
    assert isinstance(folded, o.ConstantOp) and folded.python_value() == 6
    assert loc_of(folded) == Loc("s.daph", 1, 7)


# --- operand type constraints --------------------------------------------------------------------------------------


def verify_error(op: Operation) -> str:
    with pytest.raises(VerifyException) as e:
        op.verify()
    return str(e.value).splitlines()[0]


def test_constraint_violations_read_like_daphnedsl() -> None:
    x = const(3, "si64")
    assert verify_error(o.NumRowsOp(x, INDEX)) == "daphne.numRows: the argument must be a matrix or a frame, got si64"
    assert verify_error(o.SumAllOp(x, SI64)) == (
        "daphne.sumAll: the aggregated argument must be a matrix or a frame, got si64"
    )
    assert verify_error(om.SolveOp(x, x, UNKNOWN)) == "daphne.solve: A must be a matrix, got si64"
    assert verify_error(of.CreateListOp([x.res])) == (
        "daphne.createList: the elements of a list must be matrices, got si64"
    )
    assert (
        verify_error(oi.WriteOp(x.res, x.res))
        == "daphne.write: the data to write must be a matrix or a frame, got si64"
    )


def test_unknown_operands_satisfy_every_constraint() -> None:
    u = o.CastOp(const(1, "si64"))
    u.res._type = UNKNOWN  # noqa: SLF001 - not inferred yet
    for op in (
        o.NumRowsOp(u, INDEX),
        om.SolveOp(u, u, UNKNOWN),
        of.LengthOp.create(operands=[u.res], result_types=[INDEX]),
    ):
        op.verify()  # raises VerifyException if a constraint rejects the not-yet-inferred operand
    with pytest.raises(VerifyException):  # the same constraint rejects a known scalar
        o.NumRowsOp(const(1, "si64"), INDEX).verify()


# --- the kernel table ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cls", [c for c in DAPHNE_OPS if c.__name__ not in STRUCTURAL | COMPILE_TIME], ids=lambda c: c.__name__
)
def test_every_op_has_a_kernel(cls: type) -> None:
    assert any(base in KERNELS for base in cls.__mro__)


def test_ops_carry_no_kernel_names() -> None:
    for cls in DAPHNE_OPS:
        assert not any(a.startswith("KERNEL") for a in dir(cls)), cls.__name__


def test_families_select_by_kind() -> None:
    a, b = const(7, "si64"), const(2, "si64")
    assert kernel_of(o.EwModOp(a, b, SI64)) is KERNELS[o.EwBinaryOp]
    spec = select_kernel(o.EwModOp(a, b, SI64))
    assert spec.name == "ew_mod" and spec.fn(7, 2) == 1
    with pytest.raises(CompileError, match="no kernel for operation 'literal'"):
        kernel_of(a)
