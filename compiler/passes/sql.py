"""`sql`: resolve `registerView` and `sql` at compile time (DAPHNE's RewriteSqlOpPass,
src/compiler/lowering/RewriteSqlOpPass.cpp), after parsing and before inference.

One walk over the ops in program order: a `daphne.registerView` records name -> the SSA value of its frame (so a
view is a snapshot of the variable at that point, and registering a name again overrides it for later queries)
and is erased; a `daphne.sql` is parsed and replaced by the relational ops of its query (compiler/sql/). The
view table is per module. A query may only use views whose value is visible where it runs (registered earlier
in the same or an enclosing block of the same function).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass

from daphnec.dialects.errors import CompileError
from daphnec.dialects.locations import loc_of
from daphnec.dialects.ops import DaphneOp, constant_value
from daphnec.dialects.ops_relational import RegisterViewOp, SqlOp


@dataclass(frozen=True)
class SqlPass(ModulePass):
    name = "sql"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        work = [o for o in op.walk() if isinstance(o, (RegisterViewOp, SqlOp))]
        if not work:
            return
        views: dict[str, SSAValue] = {}
        for o in work:
            if isinstance(o, RegisterViewOp):
                name = constant_value(o.view_name)
                if not isinstance(name, str):
                    raise CompileError("registerView requires a view name as a constant string", loc_of(o))
                views[name] = o.view
                o.detach()
                o.erase()
            else:
                _rewrite(o, views)


def _rewrite(op: SqlOp, views: dict[str, SSAValue]) -> None:
    from daphnec.compiler.sql.parser import SqlError, parse_query
    from daphnec.compiler.sql.source_map import QueryLocator
    from daphnec.compiler.sql.translate import translate

    query = constant_value(op.query)
    if not isinstance(query, str):
        raise CompileError("SqlOp requires a SQL query as a constant string", loc_of(op))
    locator = QueryLocator(query, loc_of(op.query.owner), loc_of(op))  # type: ignore[arg-type]
    try:
        tree = parse_query(query)
    except SqlError as e:
        raise CompileError(e.message, locator.loc(e.offset)) from None
    visible = {name: v for name, v in views.items() if _visible(v, op)}
    res = translate(op, visible, set(views) - set(visible), locator, tree)
    _replace_result(op, res)
    op.detach()
    op.erase()


def _replace_result(op: SqlOp, res: SSAValue) -> None:
    """Uses by daphne ops take the query's result and infer again; structural uses whose types must match exactly
    (a typed function's `return`, a call's argument, a yield of `if`/loops) see it through a merge cast to the
    type they were built with, which inference then generalises like any merged value."""
    from daphnec.compiler.inference import insert_merge_cast

    structural = [u.operation for u in op.res.uses if not isinstance(u.operation, DaphneOp)]
    for user in dict.fromkeys(structural):
        cast = insert_merge_cast(res, op.res.type, user)
        op.res.replace_uses_with_if(cast, lambda u, user=user: u.operation is user)
    op.res.replace_all_uses_with(res)


def _visible(v: SSAValue, at: Operation) -> bool:
    """Whether `v` dominates `at`: defined in `at`'s block or an enclosing one (registerView came earlier)."""
    home = v.block if isinstance(v, BlockArgument) else v.owner.parent_block()  # type: ignore[union-attr]
    block = at.parent_block()
    while block is not None:
        if block is home:
            return True
        parent = block.parent_op()
        block = parent.parent_block() if parent is not None else None
    return False
