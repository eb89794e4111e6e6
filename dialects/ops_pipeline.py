"""The vectorized pipeline of the `daphne` dialect: fused row-wise computations (DAPHNE's VectorizedPipelineOp).

A pipeline's region is a standalone computation over row blocks: every input is split by rows (`ROWS`) or passed
whole (`NONE`, broadcast), and every result is combined from the per-block results by rows (`ROWS`), by columns
(`COLS`, for transposes), or by element-wise `ADD`/`MIN`/`MAX` (for aggregations). The body refers to nothing
outside itself (constants are cloned in), so it can be printed as text, shipped and compiled elsewhere.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import ArrayAttr, IntAttr
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    prop_def,
    region_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import HasParent, IsTerminator, Pure, RecursiveMemoryEffect
from xdsl.utils.exceptions import VerifyException

from daphnec.dialects.types import is_matrix
from daphnec.dialects.value_types import Combine, Split


class SplitsAndCombines:
    """What the vectorized and the distributed pipeline share: the split of every input and the combine of every
    result (properties `splits` and `combines`), and their verification. A plain mixin without annotations: IRDL
    reads every annotated field of an op class as a definition."""

    @property
    def split_modes(self) -> list[int]:
        return [a.data for a in self.splits.data]  # type: ignore[attr-defined]

    @property
    def combine_modes(self) -> list[int]:
        return [a.data for a in self.combines.data]  # type: ignore[attr-defined]

    def verify_modes(self) -> None:
        name, inputs = self.name, self.inputs  # type: ignore[attr-defined]
        if len(self.split_modes) != len(inputs):
            raise VerifyException(f"{name}: one split per input is required")
        if len(self.combine_modes) != len(self.outs):  # type: ignore[attr-defined]
            raise VerifyException(f"{name}: one combine per result is required")
        if not set(self.split_modes) <= set(Split) or not set(self.combine_modes) <= set(Combine):
            raise VerifyException(f"{name}: unknown split or combine mode")
        for v, s in zip(inputs, self.split_modes):
            if s == Split.ROWS and not is_matrix(v.type):
                raise VerifyException(f"{name}: only matrices can be split by rows")


@irdl_op_definition
class VectorizedPipelineOp(SplitsAndCombines, IRDLOperation):
    """`daphne.vectorizedPipeline`: fused ops over row blocks of its ROWS inputs.

    `splits[i]` is the split of input i (0 NONE, 1 ROWS); `combines[j]` the combine of result j (1 ROWS, 2 COLS,
    3 ADD, 4 MIN, 5 MAX) — DAPHNE's enum values (DaphneVectorizableOpInterface.td).
    """

    name = "daphne.vectorizedPipeline"
    inputs = var_operand_def()
    outs = var_result_def()
    splits = prop_def(ArrayAttr[IntAttr])
    combines = prop_def(ArrayAttr[IntAttr])
    body = region_def("single_block")
    traits = traits_def(RecursiveMemoryEffect())

    def __init__(
        self,
        inputs: Sequence[SSAValue],
        splits: Sequence[int],
        result_types: Sequence[Attribute],
        combines: Sequence[int],
        body: Block,
    ):
        super().__init__(
            operands=[inputs],
            result_types=[result_types],
            properties={
                "splits": ArrayAttr([IntAttr(int(s)) for s in splits]),
                "combines": ArrayAttr([IntAttr(int(c)) for c in combines]),
            },
            regions=[Region(body)],
        )

    def verify_(self) -> None:
        self.verify_modes()
        block = self.body.block
        if len(block.args) != len(self.inputs):
            raise VerifyException("daphne.vectorizedPipeline: the body takes one argument per input")
        term = block.last_op
        if not isinstance(term, PipelineReturnOp) or len(term.operands) != len(self.outs):
            raise VerifyException("daphne.vectorizedPipeline: the body must end in daphne.return of every result")
        for op in block.walk():
            for v in op.operands:
                owner = v.owner
                inside = (
                    owner is block
                    or (isinstance(owner, Operation) and self.is_ancestor(owner))
                    or (isinstance(owner, Block) and self.is_ancestor(owner.parent_op() or self))
                )
                if not inside:
                    raise VerifyException("daphne.vectorizedPipeline: the body uses a value defined outside it")


@irdl_op_definition
class PipelineReturnOp(IRDLOperation):
    """`daphne.return`: the per-block results of a vectorized pipeline's body."""

    name = "daphne.return"
    values = var_operand_def()
    traits = traits_def(IsTerminator(), HasParent(VectorizedPipelineOp), Pure())

    def __init__(self, *values: SSAValue):
        super().__init__(operands=[values])


OPS: list[type[Operation]] = [VectorizedPipelineOp, PipelineReturnOp]
