"""Kernel selectors of the relational and columnar ops that SQL and `--columnar` produce (see
compiler/selection/table.py): `daphne.thetaJoin` (its comparisons are a property), `daphne.convertPosListToBitmap`
(the value type of the bits) and the casts from or to columns of the columnar rewrite (a single-column frame or
matrix to a column, a column back to a matrix or a scalar)."""

from __future__ import annotations

import functools

from xdsl.ir import Operation

from daphnec.compiler.selection.spec import KernelSpec
from daphnec.dialects.errors import CompileError
from daphnec.dialects.locations import loc_of
from daphnec.dialects.ops_columnar import ConvertPosListToBitmapOp
from daphnec.dialects.ops_relational import GroupResultOp, ThetaJoinOp
from daphnec.dialects.types import FrameType, is_matrix, is_scalar, vt_name
from daphnec.runtime.kernels import columnar, relational


def select_theta_join(op: ThetaJoinOp) -> KernelSpec:
    fn = functools.partial(relational.theta_join, cmps=tuple(op.cmps))
    return KernelSpec(fn, (None,) * len(op.operands), "theta_join")


def select_pos_list_to_bitmap(op: ConvertPosListToBitmapOp) -> KernelSpec:
    return KernelSpec(functools.partial(columnar.pos_list_to_bitmap, vt=op.vt.data), (None, None), "to_bitmap")


def select_column_cast(op: Operation) -> KernelSpec:
    """A cast whose argument or result is a column; zero-copy unless the value type changes."""
    src, dst = op.operands[0].type, op.results[0].type
    if isinstance(src, FrameType):
        return KernelSpec(columnar.frame_to_column, (None,), "frame_to_column")
    vt = vt_name(dst)
    if vt is None:
        raise CompileError(f"cast: the value type of the result could not be inferred ({dst})", loc_of(op))
    kernel = (
        columnar.matrix_to_column
        if is_matrix(src)
        else columnar.column_to_matrix
        if is_matrix(dst)
        else columnar.column_to_scalar
        if is_scalar(dst)
        else columnar.column_to_column
    )
    return KernelSpec(functools.partial(kernel, vt=vt), (None,), kernel.__name__)


def select_group_result(op: GroupResultOp) -> KernelSpec:
    """The aggregation functions and the result labels are properties (`fuse-filter-agg`'s grouped pipelines)."""
    labels = tuple(x.data for x in op.labels.data)
    fn = functools.partial(relational.group_result, funcs=tuple(op.funcs), labels=labels)
    return KernelSpec(fn, (None,) * len(op.operands), "group_result")
