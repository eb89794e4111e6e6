"""`dce`: remove side-effect-free ops whose results are unused (xDSL's liveness-based DCE over every region).

daphne ops with effects (`print`, `stop`, `randMatrix`, `now`) carry no `Pure` trait, so they always stay."""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.transforms.dead_code_elimination import region_dce


@dataclass(frozen=True)
class DcePass(ModulePass):
    name = "dce"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        region_dce(op.body)
