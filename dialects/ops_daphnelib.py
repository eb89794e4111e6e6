"""Operations of the `daphne` dialect through which the Python API (DaphneLib) exchanges data with a program.

DAPHNE's DaphneLib generates a DaphneDSL script that reads each numpy input with `receiveFromNumpy(address, rows,
cols, vtc)` and hands the result back with `saveDaphneLibResult(X)` (src/runtime/local/kernels/ReceiveFromNumpy.h,
SaveDaphneLibResult.h). daphnec runs that script in the calling process, so the first argument is not a raw address
but the number of an *input slot* that the API binds to the array for one run (`runtime/kernels/daphnelib.py`).
The program text therefore does not depend on the data: the API caches it, compiled, per DAG shape.

The value type is DAPHNE's value-type code (`f64` = 7, ...) or, as daphnec's addition, its name (`"bool"` has no
code). Rows, columns and value type must be constants: they are the result's static type.
"""

from __future__ import annotations

from xdsl.ir import Attribute, Operation
from xdsl.irdl import irdl_op_definition, operand_def, result_def
from xdsl.utils.exceptions import VerifyException

from daphnec.dialects.ops import DaphneOp, constant_value
from daphnec.dialects.types import UNKNOWN, MatrixType, value_type
from daphnec.dialects.value_types import VALUE_TYPES, VT_OF_CODE


def received_vt(code: object) -> str | None:
    """The value type a `receiveFromNumpy` value-type argument names (a DAPHNE code or a name), else None."""
    if isinstance(code, bool):
        return None
    if isinstance(code, int):
        return VT_OF_CODE.get(code)
    if isinstance(code, str) and code in VALUE_TYPES and code != "index":
        return code
    return None


@irdl_op_definition
class ReceiveFromNumpyOp(DaphneOp):
    """`receiveFromNumpy(slot, rows, cols, vt)`: the array bound to input slot `slot` of the current run."""

    name = "daphne.receiveFromNumpy"
    slot = operand_def()
    num_rows = operand_def()
    num_cols = operand_def()
    vt = operand_def()
    res = result_def()

    def infer(self) -> tuple[Attribute, ...]:
        vt = received_vt(constant_value(self.vt))
        rows, cols = (constant_value(v) for v in (self.num_rows, self.num_cols))
        dims = [d if isinstance(d, int) and not isinstance(d, bool) and d >= 0 else -1 for d in (rows, cols)]
        return (MatrixType(value_type(vt) if vt is not None else UNKNOWN, *dims),)

    def verify_(self) -> None:
        code = constant_value(self.vt)
        if code is not None and received_vt(code) is None:
            raise VerifyException(f"receiveFromNumpy: invalid value type code: {code!r}")


@irdl_op_definition
class SaveDaphneLibResultOp(DaphneOp):
    """`saveDaphneLibResult(x)`: hands `x` (a matrix, frame or scalar) back to the Python caller."""

    name = "daphne.saveDaphneLibResult"
    arg = operand_def()

    def infer(self) -> tuple[Attribute, ...]:
        return ()


OPS: list[type[Operation]] = [ReceiveFromNumpyOp, SaveDaphneLibResultOp]
"""The ops this module defines, registered in the dialect by dialects/daphne.py."""
