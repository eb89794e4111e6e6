"""DAPHNE print format, byte for byte (facts §3 examples; float formats checked against glibc `%g`)."""

import io
import math
import sys
import time

import numpy as np
import pytest

from daphnec.runtime.frame import Frame
from daphnec.runtime.printing import format_obj, format_scalar, print_obj
from daphnec.runtime.values import NEG_NAN, object_matrix


@pytest.mark.parametrize(
    "x,text",
    [
        (0.1, "0.1"),
        (1e20, "1e+20"),
        (1234567.0, "1.23457e+06"),
        (123456.0, "123456"),
        (1e-5, "1e-05"),
        (1 / 3, "0.333333"),
        (-0.0, "-0"),
        (math.nan, "nan"),
        (math.inf, "inf"),
        (-math.inf, "-inf"),
        (NEG_NAN, "-nan"),
        (10e12, "1e+13"),
        (1e-6, "1e-06"),
        (0e3, "0"),
        (2.5, "2.5"),
        (999999.5, "1e+06"),
        (1e-320, "9.99989e-321"),
        (123456789012.0, "1.23457e+11"),
    ],
)
def test_float_scalars_print_like_g(x, text):
    assert format_scalar(x) == text


def test_runtime_nan_prints_minus_nan():
    assert format_scalar(math.inf - math.inf) == "-nan"  # x86 default NaN has the sign bit


@pytest.mark.parametrize(
    "x,text",
    [
        (True, "1"),
        (False, "0"),
        (-42, "-42"),
        (2**64 - 1, "18446744073709551615"),
        ("hello world", "hello world"),
        ("", ""),
        (np.int8(-42), "-42"),
        (np.float32(0.1), "0.1"),
    ],
)
def test_other_scalars(x, text):
    assert format_scalar(x) == text


def test_print_scalar_newline_and_stderr(capsys):
    print_obj(3)
    print_obj(2.5, False)
    print_obj("s", True, True)
    print_obj(True, False, True)
    out, err = capsys.readouterr()
    assert out == "3\n2.5"
    assert err == "s\n1"


def test_dense_matrix_int_and_double():
    assert format_obj(np.array([[2], [2]])) == "DenseMatrix(2x1, int64_t)\n2\n2\n"
    assert format_obj(np.array([[0.5], [1.0]])) == "DenseMatrix(2x1, double)\n0.5\n1\n"
    assert format_obj(np.array([[7, 7]])) == "DenseMatrix(1x2, int64_t)\n7 7\n"


def test_empty_matrix_prints_only_header():
    assert format_obj(np.zeros((0, 1), np.int64)) == "DenseMatrix(0x1, int64_t)\n"


def test_matrix_with_zero_columns_prints_empty_rows():
    assert format_obj(np.zeros((2, 0))) == "DenseMatrix(2x0, double)\n\n\n"


def test_bool_and_string_matrices():
    assert format_obj(np.array([[True], [True], [False], [True]])) == "DenseMatrix(4x1, bool)\n1\n1\n0\n1\n"
    assert format_obj(object_matrix(["a", "b", "c", "d"], 2, 2)) == "DenseMatrix(2x2, std::string)\na b\nc d\n"


def test_string_matrix_with_percent_and_spaces():
    assert format_obj(object_matrix(["%d x", "100%"], 1, 2)) == "DenseMatrix(1x2, std::string)\n%d x 100%\n"


@pytest.mark.parametrize(
    "dt,cpp,vals,row",
    [
        (np.int8, "int8_t", [-42, 7], "-42 7"),
        (np.uint8, "uint8_t", [200, 65], "200 65"),
        (np.int32, "int32_t", [-1, 2], "-1 2"),
        (np.uint32, "uint32_t", [4294967295, 0], "4294967295 0"),
        (np.uint64, "uint64_t", [2**64 - 1, 1], "18446744073709551615 1"),
        (np.float32, "float", [0.1, 1e20], "0.1 1e+20"),
    ],
)
def test_cpp_type_names_in_header(dt, cpp, vals, row):
    assert format_obj(np.array([vals], dtype=dt)) == f"DenseMatrix(1x2, {cpp})\n{row}\n"


def test_matrix_nan_signs_and_negative_zero():
    m = np.array([[1.5, NEG_NAN], [math.nan, -0.0], [math.inf, -math.inf]])
    assert format_obj(m) == "DenseMatrix(3x2, double)\n1.5 -nan\nnan -0\ninf -inf\n"


def test_print_matrix_ignores_newline_flag(capsys):
    print_obj(np.array([[1, 2]]), False)
    print_obj(np.array([[3]]), True, True)
    out, err = capsys.readouterr()
    assert out == "DenseMatrix(1x2, int64_t)\n1 2\n"
    assert err == "DenseMatrix(1x1, int64_t)\n3\n"


def test_frame_print_with_labels():
    f = Frame([np.array([1, 2, 3]), np.array([1.1, 2.2, 3.3])], ["col 1", "col 2"])
    assert format_obj(f) == "Frame(3x2, [col 1:int64_t, col 2:double])\n1 1.1\n2 2.2\n3 3.3\n"


def test_frame_default_labels_and_string_column():
    f = Frame([np.array([[1], [2]]), object_matrix(["x", "y"], 2, 1), np.array([True, False])])
    assert f.labels == ["col_0", "col_1", "col_2"]
    assert format_obj(f) == "Frame(2x3, [col_0:int64_t, col_1:std::string, col_2:bool])\n1 x 1\n2 y 0\n"


def test_frame_with_no_rows():
    f = Frame([np.zeros(0, np.int64)], ["a"])
    assert format_obj(f) == "Frame(0x1, [a:int64_t])\n"


def test_print_frame(capsys):
    print_obj(Frame([np.array([NEG_NAN])], ["v"]), False)
    assert capsys.readouterr().out == "Frame(1x1, [v:double])\n-nan\n"


def test_print_500k_ints_is_fast():
    old = sys.stdout
    sys.stdout = io.StringIO()
    try:
        t = time.perf_counter()
        for i in range(500_000):
            print_obj(i)
        elapsed = time.perf_counter() - t
    finally:
        sys.stdout = old
    assert elapsed < 1.5  # measured ~0.2 s; generous bound for noisy shared machines


def test_print_1000x1000_matrix_is_fast():
    m = np.random.default_rng(0).random((1000, 1000))
    t = time.perf_counter()
    text = format_obj(m)
    elapsed = time.perf_counter() - t
    assert text.count("\n") == 1001
    assert elapsed < 1.5  # measured ~0.25 s
