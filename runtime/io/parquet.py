"""Apache Parquet files through pyarrow: `readMatrix`/`readFrame` of `.parquet` and `write` to `.parquet`.

DAPHNE reads matrices from `.parquet` (doc/DaphneDSL/Builtins.md, Input/output) and, as for every format, takes
type and shape from `<file>.meta` (doc/FileMetaDataFormat.md). A Parquet file also carries its own schema, so
daphnec reads one without a `.meta` too: the row count, one column per Parquet column, each column's value type
from its Arrow type (a matrix takes the most general of them), the labels from the column names. With a `.meta`,
the file must agree with it. daphnec also reads frames from and writes matrices and frames to `.parquet` (DAPHNE
does neither): a matrix is stored as one column per matrix column, named like a frame's default labels (`col_0`,
`col_1`, ...), a frame with its labels; writing also writes the `.meta`.
"""

from __future__ import annotations

from typing import BinaryIO

import numpy as np

from daphnec.dialects.value_types import DTYPES, most_general
from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.io.arrow_numpy import chunked_to_numpy
from daphnec.runtime.io.meta import FileMeta, MetaDataError
from daphnec.runtime.memory import prefault_for_input

EXTENSION = ".parquet"

_ARROW_VT = {
    "int8": "si8",
    "int32": "si32",
    "int64": "si64",
    "uint8": "ui8",
    "uint32": "ui32",
    "uint64": "ui64",
    "float": "f32",
    "double": "f64",
    "bool": "bool",
    "string": "str",
    "large_string": "str",
}
"""Arrow type names of the Parquet columns daphnec reads, and their value types. Narrower or other integer widths
(int16, uint16) have no DaphneDSL value type."""


def _pq():  # noqa: ANN202 - pyarrow is imported only by scripts that use Parquet files
    import pyarrow.parquet as pq

    return pq


def file_meta(filename: str, who: str, as_matrix: bool = False) -> FileMeta:
    """The meta data the Parquet file's own schema gives (used when it has no `.meta`); `as_matrix`: every
    column gets the most general of the column types (a matrix has one value type)."""
    try:
        schema = _pq().read_schema(filename)
        rows = _pq().ParquetFile(filename).metadata.num_rows
    except (OSError, ValueError) as e:
        raise MetaDataError(f"{who}: cannot read the Parquet schema of '{filename}': {e}") from None
    vts = []
    for field in schema:
        vt = _ARROW_VT.get(str(field.type))
        if vt is None:
            raise MetaDataError(
                f"{who}: column '{field.name}' of '{filename}' has the Parquet type {field.type}, which has no "
                f"DaphneDSL value type (supported: {', '.join(sorted(set(_ARROW_VT)))})"
            )
        vts.append(vt)
    if as_matrix and vts:
        return FileMeta(rows, len(vts), (most_general(*vts),) * len(vts))
    return FileMeta(rows, len(vts), tuple(vts), tuple(schema.names))


def _table(filename: str, rows: int, cols: int, who: str, prefault_itemsize: int = 0):  # noqa: ANN202 - a pyarrow Table
    """The file's table, checked against the meta data. `prefault_itemsize`: heap memory for the matrix is
    pre-faulted while pyarrow decodes (runtime/memory.py), for no more rows than the footer states: a compressed
    file's size bounds nothing, and a `.meta` file may claim more rows than the data has."""
    try:
        source = _pq().ParquetFile(filename)
        if prefault_itemsize:
            prefault_for_input(min(rows, source.metadata.num_rows), cols, prefault_itemsize)
        table = source.read()
    except (OSError, ValueError) as e:
        raise DaphneRuntimeError(f"{who}: cannot read the Parquet file '{filename}': {e}") from None
    if (table.num_rows, table.num_columns) != (rows, cols):
        raise DaphneRuntimeError(
            f"{who}: '{filename}' holds {table.num_rows}x{table.num_columns} values, but its meta data says "
            f"{rows}x{cols}"
        )
    if any(c.null_count for c in table.columns):
        raise DaphneRuntimeError(f"{who}: '{filename}' has missing (null) values, which DaphneDSL cannot hold")
    return table


def _column(chunked, vt: str) -> np.ndarray:  # noqa: ANN001 - a pyarrow ChunkedArray
    if vt == "str":
        values = np.empty(len(chunked), dtype=object)
        values[:] = chunked.to_pylist()
        return values
    return chunked_to_numpy(chunked).astype(DTYPES[vt], copy=False)


def read_matrix(filename: str, rows: int, cols: int, vt: str, who: str = "readMatrix") -> np.ndarray:
    """A dense `rows x cols` matrix of value type `vt` from the Parquet file's columns."""
    table = _table(filename, rows, cols, who, 0 if vt == "str" else np.dtype(DTYPES[vt]).itemsize)
    out = np.empty((rows, cols), dtype=DTYPES[vt])
    for j, chunked in enumerate(table.columns):
        out[:, j] = _column(chunked, vt)
    return out


def read_columns(filename: str, schema: tuple[str, ...], rows: int, who: str = "readFrame") -> list[np.ndarray]:
    """The frame columns (1-D arrays) of the Parquet file, with the value types of `schema`."""
    table = _table(filename, rows, len(schema), who)
    return [_column(c, vt) for c, vt in zip(table.columns, schema)]


def _write(f: BinaryIO, names: list[str], columns: list[np.ndarray]) -> None:
    import pyarrow as pa

    arrays = [pa.array(c.ravel().tolist() if c.dtype == object else c.ravel()) for c in columns]
    _pq().write_table(pa.table(arrays, names=names), f)


def write_matrix(arg, f: BinaryIO) -> None:  # noqa: ANN001 - a dense or CSR matrix
    """A matrix as one Parquet column per matrix column, named `col_0`, `col_1`, ... (CSR is stored densely)."""
    dense = arg.toarray() if hasattr(arg, "toarray") else arg
    _write(f, [f"col_{j}" for j in range(dense.shape[1])], [dense[:, j] for j in range(dense.shape[1])])


def write_frame(fr, f: BinaryIO) -> None:  # noqa: ANN001 - a runtime Frame
    """A frame as one Parquet column per frame column, named by its labels."""
    _write(f, list(fr.labels), list(fr.columns))
