"""Parquet files through the real `daphnec` (runtime/io/parquet.py): files written by pyarrow are read with and
without a `.meta` (a Parquet file's own schema types it), and files daphnec writes read back in pyarrow with the
column names and types a user expects; mismatches and unsupported column types are clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_io_cli import daphnec, ok


def _write(path: Path, columns: dict[str, pa.Array], meta: dict | None = None) -> None:
    pq.write_table(pa.table(columns), path)
    if meta is not None:
        (path.parent / (path.name + ".meta")).write_text(json.dumps(meta))


def test_read_matrix_with_and_without_meta(tmp_path: Path) -> None:
    cols = {"a": pa.array([1, 2, 3], pa.int64()), "b": pa.array([4, 5, 6], pa.int64())}
    _write(tmp_path / "m.parquet", cols, {"numRows": 3, "numCols": 2, "valueType": "f64"})
    _write(tmp_path / "n.parquet", {"a": pa.array([1, 2], pa.int32()), "b": pa.array([0.5, 1.5], pa.float64())})
    out = ok(tmp_path, 'print(readMatrix("m.parquet"));\nprint(readMatrix("n.parquet"));')
    assert out == "DenseMatrix(3x2, double)\n1 4\n2 5\n3 6\nDenseMatrix(2x2, double)\n1 0.5\n2 1.5\n"


def test_read_frame_without_meta_takes_labels_and_types_from_the_schema(tmp_path: Path) -> None:
    cols = {
        "id": pa.array([1, 2], pa.int32()),
        "name": pa.array(["x", "y z"]),
        "ok": pa.array([True, False]),
        "w": pa.array([0.25, 2.0], pa.float32()),
    }
    _write(tmp_path / "f.parquet", cols)
    out = ok(tmp_path, 'F = readFrame("f.parquet");\nprint(F);\nprint(F[, "name"]);')
    assert out == (
        "Frame(2x4, [id:int32_t, name:std::string, ok:bool, w:float])\n1 x 1 0.25\n2 y z 0 2\n"
        "Frame(2x1, [name:std::string])\nx\ny z\n"
    )


def test_written_files_read_back_in_pyarrow(tmp_path: Path) -> None:
    src = (
        'write([1, 2, 3, 4, 5, 6](3, 2), "m.parquet");\n'
        'write({"k": ["a", "b"], "v": [1.5, 2.5]}, "f.parquet");\n'
        'print(readMatrix("m.parquet") + 1);\nprint(readFrame("f.parquet"));\n'
    )
    out = ok(tmp_path, src)
    assert out == "DenseMatrix(3x2, int64_t)\n2 3\n4 5\n6 7\nFrame(2x2, [k:std::string, v:double])\na 1.5\nb 2.5\n"
    m = pq.read_table(tmp_path / "m.parquet")
    assert m.column_names == ["col_0", "col_1"] and m.schema.field("col_0").type == pa.int64()
    assert m.to_pydict() == {"col_0": [1, 3, 5], "col_1": [2, 4, 6]}
    assert (tmp_path / "m.parquet.meta").read_text() == '{"numCols":2,"numRows":3,"valueType":"si64"}'
    f = pq.read_table(tmp_path / "f.parquet")
    assert f.to_pydict() == {"k": ["a", "b"], "v": [1.5, 2.5]}


@pytest.mark.parametrize(
    ("columns", "meta", "code", "fragment"),
    [
        ({"a": pa.array([1, 2], pa.int16())}, None, 2, "has the Parquet type int16, which has no DaphneDSL value type"),
        ({"a": pa.array([1, 2])}, {"numRows": 3, "numCols": 1, "valueType": "si64"}, 3, "holds 2x1 values"),
        ({"a": pa.array([1, None])}, None, 3, "missing (null) values"),
    ],
)
def test_parquet_errors(tmp_path: Path, columns: dict, meta: dict | None, code: int, fragment: str) -> None:
    _write(tmp_path / "bad.parquet", columns, meta)
    res = daphnec(tmp_path, 'print(readMatrix("bad.parquet"));')
    assert res.returncode == code and fragment in res.stderr and "Traceback" not in res.stderr, res.stderr
