"""How a model's gradients (or the model itself) lie in the buffers that travel between worker ranks.

- `FlatLayout`: every matrix of the model, in order, in one contiguous vector of the model's value type. The
  bandwidth-optimal algorithms cut this vector into chunks (reduction.chunk_bounds), regardless of where one
  matrix ends and the next begins; element-wise sums do not care. `buckets` groups the vector into messages of a
  bounded size (small matrices share one, large ones are split), the unit for sending parts of a gradient while
  others are still being computed.
- `PayloadLayout`: one worker's contribution as a fixed-size byte buffer (an int64 flag, then per matrix the raw
  values or, with compression, the compressed payload), so that k of them fit an all-gather of equal sizes or a
  receive posted before the sender's size is known. Flag 1: a contribution, 0: none (no batch at this clock).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np

from daphnec.runtime.distributed import serialization as ser
from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.paramserv import compression as comp
from daphnec.runtime.paramserv.options import Compression
from daphnec.runtime.paramserv.worker import Contribution
from daphnec.runtime.values import as_dense

FLAG = 8
"""Bytes of a payload's flag."""


class FlatLayout:
    """The model's matrices as one vector of its value type."""

    def __init__(self, model: Sequence[object], what: str = "ALLREDUCE"):
        dtypes = {np.dtype(m.dtype) for m in model}  # type: ignore[attr-defined]
        if len(dtypes) != 1:
            raise DaphneRuntimeError(f"paramserv: {what} over MPI needs the model's matrices of one value type, got "
                                     f"{', '.join(sorted(d.name for d in dtypes))}")  # fmt: skip
        self.dtype = dtypes.pop()
        self.shapes = [tuple(m.shape) for m in model]  # type: ignore[attr-defined]
        self.sizes = [int(np.prod(s)) for s in self.shapes]
        self.offsets = [0]
        for n in self.sizes:
            self.offsets.append(self.offsets[-1] + n)
        self.n = self.offsets[-1]

    @property
    def nbytes(self) -> int:
        return self.n * self.dtype.itemsize

    def flatten(self, arrays: Sequence[object], out: np.ndarray | None = None) -> np.ndarray:
        """The matrices copied into one vector (cast to the model's value type)."""
        flat = np.empty(self.n, dtype=self.dtype) if out is None else out
        for a, lo, hi, shape in zip(arrays, self.offsets, self.offsets[1:], self.shapes):
            d = np.asarray(as_dense(a))
            if d.shape != shape:
                raise DaphneRuntimeError(f"paramserv: a {d.shape} matrix where the model has {shape}")
            flat[lo:hi] = d.reshape(-1)
        return flat

    def unflatten(self, flat: np.ndarray) -> tuple:
        """The matrices as views of the vector."""
        return tuple(flat[lo:hi].reshape(shape) for lo, hi, shape in zip(self.offsets, self.offsets[1:], self.shapes))

    def buckets(self, limit: int) -> list[tuple[int, int]]:
        """The vector cut into messages of at most `limit` bytes that do not split a small matrix: consecutive
        matrices share a bucket while it stays under the limit, a matrix larger than the limit is split into
        equal pieces (MG-WFBP's merging and CARAMEL's chunking)."""
        per = max(1, limit // self.dtype.itemsize)
        out: list[tuple[int, int]] = []
        start = 0
        for lo, hi in zip(self.offsets, self.offsets[1:]):
            if hi - lo > per:
                if lo > start:
                    out.append((start, lo))
                pieces = -(-(hi - lo) // per)
                out += [(lo + (hi - lo) * i // pieces, lo + (hi - lo) * (i + 1) // pieces) for i in range(pieces)]
                start = hi
            elif hi - start > per:
                out.append((start, lo))
                start = lo
        if start < self.n:
            out.append((start, self.n))
        return out


class PayloadLayout:
    """A contribution as a fixed-size byte buffer (see the module docstring)."""

    def __init__(self, model: Sequence[object], c: Compression):
        self.c = c
        self.shapes = [tuple(m.shape) for m in model]  # type: ignore[attr-defined]
        self.dtypes = [np.dtype(m.dtype) for m in model]  # type: ignore[attr-defined]
        self.sizes = [self._size(s, d) for s, d in zip(self.shapes, self.dtypes)]
        self.size = FLAG + sum(self.sizes)

    def _compressed(self, shape: tuple[int, ...], dt: np.dtype) -> bool:
        return bool(self.c) and dt.kind == "f" and int(np.prod(shape)) > 0

    def _size(self, shape: tuple[int, ...], dt: np.dtype) -> int:
        if not self._compressed(shape, dt):
            return int(np.prod(shape)) * dt.itemsize
        return comp.payload_size(self.c, shape, dt) + (8 if self.c.kind == "int8" else 0)

    def encode(self, c: Contribution | None, flag: int = 1) -> np.ndarray:
        """The buffer of a contribution (None: a flag-0 buffer)."""
        out = np.zeros(self.size, dtype=np.uint8)
        out[:FLAG].view(np.int64)[0] = flag if c is not None else 0
        if c is None:
            return out
        pos = FLAG
        payloads = c.payloads or [None] * len(c.grads)
        for j, (g, p) in enumerate(zip(c.grads, payloads)):
            for b in self._buffers(j, g, p):
                raw = ser._bytes(b)
                out[pos : pos + raw.size] = raw
                pos += raw.size
        return out

    def _buffers(self, j: int, g: object, p: comp.Payload | None) -> list[np.ndarray]:
        if p is None:
            return [np.ascontiguousarray(as_dense(g), dtype=self.dtypes[j])]
        if np.dtype(p.desc["dtype"]) != self.dtypes[j]:
            want, got = self.dtypes[j], p.desc["dtype"]
            raise DaphneRuntimeError(f"paramserv: ALLREDUCE over MPI with compression needs gradients of the "
                                     f"model's value type ({want}), got {got}")  # fmt: skip
        bufs = list(p.buffers)
        if p.desc["k"] == "int8":
            bufs.append(np.array([p.desc["scale"]], dtype=np.float64))
        return bufs

    @staticmethod
    def flag(part: np.ndarray) -> int:
        return int(part[:FLAG].view(np.int64)[0])

    def decode(self, part: np.ndarray) -> tuple:
        """The (decoded) gradients of a flag-1 buffer."""
        pos, out = FLAG, []
        for j, (shape, dt) in enumerate(zip(self.shapes, self.dtypes)):
            n = int(np.prod(shape))
            if not self._compressed(shape, dt):
                out.append(part[pos : pos + n * dt.itemsize].view(dt).reshape(shape).copy())
            elif self.c.kind == "topk":
                m = comp.topk_count(n, self.c.fraction)
                vals = part[pos : pos + m * dt.itemsize].view(dt)
                idx = part[pos + m * dt.itemsize : pos + m * (dt.itemsize + 4)].view(np.int32)
                out.append(comp.decode({"k": "topk", "shape": list(shape), "dtype": dt.str, "m": m}, [vals, idx]))
            else:
                q = part[pos : pos + n].view(np.int8)
                scale = float(part[pos + n : pos + n + 8].view(np.float64)[0])
                out.append(comp.decode({"k": "int8", "shape": list(shape), "dtype": dt.str, "scale": scale}, [q]))
            pos += self.sizes[j]
        return tuple(out)


class FactorLayout:
    """`sfb=true`: the sufficient factors of one worker's factored gradients as a fixed-size byte buffer (a flag,
    the batch's row count K, then per factored position A (K x M) and B (K x N), each padded to `batchsize` rows),
    so that k of them fit one all-gather; the receiver rebuilds each gradient as t(A) @ B."""

    def __init__(self, model: Sequence[object], positions: Sequence[int], batchsize: int):
        self.positions = list(positions)
        self.shapes = [tuple(model[j].shape) for j in positions]  # type: ignore[attr-defined]
        self.dtype = np.dtype(model[positions[0]].dtype)  # type: ignore[attr-defined]
        self.rows = batchsize
        self.size = 2 * FLAG + sum(batchsize * (m + n) for m, n in self.shapes) * self.dtype.itemsize
        bounds: list[tuple[int, int]] = []
        pos = 0
        for m, n in self.shapes:
            for width in (m, n):
                end = pos + (2 * FLAG if not bounds else 0) + self.rows * width * self.dtype.itemsize
                bounds.append((pos, end))
                pos = end
        self.segments = bounds
        """The byte range of each factor in the buffer, in the order A, B of the first position, A, B of the
        second, ... (the first range also holds the flag and K): `overlap=true` all-gathers each on its own as
        soon as it is final (the A factors during the forward pass); together they are the one buffer."""

    def encode(
        self, c: Contribution | None, out: np.ndarray | None = None, segments: Collection[int] | None = None
    ) -> np.ndarray:
        """The buffer of `c`'s factors (zeros for no contribution), written into `out` if given (a buffer of zeros
        or of factors put already); `segments`: only those factors (the overlap's factors not sent yet)."""
        out = np.zeros(self.size, dtype=np.uint8) if out is None else out
        if c is None:
            return out
        for i, j in enumerate(self.positions):
            p = c.payloads[j] if c.payloads is not None else None
            if p is None or p.desc.get("k") != "sf":
                raise DaphneRuntimeError(f"paramserv: sfb: no sufficient factors for the gradient at position {j}")
            for f, F in enumerate(p.buffers):
                if segments is None or 2 * i + f in segments:
                    self.put(out, 2 * i + f, F)
        return out

    def put(self, out: np.ndarray, s: int, F: object) -> None:
        """Write factor `s` (of `segments`: the A factor of the (s // 2)-th position for an even s, else its B)
        into the buffer `out`; the first segment also marks the buffer as a contribution of K = F's rows."""
        F = np.asarray(as_dense(F))
        K = F.shape[0]
        if K > self.rows:
            raise DaphneRuntimeError(f"paramserv: sfb: a batch of {K} rows exceeds batchsize={self.rows}")
        if s == 0:
            head = out[: 2 * FLAG].view(np.int64)
            head[0], head[1] = 1, K
        lo = self._start(s)
        raw = np.ascontiguousarray(F, dtype=self.dtype).view(np.uint8).reshape(-1)
        out[lo : lo + raw.size] = raw

    def _start(self, s: int) -> int:
        """The first byte of factor s's values (the first segment begins with the flag and K)."""
        return self.segments[s][0] + (2 * FLAG if s == 0 else 0)

    @staticmethod
    def flag(part: np.ndarray) -> int:
        return int(part[:FLAG].view(np.int64)[0])

    def factor(self, part: np.ndarray, s: int) -> np.ndarray:
        """Factor s (of `segments`) of a flag-1 buffer, a K x width view (K: the rows the buffer holds)."""
        K = int(part[FLAG : 2 * FLAG].view(np.int64)[0])
        width = self.shapes[s // 2][s % 2]
        lo = self._start(s)
        return part[lo : lo + K * width * self.dtype.itemsize].view(self.dtype).reshape(K, width)

    def rebuild(self, parts: Sequence[np.ndarray]) -> tuple:
        """The sum of the workers' gradients t(A_i) @ B_i for the flag-1 buffers `parts` (in worker order) as ONE
        product per position: sum_i t(A_i) @ B_i = t([A_1; ...; A_k]) @ [B_1; ...; B_k], inner dimension the
        workers' rows together. k products of inner dimension K and k - 1 additions of M x N matrices cost 1.5-3.5x
        the time of one (measured for the FC MLP's layers at k = 3, K = 64), and every worker rebuilds every step.
        The sum's rounding differs from the canonical tree of k products (within 1e-15 relative), but every rank
        stacks in worker order, so the replicas stay identical."""
        return tuple(self.rebuild_one(parts, i) for i in range(len(self.shapes)))

    def rebuild_one(self, parts: Sequence[np.ndarray], i: int) -> np.ndarray:
        """`rebuild` of the i-th factored position only (it reads only that position's factors and K)."""
        As, Bs = [self.factor(p, 2 * i) for p in parts], [self.factor(p, 2 * i + 1) for p in parts]
        A, B = (As[0], Bs[0]) if len(As) == 1 else (np.concatenate(As), np.concatenate(Bs))
        return A.T @ B
