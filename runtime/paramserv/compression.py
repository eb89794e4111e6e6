"""Gradient compression with error feedback (`compression="topk:<fraction>"` or `"int8"`).

Each worker keeps a residual per gradient matrix: before compressing, the residual of what earlier pushes did not
send is added to the new gradient; after compressing, the residual becomes what this push does not send
(error feedback, so nothing is lost over time, only delayed).

| kind | what is sent per matrix of n elements | bytes |
|---|---|---|
| none | the matrix | n * itemsize |
| `topk:f` | the m = max(1, int(f*n)) largest-magnitude elements: values + int32 flat indices | m * (itemsize + 4) |
| `int8` | scale = max\\|g\\|/127 and round(g/scale) as int8 (decoded as q*scale) | n + 8 |

Only floating-point dense gradients are compressed; others (integer, CSR) go as they are. In LOCAL mode the
server receives the decoded gradient (the bytes are what a transport would send); in MPI mode `Payload.buffers`
is what really travels.

A payload may also carry a gradient as its *sufficient factors* (Poseidon's SFB): an affine layer's weight
gradient over a batch of K rows is t(A) @ B with A (K x M) and B (K x N), so A and B (K (M + N) values) can travel
instead of the M x N matrix and the receiver rebuilds the product (`factors`, kind "sf"). Nothing produces such
payloads yet: this is the hook through which a worker that knows the factors (the compiler recognising
`t(A) @ B` in `upd`) sends them; every transport of a push (servers, shards) already decodes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from daphnec.runtime.paramserv.options import Compression
from daphnec.runtime.values import is_csr


@dataclass
class Payload:
    """One compressed gradient matrix: a JSON description plus raw buffers."""

    desc: dict[str, Any]
    buffers: list[np.ndarray]

    @property
    def nbytes(self) -> int:
        return sum(b.nbytes for b in self.buffers) + (8 if self.desc.get("k") == "int8" else 0)


def raw_bytes(x: object) -> int:
    if is_csr(x):
        return int(x.data.nbytes + x.indices.nbytes + x.indptr.nbytes)  # type: ignore[attr-defined]
    return int(getattr(x, "nbytes", 0))


def compressible(g: object) -> bool:
    return isinstance(g, np.ndarray) and g.dtype.kind == "f" and g.size > 0


def topk_count(size: int, fraction: float) -> int:
    return max(1, min(size, int(fraction * size)))


def encode(c: Compression, g: np.ndarray) -> tuple[Payload, np.ndarray]:
    """The payload of one gradient matrix and its decoded value (what the receiver reconstructs)."""
    flat = g.reshape(-1)
    if c.kind == "topk":
        m = topk_count(flat.size, c.fraction)
        if m == flat.size:
            idx = np.arange(m, dtype=np.int32)
        else:
            idx = np.sort(np.argpartition(np.abs(flat), flat.size - m)[flat.size - m :]).astype(np.int32)
        vals = np.ascontiguousarray(flat[idx])
        p = Payload({"k": "topk", "shape": list(g.shape), "dtype": g.dtype.str, "m": m}, [vals, idx])
        return p, decode(p.desc, p.buffers)
    amax = float(np.max(np.abs(flat))) if flat.size else 0.0
    scale = amax / 127.0 if np.isfinite(amax) else 0.0
    if scale == 0.0:
        q = np.zeros(flat.size, dtype=np.int8)
    else:
        q = np.clip(np.rint(flat / scale), -127, 127).astype(np.int8)
    p = Payload({"k": "int8", "shape": list(g.shape), "dtype": g.dtype.str, "scale": scale}, [q])
    return p, decode(p.desc, p.buffers)


PAYLOAD_KINDS = ("topk", "int8", "sf")
"""The `k` of a description that is a payload (else it is a plain value of serialization.py)."""


def factors(A: np.ndarray, B: np.ndarray) -> Payload:
    """The gradient t(A) @ B as its sufficient factors (K x M and K x N; decoded as t(A) @ B, M x N)."""
    if A.ndim != 2 or B.ndim != 2 or A.shape[0] != B.shape[0] or A.dtype != B.dtype:
        raise ValueError(f"sufficient factors need K x M and K x N of one type, got {A.shape} and {B.shape}")
    A, B = np.ascontiguousarray(A), np.ascontiguousarray(B)
    desc = {"k": "sf", "shape": [A.shape[1], B.shape[1]], "dtype": A.dtype.str, "rows": A.shape[0]}
    return Payload(desc, [A, B])


def decode(desc: dict[str, Any], buffers: list[np.ndarray]) -> np.ndarray:
    shape, dtype = tuple(desc["shape"]), np.dtype(desc["dtype"])
    if desc["k"] == "sf":
        K = desc["rows"]
        A = buffers[0].view(dtype).reshape(K, shape[0])
        B = buffers[1].view(dtype).reshape(K, shape[1])
        return A.T @ B
    if desc["k"] == "topk":
        vals, idx = buffers
        out = np.zeros(int(np.prod(shape)), dtype=dtype)
        out[idx] = vals
        return out.reshape(shape)
    q = buffers[0]
    return (q.astype(dtype) * dtype.type(desc["scale"])).reshape(shape)


def allocate(desc: dict[str, Any]) -> list[np.ndarray]:
    """Receive buffers for a payload."""
    dtype = np.dtype(desc["dtype"])
    if desc["k"] == "sf":
        K, (M, N) = desc["rows"], desc["shape"]
        return [np.empty((K, M), dtype=dtype), np.empty((K, N), dtype=dtype)]
    if desc["k"] == "topk":
        return [np.empty(desc["m"], dtype=dtype), np.empty(desc["m"], dtype=np.int32)]
    return [np.empty(int(np.prod(desc["shape"])), dtype=np.int8)]


def payload_size(c: Compression, shape: tuple[int, ...], dtype: np.dtype) -> int:
    """Bytes of the buffers of a compressed matrix of this shape (fixed: used for fixed-size collectives)."""
    n = int(np.prod(shape))
    if c.kind == "topk":
        return topk_count(n, c.fraction) * (dtype.itemsize + 4)
    return n


class Compressor:
    """One worker's compression state: the residual per gradient position (error feedback)."""

    def __init__(self, c: Compression):
        self.c = c
        self.residual: list[np.ndarray | None] = []

    def compress(self, grads: tuple) -> tuple[list[Payload | None], list[object], int, int]:
        """(payload per matrix or None where sent raw, decoded gradients, raw bytes, sent bytes)."""
        if len(self.residual) < len(grads):
            self.residual += [None] * (len(grads) - len(self.residual))
        payloads: list[Payload | None] = []
        decoded: list[object] = []
        raw = sent = 0
        for j, g in enumerate(grads):
            size = raw_bytes(g)
            raw += size
            if not compressible(g):
                payloads.append(None)
                decoded.append(g)
                sent += size
                continue
            r = self.residual[j]
            full = g + r if r is not None and r.shape == g.shape and r.dtype == g.dtype else g
            p, d = encode(self.c, full)
            self.residual[j] = full - d
            payloads.append(p)
            decoded.append(d)
            sent += p.nbytes
        return payloads, decoded, raw, sent
