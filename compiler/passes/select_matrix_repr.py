"""`select-matrix-repr`: choose dense or CSR for every matrix value (DAPHNE's SelectMatrixRepresentationsPass).

Runs with `--select-matrix-repr` at the `select_matrix_repr` explain slot. Every matrix result gets the compiler's
sparsity estimate in its type (`:sp[...]`, see compiler/analysis/sparsity.py) and, when the estimate is known and
below the threshold (`sparsity_threshold`, 0.25 by default), the sparse representation (`:rep[sparse]`): its kernel then
produces a CSR matrix at run time.

Where control flow merges values (loop-carried variables, if/else results) they must share one type: a merged value
keeps an estimate only if all incoming ones agree, and an incoming value of another type is converted by a cast
(DAPHNE reports an error instead when a loop body changes a variable's representation). Function results stay
dense: sparse return values are converted at the return. A function parameter is sparse when every call of the
function passes a sparse matrix there (its estimate the largest of theirs; functions are typed callers first),
else dense, with sparse arguments converted at the call: a CSR graph handed to a library function
(`pageRank(G:matrix<f64>, ...)`) stays CSR instead of being densified at the call (n^2 cells).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func, scf
from xdsl.dialects.builtin import FunctionType, ModuleOp
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass

from daphnec.compiler.analysis.inference import insert_merge_cast, set_type
from daphnec.compiler.analysis.sparsity import CSR_VALUE_TYPES, UNKNOWN, SparsityEstimates, type_sparsity
from daphnec.compiler.ir_walk import enclosing_function
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


def _calls_by_callee(funcs: list[func.FuncOp], callees: dict[str, func.FuncOp]) -> dict[str, list[func.CallOp]]:
    calls: dict[str, list[func.CallOp]] = {}
    for f in funcs:
        for o in f.walk():
            if isinstance(o, func.CallOp) and o.callee.root_reference.data in callees:
                calls.setdefault(o.callee.root_reference.data, []).append(o)
    return calls


def _function_of(op: Operation) -> str:
    """The name of the function `op` is in."""
    f = enclosing_function(op.parent_op())
    return f.sym_name.data if f is not None else ""


def _callers_first(funcs: list[func.FuncOp], calls: dict[str, list[func.CallOp]]) -> list[func.FuncOp]:
    """The functions ordered so that every function comes after all its callers, where the calls form no cycle
    (functions on a cycle, and those only they call, keep module order at the end)."""
    pending = {f.sym_name.data: {_function_of(c) for c in calls.get(f.sym_name.data, [])} for f in funcs}
    by_name = {f.sym_name.data: f for f in funcs}
    order: list[func.FuncOp] = []
    ready = [n for n, callers in pending.items() if not callers - {n}]
    done: set[str] = set()
    while ready:
        name = ready.pop(0)
        if name in done:
            continue
        done.add(name)
        order.append(by_name[name])
        for n, callers in pending.items():
            if n not in done and not callers - done - {n}:
                ready.append(n)
    return order + [f for f in funcs if f.sym_name.data not in done]


@dataclass(frozen=True)
class SelectMatrixReprPass(ModulePass):
    """Record sparsity estimates in matrix types and choose CSR below `threshold` (DAPHNE's sparsity_threshold)."""

    name = "select-matrix-repr"
    threshold: float = 0.25

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        funcs = [f for f in op.ops if isinstance(f, func.FuncOp)]
        callees = {f.sym_name.data: f for f in funcs}
        calls = _calls_by_callee(funcs, callees)
        for f in _callers_first(funcs, calls):
            if f.body.blocks:
                self._type_parameters(f, calls.get(f.sym_name.data, []))
                _retype_region_values(f, SparsityEstimates(f), self.threshold)
        for f in funcs:
            if f.body.blocks:
                _fix_merges(f, callees)

    def _type_parameters(self, f: func.FuncOp, calls: list[func.CallOp]) -> None:
        """Sparse parameters where every call passes a sparse matrix (see the module docstring)."""
        if not calls:
            return
        params = list(f.function_type.inputs.data)
        for i, p in enumerate(params):
            given = [c.arguments[i].type for c in calls]
            if isinstance(p, MatrixType) and all(
                isinstance(g, MatrixType) and g.is_sparse and vt_name(g) == vt_name(p) for g in given
            ):
                worst = max(type_sparsity(g) for g in given)
                params[i] = representation_of(p, worst, self.threshold)
                set_type(f.body.block.args[i], params[i])
        f.function_type = FunctionType.from_lists(params, list(f.function_type.outputs.data))
