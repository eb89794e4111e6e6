"""The `daphne` dialect: every op module's ops, the dialect's types, and how folded constants become ops."""

from xdsl.dialect_interfaces.constant_materialization import ConstantMaterializationInterface
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, StringAttr
from xdsl.ir import Attribute, Dialect, Operation

from daphnec.dialects import (
    ops,
    ops_columnar,
    ops_daphnelib,
    ops_distributed,
    ops_frame,
    ops_io,
    ops_matrix,
    ops_paramserv,
    ops_parfor,
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
    *ops_parfor.OPS,
    *ops_daphnelib.OPS,
    *ops_relational.OPS,
    *ops_columnar.OPS,
]


class DaphneConstantMaterialization(ConstantMaterializationInterface):
    """A folded scalar (an integer, float or string attribute) becomes a `daphne.constant`."""

    def materialize_constant(self, value: Attribute, type: Attribute) -> Operation | None:
        if isinstance(value, (IntegerAttr, FloatAttr, StringAttr)):
            return ops.ConstantOp(value)
        return None


Daphne = Dialect(
    "daphne",
    DAPHNE_OPS,
    [UnknownType, StringType, MatrixType, FrameType, ListType, ColumnType],
    [DaphneConstantMaterialization()],
)
