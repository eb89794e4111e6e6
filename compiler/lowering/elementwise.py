"""Per-element semantics of the runtime kernels, emitted as `arith`/`math` ops (plus `llvm.frem`).

Every function reproduces what `runtime/kernels/ew_binary.py`, `ew_unary.py`, `agg.py` and
`runtime/values.cast_matrix` compute with numpy on x86-64, bit for bit:

- integers wrap; `/` truncates (a division by zero is an *error*: the kernel reports it and the wrapper reruns the
  Python body, which raises DAPHNE's message); `INT_MIN / -1` wraps like numpy instead of trapping like `idiv`;
- `%` is fmod in double and `^` is `x * x` (numpy's fast path for a scalar exponent 2; any other exponent is
  computed by numpy's SIMD pow, so the kernel reports "fall back" for it);
- float -> int conversions reproduce `cvttsd2si` (`values.float_array_to_int`): out of range or NaN gives the
  "integer indefinite" value, written as compares and selects because LLVM's `fptosi` would be poison there;
- comparisons and logical ops give 0/1 of the result type; min/max are `b < a ? b : a` / `a < b ? b : a`.

Error conditions (i1) are collected in the builder's current scope; the loop generator ORs them into the
kernel's status.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from xdsl.dialects import arith, llvm, math, memref
from xdsl.dialects.arith import Arith
from xdsl.dialects.builtin import (
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    f32,
    f64,
    i8,
    i32,
    i64,
)
from xdsl.dialects.math import Math
from xdsl.ir import Attribute, Block, Operation, SSAValue

from daphnec.compiler.lowering import ew_kinds
from daphnec.compiler.lowering.abi import ir_type
from daphnec.dialects.value_types import FLOAT_VTS, VALUE_TYPES

SIGNED_VTS = frozenset(n for n, vt in VALUE_TYPES.items() if vt.kind == "int" and vt.signed)

_WIDTH = {n: vt.bits for n, vt in VALUE_TYPES.items() if vt.kind in ("int", "bool")}

FAST = arith.FastMathFlagsAttr(("reassoc", "nsz"))
"""Flags of a float sum that may be reassociated (and so vectorised): full aggregations only."""


def is_float(vt: str) -> bool:
    return vt in FLOAT_VTS


# ---------------------------------------------------------------------------------------------------------------------
# Builder: an insertion point with scopes (memoised element values and error conditions per block)
# ---------------------------------------------------------------------------------------------------------------------


@dataclass
class Scope:
    block: Block
    memo: dict[object, SSAValue] = field(default_factory=dict)
    errors: list[SSAValue] = field(default_factory=list)


class Builder:
    """Appends ops to the innermost scope's block; constants go to the top of the function's entry block, so
    they dominate every loop and are emitted once."""

    def __init__(self, entry: Block):
        self.entry = entry
        self.scopes = [Scope(entry)]
        self._consts: dict[tuple[str, object], SSAValue] = {}
        self._first_const: Operation | None = None

    @property
    def block(self) -> Block:
        return self.scopes[-1].block

    def add(self, op: Operation) -> SSAValue:
        self.block.add_op(op)
        return op.results[0]

    def emit(self, op: Operation) -> Operation:
        self.block.add_op(op)
        return op

    @contextmanager
    def at_entry(self) -> Iterator[None]:
        """Emit into the entry block (its end is right before the loop under construction) with its scope: for
        loop invariants, which then dominate every loop and are computed once."""
        saved = self.scopes
        self.scopes = saved[:1]
        try:
            yield
        finally:
            self.scopes = saved

    def push(self, block: Block) -> None:
        self.scopes.append(Scope(block))

    def pop(self) -> Scope:
        return self.scopes.pop()

    def lookup(self, key: object) -> SSAValue | None:
        for s in reversed(self.scopes):
            v = s.memo.get(key)
            if v is not None:
                return v
        return None

    def remember(self, key: object, value: SSAValue) -> SSAValue:
        self.scopes[-1].memo[key] = value
        return value

    def error(self, cond: SSAValue) -> None:
        """Record a condition under which the kernel must report failure (the wrapper reruns the Python body)."""
        self.scopes[-1].errors.append(cond)

    def const(self, t: Attribute, value: int | float) -> SSAValue:
        key: tuple[str, object] = (str(t), struct.pack("<d", value) if isinstance(value, float) else value)
        c = self._consts.get(key)
        if c is None:
            if isinstance(t, IndexType):
                attr: Attribute = IntegerAttr(int(value), t)
            elif t in (f64, f32):
                attr = FloatAttr(float(value), t)  # type: ignore[arg-type]
            else:
                attr = IntegerAttr(_signed(int(value), t.width.data), t)  # type: ignore[attr-defined]
            op = arith.ConstantOp(attr)
            if self.entry.first_op is None:
                self.entry.add_op(op)
            else:
                self.entry.insert_op_before(op, self.entry.first_op)
            c = self._consts[key] = op.result
        return c

    def vconst(self, vt: str, value: int | float) -> SSAValue:
        return self.const(ir_type(vt), float(value) if is_float(vt) else int(value))

    def index(self, value: int) -> SSAValue:
        return self.const(IndexType(), value)


def _signed(v: int, width: int) -> int:
    """Two's complement: IntegerAttr of a signless type wants a value in the signed range (i1: 0 or -1)."""
    v &= (1 << width) - 1
    return v - (1 << width) if v >> (width - 1) else v


# ---------------------------------------------------------------------------------------------------------------------
# Small op helpers
# ---------------------------------------------------------------------------------------------------------------------


def cmp(b: Builder, vt: str, pred: str, x: SSAValue, y: SSAValue) -> SSAValue:
    """Ordered float compare, or signed/unsigned integer compare, by value type (`pred`: eq ne lt le gt ge)."""
    if is_float(vt):
        return b.add(arith.CmpfOp(x, y, "une" if pred == "ne" else "o" + pred))
    if pred in ("eq", "ne"):
        return b.add(arith.CmpiOp(x, y, pred))
    return b.add(arith.CmpiOp(x, y, ("s" if vt in SIGNED_VTS else "u") + pred))


def select(b: Builder, c: SSAValue, x: SSAValue, y: SSAValue) -> SSAValue:
    return b.add(arith.SelectOp(c, x, y))


def is_nan(b: Builder, x: SSAValue) -> SSAValue:
    return b.add(arith.CmpfOp(x, x, "uno"))


def nonzero(b: Builder, vt: str, x: SSAValue) -> SSAValue:
    """`x != 0` (a NaN is non-zero)."""
    if vt == "bool":
        return x
    return cmp(b, vt, "ne", x, b.vconst(vt, 0))


def load(b: Builder, ref: SSAValue, idx: SSAValue, vt: str) -> SSAValue:
    v = b.add(memref.LoadOp.get(ref, [idx]))
    return b.add(arith.CmpiOp(v, b.const(i8, 0), "ne")) if vt == "bool" else v


def store(b: Builder, value: SSAValue, ref: SSAValue, idx: SSAValue, vt: str) -> None:
    if vt == "bool":
        value = b.add(arith.ExtUIOp(value, i8))
    b.emit(memref.StoreOp.get(value, ref, [idx]))


# ---------------------------------------------------------------------------------------------------------------------
# Casts
# ---------------------------------------------------------------------------------------------------------------------

_TWO63, _TWO64, _TWO31 = 9223372036854775808.0, 18446744073709551616.0, 2147483648.0


def cast(b: Builder, x: SSAValue, src: str, dst: str, scalar: bool = False) -> SSAValue:
    """`values.cast_matrix` (or, with `scalar`, `values.cast_scalar`: int -> f32 rounds through double)."""
    if src == dst or (ir_type(src) == ir_type(dst) and not is_float(src) and src != "bool" and dst != "bool"):
        return x
    if dst == "bool":
        return nonzero(b, src, x)
    if src == "bool":
        if is_float(dst):
            return b.add(arith.UIToFPOp(x, ir_type(dst)))  # type: ignore[arg-type]
        return b.add(arith.ExtUIOp(x, ir_type(dst)))
    if not is_float(src) and not is_float(dst):
        return _int_to_int(b, x, src, dst)
    if not is_float(src):
        if scalar and dst == "f32":
            return b.add(arith.TruncFOp(cast(b, x, src, "f64"), f32))
        conv = arith.SIToFPOp if src in SIGNED_VTS else arith.UIToFPOp
        return b.add(conv(x, ir_type(dst)))  # type: ignore[arg-type]
    if is_float(dst):
        return b.add((arith.ExtFOp if dst == "f64" else arith.TruncFOp)(x, ir_type(dst)))  # type: ignore[arg-type]
    return float_to_int(b, x, src, dst)


def _int_to_int(b: Builder, x: SSAValue, src: str, dst: str) -> SSAValue:
    ws, wd = _WIDTH[src], _WIDTH[dst]
    if ws == wd:
        return x
    if ws > wd:
        return b.add(arith.TruncIOp(x, ir_type(dst)))  # type: ignore[arg-type]
    return b.add((arith.ExtSIOp if src in SIGNED_VTS else arith.ExtUIOp)(x, ir_type(dst)))  # type: ignore[arg-type]


def float_to_int(b: Builder, x: SSAValue, src: str, dst: str) -> SSAValue:
    """`values.float_array_to_int`: cvttsd2si with a 64-bit destination (si64, ui32 keep its low bits), GCC's
    two-range sequence for ui64, a 32-bit destination for si32/si8/ui8 (the narrow ones keep the low bits)."""
    x = b.add(arith.ExtFOp(x, f64)) if src == "f32" else x
    if dst in ("si64", "ui64", "index", "ui32"):
        ok = b.add(arith.AndIOp(_fge(b, x, -_TWO63), _flt(b, x, _TWO63)))
        lo = select(b, ok, b.add(arith.FPToSIOp(x, i64)), b.const(i64, -(1 << 63)))
        if dst == "si64":
            return lo
        if dst == "ui32":
            return b.add(arith.TruncIOp(lo, i32))
        hi = select(b, _flt(b, x, _TWO64), b.add(arith.FPToUIOp(x, i64)), b.const(i64, 0))
        return select(b, _fge(b, x, _TWO63), hi, lo)
    ok32 = b.add(arith.AndIOp(_fgt(b, x, -2147483649.0), _flt(b, x, _TWO31)))
    r = select(b, ok32, b.add(arith.FPToSIOp(x, i32)), b.const(i32, -(1 << 31)))
    return r if dst == "si32" else b.add(arith.TruncIOp(r, i8))


def _fge(b: Builder, x: SSAValue, c: float) -> SSAValue:
    return b.add(arith.CmpfOp(x, b.const(f64, c), "oge"))


def _flt(b: Builder, x: SSAValue, c: float) -> SSAValue:
    return b.add(arith.CmpfOp(x, b.const(f64, c), "olt"))


def _fgt(b: Builder, x: SSAValue, c: float) -> SSAValue:
    return b.add(arith.CmpfOp(x, b.const(f64, c), "ogt"))


# ---------------------------------------------------------------------------------------------------------------------
# Element-wise ops: the kinds of `ew_kinds`, each an MLIR op or one of the emitters below
# ---------------------------------------------------------------------------------------------------------------------

_OPS: dict[str, type[Operation]] = {op.name: op for d in (Arith, Math) for op in d.operations}
"""MLIR op name -> op class, for the one-op entries of `ew_kinds`."""

BinaryEmitter = Callable[[Builder, str, str, SSAValue, SSAValue], tuple[SSAValue, str]]
"""(builder, kind, operand type, x, y) -> (the raw result, its value type)."""


def binary(b: Builder, kind: str, ovt: str, resvt: str, x: SSAValue, y: SSAValue) -> SSAValue:
    """`x kind y` for operands already cast to `ovt`; the result is cast to `resvt` like the matrix kernel
    (`ew_binary._matrix_core` and its casts)."""
    name = ew_kinds.BINARY[kind][0 if is_float(ovt) else 1]
    if ovt == "bool" and name not in ANY_TYPE:  # bool arithmetic happens in int64 (`_int_core(op, "si64")`)
        x, y, ovt = cast(b, x, "bool", "si64"), cast(b, y, "bool", "si64"), "si64"
    if name in _OPS:
        raw, raw_vt = b.add(_OPS[name](x, y)), ovt
    else:
        raw, raw_vt = _BINARY[name](b, kind, ovt, x, y)
    return cast(b, raw, raw_vt, resvt)


_CMP_PRED = {"eq": "eq", "neq": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge"}
_LOGICAL = {"and": arith.AndIOp, "or": arith.OrIOp, "xor": arith.XOrIOp}


def _square(b: Builder, vt: str, x: SSAValue, y: SSAValue) -> SSAValue:
    """numpy's `power` with a scalar exponent 2 is `x * x`; any other exponent goes to its SIMD pow (fallback)."""
    b.error(b.add(arith.CmpfOp(y, b.vconst(vt, 2.0), "une")))
    return b.add(arith.MulfOp(x, x))


def _int_square(b: Builder, vt: str, x: SSAValue, y: SSAValue) -> SSAValue:
    fx, fy = cast(b, x, vt, "f64"), cast(b, y, vt, "f64")
    return float_to_int(b, _square(b, "f64", fx, fy), "f64", vt)


def _int_mod(b: Builder, vt: str, x: SSAValue, y: SSAValue) -> SSAValue:
    """fmod in double (`%` of the runtime kernel); a zero divisor is an error."""
    b.error(cmp(b, vt, "eq", y, b.vconst(vt, 0)))
    r = b.add(llvm.FRemOp(cast(b, x, vt, "f64"), cast(b, y, vt, "f64")))
    return float_to_int(b, r, "f64", vt)


def _trunc_div(b: Builder, vt: str, x: SSAValue, y: SSAValue) -> SSAValue:
    """C division; the divisor is made safe (0 -> 1, -1 -> 1) so `idiv` never traps, and x / -1 is computed as
    the wrapping negation numpy's floor_divide gives."""
    zero = cmp(b, vt, "eq", y, b.vconst(vt, 0))
    b.error(zero)
    one = b.vconst(vt, 1)
    if vt not in SIGNED_VTS:
        return b.add(arith.DivUIOp(x, select(b, zero, one, y)))
    m1 = cmp(b, vt, "eq", y, b.vconst(vt, -1))
    q = b.add(arith.DivSIOp(x, select(b, b.add(arith.OrIOp(zero, m1)), one, y)))
    return select(b, m1, b.add(arith.SubiOp(b.vconst(vt, 0), x)), q)


def _same_type(fn: Callable[[Builder, str, SSAValue, SSAValue], SSAValue]) -> BinaryEmitter:
    return lambda b, kind, vt, x, y: (fn(b, vt, x, y), vt)


_BINARY: dict[str, BinaryEmitter] = {
    "compare": lambda b, kind, vt, x, y: (cmp(b, vt, _CMP_PRED[kind], x, y), "bool"),
    "min": lambda b, kind, vt, x, y: (select(b, cmp(b, vt, "lt", y, x), y, x), vt),
    "max": lambda b, kind, vt, x, y: (select(b, cmp(b, vt, "lt", x, y), y, x), vt),
    "logical": lambda b, kind, vt, x, y: (b.add(_LOGICAL[kind](nonzero(b, vt, x), nonzero(b, vt, y))), "bool"),
    "square": _same_type(_square),
    "frem": _same_type(lambda b, vt, x, y: b.add(llvm.FRemOp(x, y))),
    "trunc_div": _same_type(_trunc_div),
    "int_square": _same_type(_int_square),
    "int_mod": _same_type(_int_mod),
}
ANY_TYPE = frozenset(("compare", "min", "max", "logical"))
"""Emitters that take bool operands as they are (comparisons and logical ops give 0/1, min/max pick one)."""


def unary(b: Builder, kind: str, vin: str, vout: str, x: SSAValue) -> SSAValue:
    """`kind(x)` (`ew_unary._build_matrix`): float math in the float result type (ints are cast first, for the
    kinds without an integer entry), integer ops in the input type."""
    fl, it = ew_kinds.UNARY[kind]
    if it is None or is_float(vin):
        calc = vout if is_float(vout) else ("f64" if not is_float(vin) else vin)
        xc = cast(b, x, vin, calc)
        r = b.add(_OPS[fl](xc)) if fl in _OPS else _UNARY[fl](b, calc, xc)
        return cast(b, r, calc, vout)
    return cast(b, _UNARY[it](b, vin, x), vin, vout)


def _f_isnan(b: Builder, vt: str, a: SSAValue) -> SSAValue:
    return b.add(arith.UIToFPOp(is_nan(b, a), ir_type(vt)))  # type: ignore[arg-type]


def _f_sign(b: Builder, vt: str, a: SSAValue) -> SSAValue:
    """np.sign(A) + 0 with NaN -> +NaN: 1, -1, +0 or +NaN."""
    pos_nan = struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000000))[0]
    rest = select(b, is_nan(b, a), b.vconst(vt, pos_nan), b.vconst(vt, 0.0))
    rest = select(b, cmp(b, vt, "lt", a, b.vconst(vt, 0.0)), b.vconst(vt, -1.0), rest)
    return select(b, cmp(b, vt, "gt", a, b.vconst(vt, 0.0)), b.vconst(vt, 1.0), rest)


def _f_round(b: Builder, vt: str, a: SSAValue) -> SSAValue:
    """`ew_unary._round_array`: t = trunc(a); t + (|a - t| >= 0.5 ? sign(a) : 0), with a's sign."""
    t = b.add(math.TruncOp(a))
    frac = b.add(math.AbsFOp(b.add(arith.SubfOp(a, t))))
    half = cmp(b, vt, "ge", frac, b.vconst(vt, 0.5))
    sgn = select(b, cmp(b, vt, "gt", a, b.vconst(vt, 0.0)), b.vconst(vt, 1.0), b.vconst(vt, -1.0))
    r = b.add(arith.AddfOp(t, select(b, half, sgn, b.vconst(vt, 0.0))))
    return b.add(math.CopySignOp(r, a))


def _f_sqrt(b: Builder, vt: str, a: SSAValue) -> SSAValue:
    b.error(cmp(b, vt, "lt", a, b.vconst(vt, 0.0)))  # the domain check raises for a < -0
    return b.add(math.SqrtOp(a))


def _i_abs(b: Builder, vt: str, x: SSAValue) -> SSAValue:
    if vt not in SIGNED_VTS:
        return x
    zero = b.vconst(vt, 0)
    return select(b, cmp(b, vt, "lt", x, zero), b.add(arith.SubiOp(zero, x)), x)


def _i_sign(b: Builder, vt: str, x: SSAValue) -> SSAValue:
    zero = b.vconst(vt, 0)
    pos = select(b, cmp(b, vt, "ne", x, zero), b.vconst(vt, 1), zero)
    return select(b, cmp(b, vt, "lt", x, zero), b.vconst(vt, -1), pos) if vt in SIGNED_VTS else pos


def _integer(fn: Callable[[Builder, str, SSAValue], SSAValue]) -> Callable[[Builder, str, SSAValue], SSAValue]:
    """An integer emitter; a bool is its own result (its only values are 0 and 1)."""
    return lambda b, vt, x: x if vt == "bool" else fn(b, vt, x)


_UNARY: dict[str, Callable[[Builder, str, SSAValue], SSAValue]] = {
    "isnan": _f_isnan,
    "sign": _f_sign,
    "round": _f_round,
    "sqrt": _f_sqrt,
    "neg": _integer(lambda b, vt, x: b.add(arith.SubiOp(b.vconst(vt, 0), x))),
    "int_abs": _integer(_i_abs),
    "int_sign": _integer(_i_sign),
    "through_f64": _integer(lambda b, vt, x: cast(b, cast(b, x, vt, "f64"), "f64", vt)),  # round floor ceil
    "zero": lambda b, vt, x: b.vconst(vt, 0),  # isNan of an integer (bool too)
}


# ---------------------------------------------------------------------------------------------------------------------
# Aggregation folds (`agg.py`)
# ---------------------------------------------------------------------------------------------------------------------


def fold(b: Builder, agg: str, vt: str, acc: SSAValue, x: SSAValue, reassoc: bool = False) -> SSAValue:
    """One step of DAPHNE's sequential fold: sum (bool: or), `std::min` / `std::max` (NaNs after the first are
    skipped, the first of equal values is kept)."""
    if agg == "sum":
        if is_float(vt):
            return b.add(arith.AddfOp(acc, x, FAST if reassoc else None))
        return b.add((arith.OrIOp if vt == "bool" else arith.AddiOp)(acc, x))
    if agg == "min":
        return select(b, cmp(b, vt, "lt", x, acc), x, acc)
    return select(b, cmp(b, vt, "lt", acc, x), x, acc)


def np_fold(b: Builder, agg: str, vt: str, acc: SSAValue, x: SSAValue) -> SSAValue:
    """`np.minimum(acc, x)` / `np.maximum(acc, x)` on NaN-free values: ties give `x` (the CSR folds)."""
    keep = cmp(b, vt, "lt" if agg == "min" else "gt", acc, x)
    return select(b, keep, acc, x)


def neutral(vt: str, agg: str) -> int | float:
    """DAPHNE's neutral element of a full aggregation (`agg._neutral`)."""
    if agg == "sum":
        return 0.0 if is_float(vt) else 0
    if is_float(vt):
        return float("inf") if agg == "min" else float("-inf")
    if vt == "bool":
        return 1 if agg == "min" else 0
    w = _WIDTH[vt]
    if vt in SIGNED_VTS:
        return (1 << (w - 1)) - 1 if agg == "min" else -(1 << (w - 1))
    return (1 << w) - 1 if agg == "min" else 0


def index_type() -> Attribute:
    return IndexType()


def int_type(width: int) -> IntegerType:
    return IntegerType(width)
