"""`sufficient-factors`: paramserv's gradients that are `t(A) @ B` over the batch travel as A and B (Poseidon's SFB).

An affine layer's weight gradient over a batch of K rows is the sum of K outer products, `t(A) @ B` with A (K x M,
the layer's inputs) and B (K x N, the gradient of its outputs): the *sufficient factors* (Zhang et al., Poseidon,
USENIX ATC 2017). K (M + N) values instead of M N; for the FC MLP's 1024 x 1024 layer at K = 64, 1/8 of the bytes.
Which gradient is such a product only the IR knows, so this pass finds them in paramserv's `upd`:

- `upd` returns `createList(g_0, ..., g_{n-1})`; g_j qualifies when it is `matMul(t(A), B)` (or `matMul(A, B)
  {transa}`, as fold-transpose writes it) and A and B both have *the batch's rows*: they are the features or
  labels, or are computed from them row-wise (an element-wise op with such an operand, a product `X @ W` whose
  left factor has them, a cast, or a DNN op of the nn layers on such images: conv2d, a pooling, relu, softmax,
  bias_add, affine, whose output row i is image i's; or a call of a function, e.g. an nn layer's forward or
  backward, whose returned value is such, given which arguments have the rows: so LeNet's affine layers qualify).
  Then the inner dimension of the product is the batch, and the factors are small exactly when the batch is;
- for those positions it adds a variant of `upd`, `@<upd>.factors`, that returns A_j in place of g_j and all the
  B_j after the n gradients (the products are no longer computed), and records it on the paramserv op:
  `factors = "<upd>.factors"`, `factored = [j, ...]`.

Whether the factors or the product travel is decided at run time per matrix by Poseidon's cost model for the
call's number of workers (runtime/paramserv/costs.py, `sfb_wins`), and only with `sfb=true`: a call without
`sfb` (or with the constant false) gets no variant. The receiver rebuilds t(A) @ B with the same product the
kernel computes, so the sums (in paramserv's canonical order) equal full-matrix BSP's.

Runs before `select-kernels` (DAPHNE's `phy_op_selection` slot), so `--explain phy_op_selection` shows the
variant and the op's new properties.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, IntAttr, ModuleOp, StringAttr
from xdsl.ir import BlockArgument, SSAValue
from xdsl.passes import ModulePass

from daphnec.compiler.analysis.inference import set_type
from daphnec.dialects.ops import CastOp, EwBinaryOp, EwUnaryOp, TransposeOp, constant_value
from daphnec.dialects.ops_frame import CreateListOp
from daphnec.dialects.ops_matrix import (
    AffineForwardOp,
    BiasAddOp,
    Conv2DForwardOp,
    MatMulOp,
    PoolForwardOp,
    ReluForwardOp,
    SoftmaxOp,
)
from daphnec.dialects.ops_paramserv import UPD_PARAMS, ParamservOp
from daphnec.dialects.types import ListType, is_matrix, vt_name

ROW_WISE_DNN = (Conv2DForwardOp, PoolForwardOp, ReluForwardOp, SoftmaxOp, BiasAddOp, AffineForwardOp)
"""DNN ops whose output row i depends only on row i (image i) of their `input` (the other operands are the
model's: filters, biases, weights)."""
BATCH_PARAMS = tuple(UPD_PARAMS.index(p) for p in ("features", "labels"))
"""The arguments of `upd` whose rows are the batch."""
FACTORS_SUFFIX = ".factors"


class BatchRows:
    """Which values of one `upd` body have the batch's rows (memoised; see the module docstring)."""

    def __init__(self, body: func.FuncOp, functions: dict[str, func.FuncOp], rows: tuple[int, ...] = BATCH_PARAMS,
                 callees: dict[tuple[str, tuple[int, ...]], BatchRows] | None = None):  # fmt: skip
        self.args = {body.body.block.args[i] for i in rows}
        self.functions = functions
        self.callees = {} if callees is None else callees
        """One analysis per (function, arguments with the batch's rows), shared by every body it reaches."""
        self.memo: dict[SSAValue, bool] = {}

    def __call__(self, v: SSAValue) -> bool:
        if v not in self.memo:
            self.memo[v] = False  # a cycle (none in SSA, but cheap to guard) is not the batch
            self.memo[v] = self._compute(v)
        return self.memo[v]

    def _compute(self, v: SSAValue) -> bool:
        if isinstance(v, BlockArgument):
            return v in self.args
        op = v.owner
        if isinstance(op, MatMulOp):
            return op.transa is None and not isinstance(op.lhs.owner, TransposeOp) and self(op.lhs)
        if isinstance(op, EwBinaryOp):
            return any(is_matrix(x.type) and self(x) for x in (op.lhs, op.rhs))
        if isinstance(op, (EwUnaryOp, CastOp)):
            return is_matrix(op.arg.type) and is_matrix(v.type) and self(op.arg)
        if isinstance(op, ROW_WISE_DNN):
            return v is op.results[0] and is_matrix(v.type) and self(op.input)
        if isinstance(op, func.CallOp):
            return self._returns_batch_rows(op, v)
        return False

    def _returns_batch_rows(self, call: func.CallOp, v: SSAValue) -> bool:
        """A function's result has the batch's rows when what it returns does, given which of its arguments have
        them at this call (the nn layers' forward and backward functions, `relu.forward(X)`, are such calls)."""
        callee = self.functions.get(call.callee.string_value())
        if callee is None or len(callee.body.blocks) != 1:
            return False
        ret = callee.body.block.last_op
        if not isinstance(ret, func.ReturnOp) or not is_matrix(v.type):
            return False
        rows = tuple(i for i, x in enumerate(call.arguments) if is_matrix(x.type) and self(x))
        if not rows:
            return False
        key = (callee.sym_name.data, rows)
        if key not in self.callees:  # stored before it runs: a recursive call finds it (its memo says False)
            self.callees[key] = BatchRows(callee, self.functions, rows, self.callees)
        return self.callees[key](ret.operands[v.index])


def factors_of(g: SSAValue, batch: BatchRows) -> tuple[SSAValue, SSAValue] | None:
    """(A, B) when `g` is t(A) @ B with the batch as the inner dimension."""
    op = g.owner
    if not isinstance(op, MatMulOp) or op.transb is not None:
        return None
    if op.transa is not None:
        a = op.lhs
    elif isinstance(op.lhs.owner, TransposeOp):
        a = op.lhs.owner.arg
    else:
        return None
    b = op.rhs
    if isinstance(b.owner, TransposeOp) or not (is_matrix(a.type) and is_matrix(b.type)):
        return None
    if vt_name(a.type) != vt_name(g.type) or vt_name(b.type) != vt_name(g.type):
        return None  # the factors travel in the gradient's value type
    return (a, b) if batch(a) and batch(b) else None


def returned_list(body: func.FuncOp) -> CreateListOp | None:
    """The `createList` whose result `upd` returns (in its body's block), if that is how it returns."""
    ret = body.body.block.last_op
    if not isinstance(ret, func.ReturnOp) or len(ret.operands) != 1:
        return None
    lst = ret.operands[0].owner
    return lst if isinstance(lst, CreateListOp) and lst.parent_block() is body.body.block else None


def factored_positions(body: func.FuncOp, functions: dict[str, func.FuncOp]) -> dict[int, tuple[SSAValue, SSAValue]]:
    """{position: (A, B)} of the gradients of `upd` that are products over the batch."""
    lst = returned_list(body)
    if lst is None:
        return {}
    batch = BatchRows(body, functions)
    found = {j: factors_of(g, batch) for j, g in enumerate(lst.elems)}
    return {j: ab for j, ab in found.items() if ab is not None}


def factors_variant(
    body: func.FuncOp, positions: list[int], name: str, functions: dict[str, func.FuncOp]
) -> func.FuncOp:
    """A copy of `upd` returning A_j at each factored position j and the B_j after the gradients."""
    variant = body.clone()
    variant.sym_name = StringAttr(name)
    lst = returned_list(variant)
    assert lst is not None
    found = factored_positions(variant, functions)
    elems = [found[j][0] if j in found else g for j, g in enumerate(lst.elems)]
    elems += [found[j][1] for j in positions]
    new = CreateListOp(elems)
    assert isinstance(lst.res.type, ListType)
    set_type(new.res, lst.res.type)  # the function's declared result type (the factors have unknown sizes too)
    new.location = lst.location
    block = variant.body.block
    block.insert_op_before(new, lst)
    lst.res.replace_all_uses_with(new.res)
    dead = [lst] + [lst.elems[j].owner for j in positions]
    for op in dead:  # the products (and transposes) no longer needed
        if isinstance(op, (CreateListOp, MatMulOp)) and not op.results[0].uses:
            operands = list(op.operands)
            op.detach()
            op.erase()
            for x in operands:
                t = x.owner
                if isinstance(t, TransposeOp) and not t.res.uses:
                    t.detach()
                    t.erase()
    return variant


def functions_of(module: ModuleOp) -> dict[str, func.FuncOp]:
    """The module's functions by symbol name."""
    return {f.sym_name.data: f for f in module.body.block.ops if isinstance(f, func.FuncOp)}


def calls_with(module: ModuleOp, flag: str) -> list[tuple[ParamservOp, func.FuncOp]]:
    """The paramserv calls whose boolean option `flag` may be on (given, and not the constant false), with their
    `upd` function: the calls a paramserv pass has to prepare (the others would never use what it adds)."""
    functions = functions_of(module)
    out = []
    for ps in [o for o in module.walk() if isinstance(o, ParamservOp)]:
        v = ps.arg(flag)
        body = functions.get(ps.upd.data)
        if v is not None and body is not None and (constant_value(v) is None or constant_value(v)):
            out.append((ps, body))
    return out


@dataclass(frozen=True)
class SufficientFactorsPass(ModulePass):
    name = "sufficient-factors"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        functions = functions_of(op)
        for ps, body in calls_with(op, "sfb"):
            if ps.factors is not None:
                continue
            positions = sorted(factored_positions(body, functions))
            if not positions:
                continue
            name = ps.upd.data + FACTORS_SUFFIX
            if name not in functions:
                functions[name] = factors_variant(body, positions, name, functions)
                op.body.block.insert_op_after(functions[name], body)
            ps.factors = StringAttr(name)
            ps.factored = ArrayAttr([IntAttr(j) for j in positions])
