"""`fold-positions`: a position list turned into a bit vector and straight back is the list.

DAPHNE's columnar rewrite (RewriteToColumnarOpsPass.cpp) ends every comparison in a bit vector and starts every
`&&`, `||` and row filter from one, so, op by op, a query's positions make a round trip per operator:
`convertPosListToBitmap` (an n-row matrix written) then `convertBitmapToPosList` (read back, positions found again).
Where the positions come from `colSelect*`, `colIntersect` or `colMerge` they are ascending, unique and below the
bit vector's row count (the rewrite sizes it by the compared column), so the round trip returns exactly the list it
started from. DAPHNE's newest rewrite removes these pairs itself, before the IR `--explain=columnar` prints: the
`columnar` pass calls `fold_positions` and `drop_dead_round_trips` at its end. The pass of its own stays for
`daphne-opt` (IR rewritten by an older pipeline) and keeps a bit vector something else reads.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from daphnec.compiler.ir_walk import walk
from daphnec.dialects import ops_columnar as oc
from daphnec.dialects.ops import CastOp, NumRowsOp

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


def drop_dead_round_trips(root: Operation) -> None:
    """Erase the bit vectors, and the casts feeding them, that nothing reads any more after `fold_positions`
    (users first: a conversion back, then the bit vector, then its cast). A bit vector's row count, which the rewrite
    of the next operator reads, is the count it was made with."""
    for op in list(walk(root)):
        if isinstance(op, NumRowsOp) and isinstance(op.arg.owner, oc.ConvertPosListToBitmapOp):
            if op.arg.owner.num_rows.type == op.res.type:
                op.res.replace_all_uses_with(op.arg.owner.num_rows)
                op.detach()
                op.erase()
    changed = True
    while changed:
        changed = False
        for op in list(walk(root)):
            if (
                isinstance(op, (oc.ConvertBitmapToPosListOp, oc.ConvertPosListToBitmapOp, CastOp))
                and op.parent is not None
                and all(not r.uses for r in op.results)
                and (not isinstance(op, CastOp) or isinstance(op.arg.owner, _SORTED_UNIQUE))
            ):
                op.detach()
                op.erase()
                changed = True


@dataclass(frozen=True)
class FoldPositionsPass(ModulePass):
    name = "fold-positions"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fold_positions(op)
