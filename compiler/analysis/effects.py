"""Memory effects of ops, computed once per op for the length of one pass (`cse`, `dce`).

Why: xDSL's `get_effects` answers an op with `RecursiveMemoryEffect` (`scf.if`, `scf.for`, `scf.while`,
`daphne.vectorizedPipeline`) by asking every op nested in it, again for each enclosing op, so asking for every op
of n nested `if`s visits O(n^2) ops (600 nested ifs spent 17 s in it). `EffectsCache` gives exactly xDSL's answer
(the same traits, combined the same way) but computes each op's effects once, bottom-up, from its children's
cached ones. A cache is only valid while the IR it has seen does not change: both passes decide first and erase
at the end, so one cache per pass run is safe; nothing is global, so two threads may compile at once.
"""

from __future__ import annotations

from collections.abc import Set

from xdsl.ir import Operation, SSAValue
from xdsl.traits import (
    EffectInstance,
    IsTerminator,
    MemoryEffect,
    MemoryEffectKind,
    RecursiveMemoryEffect,
    SymbolOpInterface,
)

from daphnec.compiler.ir_walk import children

Effects = Set[EffectInstance] | None
"""xDSL's convention: None means unknown effects (assume the worst)."""


class EffectsCache:
    """`get_effects`, `would_be_trivially_dead` and `is_trivially_dead` of `xdsl.traits` /
    `xdsl.transforms.dead_code_elimination`, memoized per op (see the module docstring)."""

    def __init__(self) -> None:
        self._effects: dict[Operation, Effects] = {}
        self._dead_if_unused: dict[Operation, bool] = {}
        self.computed = 0
        """How many ops had their effects computed (tests check it grows linearly with the program)."""

    def effects(self, op: Operation) -> Effects:
        """xDSL's `get_effects(op)`."""
        try:
            return self._effects[op]
        except KeyError:
            self._fill(op)
            return self._effects[op]

    def _fill(self, root: Operation) -> None:
        """Compute the effects of `root` and of every op under it not yet known, children first, without recursion
        (programs nest as deep as the frontend allows)."""
        stack: list[tuple[Operation, bool]] = [(root, False)]
        while stack:
            op, children_done = stack.pop()
            if op in self._effects:
                continue
            if children_done:
                self._effects[op] = self._own(op)
                self.computed += 1
                continue
            stack.append((op, True))
            stack.extend((child, False) for child in children(op))

    def _own(self, op: Operation) -> Effects:
        """`xdsl.traits.get_effects` for an op whose nested ops are all in the cache."""
        traits = op.get_traits_of_type(MemoryEffect)
        if not traits:
            return None
        effects: set[EffectInstance] = set()
        for trait in traits:
            found = self._nested(op) if _is_recursive(trait) else trait.get_effects(op)
            if found is None:
                return None
            effects.update(found)
        return effects

    def _nested(self, op: Operation) -> Effects:
        """`RecursiveMemoryEffect.get_effects`: the union of the nested ops' effects, None if any is unknown."""
        effects: set[EffectInstance] = set()
        for child in children(op):
            found = self._effects[child]
            if found is None:
                return None
            effects.update(found)
        return effects

    def is_side_effect_free(self, op: Operation) -> bool:
        effects = self.effects(op)
        return effects is not None and len(effects) == 0

    def only_has_effect(self, op: Operation, kind: MemoryEffectKind) -> bool:
        effects = self.effects(op)
        return effects is not None and all(e.kind == kind for e in effects)

    def would_be_trivially_dead(self, op: Operation) -> bool:
        """Whether `op` would have no observable effect if its results were unused (xDSL's rule, same name)."""
        known = self._dead_if_unused.get(op)
        if known is None:
            known = (
                not op.has_trait(IsTerminator, value_if_unregistered=False)
                and not op.has_trait(SymbolOpInterface, value_if_unregistered=False)
                and self._result_only_effects(op)
            )
            self._dead_if_unused[op] = known
        return known

    def is_trivially_dead(self, op: Operation) -> bool:
        return all(result.first_use is None for result in op.results) and self.would_be_trivially_dead(op)

    def _result_only_effects(self, root: Operation) -> bool:
        """xDSL's `result_only_effects`: reads only, or allocations of values defined under `root`."""
        effects = self.effects(root)
        return effects is not None and all(
            e.kind == MemoryEffectKind.READ
            or (e.kind == MemoryEffectKind.ALLOC and isinstance(v := e.value, SSAValue) and root.is_ancestor(v.owner))
            for e in effects
        )


def _is_recursive(trait: MemoryEffect) -> bool:
    """Whether the trait's effects are exactly RecursiveMemoryEffect's (a subclass overriding them is asked
    itself)."""
    return isinstance(trait, RecursiveMemoryEffect) and (
        type(trait).get_effects.__func__ is RecursiveMemoryEffect.get_effects.__func__  # type: ignore[attr-defined]
    )
