"""`distribute`: turn every vectorized pipeline into a `daphne.distributedPipeline` (`--distributed`).

Like DAPHNE's DistributePipelinesPass, the pipeline's computation becomes a standalone `func.func @dist`, printed
as IR text and carried by the new op, so the MPI workers can compile it without the rest of the script. The text
holds the pipeline op itself inside `@dist` (DAPHNE's worker re-vectorizes the body instead): a worker runs its
rows with its own local vectorized engine, so it needs the splits and combines anyway, and keeping the op means
the worker generates exactly the code the local run generates (`compiler.host_codegen`, native kernels included).
The text carries DaphneDSL source locations, so an error on a worker points at the script line.

`compile_shipped_body(text)` is the worker's half: IR text -> a callable over the worker's inputs.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute, Block, Operation, Region
from xdsl.parser import Parser
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from daphnec.dialects.errors import DaphneError, ExecutionError
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
    from daphnec.compiler.pipeline import module_text

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
        from daphnec.compiler.paramserv_udfs import paramserv_functions

        local = paramserv_functions(op)  # paramserv's UDFs run on its workers, one small batch at a time
        for pipe in [o for o in op.walk() if isinstance(o, VectorizedPipelineOp)]:
            f = pipe.parent_op()
            while f is not None and not isinstance(f, func.FuncOp):
                f = f.parent_op()
            if f is None or f.sym_name.data not in local:
                distribute(pipe)


# ---------------------------------------------------------------------------------------------------------------
# The worker's side: shipped IR text -> a compiled callable
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class ShippedBody:
    """The compiled `@dist` of one shipped text: `body(*inputs)` runs the pipeline over the inputs' rows with the
    local vectorized engine and returns the combined results as a tuple.

    Errors come out as `DaphneError` with the DaphneDSL location of the failing op inside the pipeline, like the
    local run reports them (the generated lines map back to IR ops exactly as in `HostProgram.run`)."""

    fn: Callable[..., object] | None
    host: object
    results: int
    functions: dict[str, Callable[..., object]] = field(default_factory=dict)
    """Every function of the shipped module by IR symbol, errors mapped like `__call__`'s (paramserv's UDFs are
    shipped as a module without `@dist`)."""

    def __call__(self, *inputs: object) -> tuple[object, ...]:
        assert self.fn is not None, f"shipped IR has no func.func @{DIST_FUNCTION}"
        out = located(self.fn, self.host)(*inputs)
        if self.results == 0:
            return ()
        return out if self.results > 1 else (out,)  # type: ignore[return-value]


def located(fn: Callable[..., object], host: object) -> Callable[..., object]:
    """`fn` with its failures raised as `DaphneError`s carrying the DaphneDSL location of the failing op."""

    def call(*inputs: object) -> object:
        try:
            return fn(*inputs)
        except DaphneError:
            raise
        except RecursionError as e:
            raise ExecutionError("maximum recursion depth exceeded", host._failing_loc(e)) from e  # type: ignore[attr-defined]
        except Exception as e:  # noqa: BLE001 - every failure is reported to the coordinator with its location
            raise ExecutionError(_message(e), host._failing_loc(e)) from e  # type: ignore[attr-defined]

    return call


def _message(e: Exception) -> str:
    from daphnec.runtime.errors import DaphneRuntimeError

    return str(e) if isinstance(e, DaphneRuntimeError) else f"{type(e).__name__}: {e}"


def compile_shipped_body(text: str) -> ShippedBody:
    """Parse shipped IR text (`dialects.make_context`), verify it and generate its host code (the same generator,
    hence the same native kernels, as the local run)."""
    from daphnec.compiler.host_codegen import HOST_FILENAME, generate_host, py_function_name
    from daphnec.dialects import make_context

    module = Parser(make_context(), text).parse_module()
    module.verify()
    host = generate_host(module)
    ns = dict(host.globals)
    exec(compile(host.source, HOST_FILENAME, "exec"), ns)  # noqa: S102 - generated from verified IR
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 20000))
    fns = [op.sym_name.data for op in module.ops if isinstance(op, func.FuncOp)]
    syms = [s for s in fns if py_function_name(s) in ns]
    functions = {s: located(ns[py_function_name(s)], host) for s in syms}  # type: ignore[arg-type]
    entry = _entry(module)
    fn = ns[py_function_name(DIST_FUNCTION)] if entry is not None else None
    return ShippedBody(fn, host, len(entry.function_type.outputs) if entry is not None else 0, functions)  # type: ignore[arg-type]


def _entry(module: ModuleOp) -> func.FuncOp | None:
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == DIST_FUNCTION:
            return op
    return None


def distributed_pipelines(module: Operation) -> list[DistributedPipelineOp]:
    """Every distributed pipeline in a module (for tests and `--explain`-style tools)."""
    return [o for o in module.walk() if isinstance(o, DistributedPipelineOp)]
