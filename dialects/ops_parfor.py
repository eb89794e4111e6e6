"""`parfor`: the parallel loop of the `daphne` dialect and the two ops its MPI execution ships to workers.

`daphne.parfor` is an `scf.for` (a subclass: every pass that knows loops, type inference, sparsity estimates,
representation selection, memory effects, free values, host code, treats it as the loop it is, so its results are
by construction those of the `for` the script would be without the `par`) whose iterations the runtime may run in
any order and at once. What makes that legal is checked by the `parfor` pass (compiler/passes/parfor.py), not here:
the verifier checks only what every `daphne.parfor` must have whatever its body does (the loop runs
`%k = 0 to %count step 1`, and `variables` names each carried value after the DaphneDSL variable it holds, for the
pass's messages). docs/language.md "Parallel loops" is the user's view.

With `--distributed` a parfor runs over MPI ranks: the `parfor` pass ships a standalone `func.func @dist` that runs
the iterations of one chunk (`daphne.parforChunk` turns the chunk's block of iteration numbers into loop bounds)
and returns what the chunk wrote (`daphne.parforDelta`); the coordinator hands chunks to ranks with the configured
partitioning scheme (runtime/parfor.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects import scf
from xdsl.dialects.builtin import ArrayAttr, IndexType, IntegerAttr, StringAttr
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.irdl import (
    VarConstraint,
    base,
    irdl_op_definition,
    operand_def,
    opt_attr_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import Pure, RecursiveMemoryEffect, SingleBlockImplicitTerminator
from xdsl.utils.exceptions import VerifyException

from daphnec.dialects.constraints import MATRIX
from daphnec.dialects.ops import DaphneOp
from daphnec.dialects.types import INDEX, SI64, MatrixType, is_matrix


@irdl_op_definition
class ParForOp(scf.ForOp):
    """`daphne.parfor %k = %zero to %count step %one iter_args(...)`: DaphneDSL's `parfor (i in a:b[:s])`.

    Built like `for`: `daphne.forRange` gives the trip count, the body computes `i = a + k * s`, and the carried
    values are the outer variables the body assigns (for a valid parfor: result matrices written at positions
    given by `i`). The attribute `variables` holds their DaphneDSL names."""

    name = "daphne.parfor"

    T: ClassVar = VarConstraint("T", base(IndexType))
    lb = operand_def(T)
    ub = operand_def(T)
    step = operand_def(T)
    iter_args = var_operand_def()
    res = var_result_def()
    body = region_def("single_block")
    variables = opt_attr_def(ArrayAttr[StringAttr])
    traits = traits_def(SingleBlockImplicitTerminator(scf.YieldOp), RecursiveMemoryEffect())

    def __init__(
        self,
        lb: SSAValue,
        ub: SSAValue,
        step: SSAValue,
        iter_args: Sequence[SSAValue],
        body: Region | Block,
        variables: Sequence[str] = (),
    ):
        super().__init__(lb, ub, step, iter_args, body)
        if variables:
            self.attributes["variables"] = ArrayAttr([StringAttr(v) for v in variables])

    @property
    def variable_names(self) -> list[str]:
        """The DaphneDSL name of each carried value (`%k`'s position when the attribute is missing)."""
        if self.variables is None:
            return [f"#{j}" for j in range(len(self.iter_args))]
        return [s.data for s in self.variables.data]

    def verify_(self) -> None:
        block = self.body.block
        if not block.args or block.args[0].type != IndexType():
            raise VerifyException("daphne.parfor: the body's first argument must be the index %k")
        carried = block.args[1:]
        if len(carried) != len(self.iter_args) or len(self.res) != len(self.iter_args):
            raise VerifyException("daphne.parfor: one body argument and one result per carried value")
        for a, v, r in zip(carried, self.iter_args, self.res):
            if a.type != v.type or r.type != v.type:
                raise VerifyException("daphne.parfor: a carried value keeps its type through the body")
        y = block.last_op
        if not isinstance(y, scf.YieldOp) or len(y.arguments) != len(self.iter_args):
            raise VerifyException("daphne.parfor: the body must yield every carried value")
        for a, v in zip(y.arguments, self.iter_args):
            if a.type != v.type:
                raise VerifyException("daphne.parfor: a carried value keeps its type through the body")
        if self.variables is not None and len(self.variables.data) != len(self.iter_args):
            raise VerifyException("daphne.parfor: 'variables' names every carried value")
        step = self.step.owner
        value = getattr(step, "value", None)
        if isinstance(value, IntegerAttr) and value.value.data != 1:
            raise VerifyException("daphne.parfor: the loop counts %k by 1 (the body computes i from %k)")


@irdl_op_definition
class ParForChunkOp(DaphneOp):
    """The loop bounds of one MPI task of a distributed parfor: its block of iteration numbers `%k` (one
    column, consecutive, as the coordinator split them by rows) as `[first, first + rows)`."""

    name = "daphne.parforChunk"
    ks = operand_def(MATRIX)
    lo = result_def(INDEX)
    hi = result_def(INDEX)
    traits = traits_def(Pure())

    def __init__(self, ks: SSAValue):
        super().__init__(operands=[ks], result_types=[INDEX, INDEX])

    def infer(self) -> tuple[Attribute, ...]:
        return (INDEX, INDEX)


@irdl_op_definition
class ParForDeltaOp(DaphneOp):
    """What one MPI task of a distributed parfor wrote into a result matrix: the flat positions (si64 column) and
    values (a column of the result's value type) of the cells of `final` whose bits differ from `init`. Every cell
    is written by at most one iteration, so the coordinator rebuilds the result exactly from `init` and every
    task's delta, in any order."""

    name = "daphne.parforDelta"
    final = operand_def(MATRIX)
    init = operand_def(MATRIX)
    positions = result_def(MATRIX)
    values = result_def(MATRIX)
    traits = traits_def(Pure())

    def __init__(self, final: SSAValue, init: SSAValue):
        super().__init__(operands=[final, init], result_types=list(self.types_for(final.type)))

    @staticmethod
    def types_for(t: Attribute) -> tuple[MatrixType, MatrixType]:
        vt = t.element_type if is_matrix(t) else SI64  # type: ignore[attr-defined]
        return MatrixType(SI64, -1, 1), MatrixType(vt, -1, 1)

    def infer(self) -> tuple[Attribute, ...]:
        return self.types_for(self.final.type)


OPS = [ParForOp, ParForChunkOp, ParForDeltaOp]
