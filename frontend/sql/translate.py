"""A parsed query -> relational ops of the `daphne` dialect, inserted before the `daphne.sql` op it replaces.

The translation is DAPHNE's (src/parser/sql/SQLVisitor.cpp), so that results, labels, types and errors agree:
1. FROM: every table gets its labels prefixed (`daphne.setColLabelsPrefix`; the table name or its alias); a comma
   list is a right-nested `daphne.cartesian`; each JOIN is a `daphne.innerJoin` (one `=` condition) or a
   `daphne.thetaJoin` on the frame built so far.
2. WHERE: `daphne.filterRow` by the condition's column (a scalar condition is filled to a column).
3. GROUP BY in two passes over HAVING and the select items: pass 1 checks that plain columns are grouped and
   appends each aggregate's argument as a column `group_<n>_<argtext>`; pass 2 is one `daphne.group` (keys, then
   `FUNC(group_<n>_...)` columns) followed by HAVING's `daphne.filterRow`, and each aggregate reads its column back.
4. ORDER BY: `daphne.order` on `daphne.getColIdx` of each key, before projection (it sees unselected columns).
5. Projection: each item becomes a one-column frame labelled by its alias or its text; `daphne.colBind` joins them.
6. DISTINCT: `daphne.group` on all columns (`*`) without aggregates.
Ops get the location of the SQL token they come from.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.ir import Operation, SSAValue

from daphnec.dialects import ops, ops_frame, ops_matrix, ops_relational
from daphnec.dialects.errors import CompileError
from daphnec.dialects.locations import to_attr
from daphnec.dialects.op_kinds import SQL_AGGREGATES
from daphnec.dialects.types import UNKNOWN
from daphnec.frontend.sql import ast
from daphnec.frontend.sql.source_map import QueryLocator

_CMP_KINDS = {"=": "eq", "<>": "neq", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}
_THETA = {
    "=": "Equal", "<>": "NotEqual", "!=": "NotEqual", "<": "LessThan", "<=": "LessEqual", ">": "GreaterThan",
    ">=": "GreaterEqual",
}  # fmt: skip
_ARITH_KINDS = {"*": "mul", "/": "div", "+": "add", "-": "sub"}


@dataclass(frozen=True)
class Val:
    """A translated expression: its value and data kind (`matrix` column, `scalar` or `frame`)."""

    value: SSAValue
    kind: str


class Translator:
    """Translates one query; the state mirrors DAPHNE's SQLVisitor (aliases, prefixes, the GROUP BY passes)."""

    def __init__(self, anchor: Operation, views: dict[str, SSAValue], hidden: set[str], locator: QueryLocator):
        self.anchor = anchor
        self.views = views
        self.hidden = hidden
        self.locator = locator
        self.alias: dict[str, SSAValue] = {}
        self.prefix: dict[str, str] = {}
        self.prefix_owner: dict[str, str] = {}
        self.current: SSAValue | None = None
        self.codegen = True
        self.group = False
        self.in_agg = False
        self.grouped: set[str] = set()
        self.group_keys: list[SSAValue] = []
        self.agg_cols: list[SSAValue] = []
        self.agg_funcs: list[str] = []
        self.agg_args: set[str] = set()
        self.counter = 0
        self.counter_codegen = 0

    # -- IR helpers -----------------------------------------------------------------------------------------------

    def error(self, message: str, pos: int) -> CompileError:
        return CompileError(message, self.locator.loc(pos))

    def emit(self, op: Operation, pos: int) -> SSAValue:
        """Insert `op` before the `daphne.sql` op with inferred result types and the token's location."""
        if isinstance(op, ops.DaphneOp):
            op.typed()
        loc = self.locator.loc(pos)
        if loc is not None:
            op.location = to_attr(loc)
        block = self.anchor.parent_block()
        assert block is not None
        block.insert_op_before(op, self.anchor)
        return op.results[0] if op.results else None  # type: ignore[return-value]

    def make(self, cls: type, operands: Sequence[SSAValue], pos: int) -> SSAValue:
        n = len(cls.get_irdl_definition().results)
        return self.emit(cls.create(operands=list(operands), result_types=[UNKNOWN] * n), pos)

    def const(self, value: int | float | str | bool, vt: str, pos: int) -> SSAValue:
        return self.emit(ops.ConstantOp.of(value, vt), pos)

    def column(self, v: Val, pos: int) -> SSAValue:
        """DAPHNE's castToMatrixColumn: a scalar is filled to a column of the current frame's row count."""
        if v.kind == "frame":
            raise self.error("a frame (`*` or `t.*`) cannot be used as a value in an expression", pos)
        if v.kind == "matrix":
            return v.value
        rows = self.make(ops.NumRowsOp, [self.current], pos)  # type: ignore[list-item]
        return self.make(ops.FillOp, [v.value, rows, self.const(1, "index", pos)], pos)

    def extract(self, frame: SSAValue, label: SSAValue, pos: int) -> SSAValue:
        """A column of `frame` by label, as an n x 1 matrix (extractCol, then a cast)."""
        col = self.make(ops.ExtractColOp, [frame, label], pos)
        return self.emit(ops.CastOp(col, None, "matrix"), pos)

    # -- query ----------------------------------------------------------------------------------------------------

    def select(self, q: ast.Select) -> SSAValue:
        self.current = self.from_clause(q.tables)
        for j in q.joins:
            self.current = self.join(j)
        if q.where is not None:
            self.current = self.filter(q.where)
        if q.group_by:
            self.group, self.codegen = True, False
            self.group_pass(q)
            for item in q.items:
                self.sel_item(item)
            self.codegen = True
            self.group_pass(q)
        if q.order_by:
            self.current = self.order(q.order_by)
        res = self.sel_item(q.items[0])
        for item in q.items[1:]:
            res = self.make(ops_matrix.ColBindOp, [res, self.sel_item(item)], item.expr.pos)
        self.current = res
        return self.distinct(q.distinct) if q.distinct >= 0 else res

    def sel_item(self, item: ast.SelItem) -> SSAValue | None:
        v = self.expr(item.expr)
        if v is None:
            return None
        if v.kind == "frame":  # `*` and `t.*` keep their labels; an alias is ignored
            return v.value
        label = item.alias if item.alias is not None else item.expr.text
        col = self.column(v, item.expr.pos)
        op = ops.CreateFrameOp([col], [self.const(label, "str", item.expr.pos)])
        return self.emit(op, item.expr.pos)

    def distinct(self, pos: int) -> SSAValue:
        if self.group and self.agg_cols:
            raise self.error("DISTINCT with GROUP BY and Aggregation is not supported", pos)
        if self.group or self.agg_cols:
            return self.current  # type: ignore[return-value] - already distinct
        star = self.const("*", "str", pos)
        return self.emit(ops_frame.GroupOp(self.current, [star], [], []), pos)  # type: ignore[arg-type]

    # -- FROM and JOIN --------------------------------------------------------------------------------------------

    def from_clause(self, tables: Sequence[ast.TableRef]) -> SSAValue:
        """`a, b, c` is a x (b x c), the tables' prefixes applied from left to right."""
        lhs = self.table(tables[0])
        if len(tables) == 1:
            return lhs
        rhs = self.from_clause(tables[1:])
        return self.make(ops_frame.CartesianOp, [lhs, rhs], tables[0].pos)

    def table(self, ref: ast.TableRef) -> SSAValue:
        frame = self.alias.get(ref.name, self.views.get(ref.name))
        if frame is None and ref.name in self.hidden:
            raise self.error(
                f"view {ref.name} was registered inside a block or function that does not enclose this query "
                "(register it before the query, in the same or an enclosing block)",
                ref.pos,
            )
        if frame is None:
            raise self.error(
                f"Frame {ref.name} referenced before assignment: {ref.name} was not registered with the function "
                '"registerView" or given an alias',
                ref.pos,
            )
        self.alias[ref.name] = frame
        prefix = ref.name
        if ref.alias is not None:
            self.alias[ref.alias] = frame
            prefix = self.set_prefix(ref.alias, ref.alias, True, False, ref.pos)
        self.set_prefix(ref.name, prefix, ref.alias is None, ref.alias is not None, ref.pos)
        return self.make(ops_frame.SetColLabelsPrefixOp, [frame, self.const(prefix, "str", ref.pos)], ref.pos)

    def set_prefix(self, name: str, prefix: str, necessary: bool, ignore: bool, pos: int) -> str:
        """DAPHNE's setFramePrefix: a table used twice needs an alias; a prefix taken by another table gets a
        number appended."""
        if self.prefix.get(name):
            if necessary:
                raise self.error(
                    f"Error: {name} is marked as necessary for Prefix generation, but already got a Prefix. "
                    "Please consider an Alias",
                    pos,
                )
            return ""
        new, i = prefix, 1
        while not ignore and self.prefix_owner.get(new):
            new, i = f"{prefix}{i}", i + 1
        if not ignore:
            self.prefix_owner[new] = name
        self.prefix[name] = new
        return new

    def join(self, j: ast.Join) -> SSAValue:
        right = self.table(j.table)
        conds = j.conds
        missing = next((c for c in conds if c.op is None), None)
        if missing is not None:
            raise self.error("a JOIN condition needs a comparison operator", missing.lhs.pos)
        if len(conds) == 1 and conds[0].op == "=":
            lhs, rhs = self.label(conds[0].lhs), self.label(conds[0].rhs)
            hint = self.const(-1, "si64", j.pos)
            return self.make(ops_frame.InnerJoinOp, [self.current, right, lhs, rhs, hint], j.pos)  # type: ignore[list-item]
        lhs_on = [self.label(c.lhs) for c in conds]
        rhs_on = [self.label(c.rhs) for c in conds]
        cmps = [_THETA[c.op] for c in conds]  # type: ignore[index]
        return self.emit(ops_relational.ThetaJoinOp(self.current, right, lhs_on, rhs_on, cmps), j.pos)  # type: ignore[arg-type]

    def label(self, ident: ast.Ident) -> SSAValue:
        """DAPHNE's visitStringIdent: `t.c` names the column `prefixOf(t).c`; a plain `c` is looked up as `c`."""
        if ident.qualifier is None:
            return self.const(ident.name, "str", ident.pos)
        q = ident.qualifier
        if q not in self.alias and q not in self.views and q not in self.hidden:
            raise self.error(f"Unknown Frame: {q} use before declaration during selection", ident.pos)
        p = self.prefix.get(q, "")
        return self.const(f"{p}.{ident.name}" if p else ident.name, "str", ident.pos)

    # -- WHERE, GROUP BY, ORDER BY --------------------------------------------------------------------------------

    def filter(self, cond: ast.Expr) -> SSAValue:
        v = self.expr(cond)
        assert v is not None
        return self.make(ops.FilterRowOp, [self.current, self.column(v, cond.pos)], cond.pos)  # type: ignore[list-item]

    def group_pass(self, q: ast.Select) -> None:
        if not self.codegen:  # pass 1: collect the keys, check HAVING (aggregates append their arguments)
            for k in q.group_by:
                self.group_keys.append(self.label(k))
                self.grouped.add(k.text)
            if q.having is not None:
                self.expr(q.having)
            return
        pos = q.group_by[0].pos
        op = ops_frame.GroupOp(self.current, self.group_keys, self.agg_cols, self.agg_funcs)  # type: ignore[arg-type]
        self.current = self.emit(op, pos)
        if q.having is not None:
            self.current = self.filter(q.having)

    def order(self, items: Sequence[ast.OrderItem]) -> SSAValue:
        ascs, idxs = [], []
        for it in items:
            ascs.append(self.const(it.asc, "bool", it.key.pos))
            idxs.append(self.make(ops_relational.GetColIdxOp, [self.current, self.label(it.key)], it.key.pos))  # type: ignore[list-item]
        ret = self.const(False, "bool", items[0].key.pos)
        return self.emit(ops_matrix.OrderOp(self.current, idxs, ascs, ret), items[0].key.pos)  # type: ignore[arg-type]

    # -- expressions ----------------------------------------------------------------------------------------------

    def expr(self, e: ast.Expr) -> Val | None:
        """The value of an expression; None while code generation is off (GROUP BY pass 1)."""
        if isinstance(e, ast.Literal):
            return Val(self.const(e.value, e.vt, e.pos), "scalar") if self.codegen else None
        if isinstance(e, ast.Ident):
            return self.ident(e)
        if isinstance(e, ast.Star):
            return self.star(e)
        if isinstance(e, ast.Call):
            return self.call(e)
        if isinstance(e, ast.Paren):
            return self.expr(e.inner)
        if isinstance(e, ast.Between):
            return self.between(e)
        return self.binary(e)

    def ident(self, e: ast.Ident) -> Val | None:
        if (
            self.group
            and not self.in_agg
            and e.text not in self.grouped
            and not e.text.endswith("*")
            and "*" not in self.grouped
        ):
            raise self.error(
                f'Error during a generalExpr. "{e.text}" Must be part of the Group Expression or have an '
                "Aggregation Function",
                e.pos,
            )
        if not self.codegen:
            return None
        label = self.label(e)
        if e.name == "*":  # `t.*`: the frame of the columns prefixed `t`
            return Val(self.make(ops.ExtractColOp, [self.current, label], e.pos), "frame")  # type: ignore[list-item]
        return Val(self.extract(self.current, label, e.pos), "matrix")  # type: ignore[arg-type]

    def star(self, e: ast.Star) -> Val | None:
        """`*`: the current frame; after GROUP BY with aggregates DAPHNE extracts the aggregated arguments."""
        if not self.codegen:
            return None
        if self.group and self.agg_args:
            cols = [
                self.make(ops.ExtractColOp, [self.current, self.const(a, "str", e.pos)], e.pos)
                for a in sorted(self.agg_args)
            ]  # type: ignore[list-item]
            res = cols[0]
            for c in cols[1:]:
                res = self.make(ops_matrix.ColBindOp, [res, c], e.pos)
            return Val(res, "frame")
        return Val(self.current, "frame")  # type: ignore[arg-type]

    def call(self, e: ast.Call) -> Val | None:
        """An aggregation: over the whole column without GROUP BY, else via the group pass's columns."""
        func = e.func.lower()
        arg_text = e.arg.text
        name = f"group_{self.counter}_{arg_text}"
        self.counter += 1
        self.agg_args.add(arg_text)
        if arg_text.endswith("*"):
            raise self.error("Using the asterisk in aggregations is not allowed", e.pos)
        if func not in SQL_AGGREGATES:
            raise self.error(f"Error: {func} does not name an aggregation Function for Group", e.pos)
        if not self.group and self.codegen:
            return self.full_aggregate(func, e)
        if self.in_agg:
            raise self.error("Nested Aggregation Functions not allowed", e.pos)
        if not self.codegen:
            self.group_argument(func, name, e)
            return None
        label = f"{SQL_AGGREGATES[func].name}(group_{self.counter_codegen}_{arg_text})"
        self.counter_codegen += 1
        return Val(self.extract(self.current, self.const(label, "str", e.pos), e.pos), "matrix")  # type: ignore[arg-type]

    def full_aggregate(self, func: str, e: ast.Call) -> Val:
        arg = self.expr(e.arg)
        assert arg is not None
        col = self.column(arg, e.arg.pos)
        full = SQL_AGGREGATES[func].full
        if full is None:  # COUNT: the number of rows
            n = self.make(ops.NumRowsOp, [col], e.pos)
            res = self.emit(ops.CastOp(n, "si64", "scalar"), e.pos)
        else:
            res = self.make(ops.AGG_OPS[(full, "all")], [col], e.pos)
        return Val(self.emit(ops.CastOp(res, None, "matrix"), e.pos), "matrix")

    def group_argument(self, func: str, name: str, e: ast.Call) -> None:
        """GROUP BY pass 1: the argument, computed on the current frame, becomes its column `name`."""
        self.agg_cols.append(self.const(name, "str", e.pos))
        self.agg_funcs.append(SQL_AGGREGATES[func].name)
        self.in_agg, self.codegen = True, True
        try:
            arg = self.expr(e.arg)
        finally:
            self.in_agg, self.codegen = False, False
        assert arg is not None
        col = self.column(arg, e.arg.pos)
        frame = self.emit(ops.CreateFrameOp([col], [self.const(name, "str", e.pos)]), e.pos)
        self.current = self.make(ops_matrix.ColBindOp, [self.current, frame], e.pos)  # type: ignore[list-item]

    def binary(self, e: ast.Binary) -> Val | None:
        lhs, rhs = self.expr(e.lhs), self.expr(e.rhs)
        if not self.codegen:
            return None
        assert lhs is not None and rhs is not None
        if e.op in ("AND", "OR"):
            cols = [self.column(lhs, e.lhs.pos), self.column(rhs, e.rhs.pos)]
            return Val(self.make(ops.EW_BINARY_OPS["and" if e.op == "AND" else "or"], cols, e.op_pos), "matrix")
        if e.op == "!=":
            raise self.error("unexpected comparision operation symbol '!=' (use '<>')", e.op_pos)
        kind = _CMP_KINDS.get(e.op) or _ARITH_KINDS[e.op]
        for v, sub in ((lhs, e.lhs), (rhs, e.rhs)):
            if v.kind == "frame":
                raise self.error("a frame (`*` or `t.*`) cannot be used as a value in an expression", sub.pos)
        kind_of = "matrix" if "matrix" in (lhs.kind, rhs.kind) else "scalar"
        return Val(self.make(ops.EW_BINARY_OPS[kind], [lhs.value, rhs.value], e.op_pos), kind_of)

    def between(self, e: ast.Between) -> Val | None:
        """`x BETWEEN lo AND hi` is `(x >= lo AND x <= hi) OR (x >= hi AND x <= lo)`: symmetric, inclusive."""
        x, lo, hi = self.expr(e.arg), self.expr(e.lo), self.expr(e.hi)
        if not self.codegen:
            return None
        assert x is not None and lo is not None and hi is not None

        def cmp(kind: str, a: Val, b: Val) -> SSAValue:
            res = self.make(ops.EW_BINARY_OPS[kind], [a.value, b.value], e.pos)
            return self.column(Val(res, "matrix" if "matrix" in (a.kind, b.kind) else "scalar"), e.pos)

        up = self.make(ops.EwAndOp, [cmp("ge", x, lo), cmp("le", x, hi)], e.pos)
        down = self.make(ops.EwAndOp, [cmp("ge", x, hi), cmp("le", x, lo)], e.pos)
        return Val(self.make(ops.EwOrOp, [up, down], e.pos), "matrix")


def translate(
    anchor: Operation, views: dict[str, SSAValue], hidden: set[str], locator: QueryLocator, query: ast.Select
) -> SSAValue:
    """Insert the IR of `query` before `anchor` (the `daphne.sql` op); its result frame. `hidden` names views
    registered where the query cannot see their value."""
    return Translator(anchor, views, hidden, locator).select(query)
