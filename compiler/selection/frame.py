"""Kernel selectors for frames and lists (see compiler/selection/table.py).

Most frame and list ops have one kernel each (named in the kernel table); this module holds the choices that
depend on types or properties: `daphne.group` (the aggregation functions are a property) and casts
from or to frames and lists (`as.matrix(F)`, `as.matrix<f64>(F)`, `as.frame(X)`, `as.scalar(F)`, and the casts
inference inserts where a frame or list variable is merged at control flow), and `cbind`/`rbind` of frames. Casts
from or to columns (`--columnar`) are chosen in compiler/selection/sql.py.
"""

from __future__ import annotations

import functools

from xdsl.ir import Attribute, Operation

from daphnec.compiler.selection.spec import KernelSpec
from daphnec.compiler.selection.sql import select_column_cast
from daphnec.dialects.errors import CompileError
from daphnec.dialects.locations import loc_of
from daphnec.dialects.ops import CastOp
from daphnec.dialects.ops_frame import GroupOp
from daphnec.dialects.types import ColumnType, FrameType, ListType, is_matrix, is_scalar, vt_name
from daphnec.runtime.kernels import frame_ops, misc


def select_group(op: GroupOp) -> KernelSpec:
    fn = functools.partial(frame_ops.group, n_keys=len(op.key_cols), funcs=tuple(op.funcs))
    return KernelSpec(fn, (None,) * len(op.operands), "group")


def is_frame_or_list_cast(op: CastOp) -> bool:
    """A cast whose argument or result is a frame, a list or a column (selected here, not by the core's cast
    rules)."""
    return any(isinstance(t, (FrameType, ListType, ColumnType)) for t in (op.arg.type, op.res.type))


def _spec(fn: object, name: str) -> KernelSpec:
    return KernelSpec(fn, (None,), name)  # type: ignore[arg-type]


def _known_vt(t: Attribute, op: CastOp, what: str) -> str:
    vt = vt_name(t)
    if vt is None:
        raise CompileError(f"{what}: the value type of the result could not be inferred ({t})", loc_of(op))
    return vt


def select_frame_cast(op: CastOp) -> KernelSpec:
    """The kernel of a cast from or to a frame or a list."""
    src, dst = op.arg.type, op.res.type
    if isinstance(src, ColumnType) or isinstance(dst, ColumnType):
        return select_column_cast(op)
    if isinstance(src, ListType) and isinstance(dst, ListType):
        return _spec(misc.identity, "cast")
    if isinstance(src, FrameType):
        if is_matrix(dst):
            return _spec(functools.partial(frame_ops.frame_to_matrix, vt=_known_vt(dst, op, "as.matrix")), "as_matrix")
        if is_scalar(dst):
            return _spec(functools.partial(frame_ops.frame_to_scalar, vt=_known_vt(dst, op, "as.scalar")), "as_scalar")
        if isinstance(dst, FrameType):
            return _frame_to_frame(src, dst)
    if isinstance(dst, FrameType):
        if is_matrix(src):
            return _spec(frame_ops.matrix_to_frame, "as_frame")
        if is_scalar(src):
            vt = vt_name(dst.column_types.data[0]) if dst.column_types.data else None
            return _spec(functools.partial(frame_ops.scalar_to_frame, vt=vt or vt_name(src)), "as_frame")
    raise CompileError(f"unsupported cast from {src} to {dst}", loc_of(op))


def _frame_to_frame(src: FrameType, dst: FrameType) -> KernelSpec:
    """A frame-to-frame cast changes column value types only where a merge generalised them."""
    svts = [vt_name(t) for t in src.column_types.data]
    dvts = [vt_name(t) for t in dst.column_types.data]
    if len(svts) != len(dvts) or svts == dvts or not all(dvts) or not all(svts):
        return _spec(misc.identity, "cast")
    return _spec(functools.partial(frame_ops.frame_to_frame, vts=tuple(dvts)), "cast_frame")  # type: ignore[arg-type]


def select_frame_bind(op: Operation) -> KernelSpec:
    """cbind/rbind of frames (chosen by the matrix selector for `daphne.colBind`/`daphne.rowBind`)."""
    kind = "cbind" if op.name == "daphne.colBind" else "rbind"
    return KernelSpec(functools.partial(frame_ops.bind, kind=kind), (None, None), f"{kind}_frame")
