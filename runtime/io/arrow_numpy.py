"""numpy values of pyarrow arrays without pyarrow's pandas shim.

Why: pyarrow's `Array.to_numpy` / `ChunkedArray.to_numpy` (zero-copy or not) import pandas when it is installed,
to ask it about extension types; that import costs 0.3-1.2 s, more than reading a 100,000-row CSV file. A
fixed-width numeric array without nulls is just its data buffer, so it is viewed directly (`np.frombuffer`: no
copy, no pandas); anything else (strings, booleans, which arrow packs as bits, arrays with nulls) goes through
pyarrow's own conversion.
"""

from __future__ import annotations

import numpy as np


def _buffer_dtype(arr) -> np.dtype | None:
    """The numpy dtype of `arr`'s data buffer, if `arr` is a plain numeric array whose values it holds (asked of
    `pyarrow.types`, not of `DataType.to_pandas_dtype`, which imports pandas too)."""
    import pyarrow.types as pat

    t = arr.type
    kind = "f" if pat.is_floating(t) else "i" if pat.is_signed_integer(t) else "u" if pat.is_unsigned_integer(t) else ""
    return np.dtype(f"<{kind}{t.bit_width // 8}") if kind else None


def array_to_numpy(arr) -> np.ndarray:
    """A pyarrow `Array` as a 1-D numpy array (a read-only view of its buffer when it is numeric and has no nulls)."""
    dt = _buffer_dtype(arr) if arr.null_count == 0 else None
    if dt is None:
        return arr.to_numpy(zero_copy_only=False)
    return np.frombuffer(arr.buffers()[1], dtype=dt, count=len(arr), offset=arr.offset * dt.itemsize)


def chunked_to_numpy(chunked) -> np.ndarray:
    """A pyarrow `ChunkedArray` as one 1-D numpy array (a view when it has a single numeric null-free chunk)."""
    chunks = chunked.chunks
    if len(chunks) == 1:
        return array_to_numpy(chunks[0])
    if not chunks or any(_buffer_dtype(c) is None or c.null_count for c in chunks):
        return chunked.to_numpy()
    return np.concatenate([array_to_numpy(c) for c in chunks])
