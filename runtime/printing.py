"""DAPHNE-identical text output for scalars, dense matrices and frames (DaphneDSL `print`).

C++ `os << x` with default stream state prints floats like C `%g` (precision 6); glibc prints a NaN whose sign bit is
set as `-nan` (x86 produces such NaNs for 0/0, inf-inf, ...), which Python's `%g` never does, so it is handled here.
bool prints `1`/`0`, si8/ui8 print as numbers, strings print raw. Matrices print a `DenseMatrix(RxC, cpptype)` header
and one line per row with single spaces (a CSR matrix prints `CSRMatrix(RxC, cpptype)`, then its rows densely);
frames print `Frame(RxC, [label:cpptype, ...])` then their rows.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.frame import Frame
from daphnec.runtime.kernels.lists import list_kind
from daphnec.runtime.values import CPP_NAMES, as_dense, is_csr, vt_of

_copysign = math.copysign


def format_float(x: float) -> str:
    """C `%g` with glibc's `-nan` for sign-bit NaNs."""
    if x != x:
        return "-nan" if _copysign(1.0, x) < 0 else "nan"
    return "%g" % x  # noqa: UP031 - C %g semantics (str.format differs)


def format_scalar(x) -> str:
    """Text of a scalar exactly as DAPHNE's `print` writes it (without the newline)."""
    t = type(x)
    if t is int:
        return int.__repr__(x)
    if t is float:
        if x != x:
            return "-nan" if _copysign(1.0, x) < 0 else "nan"
        return "%g" % x  # noqa: UP031
    if t is bool:
        return "1" if x else "0"
    if t is str:
        return x
    if isinstance(x, np.generic):
        return format_scalar(x.item())
    raise DaphneRuntimeError(f"cannot print a scalar of Python type {t.__name__}")


def _cells(a: np.ndarray) -> tuple[str, list]:
    """A %-format for one element of `a` plus all elements as Python objects in row-major order.

    Formatting whole rows with one `%` operation is ~3x faster than formatting each element separately.
    """
    kind = a.dtype.kind
    flat = a.ravel()
    if kind == "f":
        vals = flat.tolist()
        nan_idx = np.flatnonzero(np.isnan(flat) & np.signbit(flat))
        if nan_idx.size:  # Python's %g never prints "-nan": switch to preformatted strings
            strs = ["%g" % v for v in vals]  # noqa: UP031
            for i in nan_idx.tolist():
                strs[i] = "-nan"
            return "%s", strs
        return "%g", vals
    if kind in "iu":
        return "%d", flat.tolist()
    if kind == "b":
        return "%d", flat.view(np.uint8).tolist()
    if kind == "O":
        return "%s", [v if type(v) is str else format_scalar(v) for v in flat.tolist()]
    if kind in "US":
        return "%s", [str(v) for v in flat.tolist()]
    raise DaphneRuntimeError(f"cannot print a matrix of dtype {a.dtype}")


def _format_rows(cell_fmts: list[str], values: list, rows: int) -> str:
    """Rows of space-separated cells, each ending with a newline; `values` is row-major."""
    cols = len(cell_fmts)
    line = " ".join(cell_fmts) + "\n"
    k = max(1, 4096 // cols)  # rows per % operation
    block = line * k
    out = []
    for start in range(0, rows, k):
        n = min(k, rows - start)
        out.append((block if n == k else line * n) % tuple(values[start * cols : (start + n) * cols]))
    return "".join(out)


def matrix_header(m) -> str:
    """`DenseMatrix(RxC, cpptype)` or `CSRMatrix(RxC, cpptype)`: the print header and `typeOf` of a matrix."""
    kind = "CSRMatrix" if is_csr(m) else "DenseMatrix"
    return f"{kind}({m.shape[0]}x{m.shape[1]}, {CPP_NAMES[vt_of(m)]})"


def format_matrix(m) -> str:
    """Header plus one line per row (an empty matrix prints only the header).

    A CSR matrix prints its rows densely, zeros included, exactly like a dense one (DAPHNE's CSRMatrix::print).
    """
    if is_csr(m):
        return _format_csr(m)
    if m.ndim != 2:
        raise DaphneRuntimeError(f"cannot print a {m.ndim}-D array as a matrix")
    rows, cols = m.shape
    header = matrix_header(m) + "\n"
    if rows == 0:
        return header
    if cols == 0:
        return header + "\n" * rows
    fmt, vals = _cells(m)
    return header + _format_rows([fmt] * cols, vals, rows)


def _format_csr(m) -> str:
    """CSR rows densified a block at a time, so printing never materialises the whole dense matrix at once."""
    rows, cols = m.shape
    out = [matrix_header(m) + "\n"]
    if cols == 0:
        return out[0] + "\n" * rows
    step = max(1, (1 << 20) // cols)
    for start in range(0, rows, step):
        block = as_dense(m[start : start + step])
        fmt, vals = _cells(block)
        out.append(_format_rows([fmt] * cols, vals, block.shape[0]))
    return "".join(out)


def format_frame(f: Frame) -> str:
    """`Frame(RxC, [label:cpptype, ...])` header plus space-separated rows."""
    rows, cols = f.nrow, f.ncol
    header = f.header() + "\n"
    if rows == 0:
        return header
    if cols == 0:
        return header + "\n" * rows
    fmts, col_vals = zip(*(_cells(c) for c in f.columns), strict=True)
    values = [v for row in zip(*col_vals, strict=True) for v in row]
    return header + _format_rows(list(fmts), values, rows)


def format_obj(x) -> str:
    """Text of any run-time value; data objects end with a newline, scalars do not."""
    if isinstance(x, np.ndarray) or is_csr(x):
        return format_matrix(x)
    if isinstance(x, Frame):
        return format_frame(x)
    if isinstance(x, tuple):  # a list (runtime.kernels.lists)
        return format_list(x)
    return format_scalar(x)


def format_list(lst: tuple) -> str:
    """DAPHNE's `List::print`: `List(n, DenseMatrix, double)` and then every element."""
    dt, vt = list_kind(lst)
    return f"List({len(lst)}, {dt}, {CPP_NAMES[vt]})\n" + "".join(format_obj(x) for x in lst)


def type_name(x) -> str:
    """`typeOf(x)` of a matrix without formatting its values (a CSR matrix can be far too large to print)."""
    return matrix_header(x)


def print_obj(x, newline: bool = True, to_stderr: bool = False) -> None:
    """DaphneDSL `print(x, newline, toStderr)`; matrices and frames ignore `newline` (every row ends with one)."""
    t = type(x)
    if t is int:
        s = int.__repr__(x)
    elif t is float:
        s = "%g" % x if x == x else ("-nan" if _copysign(1.0, x) < 0 else "nan")  # noqa: UP031
    elif t is str:
        s = x
    elif t is bool:
        s = "1" if x else "0"
    elif isinstance(x, (np.ndarray, Frame, tuple)) or is_csr(x):
        s, newline = format_obj(x), False
    else:
        s = format_scalar(x)
    if to_stderr:
        sys.stdout.flush()  # keep the order of interleaved stdout/stderr output, as DAPHNE's flushing cout does
        sys.stderr.write(s + "\n" if newline else s)
    else:
        sys.stdout.write(s + "\n" if newline else s)
