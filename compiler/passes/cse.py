"""`cse`: common-subexpression elimination of pure ops, as DAPHNE runs after parsing.

xDSL's CSE driver (scopes, structural op keys, deferred erasure), with one change: every question about memory
effects goes to an `EffectsCache` made for this run of the pass (`compiler/analysis/effects.py`) instead of xDSL's
`get_effects`, which re-walks the whole subtree of each region op for each enclosing op (O(n^2) ops visited on n
nested `if`s). The answers, and so the rewritten IR, are the same. The driver decides and replaces uses as it goes
but erases only at the end, so the cached effects stay valid for the whole run.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.traits import IsTerminator, MemoryEffectKind
from xdsl.transforms.common_subexpression_elimination import CSEDriver

from daphnec.compiler.analysis.effects import EffectsCache


@dataclass
class CachedEffectsCSEDriver(CSEDriver):
    """xDSL's `CSEDriver` whose per-op step (`_simplify_operation`, the same decisions in the same order) reads
    effects from `effects`."""

    effects: EffectsCache = field(default_factory=EffectsCache)

    def _simplify_operation(self, op: Operation) -> None:
        if op.has_trait(IsTerminator):
            return
        if self.effects.is_trivially_dead(op):
            self._mark_erasure(op)
            return
        if any(len(region.blocks) > 1 for region in op.regions):
            return  # as MLIR: ops with multi-block regions are left alone
        if not self.effects.is_side_effect_free(op):
            if self.effects.only_has_effect(op, MemoryEffectKind.READ):
                self._simplify_reader(op)
            return
        if existing := self._known_ops.get(op):
            self._replace_and_delete(op, existing)
            return
        self._known_ops[op] = op

    def _simplify_reader(self, op: Operation) -> None:
        """An op that only reads: replaced by an equal op earlier in its block when no op between them may
        write."""
        if existing := self._known_ops.get(op):
            if op.parent_block() is existing.parent_block() and not self._write_between(existing, op):
                self._replace_and_delete(op, existing)
                return
        self._known_ops[op] = op

    def _write_between(self, from_op: Operation, to_op: Operation) -> bool:
        """xDSL's `has_other_side_effecting_op_in_between`: whether an op from `from_op` up to (not including)
        `to_op` may write."""
        op: Operation | None = from_op
        while op is not to_op:
            assert op is not None, "Incorrect order of ops in side-effect search"
            effects = self.effects.effects(op)
            if effects is None or any(e.kind is MemoryEffectKind.WRITE for e in effects):
                return True
            op = op.next_op
        return False


@dataclass(frozen=True)
class CsePass(ModulePass):
    name = "cse"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        CachedEffectsCSEDriver().simplify(op)
