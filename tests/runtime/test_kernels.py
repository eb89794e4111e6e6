"""Runtime kernels: element-wise, aggregation, data generation, reorganisation, indexing, meta, misc.

Float results that involve libm/IEEE corner cases were checked against g++ 12 (glibc, x86-64); `rand` values are
bit-identical to a C++ program using DAPHNE's RandMatrix.h algorithm with libstdc++.
"""

import math
import time

import numpy as np
import pytest

from daphnec.dialects.op_kinds import EW_BINARY
from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.frame import Frame
from daphnec.runtime.kernels import agg, datagen, ew_binary, ew_unary, indexing, matmul, meta, misc, reorg
from daphnec.runtime.printing import format_obj, format_scalar
from daphnec.runtime.values import NEG_NAN, object_matrix


def b(op, vt, res=None):
    return ew_binary.scalar_kernel(op, vt, res)


def bm(op, vt, res=None):
    return ew_binary.matrix_kernel(op, vt, res)


def sign_bit(x):
    return math.copysign(1.0, x) < 0


# ---------------------------------------------------------------------------------------------------------------------
# ew_binary: type rules
# ---------------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "op,lhs,rhs,res",
    [
        ("add", "si64", "f64", "f64"),
        ("add", "si64", "ui64", "ui64"),
        ("mul", "si64", "f32", "f32"),
        ("add", "bool", "si64", "si64"),
        ("lt", "si64", "f64", "f64"),
        ("eq", "str", "str", "si64"),
        ("and", "f64", "si64", "ui64"),
        ("or", "si32", "si8", "si32"),
        ("bitwiseAnd", "f32", "f32", "ui64"),
        ("log", "si64", "si64", "f64"),
        ("log", "f32", "f32", "f32"),
        ("add", "str", "str", "str"),
        ("concat", "str", "str", "str"),
        ("min", "si8", "ui8", "ui8"),
    ],
)
def test_binary_result_types(op, lhs, rhs, res):
    assert EW_BINARY[op].result_vt(lhs, rhs) == res


# ---------------------------------------------------------------------------------------------------------------------
# ew_binary: scalars
# ---------------------------------------------------------------------------------------------------------------------


def test_int_division_truncates_toward_zero():
    div = b("div", "si64")
    assert (div(-7, 2), div(7, -2), div(7, 2), div(-7, -2), div(4, 2)) == (-3, -3, 3, 3, 2)


def test_int_division_and_modulo_by_zero_raise():
    with pytest.raises(DaphneRuntimeError, match="division by zero"):
        b("div", "si64")(1, 0)
    with pytest.raises(DaphneRuntimeError, match="division by zero"):
        b("mod", "ui8")(5, 0)


def test_int_overflow_wraps():
    assert b("add", "si64")(2**63 - 1, 1) == -(2**63)
    assert b("sub", "ui64")(0, 1) == 2**64 - 1
    assert b("mul", "si64")(2**62, 4) == 0
    assert b("add", "si8")(127, 1) == -128
    assert b("mul", "ui8")(16, 17) == 16
    assert b("div", "si64")(-(2**63), -1) == -(2**63)


def test_mod_is_fmod_with_sign_of_dividend():
    assert (b("mod", "si64")(-7, 2), b("mod", "si64")(7, -2), b("mod", "si64")(7, 3)) == (-1, 1, 1)
    assert b("mod", "f64")(-7.5, 2.0) == -1.5
    assert sign_bit(b("mod", "f64")(5.5, 0.0)) and math.isnan(b("mod", "f64")(5.5, 0.0))


def test_pow_goes_through_double():
    p = b("pow", "si64")
    assert (p(2, -1), p(2, 10), p(-2, 3), p(2, 63), p(0, 0)) == (0, 1024, -8, -(2**63), 1)
    assert b("pow", "f64")(2.0, -1.0) == 0.5
    assert b("pow", "f64")(0.0, -1.0) == math.inf
    assert b("pow", "f64")(-0.0, -1.0) == -math.inf
    assert b("pow", "f64")(10.0, 400.0) == math.inf
    r = b("pow", "f64")(-8.0, 1 / 3)
    assert math.isnan(r) and sign_bit(r)


def test_float_division_follows_ieee():
    d = b("div", "f64")
    assert d(1.0, 0.0) == math.inf and d(-1.0, 0.0) == -math.inf and d(1.0, -0.0) == -math.inf
    nan = d(0.0, 0.0)
    assert math.isnan(nan) and sign_bit(nan) and format_scalar(nan) == "-nan"
    assert d(1.0, 4.0) == 0.25


def test_log_with_base():
    lg = b("log", "f64")
    assert lg(8.0, 2.0) == 3.0
    assert lg(0.0, 2.0) == -math.inf
    assert format_scalar(lg(-1.0, 2.0)) == "-nan"
    assert format_scalar(lg(1.0, 0.0)) == "-0"


def test_min_max_follow_std_min_max():
    mn, mx = b("min", "f64"), b("max", "f64")
    assert math.isnan(mn(math.nan, 1.0)) and mn(1.0, math.nan) == 1.0
    assert math.isnan(mx(math.nan, 1.0)) and mx(1.0, math.nan) == 1.0
    assert b("min", "si64")(3, -2) == -2 and b("max", "si64")(3, -2) == 3
    assert b("min", "str")("b", "a") == "a"


def test_logical_ops_give_zero_one():
    land, lor = b("and", "ui64"), b("or", "ui64")
    assert (land(1, 0), land(2, 3), lor(0, 0), lor(0, 5)) == (0, 1, 0, 1)
    assert (b("xor", "si64")(1, 1), b("xor", "si64")(0, 7)) == (0, 1)
    assert b("and", "bool")(True, False) is False
    assert b("bitwiseAnd", "si64")(12, 10) == 8
    assert b("bitwiseAnd", "si64")(-1, 255) == 255


def test_bitwise_and_on_float_is_unsupported():
    with pytest.raises(DaphneRuntimeError, match="ewBitwiseAnd"):
        b("bitwiseAnd", "f64")


def test_comparisons_have_operand_type():
    assert b("lt", "f64")(1.0, 2.0) == 1.0 and type(b("lt", "f64")(1.0, 2.0)) is float
    assert b("ge", "si64")(1, 2) == 0 and type(b("ge", "si64")(1, 2)) is int
    assert b("eq", "str")("a", "a") == 1
    assert b("neq", "str")("a", "a") == 0
    assert b("gt", "str")("b", "a") == 1
    assert b("le", "bool")(False, True) is True
    assert b("eq", "f64")(math.nan, math.nan) == 0.0


def test_string_concat_and_plus():
    assert b("concat", "str")("ab", "cd") == "abcd"
    assert b("add", "str")("x", "1") == "x1"


def test_f32_results_are_rounded():
    assert b("add", "f32")(0.1, 0.2) == 0.30000001192092896
    assert b("div", "f32")(1.0, 3.0) == 0.3333333432674408


def test_bool_arithmetic_promotes_through_int():
    assert b("add", "bool")(True, True) is True
    assert b("sub", "bool")(True, True) is False
    assert b("sub", "bool")(False, True) is True


def test_unknown_binary_op_raises():
    with pytest.raises(DaphneRuntimeError, match="unknown element-wise binary operation 'foo'"):
        b("foo", "f64")


def test_si64_add_speed():
    add = b("add", "si64")
    t = time.perf_counter()
    for i in range(1_000_000):
        add(i, 5)
    assert time.perf_counter() - t < 2.0  # ~0.1 s measured


# ---------------------------------------------------------------------------------------------------------------------
# ew_binary: matrices
# ---------------------------------------------------------------------------------------------------------------------


def test_matrix_division_int_and_double():
    assert (
        format_obj(bm("div", "si64")(np.array([[6], [8]]), np.array([[3], [4]]))) == "DenseMatrix(2x1, int64_t)\n2\n2\n"
    )
    assert format_obj(bm("div", "f64")(np.array([[1.0], [2.0]]), 2.0)) == "DenseMatrix(2x1, double)\n0.5\n1\n"


def test_matrix_int_division_truncates_and_checks_zero():
    assert bm("div", "si64")(np.array([[-7, 7, -8]]), 2).tolist() == [[-3, 3, -4]]
    assert bm("div", "si64")(10, np.array([[-3, 3]])).tolist() == [[-3, 3]]
    with pytest.raises(DaphneRuntimeError, match="division by zero"):
        bm("div", "si64")(np.array([[1, 2]]), np.array([[1, 0]]))
    with pytest.raises(DaphneRuntimeError, match="division by zero"):
        bm("mod", "si32")(np.array([[1, 2]], np.int32), 0)


def test_matrix_broadcasting_rows_and_columns():
    x = np.array([[1, 2], [3, 4]])
    assert bm("add", "si64")(x, np.array([[10, 20]])).tolist() == [[11, 22], [13, 24]]
    assert bm("add", "si64")(x, np.array([[10], [20]])).tolist() == [[11, 12], [23, 24]]
    assert bm("sub", "si64")(100, x).tolist() == [[99, 98], [97, 96]]


@pytest.mark.parametrize(
    "op,ls,rs", [("add", (3, 2), (2, 2)), ("mul", (2, 2), (3, 1)), ("lt", (1, 2), (2, 2)), ("add", (2, 3), (1, 2))]
)
def test_matrix_shape_mismatch_names_both_shapes(op, ls, rs):
    name = EW_BINARY[op].mnemonic
    with pytest.raises(DaphneRuntimeError, match=f"{name}: shape mismatch: lhs {ls[0]}x{ls[1]}, rhs {rs[0]}x{rs[1]}"):
        bm(op, "si64")(np.zeros(ls, np.int64), np.zeros(rs, np.int64))


def test_matrix_float_division_by_zero_signs():
    r = bm("div", "f64")(np.array([[0.0, 1.0, -1.0]]), 0.0)
    assert format_obj(r) == "DenseMatrix(1x3, double)\n-nan inf -inf\n"


def test_matrix_mod_pow_ints():
    assert bm("mod", "si64")(np.array([[-7, 7]]), 2).tolist() == [[-1, 1]]
    assert bm("pow", "si64")(2, np.array([[-1, 3, 62, 63]])).tolist() == [[0, 8, 2**62, -(2**63)]]


def test_matrix_comparisons_result_types():
    r = bm("lt", "f64")(np.array([[1.0, 3.0]]), 2.0)
    assert r.dtype == np.float64 and r.tolist() == [[1.0, 0.0]]
    s = bm("gt", "str")(object_matrix(["a", "b"], 1, 2), "a")
    assert format_obj(s) == "DenseMatrix(1x2, int64_t)\n0 1\n"


def test_matrix_min_max_nan_position():
    x = np.array([[math.nan, 1.0]])
    y = np.array([[1.0, math.nan]])
    r = bm("min", "f64")(x, y)
    assert math.isnan(r[0, 0]) and r[0, 1] == 1.0


def test_matrix_logical_and_concat():
    assert bm("and", "ui64")(np.array([[0, 2, 3]], np.uint64), np.array([[1, 0, 5]], np.uint64)).tolist() == [[0, 0, 1]]
    c = bm("concat", "str")(object_matrix(["a", "b"], 2, 1), "!")
    assert c.tolist() == [["a!"], ["b!"]]


def test_matrix_int_wraps():
    r = bm("add", "si8")(np.array([[127, -128]], np.int8), np.int8(1))
    assert r.dtype == np.int8 and r.tolist() == [[-128, -127]]


def test_matrix_kernel_rejects_two_scalars():
    with pytest.raises(DaphneRuntimeError, match="two scalars"):
        bm("add", "si64")(1, 2)


# ---------------------------------------------------------------------------------------------------------------------
# ew_unary
# ---------------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "op,vt,res",
    [
        ("sqrt", "si64", "f64"),
        ("exp", "f32", "f32"),
        ("round", "si64", "si64"),
        ("abs", "si8", "si8"),
        ("isNan", "f64", "f64"),
        ("lower", "str", "str"),
        ("sin", "bool", "f64"),
    ],
)
def test_unary_result_types(op, vt, res):
    assert ew_unary.result_vt(op, vt) == res


def test_unary_on_str_is_rejected():
    with pytest.raises(DaphneRuntimeError, match="not supported on value type str"):
        ew_unary.result_vt("sqrt", "str")


@pytest.mark.parametrize(
    "op,arg,domain",
    [
        ("sqrt", -1.0, "SQRT with domain [-0, inf]"),
        ("ln", -2.5, "LN with domain [-0, inf]"),
        ("asin", 2.0, "ASIN with domain [-1, 1]"),
        ("acos", -1.5, "ACOS with domain [-1, 1]"),
    ],
)
def test_unary_domain_errors(op, arg, domain):
    msg = f"invalid argument '{format_scalar(arg)}' passed to unary func {domain}"
    with pytest.raises(DaphneRuntimeError) as e:
        ew_unary.scalar_kernel(op, "f64")(arg)
    assert str(e.value) == msg
    with pytest.raises(DaphneRuntimeError) as e:
        ew_unary.matrix_kernel(op, "f64")(np.array([[0.5, arg]]))
    assert str(e.value) == msg


def test_unary_domain_edges():
    assert sign_bit(ew_unary.scalar_kernel("sqrt", "f64")(-0.0))
    assert ew_unary.scalar_kernel("ln", "f64")(0.0) == -math.inf
    assert math.isnan(ew_unary.scalar_kernel("sqrt", "f64")(math.nan))


def test_round_is_half_away_from_zero():
    r = ew_unary.scalar_kernel("round", "f64")
    assert (r(2.5), r(-2.5), r(0.49999999999999994), r(1.5)) == (3.0, -3.0, 0.0, 2.0)
    assert format_scalar(r(-0.3)) == "-0"
    m = ew_unary.matrix_kernel("round", "f64")(np.array([[-0.3, 0.5, -2.5, 1.4999]]))
    assert format_obj(m) == "DenseMatrix(1x4, double)\n-0 1 -3 1\n"


def test_floor_ceil_keep_negative_zero():
    assert format_scalar(ew_unary.scalar_kernel("ceil", "f64")(-0.5)) == "-0"
    assert ew_unary.scalar_kernel("floor", "f64")(-0.5) == -1.0
    assert (
        format_obj(ew_unary.matrix_kernel("ceil", "f64")(np.array([[-0.5, 1.2]]))) == "DenseMatrix(1x2, double)\n-0 2\n"
    )


def test_sign():
    s = ew_unary.scalar_kernel("sign", "f64")
    assert (s(-3.0), s(0.0), s(2.0)) == (-1.0, 0.0, 1.0)
    assert not sign_bit(s(-0.0)) and math.isnan(s(math.nan))
    assert ew_unary.scalar_kernel("sign", "si64")(-9) == -1
    assert (
        format_obj(ew_unary.matrix_kernel("sign", "f64")(np.array([[-0.0, 3.0, -2.0, math.nan]])))
        == "DenseMatrix(1x4, double)\n0 1 -1 nan\n"
    )


def test_minus_abs_wrap_for_ints():
    assert ew_unary.scalar_kernel("minus", "si64")(-(2**63)) == -(2**63)
    assert ew_unary.scalar_kernel("abs", "si64")(-(2**63)) == -(2**63)
    assert ew_unary.scalar_kernel("minus", "ui8")(5) == 251
    assert ew_unary.matrix_kernel("minus", "ui8")(np.array([[5]], np.uint8)).tolist() == [[251]]
    assert ew_unary.scalar_kernel("abs", "f64")(-2.5) == 2.5


def test_math_functions_and_ieee_results():
    assert ew_unary.scalar_kernel("sqrt", "si64", "f64")(16) == 4.0
    assert ew_unary.scalar_kernel("exp", "f64")(1000.0) == math.inf
    assert format_scalar(ew_unary.scalar_kernel("cos", "f64")(math.inf)) == "-nan"
    assert (
        format_obj(ew_unary.matrix_kernel("sin", "f64")(np.array([[math.inf, 0.0]])))
        == "DenseMatrix(1x2, double)\n-nan 0\n"
    )
    assert ew_unary.matrix_kernel("sqrt", "si64", "f64")(np.array([[4, 9]])).tolist() == [[2.0, 3.0]]


def test_isnan():
    assert ew_unary.scalar_kernel("isNan", "f64")(math.nan) == 1.0
    assert ew_unary.scalar_kernel("isNan", "si64")(3) == 0
    assert ew_unary.matrix_kernel("isNan", "f64")(np.array([[math.nan, 1.0]])).tolist() == [[1.0, 0.0]]


def test_lower_upper_are_ascii_only():
    assert ew_unary.scalar_kernel("upper", "str")("abcÄä") == "ABCÄä"
    assert ew_unary.scalar_kernel("lower", "str")("AbC") == "abc"
    assert ew_unary.matrix_kernel("lower", "str")(object_matrix(["AB", "c"], 1, 2)).tolist() == [["ab", "c"]]


# ---------------------------------------------------------------------------------------------------------------------
# agg
# ---------------------------------------------------------------------------------------------------------------------


def test_sum_axes_like_daphne():
    x = np.array([[3, 4], [4, 3]])
    assert format_obj(agg.col_kernel("sum", "si64")(x)) == "DenseMatrix(1x2, int64_t)\n7 7\n"
    assert format_obj(agg.row_kernel("sum", "si64")(x)) == "DenseMatrix(2x1, int64_t)\n7\n7\n"
    assert agg.full_kernel("sum", "si64")(x) == 14


def test_mean_of_ints_is_f64():
    assert agg.result_vt("mean", "si64") == "f64"
    assert agg.full_kernel("mean", "si64")(np.array([[3, 4]])) == 3.5


def test_agg_result_types():
    assert [agg.result_vt(op, "si32") for op in agg.AGG_OPS] == ["si32", "si32", "si32", "f64", "f64", "f64"]
    assert agg.result_vt("var", "f32") == "f32"


def test_var_and_stddev_are_population():
    z = np.array([[1.0, 2.0, 3.0, 4.0]])
    assert agg.full_kernel("var", "f64")(z) == 1.25
    assert agg.full_kernel("stddev", "f64")(z) == math.sqrt(1.25)
    assert agg.row_kernel("var", "f64")(z).tolist() == [[1.25]]
    assert agg.col_kernel("var", "f64")(z.T).tolist() == [[1.25]]
    assert agg.col_kernel("stddev", "f64")(np.array([[1.0, 5.0], [3.0, 5.0]])).tolist() == [[1.0, 0.0]]


def test_float_sum_is_sequential():
    vals = np.array([[1e16, 1.0, -1e16, 1.0, 3.3, 1e-3, -7.25, 0.1] * 5])
    seq = 0.0
    for v in vals.ravel().tolist():
        seq += v
    assert agg.full_kernel("sum", "f64")(vals) == seq
    assert agg.row_kernel("sum", "f64")(vals)[0, 0] == seq
    assert agg.col_kernel("sum", "f64")(vals.T)[0, 0] == seq
    assert agg.full_kernel("mean", "f64")(vals) == seq / vals.size


def test_min_max_nan_rules():
    y = np.array([[1.0, math.nan, -2.0], [math.nan, 5.0, 0.0]])
    assert agg.full_kernel("aggMin", "f64")(y) == -2.0
    rmin = agg.row_kernel("aggMin", "f64")(y)
    assert rmin[0, 0] == -2.0 and math.isnan(rmin[1, 0])  # a NaN first element wins
    cmax = agg.col_kernel("aggMax", "f64")(y)
    assert cmax[0, 0] == 1.0 and math.isnan(cmax[0, 1]) and cmax[0, 2] == 0.0


def test_min_keeps_first_of_equal_zeros():
    assert not sign_bit(agg.full_kernel("aggMin", "f64")(np.array([[0.0, -0.0]])))
    assert sign_bit(agg.full_kernel("aggMin", "f64")(np.array([[-0.0, 0.0]])))
    assert not sign_bit(agg.full_kernel("sum", "f64")(np.array([[-0.0, -0.0]])))


def test_empty_aggregations():
    assert agg.full_kernel("sum", "f64")(np.zeros((0, 3))) == 0.0
    assert format_scalar(agg.full_kernel("mean", "f64")(np.zeros((0, 3)))) == "-nan"
    assert agg.full_kernel("aggMin", "si64")(np.zeros((0, 3), np.int64)) == 2**63 - 1
    assert agg.full_kernel("aggMax", "f64")(np.zeros((0, 3))) == -math.inf


def test_int_sums_wrap_in_type():
    assert agg.full_kernel("sum", "si8")(np.array([[100, 100]], np.int8)) == -56
    assert agg.col_kernel("sum", "ui8")(np.array([[200], [100]], np.uint8)).tolist() == [[44]]


def test_f32_aggregation_stays_f32():
    r = agg.full_kernel("mean", "f32")(np.array([[0.1, 0.2]], np.float32))
    assert r == float(np.float32(np.float32(np.float32(0.1) + np.float32(0.2)) / np.float32(2)))
    assert agg.row_kernel("sum", "f32")(np.array([[1, 2]], np.float32)).dtype == np.float32


def test_string_min_max():
    s = object_matrix(["b", "a", "a", "c"], 2, 2)
    assert agg.col_kernel("aggMin", "str")(s).tolist() == [["a", "a"]]
    assert agg.row_kernel("aggMax", "str")(s).tolist() == [["b"], ["c"]]


def test_agg_ir_style_aliases():
    x = np.array([[3, 1], [2, 5]])
    assert agg.full_kernel("min", "si64")(x) == 1 and agg.result_vt("max", "si64") == "si64"
    assert agg.col_kernel("max", "si64")(x).tolist() == [[3, 5]]


def test_agg_unknown_op_and_str_sum():
    with pytest.raises(DaphneRuntimeError, match="unknown aggregation 'median'"):
        agg.result_vt("median", "f64")
    with pytest.raises(DaphneRuntimeError, match="not supported on value type str"):
        agg.result_vt("sum", "str")


# ---------------------------------------------------------------------------------------------------------------------
# datagen
# ---------------------------------------------------------------------------------------------------------------------


def test_fill():
    assert format_obj(datagen.fill(7, 2, 3, "si64")) == "DenseMatrix(2x3, int64_t)\n7 7 7\n7 7 7\n"
    assert datagen.fill("x", 1, 2, "str").tolist() == [["x", "x"]]
    assert datagen.fill(1.5, 0, 3, "f64").shape == (0, 3)
    with pytest.raises(DaphneRuntimeError, match="must not be negative"):
        datagen.fill(1, -1, 2, "si64")


def test_fill_zero_keeps_sign_and_type():
    """Zeros come from fresh zero pages, but -0.0 keeps its sign bit and every value type its dtype."""
    assert np.signbit(datagen.fill(-0.0, 2, 2, "f64")).all()
    assert not np.signbit(datagen.fill(0.0, 2, 2, "f64")).any()
    for vt, dt in [("f32", np.float32), ("si64", np.int64), ("ui8", np.uint8), ("bool", np.bool_)]:
        a = datagen.fill(0, 3, 2, vt)
        assert a.dtype == dt and a.shape == (3, 2) and not a.any()


def test_seq_inclusive_and_default_direction():
    assert datagen.seq(1, 10, 4, "si64").ravel().tolist() == [1, 5, 9]
    assert datagen.seq(10, 1, -3, "si64").ravel().tolist() == [10, 7, 4, 1]
    assert format_obj(datagen.seq(5, 1, 1, "si64")) == "DenseMatrix(0x1, int64_t)\n"
    assert datagen.seq(0, 6, 2, "si64").ravel().tolist() == [0, 2, 4, 6]
    assert datagen.seq(3, 3, -1, "si64").ravel().tolist() == [3]


def test_seq_float_overshoot_rule():
    assert datagen.seq(0.0, 1.0, 0.3, "f64").ravel().tolist() == [0.0, 0.3, 0.6, 0.8999999999999999]
    s = datagen.seq(0.0, 1.0, 0.1, "f64").ravel()
    assert len(s) == 11 and s[3] == 0.1 + 0.1 + 0.1  # accumulated, like `acc += inc`
    assert datagen.seq(1.0, 0.0, -0.25, "f64").ravel().tolist() == [1.0, 0.75, 0.5, 0.25, 0.0]
    assert datagen.seq(0.0, 1.0, 0.1, "f32").dtype == np.float32


def test_seq_errors():
    with pytest.raises(DaphneRuntimeError, match="inc must not be zero"):
        datagen.seq(1, 5, 0, "si64")
    with pytest.raises(DaphneRuntimeError, match="must not be NaN"):
        datagen.seq(0.0, math.nan, 1.0, "f64")
    assert datagen.seq(0.0, 5.0, -1.0, "f64").shape == (0, 1)


def test_rand_is_bit_exact_with_std_mt19937():
    # Reference values from a C++ program (g++ 12, libstdc++) running RandMatrix.h's algorithm.
    m = datagen.rand(2, 3, 0.0, 1.0, 1.0, 42, "f64")
    assert m.ravel().tolist() == [
        0.79654298428784598,
        0.18343478789336848,
        0.77969099761266125,
        0.59685016158005655,
        0.44583275754843343,
        0.099974920543840745,
    ]
    assert datagen.rand(3, 4, 1, 10, 0.5, 7, "si64").ravel().tolist() == [0, 3, 0, 4, 0, 0, 0, 5, 10, 4, 0, 3]


def test_rand_shape_type_and_sparsity():
    m = datagen.rand(10, 10, -5, 5, 0.3, 1, "si32")
    assert m.dtype == np.int32 and m.shape == (10, 10)
    assert np.count_nonzero(m) == 30 and m.min() >= -5 and m.max() <= 5
    f = datagen.rand(50, 4, 2.0, 3.0, 1.0, 3, "f32")
    assert f.dtype == np.float32 and (f >= 2.0).all() and (f < 3.0).all()
    assert np.count_nonzero(datagen.rand(4, 4, 1.0, 2.0, 0.0, 9, "f64")) == 0


def test_rand_seed_reproducible_and_random_seed():
    a = datagen.rand(5, 5, 0.0, 1.0, 1.0, 123, "f64")
    assert np.array_equal(a, datagen.rand(5, 5, 0.0, 1.0, 1.0, 123, "f64"))
    r = datagen.rand(5, 5, 0.0, 1.0, 1.0, -1, "f64")
    assert r.shape == (5, 5) and (r > 0).all()


def test_mt19937_raw_outputs():
    g = datagen.MT19937(5489)  # std::mt19937's default seed: 10000th output is 4123659995
    first = g.raw(10000)
    assert int(first[0]) == 3499211612 and int(first[-1]) == 4123659995


@pytest.mark.parametrize(
    "args,msg",
    [
        ((0, 2, 0.0, 1.0, 1.0, 1), "RandMatrix - numRows must be > 0"),
        ((2, 0, 0.0, 1.0, 1.0, 1), "RandMatrix - numCols must be > 0"),
        ((2, 2, 2.0, 1.0, 1.0, 1), "RandMatrix - min must be <= max"),
        ((2, 2, 0.0, 0.0, 1.0, 1), "RandMatrix - min and max must not both be zero"),
        ((2, 2, 0.0, 1.0, 1.5, 1), "sparsity has to be in the interval"),
        ((2, 2, 0.0, 1.0, -0.1, 1), "sparsity has to be in the interval"),
    ],
)
def test_rand_errors(args, msg):
    with pytest.raises(DaphneRuntimeError, match=msg):
        datagen.rand(*args, "f64")


def test_matrix_literal():
    assert datagen.matrix_from_values([True, 10], 2, 1, "si64").tolist() == [[1], [10]]
    assert datagen.matrix_from_values([1, 2, 3, 4, 5, 6], 2, 3, "f64").tolist() == [[1, 2, 3], [4, 5, 6]]
    assert datagen.matrix_from_values(["a", "b"], 1, 2, "str").tolist() == [["a", "b"]]
    with pytest.raises(DaphneRuntimeError, match="3 values do not fit a 2x2 matrix"):
        datagen.matrix_from_values([1, 2, 3], 2, 2, "si64")


def test_now_is_nanoseconds():
    t = datagen.now()
    assert isinstance(t, int) and abs(t - time.time_ns()) < 10**9 * 60


# ---------------------------------------------------------------------------------------------------------------------
# reorg, matmul
# ---------------------------------------------------------------------------------------------------------------------


def test_reshape_row_major():
    r = reorg.reshape(np.array([[3, 4, 4, 3]]).T, 2, 2)
    assert r.tolist() == [[3, 4], [4, 3]]
    assert reorg.reshape(object_matrix(["a", "b", "c", "d"], 4, 1), 2, 2).tolist() == [["a", "b"], ["c", "d"]]


def test_reshape_error():
    with pytest.raises(DaphneRuntimeError, match=r"cannot reshape a 2x3 matrix \(6 cells\) into 4x2 \(8 cells\)"):
        reorg.reshape(np.zeros((2, 3)), 4, 2)


def test_transpose():
    t = reorg.transpose(np.array([[1, 2, 3]]))
    assert t.tolist() == [[1], [2], [3]] and t.flags.c_contiguous


@pytest.mark.parametrize("shape", [(300, 1000), (1000, 300), (257, 1031), (5000, 3), (3, 5000)])
@pytest.mark.parametrize("dt", [np.float64, np.int32, np.bool_])
def test_transpose_of_large_matrices_in_tiles(shape, dt):
    X = (np.random.default_rng(1).random(shape) * 100).astype(dt)
    for src in (X, X[:, ::-1]):  # contiguous and strided inputs
        t = reorg.transpose(src)
        assert np.array_equal(t, src.T) and t.flags.c_contiguous and t.dtype == src.dtype


def test_matmul():
    a = np.array([[1, 2], [3, 4]])
    assert matmul.matmul(a, a, "si64").tolist() == [[7, 10], [15, 22]]
    assert matmul.matmul(a, np.array([[0.5], [1.0]]), "f64").tolist() == [[2.5], [5.5]]
    assert matmul.matmul(np.zeros((2, 0)), np.zeros((0, 3)), "f64").tolist() == [[0.0] * 3] * 2


@pytest.mark.parametrize("vt", ["f64", "f32", "si64", "bool"])
def test_matmul_transposed_operands_equal_materialised_transposes(vt):
    rng = np.random.default_rng(5)
    X = (rng.random((37, 6)) * 10).astype(ew_binary.dtype_of(vt))
    Y = (rng.random((37, 4)) * 10).astype(X.dtype)
    Yt, Xt = reorg.transpose(Y), reorg.transpose(X)
    for a, b, ta, tb in ((X, X, True, False), (X, Y, True, False), (Yt, Xt, False, True), (X, Yt, True, True)):
        got = matmul.matmul(a, b, vt, transa=ta, transb=tb)
        want = matmul.matmul(reorg.transpose(a) if ta else a, reorg.transpose(b) if tb else b, vt)
        assert got.dtype == want.dtype and got.flags.c_contiguous
        if vt in ("f64", "f32"):  # BLAS may add in another order (syrk for t(X) @ X)
            np.testing.assert_allclose(got, want, rtol=1e-5 if vt == "f32" else 1e-12)
        else:
            assert np.array_equal(got, want)
    with pytest.raises(DaphneRuntimeError, match="matMul: shape mismatch: lhs 6x37, rhs 6x37"):
        matmul.matmul(X, X, vt, transa=True, transb=True)


def test_matmul_transposed_csr_operand():
    from scipy.sparse import csr_array

    rng = np.random.default_rng(6)
    D = rng.random((20, 5)) * (rng.random((20, 5)) < 0.3)
    got = matmul.matmul(csr_array(D), D, "f64", transa=True)
    np.testing.assert_allclose(got, D.T @ D, rtol=1e-12)


@pytest.mark.parametrize("vt", ["f64", "f32", "si64"])
def test_matmul_transposed_csr_is_bit_identical_to_the_materialised_transpose(vt):
    """PageRank's `t(G) @ v` reads G transposed without building t(G) (a CSC view): every product of a transposed
    CSR operand equals the product of the materialised transpose bit for bit, dense and CSR results alike."""
    from scipy.sparse import csr_array

    rng = np.random.default_rng(7)
    dt = ew_binary.dtype_of(vt)
    G = csr_array((rng.random((40, 30)) * (rng.random((40, 30)) < 0.2) * 7).astype(dt))
    H = csr_array((rng.random((40, 25)) * (rng.random((40, 25)) < 0.3) * 7).astype(dt))
    v, W = (rng.random((40, 1)) * 7).astype(dt), (rng.random((3, 30)) * 7).astype(dt)
    cases = ((G, v, True, False), (W, G, False, True), (G, H, True, False), (H.T.tocsr(), G.T.tocsr(), False, True))
    for a, b, ta, tb in cases:
        got = matmul.matmul(a, b, vt, transa=ta, transb=tb)
        want = matmul.matmul(a.T.tocsr() if ta else a, b.T.tocsr() if tb else b, vt)
        assert type(got) is type(want) and got.dtype == want.dtype and got.shape == want.shape
        if hasattr(got, "toarray"):
            assert got.format == "csr"
            got, want = got.toarray(), want.toarray()
        assert got.tobytes() == want.tobytes()


def test_matmul_shape_error():
    with pytest.raises(DaphneRuntimeError, match="matMul: shape mismatch: lhs 2x3, rhs 2x3"):
        matmul.matmul(np.zeros((2, 3)), np.zeros((2, 3)), "f64")


# ---------------------------------------------------------------------------------------------------------------------
# indexing
# ---------------------------------------------------------------------------------------------------------------------

X12 = np.arange(12).reshape(3, 4)


def test_extract_positions_ranges_and_lists():
    assert indexing.extract(X12, 1, 2).tolist() == [[6]]
    assert indexing.extract(X12, (None, 2), None).tolist() == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert indexing.extract(X12, np.array([[2], [0], [2]]), (1, 3)).tolist() == [[9, 10], [1, 2], [9, 10]]
    assert indexing.extract(X12, -1, (-2, None)).tolist() == [[10, 11]]
    assert indexing.extract(X12, None, np.array([[3.7], [0.2]])).tolist() == [[3, 0], [7, 4], [11, 8]]
    assert indexing.extract(X12, (1, 1), None).shape == (0, 4)


def test_extract_shares_row_ranges_and_wide_column_ranges():
    """A range of rows with every column is a view, as DAPHNE's `DenseMatrix::sliceRow` (run-time values are
    never written in place), and so is a range of at least half of the columns (a strided view: copying it would
    cost a pass over nearly the whole matrix); narrower column ranges, positions and non-C-ordered inputs give a
    C-ordered copy."""
    for rows in [(None, None), (1, 3), 2]:
        r = indexing.extract(X12, rows, None)
        assert np.shares_memory(r, X12) and r.flags.c_contiguous
    for rows, cols in [((1, 3), (0, 3)), ((None, None), (1, 3))]:
        r = indexing.extract(X12, rows, cols)
        assert np.shares_memory(r, X12) and r.tolist() == X12[slice(*rows), slice(*cols)].tolist()
    for rows, cols in [((1, 3), (0, 1)), (np.array([[0], [1]]), None), (None, 1)]:
        r = indexing.extract(X12, rows, cols)
        assert not np.shares_memory(r, X12) and r.flags.c_contiguous
    F = np.asfortranarray(X12)
    r = indexing.extract(F, (0, 2), None)
    assert not np.shares_memory(r, F) and r.flags.c_contiguous and r.tolist() == X12[:2].tolist()


@pytest.mark.parametrize(
    "rows,cols,msg",
    [
        (3, None, "extract: row index 3 is out of bounds for a matrix of shape 3x4"),
        (-4, None, "extract: row index -4 is out of bounds for a matrix of shape 3x4"),
        (None, (1, 5), "extract: column range end 5 is out of bounds for a matrix of shape 3x4"),
        ((2, 1), None, "row range 2:1"),
        (np.array([[0], [7]]), None, "extract: row index 7 is out of bounds for a matrix of shape 3x4"),
        (None, np.array([[-1]]), "extract: column index -1 is out of bounds for a matrix of shape 3x4"),
    ],
)
def test_extract_out_of_bounds(rows, cols, msg):
    with pytest.raises(DaphneRuntimeError, match=msg.replace("(", r"\(")):
        indexing.extract(X12, rows, cols)


def test_insert_is_copy_on_write():
    r = indexing.insert(X12, np.array([[2], [0]]), (1, 3), np.array([[100, 101], [102, 103]]))
    assert r.tolist() == [[0, 102, 103, 3], [4, 5, 6, 7], [8, 100, 101, 11]]
    assert X12[0, 1] == 1
    r2 = indexing.insert(X12, 1, 1, np.array([[-5]]))
    assert r2[1, 1] == -5 and X12[1, 1] == 5
    assert indexing.insert(X12, (0, 2), np.array([[3], [0]]), np.array([[7, 8], [9, 10]]))[:, [0, 3]].tolist() == [
        [8, 7],
        [10, 9],
        [8, 11],
    ]


def test_insert_shape_mismatch():
    with pytest.raises(
        DaphneRuntimeError, match="insert: shape mismatch: the indexed region is 2x2, but the inserted matrix is 3x1"
    ):
        indexing.insert(X12, (0, 2), (0, 2), np.zeros((3, 1), np.int64))


def test_filter_rows_and_cols():
    assert indexing.filter_rows(X12, np.array([[1], [0], [1]])).tolist() == [[0, 1, 2, 3], [8, 9, 10, 11]]
    assert indexing.filter_cols(X12, np.array([[0], [1], [0], [1]])).tolist() == [[1, 3], [5, 7], [9, 11]]


def test_filter_errors():
    with pytest.raises(DaphneRuntimeError, match="one entry per row"):
        indexing.filter_rows(X12, np.array([[1], [0]]))
    with pytest.raises(DaphneRuntimeError, match="only 0 and 1, found 2"):
        indexing.filter_cols(X12, np.array([[0], [2], [0], [1]]))


# ---------------------------------------------------------------------------------------------------------------------
# meta, misc, frame
# ---------------------------------------------------------------------------------------------------------------------


def test_dimensions():
    assert (meta.nrow(X12), meta.ncol(X12), meta.ncell(X12)) == (3, 4, 12)
    f = Frame([np.array([1, 2]), np.array([1.5, 2.5])])
    assert (meta.nrow(f), meta.ncol(f), meta.ncell(f)) == (2, 2, 4)


def test_as_scalar():
    assert meta.as_scalar(np.array([[2.5]])) == 2.5 and type(meta.as_scalar(np.array([[2.5]]))) is float
    assert meta.as_scalar(np.array([[7]], np.uint8)) == 7
    assert meta.as_scalar(object_matrix(["s"], 1, 1)) == "s"
    with pytest.raises(DaphneRuntimeError, match="exactly one element \\(1x1\\), but it is 2x3"):
        meta.as_scalar(np.zeros((2, 3)))


def test_stop_message():
    with pytest.raises(DaphneRuntimeError, match="^system stopped: bye$"):
        misc.stop("bye")


def test_frame_validation():
    with pytest.raises(DaphneRuntimeError, match="same number of rows"):
        Frame([np.array([1, 2]), np.array([1.0])])
    with pytest.raises(DaphneRuntimeError, match="labels must be unique"):
        Frame([np.array([1]), np.array([2])], ["a", "a"])
    f = Frame([np.array([1, 2]), np.array([1.5, 2.5])], ["a", "b"])
    assert f.schema == ["si64", "f64"] and f.column("b").tolist() == [[1.5], [2.5]]
    with pytest.raises(DaphneRuntimeError, match="no column with label 'z'"):
        f.column("z")


def test_nan_constant_prints_minus_nan():
    assert format_scalar(NEG_NAN) == "-nan"
