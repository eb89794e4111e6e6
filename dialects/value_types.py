"""DaphneDSL's value types and the pipeline split/combine modes: the one table every layer reads.

The dialect (`dialects/types.py`) maps these names to IR types, the compiler lowers them to LLVM and ctypes types,
and the runtime (`runtime/values.py`) represents them as numpy dtypes. This module imports numpy only, not xDSL,
so the runtime can read it without pulling in the compiler.

Names, order of generality, C++ names and value-type codes are DAPHNE's (`src/runtime/local/datastructures/
ValueTypeCode.h`, `ValueTypeUtils.cpp`, `src/compiler/analysis/inference/TypeInferenceUtils.cpp`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import IntEnum

import numpy as np


@dataclass(frozen=True)
class ValueType:
    """One DaphneDSL value type: how the IR, the native kernels and the runtime each represent it."""

    name: str
    dtype: np.dtype
    """The numpy dtype of a matrix element (`str` matrices hold Python `str` objects)."""
    cpp_name: str
    """The C++ type name DAPHNE prints in matrix headers (`DenseMatrix(2x3, int64_t)`)."""
    code: int | None
    """DAPHNE's `ValueTypeCode` (binary files, DaphneLib); None for types without one."""
    bits: int
    """Width of an integer or float; 0 for str."""
    kind: str
    """`int` (wrapping two's complement, unsigned or signed), `float`, `bool` or `str`."""
    signed: bool = True


#: Every value type, in DAPHNE's spelling. `index` is C++ `size_t`, i.e. `uint64_t` on LP64 Linux.
VALUE_TYPES: dict[str, ValueType] = {
    vt.name: vt
    for vt in (
        ValueType("f64", np.dtype(np.float64), "double", 7, 64, "float"),
        ValueType("f32", np.dtype(np.float32), "float", 6, 32, "float"),
        ValueType("si64", np.dtype(np.int64), "int64_t", 2, 64, "int"),
        ValueType("si32", np.dtype(np.int32), "int32_t", 1, 32, "int"),
        ValueType("si8", np.dtype(np.int8), "int8_t", 0, 8, "int"),
        ValueType("ui64", np.dtype(np.uint64), "uint64_t", 5, 64, "int", signed=False),
        ValueType("ui32", np.dtype(np.uint32), "uint32_t", 4, 32, "int", signed=False),
        ValueType("ui8", np.dtype(np.uint8), "uint8_t", 3, 8, "int", signed=False),
        ValueType("bool", np.dtype(np.bool_), "bool", None, 1, "bool", signed=False),
        ValueType("str", np.dtype(object), "std::string", 8, 0, "str"),
        ValueType("index", np.dtype(np.uint64), "uint64_t", None, 64, "int", signed=False),
    )
}

VALUE_TYPE_NAMES: tuple[str, ...] = tuple(VALUE_TYPES)

#: DAPHNE's generality order for promotion: a binary op's result has the most general operand type (facts §4).
GENERALITY: tuple[str, ...] = ("bool", "si8", "ui8", "si32", "ui32", "index", "si64", "ui64", "f32", "f64", "str")
_RANK: dict[str, int] = {vt: i for i, vt in enumerate(GENERALITY)}

#: The wrapping integer types (bool is not one: it is a truth value, promoted to int for arithmetic).
INT_VTS: frozenset[str] = frozenset(n for n, vt in VALUE_TYPES.items() if vt.kind == "int")
FLOAT_VTS: frozenset[str] = frozenset(n for n, vt in VALUE_TYPES.items() if vt.kind == "float")
#: Value types of numbers (a native kernel can hold them in a register).
NUMERIC_VTS: frozenset[str] = INT_VTS | FLOAT_VTS | {"bool"}
#: The numbers of arithmetic on matrix elements: the fixed-width integers and floats (not bool, not `index`).
ARITHMETIC_VTS: frozenset[str] = NUMERIC_VTS - {"bool", "index"}

#: Inclusive ranges of the integer types.
INT_RANGES: dict[str, tuple[int, int]] = {
    n: ((-(1 << (vt.bits - 1)), (1 << (vt.bits - 1)) - 1) if vt.signed else (0, (1 << vt.bits) - 1))
    for n, vt in VALUE_TYPES.items()
    if vt.kind == "int"
}

DTYPES: dict[str, np.dtype] = {n: vt.dtype for n, vt in VALUE_TYPES.items()}
CPP_NAMES: dict[str, str] = {n: vt.cpp_name for n, vt in VALUE_TYPES.items()}
#: The C++ scalar types of kernel signatures and names (DAPHNE's `CompilerUtils::mlirTypeToCppTypeName`): `index`
#: is `size_t` there (a string scalar is a `const char *`, a string matrix element a `std::string`).
KERNEL_CPP_NAMES: dict[str, str] = {**{n: c for n, c in CPP_NAMES.items() if n != "str"}, "index": "size_t"}
#: DAPHNE's `ValueTypeCode` per value type and back (SI8=0 SI32=1 SI64=2 UI8=3 UI32=4 UI64=5 F32=6 F64=7 STR=8).
VT_CODES: dict[str, int] = {n: vt.code for n, vt in VALUE_TYPES.items() if vt.code is not None}
VT_OF_CODE: dict[int, str] = {c: n for n, c in VT_CODES.items()}
#: The value type of a numpy dtype (`index` is never inferred from a dtype: uint64 is ui64).
VT_OF_DTYPE: dict[np.dtype, str] = {vt.dtype: n for n, vt in VALUE_TYPES.items() if n != "index"}


def most_general(*names: str) -> str:
    """The most general of the value types `names` (DAPHNE's promotion rule)."""
    return max(names, key=_RANK.__getitem__)


def generality(name: str) -> int:
    """The rank of a value type in DAPHNE's generality order (least general first)."""
    return _RANK[name]


def is_int_vt(name: str) -> bool:
    """True for the wrapping integer types, including `index` (not bool)."""
    return name in INT_VTS


def is_float_vt(name: str) -> bool:
    """True for f32 and f64."""
    return name in FLOAT_VTS


def is_integral_vt(name: str) -> bool:
    """True for the integer types and bool: what C++ computes on in integer arithmetic."""
    return name in INT_VTS or name == "bool"


# --- value-type rules --------------------------------------------------------------------------------------------
#
# How an op's result value type follows from its operands' (DAPHNE's ValueTypeFromArgs, ValueTypeFromArgsFP,
# ValueTypeFromArgsInt, ValueTypeFromFirstArg traits, DaphneOps.td). A rule takes the operands' value types, None
# for one not inferred yet, and returns None while the result cannot be decided.

VtRule = Callable[[Sequence[str | None]], str | None]


def vt_from_args(vts: Sequence[str | None]) -> str | None:
    """The most general operand type."""
    return None if not vts or any(v is None for v in vts) else most_general(*vts)  # type: ignore[arg-type]


def vt_from_args_fp(vts: Sequence[str | None]) -> str | None:
    """The most general operand type if it is a float, else f64 (`sqrt` of si64 is f64)."""
    vt = vt_from_args(vts)
    return vt if vt is None or vt in FLOAT_VTS else "f64"


def vt_from_args_int(vts: Sequence[str | None]) -> str | None:
    """The most general operand type if it is an integer or bool (MLIR's i1), else ui64 (`&&` of floats)."""
    vt = vt_from_args(vts)
    return vt if vt is None or is_integral_vt(vt) else "ui64"


def vt_from_first(vts: Sequence[str | None]) -> str | None:
    """The first operand's type."""
    return vts[0] if vts else None


def vt_fixed(name: str) -> VtRule:
    """Always `name` (`nrow` is an index)."""
    return lambda vts: name


def vt_concat(vts: Sequence[str | None]) -> str | None:
    """A string (concatenation)."""
    return "str"


def vt_compare(vts: Sequence[str | None]) -> str | None:
    """Comparisons yield the most general operand type (not bool), and si64 for strings (facts §4)."""
    vt = vt_from_args(vts)
    return "si64" if vt == "str" else vt


class Split(IntEnum):
    """How a vectorized pipeline receives an input (DAPHNE's `VectorSplit`, DaphneVectorizableOpInterface.td)."""

    NONE = 0
    ROWS = 1


class Combine(IntEnum):
    """How a vectorized pipeline assembles a result from per-task results (DAPHNE's `VectorCombine`)."""

    ROWS = 1
    COLS = 2
    ADD = 3
    MIN = 4
    MAX = 5
