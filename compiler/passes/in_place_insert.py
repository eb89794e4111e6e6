"""`in-place-insert`: left indexing `X[i, j] = v` writes into X's buffer when nothing can read the old value again.

DaphneDSL values are immutable, so `daphne.insert` returns a new matrix: a copy of X with the region replaced. A
loop that updates one cell of an n-row matrix per iteration (a mask of kept points, a stack of segments, the
neighbour lists of a polyline) then costs O(n) per iteration, where numpy costs O(1). When the old value of X is
dead after the insert, no program can tell a copy from a write into X's buffer; this pass proves that and marks the
insert `daphne.in_place` (the attribute the `parfor` pass puts on writes into a parfor's result buffer), which
selects the kernel that writes in place (`runtime/kernels/indexing.py: insert_range_in_place`).

What "dead" means, over the buffer rather than the SSA value. Several SSA values may hold X's buffer at run time: a
no-op cast shares its operand's name, a slice may be a view, a kernel may return its operand unchanged (`abs` of an
unsigned matrix), a function may return its argument, `scf.for`/`scf.while`/`scf.if` pass values through their
block arguments and results. The pass groups the values that may share a buffer into classes (union-find over the
function, flow-insensitive and conservative: every op's data results join all its data operands; a structured
op's results, block arguments, initial values and yielded values join per position). An insert's result starts a
class of its own: a copying insert makes a new buffer, and an in-place one takes over a buffer whose other holders
are never read again (what the pass proves), so from then on the holders that matter are the ones made from the
result. An insert I of X is in place when
- X is a dense matrix and I sits in a function body or in `scf.if`/`scf.for`/`scf.while`/`parfor` bodies only;
- no value of X's class is a function parameter (the caller still holds it) or a parfor's result buffer (other
  iterations write it at the same time: the `parfor` pass owns those writes);
- no value of X's class that exists when I runs is read afterwards: no use after I in I's block or in a block
  enclosing it (after the op that holds I), and no use at all inside a loop enclosing I when the value is defined
  outside that loop (the next iteration reads it again; I's own read of X counts here). A use in the other branch
  of an enclosing `if` never runs after I. A value defined after I, or in a region that does not enclose I, does
  not exist yet when I runs (a loop's next iteration sees it through a block argument, which the class holds).

The analysis never needs to be clever for the result to be right: the kernel still copies on the first write to a
buffer the program does not own (a view, a read-only input of the Python API, data read from a file that another
object keeps: `X.base` is set, or the array is not writeable), so after one copy the loop writes in place. CSR
matrices are not updated in place (a CSR insert may change the non-zero structure: it densifies and copies), and a
frame has no left indexing. The pass runs after every pass that moves or fuses ops (`vectorize`, `codegen`), at
`--explain=obj_ref_mgnt` (after `codegen` with `--codegen`), where DAPHNE manages its data objects' references.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func, scf
from xdsl.dialects.builtin import IndexType, IntegerType, ModuleOp, UnitAttr
from xdsl.ir import Attribute, Block, BlockArgument, Operation, OpResult, SSAValue
from xdsl.passes import ModulePass

from daphnec.compiler.ir_walk import walk
from daphnec.dialects.attr_names import IN_PLACE_ATTR
from daphnec.dialects.ops import InsertOp
from daphnec.dialects.ops_parfor import ParForOp
from daphnec.dialects.types import is_matrix, is_scalar

_STRUCTURED = (scf.IfOp, scf.ForOp, scf.WhileOp)
"""The ops whose regions the analysis follows (`parfor` is an `scf.for`); an insert in any other region (a
vectorized pipeline's body) keeps copying."""
_LOOPS = (scf.ForOp, scf.WhileOp)


def _holds_data(t: Attribute) -> bool:
    """A value that may hold a buffer (a matrix, frame, list or a type not known yet), not a scalar."""
    return not (is_scalar(t) or isinstance(t, (IndexType, IntegerType)))


class _Classes:
    """Union-find over SSA values: the values that may hold the same buffer at run time."""

    def __init__(self) -> None:
        self.parent: dict[SSAValue, SSAValue] = {}

    def find(self, v: SSAValue) -> SSAValue:
        root = v
        while (up := self.parent.get(root, root)) is not root:
            root = up
        while (up := self.parent.get(v, v)) is not root:  # path compression
            self.parent[v] = root
            v = up
        return root

    def join(self, *values: SSAValue) -> None:
        data = [v for v in values if _holds_data(v.type)]
        if not data:
            return
        root = self.find(data[0])
        for v in data[1:]:
            other = self.find(v)
            if other is not root:
                self.parent[other] = root

    def members(self) -> dict[SSAValue, list[SSAValue]]:
        """Every value the union-find saw, by the root of its class."""
        out: dict[SSAValue, list[SSAValue]] = {}
        for v in list(self.parent):
            out.setdefault(self.find(v), []).append(v)
        for root in list(out):
            if root not in out[root]:
                out[root].append(root)
        return out


def _terminator_args(block: Block) -> tuple[SSAValue, ...]:
    last = block.last_op
    if isinstance(last, scf.YieldOp):
        return tuple(last.arguments)
    if isinstance(last, scf.ConditionOp):
        return tuple(last.args)  # the values passed on, not the condition
    return ()


def _join_positions(classes: _Classes, *groups: tuple[SSAValue, ...] | list[SSAValue]) -> None:
    for values in zip(*groups, strict=False):
        classes.join(*values)


def _alias_classes(f: func.FuncOp) -> _Classes:
    """The may-share-a-buffer classes of `f`'s values (see the module docstring)."""
    classes = _Classes()
    for op in walk(f):
        if op is f or isinstance(op, (scf.YieldOp, scf.ConditionOp, func.ReturnOp)):
            continue
        if isinstance(op, scf.IfOp):
            branches = [_terminator_args(r.block) for r in op.regions if r.blocks]
            _join_positions(classes, list(op.results), *branches)
        elif isinstance(op, scf.ForOp):
            body = op.body.block
            _join_positions(classes, list(op.iter_args), list(body.args[1:]), _terminator_args(body), list(op.results))
        elif isinstance(op, scf.WhileOp):
            before, after = op.before_region.block, op.after_region.block
            _join_positions(classes, list(op.arguments), list(before.args), _terminator_args(after))
            condition = _terminator_args(before)
            _join_positions(classes, condition, list(after.args), list(op.results))
        elif isinstance(op, InsertOp):
            pass  # a new buffer, or the old one of a matrix no one reads again (below): a class of its own
        elif op.regions:  # a region op the analysis does not follow: everything inside may flow out
            inner = [v for o in walk(op) for v in (*o.operands, *o.results)]
            classes.join(*op.results, *op.operands, *inner)
        else:
            classes.join(*op.results, *op.operands)
        for v in (*op.results, *(a for r in op.regions for b in r.blocks for a in b.args)):
            if _holds_data(v.type):
                classes.parent.setdefault(v, v)
    for a in f.body.block.args:
        if _holds_data(a.type):
            classes.parent.setdefault(a, a)
    return classes


@dataclass
class _Site:
    """Where an insert runs: `chain[0]` is the insert, `chain[k]` the structured op whose region holds
    `chain[k - 1]`, up to an op of the function's body; `blocks[k]` is the block holding `chain[k]`."""

    chain: list[Operation]
    blocks: list[Block]

    @staticmethod
    def of(op: Operation) -> _Site | None:
        chain = [op]
        while True:
            parent = chain[-1].parent_op()
            if isinstance(parent, func.FuncOp):
                break
            if not isinstance(parent, _STRUCTURED):
                return None
            chain.append(parent)
        blocks = [o.parent_block() for o in chain]
        if any(b is None for b in blocks):
            return None
        return _Site(chain, blocks)  # type: ignore[arg-type]

    def level_of(self, block: Block | None) -> int | None:
        for k, b in enumerate(self.blocks):
            if b is block:
                return k
        return None


def _ancestor_in(block: Block, op: Operation) -> Operation | None:
    """`op` or the op of `block` that holds it, if any."""
    cur: Operation | None = op
    while cur is not None and cur.parent_block() is not block:
        cur = cur.parent_op()
    return cur


class _Order:
    """Each op's position in its block, computed once per function (xDSL's `is_before_in_block` walks)."""

    def __init__(self, f: func.FuncOp) -> None:
        self.pos: dict[Operation, int] = {}
        for op in walk(f):
            for region in op.regions:
                for block in region.blocks:
                    for i, o in enumerate(block.ops):
                        self.pos[o] = i

    def before(self, a: Operation, b: Operation) -> bool:
        return self.pos[a] < self.pos[b]


def _read_after(v: SSAValue, site: _Site, order: _Order) -> bool:
    """Whether the buffer `v` holds when the insert `site.chain[0]` runs may be read after it (see the module
    docstring): False when `v` does not exist yet at that point."""
    insert = site.chain[0]
    if isinstance(v, BlockArgument):
        d = site.level_of(v.block)
        if d is None:
            return False
    else:
        assert isinstance(v, OpResult)
        d = site.level_of(v.op.parent_block())
        if d is None or v.op is site.chain[d] or not order.before(v.op, site.chain[d]):
            return False
    loops = [site.chain[j] for j in range(1, d + 1) if isinstance(site.chain[j], _LOOPS)]
    for use in v.uses:
        user = use.operation
        if any(loop is not user and loop.is_ancestor(user) for loop in loops):
            return True  # read again by the enclosing loop's next iteration
        if user is insert:
            continue
        for k in range(d + 1):
            top = _ancestor_in(site.blocks[k], user)
            if top is None:
                continue
            if top is site.chain[k]:
                if user is not top and not isinstance(top, scf.IfOp):
                    return True  # the other region of an enclosing while loop
            elif not order.before(top, site.chain[k]):
                return True
            break
    return False


def _parfor_buffer(v: SSAValue) -> bool:
    return isinstance(v, BlockArgument) and isinstance(v.block.parent_op(), ParForOp)


def _function_parameter(v: SSAValue, f: func.FuncOp) -> bool:
    return isinstance(v, BlockArgument) and v.block is f.body.block


def in_place_inserts(f: func.FuncOp) -> Iterator[InsertOp]:
    """The inserts of `f` that may write into their matrix's buffer."""
    inserts = [op for op in walk(f) if isinstance(op, InsertOp) and IN_PLACE_ATTR not in op.attributes]
    inserts = [op for op in inserts if is_matrix(op.arg.type) and is_matrix(op.res.type)]
    if not inserts:
        return
    classes = _alias_classes(f)
    members = classes.members()
    order = _Order(f)
    for ins in inserts:
        site = _Site.of(ins)
        if site is None:
            continue
        shared = members.get(classes.find(ins.arg), [ins.arg])
        if any(_function_parameter(v, f) or _parfor_buffer(v) for v in shared):
            continue
        if not any(v is not ins.res and _read_after(v, site, order) for v in shared):
            yield ins


@dataclass(frozen=True)
class InPlaceInsertPass(ModulePass):
    """Marks `daphne.insert`s whose old matrix is dead afterwards `daphne.in_place` (see the module docstring)."""

    name = "in-place-insert"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for f in op.ops:
            if isinstance(f, func.FuncOp) and f.body.blocks:
                for ins in list(in_place_inserts(f)):
                    ins.attributes[IN_PLACE_ATTR] = UnitAttr()
