"""Which BLAS call computes a dense float product: `t(A) @ B` with a thin `A` as `t(t(B) @ A)`.

numpy hands `a @ b` to one `gemm` call whose operand roles follow the operands' layouts. For `t(W) @ X` (W k x m
with few columns, X k x n with many: GNMF's `t(W) @ X`, 20 x 5000 by 5000 x 300) OpenBLAS's kernel for that call
runs 1.3-1.5x slower (one thread, this project's machine) than the same product computed as `t(X) @ W` (n x m)
and transposed: 2.0 -> 1.4 ms for GNMF's product, 1.0 -> 0.7 ms for each half of it that daphnec's workers run.
Measured over k = 1000-50000, m = 1-100, n = 50-1000, the swapped call wins where 2 <= m <= 32 and
n >= max(100, 4 m) (1.1-1.7x; at k = 50000 the product is memory bound and both calls are within noise) and loses
or ties elsewhere (m = 1 is a matrix-vector product either way: a tie, left alone). Every product term is the
same; the sums may round differently from the other call (a product is a reduction: within the README's 1e-12
promise), and the choice depends on the shapes and layouts only, never on a thread count.
"""

from __future__ import annotations

import numpy as np

SWAP_MAX_ROWS = 32
"""At most this many result rows (columns of the thin operand `A` of `t(A) @ B`)."""

SWAP_MIN_COLS = 100
"""At least this many result columns, and at least `SWAP_COLS_PER_ROW` times the rows."""

SWAP_COLS_PER_ROW = 4


def swapped(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether `a @ b` (float, same dtype) is computed as `(b.T @ a.T).T`: `a` is a transposed view of a row-major
    matrix (`t(A)`, A with rows contiguous), `b`'s rows are contiguous, and the result is thin and wide."""
    m, n = a.shape[0], b.shape[1]
    return (
        2 <= m <= SWAP_MAX_ROWS
        and n >= max(SWAP_MIN_COLS, SWAP_COLS_PER_ROW * m)
        and a.dtype.kind == "f"
        and a.dtype == b.dtype
        and a.shape[1] > 1
        and a.strides[0] == a.itemsize
        and a.strides[1] >= m * a.itemsize
        and b.strides[1] == b.itemsize
    )


def product(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """`a @ b` of two 2-d numpy matrices by the faster BLAS call (`swapped`), into `out` when given (any layout)."""
    if not swapped(a, b):
        return np.matmul(a, b) if out is None else np.matmul(a, b, out=out)
    res = np.matmul(b.T, a.T).T  # the n x m product, row-major, seen transposed
    if out is None:
        return np.ascontiguousarray(res)
    out[...] = res
    return out
