"""The per-matrix check of `agg` (run by the `pull-order` pass): does a paramserv call's `agg` update each
model matrix on its own?

With `overlap=true` and one parameter server the workers push every gradient matrix as soon as it is final, and
the server sums each matrix on arrival. If `agg`'s output j depends only on model j, gradient j and values that
depend on neither list (the hyperparameters, constants, the list's length), the server may apply `agg` to each
matrix as soon as its sum is complete and send it back at once: the big last layers' matrices return while the
workers still compute the first layers' gradients (runtime/paramserv/mpi_server.py, streamed pulls). An `agg`
with a cross-matrix term (global gradient-norm clipping: a norm summed over all gradients scales every one) must
see every sum first, and keeps today's whole-model update.

The check is a data-flow analysis of `agg`'s IR (conservative: what it does not recognise is "whole-model"). Every
value gets a tag: *free* (depends on no matrix of model or gradients), *position p* (depends on the matrices read
at position p only: `model[p]`, `gradients[p]` with the same index, a constant or the same SSA value) or it fails:

- an op whose operands carry two different positions mixes matrices;
- a loop-carried value with a position (an accumulation over the matrices, e.g. a norm) mixes them;
- the result list must be built position by position: `createList(e0, e1, ...)` with e_k free or of position k,
  then optionally the loop `while (i < length(model)) { out = append(out, e); i = i + 1; }` started at
  i = the list's length, e free or of position i (models.daph's `sgd`);
- any other use of model or gradients (the list handed to a function, a region that reads them) fails, except a
  call of a function with `agg`'s own three arguments, which is checked the same way.

The verdict (`mark_agg`, run by `pull-order`) is a discardable attribute on `agg`'s function, shown by
`--explain phy_op_selection` and shipped with the IR to the MPI ranks: `daphne.agg_update = "per-matrix"` or
`"whole-model: <why>"`. The runtime (runtime/paramserv/udf.py, `per_matrix_agg`) streams pulls only for the
first. How the server then applies a per-matrix `agg` to some matrices (stand-ins for the others, their results
discarded) gives each matrix exactly the value the whole update gives it, so the model stays BSP's bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import func, scf
from xdsl.dialects.builtin import StringAttr, UnitAttr
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

from daphnec.dialects.ops import CastOp, EwAddOp, constant_value
from daphnec.dialects.ops_frame import AppendOp, CreateListOp, LengthOp, ListGetOp
from daphnec.dialects.ops_paramserv import ParamservOp

ATTR = "daphne.agg_update"
PER_MATRIX = "per-matrix"

Key = tuple[str, object]
"""A position: ("c", p) for a constant index p, ("v", value) for an index computed at run time."""


class NotPerMatrix(Exception):  # noqa: N818 - the analysis' verdict, not an error of the program
    """Why `agg` is not per-matrix."""


@dataclass(frozen=True)
class Built:
    """A list built position by position: its element k has position k (or is free); `length` when known."""

    length: int | None


def _strip(v: SSAValue) -> SSAValue:
    while isinstance(v.owner, CastOp):
        v = v.owner.arg
    return v


def _key(idx: SSAValue) -> Key:
    idx = _strip(idx)
    c = constant_value(idx)
    if isinstance(c, (int, float)) and not isinstance(c, bool) and c == int(c):
        return ("c", int(c))
    return ("v", idx)


def _const_int(v: SSAValue) -> int | None:
    c = constant_value(_strip(v))
    return int(c) if isinstance(c, (int, float)) and not isinstance(c, bool) and c == int(c) else None


class _Check:
    """One function's analysis; `sources` are its model and gradients lists."""

    def __init__(self, fn: func.FuncOp, functions: dict[str, func.FuncOp], depth: int = 0):
        self.functions = functions
        self.depth = depth
        args = fn.body.block.args
        if len(args) != 3:
            raise NotPerMatrix("agg does not take (model, hyperparams, gradients)")
        self.args: list[SSAValue] = list(args)
        self.sources = {args[0], args[2]}
        self.free_lists = {args[1]}
        self.tags: dict[SSAValue, Key | Built | None] = {}

    def tag(self, v: SSAValue) -> Key | Built | None:
        if v in self.sources:
            raise NotPerMatrix("the model or gradient list is used as a whole")
        return self.tags.get(v)

    def position(self, op: Operation) -> Key | None:
        """The one position the operands carry (None: all free)."""
        found: Key | None = None
        for v in op.operands:
            t = self.tag(v)
            if isinstance(t, Built):
                raise NotPerMatrix(f"the result list is read by {op.name}")
            if t is not None and found is not None and t != found:
                raise NotPerMatrix(f"{op.name} combines the matrices at two positions")
            found = t if t is not None else found
        return found

    def block(self, block: Block) -> None:
        for op in block.ops:
            self.op(op)

    def op(self, op: Operation) -> None:
        if isinstance(op, ListGetOp) and op.arg_list in self.sources:
            self.tags[op.res] = _key(op.idx)
            return
        if isinstance(op, ListGetOp) and op.arg_list in self.free_lists:
            return
        if isinstance(op, LengthOp) and (op.arg in self.sources or op.arg in self.free_lists):
            return  # the number of matrices is the same for every position
        if isinstance(op, CreateListOp):
            for k, e in enumerate(op.elems):
                t = self.tag(e)
                if t is not None and t != ("c", k):
                    raise NotPerMatrix(f"createList puts a matrix of another position at position {k}")
            self.tags[op.res] = Built(len(op.elems))
            return
        if isinstance(op, scf.WhileOp):
            self.loop(op)
            return
        if isinstance(op, func.CallOp):
            self.call(op)
            return
        if isinstance(op, func.ReturnOp):
            if len(op.operands) != 1 or not isinstance(self.tags.get(op.operands[0]), Built):
                raise NotPerMatrix("the result is not a list built position by position")
            return
        if op.regions:
            for inner in op.walk():
                if inner is not op and any(v in self.sources or self.tags.get(v) is not None for v in inner.operands):
                    raise NotPerMatrix(f"{op.name} reads the model or the gradients inside its region")
        t = self.position(op)
        for r in op.results:
            self.tags[r] = t

    def call(self, op: func.CallOp) -> None:
        """A call of a function with agg's own (model, hyperparams, gradients): checked as agg itself."""
        name = op.callee.root_reference.data
        args = list(op.arguments)
        if not any(a in self.sources or a in self.free_lists or self.tags.get(a) is not None for a in args):
            for r in op.results:
                self.tags[r] = None
            return
        callee = self.functions.get(name)
        if callee is None or self.depth > 8 or args != self.args:
            raise NotPerMatrix(f"the model or the gradients go to {name} other than as (model, hyperparams, "
                               "gradients)")  # fmt: skip
        _Check(callee, self.functions, self.depth + 1).block(callee.body.block)
        for r in op.results:
            self.tags[r] = Built(None)

    def loop(self, op: scf.WhileOp) -> None:
        """The appending loop of the module docstring; any other loop that touches the matrices fails."""
        inits = list(op.arguments)
        touched = any(v in self.sources or self.tags.get(v) is not None for o in op.walk() if o is not op
                      for v in o.operands) or any(self.tags.get(v) is not None for v in inits)  # fmt: skip
        if not touched:
            for r in op.results:
                self.tags[r] = None
            return
        lists = [i for i, v in enumerate(inits) if isinstance(self.tags.get(v), Built)]
        carried = [i for i, v in enumerate(inits) if self.tags.get(v) is not None and i not in lists]
        if carried or len(lists) != 1:
            raise NotPerMatrix("a loop carries a value computed from the matrices from one position to the next")
        li = lists[0]
        before, after = op.before_region.block, op.after_region.block
        cond = before.last_op
        if not isinstance(cond, scf.ConditionOp) or list(cond.args) != list(before.args):
            raise NotPerMatrix("a loop of a form the check does not know builds the result")
        for o in before.ops:  # the condition: free values only (the list's length, the counter)
            if o is not cond:
                if any(self.tags.get(v) is not None for v in o.operands) or (
                        any(v in self.sources for v in o.operands) and not isinstance(o, LengthOp)):  # fmt: skip
                    raise NotPerMatrix("the loop's condition reads the matrices")
        yld = after.last_op
        assert isinstance(yld, scf.YieldOp)
        out = yld.operands[li]
        app = out.owner
        if not isinstance(app, AppendOp) or app.arg_list is not after.args[li]:
            raise NotPerMatrix("the loop changes the result list other than by one append per iteration")
        counters = [i for i, v in enumerate(yld.operands) if i != li and self._increment(v, after.args[i])]
        start = self.tags[inits[li]]
        assert isinstance(start, Built)
        counter = next((i for i in counters if _const_int(inits[i]) == start.length), None)
        if counter is None:
            raise NotPerMatrix("the loop's appends are not counted by an index that starts at the list's length")
        saved = dict(self.tags)
        self.tags[after.args[li]] = Built(None)
        for o in after.ops:
            if o is app:
                t = self.tag(app.elem)
                if t is not None and t != ("v", after.args[counter]):
                    raise NotPerMatrix("the loop appends a matrix of another position than its index")
                continue
            if isinstance(o, scf.YieldOp):
                continue
            self.op(o)
        for i, v in enumerate(yld.operands):
            if i != li and self.tags.get(v) is not None:
                raise NotPerMatrix("a loop carries a value computed from the matrices from one position to the next")
        self.tags = saved
        self.tags[op.results[li]] = Built(None)

    @staticmethod
    def _increment(v: SSAValue, arg: BlockArgument) -> bool:
        o = v.owner
        return isinstance(o, EwAddOp) and o.lhs is arg and _const_int(o.rhs) == 1


def per_matrix_reason(fn: func.FuncOp, functions: dict[str, func.FuncOp]) -> str | None:
    """None if `fn` (an agg) is per-matrix, else why not."""
    try:
        _Check(fn, functions).block(fn.body.block)
    except NotPerMatrix as e:
        return str(e)
    return None


def mark_agg(ps: ParamservOp, functions: dict[str, func.FuncOp]) -> None:
    """Put the verdict on the call's `agg` function (run by `pull-order` for every call with overlap)."""
    agg = functions.get(ps.agg.data)
    if agg is not None:
        why = per_matrix_reason(agg, functions)
        agg.attributes[ATTR] = StringAttr(PER_MATRIX if why is None else f"whole-model: {why}")
        if why is None:  # the runtime's copy of the verdict: a kernel argument of the call (host code generator)
            ps.per_matrix_agg = UnitAttr()
