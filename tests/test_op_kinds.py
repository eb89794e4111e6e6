"""The kind records (dialects/op_kinds.py) cover every op class of their families and every kernel, and the facts
they state hold for the kernels: a forgotten or wrong entry fails here instead of silently picking another kernel."""

from __future__ import annotations

import math

import numpy as np
import pytest

from daphnec.compiler.lowering import ew_kinds
from daphnec.compiler.lowering.kernel_plan import AGG_KINDS, OPAQUE_UNARY_KINDS, UNARY_KINDS
from daphnec.dialects import ops
from daphnec.dialects import ops_matrix as om
from daphnec.dialects.daphne import DAPHNE_OPS
from daphnec.dialects.errors import dsl_name
from daphnec.dialects.op_kinds import (
    AGG_AXES,
    AGGREGATIONS,
    BINARY_OPERATORS,
    CUM_AGGREGATIONS,
    EW_BINARY,
    EW_UNARY,
    FROM_SUMS,
    GROUP_AGGREGATES,
    SQL_AGGREGATES,
)
from daphnec.dialects.value_types import DTYPES, GENERALITY
from daphnec.frontend.builtins import all_builtins
from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.kernels import agg, cum_agg, ew_binary, ew_unary, relational
from daphnec.tools.daphnelib.matrix import Matrix


def _family(base: type) -> dict[str, type]:
    """The dialect's registered op classes of a family, by op name."""
    return {c.name: c for c in DAPHNE_OPS if issubclass(c, base)}


# --- every op class has its record, every record its op class -------------------------------------------------------


def test_element_wise_unary_ops_and_records_match() -> None:
    classes = _family(ops.EwUnaryOp)
    assert {c.KIND for c in classes.values()} == set(EW_UNARY)
    assert set(classes) == {f"daphne.{r.mnemonic}" for r in EW_UNARY.values()}
    assert all(classes[f"daphne.{r.mnemonic}"].KIND == k for k, r in EW_UNARY.items())
    assert ops.EW_UNARY_OPS == {c.KIND: c for c in classes.values()}


def test_element_wise_binary_ops_and_records_match() -> None:
    classes = _family(ops.EwBinaryOp)
    assert {f"daphne.{r.mnemonic}": k for k, r in EW_BINARY.items()} == {n: c.KIND for n, c in classes.items()}
    assert ops.EW_BINARY_OPS == {c.KIND: c for c in classes.values()}


def test_outer_ops_and_records_match() -> None:
    classes = _family(om.OuterBinaryOp)
    want = {f"daphne.{r.outer_mnemonic}": k for k, r in EW_BINARY.items() if r.outer}
    assert want == {n: c.KIND for n, c in classes.items()}


def test_aggregation_ops_and_records_match() -> None:
    classes = _family(ops.AggOp)
    want = {f"daphne.{r.mnemonic(axis)}": (k, axis) for k, r in AGGREGATIONS.items() for axis in AGG_AXES}
    assert want == {n: (c.KIND, c.AXIS) for n, c in classes.items()}


def test_cumulative_aggregation_ops_and_records_match() -> None:
    classes = _family(om.CumAggOp)
    assert {f"daphne.{r.mnemonic}": k for k, r in CUM_AGGREGATIONS.items()} == {n: c.KIND for n, c in classes.items()}
    assert om.CUM_OPS == {CUM_AGGREGATIONS[c.KIND].builtin: c for c in classes.values()}
    for k, r in CUM_AGGREGATIONS.items():
        assert dsl_name(r.mnemonic) == r.builtin
        cum_agg.cum_kernel(k)(np.ones((2, 2)))
        strings = np.array([["b"], ["a"]], dtype=object)
        if r.strings:
            assert cum_agg.cum_kernel(k)(strings).tolist() == [["b"], ["a" if k == "min" else "b"]]
        else:
            with pytest.raises(DaphneRuntimeError, match=f"{r.builtin}: not supported on value type str"):
                cum_agg.cum_kernel(k)(strings)


def test_the_ops_infer_the_records_rules() -> None:
    for c in (*_family(ops.EwUnaryOp).values(), *_family(ops.EwBinaryOp).values(), *_family(ops.AggOp).values()):
        records = EW_UNARY if issubclass(c, ops.EwUnaryOp) else EW_BINARY if issubclass(c, ops.EwBinaryOp) else None
        record = (records or AGGREGATIONS)[c.KIND]
        assert c.VT_RULE is record.vt_rule, c.__name__
    for c in _family(om.OuterBinaryOp).values():
        assert c.VT_RULE is EW_BINARY[c.KIND].vt_rule, c.__name__


# --- every record has its builtins, kernels and lowering -----------------------------------------------------------


def test_every_kind_has_its_builtins() -> None:
    builtins = all_builtins()
    names = [r.builtin for r in EW_UNARY.values()] + [r.builtin for r in AGGREGATIONS.values()]
    names += [r.builtin for r in CUM_AGGREGATIONS.values()]
    names += [r.function for r in EW_BINARY.values() if r.function] + [r.outer_mnemonic for r in EW_BINARY.values()
                                                                        if r.outer]  # fmt: skip
    assert [n for n in names if n not in builtins] == []


def test_operators_name_binary_kinds() -> None:
    assert BINARY_OPERATORS == {"+": "add", "-": "sub", "*": "mul", "/": "div", "^": "pow", "%": "mod",
                                "==": "eq", "!=": "neq", "<": "lt", "<=": "le", ">": "gt", ">=": "ge",
                                "&&": "and", "||": "or"}  # fmt: skip
    assert dsl_name("ewLe") == "`<=`" and dsl_name("minRow") == "aggMin" and dsl_name("ewSqrt") == "sqrt"


def _accepts(record_strings: str, vt: str) -> bool:
    return (vt == "str") == (record_strings == "only") or (record_strings == "accepted")


@pytest.mark.parametrize("kind", list(EW_UNARY))
def test_every_unary_kind_has_kernels_of_its_result_type(kind: str) -> None:
    r = EW_UNARY[kind]
    for vt in GENERALITY:
        if not _accepts(r.strings, vt):
            with pytest.raises(DaphneRuntimeError):
                ew_unary.result_vt(kind, vt)
            continue
        out = r.result_vt(vt)
        assert ew_unary.result_vt(kind, vt) == out
        arg = np.array([["a", "B"]], dtype=object) if vt == "str" else np.ones((1, 2), dtype=DTYPES[vt])
        res = ew_unary.matrix_kernel(kind, vt)(arg)
        assert res.dtype == DTYPES[out], (kind, vt)
        assert ew_unary.scalar_kernel(kind, vt)(arg.tolist()[0][0]) is not None


@pytest.mark.parametrize("kind", list(EW_BINARY))
def test_every_binary_kind_has_kernels_of_its_result_type(kind: str) -> None:
    r = EW_BINARY[kind]
    vts = ["str"] if r.operands == "str" else ["si64", "bool"] if kind == "bitwiseAnd" else ["f64", "si32", "bool"]
    for vt in vts:
        ovt, out = r.operand_vt(vt, vt), r.result_vt(vt, vt)
        a = np.array([["x", "y"]], dtype=object) if ovt == "str" else np.ones((1, 2), dtype=DTYPES[ovt])
        res = ew_binary.matrix_kernel(kind, ovt, out)(a, a)
        assert res.dtype == DTYPES[out], (kind, vt)
        x = a.tolist()[0][0]
        assert ew_binary.scalar_kernel(kind, ovt, out)(x, x) is not None


@pytest.mark.parametrize("kind", list(AGGREGATIONS))
def test_every_aggregation_has_kernels_of_its_result_type(kind: str) -> None:
    r = AGGREGATIONS[kind]
    for vt in ("f32", "si64", "str"):
        if vt == "str" and not r.strings:
            with pytest.raises(DaphneRuntimeError):
                agg.result_vt(kind, vt)
            continue
        out = r.result_vt(vt)
        assert agg.result_vt(kind, vt) == agg.result_vt(r.builtin, vt) == out
        x = np.array([["b", "a"]], dtype=object) if vt == "str" else np.ones((2, 3), dtype=DTYPES[vt])
        for factory in (agg.full_kernel, agg.row_kernel, agg.col_kernel):
            factory(kind, vt)(x)


@pytest.mark.parametrize("func", list(GROUP_AGGREGATES))
def test_every_group_aggregate_has_a_kernel_of_its_result_type(func: str) -> None:
    r = GROUP_AGGREGATES[func]
    col, gid = np.array([1, 2, 3], dtype=np.int32), np.array([0, 1, 0])
    res = relational.aggregate(func, col, gid, 2)
    assert res.dtype == DTYPES[r.vt_rule(["si32"]) or "si32"]
    assert SQL_AGGREGATES[r.sql] is r
    assert r.full is None or r.full in AGGREGATIONS
    with pytest.raises(DaphneRuntimeError, match="unknown aggregation function"):
        relational.aggregate("MEDIAN", col, gid, 2)
    assert set(FROM_SUMS) <= set(GROUP_AGGREGATES)


def test_native_lowering_names_known_kinds() -> None:
    assert set(ew_kinds.BINARY) <= set(EW_BINARY) and set(ew_kinds.UNARY) <= set(EW_UNARY)
    libm = {k for k, r in EW_UNARY.items() if r.libm}
    assert libm <= UNARY_KINDS | OPAQUE_UNARY_KINDS  # every libm function runs natively or between native stages
    assert AGG_KINDS == {"sum", "min", "max"}


def test_the_python_api_has_a_method_per_kind() -> None:
    names = [r.builtin for r in AGGREGATIONS.values()] + [r.outer_mnemonic for r in EW_BINARY.values() if r.outer]
    names += [r.builtin for r in CUM_AGGREGATIONS.values()]
    names += [r.builtin for r in EW_UNARY.values() if r.strings != "only" and r.kind != "minus"]
    assert [n for n in names if not callable(getattr(Matrix, n, None))] == []


# --- the facts hold for the kernels ----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", [k for k, r in EW_UNARY.items() if r.strings != "only"])
def test_zero_preservation_is_the_kernels(kind: str) -> None:
    """The record's `zero_preserving` is what the kernel does with 0 (sparsity estimates and CSR lowering trust it)."""
    res = ew_unary.matrix_kernel(kind, "f64")(np.zeros((1, 1)))
    assert (res[0, 0] == 0) == EW_UNARY[kind].zero_preserving


@pytest.mark.parametrize("kind", [k for k, r in EW_UNARY.items() if r.libm])
def test_libm_kinds_compute_the_named_function(kind: str) -> None:
    r = EW_UNARY[kind]
    x = 0.5
    assert ew_unary.scalar_kernel(kind, "f64")(x) == getattr(math, r.libm)(x)  # type: ignore[arg-type]
    assert ew_unary.matrix_kernel(kind, "f64")(np.full((1, 1), x))[0, 0] == getattr(np, r.libm)(x)  # type: ignore[arg-type]
    if r.domain is not None:
        with pytest.raises(DaphneRuntimeError, match=f"passed to unary func {r.kind.upper()} with domain"):
            ew_unary.scalar_kernel(kind, "f64")(r.domain[0] - 1.0)
