"""placeholder"""
from dataclasses import dataclass
from xdsl.passes import ModulePass

@dataclass(frozen=True)
class FuseXOncePass(ModulePass):
    name = "fuse-x-once"

    def apply(self, ctx, op):
        pass
