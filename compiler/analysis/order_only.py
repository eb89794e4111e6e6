"""Values only ever compared: scalars whose program-visible effect is the outcome of order comparisons.

A sum whose value is only compared (PageRank's `delta = sum(abs(q - p))`, tested by `while (... delta > tol)`)
need not be the sequential fold's exact bits: any value on the same side of every threshold gives the same
program. `agg.compared_sum_kernel` returns numpy's pairwise sum with a rigorous error bound and computes the
sequential fold only when a comparison falls within that bound of the threshold, so the program's results keep
every bit. This module decides, on the IR, that a value is used only that way: every use is a comparison of two
f64 scalars (`< <= > >= == !=`, whose results are 0/1, evaluated inline as Python comparisons) or carries the
value, unchanged, into a loop-carried or branch-merged value (`scf.yield`, `scf.condition`, the initial values of
`scf.for`/`scf.while`) whose own uses are of these kinds in turn; a value that leaves the loop through a result
must be unused or only compared, too. Anything else (printing, arithmetic, a cast, a call, a return)
disqualifies it.
"""

from __future__ import annotations

from xdsl.dialects import scf
from xdsl.ir import SSAValue

from daphnec.dialects import ops
from daphnec.dialects.op_kinds import COMPARISON_KINDS
from daphnec.dialects.types import is_scalar, vt_name

#: Result types of a scalar f64 comparison the host code evaluates inline as a Python comparison
#: (`ew_binary.scalar_inline`), which a float subclass answers (`agg.compared_sum_kernel`).
_INLINE_RESULTS = frozenset(("f64", "si64", "ui64", "si32", "ui32", "si8", "ui8", "index", "bool"))


def only_compared(v: SSAValue) -> bool:
    """Every path from `v` to an observable effect goes through an order comparison of scalars."""
    seen: set[SSAValue] = set()
    work = [v]
    while work:
        x = work.pop()
        if x in seen:
            continue
        seen.add(x)
        for use in x.uses:
            nxt = _carried_into(use.operation, use.index)
            if nxt is None:
                return False
            work.extend(nxt)
    return True


def _carried_into(user, index: int) -> list[SSAValue] | None:
    """The values a use passes its operand on to unchanged ([] for a comparison, which ends the path), or None
    for any other use."""
    if isinstance(user, ops.EwBinaryOp):
        if (
            user.KIND in COMPARISON_KINDS
            and all(is_scalar(t) and vt_name(t) == "f64" for t in (user.lhs.type, user.rhs.type))
            and vt_name(user.res.type) in _INLINE_RESULTS
        ):
            return []
        return None
    if isinstance(user, scf.YieldOp):
        parent = user.parent_op()
        if isinstance(parent, scf.ForOp):
            return [parent.body.blocks[0].args[index + 1], parent.results[index]]
        if isinstance(parent, scf.IfOp):
            return [parent.results[index]]
        if isinstance(parent, scf.WhileOp) and user.parent_region() is parent.after_region:
            return [parent.before_region.blocks[0].args[index]]
        return None
    if isinstance(user, scf.ConditionOp):
        parent = user.parent_op()
        if index == 0 or not isinstance(parent, scf.WhileOp):
            return None  # the condition itself: a truth test (not a comparison's outcome)
        return [parent.after_region.blocks[0].args[index - 1], parent.results[index - 1]]
    if isinstance(user, scf.ForOp):
        if index < 3:
            return None  # a bound or the step
        return [user.body.blocks[0].args[index - 2], user.results[index - 3]]
    if isinstance(user, scf.WhileOp):
        return [user.before_region.blocks[0].args[index]]
    return None
