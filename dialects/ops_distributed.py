"""The distributed pipeline of the `daphne` dialect (DAPHNE's DistributedPipelineOp, `--distributed`).

`compiler/passes/distribute.py` turns every `daphne.vectorizedPipeline` into this op. It has no region: the
computation travels as IR text (property `ir`), a standalone module whose `func.func @dist` takes the pipeline's
inputs and runs them through the pipeline. The coordinator (`runtime/distributed/coordinator.py`) ships that text
to the MPI workers, which parse and compile it once per text and run their share of the rows; `splits` and
`combines` tell the coordinator how to partition the inputs and combine the workers' results (same encoding as
`daphne.vectorizedPipeline`: splits NONE 0 / ROWS 1, combines ROWS 1 / COLS 2 / ADD 3 / MIN 4 / MAX 5).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import ArrayAttr, IntAttr, StringAttr
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import IRDLOperation, irdl_op_definition, prop_def, traits_def, var_operand_def, var_result_def
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from daphnec.dialects.ops_pipeline import SplitsAndCombines

DIST_FUNCTION = "dist"
"""The symbol of the shipped function (DAPHNE's DistributePipelinesPass names it `dist` too)."""


@irdl_op_definition
class DistributedPipelineOp(SplitsAndCombines, IRDLOperation):
    """`daphne.distributedPipeline`: a vectorized pipeline whose row blocks run on MPI workers.

    Pure: the shipped computation only reads its inputs, so an unused distributed pipeline may be removed.
    """

    name = "daphne.distributedPipeline"
    inputs = var_operand_def()
    outs = var_result_def()
    ir = prop_def(StringAttr)
    splits = prop_def(ArrayAttr[IntAttr])
    combines = prop_def(ArrayAttr[IntAttr])
    traits = traits_def(Pure())

    def __init__(
        self,
        inputs: Sequence[SSAValue],
        splits: Sequence[int],
        result_types: Sequence[Attribute],
        combines: Sequence[int],
        ir: str,
    ):
        super().__init__(
            operands=[inputs],
            result_types=[result_types],
            properties={
                "ir": StringAttr(ir),
                "splits": ArrayAttr([IntAttr(int(s)) for s in splits]),
                "combines": ArrayAttr([IntAttr(int(c)) for c in combines]),
            },
        )

    @property
    def ir_text(self) -> str:
        return self.ir.data

    def verify_(self) -> None:
        self.verify_modes()
        if f'sym_name = "{DIST_FUNCTION}"' not in self.ir_text:
            raise VerifyException(f"daphne.distributedPipeline: the shipped IR must define func.func @{DIST_FUNCTION}")


OPS: list[type[Operation]] = [DistributedPipelineOp]
