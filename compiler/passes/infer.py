"""`infer`: value-type and shape inference (DAPHNE's InferencePass), leaving untyped functions generic."""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from daphnec.compiler.analysis.inference import infer_module


@dataclass(frozen=True)
class InferPass(ModulePass):
    name = "infer"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        infer_module(op, specialize=False)
