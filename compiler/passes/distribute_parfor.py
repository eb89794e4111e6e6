"""`distribute-parfor` (`--distributed`): give every outermost parfor the IR its MPI workers run.

Like `distribute` does for pipelines, the loop's computation becomes a standalone module whose `func.func @dist`
the workers compile once (`compiler.host.shipped.compile_shipped_body`) and call per chunk of iterations:

    @dist(%ks: matrix<si64> (the chunk's iteration numbers), %inits..., %inputs...) -> (positions, values)...
        %lo, %hi = daphne.parforChunk(%ks)
        %r... = daphne.parfor %k = %lo to %hi step 1 iter_args(%inits...) { the loop's body }
        daphne.parforDelta(%r, %init) per result: the cells this chunk wrote

`%inputs` are the values defined before the loop that its body reads (`shipped_inputs`, in one order for the pass
and the host code generator); constants are copied into the function instead, and so are the user functions the
body calls. The text is attached to the loop (`daphne.parfor_shipped`); the host code hands it to the coordinator
(runtime/parfor.py), which splits `%ks` by rows with the configured scheme and writes the chunks' cells into the
results. On a worker the loop inside `@dist` runs on that worker's threads. A parfor whose body reads a frame or
a list stays local: the distributed runtime ships matrices and scalars.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp, StringAttr
from xdsl.ir import Block, BlockArgument, Operation, OpResult, Region, SSAValue
from xdsl.passes import ModulePass

from daphnec.compiler.host.paramserv_udfs import paramserv_functions
from daphnec.compiler.ir_walk import walk
from daphnec.compiler.printing import module_text
from daphnec.dialects.attr_names import PARFOR_SHIPPED_ATTR, PARFOR_WRITES_ATTR
from daphnec.dialects.calls import callees, reachable_functions
from daphnec.dialects.ops import ConstantOp
from daphnec.dialects.ops_distributed import DIST_FUNCTION
from daphnec.dialects.ops_parfor import ParForChunkOp, ParForDeltaOp, ParForOp
from daphnec.dialects.types import SI64, MatrixType, is_matrix, is_scalar


def _outside(loop: Operation, v: SSAValue) -> bool:
    op = v.op if isinstance(v, OpResult) else v.block.parent_op() if isinstance(v, BlockArgument) else None
    return op is None or not loop.is_ancestor(op)


def _free(loop: ParForOp) -> list[SSAValue]:
    """Values defined outside the loop that ops in its body read, in order of first use."""
    seen: dict[SSAValue, None] = {}
    for op in walk(loop.body):
        for v in op.operands:
            if v not in seen and _outside(loop, v):
                seen[v] = None
    return list(seen)


def shipped_inputs(loop: ParForOp) -> list[SSAValue]:
    """The `%inputs` of the loop's `@dist`: free values that are not constants."""
    return [v for v in _free(loop) if not isinstance(v.owner, ConstantOp)]


def standalone_module(loop: ParForOp, functions: dict[str, func.FuncOp]) -> ModuleOp:
    inputs = shipped_inputs(loop)
    n = len(loop.iter_args)
    entry = Block(arg_types=[MatrixType(SI64, -1, 1), *(v.type for v in loop.iter_args), *(v.type for v in inputs)])
    ks, inits, args = entry.args[0], entry.args[1 : 1 + n], entry.args[1 + n :]
    chunk = ParForChunkOp(ks)
    one = ConstantOp(IntegerAttr(1, IndexType()))
    entry.add_ops([chunk, one])
    mapping: dict[SSAValue, SSAValue] = dict(zip(inputs, args))
    for v in _free(loop):
        if isinstance(v.owner, ConstantOp):
            c = v.owner.clone()
            entry.add_op(c)
            mapping[v] = c.results[0]
    mapping.update(zip(loop.iter_args, inits))
    shipped = loop.clone(value_mapper=mapping)
    shipped.operands = [chunk.lo, chunk.hi, one.results[0], *inits]
    entry.add_op(shipped)
    outs: list[SSAValue] = []
    for r, init in zip(shipped.results, inits):
        delta = ParForDeltaOp(r, init)
        delta.location = loop.location
        entry.add_op(delta)
        outs += delta.results
    entry.add_op(func.ReturnOp(*outs))
    for op in (chunk, one):
        op.location = loop.location
    f = func.FuncOp(DIST_FUNCTION, ([a.type for a in entry.args], [v.type for v in outs]), Region(entry))
    f.location = loop.location
    called = [s for op in walk(loop) for s in callees(op)]
    return ModuleOp([f, *(g.clone() for g in reachable_functions(functions, called))])


def shippable(loop: ParForOp) -> bool:
    """Matrices and scalars travel to MPI workers; a body reading anything else (a frame, a list) stays local."""
    return all(is_matrix(v.type) or is_scalar(v.type) for v in [*loop.iter_args, *shipped_inputs(loop)])


@dataclass(frozen=True)
class DistributeParForPass(ModulePass):
    name = "distribute-parfor"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        local = paramserv_functions(op)  # paramserv's UDFs run on its workers already
        functions = {f.sym_name.data: f for f in op.ops if isinstance(f, func.FuncOp)}
        for f in functions.values():
            if f.sym_name.data in local:
                continue
            for loop in walk(f):
                if not isinstance(loop, ParForOp) or PARFOR_WRITES_ATTR not in loop.attributes:
                    continue
                outer = loop.parent_op()
                while outer is not None and not isinstance(outer, ParForOp):
                    outer = outer.parent_op()
                if outer is None and shippable(loop):
                    module = standalone_module(loop, functions)
                    module.verify()
                    loop.attributes[PARFOR_SHIPPED_ATTR] = StringAttr(module_text(module, locations=True))
