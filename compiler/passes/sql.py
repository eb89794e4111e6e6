"""`sql`: resolve `registerView` and `sql` at compile time (DAPHNE's RewriteSqlOpPass,
src/compiler/lowering/RewriteSqlOpPass.cpp), after parsing and before inference.

One walk over the ops in program order: a `daphne.registerView` records name -> the SSA value of its frame (so a
view is a snapshot of the variable at that point, and registering a name again overrides it for later queries)
and is erased; a `daphne.sql` is parsed and replaced by the relational ops of its query by the SQL frontend
(frontend/sql/, registered on the op's dialect: `dialects.ops_relational.query_lowering`, so the compiler never
imports the frontend; DAPHNE's pass calls its SQL parser, src/parser/sql/, the same way). The
view table is per module. A query may only use views whose value is visible where it runs (registered earlier
in the same or an enclosing block of the same function).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, ModuleOp
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass

from daphnec.compiler.ir_walk import preorder
from daphnec.dialects.attr_names import DECLARED_RESULTS_ATTR
from daphnec.dialects.errors import CompileError
from daphnec.dialects.locations import loc_of
from daphnec.dialects.ops import DaphneOp, constant_value
from daphnec.dialects.ops_relational import RegisterViewOp, SqlOp, query_lowering


@dataclass(frozen=True)
class SqlPass(ModulePass):
    name = "sql"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        work = [o for o in preorder(op) if isinstance(o, (RegisterViewOp, SqlOp))]  # linear: compiler/ir_walk.py
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
    visible = {name: v for name, v in views.items() if _visible(v, op)}
    res = query_lowering(op)(op, visible, set(views) - set(visible))
    _replace_result(op, res)
    op.detach()
    op.erase()


def _replace_result(op: SqlOp, res: SSAValue) -> None:
    """Uses by daphne ops take the query's result and infer again. A `return` of a function whose result types are
    inferred gives the function (and its calls) the new type; other structural uses whose types must match
    exactly (a declared result, a call's argument, a yield of `if`/loops) see the result through a merge cast to
    the type they were built with, which inference then generalises like any merged value."""
    from daphnec.compiler.analysis.inference import insert_merge_cast

    structural = [u.operation for u in op.res.uses if not isinstance(u.operation, DaphneOp)]
    for user in dict.fromkeys(structural):
        fn = user.parent_op()
        if (
            isinstance(user, func.ReturnOp)
            and isinstance(fn, func.FuncOp)
            and DECLARED_RESULTS_ATTR not in fn.attributes
        ):
            _retype_results(fn, [res if v is op.res else v for v in user.arguments])
            continue
        cast = insert_merge_cast(res, op.res.type, user)
        op.res.replace_uses_with_if(cast, lambda u, user=user: u.operation is user)
    op.res.replace_all_uses_with(res)


def _retype_results(fn: func.FuncOp, results: list[SSAValue]) -> None:
    """A function whose result types are inferred returns `results`: its signature and its calls follow."""
    from daphnec.compiler.analysis.inference import set_type

    types = [v.type for v in results]
    fn.function_type = FunctionType.from_lists(list(fn.function_type.inputs.data), types)
    module = fn.parent_op()
    assert module is not None
    for call in module.walk():
        if isinstance(call, func.CallOp) and call.callee.root_reference.data == fn.sym_name.data:
            for r, t in zip(call.results, types):
                set_type(r, t)


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
