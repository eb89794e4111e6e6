"""The `daphne` dialect: every op module's ops and the dialect's types."""

from xdsl.ir import Dialect

from daphnec.dialects import (
    ops,
    ops_columnar,
    ops_distributed,
    ops_frame,
    ops_io,
    ops_matrix,
    ops_paramserv,
    ops_pipeline,
    ops_relational,
)
from daphnec.dialects.types import ColumnType, FrameType, ListType, MatrixType, StringType, UnknownType

DAPHNE_OPS = [
    *ops.CORE_OPS,
    *ops_matrix.OPS,
    *ops_frame.OPS,
    *ops_io.OPS,
    *ops_pipeline.OPS,
    *ops_distributed.OPS,
    *ops_paramserv.OPS,
    *ops_relational.OPS,
    *ops_columnar.OPS,
]

Daphne = Dialect("daphne", DAPHNE_OPS, [UnknownType, StringType, MatrixType, FrameType, ListType, ColumnType])
