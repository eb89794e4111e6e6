"""Shipping values between ranks as raw buffers (never pickle for data: it runs at ~0.3 GB/s, raw numpy buffers
at 5-14 GB/s through mpich's shared memory; /work/shared/reference/toolchain.md).

A value travels as a small JSON *description* inside a control message plus zero or more raw buffers on the data
communicator. Both sides derive the buffer list from the description, so no sizes are exchanged separately:

| value | description | buffers |
|---|---|---|
| dense matrix (every numeric dtype, bool) | `{"k": "dense", "dtype", "shape"}` | the C-contiguous data |
| str matrix (dtype=object) | `{"k": "str", "shape", "nbytes"}` | int64 end offsets, UTF-8 bytes |
| CSR matrix | `{"k": "csr", "shape", "nnz", "dtype", "itype"}` | indptr, indices, data |
| scalar | `{"k": "scalar", "t", "v"}` (a float as its 64-bit pattern: keeps `-nan` and `-0`) | none |

Every buffer is sent as bytes (`MPI.BYTE`), so one code path serves every value type; the receiver allocates
arrays of the final dtype and receives into their bytes (zero copy on both sides for dense matrices and for the
data/indices of a CSR row block). A buffer larger than `--max-distr-chunk-size` goes out in several messages.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import numpy as np

from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.values import csr_from_parts, is_csr

Description = dict[str, Any]


# ---------------------------------------------------------------------------------------------------------------
# Descriptions and buffers
# ---------------------------------------------------------------------------------------------------------------


def describe(x: object) -> Description:
    """The description of a value (what the receiver needs to allocate its buffers)."""
    if is_csr(x):
        return {"k": "csr", "shape": list(x.shape), "nnz": int(x.nnz), "dtype": x.data.dtype.str,  # type: ignore[attr-defined]
                "itype": x.indices.dtype.str}  # type: ignore[attr-defined]  # fmt: skip
    if isinstance(x, np.ndarray):
        if x.dtype == object:
            return {"k": "str", "shape": list(x.shape), "nbytes": sum(len(s.encode("utf-8")) for s in x.ravel())}
        return {"k": "dense", "dtype": x.dtype.str, "shape": list(x.shape)}
    return describe_scalar(x)


def describe_scalar(x: object) -> Description:
    if isinstance(x, np.generic):  # not expected by the runtime contract, but kept exact if it happens
        d = describe_scalar(x.item())
        d["np"] = x.dtype.str
        return d
    if isinstance(x, bool):
        return {"k": "scalar", "t": "bool", "v": x}
    if isinstance(x, int):
        return {"k": "scalar", "t": "int", "v": x}
    if isinstance(x, float):
        return {"k": "scalar", "t": "float", "v": struct.unpack("<q", struct.pack("<d", x))[0]}
    if isinstance(x, str):
        return {"k": "scalar", "t": "str", "v": x}
    raise DaphneRuntimeError(f"distributed pipeline: cannot ship a value of type {type(x).__name__}")


def scalar_value(d: Description) -> object:
    t, v = d["t"], d["v"]
    value: object = struct.unpack("<d", struct.pack("<q", v))[0] if t == "float" else v
    return np.dtype(d["np"]).type(value) if "np" in d else value


def is_scalar(d: Description) -> bool:
    return d["k"] == "scalar"


def nbytes(d: Description) -> int:
    """Bytes of the raw buffers of a described value."""
    k = d["k"]
    if k == "dense":
        return int(np.prod(d["shape"])) * np.dtype(d["dtype"]).itemsize
    if k == "csr":
        it = np.dtype(d["itype"]).itemsize
        return (d["shape"][0] + 1 + d["nnz"]) * it + d["nnz"] * np.dtype(d["dtype"]).itemsize
    if k == "str":
        return int(np.prod(d["shape"])) * 8 + d["nbytes"]
    return 0


def _bytes(a: np.ndarray) -> np.ndarray:
    """A byte view of a C-contiguous array (a copy only if the array is not contiguous)."""
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8)


def buffers(x: object) -> list[np.ndarray]:
    """The raw buffers of a value, as byte views (zero copy for dense and CSR)."""
    if is_csr(x):
        return [_bytes(x.indptr.astype(x.indices.dtype, copy=False)), _bytes(x.indices), _bytes(x.data)]  # type: ignore[attr-defined]
    if isinstance(x, np.ndarray):
        if x.dtype == object:
            encoded = [s.encode("utf-8") for s in x.ravel()]
            ends = np.cumsum([len(e) for e in encoded], dtype=np.int64)
            return [_bytes(ends), np.frombuffer(bytearray(b"".join(encoded)), dtype=np.uint8)]
        return [_bytes(x)]
    return []


def allocate(d: Description) -> tuple[list[np.ndarray], Callable[[], object]]:
    """Receive buffers for a described value (byte views) and a function that builds the value once they are
    filled."""
    k = d["k"]
    if k == "dense":
        arr = np.empty(d["shape"], dtype=np.dtype(d["dtype"]))
        return [_bytes(arr)], lambda: arr
    if k == "csr":
        rows, cols = d["shape"]
        itype = np.dtype(d["itype"])
        indptr = np.empty(rows + 1, dtype=itype)
        indices = np.empty(d["nnz"], dtype=itype)
        data = np.empty(d["nnz"], dtype=np.dtype(d["dtype"]))
        bufs = [_bytes(indptr), _bytes(indices), _bytes(data)]
        return bufs, lambda: csr_from_parts(data, indices, indptr, (rows, cols))
    if k == "str":
        ends = np.empty(int(np.prod(d["shape"])), dtype=np.int64)
        blob = np.empty(d["nbytes"], dtype=np.uint8)
        return [_bytes(ends), blob], lambda: _strings(ends, blob, d["shape"])
    return [], lambda: scalar_value(d)


def _strings(ends: np.ndarray, blob: np.ndarray, shape: list[int]) -> np.ndarray:
    raw = blob.tobytes()
    out = np.empty(len(ends), dtype=object)
    start = 0
    for i, end in enumerate(ends.tolist()):
        out[i] = raw[start:end].decode("utf-8")
        start = end
    return out.reshape(shape)


def row_block(x: object, a: int, b: int) -> object:
    """Rows a..b-1 of a matrix as a value to ship (a view where possible: dense rows, CSR data and indices)."""
    if is_csr(x):
        lo, hi = int(x.indptr[a]), int(x.indptr[b])  # type: ignore[attr-defined]
        indptr = (x.indptr[a : b + 1] - lo).astype(x.indices.dtype)  # type: ignore[attr-defined]
        return csr_from_parts(x.data[lo:hi], x.indices[lo:hi], indptr, (b - a, x.shape[1]))  # type: ignore[attr-defined]
    return x[a:b]  # type: ignore[index]


# ---------------------------------------------------------------------------------------------------------------
# Transport (nonblocking: the caller completes the requests with protocol.wait_requests)
# ---------------------------------------------------------------------------------------------------------------


def _pieces(buf: np.ndarray, chunk: int) -> list[np.ndarray]:
    """A buffer cut into messages of at most `chunk` bytes (DAPHNE's --max-distr-chunk-size); one empty message
    for an empty buffer, so that sender and receiver always post the same number of operations."""
    if buf.size <= chunk:
        return [buf]
    return [buf[i : i + chunk] for i in range(0, buf.size, chunk)]


def isend(comm: Any, bufs: list[np.ndarray], dest: int, tag: int, chunk: int) -> list[Any]:
    from mpi4py import MPI

    return [comm.Isend([p, MPI.BYTE], dest=dest, tag=tag) for b in bufs for p in _pieces(b, chunk)]


def irecv(comm: Any, bufs: list[np.ndarray], source: int, tag: int, chunk: int) -> list[Any]:
    from mpi4py import MPI

    return [comm.Irecv([p, MPI.BYTE], source=source, tag=tag) for b in bufs for p in _pieces(b, chunk)]


def ibcast(comm: Any, bufs: list[np.ndarray], root: int, chunk: int) -> list[Any]:
    """Broadcast buffers from `root` (the root passes the data, the others their receive buffers)."""
    from mpi4py import MPI

    return [comm.Ibcast([p, MPI.BYTE], root=root) for b in bufs for p in _pieces(b, chunk)]
