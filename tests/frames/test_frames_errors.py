"""Bad input for frames and lists: DAPHNE's exit code (1 parse, 2 compile, 3 execution), one
`file:line:col: error: ...` line on stderr naming the problem, and no Python traceback."""

from __future__ import annotations

import pytest

F2 = 'F = createFrame([1, 2], [0.5, 1.5], "a", "b");\n'

# (name, script, exit code, "line:col" or None, message fragment)
CASES: list[tuple[str, str, int, str | None, str]] = [
    # --- parse errors (exit 1): builtin arguments ---
    (
        "create_frame_label_count",
        'F = createFrame([1, 2], [3, 4], "a");',
        1,
        "1:5",
        "either no column labels or as many labels as columns, but got 2 column(s) and 1 label(s)",
    ),
    (
        "create_frame_label_before_column",
        'F = createFrame([1, 2], "a", [3, 4]);',
        1,
        "1:5",
        "must be one or more matrices, optionally followed by equally many strings",
    ),
    ("create_frame_scalar_column", 'F = createFrame(1, "a");', 1, "1:5", "must be one or more matrices"),
    ("create_frame_no_args", "F = createFrame();", 1, "1:5", "expects at least 1 argument(s)"),
    ("group_sum_too_few", F2 + 'print(groupSum(F, "a"));', 1, "2:7", "'groupSum' expects at least 3 argument(s)"),
    ("set_col_labels_no_labels", F2 + "print(setColLabels(F));", 1, "2:7", "'setColLabels' expects at least 2"),
    ("semi_join_single_result", F2 + 'x = semiJoin(F, F, "a", "a");', 1, "2:5", "'semiJoin' returns 2 values"),
    ("remove_single_result", "L = createList([1]);\nx = remove(L, 0);", 1, "2:5", "'remove' returns 2 values"),
    ("inner_join_arity", F2 + 'print(innerJoin(F, F, "a"));', 1, "2:7", "'innerJoin' expects 4 to 5 argument(s)"),
    ("duplicate_literal_labels", 'F = {"a": [1], "a": [2]};', 1, "1:5", "frame labels must be unique"),
    # --- compile errors (exit 2): labels and types known at compile time ---
    (
        "unknown_label",
        F2 + 'print(F[, "c"]);',
        2,
        "2:7",
        "the frame has no column labeled 'c' (its labels are: 'a', 'b')",
    ),
    ("unknown_computed_label", F2 + 'p = "x";\nprint(F[, p + "y"]);', 2, "3:7", "no column labeled 'xy'"),
    (
        "literal_column_lengths",
        'F = {"a": [1, 2], "b": [1, 2, 3]};\nprint(F);',
        2,
        "1:5",
        "all columns must have the same number of rows, got 2, 3",
    ),
    (
        "column_not_single_column",
        'F = createFrame(fill(1, 2, 2), "a");\nprint(F);',
        2,
        "1:5",
        "each column must be a single-column matrix, got 2x2",
    ),
    (
        "join_on_missing_column",
        F2 + 'G = createFrame([1], "k");\nprint(innerJoin(F, G, "a", "c"));',
        2,
        "3:7",
        "the right join column: the frame has no column labeled 'c' (its labels are: 'k')",
    ),
    (
        "join_str_with_number",
        F2 + 'G = createFrame(["x"], "k");\nprint(innerJoin(F, G, "a", "k"));',
        2,
        "3:7",
        "cannot join the si64 column 'a' with the str column 'k'",
    ),
    ("semi_join_missing_left", F2 + 'r, t = semiJoin(F, F, "z", "a");', 2, "2:8", "no column labeled 'z'"),
    (
        "group_join_missing_agg",
        F2 + 'g, t = groupJoin(F, F, "a", "a", "zz");',
        2,
        "2:8",
        "the aggregated column: the frame has no column labeled 'zz'",
    ),
    ("group_sum_missing_key", F2 + 'print(groupSum(F, "q", "b"));', 2, "2:7", "no column labeled 'q'"),
    (
        "as_matrix_mixed_types",
        F2 + "print(as.matrix(F));",
        2,
        "2:7",
        "columns have different value types (si64, f64); give the matrix's value type, e.g. as.matrix<f64>",
    ),
    ("as_value_type_on_frame", F2 + "print(as.f64(F));", 2, "2:7", "casting a frame to value type f64"),
    (
        "set_col_labels_count",
        F2 + 'print(setColLabels(F, "x"));',
        2,
        "2:7",
        "the number of labels (1) does not match the number of columns of the frame (2)",
    ),
    ("set_col_labels_duplicate", F2 + 'print(setColLabels(F, "x", "x"));', 2, "2:7", "'x' occurs more than once"),
    (
        "intersect_schema",
        F2 + 'print(intersect(F, createFrame([1.5], [2], "a", "b")));',
        2,
        "2:7",
        "same column value types, got [si64, f64] and [f64, si64]",
    ),
    ("filter_frame_columns", F2 + "print(F[[, [1, 0] ]]);", 2, "2:7", "columns of a frame by a bit vector"),
    ("frame_op_on_matrix", 'print(setColLabelsPrefix([1, 2], "p"));', 2, "1:7", "the argument must be a frame"),
    ("create_list_mixed_types", "L = createList([1.0], [2]);", 2, "1:5", "same value type, got f64, si64"),
    ("create_list_of_frame", F2 + "L = createList(F);", 2, "2:5", "the elements of a list must be matrices"),
    (
        "append_other_value_type",
        "L = createList([1.0]);\nL = append(L, [1]);",
        2,
        "2:5",
        "the element's value type (si64) differs from the list's (f64)",
    ),
    ("length_of_frame", F2 + "print(length(F));", 2, "2:7", "the first argument must be a list"),
    # --- execution errors (exit 3) ---
    (
        "remove_out_of_range",
        "L = createList([1.0], [2.0]);\nL2, x = remove(L, 5);\nprint(L2);",
        3,
        "2:9",
        "trying to remove element at position 5 from a list with 2 elements",
    ),
    ("row_out_of_bounds", F2 + "print(F[5, ]);", 3, "2:7", "row index 5 is out of bounds for a frame of shape 2x2"),
    (
        "cartesian_duplicate_labels",
        F2 + "print(cartesian(F, F));",
        3,
        "2:7",
        "cartesian: a frame's column labels must be unique, but 'a' occurs more than once",
    ),
    (
        "cbind_row_mismatch",
        F2 + 'print(cbind(F, createFrame([1], "c")));',
        3,
        "2:7",
        "both input frames must have the same number of rows, got 2 and 1",
    ),
    ("rbind_label_mismatch", F2 + 'print(rbind(F, createFrame([1], [2.0], "a", "c")));', 3, "2:7", "same column names"),
    (
        "run_time_label_missing",
        F2 + 'l = "a";\nif (nrow(F) > 1) { l = "q"; }\nprint(F[, l]);',
        3,
        "4:7",
        "frame has no column with label 'q' (labels: a, b)",
    ),
    ("as_scalar_mixed_types", F2 + "print(as.scalar(F));", 2, "2:7", "give the scalar's value type"),
    ("as_scalar_not_1x1", F2 + "print(as.scalar<f64>(F));", 3, "2:7", "exactly one element (1x1), but it is 2x2"),
    ("bit_vector_length", F2 + "print(F[[ [1, 0, 1], ]]);", 3, "2:7", "must have one entry per row"),
]


def test_there_are_many_frame_error_cases() -> None:
    assert len(CASES) >= 10


@pytest.mark.parametrize(("name", "source", "code", "where", "fragment"), CASES, ids=[c[0] for c in CASES])
def test_frame_bad_input(check_bad_input, name: str, source: str, code: int, where: str | None, fragment: str) -> None:
    check_bad_input(source, code, where, fragment)
