"""A `.meta` is user input: sizes that cannot be true fail before anything is allocated for them, and a CSV that
`--select-matrix-repr` reads as sparse is read as DAPHNE does (ReadCsvFile<CSRMatrix>: `numNonZeros` lines of
0-based `row,col` positions), with a warning instead of silent zeros when the file is really a dense CSV."""

from __future__ import annotations

import struct
import time
from pathlib import Path

import pytest
from test_io_cli import daphnec, ok

from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.io.meta import MetaDataError, Repeated, parse_meta
from daphnec.runtime.kernels import io


def _files(tmp_path: Path, name: str, data: str, meta: str) -> str:
    (tmp_path / name).write_text(data)
    (tmp_path / f"{name}.meta").write_text(meta)
    return str(tmp_path / name)


def test_huge_num_cols_is_refused_before_per_column_tables(tmp_path: Path) -> None:
    meta = '{"numRows": 1, "numCols": 100000000000, "valueType": "f64"}'
    t0 = time.monotonic()
    with pytest.raises(MetaDataError, match=r'"numCols" is 100000000000, more columns than this machine'):
        parse_meta(meta, "x.csv.meta")
    _files(tmp_path, "x.csv", "1,2\n", meta.replace("100000000000", "1000000"))
    with pytest.raises(MetaDataError, match=r"describes a 1x1000000 matrix, but '.*x.csv' has only 4 bytes"):
        io.read_matrix(str(tmp_path / "x.csv"), vt="f64")
    assert time.monotonic() - t0 < 5  # nothing of a million (or 10^11) entries was built


def test_single_type_meta_builds_no_column_table() -> None:
    m = parse_meta('{"numRows": 0, "numCols": 50000000, "valueType": "si64"}', "x.meta")
    assert isinstance(m.value_types, Repeated) and len(m.value_types) == 50000000 and m.value_type == "si64"
    assert parse_meta('{"numRows": 2, "numCols": 3, "valueType": "f32"}', "x").value_types == ("f32",) * 3


def test_cli_reports_the_bad_meta_at_compile_time(tmp_path: Path) -> None:
    _files(tmp_path, "x.csv", "1,2\n", '{"numRows": 1, "numCols": 100000000000, "valueType": "f64"}')
    res = daphnec(tmp_path, 'X = readMatrix("x.csv");\nprint(X);\n')
    assert res.returncode == 2, res.stderr
    assert res.stderr.startswith("s.daph:1:5: error: readMatrix: meta data file 'x.csv.meta': \"numCols\" is 1000")
    _files(tmp_path, "f.csv", "a,b\n", '{"numRows": 3, "numCols": 40000, "valueType": "str"}')
    res = daphnec(tmp_path, 'F = readFrame("f.csv");\nprint(F);\n')
    assert res.returncode == 2 and "describes a 3x40000 matrix, but 'f.csv' has only 4 bytes" in res.stderr


def test_binary_file_claiming_a_huge_matrix_is_refused(tmp_path: Path) -> None:
    rows = cols = 1 << 20  # 8 TiB of f64: an empty block would make numpy promise it lazily
    head = struct.pack("<BBQQB", 1, 1, rows, cols, 7) + struct.pack("<QQIIBB", 0, 0, rows, cols, 0, 7)
    (tmp_path / "b.dbdf").write_bytes(head)
    (tmp_path / "b.dbdf.meta").write_text(f'{{"numRows": {rows}, "numCols": {cols}, "valueType": "f64"}}')
    with pytest.raises(DaphneRuntimeError, match=r"^readMatrix: a 1048576x1048576 f64 dense matrix needs 8192.0 GiB"):
        io.read_matrix(str(tmp_path / "b.dbdf"), vt="f64")


_READ = 'X = readMatrix("{}");\nprint(X);\n'
_COO_META = '{{"numRows": {}, "numCols": {}, "valueType": "f64", "numNonZeros": {}}}'


def test_sparse_csv_is_read_as_positions(tmp_path: Path) -> None:
    _files(tmp_path, "s.csv", "0,3\n2,1\n", _COO_META.format(3, 4, 2))
    out = ok(tmp_path, _READ.format("s.csv"), "--select-matrix-repr")
    assert out == "CSRMatrix(3x4, double)\n0 0 0 1\n0 0 0 0\n0 1 0 0\n"


def test_dense_csv_with_num_non_zeros_warns_and_keeps_its_values(tmp_path: Path) -> None:
    """DAPHNE's own FileMetaDataFormat.md example: a dense 2x4 CSV whose .meta says "numNonZeros": 0. Read as
    positions it would be a matrix of zeros."""
    _files(tmp_path, "d.csv", "-0.1,-0.2,0.1,0.2\n3.14,5.41,6.22216,5\n", _COO_META.format(2, 4, 0))
    res = daphnec(tmp_path, _READ.format("d.csv"), "--select-matrix-repr")
    assert res.returncode == 0, res.stderr
    assert res.stdout == "CSRMatrix(2x4, double)\n-0.1 -0.2 0.1 0.2\n3.14 5.41 6.22216 5\n"
    assert res.stderr == ("daphnec: warning: readMatrix: 'd.csv' is a dense CSV (2 lines of 4 values), not DAPHNE's "
                          "sparse CSV of 0 'row,col' lines that its .meta's \"numNonZeros\" asks for; reading its "
                          "values\n")  # fmt: skip


def test_two_column_files_are_told_apart_by_their_line_count(tmp_path: Path) -> None:
    _files(tmp_path, "p.csv", "0,1\n5,0\n", _COO_META.format(6, 2, 2))  # 2 positions in a 6x2 matrix
    expected = "CSRMatrix(6x2, double)\n0 1\n0 0\n0 0\n0 0\n0 0\n1 0\n"
    assert ok(tmp_path, _READ.format("p.csv"), "--select-matrix-repr") == expected
    _files(tmp_path, "q.csv", "0,1\n0,0\n0,0\n0,0\n0,0\n1,0", _COO_META.format(6, 2, 2))  # 6 rows: dense
    res = daphnec(tmp_path, _READ.format("q.csv"), "--select-matrix-repr")
    assert res.stdout == expected and "is a dense CSV (6 lines of 2 values)" in res.stderr
