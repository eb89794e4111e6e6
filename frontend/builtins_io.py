"""DaphneDSL builtins of the io category (see frontend/builtins.py for `Builtin` and the helpers).

`readMatrix`/`readFrame` build one `daphne.read` op whose result type (a matrix or a frame of Unknown value type)
tells which was asked for, as DAPHNE's DaphneDSLBuiltins.cpp does; `write`, `writeMatrix` and `writeFrame` are
synonyms (the argument's type decides how it is stored).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from xdsl.ir import Attribute, SSAValue

from daphnec.dialects.errors import Loc
from daphnec.dialects.ops_io import ReadOp, WriteOp
from daphnec.frontend.builtins import Builtin, _p

if TYPE_CHECKING:
    from daphnec.frontend.ir_builder import IRBuilder


def _read(result_type: Callable[[], Attribute]) -> Callable[[IRBuilder, list[SSAValue], Loc], SSAValue]:
    def build(b: IRBuilder, args: list[SSAValue], loc: Loc) -> SSAValue:
        return b._add(ReadOp(args[0], result_type()), loc).results[0]  # noqa: SLF001 - the result type is preset

    return build


def _write(b: IRBuilder, args: list[SSAValue], loc: Loc) -> None:
    b.op(WriteOp, args, loc)


BUILTINS: dict[str, Builtin] = {
    "readMatrix": Builtin(_p("filename"), _read(ReadOp.matrix_type)),
    "readFrame": Builtin(_p("filename"), _read(ReadOp.frame_type)),
    "write": Builtin(_p("arg", "filename"), _write),
    "writeMatrix": Builtin(_p("arg", "filename"), _write),
    "writeFrame": Builtin(_p("arg", "filename"), _write),
}
