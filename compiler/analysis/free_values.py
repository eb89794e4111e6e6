"""The values an op reads from outside itself, for every op of a function at once (host code outlining).

Why: `compiler/host/generator.py` outlines every structured op nested `OUTLINE_DEPTH` deep into a function whose
parameters are the outer values it reads. Walking each outlined op's subtree to find them costs O(n) per outlined
op, n/8 times, each walk O(depth) per op through xDSL's nested generators: O(n^3) on n nested `if`s. Here one
bottom-up pass over the function computes every op's free values from its children's.
"""

from __future__ import annotations

from xdsl.ir import Block, Operation, SSAValue

from daphnec.compiler.ir_walk import children, preorder


def free_values(root: Operation) -> dict[Operation, list[SSAValue]]:
    """op -> the values defined outside op that op or the ops nested in it read, for every op under `root`, each
    list in the order of first use in `op.walk()` (so generated parameter lists do not change), without
    duplicates."""
    order = preorder(root)
    start = {op: i for i, op in enumerate(order)}
    end = _subtree_ends(order, start)
    free: dict[Operation, list[SSAValue]] = {}
    for op in reversed(order):  # children before parents
        lo, hi = start[op], end[op]

        def outside(v: SSAValue, lo: int = lo, hi: int = hi) -> bool:
            i = start.get(_defining_op(v))  # type: ignore[arg-type]
            return i is None or not lo <= i <= hi

        found = dict.fromkeys(v for v in op.operands if outside(v))
        for child in children(op):
            found.update((v, None) for v in free[child] if outside(v))
        free[op] = list(found)
    return free


def _subtree_ends(order: list[Operation], start: dict[Operation, int]) -> dict[Operation, int]:
    """op -> the pre-order index of the last op in its subtree (its own index if it has no nested ops)."""
    end: dict[Operation, int] = {}
    for op in reversed(order):
        last = start[op]
        for child in children(op):
            last = end[child]  # the last child's subtree ends last
        end[op] = last
    return end


def _defining_op(v: SSAValue) -> Operation | None:
    """The op that defines `v`: its owner, or for a block argument the op whose region holds the block."""
    owner = v.owner
    return owner.parent_op() if isinstance(owner, Block) else owner
