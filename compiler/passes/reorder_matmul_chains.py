"""`reorder-matmul-chains`: a chain of matrix products `A1 @ A2 @ ... @ Ak` evaluated in its cheapest order.

`(t(X) @ X) @ v` written as it reads costs n*m*m multiply-adds and an m x m temporary; `t(X) @ (X @ v)` costs
2*n*m (and then `fuse-x-once` reads X only once). The pass collects every maximal chain of f64 products whose inner
results feed only the chain (`t(X) @ X` counts as the two factors `t(X)` and `X`, also after canonicalization has
made it `syrk(X)`), and, when every factor's shape is known at compile time (from `.meta` files, literals and
inference), finds the cheapest parenthesization by the classic O(k^3) dynamic program over the chain. The cost of
one product is its multiply-adds: rows * inner * cols, or for a CSR operand its non-zeros (estimated by
`select-matrix-repr`'s sparsity estimate) times the other dimension. The chain is rebuilt only if the order changes;
a `t(X) @ X` pair that stays together becomes `syrk(X)` again.

Re-associating the products changes the order of floating-point additions, so the pass is on by default and off
with `--no-reassociate` (docs/language.md "Rewrites"). A chain with a shape known only at run time becomes one
`daphne.matMulChain` op, whose kernel runs the same dynamic program on the actual shapes and non-zeros
(runtime/kernels/matmul_chain.py) and reads transposed factors in place; except `t(X) @ X @ v` for a column v,
whose best order, `t(X) @ (X @ v)`, does not depend on the shapes (`_gram_times_column`).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from daphnec.compiler.ir_walk import function_blocks
from daphnec.compiler.passes.simplify_algebra import as_type, f64_matrix
from daphnec.dialects import ops
from daphnec.dialects.attr_names import KERNEL_CHOICE_ATTR
from daphnec.dialects.ops_matrix import MatMulChainOp, MatMulOp, SyrkOp
from daphnec.dialects.types import MatrixType
from daphnec.runtime.kernels.matmul_chain import Tree, cheapest_order, order_cost


@dataclass(frozen=True)
class Factor:
    """One factor of a chain: `value`, or its transpose when `transposed` (half of a `syrk`)."""

    value: SSAValue
    transposed: bool = False

    @property
    def shape(self) -> tuple[int, int]:
        t = self.value.type
        r, c = t.shape if isinstance(t, MatrixType) else (-1, -1)
        return (c, r) if self.transposed else (r, c)

    @property
    def density(self) -> float:
        """The fraction of non-zeros of a CSR operand (1.0 for dense or unknown)."""
        t = self.value.type
        if isinstance(t, MatrixType) and t.is_sparse and 0.0 <= t.sparsity_estimate <= 1.0:
            return t.sparsity_estimate
        return 1.0


def _plain(op: Operation | None) -> bool:
    return (
        isinstance(op, MatMulOp)
        and op.transa is None
        and op.transb is None
        and KERNEL_CHOICE_ATTR not in op.attributes
        and f64_matrix(op.res)
        and f64_matrix(op.lhs)
        and f64_matrix(op.rhs)
    )


def factors(v: SSAValue, root: bool = False) -> tuple[list[Factor], Tree]:
    """The factors of the chain computing `v` and its written parenthesization (over local indices)."""
    p = v.owner
    if (root or v.has_one_use()) and _plain(p):
        lf, lt = factors(p.lhs)  # type: ignore[union-attr]
        rf, rt = factors(p.rhs)  # type: ignore[union-attr]
        return lf + rf, (lt, _shift(rt, len(lf)))
    if not root and v.has_one_use() and isinstance(p, SyrkOp) and f64_matrix(p.arg):
        return [Factor(p.arg, True), Factor(p.arg)], (0, 1)
    if not root and isinstance(p, ops.TransposeOp) and f64_matrix(p.arg):
        return [Factor(p.arg, True)], 0  # read transposed (a run-time chain never builds t(X))
    return [Factor(v)], 0


def _shift(t: Tree, n: int) -> Tree:
    return t + n if isinstance(t, int) else (_shift(t[0], n), _shift(t[1], n))


def cheapest(fs: list[Factor]) -> Tree:
    """The parenthesization of the chain with the fewest multiply-adds (the runtime's dynamic program, so that a
    chain ordered at compile time and one ordered at run time follow one cost model)."""
    return cheapest_order(_dims(fs), [f.density for f in fs])


def chain_cost(fs: list[Factor], t: Tree) -> float:
    """The multiply-adds of evaluating the chain in the order `t`."""
    return order_cost(_dims(fs), [f.density for f in fs], t)


def _dims(fs: list[Factor]) -> list[int]:
    return [fs[0].shape[0]] + [f.shape[1] for f in fs]


_RIGHT_TO_LEFT: Tree = (0, (1, 2))


def _gram_times_column(fs: list[Factor]) -> bool:
    """`t(X) @ X @ v` with v a column (ncol 1 known; X's shape and density may be unknown until run time). Its
    cheapest order is `t(X) @ (X @ v)` for every shape: 2*n*m multiply-adds against n*m*m + m*m, never more for
    m >= 2 (for m = 1 the difference is n - 1 of the 2*n), and the same holds for a CSR X with nnz for n*m. Ordering
    it at compile time keeps the products visible to `fuse-x-once` (the CG loop of an lmCG whose design matrix
    comes from a function call: one pass over X per iteration instead of a run-time chain that materialised t(X))."""
    if len(fs) != 3:
        return False
    a, x, v = fs
    return a.transposed and not x.transposed and a.value is x.value and not v.transposed and v.shape[1] == 1


def _rebuild(fs: list[Factor], t: Tree, anchor: Operation) -> SSAValue:
    """Ops computing the chain in the order `t`, inserted before `anchor`."""

    def add(op: Operation) -> SSAValue:
        op.typed()  # type: ignore[attr-defined]
        op.location = anchor.location
        Rewriter.insert_op(op, InsertPoint.before(anchor))
        return op.results[0]

    def build(t: Tree) -> SSAValue:
        if isinstance(t, int):
            f = fs[t]
            return add(ops.TransposeOp(f.value)) if f.transposed else f.value
        a, b = t
        if isinstance(a, int) and isinstance(b, int):
            fa, fb = fs[a], fs[b]
            if fa.transposed and not fb.transposed and fa.value is fb.value:
                return add(SyrkOp(fa.value))  # t(X) @ X stays one symmetric rank-k update
        return add(MatMulOp(build(a), build(b)))

    return build(t)


def _chain_at_run_time(fs: list[Factor], anchor: Operation) -> SSAValue:
    """A `daphne.matMulChain` of the factors, inserted before `anchor`: its kernel orders the chain with the
    shapes (and CSR non-zeros) the factors have at run time."""
    op = MatMulChainOp([f.value for f in fs], [f.transposed for f in fs])
    op.typed()
    op.location = anchor.location
    Rewriter.insert_op(op, InsertPoint.before(anchor))
    return op.res


def reorder_chains_in(root_op: Operation) -> None:
    for block in function_blocks(root_op):
        _reorder_block(block)


def _reorder_block(block) -> None:
    for op in list(block.ops):
        for region in op.regions:
            for b in region.blocks:
                _reorder_block(b)
    for op in list(block.ops):
        if op.parent is None or not _plain(op):
            continue
        if any(_plain(u.operation) for u in op.res.uses) and op.res.has_one_use():  # type: ignore[attr-defined]
            continue  # an inner product of a longer chain: its root handles it
        fs, written = factors(op.res, root=True)  # type: ignore[attr-defined]
        if len(fs) < 3:
            continue
        if any(d < 0 for f in fs for d in f.shape):
            if _gram_times_column(fs):
                if written == _RIGHT_TO_LEFT:
                    continue  # t(X) @ (X @ v) as written: fuse-x-once reads X once for it
                new = _rebuild(fs, _RIGHT_TO_LEFT, op)
            else:
                new = _chain_at_run_time(fs, op)
        else:
            best = cheapest(fs)
            if chain_cost(fs, best) >= chain_cost(fs, written):
                continue
            new = _rebuild(fs, best, op)
        op.results[0].replace_all_uses_with(as_type(new, op.results[0].type, op))
        _erase_dead(op)


def _erase_dead(op: Operation) -> None:
    """Erase `op` and the chain's products (and transposes) that fed only it."""
    stack = [op]
    while stack:
        o = stack.pop()
        if o.parent is None or any(r.uses for r in o.results):
            continue
        inputs = [v.owner for v in o.operands]
        o.detach()
        o.erase()
        stack.extend(p for p in inputs if isinstance(p, (MatMulOp, SyrkOp, ops.TransposeOp)))


@dataclass(frozen=True)
class ReorderMatMulChainsPass(ModulePass):
    name = "reorder-matmul-chains"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        reorder_chains_in(op)
