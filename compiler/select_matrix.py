"""Kernel selectors for the matrix builtins whose kernel depends on operand types (see compiler/kernel_select.py).

Ops with a fixed kernel declare it on the op class (`KERNEL = "module.function"` in dialects/ops_matrix.py);
the families here pick a specialised kernel per (operation, operand value type, result value type).
"""

from __future__ import annotations

import functools

from xdsl.ir import Operation

from daphnec.compiler.kernel_select import KernelSpec, selects, value_cast
from daphnec.dialects import ops_matrix as om
from daphnec.dialects.errors import CompileError
from daphnec.dialects.locations import loc_of
from daphnec.dialects.types import FrameType, is_matrix, is_unknown, vt_name
from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.kernels import agg, cum_agg, ew_binary, outer, reorg


def _vt(op: Operation, t) -> str:
    vt = vt_name(t)
    if vt is None or is_unknown(t):
        raise CompileError(f"{op.name}: the type of an operand or result could not be inferred ({t})", loc_of(op))
    return vt


def _need_matrices(op: Operation) -> None:
    for v in op.operands:
        if not is_matrix(v.type):
            raise CompileError(f"{op.name}: the arguments must be matrices, got {v.type}", loc_of(op))


@selects(*om.OUTER_OPS.values())
def _outer(op: om.OuterBinaryOp) -> KernelSpec:
    _need_matrices(op)
    lvt, rvt, resvt = _vt(op, op.lhs.type), _vt(op, op.rhs.type), _vt(op, op.res.type)
    ovt = ew_binary.operand_vt(op.KIND, lvt, rvt)
    try:
        fn = outer.outer_kernel(op.KIND, ovt, resvt)
    except DaphneRuntimeError as e:
        raise CompileError(f"{op.name}: {e}", loc_of(op)) from e
    return KernelSpec(fn, (value_cast(op.lhs.type, ovt), value_cast(op.rhs.type, ovt)), op.name.split(".")[1])


@selects(*om.IDX_OPS.values())
def _idx(op: om.IdxAggOp) -> KernelSpec:
    _need_matrices(op)
    return KernelSpec(agg.idx_kernel(op.KIND, op.AXIS), (None,), op.name.split(".")[1])


@selects(*om.CUM_OPS.values())
def _cum(op: om.CumAggOp) -> KernelSpec:
    _need_matrices(op)
    return KernelSpec(cum_agg.cum_kernel(op.KIND), (None,), op.name.split(".")[1])


@selects(om.ColBindOp, om.RowBindOp)
def _bind(op: om.BindOp) -> KernelSpec:
    """Matrices are cast to the result's value type (CastArgsToResType); frames go to the frame selectors."""
    if any(isinstance(v.type, FrameType) for v in op.operands):
        from daphnec.compiler import select_frame

        frame_bind = getattr(select_frame, "select_frame_bind", None)
        if frame_bind is None:
            raise CompileError(f"{op.name}: binding frames is not supported yet", loc_of(op))
        return frame_bind(op)
    _need_matrices(op)
    vt = _vt(op, op.res.type)
    fn = reorg.cbind if isinstance(op, om.ColBindOp) else reorg.rbind
    return KernelSpec(fn, (value_cast(op.lhs.type, vt), value_cast(op.rhs.type, vt)), fn.__name__)


@selects(om.OrderOp)
def _order(op: om.OrderOp) -> KernelSpec:
    return KernelSpec(functools.partial(reorg.order), (None,) * len(op.operands), "order")
