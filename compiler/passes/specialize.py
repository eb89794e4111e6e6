"""`specialize`: clone untyped functions per call-site argument types and infer every body
(DAPHNE's SpecializeGenericFunctionsPass, which includes inference). Generic functions left uncalled are removed.
With `ipa` (DAPHNE's inter-procedural constant propagation, on unless `--no-ipa-const-propa`), constant file names
passed to functions that read files are inlined into their specializations."""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from daphnec.compiler.analysis.inference import infer_module


@dataclass(frozen=True)
class SpecializePass(ModulePass):
    name = "specialize"
    ipa: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        infer_module(op, specialize=True, ipa=self.ipa)
