"""Matrix Market files (`.mtx`), read and written with fast_matrix_market.

fast_matrix_market is a multi-threaded C++ parser (the one scipy.io.mmread uses internally since scipy 1.12); it
reads coordinate and array files, real/integer/pattern fields and general/symmetric/skew-symmetric storage, and
reports malformed lines with their line number, which is why it is used here instead of a hand-written parser.

Semantics follow DAPHNE's MMFile.h/ReadMM.h: the header carries the shape (it must agree with the `.meta`), array
files are column-major, symmetric files store one triangle and the other is mirrored (skew-symmetric: negated),
pattern entries are 1, and a cell given twice keeps its last value. Values are converted to the value type the
`.meta` declares (C++ cast semantics, so 2.7 read as si64 is 2). DAPHNE reads the value type of an `.mtx` from its
`.meta` like for any other file; without one, `integer` files correspond to si64 and `real`/`pattern` ones to f64
(MMFile::elementType), which is also what `tools/gen_graph.py` writes into its `.meta`.
"""

from __future__ import annotations

import numpy as np

from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.memory import check_alloc
from daphnec.runtime.values import FLOAT_VTS, cast_matrix, dtype_of, is_csr

_FIELDS = ("real", "integer", "pattern")
_SYMMETRIES = ("general", "symmetric", "skew-symmetric")


def natural_value_type(field: str) -> str:
    """The value type DAPHNE's MMFile gives a file's entries: si64 for `integer`, f64 otherwise."""
    return "si64" if field == "integer" else "f64"


def _fmm_error(who: str, path: str, e: Exception) -> DaphneRuntimeError:
    return DaphneRuntimeError(f"{who}: '{path}' is not a valid Matrix Market file: {e}")


def read_header(path: str, who: str = "readMatrix"):
    """The parsed banner and size line (shape, nnz, format, field, symmetry); checks they are supported."""
    import fast_matrix_market as fmm

    try:
        h = fmm.read_header(path)
    except (ValueError, OverflowError, RuntimeError) as e:
        raise _fmm_error(who, path, e) from None
    if h.object != "matrix":
        raise DaphneRuntimeError(f"{who}: '{path}': Matrix Market object '{h.object}' is not supported (only matrix)")
    if h.field not in _FIELDS:
        raise DaphneRuntimeError(
            f"{who}: '{path}': Matrix Market field '{h.field}' is not supported (supported: {', '.join(_FIELDS)})"
        )
    if h.symmetry not in _SYMMETRIES:
        raise DaphneRuntimeError(
            f"{who}: '{path}': Matrix Market symmetry '{h.symmetry}' is not supported "
            f"(supported: {', '.join(_SYMMETRIES)})"
        )
    return h


def read(path: str, rows: int, cols: int, vt: str, sparse: bool, who: str = "readMatrix"):
    """The matrix in `path` as a dense matrix or (if `sparse`) a CSR matrix of value type `vt`."""
    import fast_matrix_market as fmm

    if vt == "str":
        raise DaphneRuntimeError(f"{who}: reading string-valued Matrix Market files is not supported")
    h = read_header(path, who)
    if h.shape != (rows, cols):
        raise DaphneRuntimeError(
            f"{who}: '{path}' holds a {h.shape[0]}x{h.shape[1]} matrix, but its .meta says {rows}x{cols}"
        )
    if not sparse or h.format == "array":
        check_alloc(who, rows, cols, vt)
    try:
        if h.format == "array":
            dense = np.ascontiguousarray(fmm.read_array(path))
            return _as_vt(_to_csr_dense(dense) if sparse else dense, vt)
        if sparse and h.symmetry != "general":
            return _as_vt(_symmetric_csr(path, h.symmetry, h.field == "pattern"), vt)
        (data, (r, c)), shape = fmm.read_coo(path)
    except (ValueError, OverflowError, RuntimeError) as e:
        raise _fmm_error(who, path, e) from None
    if sparse:
        from daphnec.runtime.io.sparse import coo_to_csr

        return _as_vt(coo_to_csr(data, r, c, shape), vt)
    out = np.zeros(shape, dtype=data.dtype)
    out[r, c] = data  # a cell given twice keeps its last value, as DAPHNE's dense reader does
    return _as_vt(out, vt)


def _symmetric_csr(path: str, symmetry: str, pattern: bool = False):
    """CSR of a (skew-)symmetric coordinate file: the stored triangle T plus the transpose of its off-diagonal part
    (negated if skew). A lower triangle in row-major order (what writers emit, `tools/gen_graph.py` too) is merged
    with its mirror straight into the result (`lower_symmetric_to_csr`: ~1x the result's memory on top of the
    triplets); other files build T and add its transpose, which is about twice as fast as sorting the mirrored
    triplets (they arrive in column order) but holds T, its transpose and the sum at once."""
    import fast_matrix_market as fmm

    from daphnec.runtime.io.sparse import coo_to_csr, lower_sorted, lower_symmetric_to_csr

    (data, (r, c)), shape = fmm.read_coo(path, generalize_symmetry=False)
    if max(shape) < 2**31:  # 32-bit positions halve what the triplets hold while the result is built
        r, c = r.astype(np.int32, copy=False), c.astype(np.int32, copy=False)
    if lower_sorted(r, c):
        if pattern:
            data = None  # every value is 1.0: the parsed ones are dropped before the result is built
        return lower_symmetric_to_csr(data, r, c, shape, symmetry == "skew-symmetric")
    stored = coo_to_csr(data, r, c, shape)
    off = r != c
    mirror = coo_to_csr(data[off], r[off], c[off], shape) if not off.all() else stored
    full = (stored - mirror.T) if symmetry == "skew-symmetric" else (stored + mirror.T)
    full = full.tocsr()
    full.sum_duplicates()
    return full


def _to_csr_dense(dense: np.ndarray):
    from daphnec.runtime.io.sparse import dense_to_csr

    return dense_to_csr(dense)


def _as_vt(m, vt: str):
    """Convert the parsed values (float64 or int64) to value type `vt` with C++ cast semantics."""
    if is_csr(m):
        if m.dtype == dtype_of(vt):
            return m
        m = m.copy()
        m.data = cast_matrix(m.data.reshape(1, -1), vt).ravel()
        return m
    return cast_matrix(m, vt) if m.dtype != dtype_of(vt) else m


def _field(vt: str) -> str:
    return "real" if vt in FLOAT_VTS else "integer"


def write(m, f) -> None:
    """A CSR matrix as a `coordinate general` file, a dense one as `array general` (column-major), values printed
    in their shortest round-trip form."""
    import fast_matrix_market as fmm

    from daphnec.runtime.values import vt_of

    vt = vt_of(m)
    if vt == "str":
        raise DaphneRuntimeError("write: writing string-valued matrices to Matrix Market files is not supported")
    if vt == "bool":
        m = m.astype(np.int64)
    try:
        fmm.mmwrite(f, m, field=_field(vt), symmetry="general")
    except (ValueError, TypeError, OverflowError) as e:
        raise DaphneRuntimeError(f"write: cannot write a Matrix Market file: {e}") from None
