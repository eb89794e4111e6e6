"""`select-matrix-repr`: choose dense or CSR for every matrix value (DAPHNE's SelectMatrixRepresentationsPass).

Runs with `--select-matrix-repr` at the `select_matrix_repr` explain slot. Every matrix result gets the compiler's
sparsity estimate in its type (`:sp[...]`, see compiler/analysis/sparsity.py) and, when the estimate is known and
below the threshold (`sparsity_threshold`, 0.25 by default), the sparse representation (`:rep[sparse]`): its kernel then
produces a CSR matrix at run time.

Where control flow merges values (loop-carried variables, if/else results) they must share one type: a merged value
keeps an estimate only if all incoming ones agree, and an incoming value of another type is converted by a cast
(DAPHNE reports an error instead when a loop body changes a variable's representation). Function parameters and
results stay dense: sparse arguments and return values are converted at the call boundary.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass

from daphnec.compiler.analysis.inference import insert_merge_cast, set_type
from daphnec.compiler.analysis.sparsity import CSR_VALUE_TYPES, UNKNOWN, SparsityEstimates
from daphnec.dialects.types import MatrixType, vt_name


def representation_of(t: MatrixType, sparsity: float, threshold: float) -> MatrixType:
    """The type with the estimate recorded and the representation it implies."""
    sparse = sparsity != UNKNOWN and sparsity < threshold and vt_name(t) in CSR_VALUE_TYPES
    return t.with_representation("sparse" if sparse else "dense", sparsity)


def _retype(v: SSAValue, est: SparsityEstimates, threshold: float) -> None:
    if isinstance(v.type, MatrixType):
        set_type(v, representation_of(v.type, est.of(v), threshold))


def _retype_region_values(f: func.FuncOp, est: SparsityEstimates, threshold: float) -> None:
    """Op results and the block arguments of nested regions (function parameters keep their types)."""
    for op in f.body.walk():
        for r in op.results:
            _retype(r, est, threshold)
        for region in op.regions:
            for block in region.blocks:
                for a in block.args:
                    _retype(a, est, threshold)


def convert(v: SSAValue, t: Attribute, before: Operation) -> SSAValue:
    """`v` as type `t` (another representation or estimate): a merge cast inserted before `before`."""
    return v if v.type == t else insert_merge_cast(v, t, before)


def _converted(vals: list[SSAValue], types: list[Attribute], before: Operation) -> list[SSAValue]:
    return [convert(v, t, before) for v, t in zip(vals, types)]


def _fix_yield(block: Block, types: list[Attribute]) -> None:
    y = block.last_op
    if isinstance(y, scf.YieldOp) and types:
        y.operands = _converted(list(y.operands), types, y)


def _fix_merges(f: func.FuncOp, callees: dict[str, func.FuncOp]) -> None:
    """Insert the casts that make every control-flow edge and call boundary type-correct again."""
    outputs = list(f.function_type.outputs.data)
    for op in list(f.body.walk()):
        if isinstance(op, scf.ForOp):
            args = [a.type for a in op.body.block.args[1:]]
            op.operands = [*op.operands[:3], *_converted(list(op.iter_args), args, op)]
            _fix_yield(op.body.block, args)
        elif isinstance(op, scf.WhileOp):
            args = [a.type for a in op.before_region.block.args]
            op.operands = _converted(list(op.arguments), args, op)
            _fix_yield(op.after_region.block, args)
        elif isinstance(op, scf.IfOp):
            res = [r.type for r in op.results]
            _fix_yield(op.true_region.block, res)
            if op.false_region.blocks:
                _fix_yield(op.false_region.block, res)
        elif isinstance(op, func.ReturnOp) and op.parent_op() is f:
            op.operands = _converted(list(op.operands), outputs, op)
        elif isinstance(op, func.CallOp) and op.callee.root_reference.data in callees:
            params = list(callees[op.callee.root_reference.data].function_type.inputs.data)
            op.operands = _converted(list(op.operands), params, op)


@dataclass(frozen=True)
class SelectMatrixReprPass(ModulePass):
    """Record sparsity estimates in matrix types and choose CSR below `threshold` (DAPHNE's sparsity_threshold)."""

    name = "select-matrix-repr"
    threshold: float = 0.25

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        funcs = [f for f in op.ops if isinstance(f, func.FuncOp)]
        callees = {f.sym_name.data: f for f in funcs}
        for f in funcs:
            if f.body.blocks:
                _retype_region_values(f, SparsityEstimates(f), self.threshold)
        for f in funcs:
            if f.body.blocks:
                _fix_merges(f, callees)
