"""DaphneDSL built-in functions: their parameters (for keyword arguments and arity checks) and the IR they build.

Each entry names the parameters as DAPHNE's doc/DaphneDSL/Builtins.md does, so `seq(from=0, to=6, inc=2)` works,
and a builder that turns the (already built) argument values into daphne ops (`Builtin` and the builder
interface are in `builtins_base.py`). The language core's builtins are here; each category module
(`builtins_matrix.py`, `builtins_frame.py`, `builtins_io.py`) has its own `BUILTINS` table, and `all_builtins()`
merges them. Adding a builtin means one `Builtin(...)` line in its category's table,
the op in the matching `dialects/ops_*.py` and its kernel in `runtime/kernels/`.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import SSAValue

from daphnec.dialects import ops
from daphnec.dialects.errors import Loc, ParseError
from daphnec.dialects.op_kinds import AGGREGATIONS, EW_BINARY, EW_UNARY
from daphnec.dialects.types import is_matrix
from daphnec.frontend import builtins_daphnelib, builtins_frame, builtins_io, builtins_matrix
from daphnec.frontend.builtins_base import Build, Builder, Builtin, Typed, op_builder, params


def _agg(kind: str) -> Build:
    """`agg(X)` is a full aggregation; `agg(X, axis)` with a constant axis 0 (per row) or 1 (per column)."""

    def build(b: Builder, args: list[SSAValue], loc: Loc) -> SSAValue:
        if len(args) == 1:
            return b.op(ops.AGG_OPS[(kind, "all")], args, loc)
        axis = ops.constant_value(args[1])
        if axis not in (0, 1) or isinstance(axis, bool):
            raise ParseError("the axis of an aggregation must be the constant 0 (row-wise) or 1 (column-wise)", loc)
        return b.op(ops.AGG_OPS[(kind, "row" if axis == 0 else "col")], [args[0]], loc)

    return build


def _stop(b: Builder, args: list[SSAValue], loc: Loc) -> None:
    b.op(ops.StopOp, [b.cast(args[0], "str", "scalar", loc)], loc)


def _now(b: Builder, args: list[SSAValue], loc: Loc) -> SSAValue:
    return b.op(ops.NowOp, [], loc)


def _cast_scalar(b: Builder, args: list[SSAValue], loc: Loc) -> SSAValue:
    return b.cast(args[0], None, "scalar", loc)


def _size_args(*positions: int) -> Callable[[type], Build]:
    """Builders whose size arguments (rows/cols) are cast to the size type, as DAPHNE's `Size` operands."""

    def wrap(cls: type) -> Build:
        def build(b: Builder, args: list[SSAValue], loc: Loc) -> SSAValue:
            args = [b.cast(a, "index", "scalar", loc) if i in positions else a for i, a in enumerate(args)]
            return b.op(cls, args, loc)

        return build

    return wrap


def _rand(b: Builder, args: list[SSAValue], loc: Loc) -> SSAValue:
    rows, cols, lo, hi, sparsity, seed = args
    return b.op(
        ops.RandMatrixOp,
        [
            b.cast(rows, "index", "scalar", loc),
            b.cast(cols, "index", "scalar", loc),
            lo,
            hi,
            b.cast(sparsity, "f64", "scalar", loc),
            b.cast(seed, "si64", "scalar", loc),
        ],
        loc,
    )


def _ew_binary(kind: str) -> Build:
    return op_builder(ops.EW_BINARY_OPS[kind])


def _ew_unary(kind: str) -> Build:
    return op_builder(ops.EW_UNARY_OPS[kind])


def _min_max(kind: str) -> Build:
    """`min(a, b)` / `max(a, b)` element-wise; DAPHNE also accepts `min(X)` as the full aggregation."""

    def build(b: Builder, args: list[SSAValue], loc: Loc) -> SSAValue:
        if len(args) == 1:
            if not is_matrix(args[0].type):
                raise ParseError(f"built-in function '{kind}' with one argument expects a matrix", loc)
            return b.op(ops.AGG_OPS[(kind, "all")], args, loc)
        if len(args) != 2:
            raise ParseError(f"built-in function '{kind}' expects 1 or 2 argument(s), but got {len(args)}", loc)
        return b.op(ops.EW_BINARY_OPS[kind], args, loc)

    return build


BUILTINS: dict[str, Builtin] = {
    # data generation
    "fill": Builtin(params("value", "numRows", "numCols"), _size_args(1, 2)(ops.FillOp)),
    "seq": Builtin(params("from", "to", "inc", inc=Typed(1, "si8")), op_builder(ops.SeqOp)),
    "rand": Builtin(params("numRows", "numCols", "min", "max", "sparsity", "seed"), _rand),
    # dimensions
    "nrow": Builtin(params("arg"), op_builder(ops.NumRowsOp)),
    "ncol": Builtin(params("arg"), op_builder(ops.NumColsOp)),
    "ncell": Builtin(params("arg"), op_builder(ops.NumCellsOp)),
    # reorganisation and linear algebra
    "reshape": Builtin(params("arg", "numRows", "numCols"), _size_args(1, 2)(ops.ReshapeOp)),
    "t": Builtin(params("arg"), op_builder(ops.TransposeOp)),
    "transpose": Builtin(params("arg"), op_builder(ops.TransposeOp)),
    # conversions, control, measurements
    "stop": Builtin(params("message", message="unspecified reason"), _stop),
    "typeOf": Builtin(params("arg"), op_builder(ops.TypeOfOp)),
    "now": Builtin((), _now),
    "as.scalar": Builtin(params("arg"), _cast_scalar),
}

# the element-wise and aggregation builtins, one per kind (dialects/op_kinds.py)
for _unary in EW_UNARY.values():
    BUILTINS[_unary.builtin] = Builtin(params("arg"), _ew_unary(_unary.kind))
for _binary in EW_BINARY.values():
    if _binary.function in AGGREGATIONS:  # min(a, b), and min(X) = aggMin(X)
        BUILTINS[_binary.function] = Builtin((), _min_max(_binary.kind), variadic=True)
    elif _binary.function is not None:
        BUILTINS[_binary.function] = Builtin(params("lhs", "rhs"), _ew_binary(_binary.kind))
for _agg_kind in AGGREGATIONS.values():
    BUILTINS[_agg_kind.builtin] = Builtin(params("arg", "axis", axis=None), _agg(_agg_kind.kind))


def all_builtins() -> dict[str, Builtin]:
    """Every builtin of every category (a name defined twice is a programming error)."""
    table = dict(BUILTINS)
    for mod in (builtins_matrix, builtins_frame, builtins_io, builtins_daphnelib):
        for name, b in mod.BUILTINS.items():
            assert name not in table, f"builtin '{name}' defined twice"
            table[name] = b
    return table
