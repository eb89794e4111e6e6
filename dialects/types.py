"""Types of the `daphne` dialect and helpers to move between them and DAPHNE's value-type names.

Scalars use xDSL's builtin types so the IR reads like DAPHNE's (`si64`, `f64`, `i1` for bool, `index`);
strings, matrices, frames, lists and the not-yet-inferred `Unknown` type are dialect types.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    ArrayAttr,
    Float32Type,
    Float64Type,
    FloatData,
    IndexType,
    IntAttr,
    IntegerType,
    NoneAttr,
    Signedness,
    StringAttr,
)
from xdsl.ir import Attribute, ParametrizedAttribute, TypeAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer

from daphnec.dialects.value_types import VALUE_TYPES, ValueType, is_integral_vt, most_general


@irdl_attr_definition
class UnknownType(ParametrizedAttribute, TypeAttribute):
    """A type not inferred yet (untyped function parameters before specialization, for instance)."""

    name = "daphne.Unknown"


@irdl_attr_definition
class StringType(ParametrizedAttribute, TypeAttribute):
    """DaphneDSL's `str` value type."""

    name = "daphne.String"


@irdl_attr_definition
class MatrixType(ParametrizedAttribute, TypeAttribute):
    """A matrix: element value type, rows and cols (-1 = unknown), representation (dense or sparse/CSR) and the
    compiler's estimate of its sparsity, the fraction of non-zeros (-1 = unknown).

    Printed like DAPHNE's: `!daphne.Matrix<2x3xf64>`, `!daphne.Matrix<?x?xsi64:sp[2.500000e-01]:rep[sparse]>`
    (the estimate is printed like an MLIR float and only when known).
    """

    name = "daphne.Matrix"

    element_type: Attribute
    rows: IntAttr
    cols: IntAttr
    representation: StringAttr
    sparsity: FloatData

    def __init__(
        self,
        element_type: Attribute,
        rows: int = -1,
        cols: int = -1,
        representation: str = "dense",
        sparsity: float = -1.0,
    ):
        super().__init__(element_type, IntAttr(rows), IntAttr(cols), StringAttr(representation), FloatData(sparsity))

    @property
    def shape(self) -> tuple[int, int]:
        return (self.rows.data, self.cols.data)

    @property
    def is_sparse(self) -> bool:
        return self.representation.data == "sparse"

    def with_shape(self, rows: int | None = None, cols: int | None = None) -> MatrixType:
        """The same matrix type with another row and/or column count (-1 = unknown)."""
        return MatrixType(
            self.element_type,
            self.rows.data if rows is None else rows,
            self.cols.data if cols is None else cols,
            self.representation.data,
            self.sparsity.data,
        )

    @property
    def sparsity_estimate(self) -> float:
        """The estimated fraction of non-zeros, -1.0 if unknown."""
        return self.sparsity.data

    def with_representation(self, representation: str, sparsity: float) -> MatrixType:
        """The same matrix type with another representation and sparsity estimate."""
        return MatrixType(self.element_type, self.rows.data, self.cols.data, representation, sparsity)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        parser.parse_punctuation("<")
        dims, elem = parser.parse_ranked_shape()
        if len(dims) != 2:
            parser.raise_error("a daphne matrix has exactly two dimensions")
        rep, sparsity = "dense", -1.0
        while parser.parse_optional_punctuation(":") is not None:
            key = parser.parse_keyword_in(("sp", "rep"))
            parser.parse_punctuation("[")
            if key == "rep":
                rep = parser.parse_keyword_in(("dense", "sparse"))
            else:
                sparsity = float(parser.parse_number())
            parser.parse_punctuation("]")
        parser.parse_punctuation(">")
        return [elem, IntAttr(dims[0]), IntAttr(dims[1]), StringAttr(rep), FloatData(sparsity)]

    def print_parameters(self, printer: Printer) -> None:
        rows, cols = (("?" if d < 0 else str(d)) for d in self.shape)
        printer.print_string(f"<{rows}x{cols}x")
        printer.print_attribute(self.element_type)
        if self.sparsity.data != -1.0:
            printer.print_string(":sp[")
            printer.print_float(self.sparsity.data, Float64Type())
            printer.print_string("]")
        if self.is_sparse:
            printer.print_string(":rep[sparse]")
        printer.print_string(">")


@irdl_attr_definition
class FrameType(ParametrizedAttribute, TypeAttribute):
    """A frame: rows (-1 = unknown), one value type per column and the column labels (or none if unknown).

    Printed as `!daphne.Frame<3x[si64, f64], ["a", "b"]>`; labels are omitted when unknown.
    """

    name = "daphne.Frame"

    rows: IntAttr
    column_types: ArrayAttr[Attribute]
    labels: ArrayAttr[StringAttr] | NoneAttr

    def __init__(self, column_types: Sequence[Attribute], rows: int = -1, labels: Sequence[str] | None = None):
        lbl = NoneAttr() if labels is None else ArrayAttr([StringAttr(x) for x in labels])
        super().__init__(IntAttr(rows), ArrayAttr(column_types), lbl)

    @property
    def label_names(self) -> list[str] | None:
        return None if isinstance(self.labels, NoneAttr) else [x.data for x in self.labels.data]

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        parser.parse_punctuation("<")
        rows = -1 if parser.parse_optional_punctuation("?") is not None else parser.parse_integer()
        parser.parse_shape_delimiter()
        cts = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_type)
        labels: Attribute = NoneAttr()
        if parser.parse_optional_punctuation(",") is not None:
            names = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_str_literal)
            labels = ArrayAttr([StringAttr(n) for n in names])
        parser.parse_punctuation(">")
        return [IntAttr(rows), ArrayAttr(cts), labels]

    def print_parameters(self, printer: Printer) -> None:
        rows = "?" if self.rows.data < 0 else str(self.rows.data)
        printer.print_string(f"<{rows}x[")
        printer.print_list(self.column_types.data, printer.print_attribute)
        printer.print_string("]")
        if self.label_names is not None:
            printer.print_string(", [")
            printer.print_list(self.label_names, printer.print_string_literal)
            printer.print_string("]")
        printer.print_string(">")


@irdl_attr_definition
class ListType(ParametrizedAttribute, TypeAttribute):
    """A list of data objects (matrices), as created by `createList`."""

    name = "daphne.List"

    element_type: Attribute


@irdl_attr_definition
class ColumnType(ParametrizedAttribute, TypeAttribute):
    """DAPHNE's column, the data type of the columnar ops (`--columnar`): one value type, rows (-1 = unknown).

    Printed like DAPHNE's `!daphne.Column<?xsi64>`; at run time a column is a 1-D numpy array."""

    name = "daphne.Column"

    element_type: Attribute
    rows: IntAttr

    def __init__(self, element_type: Attribute, rows: int = -1):
        super().__init__(element_type, IntAttr(rows))

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        parser.parse_punctuation("<")
        rows = -1 if parser.parse_optional_punctuation("?") is not None else parser.parse_integer()
        parser.parse_shape_delimiter()
        elem = parser.parse_type()
        parser.parse_punctuation(">")
        return [elem, IntAttr(rows)]

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{'?' if self.rows.data < 0 else self.rows.data}x")
        printer.print_attribute(self.element_type)
        printer.print_string(">")


# --- value types -------------------------------------------------------------------------------------------------


def _ir_type(vt: ValueType) -> Attribute:
    """The IR type of a value type: xDSL's builtin integer/float/index types, `!daphne.String` for str."""
    if vt.name == "index":
        return IndexType()
    if vt.kind == "float":
        return Float64Type() if vt.bits == 64 else Float32Type()
    if vt.kind == "str":
        return StringType()
    if vt.kind == "bool":
        return IntegerType(1)
    return IntegerType(vt.bits, Signedness.SIGNED if vt.signed else Signedness.UNSIGNED)


_VT_TO_TYPE: dict[str, Attribute] = {n: _ir_type(vt) for n, vt in VALUE_TYPES.items()}
_TYPE_TO_VT: dict[Attribute, str] = {t: n for n, t in _VT_TO_TYPE.items()}

UNKNOWN = UnknownType()
STR = StringType()
F64 = _VT_TO_TYPE["f64"]
SI64 = _VT_TO_TYPE["si64"]
BOOL = _VT_TO_TYPE["bool"]
INDEX = _VT_TO_TYPE["index"]


def value_type(name: str) -> Attribute:
    """The IR type of a DAPHNE value-type name (`f64`, `si64`, `bool`, `str`, ...)."""
    return _VT_TO_TYPE[name]


def vt_name(t: Attribute) -> str | None:
    """DAPHNE's value-type name of a scalar type, or of a matrix's or column's element type; None if unknown."""
    if isinstance(t, (MatrixType, ColumnType)):
        t = t.element_type
    return _TYPE_TO_VT.get(t)


def is_scalar(t: Attribute) -> bool:
    return t in _TYPE_TO_VT


def is_matrix(t: Attribute) -> bool:
    return isinstance(t, MatrixType)


def is_unknown(t: Attribute) -> bool:
    return isinstance(t, UnknownType) or (
        isinstance(t, (MatrixType, ColumnType)) and isinstance(t.element_type, UnknownType)
    )


def is_int_vt(name: str) -> bool:
    """True for the integer value types and bool (the IR's integer types, `i1` included)."""
    return is_integral_vt(name)


def with_value_type(t: Attribute, vt: Attribute) -> Attribute:
    """The same data type (scalar or matrix of the same shape) with another value type."""
    if isinstance(t, MatrixType):
        return MatrixType(vt, t.rows.data, t.cols.data, t.representation.data, t.sparsity.data)
    return vt


def join_types(a: Attribute, b: Attribute) -> Attribute:
    """The least type that holds both `a` and `b` (used where control flow merges: loops, if/else).

    Unknown is the bottom element, so inference over a recursive function converges.
    """
    if a == b or is_unknown(b):
        return a
    if is_unknown(a):
        return b
    if isinstance(a, MatrixType) and isinstance(b, MatrixType):
        va, vb = vt_name(a), vt_name(b)
        elem = value_type(most_general(va, vb)) if va and vb else UNKNOWN
        rows = a.rows.data if a.rows == b.rows else -1
        cols = a.cols.data if a.cols == b.cols else -1
        rep = a.representation.data if a.representation == b.representation else "dense"
        sparsity = a.sparsity.data if a.sparsity == b.sparsity else -1.0
        return MatrixType(elem, rows, cols, rep, sparsity)
    if isinstance(a, FrameType) and isinstance(b, FrameType):
        return join_frame_types(a, b)
    if isinstance(a, ListType) and isinstance(b, ListType):
        return ListType(join_types(a.element_type, b.element_type))
    va, vb = vt_name(a), vt_name(b)
    if va and vb and not isinstance(a, MatrixType) and not isinstance(b, MatrixType):
        return value_type(most_general(va, vb))
    return a  # incompatible data types: the verifier of the merging op reports it


def frame_width(t: FrameType) -> int:
    """The number of columns of a frame type, -1 if unknown: a frame has at least one column, so a frame type
    without column types (a `frame` parameter annotation) leaves the columns unknown."""
    return len(t.column_types.data) or -1


def frame_label_error(t: Attribute, label: str) -> str | None:
    """Why `label` names no column of frame type `t`; None if it does or if `t`'s labels are not known."""
    names = t.label_names if isinstance(t, FrameType) else None
    if names is None or label in names:
        return None
    return f"the frame has no column labeled '{label}' (its labels are: {', '.join(repr(n) for n in names)})"


def frame_column_type(t: Attribute, label: str | None) -> Attribute:
    """The value type of the column labelled `label` in frame type `t` (Unknown when it cannot be told)."""
    names = t.label_names if isinstance(t, FrameType) else None
    if names is None or label is None or label not in names:
        return UNKNOWN
    return t.column_types.data[names.index(label)]  # type: ignore[union-attr]


def join_frame_types(a: FrameType, b: FrameType) -> FrameType:
    """Frames with the same number of columns join column-wise (most general value type per column); labels and
    the row count survive only where both agree. Frames of different widths do not join (the first is kept)."""
    ca, cb = a.column_types.data, b.column_types.data
    if len(ca) != len(cb):
        return a
    pairs = zip(ca, cb, strict=True)
    cols = [x if x == y else join_types(x, y) if vt_name(x) and vt_name(y) else UNKNOWN for x, y in pairs]
    rows = a.rows.data if a.rows == b.rows else -1
    labels = a.label_names if a.label_names == b.label_names else None
    return FrameType(cols, rows, labels)


def dsl_type(t: Attribute) -> str:
    """A type as a DaphneDSL user writes it: `si64`, `matrix<f64>`, `frame`, `list`; `?` where it is unknown."""
    if isinstance(t, MatrixType):
        vt = vt_name(t)
        return f"matrix<{vt}>" if vt else "matrix"
    if isinstance(t, FrameType):
        return "frame"
    if isinstance(t, ListType):
        return "list"
    return vt_name(t) or "?"
