"""AST -> `daphne` IR: a module with `func.func @main` plus one `func.func` per DaphneDSL function.

Variables are resolved to SSA values with DaphneDSL's block scoping. Control flow becomes `scf.if`, `scf.while`
and `scf.for`, whose results/iteration arguments carry the variables a branch or loop body assigns (found by a
pre-scan of the body, like DAPHNE's visitor). Ops are given the types their own inference rules yield at build time
(Unknown inside untyped functions); the compiler's `specialize` pass completes them.

Early `return`s inside `if` branches are restructured on the AST first: the statements after the `if` move into
both branches, so every function ends in exactly one `func.return` (SSA form needs no unstructured jumps).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from xdsl.dialects import func, scf
from xdsl.dialects.builtin import ArrayAttr, FunctionType, IndexType, IntegerAttr, ModuleOp, StringAttr, UnitAttr
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from daphnec.dialects import ops, ops_frame, ops_matrix
from daphnec.dialects.attr_names import (
    DECLARED_RESULTS_ATTR,
    KERNEL_HINT_ATTR,
    MERGE_CAST_ATTR,
    OVERLOADS_ATTR,
    SCALAR_ROLE_ATTR,
)
from daphnec.dialects.calls import Overload, choose_overload, overload_error
from daphnec.dialects.errors import Loc, ParseError
from daphnec.dialects.locations import to_attr
from daphnec.dialects.op_kinds import BINARY_OPERATORS
from daphnec.dialects.ops_parfor import ParForOp
from daphnec.dialects.types import (
    STR,
    UNKNOWN,
    FrameType,
    ListType,
    MatrixType,
    UnknownType,
    dsl_type,
    is_matrix,
    is_scalar,
    is_unknown,
    join_types,
    value_type,
    vt_name,
)
from daphnec.frontend import ast
from daphnec.frontend.builtins import all_builtins
from daphnec.frontend.hints import script_arg_message, unknown_function_message
from daphnec.frontend.imports import ImportResolver
from daphnec.frontend.modules import Module, ModuleLoader, UserFunction
from daphnec.frontend.paramserv import build_paramserv
from daphnec.frontend.parser import parse_literal
from daphnec.frontend.sources import SourceFiles

# --- scopes ------------------------------------------------------------------------------------------------------


@dataclass
class Scope:
    """A block scope. A `region` scope (a branch or loop body) records assignments to outer variables locally,
    so the enclosing structured op can yield them; other scopes write through to where the variable lives."""

    parent: Scope | None
    region: bool = False
    vars: dict[str, SSAValue] = field(default_factory=dict)
    readonly: frozenset[str] = frozenset()

    def lookup(self, name: str) -> SSAValue | None:
        s: Scope | None = self
        while s is not None:
            if name in s.vars:
                return s.vars[name]
            s = s.parent
        return None

    def is_readonly(self, name: str) -> bool:
        s: Scope | None = self
        while s is not None:
            if name in s.vars or name in s.readonly:
                return name in s.readonly
            s = s.parent
        return False

    def assign(self, name: str, v: SSAValue) -> None:
        s: Scope | None = self
        while s is not None:
            if name in s.vars or (s.region and s.parent is not None and s.parent.lookup(name) is not None):
                s.vars[name] = v
                return
            s = s.parent
        self.vars[name] = v


Memo = dict[int, tuple[ast.Stmt, dict[str, None]]]
"""statement id -> (the statement, kept alive so that its id is not reused; the names it assigns)."""


def assigned_names(stmts: Iterable[ast.Stmt], memo: Memo | None = None) -> list[str]:
    """Names assigned anywhere inside statements (nested blocks and control flow included), in order.

    `memo` (statement id -> its names) is shared by all the calls of one build: each structured statement asks
    for the names its body assigns, so without it n nested statements visit O(n^2) statements."""
    memo = {} if memo is None else memo
    out: dict[str, None] = {}
    for s in stmts:
        out.update(_assigned(s, memo))
    return list(out)


def _assigned(s: ast.Stmt | None, memo: Memo) -> dict[str, None]:
    """The names `s` assigns, in order (as keys), computed once per statement."""
    if s is None:
        return {}
    known = memo.get(id(s))
    if known is not None:
        return known[1]
    out: dict[str, None] = {}
    if isinstance(s, ast.Assign):
        out = dict.fromkeys(t.name for t in s.targets)
    elif isinstance(s, ast.Block):
        for x in s.stmts:
            out.update(_assigned(x, memo))
    elif isinstance(s, ast.If):
        out = {**_assigned(s.then, memo), **_assigned(s.else_, memo)}
    elif isinstance(s, (ast.While, ast.DoWhile, ast.For)):
        out = dict(_assigned(s.body, memo))
    memo[id(s)] = (s, out)
    return out


def _stmts(s: ast.Stmt | None) -> list[ast.Stmt]:
    if s is None:
        return []
    return list(s.stmts) if isinstance(s, ast.Block) else [s]


def _same_kind(a: Attribute, b: Attribute) -> bool:
    """Both matrices, both frames or both scalars (a join across kinds is an error inference reports)."""
    return type(a) is type(b) or (is_scalar(a) and is_scalar(b))


def contains_return(s: ast.Stmt | None) -> bool:
    if isinstance(s, ast.Return):
        return True
    if isinstance(s, ast.Block):
        return any(contains_return(x) for x in s.stmts)
    if isinstance(s, ast.If):
        return contains_return(s.then) or contains_return(s.else_)
    if isinstance(s, (ast.While, ast.DoWhile, ast.For)):
        return contains_return(s.body)
    return False


def restructure_returns(stmts: Sequence[ast.Stmt]) -> list[ast.Stmt]:
    """Move the statements after an `if` containing a `return` into both of its branches (recursively), so that
    returns only appear as the last statement of a path; statements after a `return` are dropped."""
    for i, s in enumerate(stmts):
        if isinstance(s, ast.Return):
            return list(stmts[: i + 1])
        if isinstance(s, ast.If) and contains_return(s):
            rest = list(stmts[i + 1 :])
            then = restructure_returns(_stmts(s.then) + rest)
            else_ = restructure_returns(_stmts(s.else_) + rest)
            new_if = ast.If(s.cond, ast.Block(tuple(then), s.then.loc), ast.Block(tuple(else_), s.loc), s.loc)
            return [*stmts[:i], new_if]
        if isinstance(s, (ast.While, ast.DoWhile, ast.For)) and contains_return(s):
            raise ParseError("return inside a loop is not supported", s.loc)
        if isinstance(s, ast.Block) and contains_return(s):
            return restructure_returns([*stmts[:i], *s.stmts, *stmts[i + 1 :]])
    return list(stmts)


def ends_in_return(stmts: Sequence[ast.Stmt]) -> bool:
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, ast.Return):
        return True
    if isinstance(last, ast.If):
        return ends_in_return(_stmts(last.then)) and ends_in_return(_stmts(last.else_))
    return False


# --- the builder ---------------------------------------------------------------------------------------------------


def _coercible(given: Attribute, carried: Attribute) -> bool:
    """Whether a value yielded to a structured op is cast to the type it carries (scf's verifiers need equal
    types; inference then joins them, `compiler/analysis/inference.py`): when that type is known, and when it is a
    matrix whose value type is known only once inference has read a .meta (`X = readMatrix(...)`), yielded a
    matrix of another shape (`Y = rbind(Y, Y)`) or a value of no known type yet (`s = s + as.scalar(X[i, j])`).
    A scalar yielded where the loop carries a matrix is not cast: inference reports it at the loop."""
    if not is_unknown(carried):
        return True
    return isinstance(carried, MatrixType) and isinstance(given, MatrixType | UnknownType)


class IRBuilder:
    """Builds one module from a script's AST (and the scripts it imports)."""

    def __init__(
        self,
        filename: str,
        script_args: dict[str, str] | None = None,
        import_paths: Mapping[str, Sequence[str]] | None = None,
        sources: SourceFiles | None = None,
    ):
        self.filename = filename
        self.sources = sources if sources is not None else SourceFiles()
        """Where the imported scripts and the import search are reported."""
        self.script_args = dict(script_args or {})
        self.loader = ModuleLoader(ImportResolver(dict(import_paths or {}), self.sources))
        self.module = ModuleOp([])
        self.functions: dict[str, UserFunction] = {}
        """Every user-defined function of the program by its IR symbol."""
        self.current: Module | None = None
        """The source file whose code is being built (the names it sees)."""
        self.block: Block | None = None
        self.scope = Scope(None)
        self.used_args: set[str] = set()
        self.builtins = all_builtins()
        self.assigned: Memo = {}
        """The names each statement assigns (`assigned_names`), shared by the whole build."""

    # -- entry ----------------------------------------------------------------------------------------------------

    def build(self, script: ast.Script) -> ModuleOp:
        """Load every module first (so calls may precede definitions and functions may recurse), declare every
        function, then build the main script (with the top-level code of the files it imports, at each import) and
        the function bodies."""
        self.current = self.loader.load(script, self.filename)
        self.functions = {f.sym: f for f in self.loader.functions}
        main_block = Block()
        main = func.FuncOp("main", FunctionType.from_lists([], []), Region(main_block))
        main.location = to_attr(script.loc)
        self.module.body.block.add_op(main)
        for f in self.functions.values():
            self._declare_function(f)
        self.block = main_block
        self.scope = Scope(None)
        for s in script.stmts:
            self.stmt(s)
        self.insert(func.ReturnOp(), script.loc)
        self._build_function_bodies()
        return self.module

    def _import(self, s: ast.Import) -> None:
        """Run the top-level code of the imported file(s) here, in a scope of their own (an imported file sees none
        of the importer's variables), then make their variables visible under the import's prefix (`utils.pi`).
        Names with a dot are those of the imported file's own imports: they stay private (Imports.md)."""
        assert self.current is not None
        modules = self.current.imports.get(s)
        if modules is None or self.scope.parent is not None or self._in_function:
            raise ParseError("Imports can only be done in the main scope", s.loc)
        outer_scope, outer_module = self.scope, self.current
        for target, module in modules:
            self.scope, self.current = Scope(None), module
            try:
                for x in module.script.stmts:
                    self.stmt(x)
                names = self.scope.vars
            finally:
                self.scope, self.current = outer_scope, outer_module
            for name, v in names.items():
                if "." not in name:
                    self.scope.assign(target.prefix + name, v)

    # -- op creation ----------------------------------------------------------------------------------------------

    def insert(self, op: Operation, loc: Loc) -> Operation:
        """Place an op whose result types are already set at the insertion point, with its source location."""
        op.location = to_attr(loc)
        assert self.block is not None
        self.block.add_op(op)
        return op

    def insert_inferred(self, op: Operation, loc: Loc) -> Operation:
        """Place an op built by its own constructor (properties, operand segments) after inferring its result
        types."""
        if isinstance(op, ops.DaphneOp):
            op.typed()
        return self.insert(op, loc)

    def op(self, cls: type, operands: Sequence[SSAValue], loc: Loc) -> SSAValue | None:
        """Create a daphne op with inferred result types at the insertion point; its first result (if any)."""
        o = cls.create(operands=list(operands), result_types=[UNKNOWN] * len(cls.get_irdl_definition().results))
        self.insert_inferred(o, loc)
        return o.results[0] if o.results else None

    def function_symbol(self, name: str) -> str | None:
        """The IR symbol of the user-defined function `name` (as written in the script; its first definition), None
        if there is none."""
        fs = self.user_functions(name)
        return fs[0].sym if fs else None

    def user_functions(self, name: str) -> list[UserFunction]:
        """The definitions of the user-defined function the code being built calls `name` (empty if none)."""
        assert self.current is not None
        return self.current.functions.get(name, [])

    def constant(self, v: object, loc: Loc, vt: str | None = None) -> SSAValue:
        if vt is None:
            vt = (
                "bool"
                if isinstance(v, bool)
                else "si64"
                if isinstance(v, int)
                else "f64"
                if isinstance(v, float)
                else "str"
            )
        return self.insert(ops.ConstantOp.of(v, vt), loc).results[0]  # type: ignore[arg-type]

    def cast(self, v: SSAValue, vt: str | None, dt: str | None, loc: Loc, role: str | None = None) -> SSAValue:
        """`as.<dt><vt>(v)`; `role` names what the scalar is for (`the condition of 'if'`) in the error for a
        matrix that is not 1 x 1 (dialects/attr_names.py: SCALAR_ROLE_ATTR)."""
        if vt is not None and dt == "scalar" and v.type == value_type(vt):
            return v
        op = self.insert(ops.CastOp(v, vt, dt), loc)
        if role is not None and is_matrix(v.type):
            op.attributes[SCALAR_ROLE_ATTR] = StringAttr(role)
        return op.results[0]

    def as_bool(self, v: SSAValue, loc: Loc, role: str | None = None) -> SSAValue:
        return self.cast(v, "bool", "scalar", loc, role)

    # -- statements -----------------------------------------------------------------------------------------------

    def stmt(self, s: ast.Stmt) -> None:
        if isinstance(s, ast.ExprStmt):
            self.expr(s.expr, allow_void=True)
        elif isinstance(s, ast.Assign):
            self._assign(s)
        elif isinstance(s, ast.Block):
            outer = self.scope
            self.scope = Scope(outer)
            for x in s.stmts:
                self.stmt(x)
            self.scope = outer
        elif isinstance(s, ast.If):
            self._if(s)
        elif isinstance(s, ast.While):
            self._while(s.cond, s.body, do_while=False, loc=s.loc)
        elif isinstance(s, ast.DoWhile):
            self._while(s.cond, s.body, do_while=True, loc=s.loc)
        elif isinstance(s, ast.For):
            self._for(s)
        elif isinstance(s, ast.FuncDef):
            if self.scope.parent is not None or self._in_function:
                raise ParseError("functions can only be defined at the top level of a script", s.loc)
        elif isinstance(s, ast.Import):
            self._import(s)
        elif isinstance(s, ast.Return):
            raise ParseError("return outside of a function", s.loc)
        else:  # pragma: no cover - the parser produces no other statements
            raise ParseError(f"unsupported statement {type(s).__name__}", s.loc)

    _in_function = False

    def _assign(self, s: ast.Assign) -> None:
        if len(s.targets) == 1:
            values = [self.expr(s.value)]
        else:
            values = self.expr_multi(s.value, len(s.targets))
        for t, v in zip(s.targets, values):
            if self.scope.is_readonly(t.name):
                raise ParseError(f"the loop variable '{t.name}' cannot be assigned", t.loc)
            if t.index is not None:
                v = self._left_index(t, v)
            self.scope.assign(t.name, v)

    def _left_index(self, t: ast.AssignTarget, value: SSAValue) -> SSAValue:
        base = self.scope.lookup(t.name)
        if base is None:
            raise ParseError(f"variable '{t.name}' is indexed on the left side before it is assigned", t.loc)
        if not (is_matrix(base.type) or isinstance(base.type, FrameType | UnknownType)):
            raise ParseError(
                f"left indexing needs a matrix, but '{t.name}' is a {_kind_name(base.type)} (LanguageRef: left "
                "indexing is supported only for matrices)",
                t.loc,
            )
        idx = t.index
        assert idx is not None
        rlo, rhi = self._insert_bounds(base, idx.rows, ops.NumRowsOp, idx.loc)
        clo, chi = self._insert_bounds(base, idx.cols, ops.NumColsOp, idx.loc)
        return self.op(ops.InsertOp, [base, value, rlo, rhi, clo, chi], t.loc)  # type: ignore[return-value]

    def _insert_bounds(
        self, base: SSAValue, sel: ast.Range | ast.Expr | None, num: type, loc: Loc
    ) -> tuple[SSAValue, SSAValue]:
        """[lo, hi) of a left-indexing selector; a single position p becomes [p, p+1) after normalising p < 0."""
        if sel is None:
            return self.constant(0, loc), self.cast(self.op(num, [base], loc), "si64", "scalar", loc)  # type: ignore[arg-type]
        if isinstance(sel, ast.Range):
            lo = self._position(sel.start, True) if sel.start is not None else self.constant(0, loc)
            hi = (
                self._position(sel.stop, True)
                if sel.stop is not None
                else self.cast(self.op(num, [base], loc), "si64", "scalar", loc)
            )  # type: ignore[arg-type]
            return lo, hi
        p = self._position(sel, True)
        if is_matrix(p.type):
            raise ParseError("left indexing supports positions and ranges, not position lists", sel.loc)
        n = self.cast(self.op(num, [base], loc), "si64", "scalar", loc)  # type: ignore[arg-type]
        neg = self.op(ops.EwLtOp, [p, self.constant(0, loc)], loc)
        p = self.op(ops.CondOp, [neg, self.op(ops.EwAddOp, [p, n], loc), p], loc)  # type: ignore[list-item]
        return p, self.op(ops.EwAddOp, [p, self.constant(1, loc)], loc)  # type: ignore[list-item,return-value]

    # -- structured control flow ------------------------------------------------------------------------------------

    def _region(
        self, block: Block, stmts: Sequence[ast.Stmt], bindings: dict[str, SSAValue], readonly: Iterable[str] = ()
    ) -> Scope:
        """Build statements into `block` within a fresh region scope whose initial bindings shadow outer ones."""
        outer_block, outer_scope = self.block, self.scope
        self.block = block
        self.scope = Scope(outer_scope, region=True, vars=dict(bindings), readonly=frozenset(readonly))
        inner = self.scope
        try:
            for x in stmts:
                self.stmt(x)
        finally:
            self.block, self.scope = outer_block, outer_scope
        return inner

    def _carried(self, stmts: Sequence[ast.Stmt]) -> list[str]:
        """Outer variables a body assigns: they flow through the structured op."""
        return [n for n in assigned_names(stmts, self.assigned) if self.scope.lookup(n) is not None]

    def _if(self, s: ast.If, returning: bool = False) -> list[SSAValue] | None:
        cond = self.expr(s.cond)
        if is_matrix(cond.type):
            cond = self.cast(cond, None, "scalar", s.cond.loc, "the condition of 'if'")
        cond = self.as_bool(cond, s.cond.loc)
        then_stmts, else_stmts = _stmts(s.then), _stmts(s.else_)
        names = [] if returning else self._carried(then_stmts + else_stmts)
        then_b, else_b = Block(), Block()
        yields: list[list[SSAValue]] = []
        for blk, stmts in ((then_b, then_stmts), (else_b, else_stmts)):
            ret_vals: list[SSAValue] = []
            scope = self._region(blk, stmts[:-1] if returning else stmts, {})
            if returning:
                last = stmts[-1]
                outer_block, outer_scope = self.block, self.scope
                self.block, self.scope = blk, scope
                try:
                    ret_vals = self._return_values(last)
                finally:
                    self.block, self.scope = outer_block, outer_scope
            vals = ret_vals + [scope.vars.get(n) or self.scope.lookup(n) for n in names]  # type: ignore[misc]
            yields.append(vals)
        types = [join_types(a.type, b.type) if _same_kind(a.type, b.type) else a.type for a, b in zip(*yields)]
        for blk, vals in zip((then_b, else_b), yields):
            self._yield(blk, vals, types, s.loc)
        op = scf.IfOp(cond, types, Region(then_b), Region(else_b))
        self.insert(op, s.loc)
        for n, r in zip(names, op.results):
            self.scope.assign(n, r)
        return list(op.results) if returning else None

    def _return_values(self, last: ast.Stmt) -> list[SSAValue]:
        """The values a path returns: a `return` statement, or a nested `if` whose branches all return."""
        if isinstance(last, ast.Return):
            return [self.expr(e) for e in last.values]
        assert isinstance(last, ast.If)
        return self._if(last, returning=True) or []

    def _while(self, cond_e: ast.Expr, body: ast.Stmt, do_while: bool, loc: Loc) -> None:
        body_stmts = _stmts(body)
        names = self._carried(body_stmts)
        inits = [self.scope.lookup(n) for n in names]
        types = [v.type for v in inits]  # type: ignore[union-attr]
        before, after = Block(arg_types=types), Block(arg_types=types)
        bind = dict(zip(names, before.args))
        if do_while:  # the condition sees the body's updates of outer variables, not the variables it creates
            body_scope = self._region(before, body_stmts, bind)
            vals = [body_scope.vars[n] for n in names]
            scope = Scope(self.scope, region=True, vars=dict(zip(names, vals)))
        else:
            scope = self._region(before, [], bind)
            vals = list(before.args)
        outer_block, outer_scope = self.block, self.scope
        self.block, self.scope = before, scope
        try:
            c = self.expr(cond_e)
            if is_matrix(c.type):
                role = f"the condition of '{'do-while' if do_while else 'while'}'"
                c = self.cast(c, None, "scalar", cond_e.loc, role)
            c = self.as_bool(c, cond_e.loc)
        finally:
            self.block, self.scope = outer_block, outer_scope
        self._yield(before, vals, types, loc, scf.ConditionOp, c)
        if do_while:
            after.add_op(scf.YieldOp(*after.args))
        else:
            scope = self._region(after, body_stmts, dict(zip(names, after.args)))
            self._yield(after, [scope.vars[n] for n in names], types, loc)
        op = scf.WhileOp(inits, types, Region(before), Region(after))  # type: ignore[arg-type]
        self.insert(op, loc)
        for n, r in zip(names, op.results):
            self.scope.assign(n, r)

    def _for(self, s: ast.For) -> None:
        start = self.cast(self.expr(s.start), "si64", "scalar", s.start.loc)
        stop = self.cast(self.expr(s.stop), "si64", "scalar", s.stop.loc)
        step = self.cast(self.expr(s.step), "si64", "scalar", s.step.loc) if s.step is not None else None
        rng = self.insert(ops.ForRangeOp(start, stop, step), s.loc)
        count, step_v = rng.results
        zero = self.insert(ops.ConstantOp(IntegerAttr(0, IndexType())), s.loc).results[0]
        one = self.insert(ops.ConstantOp(IntegerAttr(1, IndexType())), s.loc).results[0]
        body_stmts = _stmts(s.body)
        names = [n for n in self._carried(body_stmts) if n != s.var]
        inits = [self.scope.lookup(n) for n in names]
        body = Block(arg_types=[IndexType(), *(v.type for v in inits)])  # type: ignore[union-attr]
        outer_block = self.block
        self.block = body
        try:
            k = self.cast(body.args[0], "si64", "scalar", s.loc)
            i = self.op(ops.EwAddOp, [start, self.op(ops.EwMulOp, [k, step_v], s.loc)], s.loc)  # type: ignore[list-item]
        finally:
            self.block = outer_block
        bind = dict(zip(names, body.args[1:]))
        bind[s.var] = i  # type: ignore[assignment]
        scope = self._region(body, body_stmts, bind, readonly=[s.var])
        self._yield(body, [scope.vars[n] for n in names], [v.type for v in inits], s.loc)  # type: ignore[union-attr]
        if isinstance(s, ast.ParFor):  # the `parfor` pass checks that the iterations are independent
            op: scf.ForOp = ParForOp(zero, count, one, inits, body, names)  # type: ignore[arg-type]
        else:
            op = scf.ForOp(zero, count, one, inits, body)  # type: ignore[arg-type]
        self.insert(op, s.loc)
        for n, r in zip(names, op.results):
            self.scope.assign(n, r)

    # -- functions ------------------------------------------------------------------------------------------------

    def _type(self, t: ast.TypeSpec | None) -> Attribute:
        if t is None:
            return UNKNOWN
        vt = value_type(t.value_type) if t.value_type else UNKNOWN
        if t.data_type == "matrix":
            return MatrixType(vt)
        if t.data_type == "frame":
            return FrameType([], -1) if t.value_type is None else FrameType([vt], -1)
        return vt if t.data_type in (None, "scalar") else UNKNOWN

    def _declare_function(self, f: UserFunction) -> None:
        n = f.node
        ins = [self._type(p.type) for p in n.params]
        outs = [self._type(t) for t in n.returns]
        op = func.FuncOp(f.sym, FunctionType.from_lists(ins, outs), Region(Block(arg_types=ins)))
        op.location = to_attr(n.loc)
        if n.returns:
            op.attributes[DECLARED_RESULTS_ATTR] = UnitAttr()
        f.op = op
        self.module.body.block.add_op(op)

    def _build_function_bodies(self) -> None:
        for f in self.functions.values():
            assert f.op is not None
            n = f.node
            self._in_function = True
            self.current = f.module
            self.block = f.op.body.block
            self.scope = Scope(None, vars={p.name: a for p, a in zip(n.params, f.op.body.block.args)})
            stmts = list(n.body.stmts)
            if not n.returns and _count_returns(n) == 0 and not ends_in_return(stmts):
                stmts.append(ast.Return((), n.body.loc))
            stmts = restructure_returns(stmts)
            if not ends_in_return(stmts):
                if n.returns:
                    raise ParseError(f"function '{f.sym}' does not return a value on every path", n.loc)
                stmts.append(ast.Return((), n.body.loc))
            for x in stmts[:-1]:
                self.stmt(x)
            vals = self._return_values(stmts[-1])
            if n.returns and len(vals) != len(n.returns):
                raise ParseError(
                    f"function '{f.sym}' returns {len(vals)} value(s) but declares {len(n.returns)}", stmts[-1].loc
                )
            if n.returns:  # cast to the declared result types, so the IR verifies before inference
                vals = [self._coerce(v, t, stmts[-1].loc) for v, t in zip(vals, f.op.function_type.outputs.data)]
            self.insert(func.ReturnOp(*vals), stmts[-1].loc)
            if not n.returns:
                f.op.function_type = FunctionType.from_lists(
                    list(f.op.function_type.inputs.data), [v.type for v in vals]
                )
            self._in_function = False

    def _call_user(self, fs: list[UserFunction], e: ast.Call) -> list[SSAValue]:
        """A call of a user-defined function: its overload is chosen by DAPHNE's rules (`dialects.calls`); a
        choice that depends on argument types not known yet is made again by specialization."""
        if e.kernel is not None:
            raise ParseError("kernel hints are not supported for calls to user-defined functions", e.loc)
        args = [self.expr(a) for a in e.args]
        kwargs = [(k, self.expr(v)) for k, v in e.kwargs]
        bound: list[tuple[UserFunction, list[SSAValue]]] = []
        for f in fs:
            b = self._bind(f, args, kwargs, e.loc, report=len(fs) == 1)
            if b is not None:
                bound.append((f, b))
        candidates = [(_overload(f), [a.type for a in b]) for f, b in bound]
        chosen, exact = choose_overload(candidates)
        if not chosen or (not exact and len(chosen) > 1):
            types = [a.type for a in args] + [v.type for _, v in kwargs]
            overloads = [_overload(f) for f in fs]
            raise ParseError(overload_error(e.name, overloads, types, len(chosen)), e.loc)
        f, vals = next((f, b) for f, b in bound if f.sym == chosen[0].sym)
        deferred = len(chosen) > 1 and not kwargs and any(is_unknown(v.type) for v in vals)
        call = self._call_op(f, vals, e.loc, generic=deferred)
        if deferred:
            call.attributes[OVERLOADS_ATTR] = ArrayAttr([StringAttr(o.sym) for o in chosen])
        self.insert(call, e.loc)
        return list(call.results)

    def _bind(
        self, f: UserFunction, args: list[SSAValue], kwargs: list[tuple[str, SSAValue]], loc: Loc, report: bool
    ) -> list[SSAValue] | None:
        """The arguments of a call in `f`'s parameter order; None (or, with `report`, an error) if they do not
        bind to its parameters."""
        params = [p.name for p in f.node.params]
        problem = None
        if len(args) > len(params):
            problem = f"function '{f.sym}' expects {len(params)} argument(s), but got {len(args) + len(kwargs)}"
        bound = dict(zip(params, args))
        for k, v in kwargs:
            if problem is None and k not in params:
                problem = f"function '{f.sym}' has no parameter '{k}'"
            elif problem is None and k in bound:
                problem = f"parameter '{k}' of function '{f.sym}' given twice"
            bound[k] = v
        if problem is None and len(bound) != len(params):
            missing = ", ".join(p for p in params if p not in bound)
            problem = f"function '{f.sym}' expects {len(params)} argument(s); missing: {missing}"
        if problem is not None and report:
            raise ParseError(problem, loc)
        return None if problem is not None else [bound[p] for p in params]

    def _call_op(self, f: UserFunction, args: list[SSAValue], loc: Loc, generic: bool) -> Operation:
        """`func.call` of a fully typed function (arguments cast to its parameter types), else (or if the overload
        is chosen again later) a generic call that specialization resolves."""
        assert f.op is not None
        ins = f.op.function_type.inputs.data
        if generic or any(is_unknown(t) for t in ins) or not f.node.returns:
            return ops.GenericCallOp(f.sym, args, len(f.node.returns) or _count_returns(f.node))
        args = [self._coerce(a, t, loc) for a, t in zip(args, ins)]
        return func.CallOp(f.sym, args, list(f.op.function_type.outputs.data))

    def _yield(
        self,
        block: Block,
        values: Sequence[SSAValue],
        types: Sequence[Attribute],
        loc: Loc,
        terminator: type = scf.YieldOp,
        *lead: SSAValue,
    ) -> None:
        """End a structured op's block, casting values to the op's carried types where they differ (inference
        later generalizes these `daphne.merge` casts to the joined types), so the IR verifies right after parsing."""
        outer = self.block
        self.block = block
        try:
            vals = [self._coerce(v, t, loc) if _coercible(v.type, t) else v for v, t in zip(values, types)]
        finally:
            self.block = outer
        block.add_op(terminator(*lead, *vals))

    def _coerce(self, v: SSAValue, t: Attribute, loc: Loc) -> SSAValue:
        """Cast an argument to a typed parameter's declared type (value type and/or data type)."""
        if v.type == t:
            return v
        cast = ops.CastOp(v, vt_name(t), "matrix" if is_matrix(t) else "scalar")
        cast.attributes[MERGE_CAST_ATTR] = UnitAttr()
        cast.res._type = t  # noqa: SLF001 - the declared type, not the inferred one
        return self.insert(cast, loc).results[0]

    # -- expressions ----------------------------------------------------------------------------------------------

    def expr(self, e: ast.Expr, allow_void: bool = False) -> SSAValue:
        v = self._expr(e)
        if v is None and not allow_void:
            raise ParseError("this expression has no value", e.loc)
        return v  # type: ignore[return-value]

    def expr_multi(self, e: ast.Expr, n: int) -> list[SSAValue]:
        if not isinstance(e, ast.Call):
            raise ParseError(f"{n} variables are assigned, but the right side is not a function call", e.loc)
        vals = self._call(e)
        if len(vals) != n:
            raise ParseError(f"{n} variables are assigned, but '{e.name}' returns {len(vals)} value(s)", e.loc)
        return vals

    def _expr(self, e: ast.Expr) -> SSAValue | None:
        loc = e.loc
        if isinstance(e, ast.IntLit):
            return self.constant(e.value, loc, e.vt)
        if isinstance(e, ast.FloatLit):
            return self.constant(e.value, loc, e.vt)
        if isinstance(e, ast.BoolLit):
            return self.constant(e.value, loc, "bool")
        if isinstance(e, ast.StrLit):
            return self.constant(e.value, loc, "str")
        if isinstance(e, ast.Ident):
            v = self.scope.lookup(e.name)
            if v is None:
                raise ParseError(f"variable '{e.name}' is used before it is assigned", loc)
            return v
        if isinstance(e, ast.ScriptArg):
            return self._script_arg(e)
        if isinstance(e, ast.Unary):
            if e.op == "+":
                return self.expr(e.operand)
            if isinstance(e.operand, (ast.IntLit, ast.FloatLit)) and not (
                isinstance(e.operand, ast.IntLit) and e.operand.vt != "si64"
            ):
                return self.constant(-e.operand.value, loc, e.operand.vt)
            return self.op(ops.EwMinusOp, [self.expr(e.operand)], loc)
        if isinstance(e, ast.Binary):
            return self._binary(e)
        if isinstance(e, ast.Ternary):
            return self._ternary(e)
        if isinstance(e, ast.Call):
            vals = self._call(e)
            if len(vals) > 1:
                raise ParseError(f"'{e.name}' returns {len(vals)} values; assign them with 'a, b = {e.name}(...)'", loc)
            return vals[0] if vals else None
        if isinstance(e, ast.Cast):
            return self._cast(e)
        if isinstance(e, ast.Index):
            return self._index(e)
        if isinstance(e, ast.ElementIndex):
            lst = self.expr(e.obj)
            if not isinstance(lst.type, ListType | UnknownType):
                raise ParseError(
                    "'[i]' (one position, no comma) selects a list element; index a matrix or frame "
                    "with '[rows, cols]'",
                    e.loc,
                )
            idx = self.cast(self.expr(e.index), "index", "scalar", loc)
            return self.op(ops_frame.ListGetOp, [lst, idx], loc)
        if isinstance(e, ast.BitIndex):
            v = self.expr(e.obj)
            if e.rows is not None:
                v = self.op(ops.FilterRowOp, [v, self.expr(e.rows)], loc)  # type: ignore[list-item]
            if e.cols is not None:
                v = self.op(ops.FilterColOp, [v, self.expr(e.cols)], loc)  # type: ignore[list-item]
            return v
        if isinstance(e, ast.MatrixLit):
            return self._matrix_literal(e)
        if isinstance(e, ast.FrameLitCols):
            labels = [self._frame_label(x) for x in e.labels]
            cols = [self._as_column(self.expr(x), x.loc) for x in e.cols]
            return self.frame(cols, labels, loc)
        if isinstance(e, ast.FrameLitRows):
            return self._frame_rows(e)
        raise ParseError(f"unsupported expression {type(e).__name__}", loc)  # pragma: no cover

    def _script_arg(self, e: ast.ScriptArg) -> SSAValue:
        if e.name not in self.script_args:
            raise ParseError(f"script argument '{e.name}' is used but not given (pass {e.name}=<value>)", e.loc)
        text = self.script_args[e.name]
        try:
            lit = parse_literal(text, f"<argument {e.name}>")
        except ParseError:
            raise ParseError(script_arg_message(e.name, text), e.loc) from None
        return self.expr(lit)

    def _binary(self, e: ast.Binary) -> SSAValue:
        lhs, rhs = self.expr(e.lhs), self.expr(e.rhs)
        cls = ops_matrix.MatMulOp if e.op == "@" else ops.EW_BINARY_OPS[BINARY_OPERATORS[e.op]]
        v = self.op(cls, [lhs, rhs], e.loc)
        if e.kernel is not None:
            self._kernel_hint(v.owner, e.kernel, e.loc)
        return v  # type: ignore[return-value]

    def _ternary(self, e: ast.Ternary) -> SSAValue:
        """A scalar condition evaluates only the chosen branch (`scf.if`); a matrix condition is element-wise."""
        cond = self.expr(e.cond)
        if is_matrix(cond.type):
            return self.op(ops.CondOp, [cond, self.expr(e.then), self.expr(e.else_)], e.loc)  # type: ignore[return-value]
        cond = self.as_bool(cond, e.cond.loc)
        vals, blocks = [], []
        for x in (e.then, e.else_):
            blk = Block()
            outer_block = self.block
            self.block = blk
            try:
                v = self.expr(x)
            finally:
                self.block = outer_block
            blk.add_op(scf.YieldOp(v))
            vals.append(v)
            blocks.append(blk)
        t = vals[0].type if not is_unknown(vals[0].type) else vals[1].type
        op = scf.IfOp(cond, [t], Region(blocks[0]), Region(blocks[1]))
        self.insert(op, e.loc)
        return op.results[0]

    def _call(self, e: ast.Call) -> list[SSAValue]:
        fs = self.user_functions(e.name)
        if e.name == "map" and not fs:
            return [self._map(e)]
        if e.name == "paramserv" and not fs:
            return [build_paramserv(self, e)]
        if fs:
            return self._call_user(fs, e)
        b = self.builtins.get(e.name)
        if b is None:
            assert self.current is not None
            known = [*self.builtins, *self.current.functions, "map", "paramserv"]
            raise ParseError(unknown_function_message(e.name, known), e.loc)
        args = [self.expr(a) for a in e.args]
        kwargs: dict[str, SSAValue] = {}
        for k, v in e.kwargs:
            if k in kwargs:
                raise ParseError(f"keyword argument '{k}' given twice", e.loc)
            kwargs[k] = self.expr(v)
        assert self.block is not None
        last = self.block.last_op
        res = b.build(self, b.bind(e.name, args, kwargs, self, e.loc), e.loc)
        results = [] if res is None else list(res) if isinstance(res, list) else [res]
        if e.kernel is not None:
            op = results[0].owner if results else self.block.last_op  # an op without results: print, write
            self._kernel_hint(op if op is not last else None, e.kernel, e.loc)
        return results

    def _kernel_hint(self, op: object, kernel: str, loc: Loc) -> None:
        """`f::kernel(...)` / `a +::kernel b`: recorded on the op as `kernel_hint`; the `select-kernels` pass
        (compiler/passes/select_kernels.py) checks the name and makes that kernel run."""
        if not isinstance(op, ops.DaphneOp):
            raise ParseError("a kernel hint needs a call of a builtin function that is an operation", loc)
        op.attributes[KERNEL_HINT_ATTR] = StringAttr(kernel)

    def _map(self, e: ast.Call) -> SSAValue:
        """`map(X, udf)`: the second argument is the bare name of a user-defined function, not an expression; of its
        overloads, the unary one that takes X's value type (DAPHNE's `findMatchingUnaryUDF`)."""
        if len(e.args) != 2 or e.kwargs:
            raise ParseError("built-in function 'map' expects 2 arguments (a matrix and a function name)", e.loc)
        udf = e.args[1]
        fs = self.user_functions(udf.name) if isinstance(udf, ast.Ident) else []
        if not fs:
            if isinstance(udf, ast.StrLit):  # `map(X, "f")`: the name is written bare, as a function is called
                known = bool(self.user_functions(udf.value))
                hint = f"write map(X, {udf.value})" if known else f"and '{udf.value}' is not a user-defined function"
                raise ParseError(
                    f"map: the second argument is the bare name of a user-defined function, not a string ({hint})",
                    udf.loc,
                )
            if isinstance(udf, ast.Ident):
                raise ParseError(f"map: '{udf.name}' is not a user-defined function", udf.loc)
            raise ParseError("map: the second argument must be the name of a user-defined function", udf.loc)
        x = self.expr(e.args[0])
        elem = x.type.element_type if isinstance(x.type, MatrixType) else UNKNOWN
        unary = [f for f in fs if len(f.node.params) == 1]
        if not unary:
            raise ParseError(
                f"map: function '{fs[0].sym}' must take exactly one argument, it takes {len(fs[0].node.params)}",
                udf.loc,
            )
        chosen, exact = choose_overload([(_overload(f), [elem]) for f in unary])
        if not chosen or (not exact and len(chosen) > 1):
            raise ParseError(f"No function definition of `{udf.name}` found with matching types", udf.loc)
        o = ops.MapOp(x, chosen[0].sym)
        if len(chosen) > 1 and is_unknown(elem):
            o.attributes[OVERLOADS_ATTR] = ArrayAttr([StringAttr(c.sym) for c in chosen])
        return self.insert(o, e.loc).results[0]

    def _cast(self, e: ast.Cast) -> SSAValue:
        v = self.expr(e.expr)
        t = e.target
        dt = t.data_type
        if dt == "scalar" and t.value_type is None:
            return self.cast(v, None, "scalar", e.loc)
        return self.insert(ops.CastOp(v, t.value_type, dt), e.loc).results[0]

    def _index(self, e: ast.Index) -> SSAValue:
        v = self.expr(e.obj)
        if not (is_matrix(v.type) or isinstance(v.type, FrameType | UnknownType)):
            raise ParseError(f"indexing needs a matrix or a frame, but this is a {_kind_name(v.type)}", e.loc)
        v = self._select(v, e.rows, ops.SliceRowOp, ops.ExtractRowOp, ops.NumRowsOp, e.loc)
        return self._select(v, e.cols, ops.SliceColOp, ops.ExtractColOp, ops.NumColsOp, e.loc)

    def _select(
        self, v: SSAValue, sel: ast.Range | ast.Expr | None, slice_op: type, extract_op: type, num: type, loc: Loc
    ) -> SSAValue:
        if sel is None:
            return v
        if isinstance(sel, ast.Range):
            lo = self._position(sel.start, False) if sel.start is not None else self.constant(0, loc)
            hi = (
                self._position(sel.stop, False)
                if sel.stop is not None
                else self.cast(self.op(num, [v], loc), "si64", "scalar", loc)  # type: ignore[arg-type]
            )
            return self.op(slice_op, [v, lo, hi], loc)  # type: ignore[return-value]
        return self.op(extract_op, [v, self._position(sel, False)], loc)  # type: ignore[return-value]

    def _position(self, e: ast.Expr, left: bool) -> SSAValue:
        """A position given as a number is cast to si64, truncating toward zero (DAPHNE's `castSI64If`); a position
        matrix or a frame label stays as it is. Left indexing takes positions only, so there a value whose type is
        not known yet is cast too."""
        p = self.expr(e)
        t = p.type
        if (is_scalar(t) and t != STR and vt_name(t) != "si64") or (left and isinstance(t, UnknownType)):
            return self.cast(p, "si64", "scalar", e.loc)
        return p

    def _matrix_literal(self, e: ast.MatrixLit) -> SSAValue:
        elems = [self.expr(x) for x in e.elems]
        for x, v in zip(e.elems, elems):
            if not (is_scalar(v.type) or is_unknown(v.type)):
                raise ParseError("matrix literal elements must be scalars", x.loc)
        n = len(elems)
        rows = self.expr(e.rows) if e.rows is not None else None
        cols = self.expr(e.cols) if e.cols is not None else None
        loc = e.loc
        if rows is None and cols is None:
            rows, cols = self.constant(n, loc), self.constant(1, loc)
        elif rows is None:
            rows = self._div_or_const(n, cols, loc)  # type: ignore[arg-type]
        elif cols is None:
            cols = self._div_or_const(n, rows, loc)
        rows, cols = self.cast(rows, "si64", "scalar", loc), self.cast(cols, "si64", "scalar", loc)  # type: ignore[arg-type]
        for d in (rows, cols):
            c = ops.constant_value(d)
            if isinstance(c, int) and (c < 0 or (c == 0 and n > 0)):
                raise ParseError(f"invalid matrix literal shape: {c}", loc)
        r, c = ops.constant_value(rows), ops.constant_value(cols)
        if isinstance(r, int) and isinstance(c, int) and r * c != n:
            raise ParseError(f"matrix literal with {n} element(s) cannot have shape {r}x{c}", loc)
        o = ops.MatrixLiteralOp(elems, rows, cols)
        return self.insert_inferred(o, loc).results[0]

    def _div_or_const(self, n: int, d: SSAValue, loc: Loc) -> SSAValue:
        c = ops.constant_value(d)
        if isinstance(c, int) and not isinstance(c, bool) and c > 0:
            if n % c:
                raise ParseError(f"matrix literal with {n} element(s) cannot be divided into {c}", loc)
            return self.constant(n // c, loc)
        return self.op(ops.EwDivOp, [self.constant(n, loc), d], loc)  # type: ignore[return-value]

    def _frame_label(self, e: ast.Expr) -> SSAValue:
        """A frame literal's column label: a string (DAPHNE's visitor rejects any other type; a value whose type
        is not known yet, inside an untyped function, is cast once it is)."""
        v = self.expr(e)
        if not (v.type == STR or is_unknown(v.type)):
            raise ParseError(f"labels for frame literals must be strings, but this one is {dsl_type(v.type)}", e.loc)
        return self.cast(v, "str", "scalar", e.loc)

    def _as_column(self, v: SSAValue, loc: Loc) -> SSAValue:
        if not (is_matrix(v.type) or is_unknown(v.type)):
            raise ParseError("frame literal columns must be matrices", loc)
        return v

    def frame(self, cols: list[SSAValue], labels: list[SSAValue], loc: Loc) -> SSAValue:
        """A frame of the given column matrices and label strings (frame literals and `createFrame`)."""
        names = [ops.constant_value(x) for x in labels]
        if len(set(names)) != len(names) and all(isinstance(x, str) for x in names):
            raise ParseError("frame labels must be unique", loc)
        o = ops.CreateFrameOp(cols, labels)
        return self.insert_inferred(o, loc).results[0]

    def _frame_rows(self, e: ast.FrameLitRows) -> SSAValue:
        labels = [self._frame_label(x) for x in e.labels]
        for r in e.rows:
            if len(r) != len(labels):
                raise ParseError(
                    f"frame literal row has {len(r)} value(s) but there are {len(labels)} label(s)",
                    r[0].loc if r else e.loc,
                )
        cols = []
        for j in range(len(labels)):
            col = ast.MatrixLit(tuple(r[j] for r in e.rows), None, None, False, e.loc)
            cols.append(self._matrix_literal(col))
        return self.frame(cols, labels, e.loc)


def _kind_name(t: Attribute) -> str:
    """`si64 scalar`, `list`: what a value is, in a message."""
    return f"{dsl_type(t)} scalar" if is_scalar(t) else dsl_type(t)


def _overload(f: UserFunction) -> Overload:
    """A declared function as an overload candidate (its parameter types, Unknown where untyped)."""
    assert f.op is not None
    return Overload(f.sym, tuple(f.op.function_type.inputs.data))


def _count_returns(n: ast.FuncDef) -> int:
    """The number of values an untyped function returns (from its first `return` statement)."""

    def find(stmts: Sequence[ast.Stmt]) -> int | None:
        for s in stmts:
            if isinstance(s, ast.Return):
                return len(s.values)
            for sub in (
                _stmts(getattr(s, "then", None)),
                _stmts(getattr(s, "else_", None)),
                _stmts(getattr(s, "body", None)),
            ):
                r = find(sub)
                if r is not None:
                    return r
        return None

    return find(n.body.stmts) or 0


def build_module(
    script: ast.Script,
    filename: str,
    script_args: dict[str, str] | None = None,
    import_paths: Mapping[str, Sequence[str]] | None = None,
    sources: SourceFiles | None = None,
) -> ModuleOp:
    """The IR of `script` (parsed from `filename`); the scripts it imports are reported to `sources`.
    `import_paths` is the user config's `daphnedsl_import_paths` (`default_dirs` and library folders)."""
    return IRBuilder(filename, script_args, import_paths, sources).build(script)
