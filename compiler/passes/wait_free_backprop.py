"""`wait-free-backprop`: each gradient of paramserv's `upd` is computed as early as it can be and announced there.

Poseidon's wait-free backpropagation (Zhang et al., USENIX ATC 2017): the last layer's gradients can travel while
the earlier layers are still being differentiated. Written naturally, `upd` computes its gradients at the end
(`return createList(t(X) @ dH1, sum(dH1, 1), t(H1) @ dH2, ...)`), so this pass, for a paramserv call with
`overlap` (the constant true or a value known only at run time), schedules `upd`'s entry block:

- each gradient's op is hoisted to right after the last of its operands (with the pure ops only it uses, e.g. a
  transpose), so `t(H2) @ dZ` and `sum(dZ, 1)` follow `dZ` instead of waiting for dH1;
- right after it, `daphne.gradientReady(g) {position = j}` marks the gradient final. At run time, with
  `overlap=true` over MPI, the worker's communication thread starts reducing the buckets of the flattened gradient
  that are complete (runtime/paramserv/overlap.py: small matrices packed into one bucket, large ones split into
  chunks, MG-WFBP's merging and CARAMEL's chunking) while the backward pass goes on; elsewhere the op does
  nothing.

With `sfb` the same is done in upd's factors variant (`sufficient-factors`), which returns the A factor of a
factored gradient at its position j and the B factors after the n gradients (position n + i for the i-th factored
one): every element is marked where it is final. An affine layer's A is its input, final during the FORWARD pass
(the first layer's is the batch itself, marked before the first op), its B the gradient of its output, final
during the backward pass; so with `sfb` and `overlap=true` the factors travel beside the forward pass as well as
the backward pass, each by its own all-gather (runtime/paramserv/overlap.py).

Only pure ops move (their operands are SSA values, so moving one earlier, still after its operands, cannot change
a result), and only within the entry block. Runs after `fold-transpose` (DAPHNE's `phy_op_selection` slot), so
`--explain phy_op_selection` shows the schedule.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass
from xdsl.traits import Pure

from daphnec.compiler.passes.sufficient_factors import calls_with, functions_of, returned_list
from daphnec.dialects.ops_paramserv import GradientReadyOp


def _pure(op: Operation) -> bool:
    return op.has_trait(Pure) and not op.regions


class Scheduler:
    """Moves ops of one block earlier (see the module docstring)."""

    def __init__(self, block: Block):
        self.block = block

    def index(self, op: Operation) -> int:
        return list(self.block.ops).index(op)

    def local(self, op: Operation | None) -> bool:
        return isinstance(op, Operation) and op.parent_block() is self.block

    def hoist(self, op: Operation) -> None:
        """Move `op` (and the pure ops only it uses) to right after the last of its operands' definitions."""
        if not _pure(op):
            return
        for x in op.operands:
            d = x.owner
            if self.local(d) and _pure(d) and all(u.operation is op for u in x.uses):  # type: ignore[arg-type]
                self.hoist(d)  # type: ignore[arg-type]
        defs = [x.owner for x in op.operands if self.local(x.owner)]
        anchor = max(defs, key=self.index) if defs else None  # type: ignore[arg-type]
        op.detach()
        if anchor is None:
            first = self.block.first_op
            assert first is not None
            self.block.insert_op_before(op, first)
        else:
            self.block.insert_op_after(op, anchor)  # type: ignore[arg-type]


def schedule(body: func.FuncOp) -> bool:
    """Hoist the elements `upd` (or its factors variant) returns and mark each final; False when `upd` does not
    return a `createList` or is marked already."""
    block = body.body.block
    lst = returned_list(body)
    if lst is None or any(isinstance(o, GradientReadyOp) for o in block.ops):
        return False
    s = Scheduler(block)
    marked = list(enumerate(lst.elems))
    for _, g in marked:
        if s.local(g.owner):
            s.hoist(g.owner)  # type: ignore[arg-type]
    for j, g in marked:
        mark = GradientReadyOp(g, j)
        mark.location = lst.location
        if s.local(g.owner):
            block.insert_op_after(mark, g.owner)  # type: ignore[arg-type]
        else:
            block.insert_op_before(mark, block.first_op)  # type: ignore[arg-type]
    return True


@dataclass(frozen=True)
class WaitFreeBackpropPass(ModulePass):
    name = "wait-free-backprop"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        functions = functions_of(op)
        for ps, body in calls_with(op, "overlap"):
            schedule(body)
            variant = functions.get(ps.factors.data) if ps.factors is not None else None
            if variant is not None:  # `sfb`: the factors and the gradients that travel whole
                schedule(variant)
