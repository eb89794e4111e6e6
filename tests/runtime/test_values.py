"""Value-type registry and C++-faithful casts (expected values checked against g++ 12 on x86-64)."""

import math

import numpy as np
import pytest

from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.values import (
    CPP_NAMES,
    DTYPES,
    GENERALITY,
    NEG_NAN,
    VALUE_TYPES,
    cast_matrix,
    cast_scalar,
    dtype_of,
    float_array_to_int,
    float_to_str,
    most_general,
    object_matrix,
    parse_float,
    parse_int,
    to_f32,
    vt_of,
    wrap_int,
)


def test_registry_covers_all_value_types():
    assert set(VALUE_TYPES) == set(DTYPES) == set(CPP_NAMES) == set(GENERALITY)


@pytest.mark.parametrize(
    "vt,cpp",
    [
        ("f64", "double"),
        ("f32", "float"),
        ("si64", "int64_t"),
        ("si32", "int32_t"),
        ("si8", "int8_t"),
        ("ui64", "uint64_t"),
        ("ui32", "uint32_t"),
        ("ui8", "uint8_t"),
        ("bool", "bool"),
        ("str", "std::string"),
        ("index", "uint64_t"),
    ],
)
def test_cpp_names(vt, cpp):
    assert CPP_NAMES[vt] == cpp


def test_dtypes():
    assert dtype_of("si8") == np.int8 and dtype_of("str").kind == "O" and dtype_of("index") == np.uint64


def test_unknown_value_type_raises():
    with pytest.raises(DaphneRuntimeError, match="unknown value type 'i64'"):
        dtype_of("i64")


def test_vt_of_scalars_and_matrices():
    assert [vt_of(x) for x in (True, 3, 2.5, "s")] == ["bool", "si64", "f64", "str"]
    assert vt_of(np.zeros((1, 1), np.float32)) == "f32"
    assert vt_of(np.zeros((1, 1), np.uint8)) == "ui8"
    assert vt_of(object_matrix(["a"], 1, 1)) == "str"
    assert vt_of(np.int32(4)) == "si32"


def test_most_general_follows_daphne_order():
    assert most_general("si64", "f64") == "f64"
    assert most_general("si64", "ui64") == "ui64"
    assert most_general("si64", "f32") == "f32"
    assert most_general("bool", "si64") == "si64"
    assert most_general("ui32", "index", "si32") == "index"
    assert most_general("f64", "str") == "str"
    assert most_general("si8", "ui8") == "ui8"


def test_wrap_int():
    assert wrap_int(2**63, "si64") == -(2**63)
    assert wrap_int(-1, "ui64") == 2**64 - 1
    assert wrap_int(128, "si8") == -128
    assert wrap_int(256 + 5, "ui8") == 5
    assert wrap_int(-129, "si8") == 127
    assert wrap_int(12, "si32") == 12


@pytest.mark.parametrize(
    "x,expected",
    [
        # value: si64, ui64, si32, ui32, si8, ui8 (g++ -O0 on x86-64)
        (3.7, (3, 3, 3, 3, 3, 3)),
        (-3.7, (-3, 18446744073709551613, -3, 4294967293, -3, 253)),
        (1234567.0, (1234567, 1234567, 1234567, 1234567, -121, 135)),
        (1e10, (10000000000, 10000000000, -2147483648, 1410065408, 0, 0)),
        (-1e10, (-10000000000, 18446744063709551616, -2147483648, 2884901888, 0, 0)),
        (1e300, (-9223372036854775808, 0, -2147483648, 0, 0, 0)),
        (-1e300, (-9223372036854775808, 9223372036854775808, -2147483648, 0, 0, 0)),
        (1.8e19, (-9223372036854775808, 18000000000000000000, -2147483648, 0, 0, 0)),
        (1.9e19, (-9223372036854775808, 0, -2147483648, 0, 0, 0)),
        (math.nan, (-9223372036854775808, 9223372036854775808, -2147483648, 0, 0, 0)),
        (300.7, (300, 300, 300, 300, 44, 44)),
        (-129.0, (-129, 18446744073709551487, -129, 4294967167, 127, 127)),
        (2147483648.0, (2147483648, 2147483648, -2147483648, 2147483648, 0, 0)),
    ],
)
def test_float_to_int_casts_match_x86(x, expected):
    vts = ("si64", "ui64", "si32", "ui32", "si8", "ui8")
    assert tuple(cast_scalar(x, vt) for vt in vts) == expected
    arr = np.array([[x]])
    assert tuple(int(float_array_to_int(arr, vt)[0, 0]) for vt in vts) == expected


def test_cast_to_bool():
    assert cast_scalar(0.0, "bool") is False
    assert cast_scalar(-0.0, "bool") is False
    assert cast_scalar(math.nan, "bool") is True
    assert cast_scalar(7, "bool") is True
    assert cast_scalar("0", "bool") is False


def test_number_to_str_uses_to_string():
    assert cast_scalar(1.5, "str") == "1.500000"
    assert cast_scalar(-0.0, "str") == "-0.000000"
    assert cast_scalar(42, "str") == "42"
    assert cast_scalar(True, "str") == "1"
    assert cast_scalar(1e-7, "str") == "0.000000"
    assert float_to_str(NEG_NAN) == "-nan"
    assert float_to_str(math.inf) == "inf"


def test_str_to_int_like_stoll():
    assert cast_scalar("42", "si64") == 42
    assert cast_scalar("  -17abc", "si64") == -17
    assert cast_scalar("+5", "si32") == 5
    assert cast_scalar("-1", "ui64") == 2**64 - 1  # stoull negates in unsigned arithmetic
    assert cast_scalar("300", "ui8") == 44


def test_str_to_float_like_stod():
    assert cast_scalar("1.5", "f64") == 1.5
    assert cast_scalar(" 2e3xyz", "f64") == 2000.0
    assert cast_scalar("inf", "f64") == math.inf
    assert cast_scalar("-Infinity", "f64") == -math.inf
    assert math.isnan(cast_scalar("nan", "f64"))
    assert cast_scalar("0x10", "f64") == 16.0
    assert cast_scalar(".5", "f64") == 0.5
    assert cast_scalar("0.1", "f32") == to_f32(0.1)


@pytest.mark.parametrize("text", ["abc", "", "   ", "-", "e5"])
def test_bad_number_text_raises(text):
    with pytest.raises(DaphneRuntimeError, match="cannot convert string"):
        parse_float(text)
    with pytest.raises(DaphneRuntimeError, match="cannot convert string"):
        parse_int(text, "si64")


def test_out_of_range_text_raises():
    with pytest.raises(DaphneRuntimeError, match="out of range"):
        cast_scalar("99999999999999999999", "si64")
    with pytest.raises(DaphneRuntimeError, match="out of range"):
        cast_scalar("1e400", "f64")
    with pytest.raises(DaphneRuntimeError, match="out of range"):
        cast_scalar("1e39", "f32")


def test_f32_rounding():
    assert cast_scalar(0.1, "f32") == 0.10000000149011612
    assert cast_scalar(1e300, "f32") == math.inf
    assert cast_scalar(16777217, "f32") == 16777216.0
    assert math.copysign(1.0, to_f32(NEG_NAN)) == -1.0


def test_int_casts_wrap():
    assert cast_scalar(-1, "ui8") == 255
    assert cast_scalar(2**63, "si64") == -(2**63)
    assert cast_scalar(True, "si64") == 1
    assert cast_scalar(3, "f64") == 3.0 and type(cast_scalar(3, "f64")) is float


def test_cast_matrix():
    m = np.array([[1.9, -1.9], [300.5, math.nan]])
    assert cast_matrix(m, "si64").tolist() == [[1, -1], [300, -(2**63)]]
    assert cast_matrix(m, "ui8").tolist() == [[1, 255], [44, 0]]
    assert cast_matrix(m, "bool").tolist() == [[True, True], [True, True]]
    assert cast_matrix(np.array([[1, 2]]), "str").tolist() == [["1", "2"]]
    assert cast_matrix(np.array([[1.5]]), "str").tolist() == [["1.500000"]]
    assert cast_matrix(object_matrix(["3", "4.5"], 1, 2), "f64").tolist() == [[3.0, 4.5]]
    same = np.zeros((2, 2))
    assert cast_matrix(same, "f64") is same


def test_cast_matrix_bad_text_raises():
    with pytest.raises(DaphneRuntimeError, match="cannot convert string 'x'"):
        cast_matrix(object_matrix(["1", "x"], 2, 1), "si64")
