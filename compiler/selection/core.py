"""Kernel selectors for the language core's ops whose kernel depends on types (see compiler/selection/table.py).

Element-wise ops and aggregations pick a kernel specialised per (kind, operand value type, result value type) from
their runtime module, by the op class's `KIND` (and `AXIS`); casts pick a converter per source and target type; the
data generators pick the CSR builder when the result is typed `rep[sparse]`.
"""

from __future__ import annotations

import functools

from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import Operation

from daphnec.compiler.selection.frame import is_frame_or_list_cast, select_frame_cast
from daphnec.compiler.selection.spec import KernelSpec, known_vt, matrix_cast, scalar_cast, value_cast
from daphnec.dialects import ops
from daphnec.dialects.attr_names import COMPARED_SUM_ATTR, EXACT_SUM_ATTR
from daphnec.dialects.errors import CompileError
from daphnec.dialects.locations import loc_of
from daphnec.dialects.op_kinds import EW_BINARY, LOGICAL_KINDS
from daphnec.dialects.types import FrameType, MatrixType, is_matrix, is_scalar, vt_name
from daphnec.runtime import printing
from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.kernels import agg, control, datagen, datagen_csr, ew_binary, ew_unary, frame_ops, meta, misc


def _sparse(t: object) -> bool:
    return isinstance(t, MatrixType) and t.is_sparse


# --- casts ---------------------------------------------------------------------------------------------------------


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


def is_matrix_cast(op: Operation) -> bool:
    """A value-type cast between matrices: it keeps CSR (the cast kernels have a CSR path)."""
    return isinstance(op, ops.CastOp) and is_matrix(op.arg.type) and is_matrix(op.res.type)


def select_cast(op: ops.CastOp) -> KernelSpec:
    if is_frame_or_list_cast(op):
        return select_frame_cast(op)
    src, dst = op.arg.type, op.res.type
    dvt = known_vt(op, dst) if not isinstance(dst, FrameType) else None
    if is_scalar(src) and is_scalar(dst):
        svt = known_vt(op, src)
        conv = scalar_cast(svt, dvt)  # type: ignore[arg-type]
        inline = misc.scalar_cast_inline(svt, dvt) if conv is not None else None  # type: ignore[arg-type]
        return KernelSpec(conv or misc.identity, (None,), "cast", inline)
    if is_matrix(src) and is_matrix(dst):
        return KernelSpec(matrix_cast(known_vt(op, src), dvt) or misc.identity, (None,), "cast")  # type: ignore[arg-type]
    if is_scalar(src) and is_matrix(dst):
        fill = functools.partial(datagen.fill, rows=1, cols=1, vt=dvt)
        return KernelSpec(fill, (scalar_cast(known_vt(op, src), dvt),), "as_matrix")  # type: ignore[arg-type]
    if is_matrix(src) and is_scalar(dst):
        conv = scalar_cast(known_vt(op, src), dvt)  # type: ignore[arg-type]
        fn = meta.as_scalar if conv is None else functools.partial(meta.as_scalar, vt=dvt)
        return KernelSpec(fn, (None,), "as_scalar")
    raise CompileError(f"unsupported cast from {src} to {dst}", loc_of(op))


# --- element-wise and aggregation ----------------------------------------------------------------------------------


def select_ew_binary(op: ops.EwBinaryOp) -> KernelSpec:
    lt, rt, res = op.lhs.type, op.rhs.type, op.res.type
    lvt, rvt, resvt = known_vt(op, lt), known_vt(op, rt), known_vt(op, res)
    kind = "concat" if op.KIND == "add" and resvt == "str" else op.KIND
    ovt = EW_BINARY[kind].operand_vt(lvt, rvt)
    casts = (value_cast(lt, ovt), value_cast(rt, ovt))
    if kind in LOGICAL_KINDS and is_matrix(lt) and is_matrix(rt):
        casts = (None, None)  # the kernel casts itself, or skips the cast for float 0/1 matrices (`_truth`)
    inline = None
    try:
        if is_scalar(lt) and is_scalar(rt):
            fn = ew_binary.scalar_kernel(kind, ovt, resvt)
            inline = ew_binary.scalar_inline(kind, ovt, resvt)
        else:
            fn = ew_binary.matrix_kernel(kind, ovt, resvt)
    except DaphneRuntimeError as e:
        raise CompileError(str(e), loc_of(op)) from e
    return _spec(fn, casts, f"ew_{kind}", inline)


def _spec(fn: object, casts: tuple, name: str, inline: tuple[str, dict[str, object]] | None) -> KernelSpec:
    """A kernel record, with the inline template of a scalar kernel when it has one (`KernelSpec.inline`)."""
    if inline is None:
        return KernelSpec(fn, casts, name)  # type: ignore[arg-type]
    return KernelSpec(fn, casts, name, inline[0], tuple(inline[1].items()))  # type: ignore[arg-type]


def select_ew_unary(op: ops.EwUnaryOp) -> KernelSpec:
    t, res = op.arg.type, op.res.type
    vin, vout = known_vt(op, t), known_vt(op, res)
    inline = None
    try:
        if is_scalar(t):
            fn = ew_unary.scalar_kernel(op.KIND, vin, vout)
            inline = ew_unary.scalar_inline(op.KIND, vin, vout)
        else:
            fn = ew_unary.matrix_kernel(op.KIND, vin, vout)
    except DaphneRuntimeError as e:
        raise CompileError(str(e), loc_of(op)) from e
    return _spec(fn, (None,), f"ew_{op.KIND}", inline)


_AGG_FACTORIES = {"all": agg.full_kernel, "row": agg.row_kernel, "col": agg.col_kernel}


def select_agg(op: ops.AggOp) -> KernelSpec:
    """The kernel of the aggregation's kind, axis and types; a full sum that `select-kernels` marked exact in any
    order (`daphne.exact_sum_cells`) adds pairwise (`agg.exact_sum_kernel`), one it marked only compared
    (`daphne.only_compared`) answers comparisons from a pairwise sum (`agg.compared_sum_kernel`)."""
    vin, vout = known_vt(op, op.arg.type), known_vt(op, op.res.type)
    if not is_matrix(op.arg.type):
        raise CompileError(f"{op.name}: the argument must be a matrix, got {op.arg.type}", loc_of(op))
    exact = op.attributes.get(EXACT_SUM_ATTR)
    if isinstance(exact, IntegerAttr) and vin == vout:
        return KernelSpec(agg.exact_sum_kernel(vin, exact.value.data), (None,), "sum_all_exact")
    if COMPARED_SUM_ATTR in op.attributes and vin == vout == "f64":
        return KernelSpec(agg.compared_sum_kernel(), (None,), "sum_all_compared")
    return KernelSpec(_AGG_FACTORIES[op.AXIS](op.KIND, vin, vout), (None,), f"{op.KIND}_{op.AXIS}")


def select_cond(op: ops.CondOp) -> KernelSpec:
    vt = known_vt(op, op.res.type)
    casts = (None, value_cast(op.then_val.type, vt), value_cast(op.else_val.type, vt))
    if is_matrix(op.cond.type):
        return KernelSpec(control.cond_matrix, casts, "cond")
    inline = "{r} = {1} if {0} else {2}" if casts == (None, None, None) else None  # both values are computed
    return KernelSpec(control.cond_scalar, casts, "cond", inline)


# --- data generation -----------------------------------------------------------------------------------------------


def select_fill(op: ops.FillOp) -> KernelSpec:
    vt = known_vt(op, op.res.type)
    fn, name = (datagen_csr.fill, "fill_csr") if _sparse(op.res.type) else (datagen.fill, "fill")
    return KernelSpec(functools.partial(fn, vt=vt), (value_cast(op.arg.type, vt), None, None), name)


def select_rand(op: ops.RandMatrixOp) -> KernelSpec:
    vt = known_vt(op, op.res.type)
    fn, name = (datagen_csr.rand, "rand_csr") if _sparse(op.res.type) else (datagen.rand, "rand")
    casts = (None, None, value_cast(op.min.type, vt), value_cast(op.max.type, vt), None, None)
    return KernelSpec(functools.partial(fn, vt=vt), casts, name)


def select_matrix_literal(op: ops.MatrixLiteralOp) -> KernelSpec:
    vt = known_vt(op, op.res.type)
    fn = functools.partial(datagen.matrix_literal, vt=vt)
    return KernelSpec(fn, (*(value_cast(e.type, vt) for e in op.elems), None, None), "matrix_literal")


def select_create_frame(op: ops.CreateFrameOp) -> KernelSpec:
    fn = functools.partial(frame_ops.create_frame, n_cols=len(op.cols))
    return KernelSpec(fn, (None,) * len(op.operands), "create_frame")


def select_type_of(op: ops.TypeOfOp) -> KernelSpec:
    """DAPHNE's type name; a CSR argument is named by the printer (`CSRMatrix(...)`); a scalar by its static value
    type (its width is not visible in the run-time Python value: `typeOf(as.si8(0))` is `int8_t`)."""
    if _sparse(op.arg.type):
        return KernelSpec(printing.type_name, (None,), "type_of_csr")
    vt = vt_name(op.arg.type) if is_scalar(op.arg.type) else None
    if vt is not None:
        return KernelSpec(functools.partial(misc.type_of, vt=vt), (None,), "type_of")
    return KernelSpec(misc.type_of, (None,), "type_of")
