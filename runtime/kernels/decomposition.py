"""Matrix decompositions: `eigen(X)` (DAPHNE's EigenCal.h).

DAPHNE runs Eigen's general `EigenSolver` on a symmetric matrix and returns the real parts: the eigenvalues as an
n x 1 column and the unit-norm eigenvectors as the columns of an n x n matrix. LAPACK's general eigensolver
(`numpy.linalg.eig`) follows the same Hessenberg/QR route; like DAPHNE's float kernel, f32 eigenvectors are
normalised so that their largest-magnitude component is positive.

LAPACK's symmetric solvers (`eigh`, ~3x faster) are not used: they return the eigenvalues sorted, where DAPHNE
returns them in the order of the QR iteration (DAPHNE's EigenCalTest expects 44.8, 910.1, 629.1 for its 3 x 3
matrix, which `numpy.linalg.eig` reproduces), and scripts index the results by position.
"""

from __future__ import annotations

import numpy as np

from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.kernels.meta import is_symmetric
from daphnec.runtime.values import as_dense


def eigen(X) -> tuple[np.ndarray, np.ndarray]:
    """`values, vectors = eigen(X)` for a symmetric f32/f64 matrix."""
    A = as_dense(X)
    if A.dtype.kind != "f":
        raise DaphneRuntimeError(f"eigen: value type {A.dtype} is not supported (only f32/f64)")
    if A.size and not np.isfinite(A).all():  # LAPACK refuses them ("Array must not contain infs or NaNs")
        raise DaphneRuntimeError("eigen: the matrix must not contain NaN or infinite values")
    if A.shape[0] != A.shape[1] or not is_symmetric(A):
        raise DaphneRuntimeError("EigenCal - Input matrix must be symmetric")
    n = A.shape[0]
    if n == 0:
        return np.empty((0, 1), dtype=A.dtype), np.empty((0, 0), dtype=A.dtype)
    try:
        with np.errstate(all="ignore"):
            vals, vecs = np.linalg.eig(A.astype(np.float64))
    except np.linalg.LinAlgError as e:  # LAPACK's QR iteration did not converge
        raise DaphneRuntimeError(f"eigen: the eigenvalue computation failed ({e})") from e
    vals, vecs = np.real(vals), np.real(vecs)
    if A.dtype == np.float32:
        pivot = np.argmax(np.abs(vecs), axis=0)
        signs = np.where(vecs[pivot, np.arange(n)] < 0, -1.0, 1.0)
        vecs = vecs * signs
    return (np.ascontiguousarray(vals.reshape(n, 1).astype(A.dtype)), np.ascontiguousarray(vecs.astype(A.dtype)))


def warm_up() -> None:
    """LAPACK's first general eigensolve in a process pays for loading its code (~0.2 ms of PCA's ~0.75 ms `eigen`
    of a 50 x 50 covariance on this project's machine, 0.55 ms once warm); a program that calls `eigen` does it on
    the background warm-up thread while it reads its inputs (runtime/scheduling/warmup.py). The warm-up matrix is
    64 x 64: `dgeev` takes other code paths for a tiny matrix (unblocked reductions), so an 8 x 8 one left most of
    the cost to the first real call (a fresh process's first 50 x 50 eigensolve: 0.78-0.91 ms after no warm-up or
    an 8 x 8 one, 0.47-0.60 ms after a 64 x 64 one, 0.42 ms warm). Below 75 rows, the size of a covariance of tens
    of features, `dhseqr` runs its small-matrix QR iteration, which this one warms. No result depends on it."""
    a = np.arange(64.0 * 64.0).reshape(64, 64) % 7.0
    np.linalg.eig(a + a.T)
