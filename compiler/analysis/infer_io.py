"""Compile-time type inference for file I/O ops: the `.meta` file of a constant file name gives type and shape.

DAPHNE reads `<file>.meta` while compiling (ReadOp::inferTypes/inferShape/inferFrameLabels via
CompilerUtils::getFileMetaData) and fails the compilation (exit 2) if it is missing or malformed; so does daphnec,
naming the file and the key. Relative names resolve against the current directory, as at run time. A Parquet file
without `.meta` is typed by its own schema (runtime/io/parquet.py).

The file name must be a compile-time constant (a literal, a script argument, anything canonicalization folds to a
constant, or a constant passed to a function that reads it: specialization inlines it); otherwise the value type
stays unknown and kernel selection reports that (DAPHNE fails the same way), unless the script casts the result to
a value type (`as.matrix<f64>(readMatrix(name))`): then the `.meta` is read at run time and the data converted.
One extension: when the script itself writes that constant file name before reading it (e.g.
`write(X, "out.csv"); Y = readMatrix("out.csv");`), the type of the written data is used, since that is exactly
the `.meta` the write will produce (DAPHNE would read a stale or missing `.meta` instead); the same holds when the
`.meta` does not exist yet and the script writes the file anywhere.
"""

from __future__ import annotations

import os

from xdsl.dialects.builtin import ModuleOp, UnitAttr
from xdsl.ir import Attribute, Operation

from daphnec.dialects.attr_names import DECLARED_TYPE_ATTR
from daphnec.dialects.errors import CompileError
from daphnec.dialects.locations import loc_of
from daphnec.dialects.ops import CastOp, constant_value
from daphnec.dialects.ops_io import ReadOp, WriteOp
from daphnec.dialects.types import FrameType, MatrixType, value_type, vt_name
from daphnec.runtime.io import parquet
from daphnec.runtime.io.meta import FileMeta, MetaDataError, meta_path, meta_value_type, read_meta


def infer_read(op: ReadOp) -> tuple[Attribute, ...]:
    """ReadOp's type from the `.meta` of a constant file name (see the module docstring)."""
    name = constant_value(op.file_name)
    if not isinstance(name, str):
        declared = _declared_type(op)
        return (declared,) if declared is not None else op.infer()
    who = "readFrame" if op.reads_frame() else "readMatrix"
    earlier = _earlier_write(op, name)
    if earlier is not None:  # the script itself produces the file (and its .meta) before reading it
        t = _type_from_write(op, earlier)
        return (t,) if t is not None else op.infer()
    if os.path.exists(meta_path(name)) or _self_described(name):
        try:
            meta = (
                read_meta(name)
                if os.path.exists(meta_path(name))
                else parquet.file_meta(name, who, not op.reads_frame())
            )
        except MetaDataError as e:
            raise CompileError(f"{who}: {e}", loc_of(op)) from None
        return (_type_from_meta(op, meta),)
    written = _written_types(op, name)
    if not written:
        raise CompileError(
            f"{who}: cannot read the meta data file '{meta_path(name)}' of '{name}' while compiling: no such file "
            "(the type and shape of the data come from it)",
            loc_of(op),
        )
    t = _type_from_write(op, written.pop()) if len(written) == 1 else None
    return (t,) if t is not None else op.infer()


def _declared_type(op: ReadOp) -> Attribute | None:
    """The matrix type the single use of a read's result casts it to, if that cast names a value type."""
    uses = list(op.res.uses)
    if op.reads_frame() or len(uses) != 1 or not isinstance(uses[0].operation, CastOp):
        return None
    t = uses[0].operation.res.type
    if not isinstance(t, MatrixType) or vt_name(t) is None:
        return None
    op.attributes[DECLARED_TYPE_ATTR] = UnitAttr()
    return _matrix(op, t.element_type, -1, -1)


def _self_described(name: str) -> bool:
    """A Parquet file carries its schema: without a `.meta` its type and shape come from the file itself."""
    return name.endswith(parquet.EXTENSION) and os.path.isfile(name)


def _rep(op: ReadOp) -> str:
    """Keep a sparse representation chosen for this read by an earlier pass."""
    return op.res.type.representation.data if isinstance(op.res.type, MatrixType) else "dense"


def _matrix(op: ReadOp, elem: Attribute, rows: int, cols: int) -> MatrixType:
    """The matrix type of the read, keeping the representation and sparsity estimate `select-matrix-repr` chose."""
    t = MatrixType(elem, rows, cols, _rep(op))
    cur = op.res.type
    if isinstance(cur, MatrixType) and getattr(cur, "sparsity_estimate", -1.0) != -1.0:
        return t.with_representation(_rep(op), cur.sparsity_estimate)
    return t


def read_sparsity(op: ReadOp) -> float:
    """DAPHNE's ReadOp::inferSparsity: numNonZeros / numRows / numCols from the `.meta` of a constant file name,
    -1 if unknown. For `select-matrix-repr` (the sparsity estimate of a read)."""
    name = constant_value(op.file_name)
    if not isinstance(name, str) or not os.path.exists(meta_path(name)):
        return -1.0
    try:
        meta = read_meta(name)
    except MetaDataError:
        return -1.0
    if meta.num_non_zeros < 0 or meta.num_rows == 0 or meta.num_cols == 0:
        return -1.0
    return meta.num_non_zeros / meta.num_rows / meta.num_cols


def _type_from_meta(op: ReadOp, meta: FileMeta) -> Attribute:
    if op.reads_frame():
        labels = list(meta.labels) if meta.labels is not None else [f"col_{i}" for i in range(meta.num_cols)]
        return FrameType([value_type(vt) for vt in meta.value_types], meta.num_rows, labels)
    return _matrix(op, value_type(meta.value_type), meta.num_rows, meta.num_cols)


def _writes(root: Operation, name: str) -> list[WriteOp]:
    return [w for w in root.walk() if isinstance(w, WriteOp) and constant_value(w.file_name) == name]


def _earlier_write(op: ReadOp, name: str) -> Attribute | None:
    """The type of the last write of `name` before `op` in its function (in program text order), if any."""
    f = op.parent_op()
    while f is not None and f.parent_op() is not None and not isinstance(f.parent_op(), ModuleOp):
        f = f.parent_op()
    last = None
    for o in f.walk() if f is not None else ():
        if o is op:
            return last
        if isinstance(o, WriteOp) and constant_value(o.file_name) == name:
            last = o.arg.type
    return None


def _written_types(op: Operation, name: str) -> set[Attribute]:
    """Types of the data the script writes to the constant file name `name`, anywhere."""
    root = op
    while root.parent_op() is not None:
        root = root.parent_op()  # type: ignore[assignment]
    return {w.arg.type for w in _writes(root, name)}


def _stored(t: Attribute) -> Attribute | None:
    """The value type a written `.meta` records for element type `t` (`index` is stored as ui64)."""
    vt = vt_name(t)
    return value_type(meta_value_type(vt)) if vt is not None else None


def _type_from_write(op: ReadOp, t: Attribute) -> Attribute | None:
    """What reading back data of type `t` gives, or None while `t` is not fully inferred."""
    if isinstance(t, FrameType):
        cts = [_stored(c) for c in t.column_types.data]
        if any(c is None for c in cts):
            return None
        if op.reads_frame():
            return FrameType(cts, t.rows.data, t.label_names)  # type: ignore[arg-type]
        return _matrix(op, cts[0], t.rows.data, len(cts)) if cts else None  # type: ignore[arg-type]
    if not isinstance(t, MatrixType) or _stored(t) is None:
        return None
    rows, cols = t.shape
    if not op.reads_frame():
        return _matrix(op, _stored(t), rows, cols)  # type: ignore[arg-type]
    return FrameType([_stored(t)] * cols, rows, [f"col_{i}" for i in range(cols)]) if cols >= 0 else None
