"""Small builtins without a better home: `stop([message])`, `typeOf(x)`, and the identity (a cast that changes
nothing at run time)."""

from __future__ import annotations

import numpy as np

from daphnec.runtime.errors import StopRequested
from daphnec.runtime.values import cpp_name, vt_of


def identity(x: object) -> object:
    """A cast that changes only static information (a list's element type, a frame's labels): the value itself."""
    return x


def stop(message: str = "unspecified reason") -> None:
    """`stop([message])`: abort the script; DAPHNE's Stop.h throws "system stopped: <message>" (the message
    defaults to "unspecified reason", DaphneDSLBuiltins.cpp)."""
    raise StopRequested(f"system stopped: {message}")


def type_of(x: object, vt: str | None = None) -> str:
    """`typeOf(x)`: the C++ type name of a scalar (`double`, `int64_t`, ...; `vt` is its value type as compiled, the
    Python value does not show its width), or a data object's print header (`DenseMatrix(2x3, double)`,
    `Frame(...)`), as DAPHNE's TypeOf kernel names runtime types."""
    if vt is not None:
        return "const char*" if vt == "str" else cpp_name(vt)
    if isinstance(x, np.ndarray):
        return f"DenseMatrix({x.shape[0]}x{x.shape[1]}, {cpp_name(vt_of(x))})"
    if isinstance(x, str):
        return "const char*"
    from daphnec.runtime.printing import format_obj

    if not isinstance(x, (bool, int, float)):
        return format_obj(x).split("\n", 1)[0]
    return cpp_name(vt_of(x))
