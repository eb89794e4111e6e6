"""Native kernels of a compiled module: every pipeline and product planned once, lowered, compiled and loaded.

    compile_kernels(module, pm) -> {kernel symbol: NativeKernel | PendingKernel}

Each vectorized pipeline is planned once (`compiler.lowering.kernel_plan`): the plan names the pipeline's kernel
module `@vp_<hash>` on the pipeline (`daphne.native_kernel`), host code (`compiler.host.generator`) binds the kernel by
that symbol, and the same plan is what the kernel is lowered from (`lower-pipeline-to-loops`, then
`convert-to-llvm`: xDSL's llvm dialect) and what its object code is cached under (`compiler.backend.jit`,
`runtime.native_code`). With `--codegen`, every dense `daphne.matMul` outside pipelines is planned and built the
same way (`lower-matmul-to-loops`, `@mm_<hash>`); its kernel runs through runtime/kernels/native_matmul.py, with
the product's runtime kernel (BLAS) as the fallback. A kernel is lowered in one of two ways, from the same plan
and with the same passes, hence to the same kernel module:

- in the module itself when `--explain` prints the `kernels` or `llvm` slot: the kernel stages
  (`compiler.pipeline.KERNEL_STAGES`) run on the module with these plans, so the printed IR is the IR the JIT
  compiles;
- otherwise alone, on the JIT's background thread, because lowering costs start-up time (xDSL builds and converts
  the loops, ~10-40 ms per pipeline, plus its imports): the planning happens in the foreground (a millisecond);
  if the kernel cache holds the kernel's object code (keyed by its IR before lowering and the host's CPU and
  LLVM) it is loaded and nothing is lowered at all, else its kernel module is built from the plan, converted to
  the llvm dialect and compiled. The pipeline's first run waits for its kernel (`PendingKernel`);
  `DAPHNEC_FOREGROUND_JIT=1` builds or loads every kernel before the script starts.

A kernel that fails to build (a lowering bug, an LLVM error) is logged (`DAPHNEC_JIT_LOG`) and its pipeline keeps
its Python body (a product its runtime kernel), as do pipelines without a lowering (`fallback` lines) and every
pipeline with `DAPHNEC_NO_NATIVE=1`.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import ModuleOp

from daphnec.compiler.backend import jit
from daphnec.compiler.backend.wrapper import entry_symbols, make_kernel
from daphnec.compiler.lowering import abi
from daphnec.compiler.lowering.kernel_plan import KernelPlan, plan_pipelines
from daphnec.compiler.passes import ALL_PASSES
from daphnec.compiler.pipeline import KERNEL_SLOTS, KERNEL_STAGES, PassManager
from daphnec.dialects.errors import DaphneError
from daphnec.dialects.ops_matrix import MatMulOp
from daphnec.dialects.ops_pipeline import VectorizedPipelineOp
from daphnec.dialects.value_types import DTYPES
from daphnec.runtime import native_code
from daphnec.runtime.kernels.native_matmul import matmul_factory
from daphnec.runtime.native_code import log, log_error
from daphnec.runtime.vectorized.kernel import EntryPoint, NativeKernel, PendingKernel

if TYPE_CHECKING:
    from xdsl.passes import ModulePass

    from daphnec.compiler.lowering.lower_matmul_to_loops import MatMulSettings
    from daphnec.compiler.lowering.matmul_loops import MatMulKernel

# The lowering modules (compiler/lowering/lower_*_to_loops.py, matmul_loops.py) are imported only where a kernel
# is lowered or a product planned: they import xDSL's llvm, arith, vector, math and memref dialects, ~0.1-0.2 s
# that a run whose kernels all come from the kernel cache never needs.

Kernel = NativeKernel | PendingKernel

_KERNELS: dict[str, Kernel] = {}
"""Every kernel of this process by symbol (equal pipelines, also of other modules, share one)."""


@dataclass(frozen=True)
class KernelJob:
    """One native kernel to build, as planned: its name (the symbol on its ops), the text its object code is keyed
    by, its entry symbols, how to build its kernel module from the plan (before `convert-to-llvm`) and how to wrap
    its loaded code for the runtime (`make(object_key)`)."""

    name: str
    text: str
    symbols: list[str]
    kernel_module: Callable[[], ModuleOp]
    make: Callable[[str], NativeKernel]


@dataclass
class Plans:
    """Every pipeline's and product's plan (None: no kernel), made once by `plan_kernels`."""

    pipelines: dict[VectorizedPipelineOp, KernelPlan | None] = field(default_factory=dict)
    products: dict[MatMulOp, MatMulKernel | None] = field(default_factory=dict)

    def jobs(self) -> list[KernelJob]:
        """One job per distinct kernel, in the order of the ops."""
        jobs: dict[str, KernelJob] = {}
        for pipe, plan in self.pipelines.items():
            if plan is not None and plan.name not in jobs:
                jobs[plan.name] = _pipeline_job(pipe, plan)
        for spec in self.products.values():
            if spec is not None and spec.name not in jobs:
                jobs[spec.name] = _matmul_job(spec)
        return list(jobs.values())


def plan_kernels(module: ModuleOp, pm: PassManager) -> Plans:
    """Plan every pipeline (with the `native` option) and, with `native_matmul` (`--codegen`), every product
    outside pipelines, naming each kernel on its op (or saying why there is none)."""
    plans = Plans()
    if "native" in pm.options:
        plans.pipelines = plan_pipelines(module)
    if "native_matmul" in pm.options:
        from daphnec.compiler.lowering import lower_matmul_to_loops as matmul

        plans.products = matmul.plan_products(module, _settings(pm))
    for op in [*plans.pipelines, *plans.products]:
        why = abi.fallback_reason(op)
        if why is not None:
            log("fallback", why.replace(" ", "_"), 0.0)
    return plans


def compile_kernels(module: ModuleOp, pm: PassManager) -> dict[str, Kernel]:
    """Plan, lower and build the module's kernels (see the module docstring); host code finds them by the symbols
    the plans wrote on the ops."""
    background = os.environ.get("DAPHNEC_FOREGROUND_JIT") != "1"
    plans = plan_kernels(module, pm)
    jobs = plans.jobs()
    if pm.explain & KERNEL_SLOTS:
        try:
            pm.run_stages(module, KERNEL_STAGES, passes=_planned_passes(plans, pm))
        except DaphneError:
            raise
        except Exception as e:  # noqa: BLE001 - a lowering bug: every pipeline keeps its Python body
            log_error(e)
            return {}
        lowered = {m.sym_name.data: m for m in module.ops if isinstance(m, ModuleOp) and m.sym_name is not None}
        built = ((job, functools.partial(lowered.__getitem__, job.name)) for job in jobs if job.name in lowered)
    else:
        built = ((job, functools.partial(lower_alone, job, pm)) for job in jobs)
    kernels: dict[str, Kernel] = {}
    for job, lower in built:
        kernel = _kernel(job, lower, background, time.perf_counter())
        if kernel is not None:
            kernels[job.name] = kernel
    return kernels


def lower_alone(job: KernelJob, pm: PassManager) -> ModuleOp:
    """The job's kernel module in the llvm dialect, built from its plan in a module of its own: what the kernel
    stages make of it in the whole module (`convert-to-llvm` is the same pass, verified the same way). Reads the
    planned op only: this runs on the compile thread while host code is generated."""
    kernel_module = job.kernel_module()
    PassManager(pm.ctx).run_pass(ModuleOp([kernel_module]), ALL_PASSES["convert-to-llvm"]())
    return kernel_module


def _settings(pm: PassManager) -> MatMulSettings:
    from daphnec.compiler.lowering import lower_matmul_to_loops as matmul

    return matmul.MatMulSettings(**pm.pass_args.get(matmul.LowerMatMulToLoopsPass.name, {}))  # type: ignore[arg-type]


def _planned_passes(plans: Plans, pm: PassManager) -> dict[str, ModulePass]:
    """The lowering passes of the kernel stages, given the plans (the products' pass also its `--matmul-*`
    settings, which it prints with)."""
    from daphnec.compiler.backend.planned_passes import PlannedPipelines, PlannedProducts

    settings = pm.pass_args.get(PlannedProducts.name, {})
    return {
        PlannedPipelines.name: PlannedPipelines(planned=plans.pipelines),
        PlannedProducts.name: PlannedProducts(**settings, planned=plans.products),  # type: ignore[arg-type]
    }


def _pipeline_kernel_module(pipe: VectorizedPipelineOp, plan: KernelPlan) -> ModuleOp:
    from daphnec.compiler.lowering.lower_pipeline_to_loops import kernel_module

    return kernel_module(pipe, plan)


def _pipeline_job(pipe: VectorizedPipelineOp, plan: KernelPlan) -> KernelJob:
    return KernelJob(
        plan.name,
        plan.text,
        entry_symbols(plan),
        functools.partial(_pipeline_kernel_module, pipe, plan),
        functools.partial(make_kernel, pipe, plan),
    )


def _matmul_job(spec: MatMulKernel) -> KernelJob:
    """A product's kernel (compiler/lowering/lower_matmul_to_loops.py), run by runtime/kernels/native_matmul.py."""
    from daphnec.compiler.lowering import lower_matmul_to_loops as matmul
    from daphnec.compiler.lowering.matmul_loops import kernel_params

    symbol = spec.name + abi.ENTRY_SUFFIX
    kinds = tuple(p.kind for p in kernel_params(spec.vt))
    entry = EntryPoint("entry", symbol, abi.STATUS.ctype, tuple(abi.ctypes_types(kinds)))
    factory = functools.partial(matmul_factory, dtype=DTYPES[spec.vt], transa=spec.transa, transb=spec.transb)
    make = functools.partial(NativeKernel, spec.name, entries=(entry,), make=factory)
    return KernelJob(spec.name, matmul.kernel_text(spec), [symbol], functools.partial(matmul.kernel_module, spec), make)


def _kernel(job: KernelJob, lower: Callable[[], ModuleOp], background: bool, t0: float) -> Kernel | None:
    """The kernel: already made, loaded from the kernel cache, or compiled from its kernel module (`lower()`), on
    the compile thread when `background`; None if it failed to build (logged). In the background even the
    kernel-cache lookup: its key names the host's CPU and LLVM, which costs llvmlite's import and loading LLVM
    (~50-150 ms), work the script's first statement need not wait for."""
    known = _KERNELS.get(job.name)
    if known is not None:
        return known

    def build() -> NativeKernel:
        t_build = time.perf_counter()  # queued since t0 (behind other kernels, or the GIL of a compiling thread)
        key = jit.object_key(job.text)
        started: list[float] = []

        def compile_object() -> bytes:
            started.append(time.perf_counter())
            return jit.compile_module(lower())

        native_code.obtain(key, job.symbols, compile_object)
        kernel = _KERNELS[job.name] = job.make(key)
        done = time.perf_counter()
        log("compiled" if started else "loaded", job.name, done - (started[0] if started else t_build), t_build - t0)
        return kernel

    if not background:
        try:
            return build()
        except Exception as e:  # noqa: BLE001 - the Python body (or runtime kernel) is always a correct fallback
            log_error(e)
            return None
    pending = _KERNELS[job.name] = PendingKernel(job.name, jit.submit(build), log_error)
    return pending


__all__ = ["KernelJob", "Plans", "compile_kernels", "lower_alone", "plan_kernels"]
