"""`distribute`: turn every vectorized pipeline into a `daphne.distributedPipeline` (`--distributed`).

Like DAPHNE's DistributePipelinesPass, the pipeline's computation becomes a standalone `func.func @dist`, printed
as IR text and carried by the new op, so the MPI workers can compile it without the rest of the script. The text
holds the pipeline op itself inside `@dist` (DAPHNE's worker re-vectorizes the body instead): a worker runs its
rows with its own local vectorized engine, so it needs the splits and combines anyway, and keeping the op means
the worker generates exactly the code the local run generates (`compiler.host.generator`, native kernels included).
The text carries DaphneDSL source locations, so an error on a worker points at the script line.

The worker's half (IR text -> a callable over the worker's inputs) is `compiler.host.shipped.compile_shipped_body`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute, Block, Operation, Region
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from daphnec.compiler.host.paramserv_udfs import paramserv_functions
from daphnec.compiler.printing import module_text
from daphnec.dialects.ops_distributed import DIST_FUNCTION, DistributedPipelineOp
from daphnec.dialects.ops_pipeline import VectorizedPipelineOp
from daphnec.dialects.value_types import Combine, Split


def _unknown_rows(t: Attribute) -> Attribute:
    """A worker sees only some rows of a ROWS input or result: its row count is unknown in the shipped IR."""
    return t.with_shape(rows=-1)  # type: ignore[attr-defined]


def _unknown_cols(t: Attribute) -> Attribute:
    """A COLS-combined result (a transpose) holds one column per row of the worker's share."""
    return t.with_shape(cols=-1)  # type: ignore[attr-defined]


def _shipped_types(op: VectorizedPipelineOp) -> tuple[list[Attribute], list[Attribute]]:
    """Argument and result types of `@dist`. A ROWS input with one row keeps its type: it is broadcast whole (and
    the native kernel planner reads it as a row vector, `compiler/lowering/kernel_plan.py`)."""
    args = [_unknown_rows(v.type) if s == Split.ROWS and v.type.rows.data != 1 else v.type  # type: ignore[attr-defined]
            for v, s in zip(op.inputs, op.split_modes)]  # fmt: skip
    results = []
    for r, c in zip(op.outs, op.combine_modes):
        if c == Combine.ROWS:
            results.append(_unknown_rows(r.type))
        else:
            results.append(_unknown_cols(r.type) if c == Combine.COLS else r.type)
    return args, results


def standalone_module(op: VectorizedPipelineOp) -> ModuleOp:
    """`module { func.func @dist(inputs) -> results { pipeline over the arguments; return } }`."""
    arg_types, result_types = _shipped_types(op)
    entry = Block(arg_types=arg_types)
    body = op.body.clone()
    pipe = VectorizedPipelineOp(list(entry.args), op.split_modes, result_types, op.combine_modes, body.detach_block(0))
    pipe.location = op.location
    entry.add_op(pipe)
    entry.add_op(func.ReturnOp(*pipe.outs))
    f = func.FuncOp(DIST_FUNCTION, (arg_types, result_types), Region(entry))
    f.location = op.location
    return ModuleOp([f])


def shipped_ir(op: VectorizedPipelineOp) -> str:
    """The IR text a worker receives, with source locations (generic form: parses back exactly)."""
    module = standalone_module(op)
    module.verify()
    return module_text(module, locations=True)


def distribute(op: VectorizedPipelineOp) -> DistributedPipelineOp:
    """Replace one vectorized pipeline by a distributed pipeline that carries its computation as text."""
    dist = DistributedPipelineOp(
        list(op.inputs), op.split_modes, [r.type for r in op.outs], op.combine_modes, shipped_ir(op)
    )
    dist.location = op.location
    Rewriter.replace_op(op, dist)
    return dist


@dataclass(frozen=True)
class DistributePass(ModulePass):
    name = "distribute"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        local = paramserv_functions(op)  # paramserv's UDFs run on its workers, one small batch at a time
        for pipe in [o for o in op.walk() if isinstance(o, VectorizedPipelineOp)]:
            f = pipe.parent_op()
            while f is not None and not isinstance(f, func.FuncOp):
                f = f.parent_op()
            if f is None or f.sym_name.data not in local:
                distribute(pipe)


def distributed_pipelines(module: Operation) -> list[DistributedPipelineOp]:
    """Every distributed pipeline in a module (for tests and `--explain`-style tools)."""
    return [o for o in module.walk() if isinstance(o, DistributedPipelineOp)]
