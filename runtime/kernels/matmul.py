"""Matrix multiplication `A @ B` (DAPHNE's MatMul with transa = transb = false)."""

from __future__ import annotations

import numpy as np

from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.fperr import STATE, quiet
from daphnec.runtime.kernels.blas_threads import split_product, split_reduction
from daphnec.runtime.kernels.product_form import product
from daphnec.runtime.memory import check_alloc
from daphnec.runtime.values import cast_matrix, is_csr, vt_of


def matmul(A: np.ndarray, B: np.ndarray, vt: str, transa: bool = False, transb: bool = False) -> np.ndarray:
    """`A @ B` in value type `vt` (the most general of both); inner dimensions must agree.

    Float types use BLAS like DAPHNE; integer products wrap; bool computes OR of ANDs like the C++ loop. CSR
    operands never densify (see `_csr_matmul`). `transa`/`transb` multiply by the transpose of an operand without
    materialising it, like DAPHNE's MatMulOp (src/ir/daphneir/DaphneOps.td: `transa`, `transb`): BLAS reads the
    operand transposed, and `t(X) @ X` becomes one symmetric rank-k update (numpy calls syrk for it).

    A small dense f64 product inside a program run (decision trees make hundreds of 1 x 15 @ 15 x 1 products) goes
    straight to the call the general path would make for it: no conversion, block or split applies below
    `BLAS_SERIAL_MACS`, and the checks cost ~4 us of a ~5 us call.
    """
    if type(A) is np.ndarray and type(B) is np.ndarray and A.dtype is _F64 and B.dtype is _F64 and STATE.ignoring:
        a, b = (A.T if transa else A), (B.T if transb else B)
        if a.shape[1] == b.shape[0] and a.shape[0] * a.shape[1] * b.shape[1] <= BLAS_SERIAL_MACS and vt == "f64":
            return np.ascontiguousarray(product(a, b))  # the path below takes for it, without its ~4 us of checks
    (ar, ac), (br, bc) = A.shape[:: -1 if transa else 1], B.shape[:: -1 if transb else 1]
    if ac != br:
        raise DaphneRuntimeError(
            f"matMul: shape mismatch: lhs {ar}x{ac}, rhs {br}x{bc} (#cols of lhs must equal #rows of rhs)"
        )
    if vt == "str":
        raise DaphneRuntimeError("matMul: value type str is not supported")
    check_alloc("@", ar, bc, vt, "result")
    a, b = cast_matrix(A, vt), cast_matrix(B, vt)
    if is_csr(a) or is_csr(b):
        return _csr_matmul(_transposed(a, transa, b), _transposed(b, transb, a))
    a, b = (a.T if transa else a), (b.T if transb else b)
    with quiet():
        rows = _serial_block_rows(a, b)
        if rows:
            res = np.empty((ar, bc), dtype=np.result_type(a, b))
            for r in range(0, ar, rows):
                np.matmul(a[r : r + rows], b, out=res[r : r + rows])
            return res
        res = split_product(a, b)  # a large product: blocks on daphnec's workers (OpenBLAS runs at one thread)
        if res is not None:
            return res
        res = split_reduction(a, b)  # a long reduction into a small result: partials summed in block order
        if res is not None:
            return res
        res = product(a, b)
    return np.ascontiguousarray(res)


_F64 = np.dtype(np.float64)

BLAS_SERIAL_MACS = 65536 * 4
"""OpenBLAS runs a product of at most m*n*k = 65536 * GEMM_MULTITHREAD_THRESHOLD (4) multiply-adds on the calling
thread; above that it wakes its threads, whatever the product's size."""

MAX_SPLIT_MACS = 1 << 22
"""Products up to this size are computed as blocks of rows small enough for one thread (`_serial_block_rows`)."""


def _serial_block_rows(a: np.ndarray, b: np.ndarray) -> int:
    """Rows per block for a float product just above OpenBLAS's threading threshold, 0 to make one call.

    Waking BLAS's threads costs more than such a product (a 32 x 128 @ 128 x 128 layer gradient: ~0.1 ms on one
    thread), and far more on a machine whose cores are busy (tens of ms while the threads wait to be scheduled),
    so it runs as blocks of rows below the threshold, one after the other on the calling thread. The blocks
    depend on the shapes only, so the result does not depend on any thread count."""
    m, k = a.shape
    n = b.shape[1]
    macs = m * k * n
    if a.dtype.kind != "f" or b.dtype.kind != "f" or not BLAS_SERIAL_MACS < macs <= MAX_SPLIT_MACS or k * n == 0:
        return 0
    if m > 1 and a.strides[1] != a.itemsize:
        return 0  # rows not contiguous (`t(X) @ y` reads X transposed): every block would sweep all of X again
    rows = BLAS_SERIAL_MACS // (k * n)
    return rows if 0 < rows < m else 0


def _transposed(x, trans: bool, other):
    """`x`, or its transpose when `trans`. A CSR matrix multiplied with a dense one is transposed as a view (scipy's
    CSC form of the same arrays, no copy: PageRank's `t(G) @ v` once per iteration would otherwise rebuild t(G)
    every time); the CSC product adds each result element's terms in the same order as the CSR product of the
    materialised transpose (rows of `x` ascending), so the bits are the same. With two CSR operands the transpose
    is materialised, as scipy would convert the CSC form anyway."""
    if not trans:
        return x
    return x.T if not is_csr(x) or not is_csr(other) else x.T.tocsr()


def _csr_matmul(a, b):
    """CSR @ dense and dense @ CSR give dense matrices, CSR @ CSR a CSR matrix, all in the operands' value type
    (scipy's sparse kernels accumulate each dot product sequentially in that type; integers wrap, bool is OR of
    ANDs). Integer and bool results equal the dense product exactly; float sums may round differently from BLAS."""
    dt = a.dtype
    with quiet():
        res = a @ b
    if getattr(res, "format", None) in ("csr", "csc"):
        res = res.tocsr()
        res.sum_duplicates()
        return res if res.dtype == dt else cast_matrix(res, _vt_of_dtype(dt))
    res = np.ascontiguousarray(np.asarray(res))
    return res if res.dtype == dt else res.astype(dt)


def _vt_of_dtype(dt: np.dtype) -> str:
    return vt_of(np.empty((0, 0), dtype=dt))
