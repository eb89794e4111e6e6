"""What a kernel selector returns, and the pieces selectors share: operand casts and result value types.

A `KernelSpec` names a Python callable plus one cast per operand (DAPHNE's `CastArgsToResType`: operands are
converted to the kernel's operand type first). A `Kernel` is an entry of the one table that maps op classes to
their selectors (`compiler/selection/table.py`); the category modules (`compiler/select_*.py`) hold the selectors
whose choice depends on operand types and import only this module, so the table can import all of them.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass

from xdsl.ir import Attribute, Operation

from daphnec.dialects.errors import CompileError
from daphnec.dialects.locations import loc_of
from daphnec.dialects.types import is_matrix, is_unknown, vt_name
from daphnec.dialects.value_types import INT_RANGES
from daphnec.runtime import values

Cast = Callable[[object], object] | None
Selector = Callable[[Operation], "KernelSpec"]


@dataclass(frozen=True)
class KernelSpec:
    fn: Callable[..., object]
    arg_casts: tuple[Cast, ...]
    name: str
    """The kernel's name in generated code."""
    inline: str | None = None
    """A template of Python statements computing the op in the generated code instead of a call to `fn`, where
    that is exactly what `fn` returns (scalar arithmetic, comparisons, casts: a call costs more than the
    operation). `{r}` is the result's name, `{0}`, `{1}`, ... the operands (after `arg_casts`), `{h}` the global
    bound to the object paired with `h` in `helpers` (compiler/host/generator.py). An inlined op is no kernel
    call: `--statistics` does not list it."""
    helpers: tuple[tuple[str, object], ...] = ()


@dataclass(frozen=True)
class Kernel:
    """How an op class gets its kernel: `select(op)` for the op's inferred types; `csr` says whether the kernels
    take CSR operands as they are (they have CSR paths; a predicate when that depends on the op's types) -- every
    other kernel gets CSR operands densified (`compiler/selection/representations.py`)."""

    select: Selector
    csr: bool | Callable[[Operation], bool] = False

    def takes_csr(self, op: Operation) -> bool:
        return self.csr(op) if callable(self.csr) else self.csr


# --- casts ---------------------------------------------------------------------------------------------------------


def _holds(src: str, dst: str) -> bool:
    """Every integer of value type `src` is one of `dst` unchanged. DAPHNE's `index` is a size_t, but sizes are
    computed in si64: a negative si64 size passes to `index` unchanged, so the kernel reports it as negative."""
    if {src, dst} == {"si64", "index"}:
        return True
    if src not in INT_RANGES or dst not in INT_RANGES:
        return False
    (lo, hi), (dlo, dhi) = INT_RANGES[src], INT_RANGES[dst]
    return dlo <= lo and hi <= dhi


def scalar_cast(src: str, dst: str) -> Cast:
    """A converter between scalar value types, or None when the Python value needs no change."""
    if src == dst or _holds(src, dst):
        return None
    return functools.partial(values.cast_scalar, vt=dst)


def matrix_cast(src: str, dst: str) -> Cast:
    if src == dst:
        return None
    return functools.partial(values.cast_matrix, vt=dst)


def value_cast(t: Attribute, vt: str) -> Cast:
    """Convert a scalar or matrix of type `t` to value type `vt` (keeping its data type)."""
    src = vt_name(t)
    if src is None:
        raise CompileError(f"cannot determine the value type of {t}")
    return matrix_cast(src, vt) if is_matrix(t) else scalar_cast(src, vt)


def known_vt(op: Operation, t: Attribute) -> str:
    """The value type of an operand or result type of `op`; a compile error if inference left it unknown."""
    vt = vt_name(t)
    if vt is None or is_unknown(t):
        raise CompileError(f"{op.name}: the type of an operand or result could not be inferred ({t})", loc_of(op))
    return vt


# --- kernels without a type-dependent choice ---------------------------------------------------------------------

KernelRef = Callable[..., object] | str
"""A kernel function, or the `module.function` name of one in `runtime/kernels/`, imported when an op first needs
it (a run imports only the kernel modules its script uses)."""


def _resolve(ref: KernelRef) -> Callable[..., object]:
    if callable(ref):
        return ref
    module, _, name = ref.rpartition(".")
    return getattr(importlib.import_module(f"daphnec.runtime.kernels.{module}"), name)


def _name(ref: KernelRef) -> str:
    return ref.rpartition(".")[2] if isinstance(ref, str) else ref.__name__


def fixed(ref: KernelRef, name: str | None = None, csr: bool = False) -> Kernel:
    """One kernel for every instance of the op, operands passed unchanged."""
    label = name or _name(ref)
    return Kernel(lambda op: KernelSpec(_resolve(ref), (None,) * len(op.operands), label), csr)


def with_properties(ref: KernelRef, *props: str) -> Kernel:
    """One kernel for every instance of the op, told the op's integer properties `props` as keywords."""
    label = _name(ref)

    def select(op: Operation) -> KernelSpec:
        kw = {p: getattr(op, p).data for p in props}
        return KernelSpec(functools.partial(_resolve(ref), **kw), (None,) * len(op.operands), label)

    return Kernel(select)


def result_typed(
    ref: KernelRef, name: str | None = None, cast: int = 0, vt_arg: bool = True, csr: bool = False
) -> Kernel:
    """A kernel told the result's value type (keyword `vt`, if `vt_arg`) whose first `cast` operands are cast to
    that type first."""
    label = name or _name(ref)

    def select(op: Operation) -> KernelSpec:
        vt = known_vt(op, op.results[0].type)
        casts = tuple(value_cast(v.type, vt) if i < cast else None for i, v in enumerate(op.operands))
        fn = _resolve(ref)
        return KernelSpec(functools.partial(fn, vt=vt) if vt_arg else fn, casts, label)

    return Kernel(select, csr)
