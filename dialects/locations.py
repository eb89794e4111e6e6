"""Source locations on IR ops: DaphneDSL `file:line:col`, kept in xDSL's `FileLineColLoc` so they survive
cloning and IR text round-trips (printed only when asked for)."""

from __future__ import annotations

from xdsl.dialects.builtin import FileLineColLoc, IntAttr, StringAttr
from xdsl.ir import Operation

from daphnec.dialects.errors import Loc


def to_attr(loc: Loc) -> FileLineColLoc:
    return FileLineColLoc(StringAttr(loc.file), IntAttr(loc.line), IntAttr(loc.col))


def loc_of(op: Operation | None) -> Loc | None:
    """The DaphneDSL location of an op, or of its closest located parent."""
    while op is not None:
        loc = op.location
        if isinstance(loc, FileLineColLoc):
            return Loc(loc.filename.data, loc.line.data, loc.column.data)
        op = op.parent_op()
    return None
