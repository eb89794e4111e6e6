"""File I/O kernels: `readMatrix`, `readFrame` and `write`/`writeMatrix`/`writeFrame` (DAPHNE's Read.h/Write.h).

The format follows the file extension: matrices read `.csv`, `.mtx` and `.dbdf` and write `.csv`, `.dbdf` and
`.mtx` (DAPHNE's Write kernel knows no `.mtx`; daphnec writes it too); frames read and write `.csv` only. The
compiler bakes the type it inferred from the `.meta` file into the read kernel; the `.meta` is read again at run
time, as DAPHNE does, and must still agree. A dense result is a numpy matrix, a `rep[sparse]` one a CSR matrix
(a CSV file read as CSR holds `row,col` positions, DAPHNE's ReadCsvFile<CSRMatrix>). Writes are atomic: data and
`.meta` go to temporary files that are renamed into place, so a failed run never leaves half a file.
"""

from __future__ import annotations

import os
import sys

import numpy as np

from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.frame import Frame
from daphnec.runtime.io import atomic, csv, dbdf, mtx, parquet
from daphnec.runtime.io.meta import FileMeta, frame_meta_json, matrix_meta_json, meta_path, read_meta
from daphnec.runtime.values import cast_matrix, is_csr, to_csr, vt_of

READ_MATRIX_EXTS = (".csv", ".mtx", ".dbdf", ".parquet")
WRITE_MATRIX_EXTS = (".csv", ".dbdf", ".mtx", ".parquet")
FRAME_EXTS = (".csv", ".parquet")


def extension(filename: str) -> str:
    """The extension that selects the format: from the last `.` of the name (DAPHNE's extValue)."""
    return os.path.splitext(filename)[1]


def _unsupported(who: str, filename: str, exts: tuple[str, ...]) -> DaphneRuntimeError:
    ext = extension(filename)
    shown = f"'{ext}'" if ext else "(none)"
    return DaphneRuntimeError(
        f"{who}: file extension {shown} of '{filename}' is not supported (supported: {', '.join(exts)})"
    )


def _check_readable(who: str, filename: str) -> None:
    if not os.path.exists(filename):
        raise DaphneRuntimeError(f"{who}: cannot open file '{filename}': no such file")
    if not os.path.isfile(filename) or not os.access(filename, os.R_OK):
        raise DaphneRuntimeError(f"{who}: cannot open file '{filename}' for reading")


def _meta(who: str, filename: str) -> FileMeta:
    if extension(filename) == parquet.EXTENSION and not os.path.exists(meta_path(filename)):
        _check_readable(who, filename)
        return parquet.file_meta(filename, who, as_matrix=who == "readMatrix")  # the file's own schema
    meta = read_meta(filename)
    if meta.is_hdfs:
        raise DaphneRuntimeError(
            f"{who}: '{filename}' is marked as an HDFS file in its .meta; daphnec cannot read from HDFS"
        )
    return meta


def _check_same(who: str, filename: str, what: str, compiled: object, now: object) -> None:
    if compiled != now:
        raise DaphneRuntimeError(
            f"{who}: the {what} in '{filename}.meta' changed since the script was compiled ({compiled} then, {now} now)"
        )


# --- reading -------------------------------------------------------------------------------------------------------


def read_matrix(filename: str, *, vt: str, sparse: bool = False, rows: int = -1, cols: int = -1, convert: bool = False):
    """`readMatrix(filename)`: `vt`, `sparse` and the shape (-1 = unknown) are what the compiler inferred. With
    `convert` the name was known only at run time and `vt` is the type the script casts the data to: the data is
    read with the value type its `.meta` gives now and converted."""
    try:
        if not convert:
            return _read_matrix(filename, vt, sparse, rows, cols)
        data = _read_matrix(filename, _meta("readMatrix", filename).value_type, sparse, rows, cols)
        return cast_matrix(data, vt)
    except OSError as e:  # e.g. the file vanished or became unreadable after the checks
        raise DaphneRuntimeError(f"readMatrix: cannot read '{filename}': {e.strerror or e}") from None


def _read_matrix(filename: str, vt: str, sparse: bool, rows: int, cols: int):
    who = "readMatrix"
    ext = extension(filename)
    if ext not in READ_MATRIX_EXTS:
        raise _unsupported(who, filename, READ_MATRIX_EXTS)
    meta = _meta(who, filename)
    _check_same(who, filename, "value type", vt, meta.value_type)
    for what, compiled, now in (("numRows", rows, meta.num_rows), ("numCols", cols, meta.num_cols)):
        if compiled >= 0:
            _check_same(who, filename, what, compiled, now)
    _check_readable(who, filename)
    r, c = meta.num_rows, meta.num_cols
    if ext == ".mtx":
        return mtx.read(filename, r, c, vt, sparse, who)
    if ext == parquet.EXTENSION:
        data = parquet.read_matrix(filename, r, c, vt, who)
        if sparse:
            from daphnec.runtime.io.sparse import dense_to_csr

            return dense_to_csr(data)
        return data
    if ext == ".dbdf":
        if vt == "str":
            raise DaphneRuntimeError(f"{who}: reading string-valued DAPHNE binary files is not supported")
        return dbdf.read(filename, r, c, vt, sparse)
    if sparse:
        if meta.num_non_zeros < 0:
            raise DaphneRuntimeError(
                f"{who}: reading '{filename}' as a sparse (CSR) matrix needs \"numNonZeros\" in its .meta"
            )
        if not csv.dense_shape(filename, r, c, meta.num_non_zeros):
            return csv.read_coo(filename, r, c, meta.num_non_zeros, vt, who)
        _warn(f"{who}: '{filename}' is a dense CSV ({r} lines of {c} values), not DAPHNE's sparse CSV of "
              f"{meta.num_non_zeros} 'row,col' lines that its .meta's \"numNonZeros\" asks for; "
              "reading its values")  # fmt: skip
        return to_csr(csv.read_matrix(filename, r, c, vt, who))
    return csv.read_matrix(filename, r, c, vt, who)


def _warn(message: str) -> None:
    """A warning on stderr, after whatever the script printed so far."""
    sys.stdout.flush()
    sys.stderr.write(f"daphnec: warning: {message}\n")
    sys.stderr.flush()


def read_frame(
    filename: str, *, schema: tuple[str, ...], labels: tuple[str, ...] | None = None, rows: int = -1
) -> Frame:
    """`readFrame(filename)`: a CSV file with the column types and labels of its `.meta` (`labels` None: not known
    while compiling, so they are taken from the `.meta` now)."""
    try:
        return _read_frame(filename, schema, labels, rows)
    except OSError as e:
        raise DaphneRuntimeError(f"readFrame: cannot read '{filename}': {e.strerror or e}") from None


def _read_frame(filename: str, schema: tuple[str, ...], labels: tuple[str, ...] | None, rows: int) -> Frame:
    who = "readFrame"
    if extension(filename) not in FRAME_EXTS:
        raise _unsupported(who, filename, FRAME_EXTS)
    meta = _meta(who, filename)
    _check_same(who, filename, "schema", list(schema), list(meta.value_types))
    if rows >= 0:
        _check_same(who, filename, "numRows", rows, meta.num_rows)
    _check_readable(who, filename)
    if extension(filename) == parquet.EXTENSION:
        columns = parquet.read_columns(filename, schema, meta.num_rows, who)
    else:
        columns = csv.read_columns(filename, schema, meta.num_rows, who, encode_str=True)
    return Frame(columns, list(labels) if labels is not None else frame_labels(meta))


def frame_labels(meta: FileMeta) -> list[str]:
    """Column labels of a frame read from a file: the schema's, or DAPHNE's defaults `col_0`, `col_1`, ..."""
    return list(meta.labels) if meta.labels is not None else [f"col_{i}" for i in range(meta.num_cols)]


# --- writing -------------------------------------------------------------------------------------------------------


def write(arg, filename: str) -> None:
    """`write(arg, filename)` = `writeMatrix` = `writeFrame`: the data file plus its `.meta`, both atomically."""
    if isinstance(arg, Frame):
        frame_writer = {".csv": csv.write_frame, parquet.EXTENSION: parquet.write_frame}.get(extension(filename))
        if frame_writer is None:
            raise _unsupported("write", filename, FRAME_EXTS) from None
        meta = frame_meta_json(arg.nrow, arg.labels, [vt_of(c) for c in arg.columns])
        atomic.write_files([(filename, lambda f: frame_writer(arg, f)), (filename + ".meta", _text(meta))], meta)
        if frame_writer is csv.write_frame and any(csv.loses_digits(c) for c in arg.columns):
            _note_lost_digits(filename)
        return
    if not (isinstance(arg, np.ndarray) or is_csr(arg)):
        raise DaphneRuntimeError(f"write: expects a matrix or a frame, got a {type(arg).__name__}")
    writer = {".csv": csv.write_matrix, ".dbdf": dbdf.write, ".mtx": mtx.write, parquet.EXTENSION: parquet.write_matrix}
    writer = writer.get(extension(filename))
    if writer is None:
        raise _unsupported("write", filename, WRITE_MATRIX_EXTS)
    meta = matrix_meta_json(arg.shape[0], arg.shape[1], vt_of(arg))
    atomic.write_files([(filename, lambda f: writer(arg, f)), (filename + ".meta", _text(meta))], meta)
    if writer is csv.write_matrix and csv.loses_digits(arg):
        _note_lost_digits(filename)


_NOTED_LOST_DIGITS: list[bool] = []


def _note_lost_digits(filename: str) -> None:
    """Once per run: CSV keeps 6 decimals (DAPHNE's format, kept byte-identical), which silently loses precision;
    say so, and where exact values go."""
    if _NOTED_LOST_DIGITS:
        return
    _NOTED_LOST_DIGITS.append(True)
    sys.stdout.flush()
    sys.stderr.write(
        f"daphnec: note: '{filename}' keeps 6 decimals per value (DAPHNE's CSV format), so some values lost digits; "
        "write to a .parquet or .dbdf file for exact values\n"
    )
    sys.stderr.flush()


def _text(s: str) -> atomic.Writer:
    return lambda f: f.write(s.encode("utf-8"))
