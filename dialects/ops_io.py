"""Operations of the `daphne` dialect for the io builtins (see dialects/ops.py for the conventions).

As in DAPHNE's DaphneOps.td there is one `daphne.read` op for `readMatrix` and `readFrame`: its result type says
which (a matrix or a frame, built with an Unknown value type by the frontend), and the compiler completes it from
the file's `.meta` when the file name is a constant (`compiler/infer_io.py`). `daphne.write` serves `write`,
`writeMatrix` and `writeFrame`. Neither is `Pure`: reads and writes are never merged, moved or dropped.
"""

from __future__ import annotations

from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, result_def
from xdsl.utils.exceptions import VerifyException

from daphnec.dialects.ops import DaphneOp
from daphnec.dialects.types import UNKNOWN, FrameType, MatrixType, StringType, UnknownType, is_unknown


def _check_file_name(op: Operation, v: SSAValue) -> None:
    if not isinstance(v.type, (StringType, UnknownType)):
        raise VerifyException(f"{op.name}: the file name must be a string, got {v.type}")


@irdl_op_definition
class ReadOp(DaphneOp):
    """`readMatrix(filename)` / `readFrame(filename)`."""

    name = "daphne.read"
    file_name = operand_def()
    res = result_def()

    def __init__(self, file_name: SSAValue, result_type: Attribute):
        super().__init__(operands=[file_name], result_types=[result_type])

    @staticmethod
    def matrix_type() -> MatrixType:
        return MatrixType(UNKNOWN)

    @staticmethod
    def frame_type() -> FrameType:
        return FrameType([UNKNOWN])

    def infer(self) -> tuple[Attribute, ...]:
        """Without the compiler's view of the file system the type stays what the frontend said (Unknown inside)."""
        return (self.res.type,)

    def reads_frame(self) -> bool:
        return isinstance(self.res.type, FrameType)

    def verify_(self) -> None:
        _check_file_name(self, self.file_name)
        if not isinstance(self.res.type, (MatrixType, FrameType, UnknownType)):
            raise VerifyException(f"daphne.read: the result must be a matrix or a frame, got {self.res.type}")


@irdl_op_definition
class WriteOp(DaphneOp):
    """`write(arg, filename)` = `writeMatrix` = `writeFrame`: the type of `arg` decides what is written."""

    name = "daphne.write"
    arg = operand_def()
    file_name = operand_def()

    def __init__(self, arg: SSAValue, file_name: SSAValue):
        super().__init__(operands=[arg, file_name], result_types=[])

    def infer(self) -> tuple[Attribute, ...]:
        return ()

    def verify_(self) -> None:
        _check_file_name(self, self.file_name)
        t = self.arg.type
        if not (isinstance(t, (MatrixType, FrameType)) or is_unknown(t)):
            raise VerifyException(f"daphne.write: the data to write must be a matrix or a frame, got {t}")


OPS: list[type[Operation]] = [ReadOp, WriteOp]
"""The ops this module defines, registered in the dialect by dialects/daphne.py."""
