"""Value-type registry and C++-faithful casts.

DaphneDSL value types are named like DAPHNE's (`f64 f32 si64 si32 si8 ui64 ui32 ui8 bool str index`). At run time a
scalar is a plain Python object (int/float/bool/str) and a dense matrix is a 2-D numpy array whose dtype gives the
value type (str matrices use dtype=object); see docs/architecture.md.

Casts follow what DAPHNE's `static_cast` does on x86-64 (GCC): float->int truncates toward zero, out-of-range or NaN
values give the "integer indefinite" pattern of `cvttsd2si`, narrower integers wrap two's complement, number->str
uses `std::to_string`, str->number behaves like `std::stoll`/`std::stoull`/`std::stod`.
"""

from __future__ import annotations

import math
import re
import struct
from array import array
from collections.abc import Callable

import numpy as np

# The value-type tables (names, dtypes, C++ names, promotion order, integer ranges) have one home, shared with the
# dialect and the compiler; they are re-exported here for the runtime's kernels.
from daphnec.dialects.value_types import (  # noqa: F401 - re-exported
    CPP_NAMES,
    DTYPES,
    FLOAT_VTS,
    GENERALITY,
    INT_RANGES,
    INT_VTS,
    NUMERIC_VTS,
    VALUE_TYPE_NAMES,
    most_general,
)
from daphnec.dialects.value_types import VT_OF_DTYPE as _DTYPE_TO_VT
from daphnec.runtime.errors import DaphneRuntimeError

VALUE_TYPES: tuple[str, ...] = VALUE_TYPE_NAMES

#: A quiet NaN with the sign bit set: what x86 produces for invalid operations (0/0, inf-inf, ...); prints `-nan`.
NEG_NAN: float = struct.unpack("<d", struct.pack("<Q", 0xFFF8000000000000))[0]
POS_NAN: float = struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000000))[0]


def is_int_vt(vt: str) -> bool:
    """True for the (wrapping) integer value types, including `index`."""
    return vt in INT_VTS


def is_float_vt(vt: str) -> bool:
    """True for f32/f64."""
    return vt in FLOAT_VTS


def dtype_of(vt: str) -> np.dtype:
    """The numpy dtype that represents value type `vt` inside a matrix."""
    try:
        return DTYPES[vt]
    except KeyError:
        raise DaphneRuntimeError(f"unknown value type '{vt}'") from None


def cpp_name(vt: str) -> str:
    """C++ type name used in DAPHNE's print headers."""
    return CPP_NAMES[vt]


def is_csr(x: object) -> bool:
    """True for a CSR matrix (`scipy.sparse.csr_array`), the run-time form of `rep[sparse]` matrices."""
    return getattr(x, "format", None) == "csr"


def as_dense(x):
    """A dense numpy matrix for kernels without a sparse path (a dense input is returned as it is).

    The stored values are assigned, not summed into zeros like scipy's `toarray`, so a stored -0.0 stays -0.0.
    """
    if not is_csr(x):
        return x
    dense = np.zeros(x.shape, dtype=x.dtype)
    dense[row_ids(x), x.indices] = x.data
    return dense


def csr_from_parts(data: np.ndarray, indices: np.ndarray, indptr: np.ndarray, shape: tuple[int, int]):
    """A CSR matrix from its three arrays (already canonical: sorted column indices, no duplicates per row).

    scipy is imported lazily: scripts without CSR matrices never pay for it.
    """
    from scipy.sparse import csr_array

    m = csr_array((data, indices, indptr), shape=shape, copy=False)
    for name, arr in (("data", data), ("indices", indices)):  # scipy copies a small view of a large array: share it
        if getattr(m, name) is not arr and getattr(m, name).dtype == arr.dtype and getattr(m, name).shape == arr.shape:
            setattr(m, name, arr)
    m.has_sorted_indices = True
    m.has_canonical_format = True
    return m


def csr_rows(X, start: int, stop: int):
    """Rows `start:stop` of a canonical CSR matrix as a CSR matrix that shares X's value and column arrays.

    scipy's row slicing copies all three arrays, and its constructor scans the index arrays (to pick their dtype),
    both O(nnz); this costs O(rows) (the shifted row pointers). Run-time values are never mutated, so sharing is safe.
    """
    if start == 0 and stop == X.shape[0]:
        return X
    ptr = X.indptr
    lo, hi = int(ptr[start]), int(ptr[stop])
    m = type(X).__new__(type(X))
    m.__dict__.update(X.__dict__)  # maxprint and the like
    m.data, m.indices = X.data[lo:hi], X.indices[lo:hi]
    m.indptr = ptr[start : stop + 1] - ptr.dtype.type(lo) if lo else ptr[start : stop + 1]
    m._shape = (stop - start, X.shape[1])
    m._has_sorted_indices = m._has_canonical_format = True
    m._daphne_base = X.__dict__.get("_daphne_base", X)  # the matrix owning the arrays (native_wrapper._all_ones)
    return m


def row_ids(X) -> np.ndarray:
    """The row of every stored value of a CSR matrix."""
    return np.repeat(np.arange(X.shape[0], dtype=np.int64), np.diff(X.indptr))


def has_implicit_zeros(X) -> bool:
    """True if a CSR matrix does not store every cell."""
    return X.nnz < X.shape[0] * X.shape[1]


def with_pattern(X, values: np.ndarray, zero_value, rows: np.ndarray | None = None):
    """The result of an element-wise op on CSR matrix X: `values` at X's stored positions and `zero_value` (a
    scalar, or an array broadcastable to X's shape) at its implicit zeros.

    CSR with X's pattern when `zero_value` is zero everywhere (NaN counts as non-zero), else a dense matrix; the
    kernels use this so that a zero-preserving op keeps CSR while any other op still gives exact dense values.
    `rows` may pass `row_ids(X)` when the caller has it already.
    """
    if not has_implicit_zeros(X) or not np.any(np.asarray(zero_value) != 0):
        return csr_from_parts(np.ascontiguousarray(values), X.indices, X.indptr, X.shape)
    dense = np.empty(X.shape, dtype=values.dtype)
    dense[...] = zero_value
    dense[row_ids(X) if rows is None else rows, X.indices] = values
    return dense


def to_csr(x):
    """The CSR form of a numeric or bool matrix (zeros are not stored; a CSR input is returned as it is)."""
    if is_csr(x):
        return x
    if x.dtype.kind not in "biuf":
        raise DaphneRuntimeError(f"a matrix of value type {vt_of(x)} cannot be stored in CSR representation")
    from scipy.sparse import csr_array

    m = csr_array(x)
    m.sum_duplicates()  # canonical (sorted, no duplicates), as the kernels expect
    return m


# Kernels meeting the representations the IR types promise (compiler/selection/representations.py binds them as
# `functools.partial(densifying, kernel, positions)`, ...): a kernel without a CSR path gets its CSR operands
# densified, a result typed sparse is CSR, a result typed dense is dense.


def densifying(kernel: Callable[..., object], positions: frozenset[int], *args: object) -> object:
    """`kernel(*args)` with the CSR operands at `positions` densified first."""
    return kernel(*(as_dense(a) if i in positions else a for i, a in enumerate(args)))


def csr_result(kernel: Callable[..., object], *args: object) -> object:
    """`kernel(*args)` as CSR."""
    return to_csr(kernel(*args))


def dense_result(kernel: Callable[..., object], *args: object) -> object:
    """`kernel(*args)` as a dense matrix."""
    return as_dense(kernel(*args))


def _cast_csr(m, vt: str):
    """`cast_matrix` for CSR: the stored values are cast like dense ones; a zero stays zero in every numeric type."""
    if vt == "str":
        return cast_matrix(m.toarray(), vt)
    dt = dtype_of(vt)
    if m.dtype == dt:
        return m
    data = cast_matrix(m.data.reshape(1, -1), vt).reshape(-1)
    return csr_from_parts(data, m.indices, m.indptr, m.shape)


def vt_of(value) -> str:
    """The value type of a run-time value (numpy array/scalar, CSR matrix or Python scalar); ints are si64."""
    if is_csr(value):
        return _DTYPE_TO_VT[value.dtype]
    if isinstance(value, np.ndarray):
        return _DTYPE_TO_VT[value.dtype] if value.dtype in _DTYPE_TO_VT else _vt_of_dtype_fallback(value.dtype)
    t = type(value)
    if t is bool or t is np.bool_:
        return "bool"
    if t is int:
        return "si64"
    if t is float:
        return "f64"
    if t is str:
        return "str"
    if isinstance(value, np.generic):
        return _DTYPE_TO_VT[value.dtype]
    raise DaphneRuntimeError(f"value of Python type {t.__name__} has no DAPHNE value type")


def _vt_of_dtype_fallback(dt: np.dtype) -> str:
    """Map string dtypes (`<U..`) to `str`; anything else is not a DAPHNE value type."""
    if dt.kind in "US":
        return "str"
    raise DaphneRuntimeError(f"numpy dtype {dt} has no DAPHNE value type")


# ---------------------------------------------------------------------------------------------------------------------
# Integer wrapping and float->int conversion (x86-64 semantics)
# ---------------------------------------------------------------------------------------------------------------------


def wrap_int(x: int, vt: str) -> int:
    """Wrap a Python int into the range of integer type `vt` (two's complement, like a C++ narrowing cast)."""
    lo, hi = INT_RANGES[vt]
    if lo <= x <= hi:
        return x
    return ((x - lo) & (hi - lo)) + lo


_TWO63 = 9223372036854775808.0
_TWO64 = 18446744073709551616.0
_TWO31 = 2147483648.0
_INT64_MIN = -(1 << 63)
_INT32_MIN = -(1 << 31)


def _f2i64(x: float) -> int:
    """`cvttsd2si` with a 64-bit destination: truncate, or INT64_MIN when NaN/out of range."""
    if -_TWO63 <= x < _TWO63:
        return int(x)
    return _INT64_MIN


def _f2i32(x: float) -> int:
    """`cvttsd2si` with a 32-bit destination: truncate, or INT32_MIN when NaN/out of range."""
    if -2147483649.0 < x < _TWO31:
        return int(x)
    return _INT32_MIN


def float_to_int(x: float, vt: str) -> int:
    """C++ `static_cast<int type>(double)` as GCC compiles it for x86-64 (no UB trap, hardware results).

    si64: cvttsd2si64; si32: cvttsd2si32; si8/ui8 go through a 32-bit conversion, ui32 through a 64-bit one,
    then keep the low bits; ui64 uses GCC's two-range sequence (values >= 2^63 are converted after subtracting 2^63).
    """
    if vt == "si64":
        return _f2i64(x)
    if vt == "ui64" or vt == "index":
        if x >= _TWO63:  # NaN compares false and goes to the signed path
            return int(x) if x < _TWO64 else 0
        return _f2i64(x) & 0xFFFFFFFFFFFFFFFF
    if vt == "si32":
        return _f2i32(x)
    if vt == "ui32":
        return _f2i64(x) & 0xFFFFFFFF
    if vt == "si8":
        return wrap_int(_f2i32(x), "si8")
    if vt == "ui8":
        return _f2i32(x) & 0xFF
    raise DaphneRuntimeError(f"float_to_int: '{vt}' is not an integer value type")


def float_array_to_int(a: np.ndarray, vt: str) -> np.ndarray:
    """Vectorised `float_to_int` (numpy's own cast is not the same on every SIMD path, e.g. for ui32)."""
    a = np.asarray(a, dtype=np.float64)
    if a.size and -2147483648.0 < float(a.min()) and float(a.max()) < 2147483648.0:  # NaN fails both tests
        return a.astype(np.int64).astype(dtype_of(vt), copy=False)  # in range: truncation, then the low bits
    t = np.trunc(a)
    with np.errstate(invalid="ignore"):
        ok64 = (t >= -_TWO63) & (t < _TWO63)
        i64 = np.where(ok64, t, 0.0).astype(np.int64)
        i64[~ok64] = _INT64_MIN
        if vt == "si64":
            return i64
        if vt in ("ui64", "index"):
            big = t >= _TWO63
            res = i64.view(np.uint64).copy()
            if big.any():
                in_rng = big & (t < _TWO64)
                res[in_rng] = t[in_rng].astype(np.uint64)
                res[big & ~in_rng] = 0
            return res
        if vt == "ui32":
            return (i64 & 0xFFFFFFFF).astype(np.uint32)
        ok32 = (t > -2147483649.0) & (t < _TWO31)
        i32 = np.where(ok32, t, 0.0).astype(np.int32)
        i32[~ok32] = _INT32_MIN
    if vt == "si32":
        return i32
    if vt == "si8":
        return i32.astype(np.int8)
    if vt == "ui8":
        return i32.astype(np.uint8)
    raise DaphneRuntimeError(f"float_to_int: '{vt}' is not an integer value type")


_F32_BOX = array("f", [0.0])


def to_f32(x: float) -> float:
    """Round a Python float to float32 precision (a C double->float conversion: overflow gives +-inf, NaN keeps its
    sign); an `array('f')` slot does the hardware conversion without numpy's overflow warnings."""
    _F32_BOX[0] = x
    return _F32_BOX[0]


# ---------------------------------------------------------------------------------------------------------------------
# String <-> number (std::to_string, std::stoll/stoull/stod/stof)
# ---------------------------------------------------------------------------------------------------------------------

_WS = " \t\n\v\f\r"
_INT_RE = re.compile(r"[ \t\n\v\f\r]*([+-]?)([0-9]+)")
_FLOAT_RE = re.compile(
    r"[ \t\n\v\f\r]*([+-]?)(?:"
    r"(0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?[0-9]+)?)"
    r"|((?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)"
    r"|(inf(?:inity)?)|(nan(?:\([0-9A-Za-z_]*\))?))",
    re.IGNORECASE,
)
_DBL_MIN = 2.2250738585072014e-308
_FLT_MIN = 1.1754943508222875e-38
_FLT_MAX = 3.4028234663852886e38


def float_to_str(x: float) -> str:
    """`std::to_string(double)`, i.e. printf `%f`; a sign-bit NaN prints `-nan` like glibc."""
    if x != x:
        return "-nan" if math.copysign(1.0, x) < 0 else "nan"
    return "%f" % x  # noqa: UP031 - printf %f semantics


def parse_int(s: str, vt: str) -> int:
    """`std::stoll` (signed) / `std::stoull` (unsigned) followed by a cast to `vt`; bad text raises."""
    m = _INT_RE.match(s)
    if m is None:
        raise DaphneRuntimeError(f"cannot convert string '{s}' to {vt}: not a number")
    sign, digits = m.groups()
    v = int(digits)
    if vt in ("ui64", "ui32", "ui8", "index"):
        if v > (1 << 64) - 1:
            raise DaphneRuntimeError(f"cannot convert string '{s}' to {vt}: out of range")
        v = -v & 0xFFFFFFFFFFFFFFFF if sign == "-" else v  # stoull negates in unsigned arithmetic
    else:
        v = -v if sign == "-" else v
        if not -(1 << 63) <= v <= (1 << 63) - 1:
            raise DaphneRuntimeError(f"cannot convert string '{s}' to {vt}: out of range")
    return wrap_int(v, vt)


def parse_float(s: str, vt: str = "f64") -> float:
    """`std::stod` / `std::stof`: longest valid prefix (decimal, hex, inf, nan); no number or overflow raises."""
    m = _FLOAT_RE.match(s)
    if m is None:
        raise DaphneRuntimeError(f"cannot convert string '{s}' to {vt}: not a number")
    sign, hexpart, dec, inf, nan = m.groups()
    if nan is not None:
        v = POS_NAN
    elif inf is not None:
        v = math.inf
    else:
        v = float.fromhex(hexpart) if hexpart is not None else float(dec)
        mant = (hexpart or dec).lower()
        mant = mant.split("p")[0] if hexpart else mant.split("e")[0]
        nonzero = any(ch not in "0.x" for ch in mant)
        limit_max, limit_min = (_FLT_MAX, _FLT_MIN) if vt == "f32" else (1.7976931348623157e308, _DBL_MIN)
        if math.isinf(v) or abs(v) > limit_max:
            raise DaphneRuntimeError(f"cannot convert string '{s}' to {vt}: out of range")
        if nonzero and abs(v) < limit_min:
            raise DaphneRuntimeError(f"cannot convert string '{s}' to {vt}: out of range")
    if sign == "-":
        v = -v
    return to_f32(v) if vt == "f32" else v


# ---------------------------------------------------------------------------------------------------------------------
# Scalar and matrix casts
# ---------------------------------------------------------------------------------------------------------------------


def cast_scalar(x, vt: str):
    """Cast a scalar to value type `vt` with C++ `static_cast` semantics (see module docstring)."""
    t = type(x)
    if isinstance(x, np.generic):
        x = x.item()
        t = type(x)
    if vt in INT_VTS:
        if t is int:
            return wrap_int(x, vt)
        if t is bool:
            return int(x)
        if t is float:
            return float_to_int(x, vt)
        if t is str:
            return parse_int(x, vt)
    elif vt == "f64":
        if t is float:
            return x
        if t is int or t is bool:
            return float(x)
        if t is str:
            return parse_float(x, "f64")
    elif vt == "f32":
        if t is float or t is int or t is bool:
            return to_f32(float(x))
        if t is str:
            return parse_float(x, "f32")
    elif vt == "bool":
        if t is bool:
            return x
        if t is int or t is float:
            return x != 0
        if t is str:
            return parse_int(x, "si64") != 0
    elif vt == "str":
        if t is str:
            return x
        if t is bool:
            return "1" if x else "0"
        if t is int:
            return str(x)
        if t is float:
            return float_to_str(x)
    if isinstance(x, np.ndarray) or is_csr(x):  # a matrix where a scalar belongs: name the data types
        raise DaphneRuntimeError(f"expected a scalar of value type {vt}, got a matrix<{vt_of_py(x)}>")
    raise DaphneRuntimeError(f"cannot cast value of type {vt_of_py(x)} to {vt}")


def vt_of_py(x) -> str:
    """Best-effort value-type name of a scalar, for error messages."""
    try:
        return vt_of(x)
    except DaphneRuntimeError:
        return type(x).__name__


def cast_matrix(m: np.ndarray, vt: str) -> np.ndarray:
    """Cast a matrix to value type `vt` elementwise with the same semantics as `cast_scalar` (same object if equal)."""
    if is_csr(m):
        return _cast_csr(m, vt)
    dt = dtype_of(vt)
    src = m.dtype
    if src == dt and vt != "str":
        return m
    if vt == "str":
        if src.kind == "O":
            return m
        flat = m.ravel().tolist()
        conv = float_to_str if src.kind == "f" else (lambda v: "1" if v else "0") if src.kind == "b" else str
        return _object_matrix([conv(v) for v in flat], m.shape)
    if src.kind == "O":
        flat = [cast_scalar(v, vt) for v in m.ravel().tolist()]
        return np.array(flat, dtype=dt).reshape(m.shape) if flat else np.empty(m.shape, dtype=dt)
    if vt == "bool":
        return m != 0
    if vt in INT_VTS and src.kind == "f":
        return float_array_to_int(m, vt).reshape(m.shape)
    with np.errstate(all="ignore"):
        return m.astype(dt)


def _object_matrix(values: list, shape: tuple[int, int]) -> np.ndarray:
    """Build an object (str) matrix without numpy interpreting the strings as sequences."""
    arr = np.empty(len(values), dtype=object)
    arr[:] = values
    return arr.reshape(shape)


def object_matrix(values: list, rows: int, cols: int) -> np.ndarray:
    """A rows x cols str matrix (dtype=object) from row-major values."""
    return _object_matrix(values, (rows, cols))
