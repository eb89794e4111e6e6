"""DAPHNE's binary format: the exact byte layout of DaphneSerializer.h for dense and CSR matrices, and errors."""

from __future__ import annotations

import io
import struct
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.io import dbdf


def _dense_bytes(rows: int, cols: int, vt_code: int, values: bytes) -> bytes:
    """The layout written out by hand: header, block position, block header, values (data at byte 45)."""
    head = struct.pack("<BBQQB", 1, 1, rows, cols, vt_code) + struct.pack("<QQ", 0, 0)
    return head + struct.pack("<IIBB", rows, cols, 1, vt_code) + values


def _write(m) -> bytes:
    buf = io.BytesIO()
    dbdf.write(m, buf)
    return buf.getvalue()


def test_dense_layout_f64() -> None:
    m = np.array([[1.0, 2.0], [3.0, 4.5]])
    b = _write(m)
    assert b == _dense_bytes(2, 2, 7, struct.pack("<4d", 1.0, 2.0, 3.0, 4.5))
    assert len(b) == 45 + 32 and b[45:53] == struct.pack("<d", 1.0)


@pytest.mark.parametrize(
    ("vt", "dtype", "code"),
    [
        ("si8", np.int8, 0),
        ("si32", np.int32, 1),
        ("si64", np.int64, 2),
        ("ui8", np.uint8, 3),
        ("ui32", np.uint32, 4),
        ("ui64", np.uint64, 5),
        ("f32", np.float32, 6),
        ("f64", np.float64, 7),
    ],
)
def test_value_type_codes(tmp_path, vt, dtype, code) -> None:
    m = np.arange(6, dtype=dtype).reshape(2, 3)
    b = _write(m)
    assert b[18] == code and b[44] == code  # header vt and block vt: ValueTypeCode, not doc/BinaryFormat.md's table
    assert b[45:] == m.astype(np.dtype(dtype).newbyteorder("<")).tobytes()
    p = tmp_path / "m.dbdf"
    p.write_bytes(b)
    r = dbdf.read(str(p), 2, 3, vt, sparse=False)
    assert r.dtype == dtype and np.array_equal(r, m)


def test_csr_layout() -> None:
    m = sp.csr_array(np.array([[0.0, 2.0, 0.0], [0.0, 0.0, 0.0], [1.0, 0.0, 3.0]]))
    b = _write(m)
    head = struct.pack("<BBQQB", 1, 2, 3, 3, 7) + struct.pack("<QQ", 0, 0) + struct.pack("<IIBB", 3, 3, 2, 7)
    body = struct.pack("<Q", 3) + struct.pack("<4Q", 0, 1, 1, 3) + struct.pack("<3Q", 1, 0, 2)
    assert b == head + body + struct.pack("<3d", 2.0, 1.0, 3.0)
    assert len(head) + 8 == 53  # DaphneSerializer<CSRMatrix>::HEADER_BUFFER_SIZE


@pytest.mark.parametrize(("stored", "sparse"), [("dense", False), ("dense", True), ("csr", False), ("csr", True)])
def test_read_any_representation(tmp_path, stored, sparse) -> None:
    m = np.array([[0, 5, 0], [7, 0, -1]], dtype=np.int64)
    p = tmp_path / "m.dbdf"
    p.write_bytes(_write(m if stored == "dense" else sp.csr_array(m)))
    r = dbdf.read(str(p), 2, 3, "si64", sparse=sparse)
    assert sp.issparse(r) == sparse
    assert np.array_equal(r.toarray() if sparse else r, m)


def test_index_is_written_as_ui64() -> None:
    assert _write(np.array([[1]], dtype=np.uint64))[18] == 5


@pytest.mark.parametrize("m", [np.array([[True]]), np.array([["a"]], dtype=object)])
def test_unwritable_value_types(m) -> None:
    with pytest.raises(DaphneRuntimeError, match="cannot be written to a .dbdf file"):
        _write(m)


def _bad(tmp_path: Path, data: bytes, rows: int = 2, cols: int = 2, vt: str = "f64") -> str:
    p = tmp_path / "b.dbdf"
    p.write_bytes(data)
    with pytest.raises(DaphneRuntimeError) as e:
        dbdf.read(str(p), rows, cols, vt, sparse=False)
    return str(e.value)


def test_truncated(tmp_path) -> None:
    good = _dense_bytes(2, 2, 7, struct.pack("<4d", 1, 2, 3, 4))
    assert "truncated" in _bad(tmp_path, good[:-3])
    assert "truncated" in _bad(tmp_path, good[:10])


def test_trailing_bytes(tmp_path) -> None:
    assert "unexpected bytes" in _bad(tmp_path, _dense_bytes(2, 2, 7, struct.pack("<4d", 1, 2, 3, 4)) + b"x")


def test_header_mismatches(tmp_path) -> None:
    good = _dense_bytes(2, 2, 7, struct.pack("<4d", 1, 2, 3, 4))
    assert "holds a 2x2 matrix, but its .meta says 3x2" in _bad(tmp_path, good, rows=3)
    assert 'holds f64 values, but its .meta says "valueType": "si64"' in _bad(tmp_path, good, vt="si64")
    assert "version 9" in _bad(tmp_path, b"\x09" + good[1:])
    assert "holds a frame" in _bad(tmp_path, good[:1] + b"\x03" + good[2:])
