"""Compiling IR shipped to MPI workers: a distributed pipeline's `@dist` function, or paramserv's UDFs.

The coordinator ships IR text (`compiler.passes.distribute`, `compiler.host.paramserv_udfs`); a worker parses and
verifies it and compiles it exactly as the local run compiles a module after its pass pipeline: the kernel stages
give its vectorized pipelines their native kernels (`compiler.backend.native`), and the host code generator turns
it into Python. `compile_shipped_body(text)` returns a callable over the worker's inputs.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from daphnec.compiler.backend.native import compile_kernels
from daphnec.compiler.host.generator import generate_host, py_function_name
from daphnec.compiler.host.program import HOST_FILENAME, HostProgram, unforeseen_message
from daphnec.compiler.pipeline import PassManager
from daphnec.dialects import make_context
from daphnec.dialects.errors import DaphneError, ExecutionError
from daphnec.dialects.ops_distributed import DIST_FUNCTION
from daphnec.runtime.config import DaphneConfig
from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.memory import memory_error_message

_VECTORIZED = DaphneConfig(use_vectorized_exec=True)
"""Shipped IR is compiled as a `--vec` run compiles its pipelines (the coordinator ran the host stages)."""


@dataclass
class ShippedBody:
    """The compiled `@dist` of one shipped text: `body(*inputs)` runs the pipeline over the inputs' rows with the
    local vectorized engine and returns the combined results as a tuple.

    Errors come out as `DaphneError` with the DaphneDSL location of the failing op inside the pipeline, like the
    local run reports them (the generated lines map back to IR ops exactly as in `HostProgram.run`)."""

    fn: Callable[..., object] | None
    host: HostProgram
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


def located(fn: Callable[..., object], host: HostProgram) -> Callable[..., object]:
    """`fn` with its failures raised as `DaphneError`s carrying the DaphneDSL location of the failing op."""

    def call(*inputs: object) -> object:
        try:
            return fn(*inputs)
        except DaphneError:
            raise
        except RecursionError as e:
            raise ExecutionError("maximum recursion depth exceeded", host._failing_loc(e)) from e
        except Exception as e:  # noqa: BLE001 - every failure is reported to the coordinator with its location
            raise ExecutionError(_message(e), host._failing_loc(e)) from e

    return call


def _message(e: Exception) -> str:
    if isinstance(e, DaphneRuntimeError):
        return str(e)
    return memory_error_message(e) if isinstance(e, MemoryError) else unforeseen_message(e)


def compile_shipped_body(text: str) -> ShippedBody:
    """Parse shipped IR text (`dialects.make_context`), verify it, build its native kernels and generate its host
    code (the same stages and generator, hence the same kernels, as the local run)."""
    ctx = make_context()
    module = Parser(ctx, text).parse_module()
    module.verify()
    host = generate_host(module, compile_kernels(module, PassManager.for_config(ctx, _VECTORIZED)))
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
