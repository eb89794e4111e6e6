"""IR verification after every pass: xDSL's `Operation.verify`, with its two super-linear checks answered from
indexes of the module.

Why: the pass manager verifies the whole module after each of its ~10 passes, and two of xDSL's checks cost more
than the op they check. `func.call` finds its callee with `SymbolTable.lookup_symbol`, which scans the ops of the
symbol table (O(functions) per call: 1,000 chained calls spent 20 of their 27 s verifying), and
`IsolatedFromAbove` (`func.func`, `builtin.module`) walks from the owner of every operand up to the isolated op
(O(depth) per operand: quadratic on deep nesting). While `verify_module` runs, on its thread only, both are
answered from indexes built once for that verification: the symbols of each symbol table (first definition of a
name wins, as in the scan) and the set of IR nodes under each isolated op. Verification changes nothing, so the
indexes stay exact and the verdicts and messages are xDSL's.

Most ops are the same from one pass to the next, so a pass manager also hands `verify_module` a memo of the
`daphne` ops that verified: op -> its signature (operands, their types, result types, attributes, properties,
parent block and whether it ends that block). An op whose signature is unchanged is not verified again. Only ops
whose verdict is a function of that signature are memoized: `daphne` ops without regions or successors whose
traits add no verification of their own (none of `HasParent`, `IsTerminator`, ...); their custom verifiers read
their operands' types and at most their operands' defining constants, which a pass never changes in place. This
cut verification from ~30 % of a compile to a few percent (issue 23 part 5: the twelve verifications of a
140-op library script took 68 ms of CPU out of 250 ms; now 20 ms).

The region terminators `scf.yield`, `scf.condition` and `func.return` (a third of the verifications left in a
library script with loops and branches) are memoized too, with their context in the signature: their verdict
reads, besides their own signature, their parent op (`HasParent`), whether they end their block (`IsTerminator`)
and, for `func.return`, the function type of the enclosing function, a property. So the signature adds the parent
region, the parent op and its properties and attributes; a function whose type changed re-verifies its returns.
A `func.call`'s verdict reads the function its callee names and that function's type, which its signature adds
(looked up in the index).

The region ops `scf.for`, `scf.if`, `scf.while` and `func.func` and the module skip their own checks (xDSL's
`verify_`: their operand, result, region and trait constraints, the isolation walk included) when nothing in them
changed: their signature, their blocks (each block, its argument types and its op sequence) and, below, every
nested op verified from the memo. The last is counted while the verification walks: each op a block visits counts
as seen, each op answered from the memo as a hit; a region op whose subtree had as many hits as ops seen is
unchanged, and counts as a hit itself. An op verified anew (a miss, or an op never memoized such as a `daphne` op
with regions) makes every enclosing region op verify again. Their checks read nothing else: the ops inside
(through those signatures and sequences), their own signature (operands, types, attributes, properties, parent
block and position) and their blocks. An unchanged module's verification took 0.34 ms instead of 0.63 ms (lmDS's
167 ops; the isolation walk of each function was most of it).

The isolation index of an isolated op holds the nodes under it down to (and including) nested isolated ops, not
inside them: the check only reads operands of ops outside nested isolated ops, whose definitions a valid IR has
there too (the module's index is then its top-level ops, not the whole program). It is built in the same walk
that checks the operands (a definition precedes its uses in a valid IR's walk); an operand defined elsewhere (or
later in the walk) falls back to xDSL's ancestor walk, so the verdict stays exactly xDSL's.

The entry points are wrapped once, when this module is imported; a wrapper with no index active on the
calling thread runs xDSL's own code, so other threads (another compilation, daphne-opt, xDSL's passes) are
unaffected: there is no shared mutable state to race on.
"""

from __future__ import annotations

import dis
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from xdsl.dialects import func, scf
from xdsl.dialects.builtin import ModuleOp, StringAttr, SymbolRefAttr
from xdsl.ir import Block, Operation
from xdsl.traits import IsolatedFromAbove, OpTrait, SymbolOpInterface, SymbolTable
from xdsl.utils.exceptions import VerifyException

from daphnec.dialects.ops import DaphneOp

_local = threading.local()


class _Indexes:
    """The indexes of one verification, built on first use."""

    def __init__(self, memo: dict[Operation, tuple] | None = None) -> None:
        self.memo = memo
        self.symbols: dict[Operation, dict[StringAttr, Operation]] = {}
        self.built = 0
        """How many ops were indexed (tests check it grows linearly with the program)."""
        self.seen = 0
        """Ops visited by a block of this verification (`_block_verify`)."""
        self.hits = 0
        """Ops answered from the memo (their own checks skipped)."""
        self.starts: list[tuple[int, int, Operation]] = []
        """(seen, hits) when each region op being verified started: its subtree is unchanged if both grew alike."""

    def symbols_of(self, table_op: Operation) -> dict[StringAttr, Operation]:
        """name -> the first op of `table_op`'s block defining it (what `lookup_symbol`'s scan returns)."""
        table = self.symbols.get(table_op)
        if table is None:
            table = {}
            for o in table_op.regions[0].block.ops:
                iface = o.get_trait(SymbolOpInterface)
                if iface is not None:
                    table.setdefault(iface.get_sym_attr_name(o), o)  # type: ignore[arg-type]
                self.built += 1
            self.symbols[table_op] = table
        return table


def _active() -> _Indexes | None:
    return getattr(_local, "indexes", None)


@contextmanager
def indexed_verification(memo: dict[Operation, tuple] | None = None) -> Iterator[_Indexes]:
    """Symbol lookups and isolation checks on this thread use indexes while the block runs (the IR must not
    change meanwhile); with `memo`, ops verified before with the same signature are not verified again."""
    outer = _active()
    _local.indexes = indexes = _Indexes(memo)
    try:
        yield indexes
    finally:
        _local.indexes = outer


def verify_module(op: Operation, memo: dict[Operation, tuple] | None = None) -> None:
    """`op.verify()`, in time linear in the IR (see the module docstring). `memo` (kept by the caller from one
    verification of the same module to the next) skips the ops that verified before with the same signature."""
    with indexed_verification(memo):
        op.verify()


def _signature(op: Operation) -> tuple:
    """What a memoizable op's verdict depends on. Compared with `==`, which for tuples tests identity first: the
    same attribute objects compare in a pointer test. Reads xDSL's fields (`_operands`, `_next_op`) rather than
    the properties that wrap them: this runs for every op after every pass."""
    operands = op._operands  # noqa: SLF001 - an immutable tuple, replaced (not mutated) when operands change
    return (
        operands,
        tuple([o.type for o in operands]),
        tuple([r.type for r in op.results]),
        tuple(op.attributes.items()),
        tuple(op.properties.items()),
        op.parent,
        op._next_op is None,  # noqa: SLF001
    )


def _verifies_nothing(trait: object) -> bool:
    """Whether the trait's `verify` is an empty body (`pass` or a bare `return`, with or without a docstring)."""
    code = getattr(type(trait).verify, "__code__", None)
    if code is None:
        return False
    steps = [(i.opname, i.argval) for i in dis.get_instructions(code) if i.opname not in ("RESUME", "NOP")]
    return steps in ([("LOAD_CONST", None), ("RETURN_VALUE", None)], [("RETURN_CONST", None)])


def _context_free(cls: type) -> bool:
    """Whether `cls`'s verdict depends on its signature alone: no trait of it verifies anything (`Pure`,
    `ConstantLike`, the folder interface; a trait that does, like `HasParent` or `IsTerminator`, looks at the op's
    surroundings)."""
    verdict = _CONTEXT_FREE.get(cls)
    if verdict is None:
        verdict = _CONTEXT_FREE[cls] = all(_verifies_nothing(t) for t in cls.traits)
    return verdict


_CONTEXT_FREE: dict[type, bool] = {}


def _memoized(
    original: Callable[..., None], signature: Callable[[Operation], tuple], always: Callable[[Operation], bool]
) -> Callable[..., None]:
    """`original` (an op class's `verify`), skipped for an op the active memo holds with the same `signature`;
    ops for which `always` holds are verified every time."""

    def verify(self: Operation, verify_nested_ops: bool = True) -> None:
        indexes = _active()
        memo = indexes.memo if indexes is not None else None
        if memo is None or always(self):
            return original(self, verify_nested_ops)
        sig = signature(self)
        if memo.get(self) == sig:
            indexes.hits += 1  # type: ignore[union-attr]
            return None
        original(self, verify_nested_ops)
        memo[self] = sig
        return None

    verify._daphnec_memo = True  # type: ignore[attr-defined]
    return verify


def _memo_verify(original: Callable[..., None]) -> Callable[..., None]:
    """`DaphneOp.verify`, skipped for an op the active memo holds with the same signature (ops with regions or
    successors, and op classes whose verdict reads their surroundings, always verify)."""
    # `_successors`: the tuple itself (the `successors` property builds a wrapper object per call)
    return _memoized(
        original,
        _signature,
        lambda op: bool(op.regions or op._successors or not _context_free(type(op))),  # noqa: SLF001
    )


_TERMINATORS = (scf.YieldOp, scf.ConditionOp, func.ReturnOp)
"""The memoized region terminators, whose verdict reads their parent op (see the docstring)."""


def _context_signature(op: Operation) -> tuple:
    """A terminator's signature: its own plus what its traits and verifier read of the enclosing op."""
    block = op.parent
    region = block.parent if block is not None else None
    parent = region.parent if region is not None else None
    if parent is None:
        return (_signature(op), region)
    return (_signature(op), region, parent, tuple(parent.properties.items()), tuple(parent.attributes.items()))


def _memo_verify_terminator(original: Callable[..., None]) -> Callable[..., None]:
    """`Operation.verify` of `_TERMINATORS`, skipped for an op the active memo holds with the same signature."""
    return _memoized(original, _context_signature, lambda op: False)


_REGION_OPS = (scf.ForOp, scf.IfOp, scf.WhileOp, func.FuncOp, ModuleOp)
"""The memoized region ops (see the docstring); `daphne` ops with regions always verify."""


def _region_signature(op: Operation) -> tuple:
    """A region op's signature: its own and its blocks' (each block, its argument types, its op sequence)."""
    return (
        _signature(op),
        tuple(
            (region, tuple((b, tuple([a.type for a in b.args]), tuple(b.ops)) for b in region.blocks))
            for region in op.regions
        ),
    )


def _region_verify(original: Callable[..., None]) -> Callable[..., None]:
    """`Operation.verify` of `_REGION_OPS`: notes where the counts stood when the op started (its own checks run
    last, in `verify_`, after its regions: `_region_verify_`)."""

    def verify(self: Operation, verify_nested_ops: bool = True) -> None:
        indexes = _active()
        if indexes is None or indexes.memo is None or not verify_nested_ops or type(self) not in _REGION_OPS:
            return original(self, verify_nested_ops)  # a subclass (`daphne.parfor`) has its own `verify_`
        indexes.starts.append((indexes.seen, indexes.hits, self))
        return original(self, verify_nested_ops)

    verify._daphnec_memo = True  # type: ignore[attr-defined]
    return verify


def _region_verify_(original: Callable[[Operation], None]) -> Callable[[Operation], None]:
    """The region op's own checks, skipped when its subtree and signature are unchanged (see the docstring)."""

    def verify_(self: Operation) -> None:
        indexes = _active()
        memo = indexes.memo if indexes is not None else None
        if memo is None or not indexes.starts or indexes.starts[-1][2] is not self:  # type: ignore[union-attr]
            return original(self)
        seen, hits, _ = indexes.starts.pop()  # type: ignore[union-attr]
        sig = _region_signature(self)
        if indexes.seen - seen == indexes.hits - hits and memo.get(self) == sig:  # type: ignore[union-attr]
            indexes.hits += 1  # type: ignore[union-attr]
            return None
        original(self)
        memo[self] = sig
        return None

    verify_._daphnec_memo = True  # type: ignore[attr-defined]
    return verify_


def _call_signature(op: Operation) -> object:
    """A `func.call`'s signature: its own, the function its callee names (the first of that name, as xDSL's lookup)
    and that function's type, all its verdict reads. A call whose lookup fails is always verified (xDSL reports
    why)."""
    try:
        callee = SymbolTable.lookup_symbol(op, op.callee)  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - no symbol table above it: verified, with xDSL's message
        return object()
    return (_signature(op), callee, callee.function_type if isinstance(callee, func.FuncOp) else None)


def _lookup_symbol(
    original: Callable[[Operation, str | StringAttr | SymbolRefAttr], Operation | None],
) -> Callable[[Operation, str | StringAttr | SymbolRefAttr], Operation | None]:
    """`SymbolTable.lookup_symbol`, answered from the active index for a plain name."""

    def lookup_symbol(op: Operation, name: str | StringAttr | SymbolRefAttr) -> Operation | None:
        indexes = _active()
        if indexes is None:
            return original(op, name)
        ref = SymbolRefAttr(name) if isinstance(name, str | StringAttr) else name
        if ref.nested_references.data:
            return original(op, name)
        anchor: Operation | None = op
        while anchor is not None and not _class_has(type(anchor), SymbolTable):
            anchor = anchor.parent_op()
        if anchor is None:
            return original(op, name)  # xDSL's error
        return indexes.symbols_of(anchor).get(ref.root_reference)

    return lookup_symbol


def _class_has(cls: type[Operation], trait: type[OpTrait]) -> bool:
    """`cls.has_trait(trait)`, once per op class and trait: traits are class-level (`Operation.traits` is a
    ClassVar), and xDSL's `get_trait` is a linear scan of `isinstance` checks, run here for every op after every
    pass (a fifth of the isolation check's time)."""
    verdict = _HAS_TRAIT.get((cls, trait))
    if verdict is None:
        verdict = _HAS_TRAIT[(cls, trait)] = cls.has_trait(trait)
    return verdict


_HAS_TRAIT: dict[tuple[type[Operation], type[OpTrait]], bool] = {}


def _isolated_verify(original: Callable[[IsolatedFromAbove, Operation], None]) -> Callable[..., None]:
    """`IsolatedFromAbove.verify` (the same traversal and message) in one walk: the nodes under the isolated op
    (down to and including nested isolated ops, not inside them) are collected while its operands are checked,
    and an operand whose owner is among the nodes seen so far is inside. Definitions precede their uses in a
    valid IR's walk, so the set answers nearly every operand; any other owner falls back to xDSL's ancestor walk,
    so the verdict stays exactly xDSL's (a separate walk to build the set first cost as much as the check)."""

    def verify(self: IsolatedFromAbove, op: Operation) -> None:
        indexes = _active()
        if indexes is None:
            return original(self, op)
        inside: set[object] = set()
        regions = list(op.regions)
        while regions:
            region = regions.pop()
            for block in region.blocks:
                inside.add(block)
                for child_op in block.ops:
                    for operand in child_op._operands:  # noqa: SLF001 - the tuple, not a wrapper per op
                        owner = operand.owner
                        if owner is op or (owner not in inside and not op.is_ancestor(owner)):
                            raise VerifyException(
                                f"Operation using value defined out of its IsolatedFromAbove parent: {child_op}"
                            )
                    inside.add(child_op)
                    if child_op.regions and not _class_has(type(child_op), IsolatedFromAbove):
                        regions += child_op.regions
        indexes.built += len(inside)
        return None

    return verify


def _block_verify(original: Callable[[Block], None]) -> Callable[[Block], None]:
    """`Block.verify` without its `len(self.ops) == 0`, which counts a non-empty block's ops by walking them (a
    second walk of every block after every pass): a block with ops runs xDSL's loop (same checks, same message),
    an empty one xDSL's own code."""

    def verify(self: Block) -> None:
        indexes = _active()
        if indexes is None or self.is_empty:
            return original(self)
        for operation in self.ops:
            if operation.parent != self:
                raise ValueError("Parent pointer of operation does not refer to containing region")
            indexes.seen += 1
            operation.verify()
        return None

    return verify


def _install() -> None:
    """Wrap the two entry points once per process (idempotent; the wrappers hold no state of their own)."""
    if getattr(SymbolTable.lookup_symbol, "_daphnec_indexed", False):
        return
    lookup = _lookup_symbol(SymbolTable.lookup_symbol)
    lookup._daphnec_indexed = True  # type: ignore[attr-defined]
    SymbolTable.lookup_symbol = staticmethod(lookup)  # type: ignore[method-assign,assignment]
    IsolatedFromAbove.verify = _isolated_verify(IsolatedFromAbove.verify)  # type: ignore[method-assign]
    Block.verify = _block_verify(Block.verify)  # type: ignore[method-assign]
    DaphneOp.verify = _memo_verify(DaphneOp.verify)  # type: ignore[method-assign]
    for cls in _TERMINATORS:
        assert "verify" not in cls.__dict__, cls  # xDSL's Operation.verify, wrapped once
        cls.verify = _memo_verify_terminator(cls.verify)  # type: ignore[method-assign]
    assert "verify" not in func.CallOp.__dict__
    func.CallOp.verify = _memoized(func.CallOp.verify, _call_signature, lambda op: False)  # type: ignore[method-assign]
    for cls in _REGION_OPS:
        assert "verify" not in cls.__dict__, cls  # xDSL's Operation.verify and the op's own verify_, wrapped once
        cls.verify = _region_verify(cls.verify)  # type: ignore[method-assign]
        cls.verify_ = _region_verify_(cls.verify_)  # type: ignore[method-assign]


_install()
