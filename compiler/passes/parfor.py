"""`parfor`: prove that a parfor's iterations are independent, and let them write their results in place.

A `daphne.parfor` may run its iterations in any order and at once (runtime/parfor.py) only if no iteration sees
what another one does. The frontend builds the loop like `for`: the outer variables the body assigns are carried
values. This pass accepts a carried value only as a *result matrix*: the body writes it through left indexing
(`daphne.insert`) at the rows (or columns) the loop variable selects, the same position in every write of one
iteration, and does nothing else with it but ask its shape. Everything else the body computes is local to its
iteration. Concretely, per carried value (named after its DaphneDSL variable, attribute `variables`):

- its versions are the body argument, the results of inserts into a version, and the results of `if`s and
  nested `for`s (not `while`, not a nested `parfor`) that carry a version in every branch and iteration;
- every insert into a version indexes one dimension by an injective function of the loop variable (`i`, `i + c`,
  `c - i`, `i * c` with c a non-zero constant or the loop's step, a negative position wrapped as DaphneDSL does)
  and the other one by anything; all inserts of one result use the same dimension and the same position;
- a version is used by nothing but those inserts, `nrow`/`ncol`, no-op casts and the yields that carry it.

Two other things would make a parallel run differ from the `for` loop: effects on the world (`print`, `write`,
`stop`, saving a Python API result) inside the body or a function it calls; they are errors too. Each violation
is a located compile error naming the variable or the builtin.

What the pass marks: the inserts into result versions get `daphne.in_place` (the host code writes them into the
parfor's private buffer instead of copying the matrix per write), and the loop gets `daphne.parfor_writes`, one
`R[i, _]`/`R[_, i]` per result, what `--explain` shows of the analysis.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func, scf
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr, UnitAttr
from xdsl.ir import BlockArgument, Operation, OpResult, SSAValue
from xdsl.passes import ModulePass

from daphnec.compiler.ir_walk import walk
from daphnec.compiler.selection.core import is_noop_cast
from daphnec.dialects.attr_names import IN_PLACE_ATTR, PARFOR_WRITES_ATTR
from daphnec.dialects.calls import callees, reachable_functions
from daphnec.dialects.errors import CompileError
from daphnec.dialects.locations import loc_of
from daphnec.dialects.ops import (
    CastOp,
    CondOp,
    EwAddOp,
    EwLtOp,
    EwMulOp,
    EwSubOp,
    ForRangeOp,
    InsertOp,
    NumColsOp,
    NumRowsOp,
    StopOp,
    constant_value,
)
from daphnec.dialects.ops_daphnelib import SaveDaphneLibResultOp
from daphnec.dialects.ops_io import PrintOp, WriteOp
from daphnec.dialects.ops_parfor import ParForOp
from daphnec.dialects.types import is_matrix

EFFECTS: dict[type[Operation], str] = {
    PrintOp: "print",
    WriteOp: "write",
    StopOp: "stop",
    SaveDaphneLibResultOp: "saveDaphneLibResult",
}
"""Ops whose effect is seen outside the program's values, by their builtin's name: in a parfor body they would
happen in no fixed order."""

DIMENSIONS = ("rows", "columns")


def _owner(v: SSAValue) -> Operation | None:
    if isinstance(v, OpResult):
        return v.op
    assert isinstance(v, BlockArgument)
    return v.block.parent_op()


class _Loop:
    """One parfor under analysis: what is inside it and how positions depend on its loop variable."""

    def __init__(self, loop: ParForOp):
        self.loop = loop
        self.k = loop.body.block.args[0]
        self.names: dict[SSAValue, str] = {}

    def inside(self, v: SSAValue) -> bool:
        op = _owner(v)
        return op is not None and self.loop.is_ancestor(op)

    def invariant(self, v: SSAValue) -> str | None:
        """A name for a value that is the same in every iteration (defined before the loop, or a constant)."""
        c = constant_value(v)
        if c is not None:
            return repr(c)
        if self.inside(v):
            return None
        return self.names.setdefault(v, f"%{len(self.names)}")

    def _nonzero(self, v: SSAValue) -> bool:
        """A multiplier that keeps positions apart: a non-zero constant or the loop's own step (never zero)."""
        c = constant_value(v)
        if c is not None:
            return isinstance(c, (int, float)) and c != 0
        return isinstance(v, OpResult) and isinstance(v.op, ForRangeOp) and v.index == 1

    def position(self, v: SSAValue) -> str | None:
        """A canonical text for `v` if it is an injective function of the loop variable, else None."""
        if v is self.k:
            return "i"
        op = v.owner
        if not isinstance(op, Operation) or not self.loop.is_ancestor(op):
            return None
        if isinstance(op, CastOp) and not is_matrix(op.arg.type):
            return self.position(op.arg)
        if isinstance(op, (EwAddOp, EwSubOp, EwMulOp)):
            a, b = op.operands
            pa, pb = self.position(a), self.position(b)
            ia, ib = self.invariant(a), self.invariant(b)
            sym = "+" if isinstance(op, EwAddOp) else "-" if isinstance(op, EwSubOp) else "*"
            if isinstance(op, EwMulOp):
                if pa is not None and self._nonzero(b):
                    return f"({pa}*{ib or '%step'})"
                if pb is not None and self._nonzero(a):
                    return f"({pb}*{ia or '%step'})"
                return None
            if pa is not None and ib is not None:
                return f"({pa}{sym}{ib})"
            if pb is not None and ia is not None:
                return f"({ia}{sym}{pb})" if sym == "-" else f"({pb}+{ia})"
            return None
        if isinstance(op, CondOp):  # DaphneDSL's wrap of a negative position: p < 0 ? p + n : p
            p, wrapped, test = op.else_val, op.then_val.owner, op.cond.owner
            if (
                isinstance(wrapped, EwAddOp)
                and wrapped.operands[0] is p
                and isinstance(test, EwLtOp)
                and test.operands[0] is p
                and self.invariant(wrapped.operands[1]) is not None
            ):
                inner = self.position(p)
                return None if inner is None else f"wrap({inner})"
        return None

    def single(self, lo: SSAValue, hi: SSAValue) -> str | None:
        """The loop position of the range [lo, hi) if it is exactly one position (hi = lo + 1)."""
        p = self.position(lo)
        if p is None:
            return None
        op = hi.owner
        if isinstance(op, EwAddOp) and op.operands[0] is lo and constant_value(op.operands[1]) == 1:
            return p
        return p if self.position(hi) == f"({p}+1)" else None


@dataclass
class _Result:
    name: str
    dimension: str | None = None
    position: str | None = None
    first_write: InsertOp | None = None


def check_parfor(loop: ParForOp, functions: dict[str, func.FuncOp]) -> None:
    """Raise a located CompileError if the iterations may interfere; mark in-place inserts and the loop."""
    info = _Loop(loop)
    _check_effects(loop, functions)
    block = loop.body.block
    y = block.last_op
    assert isinstance(y, scf.YieldOp)
    writes: list[str] = []
    inserts: list[InsertOp] = []
    for j, (arg, name) in enumerate(zip(block.args[1:], loop.variable_names)):
        result = _Result(name)
        reads: list[CompileError] = []
        versions = _versions(info, loop, j, arg, result, inserts, reads)
        yielded = y.arguments[j]
        structural = [e for e in reads if getattr(e, "structural", False)]
        if structural:  # the result flows into a nested parfor or a while: say so, not that it is reassigned
            raise structural[0]
        if yielded not in versions or not is_matrix(arg.type):
            at = _owner(yielded)
            raise CompileError(
                f"parfor iterations are not independent: '{name}' is defined before the loop and assigned in its "
                f"body; a parfor body may assign only its own variables and slices {name}[i, ...] of result "
                "matrices indexed by the loop variable",
                loc_of(at if at is not None and loop.is_ancestor(at) and at is not loop else loop),
            )
        if reads:
            raise reads[0]
        if result.dimension is None:
            writes.append(f"{name}: unchanged")
        else:
            writes.append(f"{name}[{result.position}, _]" if result.dimension == "rows" else
                          f"{name}[_, {result.position}]")  # fmt: skip
    for ins in inserts:
        ins.attributes[IN_PLACE_ATTR] = UnitAttr()
    loop.attributes[PARFOR_WRITES_ATTR] = ArrayAttr([StringAttr(w) for w in writes])


def _versions(info: _Loop, loop: ParForOp, j: int, arg: SSAValue, result: _Result, inserts: list[InsertOp],
              reads: list[CompileError]) -> set[SSAValue]:  # fmt: skip
    """Every SSA value holding result j inside the body; a use the parallel run would break goes to `reads` (a
    write at positions that may collide, or a whole new value flowing in, raises at once)."""
    name = result.name
    versions: set[SSAValue] = {arg}
    work = [arg]
    merged: list[tuple[Operation, int]] = []  # if/for results that hold a version: check every incoming value
    while work:
        v = work.pop()
        for use in list(v.uses):
            user = use.operation
            new: list[SSAValue] = []
            if isinstance(user, InsertOp) and use.index == 0:
                _check_write(info, user, result)
                inserts.append(user)
                new.append(user.res)
            elif isinstance(user, (NumRowsOp, NumColsOp)):
                continue
            elif isinstance(user, CastOp) and is_noop_cast(user):
                new.append(user.res)
            elif isinstance(user, scf.YieldOp):
                parent = user.parent_op()
                if parent is loop:
                    if use.index != j:
                        reads.append(_read_error(name, user))
                    continue
                if isinstance(parent, scf.IfOp) or (isinstance(parent, scf.ForOp) and not isinstance(parent, ParForOp)):
                    new.append(parent.results[use.index])
                    merged.append((parent, use.index))
                else:
                    reads.append(_read_error(name, user, parent))
            elif isinstance(user, scf.ForOp) and not isinstance(user, ParForOp) and use.index >= 3:
                k = use.index - 3
                new += [user.body.block.args[1 + k], user.results[k]]
                merged.append((user, k))
            else:
                reads.append(_read_error(name, user))
            for r in new:
                if r not in versions:
                    versions.add(r)
                    work.append(r)
    for op, k in merged:
        incoming = _incoming(op, k)
        for v in incoming:
            if v not in versions:
                at = _owner(v)
                raise CompileError(
                    f"parfor iterations are not independent: '{name}' is assigned a whole new value in the body; "
                    f"a parfor body may only write slices {name}[i, ...] of a result matrix",
                    loc_of(at if at is not None and loop.is_ancestor(at) else op),
                )
    return versions


def _incoming(op: Operation, k: int) -> list[SSAValue]:
    """The values that flow into result k of an `if` (both branches) or a `for` (initial value and yield)."""
    if isinstance(op, scf.IfOp):
        out = []
        for region in op.regions:
            if region.blocks and isinstance(y := region.block.last_op, scf.YieldOp):
                out.append(y.arguments[k])
        return out
    assert isinstance(op, scf.ForOp)
    y = op.body.block.last_op
    assert isinstance(y, scf.YieldOp)
    return [op.iter_args[k], y.arguments[k]]


def _check_write(info: _Loop, ins: InsertOp, result: _Result) -> None:
    name = result.name
    rows = info.single(ins.row_lower, ins.row_upper)
    cols = info.single(ins.col_lower, ins.col_upper)
    if rows is not None and (result.dimension in (None, "rows")):
        dimension, position = "rows", rows
    elif cols is not None and (result.dimension in (None, "columns")):
        dimension, position = "columns", cols
    elif rows is None and cols is None:
        raise CompileError(
            f"parfor iterations may write the same cells of '{name}': each write must select one row or one "
            f"column by the loop variable ({name}[i, ...] = ... or {name}[..., i] = ...)",
            loc_of(ins),
        )
    else:
        dimension, position = ("rows", rows) if rows is not None else ("columns", cols)
    if result.dimension is not None and (dimension, position) != (result.dimension, result.position):
        raise CompileError(
            f"parfor iterations may write the same cells of '{name}': every write of one iteration must select the "
            f"same {result.dimension[:-1]} by the loop variable as the first one (line "
            f"{_line(result.first_write)})",
            loc_of(ins),
        )
    if result.dimension is None:
        result.dimension, result.position, result.first_write = dimension, position, ins


def _line(op: Operation | None) -> str:
    loc = loc_of(op)
    return str(loc.line) if loc is not None else "?"


def _read_error(name: str, user: Operation, parent: Operation | None = None) -> CompileError:
    if isinstance(parent, scf.WhileOp):
        why = f"a parfor body may write '{name}' inside `if` and `for`, not inside `while`"
    elif isinstance(parent, ParForOp) or isinstance(user, ParForOp):
        why = f"only the outermost parfor may write '{name}'; make the inner loop a `for`"
    else:
        why = (f"'{name}' is read in the body, while other iterations write it at the same time; a parfor body may "
               f"only write a result matrix ({name}[i, ...] = ...)")  # fmt: skip
    error = CompileError(f"parfor iterations are not independent: {why}", loc_of(user))
    error.structural = parent is not None or isinstance(user, ParForOp)  # type: ignore[attr-defined]
    return error


def _check_effects(loop: ParForOp, functions: dict[str, func.FuncOp]) -> None:
    """No op with an effect on the world inside the body or a function it calls."""
    called: list[str] = []
    for op in walk(loop):
        _no_effect(op)
        called += callees(op)
    for f in reachable_functions(functions, called):
        for op in walk(f):
            _no_effect(op, loop)


def _no_effect(op: Operation, via: ParForOp | None = None) -> None:
    name = EFFECTS.get(type(op))
    if name is None:
        return
    where = f"a function called in the parfor body of line {_line(via)}" if via is not None else "a parfor body"
    raise CompileError(
        f"'{name}' in {where}: the iterations run in no fixed order, so its effect would not be that of the for "
        "loop; move it after the loop",
        loc_of(op),
    )


def parfor_loops(root: Operation) -> Iterable[ParForOp]:
    return [op for op in walk(root) if isinstance(op, ParForOp)]


@dataclass(frozen=True)
class ParForPass(ModulePass):
    name = "parfor"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        loops = parfor_loops(op)
        if not loops:
            return
        functions = {f.sym_name.data: f for f in op.ops if isinstance(f, func.FuncOp)}
        for loop in loops:
            check_parfor(loop, functions)
