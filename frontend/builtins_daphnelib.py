"""DaphneDSL builtins of the Python API's data exchange (see frontend/builtins_base.py for `Builtin`).

`receiveFromNumpy(slot, rows, cols, vt)` and `saveDaphneLibResult(x)` appear in the programs that DaphneLib (the
Python API, `tools/daphnelib`) generates, as in DAPHNE (src/parser/daphnedsl/DaphneDSLBuiltins.cpp); their ops and
the meaning of `slot` are described in dialects/ops_daphnelib.py.
"""

from __future__ import annotations

from daphnec.dialects.ops_daphnelib import ReceiveFromNumpyOp, SaveDaphneLibResultOp
from daphnec.frontend.builtins_base import Builtin, op_builder, params

BUILTINS: dict[str, Builtin] = {
    "receiveFromNumpy": Builtin(params("slot", "rows", "cols", "valueType"), op_builder(ReceiveFromNumpyOp)),
    "saveDaphneLibResult": Builtin(params("arg"), op_builder(SaveDaphneLibResultOp)),
}
