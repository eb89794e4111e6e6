"""Native kernels of a compiled module: the kernel stages of the pass pipeline, then the JIT.

    compile_kernels(module, pm) -> {kernel symbol: NativeKernel | PendingKernel}

The kernel stages (`compiler.pipeline.KERNEL_STAGES`: `lower-pipeline-to-loops`, `convert-to-llvm`) give every
vectorized pipeline that lowers a kernel module `@vp_<hash>` in xDSL's llvm dialect and name it on the pipeline
(`daphne.native_kernel`); the JIT compiles each kernel module into one object and loads it, and host code
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

With `--codegen`, every dense `daphne.matMul` outside pipelines is handled the same way by
`lower-matmul-to-loops` (`@mm_<hash>`, named on the product); its kernel object runs through
runtime/kernels/native_matmul.py, with the product's runtime kernel (BLAS) as the fallback.

A kernel that fails to build (a lowering bug, an LLVM error) is logged (`DAPHNEC_JIT_LOG`) and its pipeline keeps
its Python body (a product its runtime kernel), as do pipelines without a lowering (`fallback` lines) and every
pipeline with `DAPHNEC_NO_NATIVE=1`.
"""

from __future__ import annotations

import ctypes
import functools
import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue

from daphnec.compiler import jit
from daphnec.compiler.ir_walk import preorder
from daphnec.compiler.lowering import abi
from daphnec.compiler.lowering.kernel_plan import KernelPlan, annotate, try_plan
from daphnec.compiler.lowering.lower_matmul_to_loops import (
    MatMulKernel,
    MatMulSettings,
    annotate_matmul,
    in_pipeline,
    kernel_text,
    plan_matmul,
)
from daphnec.compiler.lowering.matmul_loops import kernel_params
from daphnec.compiler.native_wrapper import entry_symbols, make_kernel
from daphnec.compiler.pipeline import KERNEL_SLOTS, KERNEL_STAGES, PassManager
from daphnec.dialects.errors import DaphneError
from daphnec.dialects.ops_matrix import MatMulOp
from daphnec.dialects.ops_pipeline import VectorizedPipelineOp
from daphnec.dialects.value_types import DTYPES
from daphnec.runtime.kernels.native_matmul import matmul_factory
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
        return _compile_lowered(module, background, _settings(pm))
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
        lowered = functools.partial(lower_pipeline, pipe, plan, pm)
        kernel = _kernel(_pipeline_build(pipe, plan, lowered), background, t0)
        if kernel is not None:
            kernels[plan.name] = kernel
    if "native_matmul" in pm.options:
        kernels.update(_matmul_kernels(module, pm, background))
    return kernels


def _matmul_kernels(module: ModuleOp, pm: PassManager, background: bool) -> dict[str, Kernel]:
    """`--codegen`: each dense product outside pipelines gets its native kernel (planned and named here, lowered
    like a pipeline's, see the module docstring)."""
    settings = _settings(pm)
    kernels: dict[str, Kernel] = {}
    for op in _matmuls(module):
        t0 = time.perf_counter()
        spec, why = plan_matmul(op, settings)
        annotate_matmul(op, spec, why)
        if spec is None:
            log("fallback", why.replace(" ", "_"), time.perf_counter() - t0)
            continue
        kernel = _kernel(_matmul_build(spec, functools.partial(lower_op, op, spec.name, pm)), background, t0)
        if kernel is not None:
            kernels[spec.name] = kernel
    return kernels


def _settings(pm: PassManager) -> MatMulSettings:
    return MatMulSettings(**pm.pass_args.get("lower-matmul-to-loops", {}))  # type: ignore[arg-type]


def _matmuls(module: ModuleOp) -> list[MatMulOp]:
    return [op for op in preorder(module) if isinstance(op, MatMulOp) and not in_pipeline(op)]


def _compile_lowered(module: ModuleOp, background: bool, settings: MatMulSettings) -> dict[str, Kernel]:
    """The kernels of a module the kernel stages ran on: each pipeline's (and, with `--codegen`, each product's)
    kernel module is in it."""
    modules = {m.sym_name.data: m for m in module.ops if isinstance(m, ModuleOp) and m.sym_name is not None}
    kernels: dict[str, Kernel] = {}
    for pipe in _pipelines(module):
        sym = abi.kernel_symbol(pipe)
        plan, _ = try_plan(pipe) if sym is not None else (None, "")
        if plan is not None and plan.name == sym and sym in modules:
            kernel = _kernel(_pipeline_build(pipe, plan, lambda sym=sym: modules[sym]), background, time.perf_counter())
            if kernel is not None:
                kernels[sym] = kernel
    for op in _matmuls(module):
        sym = abi.kernel_symbol(op)
        if sym is not None and sym in modules:
            spec, _ = plan_matmul(op, settings)
            if spec is not None and spec.name == sym:
                kernel = _kernel(_matmul_build(spec, lambda sym=sym: modules[sym]), background, time.perf_counter())
                if kernel is not None:
                    kernels[sym] = kernel
    return kernels


def _pipelines(module: ModuleOp) -> list[VectorizedPipelineOp]:
    return [op for op in preorder(module) if isinstance(op, VectorizedPipelineOp)]  # linear: compiler/ir_walk.py


@dataclass(frozen=True)
class _Build:
    """How to get one kernel: its name, the text its object code is cached under, its entry symbols, how to lower
    it (`lowered()`: its kernel module in the llvm dialect) and how to wrap its loaded entries (`make`)."""

    name: str
    text: str
    symbols: list[str]
    lowered: Callable[[], ModuleOp]
    make: Callable[[dict[str, int], str], NativeKernel]


def _pipeline_build(pipe: VectorizedPipelineOp, plan: KernelPlan, lowered: Callable[[], ModuleOp]) -> _Build:
    def make(addresses: dict[str, int], key: str) -> NativeKernel:
        return make_kernel(pipe, plan, addresses, key)

    return _Build(plan.name, plan.text, entry_symbols(plan), lowered, make)


def _matmul_build(spec: MatMulKernel, lowered: Callable[[], ModuleOp]) -> _Build:
    """A product's kernel (compiler/lowering/lower_matmul_to_loops.py), run by runtime/kernels/native_matmul.py."""
    symbol = spec.name + abi.ENTRY_SUFFIX
    kinds = tuple(p.kind for p in kernel_params(spec.vt))

    def make(addresses: dict[str, int], key: str) -> NativeKernel:
        entry = ctypes.CFUNCTYPE(abi.STATUS.ctype, *abi.ctypes_types(kinds))(addresses[symbol])
        factory = matmul_factory(entry, DTYPES[spec.vt], spec.transa, spec.transb)
        return NativeKernel(spec.name, factory, key, ((symbol, addresses[symbol]),))

    return _Build(spec.name, kernel_text(spec), [symbol], lowered, make)


def _kernel(b: _Build, background: bool, t0: float) -> Kernel | None:
    """The kernel: already loaded, loaded from the kernel cache, or built from its kernel module (`b.lowered()`),
    on the compile thread when `background`; None if it failed to build (logged). In the background even the
    kernel-cache lookup: its key names the host's CPU and LLVM, which costs llvmlite's import and loading LLVM
    (~50-150 ms), work the script's first statement need not wait for."""
    known = _KERNELS.get(b.name)
    if known is not None:
        return known

    def build() -> NativeKernel:
        key = jit.object_key(b.text)
        obj = jit.cached(key)
        if obj is not None:
            try:
                return _install(b, key, obj, "loaded", t0)
            except BadObjectCode as e:  # a cache entry with a valid hash but wrong code: drop it, recompile
                log("dropped", str(e).replace(" ", "_")[:200], 0.0)
                jit.drop(key)
        t1 = time.perf_counter()
        code = jit.compile_module(b.lowered())
        jit.store(key, code)
        return _install(b, key, code, "compiled", t1)

    if not background:
        try:
            return build()
        except Exception as e:  # noqa: BLE001 - the Python body (or runtime kernel) is always a correct fallback
            log_error(e)
            return None
    pending = _KERNELS[b.name] = PendingKernel(b.name, jit.submit(build), log_error)
    return pending


def _install(b: _Build, key: str, obj: bytes, event: str, t0: float) -> NativeKernel:
    """Load object code and wrap its entries for the runtime."""
    kernel = b.make(jit.load(key, obj, b.symbols), key)
    _KERNELS[b.name] = kernel
    log(event, b.name, time.perf_counter() - t0)
    return kernel


def lower_pipeline(pipe: VectorizedPipelineOp, plan: KernelPlan, pm: PassManager) -> ModuleOp:
    """The pipeline's kernel module, as the kernel stages produce it from a copy of the pipeline in a module of its
    own (the pipeline itself is read only: this runs on the compile thread while host code is generated)."""
    return lower_op(pipe, plan.name, pm)


def lower_op(op: Operation, name: str, pm: PassManager) -> ModuleOp:
    """The kernel module `@name` the kernel stages make of a copy of `op` in a module of its own."""
    module = _pipeline_module(op)
    PassManager(pm.ctx, options=pm.options, pass_args=pm.pass_args).run_stages(module, KERNEL_STAGES)
    found = [m for m in module.ops if isinstance(m, ModuleOp) and m.sym_name is not None]
    if len(found) != 1 or found[0].sym_name.data != name:  # type: ignore[union-attr]
        raise RuntimeError(f"the kernel stages did not produce the kernel module @{name}")
    return found[0]


def _pipeline_module(pipe: Operation) -> ModuleOp:
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
