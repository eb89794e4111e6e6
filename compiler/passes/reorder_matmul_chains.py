"""placeholder"""
from dataclasses import dataclass
from xdsl.passes import ModulePass

@dataclass(frozen=True)
class ReorderMatMulChainsPass(ModulePass):
    name = "reorder-matmul-chains"

    def apply(self, ctx, op):
        pass
