"""The kernel stages give the same kernels however they run: as passes on the whole module (what `daphne-opt`
and `--explain=kernels,llvm` print) or per kernel from the backend's plans (how `daphnec` runs them, on the JIT's
compile thread); every pipeline is planned once; and host code finds the kernels by the symbols the plans write on
the pipelines."""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.dialects.builtin import ModuleOp

from daphnec.compiler.backend.native import compile_kernels, lower_alone, plan_kernels
from daphnec.compiler.lowering import kernel_plan
from daphnec.compiler.lowering.abi import kernel_symbol
from daphnec.compiler.pipeline import HOST_STAGES, KERNEL_STAGES, PassManager, module_text
from daphnec.dialects import make_context
from daphnec.dialects.attr_names import NATIVE_FALLBACK_ATTR
from daphnec.dialects.ops_pipeline import VectorizedPipelineOp
from daphnec.runtime.config import DaphneConfig
from daphnec.runtime.vectorized.kernel import NativeKernel, PendingKernel
from daphnec.tools.driver import parse_to_ir

FIVE = Path(__file__).parent / "scripts" / "five_pipelines.daph"
STAGED = "X = rand(100, 4, 0.0, 1.0, 1.0, 1);\nW = rand(4, 3, 0.0, 1.0, 1.0, 2);\nprint(sum(exp(X * 2.0 - 1.0) @ W));\n"
CSR = (
    "G = rand(1000, 1000, 1.0, 1.0, 0.01, 7);\nc = seq(1.0, 1000.0, 1.0);\nu = aggMax(G * t(c), 0);\n"
    "print(u[0:3, ]);\nprint(sum(G));\n"
)
FALLBACK = 'X = rand(40, 5, 0.0, 1.0, 1.0, 1);\nS = as.matrix<str>(X);\nprint((S + "x")[0:1, 0:1]);\n'


def host_module(tmp_path: Path, source: str | None) -> tuple[ModuleOp, PassManager]:
    script = FIVE
    if source is not None:
        script = tmp_path / "s.daph"
        script.write_text(source)
    cfg = DaphneConfig()
    cfg.use_vectorized_exec = True
    cfg.vec_min_cells = 0  # small test matrices: the cost model would keep them plain
    cfg.select_matrix_repr = True
    module = parse_to_ir(str(script), {}, cfg)
    pm = PassManager.for_config(make_context(), cfg)
    pm.run_stages(module, HOST_STAGES)
    return module, pm


def pipelines(module: ModuleOp) -> list[VectorizedPipelineOp]:
    return [op for op in module.walk() if isinstance(op, VectorizedPipelineOp)]


@pytest.mark.parametrize("source", [None, STAGED, CSR], ids=["five", "staged", "csr"])
def test_per_pipeline_lowering_is_the_module_lowering(tmp_path: Path, source: str | None) -> None:
    module, pm = host_module(tmp_path, source)
    jobs = plan_kernels(module, pm).jobs()
    per_pipeline = {job.name: module_text(lower_alone(job, pm)) for job in jobs}
    pm.run_stages(module, KERNEL_STAGES)  # the passes plan for themselves (as in daphne-opt)
    whole = {m.sym_name.data: module_text(m) for m in module.ops if isinstance(m, ModuleOp) and m.sym_name}
    assert per_pipeline and per_pipeline == whole
    assert {kernel_symbol(p) for p in pipelines(module)} == set(whole)


def test_kernels_are_found_by_the_symbols_on_the_pipelines(tmp_path: Path) -> None:
    module, pm = host_module(tmp_path, None)
    kernels = compile_kernels(module, pm)
    symbols = [kernel_symbol(p) for p in pipelines(module)]
    assert len(symbols) == 5 and set(symbols) == set(kernels)
    assert all(isinstance(k, (NativeKernel, PendingKernel)) for k in kernels.values())
    assert not any(isinstance(op, ModuleOp) for op in module.ops)  # lowered on copies: the module keeps no kernels


def test_a_pipeline_without_lowering_says_why(tmp_path: Path) -> None:
    module, pm = host_module(tmp_path, FALLBACK)
    assert compile_kernels(module, pm) == {}
    (pipe,) = pipelines(module)
    assert kernel_symbol(pipe) is None
    assert pipe.attributes[NATIVE_FALLBACK_ATTR].data == "fallback: input 0 is a matrix of value type str"  # type: ignore[attr-defined]


def test_each_pipeline_is_planned_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Building the kernels plans each pipeline once, also when `--explain` prints the kernel stages (which then
    run with the backend's plans); the printed kernel modules are the ones the JIT compiles."""
    planned: list[VectorizedPipelineOp] = []
    real = kernel_plan.plan_pipeline

    def counting(op: VectorizedPipelineOp) -> kernel_plan.KernelPlan:
        planned.append(op)
        return real(op)

    monkeypatch.setattr(kernel_plan, "plan_pipeline", counting)
    for explain in (frozenset(), frozenset({"kernels", "llvm"})):
        module, pm = host_module(tmp_path, None)
        pm.explain = explain
        pm.out = (tmp_path / "explain.txt").open("w")
        kernels = compile_kernels(module, pm)
        pm.out.close()
        assert len(kernels) == 5 and sorted(map(id, planned)) == sorted(map(id, pipelines(module)))
        planned.clear()
    printed = (tmp_path / "explain.txt").read_text()
    assert printed.count("IR after kernel lowering:") == 1 and printed.count("IR after llvm lowering:") == 1
    assert all(f"@{sym}" in printed for sym in kernels)
