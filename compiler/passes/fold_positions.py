"""`fold-positions` (with `--columnar`): a position list turned into a bit vector and straight back is the list.

DAPHNE's columnar rewrite (RewriteToColumnarOpsPass.cpp, printed by `--explain=columnar`) ends every comparison in
a bit vector and starts every `&&`, `||` and row filter from one, so a query's positions make a round trip per
operator: `convertPosListToBitmap` (an n-row matrix written) then `convertBitmapToPosList` (read back, positions
found again). Where the positions come from `colSelect*`, `colIntersect` or `colMerge` they are ascending, unique
and below the bit vector's row count (the rewrite sizes it by the compared column), so the round trip returns
exactly the list it started from: this pass uses the list, and `dce` drops the bit vectors nobody else reads.
It runs after the `columnar` explain slot, which keeps printing DAPHNE's ops.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from daphnec.compiler.ir_walk import walk
from daphnec.dialects import ops_columnar as oc
from daphnec.dialects.ops import CastOp

_SORTED_UNIQUE = (oc.ColSelectOp, oc.ColIntersectOp, oc.ColMergeOp)
"""Ops whose positions are ascending, unique and within their column (DAPHNE's ColSelect/ColIntersect/ColMerge)."""


def _round_trip_source(positions: oc.ConvertBitmapToPosListOp) -> SSAValue | None:
    """The position list a `convertBitmapToPosList(convertPosListToBitmap(cast(p), n))` started from (as the
    matrix the bit vector was made of), if the round trip gives it back unchanged."""
    bits = positions.arg.owner
    if not isinstance(bits, oc.ConvertPosListToBitmapOp):
        return None
    made_of = bits.pos
    cast = made_of.owner
    if not (isinstance(cast, CastOp) and isinstance(cast.arg.owner, _SORTED_UNIQUE)):
        return None
    return made_of if made_of.type == positions.res.type else None


def fold_positions(root: Operation) -> int:
    """Replace every foldable round trip below `root`; returns how many."""
    folded = 0
    for op in walk(root):
        if isinstance(op, oc.ConvertBitmapToPosListOp):
            source = _round_trip_source(op)
            if source is not None:
                op.res.replace_all_uses_with(source)
                folded += 1
    return folded


@dataclass(frozen=True)
class FoldPositionsPass(ModulePass):
    name = "fold-positions"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fold_positions(op)
