"""Kernel selectors for the matrix builtins whose kernel depends on operand types (see compiler/selection/table.py).

Ops with one kernel each are named in the kernel table; the families here pick a specialised kernel per
(operation, operand value type, result value type) by the op class's `KIND` (and `AXIS`).
"""

from __future__ import annotations

import functools

from xdsl.ir import Operation

from daphnec.compiler.analysis.sparsity import estimate
from daphnec.compiler.selection.frame import select_frame_bind
from daphnec.compiler.selection.spec import KernelSpec, known_vt, result_typed, value_cast
from daphnec.dialects import ops
from daphnec.dialects import ops_matrix as om
from daphnec.dialects.errors import CompileError
from daphnec.dialects.locations import loc_of
from daphnec.dialects.op_kinds import EW_BINARY
from daphnec.dialects.types import FrameType, MatrixType, is_matrix
from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.kernels import agg, cum_agg, datagen, datagen_csr, indexing, matmul, meta, outer, reorg
from daphnec.runtime.kernels.csr_scatter import matmul_transposed_csr


def _need_matrices(op: Operation) -> None:
    for v in op.operands:
        if not is_matrix(v.type):
            raise CompileError(f"{op.name}: the arguments must be matrices, got {v.type}", loc_of(op))


_MATMUL = result_typed(matmul.matmul, cast=2, csr=True)
_MATMUL_TRANSPOSED_CSR = result_typed(matmul_transposed_csr, "matmul", cast=2, csr=True)
"""`t(G) @ x` of a CSR G: runtime/kernels/csr_scatter.py (a native scatter over G's rows where llvmlite is loaded
anyway, else `matmul`; scipy's bits either way)."""


def select_matmul(op: Operation) -> KernelSpec:
    """`matmul` in the result's value type (both operands cast to it), told the operands that `fold-transpose`
    marked as transposed (`transa`/`transb`)."""
    flags = {name: True for name in ("transa", "transb") if op.properties.get(name) is not None}
    sparse_lhs = isinstance(op.lhs.type, MatrixType) and op.lhs.type.is_sparse
    spec = (_MATMUL_TRANSPOSED_CSR if sparse_lhs and "transa" in flags else _MATMUL).select(op)
    return KernelSpec(functools.partial(spec.fn, **flags), spec.arg_casts, spec.name) if flags else spec


def select_gram_vector(op: Operation) -> KernelSpec:
    """gram_vector's kernel of the op's KIND; for a dense X known to have at least `BLAS_MIN_COLS` columns the same
    kernel from `gram_vector_wide`, whose programs the warm-up does not build native loops for (their BLAS form
    runs: the form depends on X's shape only, so the bits are the same)."""
    from daphnec.runtime.kernels import gram_vector, gram_vector_wide

    x = op.operands[0].type
    wide = isinstance(x, MatrixType) and not x.is_sparse and x.cols.data >= gram_vector.BLAS_MIN_COLS
    module = gram_vector_wide if wide else gram_vector
    name = f"gram_vector_{op.KIND}"  # type: ignore[attr-defined]
    return KernelSpec(getattr(module, name), (None,) * len(op.operands), f"gram_vector.{name}")


def select_matmul_chain(op: om.MatMulChainOp) -> KernelSpec:
    """The run-time ordered chain, told which factors are read transposed and the result's value type."""
    from daphnec.runtime.kernels.matmul_chain import matmul_chain

    fn = functools.partial(matmul_chain, transposed=tuple(op.flags()), vt=known_vt(op, op.res.type))
    return KernelSpec(fn, (None,) * len(op.operands), "matmul_chain")


def select_outer(op: om.OuterBinaryOp) -> KernelSpec:
    _need_matrices(op)
    lvt, rvt, resvt = known_vt(op, op.lhs.type), known_vt(op, op.rhs.type), known_vt(op, op.res.type)
    ovt = EW_BINARY[op.KIND].operand_vt(lvt, rvt)
    try:
        fn = outer.outer_kernel(op.KIND, ovt, resvt)
    except DaphneRuntimeError as e:
        raise CompileError(f"{op.name}: {e}", loc_of(op)) from e
    return KernelSpec(fn, (value_cast(op.lhs.type, ovt), value_cast(op.rhs.type, ovt)), op.name.split(".")[1])


def select_idx_agg(op: om.IdxAggOp) -> KernelSpec:
    _need_matrices(op)
    return KernelSpec(agg.idx_kernel(op.KIND, op.AXIS), (None,), op.name.split(".")[1])


def select_cum_agg(op: om.CumAggOp) -> KernelSpec:
    _need_matrices(op)
    return KernelSpec(cum_agg.cum_kernel(op.KIND), (None,), op.name.split(".")[1])


def select_bind(op: om.BindOp) -> KernelSpec:
    """Matrices are cast to the result's value type (CastArgsToResType); frames go to the frame selectors."""
    if any(isinstance(v.type, FrameType) for v in op.operands):
        return select_frame_bind(op)
    _need_matrices(op)
    vt = known_vt(op, op.res.type)
    fn = reorg.cbind if isinstance(op, om.ColBindOp) else reorg.rbind
    return KernelSpec(fn, (value_cast(op.lhs.type, vt), value_cast(op.rhs.type, vt)), fn.__name__)


def select_sparsity(op: om.SparsityOp) -> KernelSpec:
    """`sparsity(X)` returns the compile-time estimate (compiler/analysis/sparsity.py)."""
    return KernelSpec(functools.partial(meta.sparsity, estimate=estimate(op.operands[0])), (None,), "sparsity")


def select_diag_matrix(op: om.DiagMatrixOp) -> KernelSpec:
    """A result typed sparse is built as CSR directly (an n x n diagonal matrix of a large graph never densifies)."""
    if isinstance(op.res.type, MatrixType) and op.res.type.is_sparse:
        return KernelSpec(datagen_csr.diag_matrix, (None,), "diag_matrix_csr")
    return KernelSpec(datagen.diag_matrix, (None,), "diag_matrix")


#: Ops that read each operand cell once, in one numpy pass (a strided operand costs them what a copy would read).
_READ_ONCE = (ops.EwBinaryOp, ops.EwUnaryOp, om.OuterBinaryOp, om.SplitStatsOp)


def select_extract_col(op: ops.ExtractColOp) -> KernelSpec:
    """`X[, j]` as a view (`indexing.extract_col_view`) when every use reads it once, in the same block (not in a
    loop body that would re-read a strided column every iteration, nor a fused pipeline); else `extract_col`,
    which compacts a column of a wide matrix."""
    uses = [u.operation for u in op.results[0].uses]
    block = op.parent_block()
    if uses and all(isinstance(u, _READ_ONCE) and u.parent_block() is block for u in uses):
        return KernelSpec(indexing.extract_col_view, (None, None), "extract_col_view")
    return KernelSpec(indexing.extract_col, (None, None), "extract_col")
