"""DAPHNE's binary data format (`.dbdf`), as DaphneSerializer.h writes it (little endian, packed, one block).

    u8 version=1 | u8 dt (1 dense, 2 CSR) | u64 rows | u64 cols | u8 vt        header, 19 bytes
    u64 rx=0 | u64 cx=0                                                      the single block's position
    u32 rows | u32 cols | u8 bt (0 empty, 1 dense, 2 sparse/CSR) | u8 vt     block header; ends at byte 45
    dense:  rows*cols values, row-major
    CSR:    u64 nnz | (rows+1) x u64 row offsets | nnz x u64 column indices | nnz values

`vt` is DAPHNE's ValueTypeCode (SI8=0, SI32=1, SI64=2, UI8=3, UI32=4, UI64=5, F32=6, F64=7); the different table in
doc/BinaryFormat.md (and its interleaved CSR layout) is not what the code does. Frames have no serializer in DAPHNE
(DaphneSerializer<Frame> throws "not implemented"), strings neither, so both are rejected here too. An empty block
(bt=0) is read as an all-zero matrix of the header's shape.
"""

from __future__ import annotations

import os
import struct
from typing import BinaryIO

import numpy as np

from daphnec.dialects.value_types import DTYPES
from daphnec.dialects.value_types import VT_CODES as VALUE_TYPE_CODES
from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.memory import check_alloc

VT_CODES: dict[str, int] = {vt: code for vt, code in VALUE_TYPE_CODES.items() if vt != "str"}
"""DAPHNE's ValueTypeCode of each value type a .dbdf matrix may hold (the numeric ones: no string matrices)."""
_CODE_VTS = {c: vt for vt, c in VT_CODES.items()}
_DTYPES = {vt: DTYPES[vt].newbyteorder("<").str for vt in VT_CODES}
"""The file's (little-endian) numpy dtype of each value type."""
_HEADER = struct.Struct("<BBQQB")  # version, dt, rows, cols, vt
_BODY = struct.Struct("<QQIIBB")  # rx, cx, block rows, block cols, bt, vt
HEADER_SIZE = _HEADER.size + _BODY.size  # 45
DENSE, CSR = 1, 2
_EMPTY_BLOCK, _DENSE_BLOCK, _SPARSE_BLOCK = 0, 1, 2


def _vt_for_write(vt: str) -> str:
    if vt == "index":
        return "ui64"
    if vt not in VT_CODES:
        raise DaphneRuntimeError(
            f"write: a matrix of value type {vt} cannot be written to a .dbdf file "
            "(DAPHNE's binary format has no code for it)"
        )
    return vt


def _check_u32(rows: int, cols: int) -> None:
    if rows >= 2**32 or cols >= 2**32:
        raise DaphneRuntimeError(
            f"write: a {rows}x{cols} matrix is too large for one .dbdf block (at most 2^32-1 rows and columns)"
        )


def write(m, f: BinaryIO) -> None:
    """A dense or CSR matrix in DAPHNE's binary format."""
    from daphnec.runtime.values import is_csr, vt_of

    vt = _vt_for_write(vt_of(m))
    rows, cols = m.shape
    _check_u32(rows, cols)
    code, dt = VT_CODES[vt], np.dtype(_DTYPES[vt])
    if is_csr(m):
        m = m.copy()
        m.sum_duplicates()
        f.write(_HEADER.pack(1, CSR, rows, cols, code) + _BODY.pack(0, 0, rows, cols, _SPARSE_BLOCK, code))
        f.write(struct.pack("<Q", m.nnz))
        for a, t in ((m.indptr, "<u8"), (m.indices, "<u8"), (m.data, dt)):
            f.write(np.ascontiguousarray(a, dtype=t).tobytes())
        return
    f.write(_HEADER.pack(1, DENSE, rows, cols, code) + _BODY.pack(0, 0, rows, cols, _DENSE_BLOCK, code))
    f.write(np.ascontiguousarray(m, dtype=dt).tobytes())


def _read_exact(f: BinaryIO, n: int, path: str, what: str) -> bytes:
    b = f.read(n)
    if len(b) != n:
        raise DaphneRuntimeError(f"readMatrix: '{path}' is truncated (it ends inside the {what})")
    return b


def _array(f: BinaryIO, dtype: str, count: int, path: str, what: str) -> np.ndarray:
    """`count` values at the current position (the caller checked the file is long enough)."""
    dt = np.dtype(dtype)
    a = np.fromfile(f, dtype=dt, count=count)
    if len(a) != count:
        raise DaphneRuntimeError(f"readMatrix: '{path}' is truncated (it ends inside the {what})")
    return a if dt.isnative else a.astype(dt.newbyteorder("="))


def _need(f: BinaryIO, nbytes: int, path: str, what: str) -> None:
    """Fail before allocating anything if fewer than `nbytes` bytes are left (a corrupt header could ask for
    terabytes)."""
    if os.fstat(f.fileno()).st_size - f.tell() < nbytes:
        raise DaphneRuntimeError(f"readMatrix: '{path}' is truncated (it ends inside the {what})")


def read_header(path: str) -> tuple[int, int, int, str]:
    """(data type, rows, cols, value type) of a `.dbdf` file."""
    with open(path, "rb") as f:
        version, dt, rows, cols, code = _HEADER.unpack(_read_exact(f, _HEADER.size, path, "header"))
    if version != 1:
        raise DaphneRuntimeError(f"readMatrix: '{path}' is not a DAPHNE binary file (version {version}, expected 1)")
    if dt not in (DENSE, CSR):
        kind = "a frame" if dt == 3 else f"data type code {dt}"
        raise DaphneRuntimeError(f"readMatrix: '{path}' holds {kind}, not a dense or CSR matrix")
    if code not in _CODE_VTS:
        raise DaphneRuntimeError(f"readMatrix: '{path}' has an unknown value type code {code}")
    return dt, rows, cols, _CODE_VTS[code]


def read(path: str, rows: int, cols: int, vt: str, sparse: bool):
    """The matrix in a `.dbdf` file, in the representation asked for (dense or CSR) whatever the file holds."""
    from daphnec.runtime.values import as_dense, is_csr

    _, frows, fcols, fvt = read_header(path)
    if (frows, fcols) != (rows, cols):
        raise DaphneRuntimeError(
            f"readMatrix: '{path}' holds a {frows}x{fcols} matrix, but its .meta says {rows}x{cols}"
        )
    if fvt != vt:
        raise DaphneRuntimeError(f'readMatrix: \'{path}\' holds {fvt} values, but its .meta says "valueType": "{vt}"')
    with open(path, "rb") as f:
        f.seek(_HEADER.size)
        if not sparse:
            check_alloc("readMatrix", rows, cols, vt)
        m = _read_block(f, path, rows, cols, vt)
        if f.read(1):
            raise DaphneRuntimeError(f"readMatrix: '{path}' has unexpected bytes after the matrix data")
    if sparse and not is_csr(m):
        from daphnec.runtime.io.sparse import dense_to_csr

        return dense_to_csr(m)
    return m if sparse else as_dense(m)


def _read_block(f: BinaryIO, path: str, rows: int, cols: int, vt: str):
    _, _, brows, bcols, bt, code = _BODY.unpack(_read_exact(f, _BODY.size, path, "block header"))
    if bt == _EMPTY_BLOCK:
        return np.zeros((rows, cols), dtype=np.dtype(_DTYPES[vt]).newbyteorder("="))
    if (brows, bcols) != (rows % 2**32, cols % 2**32) or code != VT_CODES[vt]:
        raise DaphneRuntimeError(
            f"readMatrix: '{path}': the block header does not match the file header "
            "(daphnec reads single-block files only)"
        )
    if bt == _DENSE_BLOCK:
        _need(f, rows * cols * np.dtype(_DTYPES[vt]).itemsize, path, "matrix values")
        return _array(f, _DTYPES[vt], rows * cols, path, "matrix values").reshape(rows, cols)
    if bt == _SPARSE_BLOCK:
        return _read_csr(f, path, rows, cols, vt)
    raise DaphneRuntimeError(f"readMatrix: '{path}': block type {bt} is not supported (0 empty, 1 dense, 2 CSR)")


def _read_csr(f: BinaryIO, path: str, rows: int, cols: int, vt: str):
    import scipy.sparse as sp

    (nnz,) = struct.unpack("<Q", _read_exact(f, 8, path, "number of non-zeros"))
    _need(f, 8 * (rows + 1) + (8 + np.dtype(_DTYPES[vt]).itemsize) * nnz, path, "CSR arrays")
    indptr = _array(f, "<u8", rows + 1, path, "CSR row offsets")
    indices = _array(f, "<u8", nnz, path, "CSR column indices")
    data = _array(f, _DTYPES[vt], nnz, path, "CSR values")
    ok = indptr[0] == 0 and indptr[-1] == nnz and bool(np.all(indptr[1:] >= indptr[:-1]))
    if not ok or (nnz and int(indices.max()) >= cols):
        raise DaphneRuntimeError(
            f"readMatrix: '{path}' holds an invalid CSR matrix (bad row offsets or column indices)"
        )
    idx = np.int32 if max(rows, cols, nnz) < 2**31 else np.int64
    m = sp.csr_array((data, indices.astype(idx), indptr.astype(idx)), shape=(rows, cols))
    m.sum_duplicates()
    return m
