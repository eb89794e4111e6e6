"""The element-wise and aggregation kinds of DaphneDSL: one record per kind, the one table every layer reads.

An element-wise op (`daphne.ewSqrt`), an aggregation (`daphne.meanRow`) or a group aggregate (`SUM(a)` of
`daphne.group`) names its kind (`KIND = "sqrt"`); everything the layers must agree on about that kind is written
here once: the result's value type, the type operands are cast to, the floating-point-only kinds, whether the op
maps zero to zero (so a CSR argument keeps its pattern), the libm function and its domain, the DaphneDSL builtin
and operator that build it, how per-block results of an aggregation combine. The dialect's type inference
(`dialects/ops.py`), the runtime kernels (`runtime/kernels/ew_*.py`, `agg.py`, `relational.py`), the kernel
selection and native lowering (`compiler/`), the frontend (builtins, SQL) and the Python API read these records,
so a kind missing from one copy can no longer take another kernel path silently: there is no other copy.

Pure Python (like `value_types.py`): the runtime imports it without xDSL. tests/test_op_kinds.py checks that the
tables cover every op class of these families and every kernel.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from daphnec.dialects.value_types import (
    Combine,
    VtRule,
    most_general,
    vt_compare,
    vt_concat,
    vt_fixed,
    vt_from_args,
    vt_from_args_fp,
    vt_from_args_int,
    vt_from_first,
)


def _mnemonic(prefix: str, kind: str) -> str:
    return prefix + kind[0].upper() + kind[1:]


# --- element-wise binary -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EwBinaryKind:
    """One element-wise binary kind (`add`): `daphne.ewAdd`, `daphne.outerAdd`, their kernels and builtins."""

    kind: str
    vt_rule: VtRule
    """The result's value type from the operands' (DAPHNE's ValueTypeFromArgs, ...FP, ...Int traits)."""
    operands: str = "result"
    """What both operands are cast to before the kernel runs: `result` (the result type), `common` (the most
    general operand type: comparisons compare in it and yield the result type) or `str` (concatenation)."""
    operator: str | None = None
    """The DaphneDSL infix operator (`+`), if any."""
    function: str | None = None
    """The DaphneDSL builtin function of two arguments (`pow(a, b)`), if any."""
    outer: bool = True
    """Whether DaphneDSL has its outer form (`outerAdd(col, row)`, `daphne.outerAdd`)."""

    @property
    def mnemonic(self) -> str:
        """The op's name in the dialect without `daphne.` (`ewAdd`)."""
        return _mnemonic("ew", self.kind)

    @property
    def outer_mnemonic(self) -> str:
        """The outer op's name (`outerAdd`)."""
        return _mnemonic("outer", self.kind)

    def result_vt(self, lhs_vt: str, rhs_vt: str) -> str:
        """The result value type of `lhs op rhs` for known operand types (`+` of strings is a concatenation)."""
        return self.vt_rule([lhs_vt, rhs_vt])  # type: ignore[return-value]

    def operand_vt(self, lhs_vt: str, rhs_vt: str) -> str:
        """The value type both operands are cast to before the kernel runs (see `operands`)."""
        if self.operands == "common":
            return most_general(lhs_vt, rhs_vt)
        if self.operands == "str":
            return "str"
        return self.result_vt(lhs_vt, rhs_vt)


_BINARY_RECORDS = (
    EwBinaryKind("add", vt_from_args, operator="+"),
    EwBinaryKind("sub", vt_from_args, operator="-"),
    EwBinaryKind("mul", vt_from_args, operator="*"),
    EwBinaryKind("div", vt_from_args, operator="/"),
    EwBinaryKind("pow", vt_from_args, operator="^", function="pow"),
    EwBinaryKind("mod", vt_from_args, operator="%", function="mod"),
    EwBinaryKind("log", vt_from_args_fp, function="log"),
    EwBinaryKind("min", vt_from_args, function="min"),
    EwBinaryKind("max", vt_from_args, function="max"),
    EwBinaryKind("and", vt_from_args_int, operator="&&"),
    EwBinaryKind("or", vt_from_args_int, operator="||"),
    EwBinaryKind("xor", vt_from_args_int),
    EwBinaryKind("bitwiseAnd", vt_from_args_int, outer=False),
    EwBinaryKind("concat", vt_concat, operands="str", function="concat"),
    EwBinaryKind("eq", vt_compare, operands="common", operator="=="),
    EwBinaryKind("neq", vt_compare, operands="common", operator="!="),
    EwBinaryKind("lt", vt_compare, operands="common", operator="<"),
    EwBinaryKind("le", vt_compare, operands="common", operator="<="),
    EwBinaryKind("gt", vt_compare, operands="common", operator=">"),
    EwBinaryKind("ge", vt_compare, operands="common", operator=">="),
)
EW_BINARY: dict[str, EwBinaryKind] = {r.kind: r for r in _BINARY_RECORDS}
"""DaphneDSL's element-wise binary kinds, in DAPHNE's order."""
COMPARISON_KINDS: frozenset[str] = frozenset(r.kind for r in _BINARY_RECORDS if r.vt_rule is vt_compare)
LOGICAL_KINDS: frozenset[str] = frozenset(("and", "or", "xor"))
"""`&& || xor`: 0/1 of the truth of both operands (`bitwiseAnd` works on the bits)."""
BINARY_OPERATORS: dict[str, str] = {r.operator: r.kind for r in _BINARY_RECORDS if r.operator}
"""DaphneDSL's infix operators of element-wise kinds (`+` -> `add`; `@` is `matMul`)."""


# --- element-wise unary ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EwUnaryKind:
    """One element-wise unary kind (`sqrt`): `daphne.ewSqrt`, the builtin `sqrt(x)`, its kernels."""

    kind: str
    vt_rule: VtRule = vt_from_first
    zero_preserving: bool = False
    """op(0) == 0: the result has at most the argument's non-zeros, so a CSR argument keeps its pattern (the
    compiler's sparsity estimate, the runtime's CSR kernel, the native lowering of CSR pipelines)."""
    libm: str | None = None
    """The C math function computing it (`math.<libm>` on Python floats, `numpy.<libm>` on matrices): numpy's SIMD
    routines differ from libm's in the last bit, so native pipelines run these kinds through their runtime kernel."""
    domain: tuple[float, float] | None = None
    """The arguments outside [lo, hi] are an error (DAPHNE's EwUnarySca.h), e.g. `sqrt` of -1."""
    strings: str = "rejected"
    """Its string arguments: `only` (the argument must be a string), `accepted` or `rejected`."""

    @property
    def mnemonic(self) -> str:
        """The op's name in the dialect without `daphne.` (`ewSqrt`; the string functions are `lower`, `upper`)."""
        return self.kind if self.strings == "only" else _mnemonic("ew", self.kind)

    @property
    def builtin(self) -> str:
        """The DaphneDSL builtin of one argument (`sqrt(X)`, `minus(X)`)."""
        return self.kind

    @property
    def floating(self) -> bool:
        """Whether it computes in floating point (`sqrt` of an si64 is an f64)."""
        return self.vt_rule is vt_from_args_fp

    def result_vt(self, vt: str) -> str:
        """The result value type for a known argument type."""
        return self.vt_rule([vt])  # type: ignore[return-value]

    def domain_text(self) -> str | None:
        """How DAPHNE's error message names the function and its domain (`SQRT with domain [-0, inf]`)."""
        if self.domain is None:
            return None
        lo, hi = (("-0" if x == 0 and math.copysign(1.0, x) < 0 else "inf" if x == math.inf else f"{x:g}")
                  for x in self.domain)  # fmt: skip
        return f"{self.kind.upper()} with domain [{lo}, {hi}]"


def _libm(kind: str, libm: str, zero_preserving: bool = False, domain: tuple[float, float] | None = None):
    return EwUnaryKind(kind, vt_from_args_fp, zero_preserving, libm, domain)


_UNARY_RECORDS = (
    EwUnaryKind("minus", zero_preserving=True),
    EwUnaryKind("abs", zero_preserving=True),
    EwUnaryKind("sign", zero_preserving=True),
    _libm("exp", "exp"),
    _libm("ln", "log", domain=(-0.0, math.inf)),
    _libm("sqrt", "sqrt", zero_preserving=True, domain=(-0.0, math.inf)),
    EwUnaryKind("round", zero_preserving=True),
    EwUnaryKind("floor", zero_preserving=True),
    EwUnaryKind("ceil", zero_preserving=True),
    _libm("sin", "sin", zero_preserving=True),
    _libm("cos", "cos"),
    _libm("tan", "tan", zero_preserving=True),
    _libm("sinh", "sinh", zero_preserving=True),
    _libm("cosh", "cosh"),
    _libm("tanh", "tanh", zero_preserving=True),
    _libm("asin", "asin", zero_preserving=True, domain=(-1.0, 1.0)),
    _libm("acos", "acos", domain=(-1.0, 1.0)),
    _libm("atan", "atan", zero_preserving=True),
    EwUnaryKind("isNan", vt_compare, zero_preserving=True, strings="accepted"),
    EwUnaryKind("lower", strings="only"),
    EwUnaryKind("upper", strings="only"),
)
EW_UNARY: dict[str, EwUnaryKind] = {r.kind: r for r in _UNARY_RECORDS}
"""DaphneDSL's element-wise unary kinds; each kind is also its builtin's name (`sqrt(X)`, `minus(X)`)."""


# --- aggregations --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AggKind:
    """One aggregation kind (`mean`): `daphne.meanAll`/`meanRow`/`meanCol`, the builtin `mean(X[, axis])`."""

    kind: str
    builtin: str
    """The DaphneDSL builtin (`aggMin` for `min`: `min(a, b)` is element-wise; DAPHNE also takes `min(X)`)."""
    vt_rule: VtRule = vt_from_first
    combine: Combine | None = None
    """How the results of row blocks combine into the whole's (vectorized and native full/column aggregations);
    None: the kind does not combine from partial results (`mean` of the means of blocks is not the mean)."""
    strings: bool = False
    """Whether it aggregates strings (min/max compare them)."""

    def mnemonic(self, axis: str) -> str:
        """The op's name without `daphne.` for axis `all`, `row` or `col` (`sumAll`)."""
        return self.kind + axis.capitalize()

    @property
    def floating(self) -> bool:
        """Whether it computes in floating point (`mean` of an si64 matrix is an f64)."""
        return self.vt_rule is vt_from_args_fp

    def result_vt(self, vt: str) -> str:
        """The result value type for a known argument type."""
        return self.vt_rule([vt])  # type: ignore[return-value]


_AGG_RECORDS = (
    AggKind("sum", "sum", combine=Combine.ADD),
    AggKind("min", "aggMin", combine=Combine.MIN, strings=True),
    AggKind("max", "aggMax", combine=Combine.MAX, strings=True),
    AggKind("mean", "mean", vt_from_args_fp),
    AggKind("var", "var", vt_from_args_fp),
    AggKind("stddev", "stddev", vt_from_args_fp),
)
AGGREGATIONS: dict[str, AggKind] = {r.kind: r for r in _AGG_RECORDS}
"""DaphneDSL's full, row and column aggregations by kind (`sum(X)`, `mean(X, 0)`, `aggMin(X, 1)`)."""
AGG_AXES: tuple[str, ...] = ("all", "row", "col")
"""`all` (a scalar), `row` (n x 1: `agg(X, 0)`) and `col` (1 x m: `agg(X, 1)`)."""


@dataclass(frozen=True, slots=True)
class CumAggKind:
    """One cumulative aggregation (`sum`): `daphne.sumCum`, the builtin `cumSum(X)` (same shape and value type)."""

    kind: str
    strings: bool = False
    """Whether it takes strings (min/max compare them)."""

    @property
    def mnemonic(self) -> str:
        """The op's name without `daphne.` (`sumCum`, DAPHNE's)."""
        return self.kind + "Cum"

    @property
    def builtin(self) -> str:
        """The DaphneDSL builtin (`cumSum`)."""
        return _mnemonic("cum", self.kind)


CUM_AGGREGATIONS: dict[str, CumAggKind] = {
    r.kind: r for r in (CumAggKind("sum"), CumAggKind("prod"), CumAggKind("min", True), CumAggKind("max", True))
}
"""DaphneDSL's cumulative aggregations down each column by kind."""


# --- group aggregates (frames, SQL) --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GroupAggKind:
    """One aggregate function of `daphne.group` (DAPHNE's GroupEnum) and SQL (`SELECT k, SUM(a) ... GROUP BY k`)."""

    name: str
    """DAPHNE's spelling, in the IR and in result labels (`SUM(a)`)."""
    vt_rule: VtRule
    """The result column's value type from the aggregated column's (DAPHNE's GroupOp::inferTypes)."""
    full: str | None
    """The aggregation kind computing it over a whole column (SQL without GROUP BY); None: it is the row count."""
    from_sums: bool
    """Whether it follows from the group's sum and row count alone, so `fuse-filter-agg` computes it in one pass."""

    @property
    def sql(self) -> str:
        """The SQL function name, matched case-insensitively (lower case)."""
        return self.name.lower()


_GROUP_RECORDS = (
    GroupAggKind("COUNT", vt_fixed("si64"), None, from_sums=True),
    GroupAggKind("SUM", vt_from_first, "sum", from_sums=True),
    GroupAggKind("MIN", vt_from_first, "min", from_sums=False),
    GroupAggKind("MAX", vt_from_first, "max", from_sums=False),
    GroupAggKind("AVG", vt_fixed("f64"), "mean", from_sums=True),
)
GROUP_AGGREGATES: dict[str, GroupAggKind] = {r.name: r for r in _GROUP_RECORDS}
"""The aggregate functions of `daphne.group` and SQL by DAPHNE's name (`COUNT SUM MIN MAX AVG`)."""
SQL_AGGREGATES: dict[str, GroupAggKind] = {r.sql: r for r in _GROUP_RECORDS}
"""The same by SQL name (`avg`)."""
FROM_SUMS: tuple[str, ...] = tuple(r.name for r in _GROUP_RECORDS if r.from_sums)
"""The group aggregates `fuse-filter-agg` computes from grouped sums and counts (`daphne.groupResult`)."""
