"""CSV files: no header, `,` separator, one row per line (DAPHNE's ReadCsvFile.h / WriteCsv.h).

Reading has two paths with the same results:

- the fast path hands the file to pyarrow's multi-threaded CSV reader with the column types fixed from the `.meta`
  (no type inference, no null values) and copies the typed columns into the result;
- the exact path (Python's `csv` module plus strict per-cell parsing) runs when pyarrow rejects the file. It accepts
  what DAPHNE accepts that pyarrow does not (`+5`, values outside a narrow integer type, which wrap like DAPHNE's
  casts, trailing lines beyond `numRows`), and otherwise names the line and column of the first problem.

Cells: numbers may be surrounded by spaces; floats accept `nan`, `-nan`, `inf`, `infinity` (any case) and
exponents; strings may be quoted with `"` (a doubled `""` inside is one quote) and then contain `,`, quotes and line
breaks. Unlike DAPHNE, which silently reads an unparsable number as NaN (floats) or 0 (integers, via atoi), a cell
that is not a number is an error. An empty line is a row with one empty cell, as in DAPHNE.

Writing follows WriteCsv.h byte for byte: floats with `%f` (`1.100000`, `nan`, `-nan`, `inf`), integers with `%d`
and `%ld`, and strings quoted only when they contain `,`, `"`, `\\n` or `\\r` (quotes doubled). For a dense matrix
DAPHNE passes every integer type except int64 to `%d`, so ui32/ui64 values print as their low 32 bits read as a
signed int (5000000000 is written as 705032704); this module does the same. Frame columns use the exact formats
(PRIu64, ...), so frames write large unsigned values correctly.
"""

from __future__ import annotations

import csv as pycsv
import mmap
import os
import re
import sys
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from typing import BinaryIO

import numpy as np

from daphnec.runtime.columns import DictColumn
from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.io.arrow_numpy import array_to_numpy, chunked_to_numpy
from daphnec.runtime.memory import check_alloc, prefault_for_input
from daphnec.runtime.values import FLOAT_VTS, dtype_of, object_matrix, parse_int, to_f32

_PARALLEL_COPY_CELLS = 1 << 20
"""Above this many cells the typed columns are copied into the result matrix by two threads (numpy copies release
the GIL, so this halves the copy time on a multi-core machine)."""

_INT_CELL = re.compile(r"\s*([+-]?[0-9]+)\s*")
_FLOAT_CELL = re.compile(r"\s*[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf(?:inity)?|nan)\s*", re.I)


# --- reading: the fast path ---------------------------------------------------------------------------------------


def _arrow_type(vt: str):
    import pyarrow as pa

    if vt in FLOAT_VTS:
        return pa.float64() if vt == "f64" else pa.float32()
    if vt == "str":
        return pa.string()
    return pa.uint64() if vt == "ui64" else pa.int64()  # narrower integers wrap like DAPHNE's casts


def _pyarrow_read(path: str, vts: Sequence[str], skip_empty_lines: bool):
    import pyarrow as pa
    import pyarrow.csv as pacsv

    types = {f"f{j}": _arrow_type(vt) for j, vt in enumerate(vts)}
    try:
        return pacsv.read_csv(
            path,
            read_options=pacsv.ReadOptions(autogenerate_column_names=True),
            parse_options=pacsv.ParseOptions(ignore_empty_lines=skip_empty_lines, newlines_in_values="str" in vts),
            convert_options=pacsv.ConvertOptions(
                column_types=types, null_values=[], strings_can_be_null=False, quoted_strings_can_be_null=False
            ),
        )
    except (pa.ArrowException, OSError, ValueError):
        return None


def _blank_lines_only_at_end(path: str) -> bool:
    """True if the file's only empty lines trail its last row (then skipping empty lines changes nothing)."""
    try:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            end = len(m)
            while end > 0 and m[end - 1] in b"\r\n":
                end -= 1
            return m.find(b"\n\n", 0, end) < 0 and m.find(b"\n\r\n", 0, end) < 0 and m[:1] not in (b"\n", b"\r")
    except (OSError, ValueError):  # ValueError: an empty file cannot be mapped
        return False


def _arrow_table(path: str, vts: Sequence[str], nrows: int, who: str):
    """The file as a pyarrow table with `len(vts)` typed columns and at least `nrows` rows, or None if pyarrow
    rejects it (the exact path then finds out why). Empty lines are rows (DAPHNE reads one line per row), except
    that blank lines after the last row, which pyarrow would reject, are skipped."""
    table = _pyarrow_read(path, vts, skip_empty_lines=False)
    ok = table is not None and table.num_columns == len(vts) and table.num_rows >= nrows
    if not ok and _blank_lines_only_at_end(path):
        table = _pyarrow_read(path, vts, skip_empty_lines=True)
        ok = table is not None and table.num_columns == len(vts) and table.num_rows >= nrows
    if not ok:
        return None
    if table.num_rows > nrows:
        if _blank_lines_only_at_end(path):  # trailing blank lines are no rows: count without them (rare)
            counted = _pyarrow_read(path, vts, skip_empty_lines=True)
            extra = counted is None or counted.num_rows > nrows
        else:
            extra = True
        if extra:
            _warn_extra_rows(who, path, nrows)
        return table.slice(0, nrows)
    return table


_WARNED_EXTRA_ROWS: set[str] = set()


def _warn_extra_rows(who: str, path: str, nrows: int) -> None:
    """A CSV file longer than its `.meta` says is read as DAPHNE reads it (its first `numRows` rows), but silently
    cutting data is a trap (a `.meta` left from an older file): say so, once per file and run."""
    if path in _WARNED_EXTRA_ROWS:
        return
    _WARNED_EXTRA_ROWS.add(path)
    sys.stdout.flush()  # after whatever the script printed so far
    sys.stderr.write(
        f"daphnec: warning: {who}: '{path}' has more rows than its .meta says (\"numRows\": {nrows}); only the "
        f"first {nrows} are read\n"
    )
    sys.stderr.flush()


def _cast_column(col: np.ndarray, vt: str) -> np.ndarray:
    """A parsed column (float64/float32/int64/uint64/object) as value type `vt`."""
    if vt == "bool":
        return col != 0
    dt = dtype_of(vt)
    if col.dtype == dt:
        return col
    if vt == "str":
        return col.astype(object)
    return col.astype(dt)  # int64 -> int8/uint8/int32/uint32 wraps (two's complement), like a C++ cast


def _chunk_to_numpy(chunk, vt: str) -> np.ndarray:
    return _cast_column(array_to_numpy(chunk), vt)


@cache
def _copy_pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(2, thread_name_prefix="daphne-csv")


def _table_to_matrix(table, vt: str) -> np.ndarray:
    """Row-major matrix from the typed columns, a record batch at a time (two threads for large matrices)."""
    rows, cols = table.num_rows, table.num_columns
    out = np.empty((rows, cols), dtype=dtype_of(vt))
    batches = table.to_batches()
    starts = np.cumsum([0] + [b.num_rows for b in batches]).tolist()

    def fill(part: int, parts: int) -> None:
        for i in range(part, len(batches), parts):
            b, r = batches[i], starts[i]
            np.stack([_chunk_to_numpy(b.column(j), vt) for j in range(cols)], axis=1, out=out[r : r + b.num_rows])

    if rows * cols >= _PARALLEL_COPY_CELLS and len(batches) > 1 and vt != "str":
        list(_copy_pool().map(fill, range(2), [2, 2]))
    else:
        fill(0, 1)
    return out


# --- reading: the exact path ---------------------------------------------------------------------------------------


def _bad_cell(who: str, path: str, line: int, col: int, text: str, vt: str) -> DaphneRuntimeError:
    """The error for the cell at `line` and 0-based column `col` (both shown 1-based, as editors count), with a
    hint for the two things pandas' default `to_csv` writes that DAPHNE's CSV has not: a header row and NaN as an
    empty field."""
    shown = text if len(text) <= 40 else text[:37] + "..."
    hint = ""
    if vt != "str" and not text.strip():
        hint = (
            " (an empty field: write NaN as `nan`, e.g. pandas' `to_csv(..., na_rep='nan')`)"
            if vt in FLOAT_VTS
            else " (an empty field: integer and bool columns have no missing values)"
        )
    elif vt != "str" and line == 1 and _NUMBER_LIKE.search(text) is None:
        hint = " (a header row? DAPHNE's CSV has none: the column names go into the .meta; pandas: `header=False`)"
    return DaphneRuntimeError(f"{who}: '{path}' line {line}, column {col + 1}: cannot read '{shown}' as {vt}{hint}")


_NUMBER_LIKE = re.compile(r"^\s*[-+]?(\d|\.\d|nan|inf)", re.IGNORECASE)
"""A cell that starts like a number (a header cell does not)."""


def _parse_cell(text: str, vt: str) -> object:
    """One cell as a Python value of `vt`; ValueError if it is not a valid cell of that type."""
    if vt == "str":
        return text
    if vt in FLOAT_VTS:
        if _FLOAT_CELL.fullmatch(text) is None:
            raise ValueError(text)
        v = float(text.strip())  # correctly rounded, like strtod; overflow gives inf like strtod
        return to_f32(v) if vt == "f32" else v
    m = _INT_CELL.fullmatch(text)
    if m is None:
        raise ValueError(text)
    if vt == "bool":
        return int(m.group(1)) != 0
    try:
        return parse_int(m.group(1), vt)  # stoll/stoull plus a wrapping cast to the narrower type
    except DaphneRuntimeError:
        raise ValueError(text) from None


def _exact_columns(path: str, vts: Sequence[str], nrows: int, who: str) -> list[list]:
    """Parse the first `nrows` records with the `csv` module, naming the line of the first problem."""
    ncols = len(vts)
    cols: list[list] = [[] for _ in vts]
    with open(path, newline="", encoding="utf-8-sig", errors="replace") as f:
        reader = pycsv.reader(f)  # not strict: `"a"b` is `ab`, as pyarrow reads it
        count, start = 0, 1
        while count < nrows:  # lines after the first `nrows` records are never looked at (as in DAPHNE)
            try:
                rec = next(reader, None)
            except pycsv.Error as e:
                raise DaphneRuntimeError(f"{who}: '{path}' line {reader.line_num}: malformed CSV: {e}") from None
            if rec is None:
                break
            rec = rec or [""]  # an empty line is one empty cell
            if len(rec) != ncols:
                raise DaphneRuntimeError(
                    f"{who}: '{path}' line {start}: expected {ncols} column(s) (\"numCols\" in the .meta), "
                    f"found {len(rec)}"
                )
            for j, (text, vt) in enumerate(zip(rec, vts)):
                try:
                    cols[j].append(_parse_cell(text, vt))
                except ValueError:
                    raise _bad_cell(who, path, start, j, text, vt) from None
            count += 1
            start = reader.line_num + 1
        if count == nrows and nrows > 0 and _more_records(reader):
            _warn_extra_rows(who, path, nrows)
    if count < nrows:
        raise DaphneRuntimeError(f"{who}: '{path}' has {count} row(s), but its .meta says \"numRows\": {nrows}")
    return cols


def _more_records(reader: Iterator[list[str]]) -> bool:
    """Whether a non-blank record follows (the rows a `.meta` does not count)."""
    try:
        return any(any(cell.strip() for cell in rec) for rec in reader)
    except pycsv.Error:
        return True


def _exact_column_array(values: list, vt: str) -> np.ndarray:
    if vt == "str":
        return object_matrix(values, len(values), 1)[:, 0]
    if vt == "bool":
        return np.array(values, dtype=bool)
    return np.array(values, dtype=dtype_of(vt))


# --- reading: public entry points ----------------------------------------------------------------------------------


def read_columns(
    path: str, vts: Sequence[str], nrows: int, who: str, encode_str: bool = False
) -> list[np.ndarray | DictColumn]:
    """The first `nrows` rows of a CSV file as one 1-D array per column, typed by `vts`; with `encode_str`, str
    columns dictionary-encoded (runtime/columns.py: a frame's strings are hashed once, when read)."""
    if nrows == 0 or not vts:
        return [_exact_column_array([], vt) for vt in vts]
    table = _arrow_table(path, vts, nrows, who)
    if table is not None:
        return [
            DictColumn.from_arrow(table.column(j)) if vt == "str" and encode_str
            else _cast_column(chunked_to_numpy(table.column(j)), vt)
            for j, vt in enumerate(vts)
        ]  # fmt: skip
    exact = [_exact_column_array(c, vt) for c, vt in zip(_exact_columns(path, vts, nrows, who), vts)]
    return [DictColumn.encode(c) if vt == "str" and encode_str else c for c, vt in zip(exact, vts)]


def _rows_the_file_can_hold(path: str, rows: int, cols: int) -> int:
    """`rows`, or fewer when the file is too short for them: every cell of a CSV file takes at least two bytes (a
    character and a separator), so a `.meta` file that claims more rows than the data has pre-faults (runtime/memory.py)
    no more than the file's size allows before the read reports the short file."""
    try:
        size = os.path.getsize(path)
    except OSError:
        return rows
    return min(rows, (size + 1) // (2 * cols))


def read_matrix(path: str, rows: int, cols: int, vt: str, who: str = "readMatrix") -> np.ndarray:
    """A dense rows x cols matrix of value type `vt`."""
    if rows == 0 or cols == 0:
        return np.empty((rows, cols), dtype=dtype_of(vt))
    check_alloc(who, rows, cols, vt)
    if vt != "str":
        # while pyarrow parses
        prefault_for_input(_rows_the_file_can_hold(path, rows, cols), cols, dtype_of(vt).itemsize)
    vts = [vt] * cols
    table = _arrow_table(path, vts, rows, who)
    if table is not None:
        return _table_to_matrix(table, vt)
    columns = [_exact_column_array(c, vt) for c in _exact_columns(path, vts, rows, who)]
    out = np.empty((rows, cols), dtype=dtype_of(vt))
    for j, c in enumerate(columns):
        out[:, j] = c
    return out


def dense_shape(path: str, rows: int, cols: int, nnz: int) -> bool:
    """Whether the file is a dense rows x cols CSV rather than DAPHNE's sparse one (`nnz` lines of `row,col`): its
    first line has `cols` cells where a position has 2, or (cols == 2) it has `rows` lines where positions would
    have `nnz`. Quotes are not looked at: a sparse CSV holds numbers only."""
    with open(path, "rb") as f:
        first = f.readline()
        if not first:
            return False
        cells = first.count(b",") + 1
        if cells != 2 or cols != 2:
            return cells == cols and cells != 2
        lines, last = 1, b"\n"
        for chunk in iter(lambda: f.read(1 << 20), b""):
            lines += chunk.count(b"\n")
            last = chunk[-1:]
    lines += last != b"\n"  # a last line without a line end
    return lines == rows != nnz


def read_coo(path: str, rows: int, cols: int, nnz: int, vt: str, who: str = "readMatrix"):
    """DAPHNE's sparse CSV: `nnz` lines of 0-based `row,col` positions (ReadCsvFile<CSRMatrix>), every value 1."""
    from daphnec.runtime.io.sparse import coo_to_csr

    r, c = read_columns(path, ["ui64", "ui64"], nnz, who)
    bad = np.flatnonzero((r >= rows) | (c >= cols))
    if bad.size:
        i = int(bad[0])
        raise DaphneRuntimeError(
            f"{who}: '{path}': position [{r[i]}, {c[i]}] in row {i} is not part of a {rows}x{cols} matrix"
        )
    return coo_to_csr(np.ones(nnz, dtype=dtype_of(vt)), r.astype(np.int64), c.astype(np.int64), (rows, cols))


# --- writing -------------------------------------------------------------------------------------------------------


def quote_if_needed(s: str) -> str:
    """DAPHNE's quoteStrCsvIf: quote a string that contains `,`, `"`, `\\n` or `\\r`, doubling its quotes."""
    if "," in s or '"' in s or "\n" in s or "\r" in s:
        return '"' + s.replace('"', '""') + '"'
    return s


def loses_digits(values: object) -> bool:
    """Whether writing these values (an array, or a CSR matrix's stored values) with `%f` drops digits: a finite
    value with more than the 6 decimals DAPHNE's CSV keeps (reading the file back gives another number)."""
    a = getattr(values, "data", values) if not isinstance(values, np.ndarray) else values
    if not isinstance(a, np.ndarray) or a.dtype.kind != "f" or a.size == 0:
        return False
    finite = a[np.isfinite(a)]
    return bool(finite.size) and bool(np.any(np.round(finite, 6) != finite))


def _float_cells(a: np.ndarray) -> tuple[str, list]:
    vals = a.tolist()
    neg_nan = np.isnan(a) & np.signbit(a)
    if not neg_nan.any():
        return "%f", vals
    strs = ["%f" % v for v in vals]  # noqa: UP031 - printf %f
    for i in np.flatnonzero(neg_nan).tolist():
        strs[i] = "-nan"  # glibc prints a sign-bit NaN as -nan; Python never does
    return "%s", strs


def _cells(a: np.ndarray, exact_unsigned: bool) -> tuple[str, list]:
    """A %-format and the cell values (row-major) of a 1-D or 2-D block, formatted as WriteCsv.h does."""
    flat = a.ravel()
    kind = flat.dtype.kind
    if kind == "f":
        return _float_cells(flat)
    if kind == "b":
        return "%d", flat.view(np.uint8).tolist()
    if kind == "u" and flat.dtype.itemsize >= 4 and not exact_unsigned:
        return "%d", flat.astype(np.uint32).view(np.int32).tolist()  # printf("%d", uint32/uint64 value)
    if kind in "iu":
        return "%d", flat.tolist()
    if kind == "O":
        return "%s", [quote_if_needed(v if type(v) is str else str(v)) for v in flat.tolist()]
    raise DaphneRuntimeError(f"write: cannot write values of numpy dtype {a.dtype} to CSV")


def _rows_text(fmts: Sequence[str], values: list, nrows: int) -> Iterator[str]:
    """Lines of comma-separated cells, formatted a block of rows per `%` operation (much faster than per cell)."""
    ncols = len(fmts)
    line = ",".join(fmts) + "\n"
    k = max(1, 8192 // ncols)
    block = line * k
    for start in range(0, nrows, k):
        n = min(k, nrows - start)
        yield (block if n == k else line * n) % tuple(values[start * ncols : (start + n) * ncols])


def _dense_blocks(m) -> Iterator[np.ndarray]:
    """The matrix a block of rows at a time (a CSR matrix is densified one block at a time)."""
    from daphnec.runtime.values import as_dense, is_csr

    rows, cols = m.shape
    step = max(1, (1 << 20) // max(cols, 1))
    for start in range(0, rows, step):
        block = m[start : start + step]
        yield as_dense(block) if is_csr(m) else block


def write_matrix(m, f: BinaryIO) -> None:
    """A dense or CSR matrix as CSV (CSR rows are written densely, zeros included, like WriteCsv<Matrix>)."""
    rows, cols = m.shape
    if cols == 0:
        return  # DAPHNE's loop writes neither cells nor line breaks
    for block in _dense_blocks(m):
        fmt, vals = _cells(block, exact_unsigned=False)
        for text in _rows_text([fmt] * cols, vals, block.shape[0]):
            f.write(text.encode("utf-8"))


def write_frame(fr, f: BinaryIO) -> None:
    """A frame as CSV: every column with its own exact printf format."""
    rows, cols = fr.nrow, fr.ncol
    if cols == 0:
        return
    step = max(1, (1 << 20) // cols)
    for start in range(0, rows, step):
        parts = [_cells(c[start : start + step], exact_unsigned=True) for c in fr.columns]
        fmts = [p[0] for p in parts]
        n = min(step, rows - start)
        values = [v for row in zip(*(p[1] for p in parts), strict=True) for v in row]
        for text in _rows_text(fmts, values, n):
            f.write(text.encode("utf-8"))
