"""Small builtins without a better home: `stop([message])`, `typeOf(x)`, the identity (a cast that changes
nothing at run time) and the inline forms of the common scalar casts (`scalar_cast_inline`)."""

from __future__ import annotations

import numpy as np

from daphnec.runtime.errors import StopRequested
from daphnec.runtime.values import cpp_name, vt_of


def identity(x: object) -> object:
    """A cast that changes only static information (a list's element type, a frame's labels): the value itself."""
    return x


_INLINE_CASTS: dict[tuple[str, str], str] = {
    ("si64", "f64"): "{r} = float({0})",
    ("bool", "f64"): "{r} = float({0})",
    ("bool", "si64"): "{r} = 1 if {0} else 0",
    ("si64", "bool"): "{r} = {0} != 0",
    ("f64", "bool"): "{r} = {0} != 0",  # NaN != 0: true, like static_cast<bool>(NaN)
    # cvttsd2si: truncation, INT64_MIN for NaN and out of range (runtime.values._f2i64)
    ("f64", "si64"): "{r} = int({0}) if -9223372036854775808.0 <= {0} < 9223372036854775808.0 else "
    "-9223372036854775808",
}


def scalar_cast_inline(src: str, dst: str) -> str | None:
    """The host-code template (`{r} = ...` over the operand `{0}`) of `values.cast_scalar(x, dst)` for a scalar of
    value type `src`, where one Python expression gives exactly the cast's result; None: the cast is called."""
    return _INLINE_CASTS.get((src, dst))


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
