"""Bad input to the matrix builtins: DAPHNE's exit code (1 parse, 2 compile, 3 execution), one
`file:line:col: error: ...` line naming the problem (both shapes for shape mismatches), no traceback."""

from __future__ import annotations

import pytest


def _unknown_shapes(fn: str) -> str:
    """A function whose matrix parameters have unknown shapes, so shape checks happen at run time."""
    return "def f(A: matrix<f64>, B: matrix<f64>) { print(" + fn + "(A, B)); }\n"


_N = "n = 2 + as.si64(now() < 0);\n"
"""A size known only at run time (typed functions are cloned per call site with the shapes the call passes)."""


# (name, script, exit code, "line:col" or None, message fragment)
CASES: list[tuple[str, str, int, str | None, str]] = [
    # --- parse errors (exit 1) ---
    ("idxmin_bad_axis", "print(idxMin(fill(1, 2, 2), 2));", 1, "1:7", "axis of idxMin"),
    ("idxmax_no_axis", "print(idxMax(fill(1, 2, 2)));", 1, "1:7", "built-in function 'idxMax' expects 2 argument(s)"),
    ("order_odd_args", "print(order(fill(1, 2, 2), 0, true));", 1, "1:7", "even number of at least 4 arguments"),
    (
        "order_non_constant_flag",
        "b = as.scalar(fill(true, 1, 1));\nprint(order(fill(1, 2, 2), 0, true, b));",
        1,
        "2:7",
        "returnIndexes of 'order' must be a constant",
    ),
    ("ctable_six_args", "print(ctable([1], [1], 1, 2, 3, 4));", 1, "1:7", "'ctable' expects 2 to 5 argument(s)"),
    ("bin_three_args", "print(bin([1, 2], 2, 1));", 1, "1:7", "'bin' expects exactly 2 or 4 argument(s)"),
    ("sample_unknown_keyword", "print(sample(10, 2, false, 1, replace=true));", 1, "1:7", "has no parameter 'replace'"),
    ("eigen_single_target", "x = eigen(fill(1.0, 2, 2));", 1, "1:5", "returns 2 values"),
    ("recode_three_targets", "a, b, c = recode([1, 2], false);", 1, "1:11", "returns 2 value(s)"),
    # --- compile errors (exit 2) ---
    ("cbind_shape", "print(cbind(fill(1, 2, 2), fill(1, 3, 2)));", 2, "1:7", "shape mismatch: lhs 2x2, rhs 3x2"),
    ("rbind_shape", "print(rbind(fill(1, 2, 2), fill(1, 2, 3)));", 2, "1:7", "shape mismatch: lhs 2x2, rhs 2x3"),
    ("solve_shape", "print(solve(fill(1.0, 2, 2), fill(1.0, 3, 1)));", 2, "1:7", "shape mismatch: lhs 2x2, rhs 3x1"),
    ("solve_int", "print(solve(fill(1, 2, 2), fill(1, 2, 1)));", 2, "1:7", "f32 or f64"),
    ("gemv_shape", "print(gemv(fill(1.0, 2, 3), fill(1.0, 3, 1)));", 2, "1:7", "shape mismatch: lhs 2x3, rhs 3x1"),
    (
        "outer_not_column",
        "print(outerAdd(fill(1, 2, 2), fill(1, 1, 2)));",
        2,
        "1:7",
        "shape mismatch: lhs 2x2, rhs 1x2",
    ),
    ("cbind_scalar", "print(cbind(1, fill(1, 2, 2)));", 2, "1:7", "must be a matrix or a frame"),
    ("is_symmetric_not_square", "print(isSymmetric(fill(1, 2, 3)));", 2, "1:7", "square matrix, got 2x3"),
    ("lower_tri_not_square", "print(lowerTri(fill(1, 2, 3), true, true));", 2, "1:7", "square matrix, got 2x3"),
    ("diag_vector_not_square", "print(diagVector(fill(1, 2, 3)));", 2, "1:7", "square matrix, got 2x3"),
    ("diag_matrix_not_column", "print(diagMatrix(fill(1, 2, 2)));", 2, "1:7", "column matrix (n x 1), got 2x2"),
    ("eigen_int", "a, b = eigen(fill(1, 2, 2));", 2, "1:8", "matrix of f32 or f64"),
    ("quantize_int", "print(quantize(fill(1, 2, 2), 0.0, 1.0));", 2, "1:7", "matrix of f32 or f64"),
    ("recode_two_columns", "a, b = recode(fill(1, 2, 2), false);\nprint(a);", 2, "1:8", "exactly one column, got 2x2"),
    (
        "one_hot_info_shape",
        "print(oneHot(fill(1, 2, 2), [1, 1, 1](1, 3)));",
        2,
        "1:7",
        "shape mismatch: lhs 2x2, rhs 1x3",
    ),
    (
        "order_column_out_of_bounds",
        "print(order(fill(1, 2, 2), 5, true, false));",
        2,
        "1:7",
        "column index 5 is out of bounds",
    ),
    (
        "ctable_not_columns",
        "print(ctable(fill(1, 2, 2), fill(1, 2, 1)));",
        2,
        "1:7",
        "shape mismatch: lhs 2x2, rhs 2x1",
    ),
    ("relu_int", "print(relu(fill(1, 2, 2)));", 2, "1:7", "matrix of f32 or f64"),
    ("cum_sum_str", 'print(cumSum(fill("a", 2, 2)));', 2, "1:7", "numeric matrix"),
    # --- execution errors (exit 3) ---
    (
        "cbind_shape_runtime",
        _unknown_shapes("cbind") + _N + "f(fill(1.0, n, 2), fill(1.0, n + 1, 2));",
        3,
        "1:47",
        "shape mismatch: lhs 2x2, rhs 3x2",
    ),
    (
        "rbind_shape_runtime",
        _unknown_shapes("rbind") + _N + "f(fill(1.0, n, 2), fill(1.0, n, n + 1));",
        3,
        "1:47",
        "shape mismatch: lhs 2x2, rhs 2x3",
    ),
    (
        "solve_shape_runtime",
        _unknown_shapes("solve") + _N + "f(fill(1.0, n, n), fill(1.0, n + 1, 1));",
        3,
        "1:47",
        "shape mismatch: lhs 2x2, rhs 3x1",
    ),
    (
        "solve_singular",
        "print(solve(fill(1.0, 2, 2), fill(1.0, 2, 1)));",
        3,
        "1:7",
        "solve: the 2x2 matrix A is singular (not invertible), so A @ x = b has no unique solution",
    ),
    ("eigen_not_symmetric", "a, b = eigen([1.0, 2.0, 3.0, 4.0](2, 2));\nprint(a);", 3, "1:8", "must be symmetric"),
    ("sample_range_too_small", "print(sample(3, 5, false, 1));", 3, "1:7", "range (3) must be >= size (5)"),
    ("sample_zero_size", "print(sample(3, 0, true, 1));", 3, "1:7", "size must be > 0"),
    ("one_hot_value_out_of_range", "print(oneHot([0, 3](2, 1), [2](1, 1)));", 3, "1:7", "out of the range [0, 1]"),
    ("ctable_negative", "print(ctable([0, -1], [1, 1]));", 3, "1:7", "must not contain negative numbers"),
    ("bin_zero_bins", "print(bin([1, 2], 0, 1, 2));", 3, "1:7", "numBins must be greater than zero"),
    ("bin_min_gt_max", "print(bin([1, 2], 2, 5, 1));", 3, "1:7", "min must not be greater than max"),
    (
        "conv2d_filter_shape",
        "o, h, w = conv2d(fill(1.0, 1, 16), fill(1.0, 1, 3), 1, 1, 4, 4, 2, 2, 1, 1, 0, 0);\nprint(o);",
        3,
        "1:11",
        "the filter must be F x 4",
    ),
    (
        "max_pool_input_shape",
        "o, h, w = max_pool2d(fill(1.0, 1, 15), 1, 1, 4, 4, 2, 2, 2, 2, 0, 0);\nprint(o);",
        3,
        "1:11",
        "the input must be 1x16",
    ),
    # --- DNN backward builtins ---
    (
        "conv2d_backward_filter_arity",
        "print(conv2d_backward_filter(fill(1.0, 1, 16), fill(1.0, 1, 9), 1, 1));",
        1,
        "1:7",
        "'conv2d_backward_filter' expects 14 argument(s)",
    ),
    (
        "batch_norm2d_backward_two_targets",
        "g = fill(1.0, 1, 1);\na, b = batch_norm2d_backward(g, g, fill(1.0, 2, 4), fill(1.0, 2, 4), g, 0.1);",
        1,
        "2:8",
        "returns 3 value(s)",
    ),
    (
        "conv2d_backward_data_int_filter",
        "print(conv2d_backward_data(fill(1, 1, 4), fill(1.0, 1, 9), 1, 1, 0, 0, 1, 1, 4, 4, 1, 1, 2, 2));",
        2,
        "1:7",
        "f32 or f64",
    ),
    (
        "max_pool2d_backward_dout_shape",
        "print(max_pool2d_backward(fill(1.0, 1, 16), fill(1.0, 1, 3), 1, 1, 4, 4, 2, 2, 2, 2, 0, 0));",
        3,
        "1:7",
        "dOut must be 1x4",
    ),
    (
        "conv2d_backward_filter_channels",
        "print(conv2d_backward_filter(fill(1.0, 1, 16), fill(1.0, 1, 9), 1, 1, 0, 0, 1, 1, 4, 4, 1, 2, 2, 2));",
        3,
        "1:7",
        "filterNumChannels (2) must equal inputNumChannels (1)",
    ),
]


def test_there_are_many_bad_input_cases() -> None:
    assert len(CASES) >= 15


@pytest.mark.parametrize(("name", "source", "code", "where", "fragment"), CASES, ids=[c[0] for c in CASES])
def test_bad_matrix_builtin_input(
    check_bad_input, name: str, source: str, code: int, where: str | None, fragment: str
) -> None:
    check_bad_input(source, code, where, fragment)
