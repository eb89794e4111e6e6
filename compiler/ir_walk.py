"""Iterative walks over nested IR (why: xDSL's `Operation.walk` is a chain of nested generators, one per level,
so each op it yields costs one resumption per enclosing level: O(ops x depth), quadratic on deep programs; and
recursive visitors need a stack as deep as the program nests)."""

from __future__ import annotations

from collections.abc import Iterator

from xdsl.ir import Operation


def children(op: Operation) -> Iterator[Operation]:
    """The ops directly nested in `op` (every region, every block), in order."""
    for region in op.regions:
        for block in region.blocks:
            yield from block.ops


def preorder(root: Operation) -> list[Operation]:
    """`list(root.walk())` (the same order: an op, then its regions' ops in order) in time linear in the ops."""
    order: list[Operation] = []
    stack = [root]
    while stack:
        op = stack.pop()
        order.append(op)
        stack.extend(reversed(list(children(op))))
    return order
