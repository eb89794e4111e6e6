"""Extension kernels (`--kernel-ext`, runtime/kernel_catalog.py): C functions in shared libraries and Python
functions, called with the signature their catalog declares.

**C (`"backend": "CPP"`)**, DAPHNE's calling convention (doc/Extensions.md) with a C struct for matrices: results
first, as pointers, then the arguments, then DAPHNE's context pointer (always NULL in daphnec):

    typedef struct { int64_t numRows, numCols, rowSkip; void *values; } DenseMatrix;   // row-major values
    void mySum(float *res, const DenseMatrix *arg, void *ctx);                          // resTypes ["float"]

A scalar argument is passed by value (`char` as `const char *`), a `DenseMatrix<T>` argument as a pointer to the
struct over daphnec's own buffer (read-only). A scalar result is written through its pointer; a `DenseMatrix<T>`
result is filled by the kernel with its shape and a buffer from `malloc`, which daphnec copies and frees.

**Python (`"backend": "Python"`)**: `libPath` is a Python file and `kernelFuncName` a function in it, called with
numpy matrices (2-D) and Python scalars; it returns the result (a tuple for several), converted to the declared
types. An exception it raises is a run-time error of the script (exit 3).
"""

from __future__ import annotations

import ctypes
import functools
import importlib.util
import re
import sys
from collections.abc import Callable, Sequence

import numpy as np

from daphnec.dialects.value_types import DTYPES, KERNEL_CPP_NAMES
from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.values import as_dense, cast_scalar

_VT_OF_CPP: dict[str, str] = {c: vt for vt, c in KERNEL_CPP_NAMES.items()}
_CTYPES: dict[str, type] = {
    "double": ctypes.c_double, "float": ctypes.c_float, "int64_t": ctypes.c_int64, "int32_t": ctypes.c_int32,
    "int8_t": ctypes.c_int8, "uint64_t": ctypes.c_uint64, "uint32_t": ctypes.c_uint32, "uint8_t": ctypes.c_uint8,
    "bool": ctypes.c_bool, "size_t": ctypes.c_size_t,
}  # fmt: skip
_MATRIX = re.compile(r"DenseMatrix<(\w+)>")


class DenseMatrixStruct(ctypes.Structure):
    """The C view of a dense matrix (the `DenseMatrix` struct above)."""

    _fields_ = [
        ("numRows", ctypes.c_int64),
        ("numCols", ctypes.c_int64),
        ("rowSkip", ctypes.c_int64),
        ("values", ctypes.c_void_p),
    ]


def value_type_of(cpp: str) -> tuple[bool, str] | None:
    """(is a dense matrix, value type) of a catalog type name, None for types extension kernels cannot exchange."""
    m = _MATRIX.fullmatch(cpp)
    vt = _VT_OF_CPP.get(m.group(1) if m else cpp)
    if vt is None:
        return None
    return (m is not None, vt)


def unsupported_types(backend: str, types: Sequence[str]) -> list[str]:
    """The types of a signature a backend cannot pass (C: numbers, `char` arguments and dense matrices of numbers)."""
    if backend == "Python":
        return []
    return [t for t in types if value_type_of(t) is None and t != "char"]


def kernel(backend: str, lib: str, name: str, res: Sequence[str], args: Sequence[str]) -> Callable[..., object]:
    """The callable running an extension kernel with the declared result and argument types."""
    if backend == "Python":
        return functools.partial(_call_python, _python_function(lib, name), name, tuple(res))
    fn = _c_function(lib, name)
    fn.restype = None
    fn.argtypes = [*(ctypes.c_void_p for _ in res), *(_c_arg_type(t) for t in args), ctypes.c_void_p]
    return functools.partial(_call_c, fn, name, tuple(res), tuple(args))


# --- C -------------------------------------------------------------------------------------------------------------


@functools.cache
def _library(lib: str) -> ctypes.CDLL:
    try:
        return ctypes.CDLL(lib)
    except OSError as e:
        raise DaphneRuntimeError(f"cannot load the kernel extension library '{lib}': {e}") from None


def _c_function(lib: str, name: str):
    try:
        return getattr(_library(lib), name)
    except AttributeError:
        raise DaphneRuntimeError(f"the kernel extension library '{lib}' has no function '{name}'") from None


def _c_arg_type(t: str) -> type:
    if t == "char":
        return ctypes.c_char_p
    matrix, vt = value_type_of(t)  # type: ignore[misc]
    return ctypes.POINTER(DenseMatrixStruct) if matrix else _CTYPES[KERNEL_CPP_NAMES[vt]]


def _c_matrix(x: object, vt: str) -> tuple[DenseMatrixStruct, np.ndarray]:
    a = np.ascontiguousarray(as_dense(x), dtype=DTYPES[vt])
    rows, cols = a.shape
    return DenseMatrixStruct(rows, cols, cols, a.ctypes.data), a


def _call_c(fn, name: str, res: tuple[str, ...], args: tuple[str, ...], *values: object) -> object:
    keep: list[object] = []  # the buffers the C structs point into, alive during the call
    c_args: list[object] = []
    for t, v in zip(args, values):
        if t == "char":
            c_args.append(str(v).encode())
            continue
        matrix, vt = value_type_of(t)  # type: ignore[misc]
        if matrix:
            s, buf = _c_matrix(v, vt)
            keep.append(buf)
            c_args.append(ctypes.pointer(s))
        else:
            c_args.append(cast_scalar(v, vt))
    outs = [DenseMatrixStruct(-1, -1, -1, None) if value_type_of(t)[0] else _CTYPES[t]() for t in res]  # type: ignore[index]
    sys.stdout.flush()  # what the script printed so far comes before what the C kernel prints
    fn(*(ctypes.addressof(o) for o in outs), *c_args, None)
    results = [_c_result(o, t, name) for o, t in zip(outs, res)]
    return _one(results)


def _c_result(out: object, t: str, name: str) -> object:
    matrix, vt = value_type_of(t)  # type: ignore[misc]
    if not matrix:
        return cast_scalar(out.value, vt)  # type: ignore[attr-defined]
    s: DenseMatrixStruct = out  # type: ignore[assignment]
    if s.numRows < 0 or s.numCols < 0 or s.rowSkip < s.numCols or (not s.values and s.numRows * s.numCols):
        raise DaphneRuntimeError(f"kernel '{name}' did not set its {t} result")
    dt = DTYPES[vt]
    if not s.values:
        return np.empty((s.numRows, s.numCols), dt)
    try:
        buf = (ctypes.c_char * (s.numRows * s.rowSkip * dt.itemsize)).from_address(s.values)
        full = np.frombuffer(buf, dtype=dt).reshape(s.numRows, s.rowSkip)
        return np.array(full[:, : s.numCols], order="C")  # a copy: the kernel's buffer is freed next
    finally:
        _libc_free(s.values)


@functools.cache
def _free() -> Callable[[int], None]:
    free = ctypes.CDLL(None).free
    free.argtypes = [ctypes.c_void_p]
    free.restype = None
    return free


def _libc_free(ptr: int) -> None:
    _free()(ptr)


# --- Python ----------------------------------------------------------------------------------------------------------


@functools.cache
def _python_module(path: str):
    spec = importlib.util.spec_from_file_location(f"daphnec_kernel_ext_{abs(hash(path))}", path)
    if spec is None or spec.loader is None:
        raise DaphneRuntimeError(f"cannot load the kernel extension module '{path}'")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as e:  # noqa: BLE001 - any failure of the user's module is reported as such
        raise DaphneRuntimeError(f"cannot load the kernel extension module '{path}': {type(e).__name__}: {e}") from e
    return module


def _python_function(path: str, name: str) -> Callable[..., object]:
    fn = getattr(_python_module(path), name, None)
    if not callable(fn):
        raise DaphneRuntimeError(f"the kernel extension module '{path}' has no function '{name}'")
    return fn


def _call_python(fn: Callable[..., object], name: str, res: tuple[str, ...], *values: object) -> object:
    try:
        out = fn(*values)
    except DaphneRuntimeError:
        raise
    except Exception as e:  # noqa: BLE001 - the user's kernel failed: a run-time error of the script
        raise DaphneRuntimeError(f"kernel '{name}': {type(e).__name__}: {e}") from e
    outs = list(out) if len(res) != 1 and isinstance(out, tuple) else [out]
    if len(outs) != len(res):
        raise DaphneRuntimeError(f"kernel '{name}' returned {len(outs)} values, its catalog declares {len(res)}")
    return _one([_python_result(v, t, name) for v, t in zip(outs, res)])


def _python_result(v: object, t: str, name: str) -> object:
    kind = value_type_of(t)
    if kind is None:
        return v  # frames, CSR matrices, strings: passed on as the kernel built them
    matrix, vt = kind
    if not matrix:
        return cast_scalar(v.item() if isinstance(v, np.generic) else v, vt)
    a = np.asarray(v, dtype=DTYPES[vt])
    if a.ndim != 2:
        raise DaphneRuntimeError(f"kernel '{name}' returned a {a.ndim}-d array for its {t} result (expected 2-d)")
    return np.ascontiguousarray(a)


def _one(results: list[object]) -> object:
    if not results:
        return None
    return results[0] if len(results) == 1 else tuple(results)
