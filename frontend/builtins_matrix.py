"""DaphneDSL builtins of the matrix category (see frontend/builtins_base.py for `Builtin` and the helpers).

Parameter names are Builtins.md's, so keyword arguments work (`sample(range=10, size=3, withReplacement=false,
seed=1)`). Size-typed parameters are cast to `index` and flags to `bool`, as DAPHNE's DaphneDSLBuiltins.cpp does.
Builtins with several results (`eigen`, `recode`, `conv2d`, pooling, `batch_norm2d_backward`) return a list of SSA
values, used as `a, b = eigen(X);`.
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from daphnec.dialects import ops
from daphnec.dialects import ops_matrix as om
from daphnec.dialects.errors import Loc, ParseError
from daphnec.frontend.builtins_base import Build, Builder, Builtin, all_results, op_builder, params


def _casts(cls: type, kinds: str, multi: bool = False) -> Build:
    """An op whose i-th argument is cast per `kinds[i]`: `s` size (index), `b` bool, `i` si64, `-` unchanged."""
    targets = {"s": "index", "b": "bool", "i": "si64"}

    def build(b: Builder, args: list[SSAValue], loc: Loc) -> SSAValue | list[SSAValue] | None:
        cast = [a if k == "-" else b.cast(a, targets[k], "scalar", loc) for a, k in zip(args, kinds)]
        res = b.op(cls, cast + args[len(kinds) :], loc)
        return all_results(res) if multi else res

    return build


def _arg_agg(kind: str) -> Build:
    """`idxMin(X, axis)` / `idxMax(X, axis)`: only row-wise (axis 0) and column-wise (axis 1) exist."""

    def build(b: Builder, args: list[SSAValue], loc: Loc) -> SSAValue | None:
        axis = ops.constant_value(args[1])
        if axis not in (0, 1) or isinstance(axis, bool):
            what = f"idx{kind.capitalize()}"
            raise ParseError(f"the axis of {what} must be the constant 0 (row-wise) or 1 (column-wise)", loc)
        return b.op(om.IDX_OPS[(kind, "row" if axis == 0 else "col")], [args[0]], loc)

    return build


def _order(b: Builder, args: list[SSAValue], loc: Loc) -> SSAValue:
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
    return b.insert_inferred(o, loc).results[0]  # variadic operand segments: built like matrix literals


def _tri(upper: bool) -> Build:
    def build(b: Builder, args: list[SSAValue], loc: Loc) -> SSAValue | None:
        arg, diag, values = args
        return b.op(om.TriOp, [arg, b.constant(upper, loc), b.as_bool(diag, loc), b.as_bool(values, loc)], loc)

    return build


def _ctable(b: Builder, args: list[SSAValue], loc: Loc) -> SSAValue | None:
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


def _conv2d(b: Builder, args: list[SSAValue], loc: Loc) -> list[SSAValue]:
    """Without `bias`, DAPHNE passes the filter as the bias operand (DaphneDSLBuiltins.cpp)."""
    data, filt, sizes = args[0], args[1], args[2:12]
    bias = args[12] if len(args) > 12 else filt
    sizes = [b.cast(s, "index", "scalar", loc) for s in sizes]
    return all_results(b.op(om.Conv2DForwardOp, [data, filt, bias, *sizes], loc))


def _bin(b: Builder, args: list[SSAValue], loc: Loc) -> SSAValue | None:
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


def _one_hot(b: Builder, args: list[SSAValue], loc: Loc) -> SSAValue | None:
    return b.op(om.OneHotOp, [args[0], b.cast(args[1], "si64", None, loc)], loc)


def _recode(b: Builder, args: list[SSAValue], loc: Loc) -> list[SSAValue]:
    return all_results(b.op(om.RecodeOp, [args[0], b.as_bool(args[1], loc)], loc))


def _eigen(b: Builder, args: list[SSAValue], loc: Loc) -> list[SSAValue]:
    return all_results(b.op(om.EigenOp, args, loc))


_POOL = params(
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
    *params(
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

_CONV_BACKWARD = (
    "output",
    "strideH",
    "strideW",
    "padH",
    "padW",
    "inputBatchSize",
    "inputNumChannels",
    "inputH",
    "inputW",
    "filterNumFilters",
    "filterNumChannels",
    "filterH",
    "filterW",
)
_POOL_BACKWARD = params(
    "input", "dOut", "batchSize", "numChannels", "imgH", "imgW", "poolH", "poolW", "strideH", "strideW", "padH", "padW"
)

BUILTINS: dict[str, Builtin] = {
    # data generation
    "diagMatrix": Builtin(params("arg"), op_builder(om.DiagMatrixOp)),
    "sample": Builtin(params("range", "size", "withReplacement", "seed"), _casts(om.SampleOp, "-sbi")),
    # metadata
    "isSymmetric": Builtin(params("arg"), op_builder(om.IsSymmetricOp)),
    # aggregation
    "idxMin": Builtin(params("arg", "axis"), _arg_agg("min")),
    "idxMax": Builtin(params("arg", "axis"), _arg_agg("max")),
    # reorganisation
    "cbind": Builtin(params("lhs", "rhs"), op_builder(om.ColBindOp)),
    "rbind": Builtin(params("lhs", "rhs"), op_builder(om.RowBindOp)),
    "reverse": Builtin(params("arg"), op_builder(om.ReverseOp)),
    "order": Builtin((), _order, variadic=True),
    # matrix decomposition
    "eigen": Builtin(params("arg"), _eigen),
    # deep neural networks
    "affine": Builtin(params("inputData", "weightData", "biasData"), op_builder(om.AffineForwardOp)),
    "avg_pool2d": Builtin(_POOL, _casts(om.AvgPoolForwardOp, "-ssssssssss", multi=True)),
    "max_pool2d": Builtin(_POOL, _casts(om.MaxPoolForwardOp, "-ssssssssss", multi=True)),
    "batch_norm2d": Builtin(
        params("inputData", "gamma", "beta", "emaMean", "emaVar", "eps"), op_builder(om.BatchNorm2DInferenceForwardOp)
    ),
    "biasAdd": Builtin(params("input", "bias"), op_builder(om.BiasAddOp)),
    "conv2d": Builtin(_CONV, _conv2d),
    "relu": Builtin(params("inputData"), op_builder(om.ReluForwardOp)),
    "softmax": Builtin(params("inputData"), op_builder(om.SoftmaxOp)),
    # their backward passes (DAPHNE's parameter names; sizes cast to index, as DaphneDSLBuiltins.cpp does)
    "conv2d_backward_filter": Builtin(
        params("input", *_CONV_BACKWARD), _casts(om.Conv2DBackwardFilterOp, "--ssssssssssss")
    ),
    "conv2d_backward_data": Builtin(
        params("filter", *_CONV_BACKWARD), _casts(om.Conv2DBackwardDataOp, "--ssssssssssss")
    ),
    "avg_pool2d_backward": Builtin(_POOL_BACKWARD, _casts(om.AvgPoolBackwardOp, "--ssssssssss")),
    "max_pool2d_backward": Builtin(_POOL_BACKWARD, _casts(om.MaxPoolBackwardOp, "--ssssssssss")),
    "batch_norm2d_backward": Builtin(
        params("mean", "invVar", "input", "dout", "gamma", "eps"), _casts(om.BatchNorm2DBackwardOp, "", multi=True)
    ),
    # other matrix operations
    "diagVector": Builtin(params("arg"), op_builder(om.DiagVectorOp)),
    "lowerTri": Builtin(params("arg", "diag", "values"), _tri(False)),
    "upperTri": Builtin(params("arg", "diag", "values"), _tri(True)),
    "solve": Builtin(params("A", "b"), op_builder(om.SolveOp)),
    "replace": Builtin(params("arg", "pattern", "replacement"), op_builder(om.ReplaceOp)),
    "ctable": Builtin((), _ctable, variadic=True),
    "syrk": Builtin(params("A"), op_builder(om.SyrkOp)),
    "gemv": Builtin(params("A", "x"), op_builder(om.GemvOp)),
    # conversions
    "quantize": Builtin(params("arg", "min", "max"), op_builder(om.QuantizeOp)),
    # data preprocessing
    "oneHot": Builtin(params("arg", "info"), _one_hot),
    "recode": Builtin(params("arg", "orderPreserving"), _recode),
    "bin": Builtin((*params("arg", "numBins"), ("min", None), ("max", None)), _bin),
}

for _name, _cls in om.OUTER_OPS.items():
    BUILTINS[_name] = Builtin(params("lhs", "rhs"), op_builder(_cls))

for _name, _cls in om.CUM_OPS.items():
    BUILTINS[_name] = Builtin(params("arg"), op_builder(_cls))

# matrix/frame dimensions: the compiler's sparsity estimate
BUILTINS["sparsity"] = Builtin(params("arg"), op_builder(om.SparsityOp))
