"""`dce`: remove side-effect-free ops whose results are unused (xDSL's liveness-based DCE over every region).

daphne ops with effects (`print`, `stop`, `randMatrix`, `now`) carry no `Pure` trait, so they always stay.

xDSL's `region_dce` propagates liveness over the whole module until nothing changes, asking for every op in every
round whether it would be dead if unused, and each answer for a region op re-walks its whole subtree (O(n^2) on
n nested `if`s). Here the same propagation asks an `EffectsCache` (`compiler/analysis/effects.py`) made for this run:
each op's answer is computed once. Liveness only grows while it propagates and ops are erased only at the end, so the
cached answers stay valid, and the ops removed are the same.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, Region
from xdsl.passes import ModulePass
from xdsl.transforms.dead_code_elimination import LiveSet

from daphnec.compiler.analysis.effects import EffectsCache


@dataclass
class CachedLiveSet(LiveSet):
    """xDSL's `LiveSet` whose per-op liveness step reads `would_be_trivially_dead` from `effects`."""

    effects: EffectsCache = field(default_factory=EffectsCache)

    def propagate_op_liveness(self, op: Operation) -> None:
        for region in op.regions:
            self.propagate_region_liveness(region)
        if self.is_live(op):
            return
        if not self.effects.would_be_trivially_dead(op):
            self.set_live(op)
            return
        if any(self.is_live(use.operation) for result in op.results for use in result.uses):
            self.set_live(op)


def region_dce(region: Region) -> bool:
    """Erase the dead ops of `region` (xDSL's `region_dce`); whether anything changed."""
    live_set = CachedLiveSet()
    while live_set.changed:
        live_set.changed = False
        live_set.propagate_region_liveness(region)
    live_set.delete_dead(region, None)
    return live_set.changed


@dataclass(frozen=True)
class DcePass(ModulePass):
    name = "dce"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        region_dce(op.body)
