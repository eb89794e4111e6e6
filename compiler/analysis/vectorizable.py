"""Which ops may run inside a vectorized pipeline, and how (DAPHNE's VectorizableOpInterface, facts §2).

For a vectorizable op, `splits(op)` gives each operand's split (ROWS: the op consumes it row block by row block;
NONE: it needs the whole value) and `combines(op)` each result's combine (how per-block results form the whole).

Unlike DAPHNE, `matMul` never joins a pipeline: BLAS multiplies the whole operands faster on its own threads than
per row block inside the pipeline's tasks (which also oversubscribe the cores), a transposed operand
(`fold-transpose`) is not split by rows at all, and `t(X) @ X` as one syrk call stays exactly symmetric. The
element-wise ops around a product still fuse, on either side of it.
"""

from __future__ import annotations

from xdsl.ir import Operation

from daphnec.dialects import ops
from daphnec.dialects.attr_names import KERNEL_CHOICE_ATTR
from daphnec.dialects.op_kinds import AGGREGATIONS
from daphnec.dialects.ops_relational import GroupedSumOp
from daphnec.dialects.types import is_matrix
from daphnec.dialects.value_types import Combine, Split


def _matrix_split(op: Operation) -> list[int]:
    return [Split.ROWS if is_matrix(v.type) else Split.NONE for v in op.operands]


def is_vectorizable(op: Operation) -> bool:
    """A candidate for fusion: a vectorizable op with at least one dense-or-CSR matrix operand or result
    (DAPHNE's `isMatrixComputation`), whose types are fully inferred."""
    if not any(is_matrix(v.type) for v in (*op.operands, *op.results)):
        return False
    if KERNEL_CHOICE_ATTR in op.attributes:
        return False  # a kernel hint or extension names the kernel that runs (compiler/passes/select_kernels.py)
    if isinstance(op, (ops.EwBinaryOp, ops.EwUnaryOp, ops.TransposeOp)):
        return True
    if isinstance(op, ops.AggOp):
        return op.AXIS == "row" or AGGREGATIONS[op.KIND].combine is not None
    if isinstance(op, ops.ExtractColOp):
        return is_matrix(op.source.type)
    return False


def splits(op: Operation) -> list[int]:
    if isinstance(op, ops.ExtractColOp):
        return [Split.ROWS, Split.NONE]
    return _matrix_split(op)


def combines(op: Operation) -> list[int]:
    if isinstance(op, GroupedSumOp):  # per-task partial sums per group (compiler/passes/fuse_filter_agg.py)
        return [Combine.ADD]
    if isinstance(op, ops.TransposeOp):
        return [Combine.COLS]
    if isinstance(op, ops.AggOp) and op.AXIS != "row":
        return [AGGREGATIONS[op.KIND].combine]
    return [Combine.ROWS]
