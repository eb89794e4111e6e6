"""DaphneDSL builtins of the matrix category (see frontend/builtins.py for `Builtin` and the helpers).

Parameter names are Builtins.md's, so keyword arguments work (`sample(range=10, size=3, withReplacement=false,
seed=1)`). Size-typed parameters are cast to `index` and flags to `bool`, as DAPHNE's DaphneDSLBuiltins.cpp does.
Builtins with several results (`eigen`, `recode`, `conv2d`, pooling) return a list of SSA values, used as
`a, b = eigen(X);`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from xdsl.ir import SSAValue

from daphnec.dialects import ops
from daphnec.dialects import ops_matrix as om
from daphnec.dialects.errors import Loc, ParseError
from daphnec.frontend.builtins import Builtin, _p

if TYPE_CHECKING:
    from daphnec.frontend.ir_builder import IRBuilder

Build = Callable[["IRBuilder", list[SSAValue], Loc], SSAValue | list[SSAValue] | None]


def _op(cls: type) -> Build:
    return lambda b, args, loc: b.op(cls, args, loc)


def _results(first: SSAValue | None) -> list[SSAValue]:
    """All results of the op whose first result is `first` (multi-result builtins)."""
    assert first is not None
    return list(first.owner.results)  # type: ignore[union-attr]


def _casts(cls: type, kinds: str, multi: bool = False) -> Build:
    """An op whose i-th argument is cast per `kinds[i]`: `s` size (index), `b` bool, `i` si64, `-` unchanged."""
    targets = {"s": "index", "b": "bool", "i": "si64"}

    def build(b: IRBuilder, args: list[SSAValue], loc: Loc) -> SSAValue | list[SSAValue] | None:
        cast = [a if k == "-" else b.cast(a, targets[k], "scalar", loc) for a, k in zip(args, kinds)]
        res = b.op(cls, cast + args[len(kinds) :], loc)
        return _results(res) if multi else res

    return build


def _arg_agg(kind: str) -> Build:
    """`idxMin(X, axis)` / `idxMax(X, axis)`: only row-wise (axis 0) and column-wise (axis 1) exist."""

    def build(b: IRBuilder, args: list[SSAValue], loc: Loc) -> SSAValue | None:
        axis = ops.constant_value(args[1])
        if axis not in (0, 1) or isinstance(axis, bool):
            what = f"idx{kind.capitalize()}"
            raise ParseError(f"the axis of {what} must be the constant 0 (row-wise) or 1 (column-wise)", loc)
        return b.op(om.IDX_OPS[(kind, "row" if axis == 0 else "col")], [args[0]], loc)

    return build


def _order(b: IRBuilder, args: list[SSAValue], loc: Loc) -> SSAValue:
    """`order(arg, colIdxs..., ascs..., returnIndexes)`: an even number (>= 4) of arguments."""
    if len(args) < 4 or len(args) % 2:
        raise ParseError(
            f"built-in function 'order' expects an even number of at least 4 arguments "
            f"(arg, colIdxs..., ascs..., returnIndexes), but got {len(args)}",
            loc,
        )
    n = (len(args) - 2) // 2
    col_idxs = [b.cast(a, "index", "scalar", loc) for a in args[1 : 1 + n]]
    ascs = [b.as_bool(a, loc) for a in args[1 + n : 1 + 2 * n]]
    ret = b.as_bool(args[-1], loc)
    if not isinstance(ops.constant_value(ret), bool):
        raise ParseError("the argument returnIndexes of 'order' must be a constant (true or false)", loc)
    o = om.OrderOp(args[0], col_idxs, ascs, ret)
    b._infer(o)  # noqa: SLF001 - ops with variadic operand segments are built like matrix literals
    return b._add(o, loc).results[0]  # noqa: SLF001


def _tri(upper: bool) -> Build:
    def build(b: IRBuilder, args: list[SSAValue], loc: Loc) -> SSAValue | None:
        arg, diag, values = args
        return b.op(om.TriOp, [arg, b.constant(upper, loc), b.as_bool(diag, loc), b.as_bool(values, loc)], loc)

    return build


def _ctable(b: IRBuilder, args: list[SSAValue], loc: Loc) -> SSAValue | None:
    """`ctable(ys, xs[, weight][, numRows, numCols])`: 2 to 5 arguments; weight defaults to 1.0, shape to -1."""
    if not 2 <= len(args) <= 5:
        raise ParseError(
            f"built-in function 'ctable' expects 2 to 5 argument(s) "
            f"(ys, xs[, weight][, numRows, numCols]), but got {len(args)}",
            loc,
        )
    ys, xs, rest = args[0], args[1], args[2:]
    weight = rest.pop(0) if len(rest) in (1, 3) else b.constant(1.0, loc)
    dims = [b.cast(d, "si64", "scalar", loc) for d in rest] or [b.constant(-1, loc), b.constant(-1, loc)]
    return b.op(om.CTableOp, [ys, xs, weight, *dims], loc)


def _conv2d(b: IRBuilder, args: list[SSAValue], loc: Loc) -> list[SSAValue]:
    """Without `bias`, DAPHNE passes the filter as the bias operand (DaphneDSLBuiltins.cpp)."""
    data, filt, sizes = args[0], args[1], args[2:12]
    bias = args[12] if len(args) > 12 else filt
    sizes = [b.cast(s, "index", "scalar", loc) for s in sizes]
    return _results(b.op(om.Conv2DForwardOp, [data, filt, bias, *sizes], loc))


def _bin(b: IRBuilder, args: list[SSAValue], loc: Loc) -> SSAValue | None:
    """`bin(arg, numBins[, min, max])`: min/max default to aggMin/aggMax of `arg`."""
    if len(args) == 3:
        msg = "built-in function 'bin' expects exactly 2 or 4 argument(s) (arg, numBins[, min, max]), but got 3"
        raise ParseError(msg, loc)
    arg, num_bins = args[0], b.cast(args[1], "si64", "scalar", loc)
    if len(args) == 2:
        lo = b.op(ops.AGG_OPS[("min", "all")], [arg], loc)
        hi = b.op(ops.AGG_OPS[("max", "all")], [arg], loc)
    else:
        lo, hi = args[2], args[3]
    return b.op(om.BinOp, [arg, num_bins, lo, hi], loc)  # type: ignore[list-item]


def _one_hot(b: IRBuilder, args: list[SSAValue], loc: Loc) -> SSAValue | None:
    return b.op(om.OneHotOp, [args[0], b.cast(args[1], "si64", None, loc)], loc)


def _recode(b: IRBuilder, args: list[SSAValue], loc: Loc) -> list[SSAValue]:
    return _results(b.op(om.RecodeOp, [args[0], b.as_bool(args[1], loc)], loc))


def _eigen(b: IRBuilder, args: list[SSAValue], loc: Loc) -> list[SSAValue]:
    return _results(b.op(om.EigenOp, args, loc))


_POOL = _p(
    "inputData",
    "numImages",
    "numChannels",
    "imgHeight",
    "imgWidth",
    "poolHeight",
    "poolWidth",
    "strideHeight",
    "strideWidth",
    "paddingHeight",
    "paddingWidth",
)
_CONV = (
    *_p(
        "input",
        "filter",
        "numImages",
        "numChannels",
        "imgHeight",
        "imgWidth",
        "filterHeight",
        "filterWidth",
        "strideHeight",
        "strideWidth",
        "paddingHeight",
        "paddingWidth",
    ),
    ("bias", None),
)

BUILTINS: dict[str, Builtin] = {
    # data generation
    "diagMatrix": Builtin(_p("arg"), _op(om.DiagMatrixOp)),
    "sample": Builtin(_p("range", "size", "withReplacement", "seed"), _casts(om.SampleOp, "-sbi")),
    # metadata
    "isSymmetric": Builtin(_p("arg"), _op(om.IsSymmetricOp)),
    # element-wise unary not covered by the core table
    "minus": Builtin(_p("arg"), _op(ops.EW_UNARY_OPS["minus"])),
    # aggregation
    "idxMin": Builtin(_p("arg", "axis"), _arg_agg("min")),
    "idxMax": Builtin(_p("arg", "axis"), _arg_agg("max")),
    # reorganisation
    "cbind": Builtin(_p("lhs", "rhs"), _op(om.ColBindOp)),
    "rbind": Builtin(_p("lhs", "rhs"), _op(om.RowBindOp)),
    "reverse": Builtin(_p("arg"), _op(om.ReverseOp)),
    "order": Builtin((), _order, variadic=True),
    # matrix decomposition
    "eigen": Builtin(_p("arg"), _eigen),
    # deep neural networks
    "affine": Builtin(_p("inputData", "weightData", "biasData"), _op(om.AffineForwardOp)),
    "avg_pool2d": Builtin(_POOL, _casts(om.AvgPoolForwardOp, "-ssssssssss", multi=True)),
    "max_pool2d": Builtin(_POOL, _casts(om.MaxPoolForwardOp, "-ssssssssss", multi=True)),
    "batch_norm2d": Builtin(
        _p("inputData", "gamma", "beta", "emaMean", "emaVar", "eps"), _op(om.BatchNorm2DInferenceForwardOp)
    ),
    "biasAdd": Builtin(_p("input", "bias"), _op(om.BiasAddOp)),
    "conv2d": Builtin(_CONV, _conv2d),
    "relu": Builtin(_p("inputData"), _op(om.ReluForwardOp)),
    "softmax": Builtin(_p("inputData"), _op(om.SoftmaxOp)),
    # other matrix operations
    "diagVector": Builtin(_p("arg"), _op(om.DiagVectorOp)),
    "lowerTri": Builtin(_p("arg", "diag", "values"), _tri(False)),
    "upperTri": Builtin(_p("arg", "diag", "values"), _tri(True)),
    "solve": Builtin(_p("A", "b"), _op(om.SolveOp)),
    "replace": Builtin(_p("arg", "pattern", "replacement"), _op(om.ReplaceOp)),
    "ctable": Builtin((), _ctable, variadic=True),
    "syrk": Builtin(_p("A"), _op(om.SyrkOp)),
    "gemv": Builtin(_p("A", "x"), _op(om.GemvOp)),
    # conversions
    "quantize": Builtin(_p("arg", "min", "max"), _op(om.QuantizeOp)),
    # data preprocessing
    "oneHot": Builtin(_p("arg", "info"), _one_hot),
    "recode": Builtin(_p("arg", "orderPreserving"), _recode),
    "bin": Builtin((*_p("arg", "numBins"), ("min", None), ("max", None)), _bin),
}

for _name, _cls in om.OUTER_OPS.items():
    BUILTINS[_name] = Builtin(_p("lhs", "rhs"), _op(_cls))

for _name, _cls in om.CUM_OPS.items():
    BUILTINS[_name] = Builtin(_p("arg"), _op(_cls))

# matrix/frame dimensions: the compiler's sparsity estimate
BUILTINS["sparsity"] = Builtin(_p("arg"), _op(om.SparsityOp))
