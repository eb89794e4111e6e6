"""The calling convention of native task kernels: one table from which every side of a kernel call is derived.

A stage kernel takes the batch's row count, then one parameter per pipeline input, per result of an opaque op run
before it, and per output, and returns a status (0, or non-zero: "rerun the Python body"). Each parameter has a
*kind* (`ArgKind`) and each kind a fixed list of *slots*, the values the Python side passes for it:

    rows    n                                   the batch's rows (blocks are passed from their first row)
    array   a numpy array                       dense rows, a row vector, a whole matrix, an opaque op's result,
                                                an output buffer (C-contiguous)
    csr     values, column indices, row         a CSR matrix: three numpy arrays and flags (`CSR_INDEX64`,
            pointers, flags                     `CSR_ALL_ONES`)
    f64 / i64 / u64   the scalar                floats (f32 too) as double, integers and bools as 64 bits

Which parameters a stage kernel has follows from its pipeline's plan (`kernel_plan.stage_params`). From the
table come: the xDSL kernel signature (`kernel_types`: an array slot is a `memref<?xT>` of its data,
index arrays are passed as both an i32 and an i64 view, since scipy picks the index width), the Python-facing
LLVM entry `@<kernel>_py` (`entry_types`, `forwarded`: array objects in, their data pointers read from the
`PyArrayObject` at `runtime.native_code.ARRAY_DATA_OFFSET` and passed on), the ctypes prototype
(`ctypes_types`) and the generated wrapper's argument lists (`Slot.part` names what the wrapper passes). The
kernel function records its kinds in `daphne.abi` (`encode`/`decode`), so `convert-to-llvm` builds the entry
from the IR alone.

Only `xdsl.dialects.builtin` (and the runtime's flag value) is imported here: the host compiler reads this module
while the lowering itself runs on a background thread.
"""

from __future__ import annotations

import ctypes
from enum import Enum
from typing import NamedTuple

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    IndexType,
    MemRefType,
    StringAttr,
    SymbolRefAttr,
    f32,
    f64,
    i1,
    i8,
    i32,
    i64,
)
from xdsl.ir import Attribute, Operation

from daphnec.dialects.attr_names import ABI_ATTR, NATIVE_FALLBACK_ATTR, NATIVE_KERNEL_ATTR, OPAQUE_ATTR
from daphnec.dialects.value_types import FLOAT_VTS, VALUE_TYPES
from daphnec.runtime.vectorized.kernel import CSR_ALL_ONES as ALL_ONES_FLAG

# -- how the IR names kernels ----------------------------------------------------------------------------------------

LOWERING_ATTRS = (NATIVE_KERNEL_ATTR, OPAQUE_ATTR, NATIVE_FALLBACK_ATTR)
"""What the lowering writes on a pipeline (not part of what identifies its kernel)."""
ENTRY_SUFFIX = "_py"
"""`@<kernel>_py` is a stage kernel's Python-facing entry."""

# -- value types in kernels ------------------------------------------------------------------------------------------

_IR: dict[str, Attribute] = {
    n: ({64: f64, 32: f32} if vt.kind == "float" else {64: i64, 32: i32, 8: i8, 1: i1})[vt.bits]
    for n, vt in VALUE_TYPES.items()
    if vt.kind != "str"
}
"""The register type of each numeric value type: signless integers of the type's width (bool is i1)."""


def ir_type(vt: str) -> Attribute:
    """The register type of a value type (signless integers; bool is i1)."""
    return _IR[vt]


def storage_type(vt: str) -> Attribute:
    """The in-memory element type of a numpy matrix of `vt` (numpy stores bool as one byte)."""
    return i8 if vt == "bool" else _IR[vt]


# -- the table -------------------------------------------------------------------------------------------------------


class ArgKind(Enum):
    ROWS = "rows"
    ARRAY = "array"
    CSR = "csr"
    F64 = "f64"
    I64 = "i64"
    U64 = "u64"


class Slot(NamedTuple):
    """One value the Python side passes: what it is (`part`), its ctypes type and the entry's LLVM type (`ptr`:
    a numpy array object, whose data pointer the entry passes on)."""

    part: str
    ctype: type
    llvm: str


SLOTS: dict[ArgKind, tuple[Slot, ...]] = {
    ArgKind.ROWS: (Slot("rows", ctypes.c_int64, "i64"),),
    ArgKind.ARRAY: (Slot("array", ctypes.py_object, "ptr"),),
    ArgKind.CSR: (
        Slot("data", ctypes.py_object, "ptr"),
        Slot("indices", ctypes.py_object, "ptr"),
        Slot("indptr", ctypes.py_object, "ptr"),
        Slot("flags", ctypes.c_int64, "i64"),
    ),
    ArgKind.F64: (Slot("value", ctypes.c_double, "f64"),),
    ArgKind.I64: (Slot("value", ctypes.c_int64, "i64"),),
    ArgKind.U64: (Slot("value", ctypes.c_uint64, "i64"),),
}
STATUS = Slot("status", ctypes.c_int64, "i64")
"""The kernel's result: 0, or non-zero when the Python body must compute the batch (an error to raise, a domain
numpy honours differently)."""

CSR_INDEX64 = 1
"""Flags bit: the CSR index arrays are int64 (else int32)."""
CSR_ALL_ONES = ALL_ONES_FLAG
"""Flags bit: every stored value is 1.0 (a pattern matrix: a float kernel reads the constant instead); the runtime
computes it (`runtime.vectorized.kernel.all_ones`)."""


def _memref(t: Attribute) -> MemRefType:
    return MemRefType(t, [DYNAMIC_INDEX])


def _slot_kernel_types(slot: Slot, vt: str) -> list[Attribute]:
    """The kernel parameters a slot becomes (index arrays: an i32 and an i64 view of the same data)."""
    if slot.part == "rows":
        return [IndexType()]
    if slot.part in ("array", "data"):
        return [_memref(storage_type(vt))]
    if slot.part in ("indices", "indptr"):
        return [_memref(i32), _memref(i64)]
    if slot.part == "value":
        return [f64 if vt in FLOAT_VTS else i64]
    return [i64]


class Param(NamedTuple):
    kind: ArgKind
    vt: str


def kernel_types(params: tuple[Param, ...]) -> list[Attribute]:
    """The xDSL kernel function's parameter types, in order."""
    return [t for p in params for slot in SLOTS[p.kind] for t in _slot_kernel_types(slot, p.vt)]


def entry_types(kinds: tuple[ArgKind, ...]) -> list[str]:
    """The LLVM parameter types of the Python-facing entry (`ptr`, `i64`, `f64`)."""
    return [slot.llvm for k in kinds for slot in SLOTS[k]]


def forwarded(kinds: tuple[ArgKind, ...]) -> list[tuple[int, bool]]:
    """For each kernel parameter: the entry parameter it comes from, and whether the kernel gets that array
    object's data pointer (rather than the value itself)."""
    out: list[tuple[int, bool]] = []
    pos = 0
    for k in kinds:
        for slot in SLOTS[k]:
            views = 2 if slot.part in ("indices", "indptr") else 1
            out += [(pos, slot.llvm == "ptr")] * views
            pos += 1
    return out


def ctypes_types(kinds: tuple[ArgKind, ...]) -> list[type]:
    """The entry's ctypes parameter types (`ctypes.CFUNCTYPE(STATUS.ctype, *ctypes_types(...))`)."""
    return [slot.ctype for k in kinds for slot in SLOTS[k]]


def fallback_reason(op: Operation) -> str | None:
    """Why the lowering gave `op` no kernel (its `daphne.native` attribute), or None."""
    attr = op.attributes.get(NATIVE_FALLBACK_ATTR)
    return attr.data.removeprefix("fallback: ") if isinstance(attr, StringAttr) else None


def kernel_symbol(op: Operation) -> str | None:
    """The symbol of a pipeline's kernel module, or None (no native kernel)."""
    attr = op.attributes.get(NATIVE_KERNEL_ATTR)
    return attr.root_reference.data if isinstance(attr, SymbolRefAttr) else None


def encode(params: tuple[Param, ...]) -> ArrayAttr[StringAttr]:
    return ArrayAttr([StringAttr(p.kind.value) for p in params])


def decode(attr: Attribute) -> tuple[ArgKind, ...]:
    assert isinstance(attr, ArrayAttr), f"{ABI_ATTR} must be an array of kinds"
    return tuple(ArgKind(a.data) for a in attr.data)  # type: ignore[attr-defined]
