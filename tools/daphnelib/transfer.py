"""Data exchange between Python and the runtime: numpy arrays, pandas frames, tensors, and DAPHNE-style files.

Shared memory (the default) is zero-copy in both directions where the layout allows (docs/python-api.md):
- a numpy input of a supported dtype, C- or F-contiguous (any strides, in fact), is handed to the runtime as a
  read-only *view*: no byte is copied, and a kernel that tried to write into it would fail instead of changing the
  caller's data. The runtime's dense matrix is a 2-D numpy array, and every kernel accepts any layout: numpy
  kernels read strided arrays, and the native (`--vec`) pipeline kernels, which need C-contiguous rows, fall back
  to their numpy body for other layouts (`compiler/backend/jit.py`), so nothing is converted up front.
- a result matrix is the runtime's array itself; a frame result's columns are its column arrays.
- a pandas frame maps column by column (`receiveFromNumpy` per column, then `createFrame`): numeric columns are
  views, string columns become arrays of Python strings (a copy: the runtime's string representation), categorical
  columns become their codes (DaphneLib's choice; `categorical="values"` keeps the values).

Files (`shared_memory=False`, `compute(type="files")`) write and read DAPHNE's CSV + `.meta` files, as DaphneLib
does: inputs with full precision, results as DAPHNE's writer writes them (`%f`, six decimals).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from daphnec.dialects.value_types import DTYPES, VT_OF_DTYPE

# dtypes whose arrays the runtime takes as they are; int16/uint16 (no DAPHNE value type) are widened by a copy.
_WIDENED = {np.dtype(np.int16): np.dtype(np.int32), np.dtype(np.uint16): np.dtype(np.uint32)}


def numpy_vt(dtype: np.dtype) -> str | None:
    """The value type of a numpy dtype the runtime accepts as is, or None."""
    vt = VT_OF_DTYPE.get(dtype)
    return None if vt is None or vt == "str" else vt


def as_matrix_array(mat: Any) -> tuple[np.ndarray, tuple[int, ...]]:
    """A 2-D array for `from_numpy` (1-D: n x 1; n-D: (shape[0], -1) as DaphneLib) and the original shape."""
    a = np.asarray(mat)
    shape = a.shape
    if a.ndim == 0:
        a = a.reshape(1, 1)
    elif a.ndim == 1:
        a = a.reshape(-1, 1)
    elif a.ndim > 2:
        a = a.reshape(shape[0], -1)
    if a.dtype in _WIDENED:
        a = a.astype(_WIDENED[a.dtype])  # a copy, *before* the data is handed over (DaphneLib reinterprets)
    elif a.dtype.kind in "USO":
        a = _string_array(a)
    return a, shape


def _string_array(a: np.ndarray) -> np.ndarray:
    """Strings as the runtime keeps them: an object array of Python `str`."""
    if a.dtype.kind == "O" and not all(type(v) is str for v in a.flat):
        raise TypeError("a numpy object array can only be transferred if every element is a str")
    return a.astype(object) if a.dtype.kind != "O" else a


def read_only_view(a: np.ndarray) -> np.ndarray:
    """A view of `a` that kernels cannot write into (no data is copied)."""
    v = a.view()
    v.flags.writeable = False
    return v


def check_dtype(a: np.ndarray) -> str:
    vt = VT_OF_DTYPE.get(a.dtype)
    if vt is None:
        raise TypeError(f"unsupported numpy dtype: {a.dtype} (supported: {', '.join(sorted(DTYPES))} value types)")
    return vt


# --- pandas --------------------------------------------------------------------------------------------------------


def pandas() -> Any:
    """The pandas module (an optional dependency: `pip install daphnec[pandas]`)."""
    try:
        import pandas as pd
    except ImportError as e:
        raise ImportError("DAPHNE frames in Python need pandas: pip install 'daphnec[pandas]'") from e
    return pd


def pandas_columns(df: Any, keep_index: bool, categorical: str) -> tuple[list[np.ndarray], list[str]]:
    """The columns of a pandas DataFrame (or Series) as runtime column arrays, and their labels."""
    pd = pandas()

    if isinstance(df, pd.Series):
        df = df.to_frame()
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"from_pandas expects a pandas DataFrame or Series, got {type(df).__name__}")
    if isinstance(df.columns, pd.MultiIndex):
        raise TypeError("handling of pandas MultiIndex DataFrame is not implemented yet")
    if keep_index:
        df = df.reset_index()  # a new frame: DaphneLib resets the caller's frame in place
    cols = [_pandas_column(df.iloc[:, i], str(label), i, categorical) for i, label in enumerate(df.columns)]
    return cols, [str(label) for label in df.columns]


def _pandas_column(s: Any, label: str, idx: int, categorical: str) -> np.ndarray:
    pd = pandas()

    dtype = s.dtype
    if isinstance(dtype, pd.SparseDtype):
        s = s.sparse.to_dense()
        dtype = s.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        if categorical == "codes":
            return s.cat.codes.to_numpy()
        s = s.astype(s.cat.categories.dtype)
        dtype = s.dtype
    if s.hasnans and not (isinstance(dtype, np.dtype) and dtype.kind == "f"):
        raise ValueError(
            f'column "{label}" ({idx}) has missing values; DAPHNE frames have no missing values except NaN in float '
            "columns: fill them first (e.g. df.fillna(...))"
        )
    if isinstance(dtype, np.dtype) and numpy_vt(dtype) is not None:
        return s.to_numpy()  # a view of the frame's block (no copy)
    if isinstance(dtype, np.dtype) and dtype in _WIDENED:
        return s.to_numpy().astype(_WIDENED[dtype])
    if (isinstance(dtype, np.dtype) and dtype.kind == "O") or isinstance(dtype, pd.StringDtype):
        values = s.to_numpy(dtype=object)
        if not all(type(v) is str for v in values):
            raise TypeError(f'column "{label}" ({idx}) mixes strings with other objects')
        return values
    if pd.api.types.is_extension_array_dtype(dtype) and dtype.kind in "iufb":
        return s.to_numpy(dtype=dtype.numpy_dtype)  # nullable Int64/Float64/boolean without missing values
    raise TypeError(f'Unsupported numpy dtype in column "{label}" ({idx})')


def to_pandas(frame: Any, use_index_column: bool) -> Any:
    """A runtime frame as a pandas DataFrame sharing its numeric column arrays."""
    pd = pandas()

    df = pd.DataFrame(dict(zip(frame.labels, frame.columns)), copy=False)
    if use_index_column and "index" in df.columns:
        df = df.set_index("index", drop=True)
    return df


# --- files ---------------------------------------------------------------------------------------------------------


def write_input_file(data: Any, path: str) -> tuple[object, ...]:
    """Write an input as DAPHNE's CSV + `.meta` (full precision); what its compiled reader depends on."""
    from daphnec.runtime.frame import Frame
    from daphnec.runtime.io import atomic
    from daphnec.runtime.io.meta import frame_meta_json, matrix_meta_json

    if isinstance(data, Frame):
        vts = [check_dtype(c) for c in data.columns]
        meta = frame_meta_json(data.nrow, list(data.labels), vts)
        body = _csv_rows([c.reshape(-1, 1) for c in data.columns], data.nrow)
        sig: tuple[object, ...] = ("frame", data.nrow, tuple(vts), tuple(data.labels))
    else:
        vt = check_dtype(data)
        meta = matrix_meta_json(data.shape[0], data.shape[1], vt)
        body = _csv_rows([data], data.shape[0])
        sig = ("matrix", data.shape, vt)
    atomic.write_files([(path, lambda f: f.write(body)), (path + ".meta", lambda f: f.write(meta.encode()))])
    return sig


def _csv_rows(blocks: list[np.ndarray], nrows: int) -> bytes:
    """CSV lines of column blocks side by side: floats with 17 significant digits (exact), integers and booleans
    as numbers, strings quoted as DAPHNE's writer does (`runtime/io/csv.py`)."""
    from daphnec.runtime.io.csv import _rows_text as rows_text  # the writer's block formatter
    from daphnec.runtime.io.csv import quote_if_needed

    fmts: list[str] = []
    columns: list[list] = []
    for b in blocks:
        fmt = "%.17g" if b.dtype.kind == "f" else "%s" if b.dtype.kind == "O" else "%d"
        if len(blocks) == 1 and b.dtype.kind != "O":  # one numeric matrix: its row-major values as they are
            return "".join(rows_text([fmt] * b.shape[1], b.ravel().tolist(), nrows)).encode()
        for j in range(b.shape[1]):
            col = b[:, j].tolist()
            columns.append([quote_if_needed(v) for v in col] if fmt == "%s" else col)
            fmts.append(fmt)
    values = [v for row in zip(*columns) for v in row]
    return "".join(rows_text(fmts, values, nrows)).encode()


def read_result_file(path: str, kind: str) -> Any:
    """A result written by the program's `writeMatrix`/`writeFrame`, read back with its `.meta`."""
    from daphnec.runtime.io.meta import read_meta
    from daphnec.runtime.kernels import io

    meta = read_meta(path)
    if kind == "frame":
        return io.read_frame(path, schema=tuple(meta.value_types), rows=meta.num_rows)
    return io.read_matrix(path, vt=meta.value_type, rows=meta.num_rows, cols=meta.num_cols)


def remove_quietly(path: str) -> None:
    for p in (path, path + ".meta"):
        try:
            os.remove(p)
        except OSError:
            pass
