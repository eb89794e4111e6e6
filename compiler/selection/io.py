"""Kernel selectors for the io builtins (see compiler/selection/table.py).

The read kernel gets the inferred type baked in (value type, shape, dense or CSR, frame schema and labels); if the
type is still unknown here, the file name was not a compile-time constant, which DAPHNE does not support either.
"""

from __future__ import annotations

import functools

from daphnec.compiler.selection.spec import KernelSpec
from daphnec.dialects.attr_names import DECLARED_TYPE_ATTR
from daphnec.dialects.errors import CompileError
from daphnec.dialects.locations import loc_of
from daphnec.dialects.ops_io import ReadOp, WriteOp
from daphnec.dialects.types import FrameType, MatrixType, is_unknown, vt_name


def _unknown_type(op: ReadOp) -> CompileError:
    who = "readFrame" if op.reads_frame() else "readMatrix"
    return CompileError(
        f"{who}: the type of the data cannot be inferred: the file name must be a compile-time constant (a string "
        "literal or a script argument), because the type and shape come from the file's .meta while compiling"
        + (
            ""
            if op.reads_frame()
            else "; for a name known only at run time, give the value type with as.matrix<f64>(readMatrix(...))"
        ),
        loc_of(op),
    )


def select_read(op: ReadOp) -> KernelSpec:
    from daphnec.runtime.kernels import io  # here, not at import: only scripts that read files need the readers

    t = op.res.type
    if isinstance(t, FrameType):
        schema = tuple(vt_name(c) for c in t.column_types.data)
        if any(v is None for v in schema):
            raise _unknown_type(op)
        labels = tuple(t.label_names) if t.label_names is not None else None
        fn = functools.partial(io.read_frame, schema=schema, labels=labels, rows=t.rows.data)
        return KernelSpec(fn, (None,), "read_frame")
    if not isinstance(t, MatrixType) or is_unknown(t):
        raise _unknown_type(op)
    rows, cols = t.shape
    convert = DECLARED_TYPE_ATTR in op.attributes  # the name is known at run time only: read its .meta then, convert
    fn = functools.partial(io.read_matrix, vt=vt_name(t), sparse=t.is_sparse, rows=rows, cols=cols, convert=convert)
    return KernelSpec(fn, (None,), "read_matrix")


def select_write(op: WriteOp) -> KernelSpec:
    from daphnec.runtime.kernels import io  # here, not at import: only scripts that write files need the writers

    if is_unknown(op.arg.type):
        raise CompileError(
            f"daphne.write: the type of the data to write could not be inferred ({op.arg.type})", loc_of(op)
        )
    return KernelSpec(io.write, (None, None), "write")
