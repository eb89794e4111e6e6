"""Kernel selection: which runtime kernel implements an IR op, for its inferred types (DAPHNE's kernel lowering).

Selection happens once, at compile time. The result names a Python callable plus per-operand casts (DAPHNE's
`CastArgsToResType`: operands are converted to the kernel's operand type first). The same selection serves the
host code generator and constant folding, so a folded constant is exactly what the kernel would have computed.

Two ways for an op to get its kernel:
- declaratively, on the op class: `KERNEL = "module.function"` (a function in `runtime.kernels.<module>`),
  optionally `KERNEL_VT = True` (the result's value type is passed as keyword `vt`) and `KERNEL_CASTS = n` (the
  first n operands are cast to that value type) — enough for most builtins;
- with a selector function registered by `@selects(OpClass)` in a category module (`compiler/select_*.py`) when
  the choice depends on the operand types (dense vs CSR, scalar vs matrix, ...).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from xdsl.ir import Attribute, Operation

from daphnec.dialects import ops
from daphnec.dialects.errors import CompileError
from daphnec.dialects.locations import loc_of
from daphnec.dialects.ops_paramserv import ParamservOp
from daphnec.dialects.types import FrameType, is_matrix, is_scalar, is_unknown, vt_name
from daphnec.runtime import printing, values
from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.kernels import (
    agg,
    control,
    datagen,
    ew_binary,
    ew_unary,
    indexing,
    matmul,
    meta,
    misc,
    paramserv,
    reorg,
    secondorder,
)  # fmt: skip

Cast = Callable[[object], object] | None


class FoldError(Exception):
    """Constant folding found an error DAPHNE reports at compile time (integer division by zero)."""


@dataclass(frozen=True)
class KernelSpec:
    fn: Callable[..., object]
    arg_casts: tuple[Cast, ...]
    name: str


# --- casts ---------------------------------------------------------------------------------------------------------

_WIDER_INT = {
    "si8": {"si8", "si32", "si64"},
    "si32": {"si32", "si64"},
    "ui8": {"ui8", "ui32", "ui64", "si32", "si64"},
    "ui32": {"ui32", "ui64", "si64"},
    "si64": {"si64", "index"},
    "index": {"index", "si64", "ui64"},
    "ui64": {"ui64", "index"},
}


def scalar_cast(src: str, dst: str) -> Cast:
    """A converter between scalar value types, or None when the Python value needs no change."""
    if src == dst or dst in _WIDER_INT.get(src, ()):
        return None
    return functools.partial(_cast_to, vt=dst)


def _cast_to(x: object, vt: str) -> object:
    return values.cast_scalar(x, vt)


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


# --- selection -----------------------------------------------------------------------------------------------------


def _vt(t: Attribute, op: Operation) -> str:
    vt = vt_name(t)
    if vt is None or is_unknown(t):
        raise CompileError(f"{op.name}: the type of an operand or result could not be inferred ({t})", loc_of(op))
    return vt


def _spec(fn: Callable[..., object], casts: list[Cast] | tuple[Cast, ...], name: str) -> KernelSpec:
    return KernelSpec(fn, tuple(casts), name)


def is_noop_cast(op: Operation) -> bool:
    """A cast that changes only static information (shape, representation, a wider integer type)."""
    if not isinstance(op, ops.CastOp):
        return False
    src, dst = op.arg.type, op.res.type
    if is_matrix(src) and is_matrix(dst):
        return vt_name(src) == vt_name(dst) and vt_name(src) is not None and src.is_sparse == dst.is_sparse
    if is_scalar(src) and is_scalar(dst):
        return scalar_cast(vt_name(src), vt_name(dst)) is None  # type: ignore[arg-type]
    return False


def _select_cast(op: ops.CastOp) -> KernelSpec:
    from daphnec.compiler.select_frame import is_frame_or_list_cast, select_cast

    if is_frame_or_list_cast(op):
        return select_cast(op)
    src, dst = op.arg.type, op.res.type
    dvt = _vt(dst, op) if not isinstance(dst, FrameType) else None
    if is_scalar(src) and is_scalar(dst):
        conv = scalar_cast(_vt(src, op), dvt)  # type: ignore[arg-type]
        return _spec(conv or _identity, [None], "cast")
    if is_matrix(src) and is_matrix(dst):
        return _spec(matrix_cast(_vt(src, op), dvt) or _identity, [None], "cast")  # type: ignore[arg-type]
    if is_scalar(src) and is_matrix(dst):
        return _spec(
            functools.partial(datagen.fill, rows=1, cols=1, vt=dvt), [scalar_cast(_vt(src, op), dvt)], "as_matrix"
        )  # type: ignore[arg-type]
    if is_matrix(src) and is_scalar(dst):
        conv = scalar_cast(_vt(src, op), dvt)  # type: ignore[arg-type]
        fn = meta.as_scalar if conv is None else _compose(conv, meta.as_scalar)
        return _spec(fn, [None], "as_scalar")
    raise CompileError(f"unsupported cast from {src} to {dst}", loc_of(op))


def _identity(x: object) -> object:
    return x


def _compose(f: Callable[[object], object], g: Callable[[object], object]) -> Callable[[object], object]:
    return lambda x: f(g(x))


def _ew_binary(op: ops.EwBinaryOp) -> KernelSpec:
    lt, rt, res = op.lhs.type, op.rhs.type, op.res.type
    lvt, rvt, resvt = _vt(lt, op), _vt(rt, op), _vt(res, op)
    kind = "concat" if op.KIND == "add" and resvt == "str" else op.KIND
    ovt = ew_binary.operand_vt(kind, lvt, rvt)
    casts = [value_cast(lt, ovt), value_cast(rt, ovt)]
    try:
        if is_scalar(lt) and is_scalar(rt):
            fn = ew_binary.scalar_kernel(kind, ovt, resvt)
        else:
            fn = ew_binary.matrix_kernel(kind, ovt, resvt)
    except DaphneRuntimeError as e:
        raise CompileError(str(e), loc_of(op)) from e
    return _spec(fn, casts, f"ew_{kind}")


def _ew_unary(op: ops.EwUnaryOp) -> KernelSpec:
    t, res = op.arg.type, op.res.type
    vin, vout = _vt(t, op), _vt(res, op)
    try:
        fn = ew_unary.scalar_kernel(op.KIND, vin, vout) if is_scalar(t) else ew_unary.matrix_kernel(op.KIND, vin, vout)
    except DaphneRuntimeError as e:
        raise CompileError(str(e), loc_of(op)) from e
    return _spec(fn, [None], f"ew_{op.KIND}")


def _agg(op: ops.AggOp) -> KernelSpec:
    vin, vout = _vt(op.arg.type, op), _vt(op.res.type, op)
    if not is_matrix(op.arg.type):
        raise CompileError(f"{op.name}: the argument must be a matrix, got {op.arg.type}", loc_of(op))
    factory = {"all": agg.full_kernel, "row": agg.row_kernel, "col": agg.col_kernel}[op.AXIS]
    return _spec(factory(op.KIND, vin, vout), [None], f"{op.KIND}_{op.AXIS}")


def _with_vt(fn: Callable[..., object], op: Operation, name: str, n_cast: int = 0) -> KernelSpec:
    """A kernel taking the result value type as keyword `vt`; the first `n_cast` operands are cast to it."""
    vt = _vt(op.results[0].type, op)
    casts = [value_cast(v.type, vt) if i < n_cast else None for i, v in enumerate(op.operands)]
    return _spec(functools.partial(fn, vt=vt), casts, name)


def _matrix_literal(op: ops.MatrixLiteralOp) -> KernelSpec:
    vt = _vt(op.res.type, op)
    n = len(op.elems)

    def build(*args: object) -> object:
        return datagen.matrix_from_values(list(args[:n]), args[n], args[n + 1], vt)

    return _spec(build, [value_cast(e.type, vt) for e in op.elems] + [None, None], "matrix_literal")


def _create_frame(op: ops.CreateFrameOp) -> KernelSpec:
    from daphnec.runtime.frame import Frame

    n = len(op.cols)
    return _spec(lambda *a: Frame(list(a[:n]), list(a[n:])), [None] * len(op.operands), "create_frame")


def _cond(op: ops.CondOp) -> KernelSpec:
    res = op.res.type
    vt = _vt(res, op)
    casts = [None, value_cast(op.then_val.type, vt), value_cast(op.else_val.type, vt)]
    fn = control.cond_matrix if is_matrix(op.cond.type) else control.cond_scalar
    return _spec(fn, casts, "cond")


_SIMPLE_KERNELS: dict[type, tuple[Callable[..., object], str]] = {
    ops.SliceRowOp: (lambda x, lo, hi: indexing.extract(x, (lo, hi), None), "slice_row"),
    ops.SliceColOp: (lambda x, lo, hi: indexing.extract(x, None, (lo, hi)), "slice_col"),
    ops.ExtractRowOp: (lambda x, sel: indexing.extract(x, sel, None), "extract_row"),
    ops.ExtractColOp: (lambda x, sel: indexing.extract(x, None, sel), "extract_col"),
    ops.FilterRowOp: (indexing.filter_rows, "filter_row"),
    ops.FilterColOp: (indexing.filter_cols, "filter_col"),
    ops.InsertOp: (lambda x, v, rl, rh, cl, ch: indexing.insert(x, (rl, rh), (cl, ch), v), "insert"),
    ops.NumRowsOp: (meta.nrow, "nrow"),
    ops.NumColsOp: (meta.ncol, "ncol"),
    ops.NumCellsOp: (meta.ncell, "ncell"),
    ops.PrintOp: (printing.print_obj, "print"),
    ops.StopOp: (misc.stop, "stop"),
    ops.NowOp: (datagen.now, "now"),
    ops.TransposeOp: (reorg.transpose, "transpose"),
    ops.ReshapeOp: (reorg.reshape, "reshape"),
    ops.ForRangeOp: (control.for_range, "for_range"),
    ops.TypeOfOp: (misc.type_of, "type_of"),
}
"""Ops whose kernel needs no type-dependent choice: kernel and its name in the generated code."""


def _select_simple(op: Operation) -> KernelSpec | None:
    """Ops whose kernel needs no type-dependent choice."""
    entry = _SIMPLE_KERNELS.get(type(op))
    if entry is None:
        return None
    return _spec(entry[0], [None] * len(op.operands), entry[1])


SELECTORS: dict[type, Callable[[Operation], KernelSpec]] = {}
_SELECTOR_MODULES = (
    "daphnec.compiler.select_matrix",
    "daphnec.compiler.select_frame",
    "daphnec.compiler.select_io",
    "daphnec.compiler.sparsity",
)


def selects(*op_classes: type) -> Callable[[Callable[[Operation], KernelSpec]], Callable[[Operation], KernelSpec]]:
    """Register a selector function for op classes (used by the `compiler/select_*.py` category modules)."""

    def register(fn: Callable[[Operation], KernelSpec]) -> Callable[[Operation], KernelSpec]:
        for cls in op_classes:
            SELECTORS[cls] = fn
        return fn

    return register


@functools.cache
def _load_selector_modules() -> None:
    import importlib

    for name in _SELECTOR_MODULES:
        importlib.import_module(name)


def _declared(op: Operation) -> KernelSpec | None:
    """The kernel an op class names with `KERNEL = "module.function"`."""
    ref = getattr(type(op), "KERNEL", None)
    if ref is None:
        return None
    import importlib

    module, _, name = ref.rpartition(".")
    fn = getattr(importlib.import_module(f"daphnec.runtime.kernels.{module}"), name)
    n_cast = getattr(type(op), "KERNEL_CASTS", 0)
    if getattr(type(op), "KERNEL_VT", False) or n_cast:
        vt = _vt(op.results[0].type, op)
        casts = [value_cast(v.type, vt) if i < n_cast else None for i, v in enumerate(op.operands)]
        return _spec(functools.partial(fn, vt=vt) if getattr(type(op), "KERNEL_VT", False) else fn, casts, name)
    return _spec(fn, [None] * len(op.operands), name)


def select_kernel(op: Operation) -> KernelSpec:
    """The kernel and operand casts for an inferred daphne op (raises CompileError when none applies); kernels of
    ops with CSR (`rep[sparse]`) operands or results are adapted by `compiler.sparsity.adapt_kernel`."""
    from daphnec.compiler.sparsity import adapt_kernel

    return adapt_kernel(op, _select_by_types(op))


def _select_by_types(op: Operation) -> KernelSpec:
    _load_selector_modules()
    custom = SELECTORS.get(type(op))
    if custom is not None:
        return custom(op)
    declared = _declared(op)
    if declared is not None:
        return declared
    if isinstance(op, ops.CastOp):
        return _select_cast(op)
    if isinstance(op, ops.EwBinaryOp):
        return _ew_binary(op)
    if isinstance(op, ops.EwUnaryOp):
        return _ew_unary(op)
    if isinstance(op, ops.AggOp):
        return _agg(op)
    if isinstance(op, ops.MatrixLiteralOp):
        return _matrix_literal(op)
    if isinstance(op, ops.CreateFrameOp):
        return _create_frame(op)
    if isinstance(op, ops.CondOp):
        return _cond(op)
    if isinstance(op, ops.FillOp):
        return _with_vt(datagen.fill, op, "fill", n_cast=1)
    if isinstance(op, ops.SeqOp):
        return _with_vt(datagen.seq, op, "seq", n_cast=3)
    if isinstance(op, ops.RandMatrixOp):
        vt = _vt(op.res.type, op)
        casts = [None, None, value_cast(op.min.type, vt), value_cast(op.max.type, vt), None, None]
        return _spec(functools.partial(datagen.rand, vt=vt), casts, "rand")
    if isinstance(op, ops.MatMulOp):
        return _with_vt(matmul.matmul, op, "matmul", n_cast=2)
    if isinstance(op, ops.MapOp):
        return _spec(functools.partial(secondorder.map_matrix, vt=_vt(op.res.type, op)), [None], "map")
    if isinstance(op, ParamservOp):
        return _spec(paramserv.paramserv, [None] * len(op.args), "paramserv")
    spec = _select_simple(op)
    if spec is None:
        raise CompileError(f"no kernel for operation '{op.name}'", loc_of(op))
    return spec


# --- constant folding ----------------------------------------------------------------------------------------------

_FOLDABLE = (ops.EwBinaryOp, ops.EwUnaryOp, ops.CastOp, ops.ForRangeOp, ops.CondOp)


def fold_scalar_op(op: Operation) -> list[object] | None:
    """Evaluate a pure op on constant scalar operands with its kernel; None if the op is not folded."""
    if not isinstance(op, _FOLDABLE) or any(is_unknown(r.type) for r in op.results):
        return None
    if isinstance(op, ops.CastOp) and not (is_scalar(op.arg.type) and is_scalar(op.res.type)):
        return None
    if isinstance(op, ops.EwBinaryOp) and op.KIND in ("div", "mod"):
        rhs = ops.constant_value(op.rhs)
        if rhs == 0 and vt_name(op.res.type) not in ("f64", "f32"):
            raise FoldError(f"integer {'division' if op.KIND == 'div' else 'modulo'} by zero in a constant expression")
    try:
        spec = select_kernel(op)  # ForRangeOp included: its kernel is in the simple table
        args = [ops.constant_value(v) for v in op.operands]
        args = [c(a) if c is not None else a for a, c in zip(args, spec.arg_casts)]
        out = spec.fn(*args)
    except (DaphneRuntimeError, ArithmeticError, ValueError):
        return None  # leave it to run time, where the error gets its proper report
    return list(out) if isinstance(out, tuple) else [out]
