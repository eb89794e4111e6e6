"""Bad input: every case must end with DAPHNE's exit code (1 parse, 2 compile, 3 execution), a single-line
`file:line:col: error: ...` message on stderr naming the problem, and no Python traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

# (name, script, exit code, "line:col" or None, message fragment)
CASES: list[tuple[str, str, int, str | None, str]] = [
    # --- parse errors (exit 1) ---
    ("unclosed_call", "print(1", 1, "1:8", "unexpected end of file"),
    ("missing_rhs", "x = ;", 1, "1:5", "syntax error"),
    ("undefined_variable", "print(y);", 1, "1:7", "variable 'y' is used before it is assigned"),
    ("unknown_function", "foo(1);", 1, "1:1", "unknown function 'foo'"),
    ("print_no_args", "print();", 1, "1:1", "built-in function 'print' expects 1 to 3 argument(s)"),
    ("seq_one_arg", "x = seq(1);", 1, "1:5", "built-in function 'seq' expects 2 to 3 argument(s)"),
    ("seq_four_args", "x = seq(1, 2, 3, 4);", 1, "1:5", "but got 4"),
    ("rand_three_args", "x = rand(1, 2, 3);", 1, "1:5", "built-in function 'rand' expects 6 argument(s)"),
    ("fill_two_args", "print(fill(1, 2));", 1, "1:7", "built-in function 'fill' expects 3 argument(s)"),
    ("print_four_args", "print(1, true, false, 4);", 1, "1:1", "but got 4"),
    ("unknown_keyword", "x = seq(1, 5, step=2);", 1, "1:5", "has no parameter 'step'"),
    ("missing_script_arg", "print($x);", 1, "1:7", "script argument 'x' is used but not given"),
    ("udf_too_many_args", "def f(a) { return a; }\nprint(f(1, 2));", 1, "2:7", "function 'f' expects 1 argument(s)"),
    ("udf_unknown_keyword", "def f(a) { return a; }\nprint(f(b=1));", 1, "2:7", "function 'f' has no parameter 'b'"),
    ("udf_missing_arg", "def f(a, b) { return a; }\nprint(f(1));", 1, "2:7", "missing: b"),
    ("loop_variable_assigned", "for (i in 1:3) {\n  i = 2;\n}", 1, "2:3", "loop variable 'i' cannot be assigned"),
    ("unterminated_string", 'print("abc);', 1, "1:7", "unterminated string"),
    ("float_without_digits", "x = 1.;", 1, "1:5", ""),
    ("multi_assign_non_call", "a, b = 5;", 1, "1:8", "the right side is not a function call"),
    ("multi_assign_count", "def f() { return 1; }\na, b = f();", 1, "2:8", "returns 1 value(s)"),
    ("missing_return", "def f() -> si64 { print(1); }\nprint(f());", 1, "1:1", "does not return a value on every path"),
    ("return_at_top_level", "return 1;", 1, "1:1", "return outside of a function"),
    (
        "nested_function",
        "if (true) { def g() { return 1; } }",
        1,
        "1:13",
        "functions can only be defined at the top level",
    ),
    ("aggregation_axis", "X = fill(1, 2, 2);\nprint(sum(X, 2));", 1, "2:7", "axis of an aggregation"),
    ("left_index_unassigned", "X[0, 0] = 1;", 1, "1:1", "indexed on the left side before it is assigned"),
    ("missing_import", 'import "nonexistent.daph";', 1, "1:1", "The import path doesn't exist: "),
    ("bad_character", "print(1 $ 2);", 1, "1:9", ""),
    ("matrix_literal_shape", "print([1, 2, 3](2, 2));", 1, "1:7", "cannot have shape 2x2"),
    ("return_in_loop", "def f() { while (true) { return 1; } }\nprint(f());", 1, "1:11", "return inside a loop"),
    ("duplicate_function", "def f() { return 1; }\ndef f() { return 2; }", 1, "2:1", "defined more than once"),
    (
        "overload_same_types",
        "def f(a: si64) { return 1; }\ndef f(b: scalar<si64>) { return 2; }",
        1,
        "2:1",
        "defined more than once with the same parameters",
    ),
    (
        "scalar_for_matrix_parameter",
        "def f(a: matrix) { return sum(a); }\nprint(f(3));",
        1,
        "2:7",
        "no definition of function `f` for argument types (si64), available options: f(matrix)",
    ),
    (
        "matrix_for_scalar_parameter",
        "def f(a: f64) -> f64 { return a; }\ndef f(a: si64, b: si64) -> si64 { return a; }\nprint(f([1.0]));",
        1,
        "3:7",
        "for argument types (matrix<f64>), available options: f(f64), f(si64, si64)",
    ),
    (
        "string_for_number_parameter",
        'def f(a: si64) -> si64 { return a; }\nprint(f("1"));',
        1,
        "2:7",
        "for argument types (str)",
    ),
    (
        "no_exact_overload",  # DAPHNE casts no argument to a typed parameter: si32 fits neither
        "def f(a: si64) -> si64 { return a; }\ndef f(a: f64) -> f64 { return a; }\nprint(f(as.si32(1)));",
        1,
        "3:7",
        "no definition of function `f` for argument types (si32), available options: f(si64), f(f64)",
    ),
    (
        "overload_chosen_at_specialization",
        "def f(a: si64) -> si64 { return a; }\ndef f(a: matrix<f64>) -> f64 { return sum(a); }\n"
        'def g(x) { return f(x); }\nprint(g("s"));',
        2,
        "3:19",
        "no definition of function `f` for argument types (str)",
    ),
    ("kernel_hint_on_udf", "def f(a) { return a; }\nprint(f::myKernel(1));", 1, "2:7", "kernel hints are not"),
    ("parameter_twice", "def f(a, a) { return a; }\nprint(f(1, 2));", 1, "1:10", "Function argument name `a` is used"),
    ("near_miss_builtin", "print(sqr(4));", 1, "1:7", "unknown function 'sqr'; did you mean 'sqrt', 'sql' or 'seq'?"),
    ("near_miss_udf", "def square(x) { return x * x; }\nprint(sqare(4));", 1, "2:7", "mean 'square' or 'sqrt'?"),
    ("not_supported_builtin", "x = antiJoin(1, 2);", 1, "1:5", "built-in function 'antiJoin' is not supported by"),
    ("messages_name_operators", "print([1, 2](1, 2) @ [1, 2](1, 2));", 2, "1:7", "`@`: shape mismatch: lhs 1x2, rhs"),
    (
        "messages_unknown_sizes",
        "X = rand(3, 3, 0.0, 1.0, 1, 1);\nY = X[[X[, 0] > 0.5, ]];\nprint(Y @ [1.0, 2.0](1, 2));",
        2,
        "3:7",
        "`@`: shape mismatch: lhs ?x3, rhs 1x2",
    ),
    ("messages_name_builtins", "print(nrow(3));", 2, "1:7", "nrow: the argument must be a matrix or a frame"),
    ("int_literal_too_large", "print(9223372036854775808);", 1, "1:7", ""),
    (
        "do_while_condition_sees_no_body_variable",
        "i = 0;\ndo { i = i + 1; y = i; } while (y < 3);",
        1,
        "2:33",
        "variable 'y' is used before it is assigned",
    ),
    ("frame_label_not_string", 'F = {"a": [1], 2: [3]};', 1, "1:16", "labels for frame literals must be strings"),
    ("frame_row_label_not_string", 'F = {["a", 1.5], [1, 2]};', 1, "1:12", "but this one is f64"),
    # --- compile errors (exit 2) ---
    ("constant_int_division_by_zero", "x = 5 / 0;\nprint(x);", 2, "1:5", "integer division by zero"),
    ("constant_int_modulo_by_zero", "print(5 % 0);", 2, "1:7", "integer modulo by zero"),
    ("matmul_shape", "print([1, 2] @ [3, 4]);", 2, "1:7", "shape mismatch: lhs 2x1, rhs 2x1"),
    ("ew_shape", "print([1, 2, 3] + [1, 2]);", 2, "1:7", "shape mismatch: lhs 3x1, rhs 2x1"),
    ("scalar_matrix_merge", "x = 1;\nif (true) { x = [1]; }\nprint(x);", 2, "2:1", "on one path and a"),
    ("string_times_int", 'print("a" * 2);', 2, "1:7", "not supported"),
    ("minus_string", 'print(-"a");', 2, "1:7", "not supported"),
    ("transpose_scalar", "print(t(1));", 2, "1:7", "must be a matrix"),
    (
        "read_name_known_at_run_time",
        'for (i in 1:1) {\n  X = readMatrix("f" + as.str(i) + ".csv");\n  print(X);\n}',
        2,
        "2:7",
        "for a name known only at run time, give the value type with as.matrix<f64>(readMatrix(...))",
    ),
    # --- execution errors (exit 3) ---
    ("index_out_of_bounds", "X = fill(1.0, 2, 2);\nprint(X[5, 0]);", 3, "2:7", ""),
    ("reshape_mismatch", "print(reshape(seq(1, 6), 4, 2));", 3, "1:7", ""),
    ("parse_str_as_int", 'n = as.si64("abc");\nprint(n);', 3, "1:5", ""),
    ("runtime_division_by_zero", "x = aggMin(fill(0, 2, 2));\nprint(5 / x);", 3, "2:7", "division by zero"),
    ("seq_zero_step", "print(seq(1, 5, 0));", 3, "1:7", ""),
    ("rand_min_gt_max", "print(rand(2, 2, 5, 1, 1.0, 1));", 3, "1:7", ""),
    ("rand_bad_sparsity", "print(rand(2, 2, 0.0, 1.0, 1.5, 1));", 3, "1:7", ""),
    ("as_scalar_not_1x1", "print(as.scalar(fill(1, 2, 2)));", 3, "1:7", ""),
    (
        "matmul_shape_runtime",
        "def mm(A: matrix<f64>, B: matrix<f64>) -> matrix<f64> { return A @ B; }\n"
        "n = 2 + as.si64(now() < 0);\n"  # a shape known only at run time (typed functions are cloned per call site)
        "print(mm(fill(1.0, n, 3), fill(1.0, n, 3)));",
        3,
        "1:64",
        "2x3",
    ),
    ("insert_out_of_bounds", "X = fill(1, 2, 2);\nX[0:3, 0] = fill(1, 3, 1);\nprint(X);", 3, "2:1", ""),
    ("infinite_recursion", "def f(n) { return f(n + 1); }\nprint(f(0));", 3, None, "recursion"),
    (
        "read_declared_type_without_meta",
        'for (i in 1:1) {\n  X = as.matrix<f64>(readMatrix("nofile" + as.str(i) + ".csv"));\n  print(X);\n}',
        3,
        "2:22",
        "nofile1.csv",
    ),
    ("list_remove_out_of_range", "L = createList([1.0]);\nL2, x = remove(L, 1);\nprint(x);", 3, "2:9", "position 1"),
    ("list_remove_negative", "L = createList([1.0]);\nL2, x = remove(L, -1);\nprint(x);", 3, "2:9", "position -1"),
    # --- issue 25: messages in the script's terms ---
    (
        "print_matrix_newline",
        "X = fill(1.0, 2, 2);\nprint(X, X);",
        2,
        "2:1",
        "print's second argument (newline) must be a scalar (or a 1x1 matrix), but it is a 2x2 matrix",
    ),
    (
        "if_matrix_condition",
        "X = fill(1.0, 2, 2);\nif (X > 1) { print(1); }",
        2,
        "2:5",
        "the condition of 'if' must be a scalar (or a 1x1 matrix), but it is a 2x2 matrix",
    ),
    (
        "while_matrix_condition",
        "X = fill(1.0, 2, 2);\nwhile (X > 0) { X = X - 1; }\nprint(X);",
        2,
        "2:8",
        "the condition of 'while' must be a scalar (or a 1x1 matrix), but it is a 2x2 matrix",
    ),
    (
        "map_string_name",
        'def inc(x) { return x + 1; }\nprint(map(fill(1.0, 2, 2), "inc"));',
        1,
        "2:28",
        "map: the second argument is the bare name of a user-defined function, not a string (write map(X, inc))",
    ),
    (
        "map_unknown_function",
        "print(map(fill(1.0, 2, 2), nofunc));",
        1,
        "1:28",
        "map: 'nofunc' is not a user-defined function",
    ),
]


def test_there_are_many_bad_input_cases() -> None:
    assert len(CASES) >= 40


@pytest.mark.parametrize(("name", "source", "code", "where", "fragment"), CASES, ids=[c[0] for c in CASES])
def test_bad_input(check_bad_input, name: str, source: str, code: int, where: str | None, fragment: str) -> None:
    check_bad_input(source, code, where, fragment)


@pytest.mark.parametrize(("call", "message"), [('stop("boom")', "boom"), ("stop()", "unspecified reason")])
def test_stop_prints_its_message_on_stdout(tmp_path: Path, call: str, message: str) -> None:
    """`stop(msg)`: DAPHNE throws "system stopped: <msg>" and its logger prints it on standard output; exit 3."""
    script = tmp_path / "s.daph"
    script.write_text(f"print(1);\n{call};\nprint(2);\n")
    res = subprocess.run([sys.executable, "-m", "daphnec.tools.daphnec", str(script)], capture_output=True, text=True)
    assert (res.returncode, res.stdout, res.stderr) == (3, f"1\nsystem stopped: {message}\n", "")


def test_debug_flag_shows_traceback(tmp_path: Path) -> None:
    script = tmp_path / "bad.daph"
    script.write_text('stop("boom");')
    res = subprocess.run(
        [sys.executable, "-m", "daphnec.tools.daphnec", "--debug", str(script)], capture_output=True, text=True
    )
    assert res.returncode == 3
    assert "Traceback" in res.stderr
