"""The kernel stages give the same kernels however they run: on the whole module (what `--explain=kernels,llvm`
prints) or per pipeline on a copy (how `daphnec` runs them, on the JIT's compile thread); and host code finds the
kernels by the symbols the stages write on the pipelines."""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.dialects.builtin import ModuleOp

from daphnec.compiler.lowering.abi import kernel_symbol
from daphnec.compiler.lowering.kernel_plan import try_plan
from daphnec.compiler.native import compile_kernels, lower_pipeline
from daphnec.compiler.pipeline import HOST_STAGES, KERNEL_STAGES, PassManager, module_text, options_from_config
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
    cfg.select_matrix_repr = True
    module = parse_to_ir(str(script), {}, cfg)
    pm = PassManager(make_context(), options=options_from_config(cfg))
    pm.run_stages(module, HOST_STAGES)
    return module, pm


def pipelines(module: ModuleOp) -> list[VectorizedPipelineOp]:
    return [op for op in module.walk() if isinstance(op, VectorizedPipelineOp)]


@pytest.mark.parametrize("source", [None, STAGED, CSR], ids=["five", "staged", "csr"])
def test_per_pipeline_lowering_is_the_module_lowering(tmp_path: Path, source: str | None) -> None:
    module, pm = host_module(tmp_path, source)
    per_pipeline = {}
    for pipe in pipelines(module):
        plan, why = try_plan(pipe)
        assert plan is not None, why
        per_pipeline[plan.name] = module_text(lower_pipeline(pipe, plan, pm))
    pm.run_stages(module, KERNEL_STAGES)
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
