"""`codegen` (`--codegen`): DAPHNE's code generation pipeline (doc/Codegen.md) on daphnec's native lowering.

DAPHNE's `--codegen` lowers element-wise ops, aggregations, transposes and matrix products to loops compiled to
native code instead of calling their precompiled kernels. daphnec does the same with the lowering it already has
for vectorized pipelines (`lower-pipeline-to-loops`, `convert-to-llvm`, the JIT): this pass fuses chains of those
ops outside vectorized pipelines (the `vectorize` pass's rule, compiler/passes/vectorize.py) into pipelines marked
`daphne.codegen`, which the kernel stages compile to native kernels and the runtime runs as one call on the
calling thread, as DAPHNE's generated code runs. Matrix products run BLAS between the fused native loops (a
kernel's `opaque` ops), which is faster than the loop nests DAPHNE generates, so the `--matmul-*` tuning flags
have nothing to tune. Results are bit-identical to the kernels' (the native lowering's contract).

With `--vec` the `vectorize` pass has fused these ops already; the ones it left (outside loops it could not fuse)
are fused here.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, UnitAttr
from xdsl.passes import ModulePass

from daphnec.compiler.passes.vectorize import vectorize_block
from daphnec.dialects.ops_pipeline import VectorizedPipelineOp

CODEGEN_ATTR = "daphne.codegen"
"""Marks a pipeline made by this pass: the runtime runs it as one call on the calling thread."""


@dataclass(frozen=True)
class CodegenPass(ModulePass):
    name = "codegen"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        before = {p for p in op.walk() if isinstance(p, VectorizedPipelineOp)}
        for f in op.ops:
            for region in f.regions:
                for block in region.blocks:
                    vectorize_block(block)
        for p in op.walk():
            if isinstance(p, VectorizedPipelineOp) and p not in before:
                p.attributes[CODEGEN_ATTR] = UnitAttr()
