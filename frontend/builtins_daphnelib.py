"""DaphneDSL builtins of the Python API's data exchange (see frontend/builtins.py for `Builtin` and the helpers).

`receiveFromNumpy(slot, rows, cols, vt)` and `saveDaphneLibResult(x)` appear in the programs that DaphneLib (the
Python API, `tools/daphnelib`) generates, as in DAPHNE (src/parser/daphnedsl/DaphneDSLBuiltins.cpp); their ops and
the meaning of `slot` are described in dialects/ops_daphnelib.py.
"""

from __future__ import annotations

from daphnec.dialects.ops_daphnelib import ReceiveFromNumpyOp, SaveDaphneLibResultOp
from daphnec.frontend.builtins import Builtin, _op, _p

BUILTINS: dict[str, Builtin] = {
    "receiveFromNumpy": Builtin(_p("slot", "rows", "cols", "valueType"), _op(ReceiveFromNumpyOp)),
    "saveDaphneLibResult": Builtin(_p("arg"), _op(SaveDaphneLibResultOp)),
}
