"""Native kernels of a compiled module: the kernel stages of the pass pipeline, then the JIT.

    compile_kernels(module, pm) -> {kernel symbol: NativeKernel | PendingKernel}

The kernel stages (`compiler.pipeline.KERNEL_STAGES`: `lower-pipeline-to-loops`, `convert-to-llvm`) give every
vectorized pipeline that lowers a kernel module `@vp_<hash>` in xDSL's llvm dialect and name it on the pipeline
(`daphne.kernel`); the JIT compiles each kernel module into one object and loads it, and host code
(`compiler.host_codegen`) binds the loaded kernels by those symbols. The stages run in one of two ways, with the
same passes and, per pipeline, the same result:

- on the module itself when `--explain` prints their `kernels` or `llvm` slot, so the printed IR is the IR the
  JIT compiles;
- otherwise per pipeline, because lowering costs start-up time (xDSL builds and converts the loops, ~10-40 ms
  per pipeline, plus its imports): the pipeline is planned and named in the foreground (a millisecond); the rest
  happens on the JIT's background thread: if the kernel cache holds its object code (keyed by its IR before
  lowering and the host's CPU and LLVM) it is loaded and nothing is lowered at all, else a copy of the pipeline in
  a module of its own goes through the kernel stages and LLVM; the pipeline's first run waits for its kernel
  (`PendingKernel`). `DAPHNEC_FOREGROUND_JIT=1` builds or loads every kernel before the script starts.

A kernel that fails to build (a lowering bug, an LLVM error) is logged (`DAPHNEC_JIT_LOG`) and its pipeline keeps
its Python body, as do pipelines without a lowering (`fallback` lines) and every pipeline with
`DAPHNEC_NO_NATIVE=1`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Region, SSAValue

from daphnec.compiler import jit
from daphnec.compiler.lowering import abi
from daphnec.compiler.lowering.kernel_plan import KernelPlan, annotate, try_plan
from daphnec.compiler.native_wrapper import entry_symbols, make_kernel
from daphnec.compiler.pipeline import KERNEL_SLOTS, KERNEL_STAGES, PassManager
from daphnec.dialects.errors import DaphneError
from daphnec.dialects.ops_pipeline import VectorizedPipelineOp
from daphnec.runtime.vectorized.kernel import NativeKernel, PendingKernel
from daphnec.runtime.vectorized.loader import BadObjectCode, log, log_error

Kernel = NativeKernel | PendingKernel

_KERNELS: dict[str, Kernel] = {}
"""Every kernel of this process by symbol (equal pipelines, also of other modules, share one)."""


def compile_kernels(module: ModuleOp, pm: PassManager) -> dict[str, Kernel]:
    """Run the kernel stages on `module` (see the module docstring) and build its kernels; host code finds them by
    the symbols the stages wrote on the pipelines."""
    background = os.environ.get("DAPHNEC_FOREGROUND_JIT") != "1"
    if pm.explain & KERNEL_SLOTS:
        try:
            pm.run_stages(module, KERNEL_STAGES)
        except DaphneError:
            raise
        except Exception as e:  # noqa: BLE001 - a lowering bug: every pipeline keeps its Python body
            log_error(e)
            return {}
        return _compile_lowered(module, background)
    if "native" not in pm.options:
        return {}
    kernels: dict[str, Kernel] = {}
    for pipe in _pipelines(module):
        t0 = time.perf_counter()
        plan, why = try_plan(pipe)
        annotate(pipe, plan, why)
        if plan is None:
            log("fallback", why.replace(" ", "_"), time.perf_counter() - t0)
            continue
        kernel = _kernel(pipe, plan, lambda pipe=pipe, plan=plan: lower_pipeline(pipe, plan, pm), background, t0)
        if kernel is not None:
            kernels[plan.name] = kernel
    return kernels


def _compile_lowered(module: ModuleOp, background: bool) -> dict[str, Kernel]:
    """The kernels of a module the kernel stages ran on: each pipeline's kernel module is in it."""
    modules = {m.sym_name.data: m for m in module.ops if isinstance(m, ModuleOp) and m.sym_name is not None}
    kernels: dict[str, Kernel] = {}
    for pipe in _pipelines(module):
        sym = abi.kernel_symbol(pipe)
        plan, _ = try_plan(pipe) if sym is not None else (None, "")
        if plan is not None and plan.name == sym and sym in modules:
            kernel = _kernel(pipe, plan, lambda sym=sym: modules[sym], background, time.perf_counter())
            if kernel is not None:
                kernels[sym] = kernel
    return kernels


def _pipelines(module: ModuleOp) -> list[VectorizedPipelineOp]:
    return [op for op in module.walk() if isinstance(op, VectorizedPipelineOp)]


def _kernel(
    pipe: VectorizedPipelineOp, plan: KernelPlan, lowered: Callable[[], ModuleOp], background: bool, t0: float
) -> Kernel | None:
    """The pipeline's kernel: already loaded, loaded from the kernel cache, or built from its kernel module
    (`lowered()`), on the compile thread when `background`; None if it failed to build (logged). In the
    background even the kernel-cache lookup: its key names the host's CPU and LLVM, which costs llvmlite's import
    and loading LLVM (~50-150 ms), work the script's first statement need not wait for."""
    known = _KERNELS.get(plan.name)
    if known is not None:
        return known

    def build() -> NativeKernel:
        key = jit.object_key(plan.text)
        obj = jit.cached(key)
        if obj is not None:
            try:
                return _install(pipe, plan, key, obj, "loaded", t0)
            except BadObjectCode as e:  # a cache entry with a valid hash but wrong code: drop it, recompile
                log("dropped", str(e).replace(" ", "_")[:200], 0.0)
                jit.drop(key)
        t1 = time.perf_counter()
        code = jit.compile_module(lowered())
        jit.store(key, code)
        return _install(pipe, plan, key, code, "compiled", t1)

    if not background:
        try:
            return build()
        except Exception as e:  # noqa: BLE001 - the Python body is always a correct fallback
            log_error(e)
            return None
    pending = _KERNELS[plan.name] = PendingKernel(plan.name, jit.submit(build), log_error)
    return pending


def _install(pipe: VectorizedPipelineOp, plan: KernelPlan, key: str, obj: bytes, event: str, t0: float) -> NativeKernel:
    """Load object code and wrap its entries for the executor (`native_wrapper`)."""
    kernel = make_kernel(pipe, plan, jit.load(key, obj, entry_symbols(plan)), key)
    _KERNELS[plan.name] = kernel
    log(event, plan.name, time.perf_counter() - t0)
    return kernel


def lower_pipeline(pipe: VectorizedPipelineOp, plan: KernelPlan, pm: PassManager) -> ModuleOp:
    """The pipeline's kernel module, as the kernel stages produce it from a copy of the pipeline in a module of its
    own (the pipeline itself is read only: this runs on the compile thread while host code is generated)."""
    module = _pipeline_module(pipe)
    PassManager(pm.ctx, options=pm.options, pass_args=pm.pass_args).run_stages(module, KERNEL_STAGES)
    found = [m for m in module.ops if isinstance(m, ModuleOp) and m.sym_name is not None]
    if len(found) != 1 or found[0].sym_name.data != plan.name:  # type: ignore[union-attr]
        raise RuntimeError(f"the kernel stages did not produce the kernel module @{plan.name}")
    return found[0]


def _pipeline_module(pipe: VectorizedPipelineOp) -> ModuleOp:
    """`module { func.func @pipeline(<the pipeline's operands>) { <a copy of the pipeline> } }` (the same operand
    types and names, so the copy's IR, hence its kernel's name, is the pipeline's)."""
    operands = list(dict.fromkeys(pipe.operands))
    block = Block(arg_types=[v.type for v in operands])
    mapping: dict[SSAValue, SSAValue] = {}
    for v, arg in zip(operands, block.args):
        arg.name_hint = v.name_hint
        mapping[v] = arg
    block.add_ops([pipe.clone(value_mapper=mapping), func.ReturnOp()])
    return ModuleOp([func.FuncOp("pipeline", ([a.type for a in block.args], []), Region(block))])
