"""DaphneDSL builtins of the io category (see frontend/builtins_base.py for `Builtin` and the helpers): `print`,
reading and writing files.

`readMatrix`/`readFrame` build one `daphne.read` op whose result type (a matrix or a frame of Unknown value type)
tells which was asked for, as DAPHNE's DaphneDSLBuiltins.cpp does; `write`, `writeMatrix` and `writeFrame` are
synonyms (the argument's type decides how it is stored).
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import Attribute, SSAValue

from daphnec.dialects.errors import Loc
from daphnec.dialects.ops_io import PrintOp, ReadOp, WriteOp
from daphnec.frontend.builtins_base import Build, Builder, Builtin, params


def _read(result_type: Callable[[], Attribute]) -> Build:
    def build(b: Builder, args: list[SSAValue], loc: Loc) -> SSAValue:
        return b.insert(ReadOp(args[0], result_type()), loc).results[0]  # the result type is preset

    return build


def _write(b: Builder, args: list[SSAValue], loc: Loc) -> None:
    b.op(WriteOp, args, loc)


def _print(b: Builder, args: list[SSAValue], loc: Loc) -> None:
    newline = b.as_bool(args[1], loc, "print's second argument (newline)")
    b.op(PrintOp, [args[0], newline, b.as_bool(args[2], loc, "print's third argument (toStderr)")], loc)


BUILTINS: dict[str, Builtin] = {
    "print": Builtin(params("arg", "newline", "toStderr", newline=True, toStderr=False), _print),
    "readMatrix": Builtin(params("filename"), _read(ReadOp.matrix_type)),
    "readFrame": Builtin(params("filename"), _read(ReadOp.frame_type)),
    "write": Builtin(params("arg", "filename"), _write),
    "writeMatrix": Builtin(params("arg", "filename"), _write),
    "writeFrame": Builtin(params("arg", "filename"), _write),
}
