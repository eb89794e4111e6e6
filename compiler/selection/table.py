"""Kernel selection: which runtime kernel implements an IR op, for its inferred types (DAPHNE's kernel lowering).

Selection happens once, at compile time, and serves the host code generator, the native kernels' opaque ops and
constant folding, so a folded constant is exactly what the kernel would have computed. `KERNELS` is the one table
from op classes to their kernels, by op category; an entry for a base class (`EwBinaryOp`) serves every op of
that family, which its selector tells apart by the class's `KIND`. Selectors whose choice depends on types live in
the category modules `compiler/select_*.py`; ops with one kernel name it here (`fixed`, `result_typed`).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from xdsl.ir import Operation

from daphnec.compiler.selection import core, frame, io, matrix, sql
from daphnec.compiler.selection.core import is_noop_cast
from daphnec.compiler.selection.naming import op_types
from daphnec.compiler.selection.representations import meet_representations
from daphnec.compiler.selection.spec import Kernel, KernelSpec, fixed, result_typed, with_properties
from daphnec.dialects import ops, ops_daphnelib, ops_frame, ops_io, ops_paramserv, ops_parfor, ops_relational
from daphnec.dialects import ops_columnar as oc
from daphnec.dialects import ops_matrix as om
from daphnec.dialects.attr_names import (
    IN_PLACE_ATTR,
    KERNEL_BACKEND_ATTR,
    KERNEL_CHOICE_ATTR,
    KERNEL_HINT_ATTR,
    KERNEL_LIB_ATTR,
)
from daphnec.dialects.errors import CompileError
from daphnec.dialects.locations import loc_of
from daphnec.runtime import parfor, printing
from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.kernels import control, datagen, indexing, meta, misc, reorg, secondorder, split_stats

__all__ = ["KERNELS", "evaluate_constant", "is_noop_cast", "kernel_of", "select_kernel"]

_INSERT = {False: (indexing.insert_range, "insert"), True: (indexing.insert_range_in_place, "insert_in_place")}
"""Left indexing copies the matrix, except where the old value is dead (`daphne.in_place`: the `in-place-insert`
and `parfor` passes)."""

KERNELS: dict[type[Operation], Kernel] = {
    # --- constants, casts, control ---------------------------------------------------------------------------------
    ops.CastOp: Kernel(core.select_cast, csr=core.is_matrix_cast),
    ops.CondOp: Kernel(core.select_cond),
    ops.ForRangeOp: fixed(control.for_range),
    ops_parfor.ParForChunkOp: fixed(parfor.parfor_chunk),
    ops_parfor.ParForDeltaOp: fixed(parfor.parfor_delta),
    # --- element-wise and aggregation (per KIND and value types) -----------------------------------------------------
    ops.EwBinaryOp: Kernel(core.select_ew_binary, csr=True),
    ops.EwUnaryOp: Kernel(core.select_ew_unary, csr=True),
    ops.AggOp: Kernel(core.select_agg, csr=True),
    om.OuterBinaryOp: Kernel(matrix.select_outer),
    om.SplitStatsOp: Kernel(
        lambda op: KernelSpec(
            functools.partial(split_stats.split_stats, kind=op.kind.data), (None,) * len(op.operands), "split_stats"
        )
    ),
    om.IdxAggOp: Kernel(matrix.select_idx_agg),
    om.CumAggOp: Kernel(matrix.select_cum_agg),
    ops.MapOp: result_typed(secondorder.map_matrix, "map"),
    # --- data generation ---------------------------------------------------------------------------------------------
    ops.FillOp: Kernel(core.select_fill),
    ops.SeqOp: result_typed(datagen.seq, cast=3),
    ops.RandMatrixOp: Kernel(core.select_rand),
    ops.MatrixLiteralOp: Kernel(core.select_matrix_literal),
    om.DiagMatrixOp: Kernel(matrix.select_diag_matrix, csr=True),
    om.SampleOp: result_typed("datagen.sample"),
    # --- metadata ----------------------------------------------------------------------------------------------------
    ops.NumRowsOp: fixed(meta.nrow, csr=True),
    ops.NumColsOp: fixed(meta.ncol, csr=True),
    ops.NumCellsOp: fixed(meta.ncell, csr=True),
    om.IsSymmetricOp: fixed("meta.is_symmetric"),
    om.SparsityOp: Kernel(matrix.select_sparsity, csr=True),
    # --- indexing ----------------------------------------------------------------------------------------------------
    ops.SliceRowOp: fixed(indexing.slice_row, csr=True),
    ops.SliceColOp: fixed(indexing.slice_col, csr=True),
    ops.ExtractRowOp: fixed(indexing.extract_row, csr=True),
    ops.ExtractColOp: Kernel(matrix.select_extract_col, csr=True),
    ops.FilterRowOp: fixed(indexing.filter_rows, "filter_row"),
    ops.FilterColOp: fixed(indexing.filter_cols, "filter_col"),
    ops.InsertOp: Kernel(
        lambda op: KernelSpec(
            _INSERT[IN_PLACE_ATTR in op.attributes][0], (None,) * 6, _INSERT[IN_PLACE_ATTR in op.attributes][1]
        )
    ),
    # --- reorganisation and linear algebra ---------------------------------------------------------------------------
    ops.TransposeOp: fixed(reorg.transpose, csr=True),
    ops.ReshapeOp: fixed(reorg.reshape, csr=True),
    om.MatMulOp: Kernel(matrix.select_matmul, csr=True),
    om.MatMulChainOp: Kernel(matrix.select_matmul_chain, csr=True),
    om.ColBindOp: Kernel(matrix.select_bind),
    om.RowBindOp: Kernel(matrix.select_bind),
    om.ReverseOp: fixed("reorg.reverse"),
    om.OrderOp: fixed("reorg.order"),
    om.EigenOp: fixed("decomposition.eigen"),
    om.DiagVectorOp: fixed("matrix_ops.diag_vector", csr=True),
    om.TriOp: fixed("matrix_ops.tri", csr=True),
    om.SolveOp: result_typed("matrix_ops.solve", cast=2, vt_arg=False),
    om.ReplaceOp: result_typed("matrix_ops.replace", cast=3, vt_arg=False),
    om.CTableOp: result_typed("matrix_ops.ctable"),
    om.SyrkOp: fixed("matrix_ops.syrk", csr=True),
    om.TraceOfProductOp: fixed("matrix_ops.trace_of_product"),
    om.GemvOp: result_typed("matrix_ops.gemv", cast=2, vt_arg=False),
    om.GramVectorBase: Kernel(matrix.select_gram_vector, csr=True),
    # --- deep neural networks ----------------------------------------------------------------------------------------
    om.Conv2DForwardOp: fixed("dnn.conv2d"),
    om.AvgPoolForwardOp: fixed("dnn.avg_pool2d"),
    om.MaxPoolForwardOp: fixed("dnn.max_pool2d"),
    om.BatchNorm2DInferenceForwardOp: fixed("dnn.batch_norm2d"),
    om.BiasAddOp: fixed("dnn.bias_add"),
    om.ReluForwardOp: fixed("dnn.relu"),
    om.SoftmaxOp: fixed("dnn.softmax"),
    om.AffineForwardOp: fixed("dnn.affine"),
    om.Conv2DBackwardFilterOp: fixed("dnn.conv2d_backward_filter"),
    om.Conv2DBackwardDataOp: fixed("dnn.conv2d_backward_data"),
    om.AvgPoolBackwardOp: fixed("dnn.avg_pool2d_backward"),
    om.MaxPoolBackwardOp: fixed("dnn.max_pool2d_backward"),
    om.BatchNorm2DBackwardOp: fixed("dnn.batch_norm2d_backward"),
    # --- conversions and preprocessing -------------------------------------------------------------------------------
    om.QuantizeOp: fixed("conversions.quantize"),
    om.OneHotOp: fixed("preprocessing.one_hot"),
    om.RecodeOp: fixed("preprocessing.recode"),
    om.BinOp: fixed("preprocessing.bin"),
    # --- frames ------------------------------------------------------------------------------------------------------
    ops.CreateFrameOp: Kernel(core.select_create_frame),
    ops_frame.CartesianOp: fixed("frame_ops.cartesian"),
    ops_frame.InnerJoinOp: fixed("frame_ops.inner_join"),
    ops_frame.SemiJoinOp: fixed("frame_ops.semi_join"),
    ops_frame.GroupJoinOp: fixed("frame_ops.group_join"),
    ops_frame.GroupOp: Kernel(frame.select_group),
    ops_frame.SetColLabelsOp: fixed("frame_ops.set_col_labels"),
    ops_frame.SetColLabelsPrefixOp: fixed("frame_ops.set_col_labels_prefix"),
    ops_frame.IntersectOp: fixed("frame_ops.intersect"),
    ops_frame.MergeOp: fixed("frame_ops.merge"),
    ops_frame.ExceptOp: fixed("frame_ops.except_"),
    # --- SQL (what the `sql` pass emits beyond the frame ops) and the columnar rewrite (`--columnar`) --------------
    ops_relational.ThetaJoinOp: Kernel(sql.select_theta_join),
    ops_relational.GetColIdxOp: fixed("relational.get_col_idx"),
    ops_relational.GroupIdsOp: fixed("relational.fused_group_ids"),
    ops_relational.GroupedSumOp: fixed("relational.grouped_sum_block"),
    ops_relational.GroupResultOp: Kernel(sql.select_group_result),
    oc.ColSelectEqOp: fixed("columnar.col_select_eq"),
    oc.ColSelectNeqOp: fixed("columnar.col_select_neq"),
    oc.ColSelectGtOp: fixed("columnar.col_select_gt"),
    oc.ColSelectGeOp: fixed("columnar.col_select_ge"),
    oc.ColSelectLtOp: fixed("columnar.col_select_lt"),
    oc.ColSelectLeOp: fixed("columnar.col_select_le"),
    oc.ColIntersectOp: fixed("columnar.col_intersect"),
    oc.ColMergeOp: fixed("columnar.col_merge"),
    oc.ColProjectOp: fixed("columnar.col_project"),
    oc.ColJoinOp: fixed("columnar.col_join"),
    oc.ColSemiJoinOp: fixed("columnar.col_semi_join"),
    oc.ColGroupFirstOp: fixed("columnar.col_group_first"),
    oc.ColGroupNextOp: fixed("columnar.col_group_next"),
    oc.ColSumGrpOp: fixed("columnar.col_sum_grp"),
    oc.ColSumAllOp: fixed("columnar.col_sum_all"),
    oc.ColCalcSubOp: fixed("columnar.col_calc_sub"),
    oc.ColCalcMulOp: fixed("columnar.col_calc_mul"),
    oc.ConvertPosListToBitmapOp: Kernel(sql.select_pos_list_to_bitmap),
    oc.ConvertBitmapToPosListOp: fixed("columnar.bitmap_to_pos_list"),
    # --- lists -------------------------------------------------------------------------------------------------------
    ops_frame.CreateListOp: fixed("lists.create_list"),
    ops_frame.LengthOp: fixed("lists.length"),
    ops_frame.AppendOp: fixed("lists.append"),
    ops_frame.RemoveOp: fixed("lists.remove"),
    ops_frame.ListGetOp: fixed("lists.get"),
    # --- I/O and side effects ----------------------------------------------------------------------------------------
    ops_io.PrintOp: fixed(printing.print_obj, "print", csr=True),
    ops.StopOp: fixed(misc.stop),
    ops.TypeOfOp: Kernel(core.select_type_of, csr=True),
    ops.NowOp: fixed(datagen.now),
    ops_io.ReadOp: Kernel(io.select_read),
    ops_io.WriteOp: Kernel(io.select_write, csr=True),
    ops_paramserv.ParamservOp: fixed("paramserv.paramserv"),
    ops_paramserv.GradientReadyOp: with_properties("paramserv.gradient_ready", "position"),
    ops_paramserv.AwaitParameterOp: with_properties("paramserv.await_parameter", "position"),
    ops_paramserv.AwaitModelOp: fixed("paramserv.await_model"),
    # --- the Python API's data exchange ------------------------------------------------------------------------------
    ops_daphnelib.ReceiveFromNumpyOp: fixed("daphnelib.receive"),
    ops_daphnelib.SaveDaphneLibResultOp: fixed("daphnelib.save_result"),
}
"""Op class -> its kernels. `csr`: the kernels take CSR operands as they are (see
`compiler/selection/representations.py`)."""


def kernel_of(op: Operation) -> Kernel:
    """The table entry of an op: its class's, else its nearest base class's (an op family)."""
    for cls in type(op).__mro__:
        kernel = KERNELS.get(cls)
        if kernel is not None:
            return kernel
    raise CompileError(f"no kernel for operation '{op.name}'", loc_of(op))


def select_kernel(op: Operation) -> KernelSpec:
    """The kernel and operand casts for an inferred daphne op (raises CompileError when none applies), adapted to
    the representations (dense or CSR) its types say; an extension kernel if `select-kernels` chose one."""
    if KERNEL_LIB_ATTR in op.attributes:
        return meet_representations(op, extension_kernel(op), False)
    kernel = kernel_of(op)
    return meet_representations(op, kernel.select(op), kernel.takes_csr(op))


def extension_kernel(op: Operation) -> KernelSpec:
    """The `--kernel-ext` kernel `select-kernels` recorded on the op (compiler/passes/select_kernels.py)."""
    name, backend, lib = (op.attributes[a].data for a in (KERNEL_CHOICE_ATTR, KERNEL_BACKEND_ATTR, KERNEL_LIB_ATTR))  # type: ignore[attr-defined]
    res, args = op_types(op, brackets=True)
    from daphnec.runtime.kernels import extensions  # only runs with extension kernels load ctypes libraries

    try:
        fn = extensions.kernel(backend, lib, name, res, args)
    except DaphneRuntimeError as e:
        raise CompileError(str(e), loc_of(op)) from None
    return KernelSpec(fn, (None,) * len(op.operands), name)


def evaluate_constant(op: Operation, args: Sequence[object]) -> list[object] | None:
    """What `op`'s kernel computes on constant scalar operands (the dialect's constant folding, see
    dialects/folding.py); None when the kernel fails, so that the error is reported at run time with its message."""
    if KERNEL_CHOICE_ATTR in op.attributes or KERNEL_HINT_ATTR in op.attributes:
        return None  # the kernel a hint or an extension names runs (it may have effects of its own)
    try:
        spec = select_kernel(op)
        out = spec.fn(*(c(a) if c is not None else a for a, c in zip(args, spec.arg_casts)))
    except (DaphneRuntimeError, ArithmeticError, ValueError):
        return None
    return list(out) if isinstance(out, tuple) else [out]
