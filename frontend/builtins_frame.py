"""DaphneDSL builtins for frames and lists (see frontend/builtins_base.py for `Builtin` and the helpers).

Frames: `createFrame`, the relational builtins of Builtins.md's "Extended relational algebra" (`cartesian`,
`innerJoin`, `semiJoin`, `groupJoin`, `groupSum`, `intersect`, `merge`, `except`) and the label builtins
(`setColLabels`, `setColLabelsPrefix`), and SQL (`registerView`, `sql`). Lists: `createList`, `length`, `append`,
`remove`. Argument checks follow DAPHNE's DaphneDSLBuiltins.cpp; semiJoin, groupJoin and remove have two results.
"""

from __future__ import annotations

from xdsl.ir import Operation, SSAValue

from daphnec.dialects import ops, ops_frame, ops_relational
from daphnec.dialects.errors import Loc, ParseError
from daphnec.dialects.types import StringType, is_matrix, is_unknown
from daphnec.frontend.builtins_base import Build, Builder, Builtin, all_results, op_builder, params


def _add(b: Builder, o: Operation, loc: Loc) -> list[SSAValue]:
    """Insert an op built by its own constructor (properties, operand segments) with inferred result types."""
    return list(b.insert_inferred(o, loc).results)


def _all_results(cls: type) -> Build:
    """A builder for an op with several results (assigned with `a, b = f(...)`)."""

    def build(b: Builder, args: list[SSAValue], loc: Loc) -> list[SSAValue]:
        return all_results(b.op(cls, args, loc))

    return build


def _at_least(name: str, n: int, what: str, args: list[SSAValue], loc: Loc) -> None:
    if len(args) < n:
        raise ParseError(
            f"built-in function '{name}' expects at least {n} argument(s) ({what}), but got {len(args)}", loc
        )


# --- frames --------------------------------------------------------------------------------------------------------


def _create_frame(b: Builder, args: list[SSAValue], loc: Loc) -> SSAValue:
    """`createFrame(column, ...[, label, ...])`: n column matrices, then n or 0 labels (default `col_i`)."""
    _at_least("createFrame", 1, "column, ...[, label, ...]", args, loc)
    cols: list[SSAValue] = []
    labels: list[SSAValue] = []
    for a in args:
        if isinstance(a.type, StringType):
            labels.append(a)
        elif not labels and (is_matrix(a.type) or is_unknown(a.type)):
            cols.append(a)
        else:
            raise ParseError(
                "the arguments of built-in function 'createFrame' must be one or more matrices, "
                "optionally followed by equally many strings (the labels)",
                loc,
            )
    if not cols:
        raise ParseError("built-in function 'createFrame' expects at least one column matrix", loc)
    if not labels:
        labels = [b.constant(f"col_{i}", loc, "str") for i in range(len(cols))]
    elif len(labels) != len(cols):
        raise ParseError(
            f"built-in function 'createFrame' expects either no column labels or as many labels as "
            f"columns, but got {len(cols)} column(s) and {len(labels)} label(s)",
            loc,
        )
    return b.frame(cols, labels, loc)  # the same path as frame literals


def _join(cls: type, n_results: int) -> Build:
    """innerJoin/semiJoin: the optional result-size hint `numRowRes` is an si64 (-1 = unknown)."""

    def build(b: Builder, args: list[SSAValue], loc: Loc) -> SSAValue | list[SSAValue]:
        args = [*args[:4], b.cast(args[4], "si64", "scalar", loc)]
        v = b.op(cls, args, loc)
        assert v is not None
        return list(v.owner.results) if n_results > 1 else v  # type: ignore[union-attr]

    return build


def _group_sum(b: Builder, args: list[SSAValue], loc: Loc) -> SSAValue:
    """`groupSum(frame, groupColumn, ..., sumColumn)`: DAPHNE's GroupOp with one SUM aggregate."""
    _at_least("groupSum", 3, "frame, groupColumn, ..., sumColumn", args, loc)
    return _add(b, ops_frame.GroupOp(args[0], args[1:-1], [args[-1]], ["SUM"]), loc)[0]


def _set_col_labels(b: Builder, args: list[SSAValue], loc: Loc) -> SSAValue:
    """`setColLabels(frame, label, ...)`: one label per column."""
    _at_least("setColLabels", 2, "frame, label, ...", args, loc)
    v = b.op(ops_frame.SetColLabelsOp, args, loc)
    assert v is not None
    return v


# --- lists ---------------------------------------------------------------------------------------------------------


def _create_list(b: Builder, args: list[SSAValue], loc: Loc) -> SSAValue:
    """`createList(X, ...)`: a list of one or more matrices of the same value type."""
    _at_least("createList", 1, "element, ...", args, loc)
    return _add(b, ops_frame.CreateListOp(args), loc)[0]


def _remove(b: Builder, args: list[SSAValue], loc: Loc) -> list[SSAValue]:
    """`L2, X = remove(L, i)`: the position is cast to the size type, like DAPHNE's `castSizeIf`."""
    idx = b.cast(args[1], "index", "scalar", loc)
    return _all_results(ops_frame.RemoveOp)(b, [args[0], idx], loc)  # type: ignore[return-value]


# --- SQL (resolved at compile time by the `sql` pass, DAPHNE's RewriteSqlOpPass) ---------------------------------


def _constant_string(b: Builder, v: SSAValue, message: str, loc: Loc) -> None:
    """DAPHNE checks only the defining op (no folding): `q = "..."; sql(q)` works, `sql("a" + b)` does not."""
    if not isinstance(ops.constant_value(v), str):
        raise ParseError(message, loc)


def _register_view(b: Builder, args: list[SSAValue], loc: Loc) -> None:
    """`registerView(viewName, view)`: the name must be a constant string (DaphneDSLBuiltins.cpp)."""
    _constant_string(b, args[0], "registerView requires a view name as a constant string", loc)
    _add(b, ops_relational.RegisterViewOp.create(operands=args), loc)


def _sql(b: Builder, args: list[SSAValue], loc: Loc) -> SSAValue:
    """`sql(query)`: the query must be a constant string; the `sql` pass binds the views and replaces the op by
    the ops `sql_frontend.lower_query` builds. The SQL frontend is imported here, by the first `sql(...)` of a
    script (importing it registers that lowering), not with the builtins: its parser costs ~0.03-0.1 s of every
    compile."""
    from daphnec.frontend import sql as sql_frontend  # noqa: F401 - registers the lowering of `daphne.sql`

    _constant_string(b, args[0], "SqlOp requires a SQL query as a constant string", loc)
    op = ops_relational.SqlOp.create(operands=args, result_types=[ops_relational.SQL_PLACEHOLDER])
    return _add(b, op, loc)[0]


_JOIN_PARAMS = params("lhs", "rhs", "lhsOn", "rhsOn", "numRowRes", numRowRes=-1)

BUILTINS: dict[str, Builtin] = {
    # frames
    "createFrame": Builtin((), _create_frame, variadic=True),
    "cartesian": Builtin(params("lhs", "rhs"), op_builder(ops_frame.CartesianOp)),
    "innerJoin": Builtin(_JOIN_PARAMS, _join(ops_frame.InnerJoinOp, 1)),
    "semiJoin": Builtin(_JOIN_PARAMS, _join(ops_frame.SemiJoinOp, 2)),
    "groupJoin": Builtin(params("lhs", "rhs", "lhsOn", "rhsOn", "rhsAgg"), _all_results(ops_frame.GroupJoinOp)),
    "groupSum": Builtin((), _group_sum, variadic=True),
    "intersect": Builtin(params("lhs", "rhs"), op_builder(ops_frame.IntersectOp)),
    "merge": Builtin(params("lhs", "rhs"), op_builder(ops_frame.MergeOp)),
    "except": Builtin(params("lhs", "rhs"), op_builder(ops_frame.ExceptOp)),
    "setColLabels": Builtin((), _set_col_labels, variadic=True),
    "setColLabelsPrefix": Builtin(params("arg", "prefix"), op_builder(ops_frame.SetColLabelsPrefixOp)),
    "registerView": Builtin(params("viewName", "view"), _register_view),
    "sql": Builtin(params("query"), _sql),
    # lists
    "createList": Builtin((), _create_list, variadic=True),
    "length": Builtin(params("arg"), op_builder(ops_frame.LengthOp)),
    "append": Builtin(params("argList", "elem"), op_builder(ops_frame.AppendOp)),
    "remove": Builtin(params("argList", "idx"), _remove),
}
