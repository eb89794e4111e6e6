"""The kernel stages' lowering passes with the plans the native backend made (`compiler.backend.native`): used
only when `--explain` prints the `kernels` or `llvm` slot, so that the printed IR is the IR the JIT compiles. A
module of its own because it subclasses the lowering passes, whose imports a run without lowering never pays."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from xdsl.dialects.builtin import ModuleOp

from daphnec.compiler.lowering import lower_matmul_to_loops as matmul
from daphnec.compiler.lowering import lower_pipeline_to_loops as pipelines
from daphnec.compiler.lowering.kernel_plan import KernelPlan
from daphnec.compiler.lowering.matmul_loops import MatMulKernel
from daphnec.dialects.ops_matrix import MatMulOp
from daphnec.dialects.ops_pipeline import VectorizedPipelineOp


@dataclass(frozen=True)
class PlannedPipelines(pipelines.LowerPipelineToLoopsPass):
    """`lower-pipeline-to-loops` with the plans the backend made."""

    planned: Mapping[VectorizedPipelineOp, KernelPlan | None] = field(default_factory=dict)

    def plans(self, op: ModuleOp) -> pipelines.PipelinePlans:
        return self.planned


@dataclass(frozen=True)
class PlannedProducts(matmul.LowerMatMulToLoopsPass):
    """`lower-matmul-to-loops` with the plans the backend made."""

    planned: Mapping[MatMulOp, MatMulKernel | None] = field(default_factory=dict)

    def plans(self, op: ModuleOp) -> matmul.ProductPlans:
        return self.planned
