"""Iterative walks over nested IR (why: xDSL's `walk` is a chain of nested generators, one per level, so each op
it yields costs one resumption per enclosing level: O(ops x depth), quadratic on deep programs; 1,000 nested `if`s
spent ~16 s in it. Recursive visitors also need a stack as deep as the program nests)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, Region
from xdsl.pattern_rewriter import PatternRewriteWalker


def function_blocks(module: ModuleOp) -> list[Block]:
    """The top-level blocks of every function of `module` (where the fusion passes look for ops to fuse; each
    pass descends into nested regions itself)."""
    return [block for f in module.ops for region in f.regions for block in region.blocks]


def children(op: Operation, reverse: bool = False) -> Iterator[Operation]:
    """The ops directly nested in `op` (every region, every block), in order, or in reverse order."""
    for region in reversed(op.regions) if reverse else op.regions:
        yield from _region_ops(region, reverse)


def _region_ops(region: Region, reverse: bool) -> Iterator[Operation]:
    for block in reversed(region.blocks) if reverse else region.blocks:
        yield from reversed(block.ops) if reverse else block.ops


def walk(root: Operation | Region | Block, reverse: bool = False, region_first: bool = False) -> list[Operation]:
    """`list(root.walk(reverse=reverse, region_first=region_first))`, in time linear in the ops."""
    top: Iterable[Operation]
    if isinstance(root, Operation):
        top = (root,)
    elif isinstance(root, Region):
        top = _region_ops(root, reverse)
    else:
        top = reversed(root.ops) if reverse else root.ops
    order: list[Operation] = []
    stack: list[tuple[Operation, bool]] = [(op, False) for op in reversed(list(top))]
    while stack:
        op, regions_done = stack.pop()
        if regions_done:
            order.append(op)
            continue
        if region_first:
            stack.append((op, True))
        else:
            order.append(op)
        stack.extend((child, False) for child in reversed(list(children(op, reverse))))
    return order


def preorder(root: Operation) -> list[Operation]:
    """`list(root.walk())`: an op, then its regions' ops, in order."""
    return walk(root)


class LinearRewriteWalker(PatternRewriteWalker):
    """xDSL's `PatternRewriteWalker`, filling its worklist with the same ops in the same order through `walk`
    above (xDSL's own fill is quadratic in the nesting depth, and runs at least twice per pass)."""

    def _populate_worklist(self, op: Operation | Region | Block) -> None:
        for sub_op in walk(op, reverse=not self.walk_reverse, region_first=not self.walk_regions_first):
            self._worklist.push(sub_op)


def enclosing_function(op: Operation | None) -> func.FuncOp | None:
    """The function `op` stands in (`op` itself if it is one), or None for an op outside every function."""
    while op is not None and not isinstance(op, func.FuncOp):
        op = op.parent_op()
    return op
