"""Other matrix operations of Builtins.md: `diagVector lowerTri upperTri solve replace ctable syrk gemv`.

Operands arrive cast to the result's value type where DAPHNE's op has CastArgsToResType (`solve replace syrk
gemv`); CSR inputs are densified. Semantics follow DAPHNE's kernels (DiagVector.h, Tri.h, Solve.h, Replace.h,
CTable.h, Syrk.h, Gemv.h).
"""

from __future__ import annotations

import numpy as np

from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.kernels.blas_threads import split_reduction
from daphnec.runtime.memory import check_alloc
from daphnec.runtime.values import as_dense, dtype_of, is_csr


def _matrix(X, who: str) -> np.ndarray:
    X = as_dense(X)
    if not isinstance(X, np.ndarray):
        raise DaphneRuntimeError(f"{who}: expected a matrix")
    return X


def _shape(X: np.ndarray) -> str:
    return f"{X.shape[0]}x{X.shape[1]}"


def _square(X: np.ndarray, who: str) -> None:
    if X.shape[0] != X.shape[1]:
        raise DaphneRuntimeError(f"{who}: the matrix must be square, but it is {_shape(X)}")


def diag_vector(X) -> np.ndarray:
    """`diagVector(X)`: the diagonal of a square matrix as an n x 1 column (read straight from a CSR matrix)."""
    A = X if is_csr(X) else _matrix(X, "diagVector")
    _square(A, "diagVector")
    return np.ascontiguousarray(A.diagonal().reshape(-1, 1))


#: Cells of X per block of `trace_of_product` (its temporary stays in the L2 cache).
_TRACE_BLOCK_CELLS = 1 << 15


def trace_of_product(X, Y) -> float:
    """`trace(X @ Y)` for f64 X (n x k) and Y (k x n): per block of X's rows, the element-wise product with the
    matching columns of Y read transposed in place, summed; the blocks' sums added in order. Depends on the shapes
    only (no threads), so the result is the same at every thread count."""
    A, B = _matrix(X, "trace"), _matrix(Y, "trace")
    (n, k), (yr, yc) = A.shape, B.shape
    if k != yr or n != yc:
        raise DaphneRuntimeError(f"trace: shape mismatch: X {n}x{k}, Y {yr}x{yc} (X must be n x k and Y k x n)")
    step = max(1, _TRACE_BLOCK_CELLS // max(k, 1))
    total = 0.0
    with np.errstate(all="ignore"):
        for r0 in range(0, n, step):
            total += float(np.sum(A[r0 : r0 + step] * B[:, r0 : r0 + step].T))
    return total


def tri(X, upper: bool, diag: bool, values: bool):
    """`lowerTri`/`upperTri(X, diag, values)`: keep one triangle (and the diagonal if `diag`); non-zero kept
    elements become 1 unless `values`. A CSR matrix stays CSR (the triangle of a large sparse graph never becomes
    dense)."""
    who = "upperTri" if upper else "lowerTri"
    k = (0 if diag else 1) if upper else (0 if diag else -1)
    if is_csr(X):
        import scipy.sparse as sp

        _square(X, who)
        res = (sp.triu if upper else sp.tril)(X, k, format="csr")
        res.eliminate_zeros()
        if not values:
            res.data = np.ones_like(res.data)
        res.sort_indices()
        return res
    A = _matrix(X, who)
    _square(A, who)
    if A.dtype == object:
        raise DaphneRuntimeError(f"{who}: not supported on value type str")
    res = np.triu(A, k) if upper else np.tril(A, k)
    if not values:
        res = (res != 0).astype(A.dtype)
    return np.ascontiguousarray(res)


def solve(A, b) -> np.ndarray:
    """`solve(A, b)`: x with A @ x = b via LU decomposition with partial pivoting (LAPACK gesv)."""
    A, b = _matrix(A, "solve"), _matrix(b, "solve")
    if A.shape[0] != b.shape[0] or A.shape[0] != A.shape[1] or b.shape[1] != 1:
        raise DaphneRuntimeError(
            f"solve: shape mismatch: lhs {_shape(A)}, rhs {_shape(b)} (A must be n x n and b n x 1)"
        )
    if A.dtype.kind != "f":
        raise DaphneRuntimeError(f"solve: value type {A.dtype} is not supported (only f32/f64)")
    if A.shape[0] == 0:
        return np.empty((0, 1), dtype=A.dtype)
    try:
        with np.errstate(all="ignore"):
            x = np.linalg.solve(A, b)
    except np.linalg.LinAlgError:
        raise DaphneRuntimeError(
            f"solve: the {A.shape[0]}x{A.shape[0]} matrix A is singular (not invertible), so A @ x = b has no unique "
            "solution"
        ) from None
    return np.ascontiguousarray(x.astype(A.dtype, copy=False))


def replace(X, pattern, replacement) -> np.ndarray:
    """`replace(X, pattern, replacement)`: elements equal to `pattern` (NaN matches NaN) become `replacement`."""
    A = _matrix(X, "replace")
    if A.dtype == object:
        hits = A == pattern
    elif pattern != pattern:
        hits = np.isnan(A) if A.dtype.kind == "f" else np.zeros(A.shape, dtype=bool)
    else:
        hits = A == A.dtype.type(pattern)
    res = A.copy()
    res[hits] = replacement
    return res


def ctable(ys, xs, weight, num_rows: int, num_cols: int, vt: str) -> np.ndarray:
    """`ctable(ys, xs[, weight][, numRows, numCols])`: res[ys[k], xs[k]] += weight for every k.

    Without a (non-negative) shape the result is (max(ys) + 1) x (max(xs) + 1); with one, pairs outside it are
    ignored. The weight's value type is the result's. Positions must not be negative.
    """
    ys, xs = _matrix(ys, "ctable"), _matrix(xs, "ctable")
    if ys.shape[1] != 1 or xs.shape[1] != 1:
        raise DaphneRuntimeError(f"ctable: lhs and rhs must have only one column, got {_shape(ys)} and {_shape(xs)}")
    if ys.shape[0] != xs.shape[0]:
        raise DaphneRuntimeError(
            f"ctable: lhs and rhs must have the same number of rows, got {_shape(ys)} and {_shape(xs)}"
        )
    r, c = _positions(ys[:, 0]), _positions(xs[:, 0])
    nr = int(num_rows) if int(num_rows) >= 0 else (int(r.max()) + 1 if r.size else 0)
    nc = int(num_cols) if int(num_cols) >= 0 else (int(c.max()) + 1 if c.size else 0)
    check_alloc("ctable", nr, nc, vt, "result")
    res = np.zeros((nr, nc), dtype=dtype_of(vt))
    inside = (r < nr) & (c < nc)
    with np.errstate(all="ignore"):
        np.add.at(res, (r[inside], c[inside]), res.dtype.type(weight))
    return res


def _positions(v: np.ndarray) -> np.ndarray:
    """Coordinates as C++'s `ssize_t` conversion takes them (floats truncated); negatives are rejected."""
    if v.dtype == object:
        raise DaphneRuntimeError("ctable: coordinates must be numbers, not strings")
    p = np.trunc(v).astype(np.int64) if v.dtype.kind == "f" else v.astype(np.int64)
    if (p < 0).any() or (v.dtype.kind == "f" and np.isnan(v).any()):
        raise DaphneRuntimeError("ctable: ys and xs must not contain negative numbers (or NaN)")
    return p


def syrk(A):
    """`syrk(A)`: t(A) @ A in A's value type, exactly symmetric: the upper triangle is computed and mirrored (as a
    BLAS syrk does), so `isSymmetric(t(X) @ X)` holds also where a general product would round the two triangles'
    sums differently. A CSR matrix gives a CSR result."""
    if is_csr(A):
        import scipy.sparse as sp

        with np.errstate(all="ignore"):
            full = (A.T @ A).tocsr()
        res = (sp.triu(full, 0, format="csr") + sp.triu(full, 1, format="csr").T).tocsr()
        res.sort_indices()
        return res.astype(A.dtype, copy=False)
    A = _matrix(A, "syrk")
    if A.dtype == object:
        raise DaphneRuntimeError("syrk: not supported on value type str")
    with np.errstate(all="ignore"):
        res = split_reduction(A.T, A)  # a long reduction of a float X: row blocks on the workers, or None
        res = np.ascontiguousarray((np.matmul(A.T, A) if res is None else res).astype(A.dtype, copy=False))
    for i in range(1, res.shape[0]):  # the lower triangle mirrors the upper one, row by row
        res[i, :i] = res[:i, i]
    return res


def gemv(A, x) -> np.ndarray:
    """`gemv(A, x)`: t(A) @ x for A (n x m) and x (n x 1)."""
    A, x = _matrix(A, "gemv"), _matrix(x, "gemv")
    if A.shape[0] != x.shape[0] or x.shape[1] != 1:
        raise DaphneRuntimeError(
            f"gemv: shape mismatch: lhs {_shape(A)}, rhs {_shape(x)} (A must be n x m and x n x 1)"
        )
    if A.dtype == object:
        raise DaphneRuntimeError("gemv: not supported on value type str")
    with np.errstate(all="ignore"):
        res = split_reduction(A.T, x) if x.dtype == A.dtype else None
        return np.ascontiguousarray((np.matmul(A.T, x) if res is None else res).astype(A.dtype, copy=False))
