"""Operations of the `daphne` dialect for the io builtins (see dialects/ops.py for the conventions): `print`,
`readMatrix`/`readFrame` and `write`.

As in DAPHNE's DaphneOps.td there is one `daphne.read` op for `readMatrix` and `readFrame`: its result type says
which (a matrix or a frame, built with an Unknown value type by the frontend), and the compiler completes it from
the file's `.meta` when the file name is a constant (`compiler/analysis/infer_io.py`). `daphne.write` serves `write`,
`writeMatrix` and `writeFrame`. Neither is `Pure`: reads and writes are never merged, moved or dropped.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, result_def

from daphnec.dialects.constraints import MATRIX_OR_FRAME, STRING
from daphnec.dialects.ops import DaphneOp
from daphnec.dialects.types import UNKNOWN, FrameType, MatrixType


@irdl_op_definition
class PrintOp(DaphneOp):
    """`print(x[, newline[, toStderr]])`."""

    name = "daphne.print"
    arg = operand_def()
    newline = operand_def()
    err = operand_def()

    def infer(self) -> tuple[Attribute, ...]:
        return ()


@irdl_op_definition
class ReadOp(DaphneOp):
    """`readMatrix(filename)` / `readFrame(filename)`."""

    name = "daphne.read"
    file_name = operand_def(STRING)
    res = result_def(MATRIX_OR_FRAME)
    ROLES: ClassVar = {"file_name": "the file name", "res": "the result"}

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


@irdl_op_definition
class WriteOp(DaphneOp):
    """`write(arg, filename)` = `writeMatrix` = `writeFrame`: the type of `arg` decides what is written."""

    name = "daphne.write"
    arg = operand_def(MATRIX_OR_FRAME)
    file_name = operand_def(STRING)
    ROLES: ClassVar = {"arg": "the data to write", "file_name": "the file name"}

    def __init__(self, arg: SSAValue, file_name: SSAValue):
        super().__init__(operands=[arg, file_name], result_types=[])

    def infer(self) -> tuple[Attribute, ...]:
        return ()


OPS: list[type[Operation]] = [PrintOp, ReadOp, WriteOp]
"""The ops this module defines, registered in the dialect by dialects/daphne.py."""
