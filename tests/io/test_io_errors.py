"""Bad input for file I/O, in the style of tests/test_errors.py: DAPHNE's exit code (1 parse, 2 compile, 3 run
time), one `file:line:col: error: ...` line on stderr naming the problem, no traceback. Every case runs in its own
temporary folder holding the files it needs (relative names resolve against the current directory).

Compile-time `.meta` problems are compile errors (exit 2): DAPHNE reads the `.meta` of a constant file name while
compiling (ReadOp type inference), and an exception there fails the pass pipeline.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from bad_input import assert_error, run_bad_script

META = '{"numRows": 2, "numCols": 3, "valueType": "f64"}'
CSV = "1,2,3\n4,5,6\n"
MTX = "%%MatrixMarket matrix coordinate real general\n2 3 2\n1 1 1.5\n2 3 2\n"

# (name, files to create, script, exit code, "line:col" or None, message fragment)
CASES: list[tuple[str, dict[str, str], str, int, str | None, str]] = [
    (
        "missing_data_file",
        {"x.csv.meta": META},
        'X = readMatrix("x.csv");\nprint(X);',
        3,
        "1:5",
        "cannot open file 'x.csv'",
    ),
    ("missing_meta", {"x.csv": CSV}, 'print(readMatrix("x.csv"));', 2, "1:7", "'x.csv.meta'"),
    ("missing_meta_and_file", {}, 'print(readMatrix("nothing.csv"));', 2, "1:7", "'nothing.csv.meta' of 'nothing.csv'"),
    (
        "meta_not_json",
        {"x.csv": CSV, "x.csv.meta": "{numRows: 2"},
        'print(readMatrix("x.csv"));',
        2,
        "1:7",
        "is not valid JSON",
    ),
    (
        "meta_without_num_rows",
        {"x.csv": CSV, "x.csv.meta": '{"numCols": 3, "valueType": "f64"}'},
        'print(readMatrix("x.csv"));',
        2,
        "1:7",
        '"numRows"',
    ),
    (
        "meta_without_value_type",
        {"x.csv": CSV, "x.csv.meta": '{"numRows": 2, "numCols": 3}'},
        'print(readMatrix("x.csv"));',
        2,
        "1:7",
        '"valueType"',
    ),
    (
        "meta_unknown_value_type",
        {"x.csv": CSV, "x.csv.meta": '{"numRows": 2, "numCols": 3, "valueType": "double"}'},
        'print(readMatrix("x.csv"));',
        2,
        "1:7",
        "unknown value type 'double'",
    ),
    (
        "meta_schema_too_short",
        {"x.csv": CSV, "x.csv.meta": '{"numRows": 2, "numCols": 3, "schema": [{"label": "a", "valueType": "f64"}]}'},
        'print(readFrame("x.csv"));',
        2,
        "1:7",
        '"schema" describes 1 column(s), but "numCols" is 3',
    ),
    (
        "csv_bad_number",
        {"x.csv": "1,2,3\n4,five,6\n", "x.csv.meta": META},
        'print(readMatrix("x.csv"));',
        3,
        "1:7",
        "'x.csv' line 2, column 2: cannot read 'five' as f64",
    ),
    (
        "csv_wrong_number_of_columns",
        {"x.csv": "1,2,3\n4,5\n", "x.csv.meta": META},
        'print(readMatrix("x.csv"));',
        3,
        "1:7",
        "'x.csv' line 2: expected 3 column(s)",
    ),
    (
        "csv_too_few_rows",
        {"x.csv": "1,2,3\n", "x.csv.meta": META},
        'print(readMatrix("x.csv"));',
        3,
        "1:7",
        'has 1 row(s), but its .meta says "numRows": 2',
    ),
    (
        "frame_bad_cell",
        {
            "f.csv": "1,a\nx,b\n",
            "f.csv.meta": '{"numRows": 2, "numCols": 2, "schema": [{"label": "n", "valueType": "si64"}, '
            '{"label": "s", "valueType": "str"}]}',
        },
        'F = readFrame("f.csv");\nprint(F);',
        3,
        "1:5",
        "'f.csv' line 2, column 1: cannot read 'x' as si64",
    ),
    (
        "read_unknown_extension",
        {"x.txt": CSV, "x.txt.meta": META},
        'print(readMatrix("x.txt"));',
        3,
        "1:7",
        "file extension '.txt' of 'x.txt' is not supported",
    ),
    (
        "write_unknown_extension",
        {},
        'write(fill(1.0, 2, 2), "out.txt");',
        3,
        "1:1",
        "file extension '.txt' of 'out.txt' is not supported",
    ),
    (
        "write_missing_folder",
        {},
        'write(fill(1.0, 2, 2), "no/such/dir/out.csv");',
        3,
        "1:1",
        "cannot open file 'no/such/dir/out.csv' for writing",
    ),
    (
        "write_folder_is_a_file",
        {"plain": "x"},
        'write(fill(1.0, 2, 2), "plain/out.csv");',
        3,
        "1:1",
        "cannot open file 'plain/out.csv' for writing",
    ),
    ("write_frame_to_dbdf", {}, 'write({"a": [1, 2]}, "f.dbdf");', 3, "1:1", "file extension '.dbdf'"),
    ("write_strings_to_dbdf", {}, 'write(fill("a", 1, 1), "s.dbdf");', 3, "1:1", "value type str cannot be written"),
    (
        "read_frame_from_mtx",
        {"m.mtx": MTX, "m.mtx.meta": META},
        'print(readFrame("m.mtx"));',
        3,
        "1:7",
        "file extension '.mtx' of 'm.mtx' is not supported (supported: .csv, .parquet)",
    ),
    (
        "mtx_shape_differs_from_meta",
        {"m.mtx": MTX, "m.mtx.meta": '{"numRows": 3, "numCols": 3, "valueType": "f64"}'},
        'print(readMatrix("m.mtx"));',
        3,
        "1:7",
        "holds a 2x3 matrix, but its .meta says 3x3",
    ),
    (
        "mtx_bad_line",
        {"m.mtx": MTX.replace("2 3 2\n1 1", "2 3 2\n1 x"), "m.mtx.meta": META},
        'print(readMatrix("m.mtx"));',
        3,
        "1:7",
        "Line 3: Invalid integer value",
    ),
    (
        "dbdf_truncated",
        {"m.dbdf": "\x01\x01", "m.dbdf.meta": META},
        'print(readMatrix("m.dbdf"));',
        3,
        "1:7",
        "truncated",
    ),
    (
        "file_name_not_constant",
        {"x.csv": CSV, "x.csv.meta": META},
        's = "y.csv";\nif (now() > 0) { s = "x.csv"; }\nprint(readMatrix(s));',
        2,
        "3:7",
        "compile-time constant",
    ),
    ("file_name_not_a_string", {}, "print(readMatrix(42));", 2, "1:7", "file name must be a string"),
    ("write_a_scalar", {}, 'write(3, "x.csv");', 2, "1:1", "must be a matrix or a frame"),
    ("read_without_file_name", {}, "print(readMatrix());", 1, "1:7", "built-in function 'readMatrix' expects 1"),
]


def test_there_are_many_io_bad_input_cases() -> None:
    assert len(CASES) >= 15


@pytest.mark.parametrize(("name", "files", "source", "code", "where", "fragment"), CASES, ids=[c[0] for c in CASES])
def test_io_bad_input(tmp_path: Path, name, files, source, code, where, fragment) -> None:
    res = run_bad_script(tmp_path, source, files, cwd=tmp_path)
    assert_error(res, "bad.daph", code, where, fragment)
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")], "a temporary file was left behind"
