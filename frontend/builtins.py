"""DaphneDSL built-in functions: their parameters (for keyword arguments and arity checks) and the IR they build.

Each entry names the parameters as DAPHNE's doc/DaphneDSL/Builtins.md does, so `seq(from=0, to=6, inc=2)` works,
and a builder that turns the (already built) argument values into daphne ops. The language core's builtins are
here; each category module (`builtins_matrix.py`, `builtins_frame.py`, `builtins_io.py`) has its own `BUILTINS`
table, and `all_builtins()` merges them. Adding a builtin means one `Builtin(...)` line in its category's table,
the op in the matching `dialects/ops_*.py` and its kernel in `runtime/kernels/`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from xdsl.ir import SSAValue

from daphnec.dialects import ops
from daphnec.dialects.errors import Loc, ParseError
from daphnec.dialects.types import is_matrix

if TYPE_CHECKING:
    from daphnec.frontend.ir_builder import IRBuilder

_REQUIRED = object()


@dataclass(frozen=True)
class Typed:
    """A default argument with an explicit value type (DAPHNE's `seq` step is an si8 1, so it never promotes)."""

    value: object
    vt: str


@dataclass(frozen=True)
class Builtin:
    """A builtin's parameter list (name, default-or-_REQUIRED) and its IR builder."""

    params: tuple[tuple[str, object], ...]
    build: Callable[[IRBuilder, list[SSAValue], Loc], SSAValue | list[SSAValue] | None]
    variadic: bool = False

    def bind(
        self, name: str, args: list[SSAValue], kwargs: dict[str, SSAValue], b: IRBuilder, loc: Loc
    ) -> list[SSAValue]:
        """Match positional and keyword arguments to parameters; fill defaults; check the arity."""
        if self.variadic:
            if kwargs:
                raise ParseError(f"built-in function '{name}' takes no keyword arguments", loc)
            return args
        names = [p for p, _ in self.params]
        if len(args) > len(names):
            raise ParseError(_arity_msg(name, self.params, len(args) + len(kwargs)), loc)
        bound: dict[str, SSAValue] = dict(zip(names, args))
        for k, v in kwargs.items():
            if k not in names:
                raise ParseError(
                    f"built-in function '{name}' has no parameter '{k}' (parameters: {', '.join(names)})", loc
                )
            if k in bound:
                raise ParseError(f"parameter '{k}' of built-in function '{name}' given twice", loc)
            bound[k] = v
        out = []
        for p, default in self.params:
            if p in bound:
                out.append(bound[p])
            elif default is None:
                continue
            elif default is _REQUIRED:
                raise ParseError(_arity_msg(name, self.params, len(args) + len(kwargs)), loc)
            elif isinstance(default, Typed):
                out.append(b.constant(default.value, loc, default.vt))
            else:
                out.append(b.constant(default, loc))
        return out


def _arity_msg(name: str, params: Sequence[tuple[str, object]], given: int) -> str:
    req = sum(1 for _, d in params if d is _REQUIRED)
    n = f"{req}" if req == len(params) else f"{req} to {len(params)}"
    sig = ", ".join(
        p if d is _REQUIRED else f"{p}={getattr(d, 'value', d)!r}".replace("True", "true").replace("False", "false")
        for p, d in params
    )
    return f"built-in function '{name}' expects {n} argument(s) ({sig}), but got {given}"


def _p(*names: str, **defaults: object) -> tuple[tuple[str, object], ...]:
    return tuple((n, defaults.get(n, _REQUIRED)) for n in names)


def _op(cls: type, n_results: int = 1) -> Callable[[IRBuilder, list[SSAValue], Loc], SSAValue | None]:
    def build(b: IRBuilder, args: list[SSAValue], loc: Loc) -> SSAValue | None:
        return b.op(cls, args, loc)

    return build


def _agg(kind: str) -> Callable[[IRBuilder, list[SSAValue], Loc], SSAValue]:
    """`agg(X)` is a full aggregation; `agg(X, axis)` with a constant axis 0 (per row) or 1 (per column)."""

    def build(b: IRBuilder, args: list[SSAValue], loc: Loc) -> SSAValue:
        if len(args) == 1:
            return b.op(ops.AGG_OPS[(kind, "all")], args, loc)
        axis = ops.constant_value(args[1])
        if axis not in (0, 1) or isinstance(axis, bool):
            raise ParseError("the axis of an aggregation must be the constant 0 (row-wise) or 1 (column-wise)", loc)
        return b.op(ops.AGG_OPS[(kind, "row" if axis == 0 else "col")], [args[0]], loc)

    return build


def _print(b: IRBuilder, args: list[SSAValue], loc: Loc) -> None:
    b.op(ops.PrintOp, [args[0], b.as_bool(args[1], loc), b.as_bool(args[2], loc)], loc)


def _stop(b: IRBuilder, args: list[SSAValue], loc: Loc) -> None:
    b.op(ops.StopOp, [b.cast(args[0], "str", "scalar", loc)], loc)


def _now(b: IRBuilder, args: list[SSAValue], loc: Loc) -> SSAValue:
    return b.op(ops.NowOp, [], loc)


def _cast_scalar(b: IRBuilder, args: list[SSAValue], loc: Loc) -> SSAValue:
    return b.cast(args[0], None, "scalar", loc)


def _size_args(*positions: int) -> Callable[[type], Callable[[IRBuilder, list[SSAValue], Loc], SSAValue]]:
    """Builders whose size arguments (rows/cols) are cast to the size type, as DAPHNE's `Size` operands."""

    def wrap(cls: type) -> Callable[[IRBuilder, list[SSAValue], Loc], SSAValue]:
        def build(b: IRBuilder, args: list[SSAValue], loc: Loc) -> SSAValue:
            args = [b.cast(a, "index", "scalar", loc) if i in positions else a for i, a in enumerate(args)]
            return b.op(cls, args, loc)

        return build

    return wrap


def _rand(b: IRBuilder, args: list[SSAValue], loc: Loc) -> SSAValue:
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


def _ew_binary(kind: str) -> Callable[[IRBuilder, list[SSAValue], Loc], SSAValue]:
    return _op(ops.EW_BINARY_OPS[kind])


def _ew_unary(kind: str) -> Callable[[IRBuilder, list[SSAValue], Loc], SSAValue]:
    return _op(ops.EW_UNARY_OPS[kind])


def _min_max(kind: str) -> Callable[[IRBuilder, list[SSAValue], Loc], SSAValue]:
    """`min(a, b)` / `max(a, b)` element-wise; DAPHNE also accepts `min(X)` as the full aggregation."""

    def build(b: IRBuilder, args: list[SSAValue], loc: Loc) -> SSAValue:
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
    "fill": Builtin(_p("value", "numRows", "numCols"), _size_args(1, 2)(ops.FillOp)),
    "seq": Builtin(_p("from", "to", "inc", inc=Typed(1, "si8")), _op(ops.SeqOp)),
    "rand": Builtin(_p("numRows", "numCols", "min", "max", "sparsity", "seed"), _rand),
    # dimensions
    "nrow": Builtin(_p("arg"), _op(ops.NumRowsOp)),
    "ncol": Builtin(_p("arg"), _op(ops.NumColsOp)),
    "ncell": Builtin(_p("arg"), _op(ops.NumCellsOp)),
    # element-wise binary (function forms)
    "pow": Builtin(_p("lhs", "rhs"), _ew_binary("pow")),
    "log": Builtin(_p("lhs", "rhs"), _ew_binary("log")),
    "mod": Builtin(_p("lhs", "rhs"), _ew_binary("mod")),
    "concat": Builtin(_p("lhs", "rhs"), _ew_binary("concat")),
    "min": Builtin((), _min_max("min"), variadic=True),
    "max": Builtin((), _min_max("max"), variadic=True),
    # reorganisation and linear algebra
    "reshape": Builtin(_p("arg", "numRows", "numCols"), _size_args(1, 2)(ops.ReshapeOp)),
    "t": Builtin(_p("arg"), _op(ops.TransposeOp)),
    "transpose": Builtin(_p("arg"), _op(ops.TransposeOp)),
    # conversions, I/O, measurements
    "print": Builtin(_p("arg", "newline", "toStderr", newline=True, toStderr=False), _print),
    "stop": Builtin(_p("message", message=""), _stop),
    "typeOf": Builtin(_p("arg"), _op(ops.TypeOfOp)),
    "now": Builtin((), _now),
    "as.scalar": Builtin(_p("arg"), _cast_scalar),
}

for _kind in ops.EW_UNARY_OPS:
    if _kind != "minus":
        BUILTINS[_kind] = Builtin(_p("arg"), _ew_unary(_kind))

for _name, _kind in (
    ("sum", "sum"),
    ("aggMin", "min"),
    ("aggMax", "max"),
    ("mean", "mean"),
    ("var", "var"),
    ("stddev", "stddev"),
):
    BUILTINS[_name] = Builtin(_p("arg", "axis", axis=None), _agg(_kind))


def all_builtins() -> dict[str, Builtin]:
    """Every builtin of every category (a name defined twice is a programming error)."""
    from daphnec.frontend import builtins_daphnelib, builtins_frame, builtins_io, builtins_matrix

    table = dict(BUILTINS)
    for mod in (builtins_matrix, builtins_frame, builtins_io, builtins_daphnelib):
        for name, b in mod.BUILTINS.items():
            assert name not in table, f"builtin '{name}' defined twice"
            table[name] = b
    return table
