"""CSV reading (fast pyarrow path and exact path must agree) and writing (WriteCsv.h's printf formats)."""

from __future__ import annotations

import io
import math
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.frame import Frame
from daphnec.runtime.io import csv


@pytest.fixture(params=["fast", "exact"])
def path_kind(request, monkeypatch) -> str:
    """Run a test once through pyarrow and once through the exact reader."""
    if request.param == "exact":
        monkeypatch.setattr(csv, "_arrow_table", lambda *a: None)
    return request.param


def _file(tmp_path: Path, text: str, name: str = "x.csv") -> str:
    p = tmp_path / name
    p.write_bytes(text.encode())
    return str(p)


# --- reading --------------------------------------------------------------------------------------------------------


def test_f64_matrix(tmp_path, path_kind) -> None:
    m = csv.read_matrix(_file(tmp_path, "-0.1,-0.2,0.1,0.2\n3.14,5.41,6.22216,5\n"), 2, 4, "f64")
    assert m.dtype == np.float64 and m.flags.c_contiguous
    assert m.tolist() == [[-0.1, -0.2, 0.1, 0.2], [3.14, 5.41, 6.22216, 5.0]]


def test_special_floats_and_spaces(tmp_path, path_kind) -> None:
    m = csv.read_matrix(_file(tmp_path, "nan,-nan,inf,-inf, 1.5 ,1e3,.5,Infinity\n"), 1, 8, "f64")
    v = m[0].tolist()
    assert math.isnan(v[0]) and math.copysign(1, v[0]) == 1 and math.copysign(1, v[1]) == -1  # -nan keeps its sign
    assert v[2:] == [math.inf, -math.inf, 1.5, 1000.0, 0.5, math.inf]


def test_f32_is_rounded_to_float(tmp_path, path_kind) -> None:
    m = csv.read_matrix(_file(tmp_path, "0.1\n"), 1, 1, "f32")
    assert m.dtype == np.float32 and m[0, 0] == np.float32(0.1)


def test_narrow_integers_wrap_like_cpp_casts(tmp_path, path_kind) -> None:
    assert csv.read_matrix(_file(tmp_path, "300,-129,5\n"), 1, 3, "si8").tolist() == [[44, 127, 5]]
    assert csv.read_matrix(_file(tmp_path, "-1,256\n"), 1, 2, "ui8").tolist() == [[255, 0]]


def test_ui64_full_range(tmp_path, path_kind) -> None:
    m = csv.read_matrix(_file(tmp_path, "18446744073709551615,0\n"), 1, 2, "ui64")
    assert m.dtype == np.uint64 and m.tolist() == [[2**64 - 1, 0]]


def test_plus_sign_is_accepted_by_the_exact_path(tmp_path) -> None:
    assert csv.read_matrix(_file(tmp_path, "+5,-3\n"), 1, 2, "si64").tolist() == [[5, -3]]


def test_lines_after_num_rows_are_ignored(tmp_path, path_kind) -> None:
    assert csv.read_matrix(_file(tmp_path, "1,2\n3,4\nnot,a,row\n"), 2, 2, "si64").tolist() == [[1, 2], [3, 4]]


def test_crlf_line_ends(tmp_path, path_kind) -> None:
    assert csv.read_matrix(_file(tmp_path, "1,2\r\n3,4\r\n"), 2, 2, "si32").tolist() == [[1, 2], [3, 4]]


def test_string_matrix_with_quotes(tmp_path, path_kind) -> None:
    m = csv.read_matrix(_file(tmp_path, 'a,"b,c"\n"say ""hi""","two\nlines"\n'), 2, 2, "str")
    assert m.dtype == object and m.tolist() == [["a", "b,c"], ['say "hi"', "two\nlines"]]


def test_frame_columns(tmp_path, path_kind) -> None:
    cols = csv.read_columns(_file(tmp_path, '1,x,0.5\n2,"y,z",1.5\n'), ["si64", "str", "f64"], 2, "readFrame")
    assert [c.dtype for c in cols] == [np.int64, object, np.float64]
    assert [c.tolist() for c in cols] == [[1, 2], ["x", "y,z"], [0.5, 1.5]]


def test_empty_line_is_an_empty_string(tmp_path, path_kind) -> None:
    cols = csv.read_columns(_file(tmp_path, "a\n\nc\n"), ["str"], 3, "readFrame")
    assert cols[0].tolist() == ["a", "", "c"]


def test_zero_rows_reads_nothing(tmp_path) -> None:
    assert csv.read_matrix(_file(tmp_path, ""), 0, 3, "f64").shape == (0, 3)


@pytest.mark.parametrize(
    ("text", "vt", "rows", "cols", "fragment"),
    [
        ("1,2,3\n4,5\n", "f64", 2, 3, "line 2: expected 3 column(s)"),
        ("1,2\n4,5,6\n", "f64", 2, 2, "line 2: expected 2 column(s)"),
        ("1,2\n3,abc\n", "f64", 2, 2, "line 2, column 2: cannot read 'abc' as f64"),
        ("1,2\n3,\n", "si64", 2, 2, "line 2, column 2: cannot read '' as si64 (an empty field: integer"),
        ("1.5\n", "si64", 1, 1, "line 1, column 1: cannot read '1.5' as si64"),
        ("1,2\n", "f64", 3, 2, 'has 1 row(s), but its .meta says "numRows": 3'),
        ('a,"b\n2,3\n', "str", 2, 2, "has 1 row(s)"),  # an unterminated quote swallows the rest of the file
        ("1\n2\n\n4\n", "f64", 4, 1, "line 3, column 1: cannot read '' as f64 (an empty field: write NaN as `nan`"),
    ],
)
def test_bad_csv_names_the_line(tmp_path, path_kind, text, vt, rows, cols, fragment) -> None:
    with pytest.raises(DaphneRuntimeError) as e:
        csv.read_matrix(_file(tmp_path, text), rows, cols, vt)
    assert fragment in str(e.value) and "x.csv" in str(e.value)


def test_multiline_string_rows_report_their_first_line(tmp_path) -> None:
    with pytest.raises(DaphneRuntimeError, match="line 3: expected 2"):
        csv.read_columns(_file(tmp_path, '"a\nb",1\n"c",2,3\n'), ["str", "si64"], 2, "readFrame")


def test_coo_csv_as_csr(tmp_path) -> None:
    m = csv.read_coo(_file(tmp_path, "0,1\n2,0\n2,2\n"), 3, 3, 3, "f64")
    assert sp.issparse(m) and m.format == "csr" and m.has_canonical_format
    assert m.toarray().tolist() == [[0, 1, 0], [0, 0, 0], [1, 0, 1]]


def test_coo_csv_position_out_of_range(tmp_path) -> None:
    with pytest.raises(DaphneRuntimeError, match=r"position \[3, 0\] in row 1 is not part of a 3x3 matrix"):
        csv.read_coo(_file(tmp_path, "0,1\n3,0\n"), 3, 3, 2, "f64")


# --- writing --------------------------------------------------------------------------------------------------------


def _write_matrix(m) -> str:
    buf = io.BytesIO()
    csv.write_matrix(m, buf)
    return buf.getvalue().decode()


def _write_frame(f: Frame) -> str:
    buf = io.BytesIO()
    csv.write_frame(f, buf)
    return buf.getvalue().decode()


def test_write_floats_with_percent_f() -> None:
    nan_neg = -np.float64("nan")
    m = np.array([[1.1, -2.0, 1e-7], [np.inf, -np.inf, np.nan], [nan_neg, 123456789.125, 0.0]])
    assert _write_matrix(m) == ("1.100000,-2.000000,0.000000\ninf,-inf,nan\n-nan,123456789.125000,0.000000\n")


def test_write_f32_prints_the_float_value() -> None:
    assert _write_matrix(np.array([[0.1]], dtype=np.float32)) == "0.100000\n"


def test_write_integers() -> None:
    assert _write_matrix(np.array([[-(2**63), 2**62]], dtype=np.int64)) == "-9223372036854775808,4611686018427387904\n"
    assert _write_matrix(np.array([[-5, 200]], dtype=np.int32)) == "-5,200\n"
    assert _write_matrix(np.array([[255, 0]], dtype=np.uint8)) == "255,0\n"
    assert _write_matrix(np.array([[True, False]])) == "1,0\n"


def test_write_unsigned_matrix_uses_percent_d_like_daphne() -> None:
    """WriteCsv<DenseMatrix<uint64_t>> passes the value to printf's %d: only its low 32 bits, read as signed."""
    assert _write_matrix(np.array([[5_000_000_000, 7, 2**32 - 1]], dtype=np.uint64)) == "705032704,7,-1\n"
    assert _write_matrix(np.array([[3_000_000_000]], dtype=np.uint32)) == "-1294967296\n"


def test_write_strings_quoted_only_when_needed() -> None:
    m = np.empty((1, 5), dtype=object)
    m[0] = ["plain", "a,b", 'say "hi"', "two\nlines", "cr\r"]
    assert _write_matrix(m) == 'plain,"a,b","say ""hi""","two\nlines","cr\r"\n'


def test_write_csr_densely() -> None:
    m = sp.csr_array(np.array([[0.0, 2.5], [0.0, 0.0]]))
    assert _write_matrix(m) == "0.000000,2.500000\n0.000000,0.000000\n"


def test_write_empty() -> None:
    assert _write_matrix(np.empty((3, 0))) == ""
    assert _write_matrix(np.empty((0, 3))) == ""


def test_write_frame_exact_formats() -> None:
    s = np.empty(2, dtype=object)
    s[:] = ["x", "y,z"]
    f = Frame(
        [np.array([1, -2]), np.array([2**64 - 1, 3], dtype=np.uint64), s, np.array([0.5, 2.0])], ["a", "b", "c", "d"]
    )
    assert _write_frame(f) == '1,18446744073709551615,x,0.500000\n-2,3,"y,z",2.000000\n'


def test_csv_round_trip(tmp_path) -> None:
    rng = np.random.default_rng(0)
    m = np.round(rng.standard_normal((50, 7)), 6)
    p = tmp_path / "r.csv"
    p.write_text(_write_matrix(m))
    assert np.array_equal(csv.read_matrix(str(p), 50, 7, "f64"), m)


def test_trailing_blank_lines_keep_the_fast_path(tmp_path, monkeypatch) -> None:
    p = _file(tmp_path, "1,2\n3,4\n\n\r\n")
    monkeypatch.setattr(csv, "_exact_columns", lambda *a: pytest.fail("the exact path was used"))
    assert csv.read_matrix(p, 2, 2, "f64").tolist() == [[1, 2], [3, 4]]
    assert csv._blank_lines_only_at_end(p)
    assert not csv._blank_lines_only_at_end(_file(tmp_path, "1,2\n\n3,4\n", "y.csv"))
    assert not csv._blank_lines_only_at_end(_file(tmp_path, "\n1,2\n", "z.csv"))
    assert not csv._blank_lines_only_at_end(_file(tmp_path, "", "e.csv"))


# --- what pandas' default to_csv writes (issue 25) ------------------------------------------------------------------


def test_a_header_row_gets_a_hint(tmp_path, path_kind) -> None:
    with pytest.raises(DaphneRuntimeError) as e:
        csv.read_matrix(_file(tmp_path, "id,score\n1,2\n"), 1, 2, "si64")
    assert "line 1, column 1: cannot read 'id' as si64 (a header row? DAPHNE's CSV has none" in str(e.value)


def test_nan_as_an_empty_field_gets_a_hint(tmp_path, path_kind) -> None:
    with pytest.raises(DaphneRuntimeError) as e:
        csv.read_matrix(_file(tmp_path, "1.5,2\n,3\n"), 2, 2, "f64")
    assert "line 2, column 1: cannot read '' as f64 (an empty field: write NaN as `nan`" in str(e.value)
    assert csv.read_matrix(_file(tmp_path, "1.5,2\nnan,3\n", "ok.csv"), 2, 2, "f64")[1, 0] != 0  # nan reads


def test_more_rows_than_the_meta_says_warns_once(tmp_path, path_kind, capsys) -> None:
    path = _file(tmp_path, "1\n2\n3\n")
    for _ in range(2):
        assert csv.read_matrix(path, 2, 1, "f64").tolist() == [[1.0], [2.0]]  # DAPHNE's reading: the first rows
    err = capsys.readouterr().err
    assert err.count("warning") == 1
    assert f"daphnec: warning: readMatrix: '{path}' has more rows than its .meta says (\"numRows\": 2)" in err
    csv.read_matrix(_file(tmp_path, "1\n2\n\n\n", "blank.csv"), 2, 1, "f64")  # trailing blank lines are no rows
    assert capsys.readouterr().err == ""


def test_a_csv_write_that_loses_digits_notes_it_once(tmp_path, capsys, monkeypatch) -> None:
    """CSV keeps 6 decimals (DAPHNE's format, unchanged: byte-identical files); a write that drops digits says so
    once per run, pointing to the exact formats; exactly written values say nothing."""
    from daphnec.runtime.kernels import io as io_kernels

    monkeypatch.setattr(io_kernels, "_NOTED_LOST_DIGITS", [])
    io_kernels.write(np.array([[0.5, 2.0], [-1.25, np.nan]]), str(tmp_path / "exact.csv"))
    assert capsys.readouterr().err == ""
    lossy = np.array([[1 / 3, 2.0]])
    io_kernels.write(lossy, str(tmp_path / "a.csv"))
    io_kernels.write(lossy, str(tmp_path / "b.csv"))
    err = capsys.readouterr().err
    assert err.count("daphnec: note:") == 1
    assert "keeps 6 decimals per value (DAPHNE's CSV format)" in err and ".parquet or .dbdf" in err
    assert (tmp_path / "a.csv").read_text() == "0.333333,2.000000\n"
    assert csv.loses_digits(sp.csr_array(lossy)) and not csv.loses_digits(np.arange(3))


def test_reading_a_csv_matrix_does_not_import_pandas(tmp_path) -> None:
    """pyarrow's `to_numpy` imports pandas when it is installed (0.3-1.2 s of a process); the CSV reader views
    arrow's numeric buffers instead (runtime/io/arrow_numpy.py). Checked in a fresh interpreter."""
    import subprocess
    import sys

    path = tmp_path / "m.csv"
    path.write_text("1.5,2\n3,4.25\n")
    (tmp_path / "m.csv.meta").write_text('{"numRows": 2, "numCols": 2, "valueType": "f64"}')
    code = (
        "import sys\n"
        "from daphnec.runtime.io import csv\n"
        f"m = csv.read_matrix({str(path)!r}, 2, 2, 'f64')\n"
        "assert m.tolist() == [[1.5, 2.0], [3.0, 4.25]], m\n"
        "print('pandas' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
