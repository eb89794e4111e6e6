"""Matrix-chain order: the cheapest parenthesization of `A1 @ A2 @ ... @ Ak` (the classic O(k^3) dynamic program)
and `matmul_chain`, the kernel of `daphne.matMulChain` that decides it at run time.

One cost model for both sides: the compiler's `reorder-matmul-chains` pass orders chains whose shapes it knows
with `cheapest_order`; a chain with a shape known only at run time becomes `daphne.matMulChain`, whose kernel
orders it here with the actual shapes and, for a CSR factor, its actual number of non-zeros. The cost of one
product is its multiply-adds: rows * inner * cols, or, with a CSR operand, that times the operand's density (its
non-zeros times the other dimension). Products of two subchains are dense, so only a single CSR factor is cheaper.
"""

from __future__ import annotations

from collections.abc import Sequence

from daphnec.runtime.values import is_csr

Tree = int | tuple["Tree", "Tree"]
"""A parenthesization: a factor's index, or the product of two subtrees."""


def cheapest_order(dims: Sequence[int], density: Sequence[float]) -> Tree:
    """The parenthesization with the fewest multiply-adds of factors i of shape dims[i] x dims[i + 1] and density
    (non-zeros / cells, 1.0 for dense) density[i]."""
    k = len(density)
    cost = [[0.0] * k for _ in range(k)]
    split = [[0] * k for _ in range(k)]
    for length in range(2, k + 1):
        for i in range(k - length + 1):
            j = i + length - 1
            cost[i][j] = float("inf")
            for s in range(i, j):
                d = min(density[i] if s == i else 1.0, density[j] if s + 1 == j else 1.0)
                c = cost[i][s] + cost[s + 1][j] + dims[i] * dims[s + 1] * dims[j + 1] * d
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, s

    def build(i: int, j: int) -> Tree:
        if i == j:
            return i
        s = split[i][j]
        return (build(i, s), build(s + 1, j))

    return build(0, k - 1)


def order_cost(dims: Sequence[int], density: Sequence[float], t: Tree) -> float:
    """The multiply-adds of evaluating the chain in the order `t` (the model of `cheapest_order`)."""

    def walk(t: Tree) -> tuple[int, int, float, float]:  # rows, cols, cost, density of a leaf
        if isinstance(t, int):
            return dims[t], dims[t + 1], 0.0, density[t]
        lr, lc, lcost, ld = walk(t[0])
        _, rc, rcost, rd = walk(t[1])
        return lr, rc, lcost + rcost + lr * lc * rc * min(ld, rd), 1.0

    return walk(t)[2]


def density_of(m) -> float:
    """A CSR matrix's non-zeros per cell; 1.0 for a dense one."""
    if is_csr(m):
        cells = m.shape[0] * m.shape[1]
        return m.nnz / cells if cells else 0.0
    return 1.0


def matmul_chain(*factors, transposed: Sequence[bool] = (), vt: str = "f64"):
    """`A1 @ ... @ Ak` (factor i transposed where `transposed[i]`) in the cheapest order for the actual shapes
    (a transposed factor next to its own matrix, `t(X) @ X`, is one symmetric rank-k update)."""
    from daphnec.runtime.errors import DaphneRuntimeError
    from daphnec.runtime.kernels.matmul import matmul
    from daphnec.runtime.kernels.matrix_ops import syrk

    flags = list(transposed) or [False] * len(factors)
    shapes = [(m.shape[1], m.shape[0]) if t else m.shape for m, t in zip(factors, flags)]
    for (ar, ac), (br, bc) in zip(shapes, shapes[1:]):
        if ac != br:
            raise DaphneRuntimeError(
                f"matMul: shape mismatch: lhs {ar}x{ac}, rhs {br}x{bc} (#cols of lhs must equal #rows of rhs)"
            )
    dims = [shapes[0][0]] + [s[1] for s in shapes]
    tree = cheapest_order(dims, [density_of(m) for m in factors])

    def run(t: Tree):
        if isinstance(t, int):
            return factors[t], flags[t]
        a, b = t
        if isinstance(a, int) and isinstance(b, int) and flags[a] and not flags[b] and factors[a] is factors[b]:
            return syrk(factors[a]), False
        (x, tx), (y, ty) = run(a), run(b)
        return matmul(x, y, vt, transa=tx, transb=ty), False

    if isinstance(tree, int):
        raise DaphneRuntimeError("matMul: a chain has at least two factors")
    return run(tree)[0]
