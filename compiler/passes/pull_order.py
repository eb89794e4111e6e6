"""`pull-order`: `upd` waits for each parameter right before the forward pass first reads it (TicTac's pulls).

With parameter servers a worker pushes its gradients and pulls the next model; without this pass `upd` can only
start once the whole model has arrived. TicTac (Hashemi et al., MLSys 2019) orders the transfers by when the
computation needs them: pull first what the next forward pass reads first, and let the forward pass start on the
parameters that are already there. Which parameter is read when only `upd`'s IR knows, so for a paramserv call
with `overlap` (the constant true or a value known only at run time) this pass rewrites `upd`'s entry block:

- each read `model[j]` with a constant j (`daphne.listGet`) becomes `daphne.awaitParameter(model) {position = j}`,
  placed right before the first op that uses the matrix (a read the canonicaliser or CSE moved to the top of the
  function is moved down again): on an MPI worker whose pull is in flight it waits until matrix j has arrived and
  returns it, anywhere else it is `model[j]`;
- a use of the whole list (the model handed to a function, an index computed at run time, `length`) gets one
  `daphne.awaitModel(model)` before it, which waits for every matrix; later uses take its result;
- the positions in the order of their waits are recorded on the paramserv op (`pull_order = [...]`): the order
  in which the servers send the matrices (the rest follow in index order);
- `agg` gets the verdict of the per-matrix check (per_matrix_agg.py, `daphne.agg_update`): with a per-matrix
  `agg` one server updates and sends each matrix on its own (streamed pulls).

After the pass the model argument of `upd` is read only by the waits, so a worker may call `upd` while its pull
is still arriving. The values are the same matrices the pull brings, so the results equal BSP's bit for bit.
Runs after `wait-free-backprop` (which hoists the backward pass's gradients, before the waits pin the reads) in
DAPHNE's `phy_op_selection` slot, so `--explain phy_op_selection` shows the waits and the order.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, IntAttr, ModuleOp
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass

from daphnec.compiler.analysis.inference import set_type
from daphnec.compiler.passes.per_matrix_agg import mark_agg
from daphnec.compiler.passes.sufficient_factors import calls_with, functions_of
from daphnec.dialects.ops import CastOp, constant_value
from daphnec.dialects.ops_frame import ListGetOp
from daphnec.dialects.ops_paramserv import UPD_PARAMS, AwaitModelOp, AwaitParameterOp

MODEL_PARAM = UPD_PARAMS.index("model")


def _in_block(op: Operation, block: Block) -> Operation:
    """The op of `block` that is `op` or contains it (a use inside a loop's or branch's region)."""
    while op.parent_block() is not block:
        parent = op.parent_op()
        assert parent is not None, "a use of upd's argument lies in upd"
        op = parent
    return op


def _constant_read(use: Operation, model: SSAValue) -> int | None:
    """j when `use` is `model[j]` with a constant j >= 0."""
    if not isinstance(use, ListGetOp) or use.arg_list is not model:
        return None
    idx = use.idx
    while isinstance(idx.owner, CastOp):  # the index cast of a literal, before canonicalisation folds it
        idx = idx.owner.arg
    j = constant_value(idx)
    return int(j) if isinstance(j, (int, float)) and not isinstance(j, bool) and j >= 0 and j == int(j) else None


def pull_order(body: func.FuncOp) -> list[int]:
    """The positions of the model in the order `upd` first reads them (its waits, put in by `place_waits`)."""
    order: list[int] = []
    for o in body.body.block.ops:
        if isinstance(o, AwaitParameterOp) and o.position.data not in order:
            order.append(o.position.data)
    return order


def place_waits(body: func.FuncOp) -> None:
    """Put the waits into `upd` (see the module docstring), unless it has them already."""
    block = body.body.block
    if any(isinstance(o, (AwaitParameterOp, AwaitModelOp)) for o in block.ops):
        return
    model = block.args[MODEL_PARAM]
    assert isinstance(model, BlockArgument)
    index = {op: i for i, op in enumerate(block.ops)}

    def first_use(v: SSAValue) -> Operation | None:
        users = [_in_block(u.operation, block) for u in v.uses]
        return min(users, key=index.__getitem__) if users else None

    # what reads the model, in block order: (where the read happens, the listGet or None for a whole use)
    reads: list[tuple[Operation, ListGetOp | None]] = []
    for use in list(model.uses):
        op = _in_block(use.operation, block)
        j = _constant_read(use.operation, model)
        if j is not None and op is use.operation:
            at = first_use(op.results[0])
            if at is None:  # an unused read: nothing to wait for (dce removes it)
                continue
            reads.append((at, op))  # type: ignore[arg-type]
        else:
            reads.append((op, None))
    reads.sort(key=lambda r: index[r[0]])
    whole: AwaitModelOp | None = None
    for at, get in reads:
        if whole is not None:  # after the first whole use every read goes through the awaited list
            if get is not None:
                get.operands[0] = whole.res
            continue
        if get is None:
            whole = AwaitModelOp(model)
            whole.location = at.location
            block.insert_op_before(whole, at)
            for use in list(model.uses):
                if use.operation is not whole and index.get(_in_block(use.operation, block), -1) >= index[at]:
                    use.operation.operands[use.index] = whole.res
            continue
        j = _constant_read(get, model)
        assert j is not None
        wait = AwaitParameterOp(model, j)
        wait.location = get.location
        set_type(wait.res, get.res.type)
        block.insert_op_before(wait, at)
        get.res.replace_all_uses_with(wait.res)
        get.detach()
        get.erase()


@dataclass(frozen=True)
class PullOrderPass(ModulePass):
    name = "pull-order"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        functions = functions_of(op)
        for ps, body in calls_with(op, "overlap"):
            place_waits(body)
            if ps.factors is not None and ps.factors.data in functions:  # `sfb`: upd's variant reads the model too
                place_waits(functions[ps.factors.data])
            ps.pull_order = ArrayAttr([IntAttr(j) for j in pull_order(body)])
            mark_agg(ps, functions)  # may one server update and send each matrix on its own (streamed pulls)?
