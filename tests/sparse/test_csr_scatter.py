"""`t(G) @ x` of a CSR matrix by the native scatter (runtime/kernels/csr_scatter.py): the bits of scipy's CSC
kernel (`G.T @ x`, what `matmul(transa=True)` computed before), for weighted graphs and adjacency matrices of 1.0s,
32- and 64-bit indices, empty rows and columns, and special values (NaN, infinities, -0.0); operands it does not
take (non-canonical, wider right-hand sides, small, integer) keep scipy's path through `matmul`."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.fperr import ignoring
from daphnec.runtime.kernels import csr_scatter
from daphnec.runtime.kernels.matmul import matmul
from daphnec.runtime.values import csr_from_parts


@pytest.fixture(scope="module", autouse=True)
def _loops() -> None:
    csr_scatter.LOOPS.get()


def _graph(n: int, m: int, density: float, seed: int, ones: bool, index: type = np.int32):
    rng = np.random.default_rng(seed)
    G = sp.random_array((n, m), density=density, format="csr", rng=rng, dtype=np.float64)
    G.sum_duplicates()
    G.sort_indices()
    data = np.ones(G.nnz) if ones else rng.standard_normal(G.nnz) * 10.0 ** rng.integers(-8, 8, G.nnz)
    return csr_from_parts(data, G.indices.astype(index), G.indptr.astype(index), G.shape)


def _scipy(G, x: np.ndarray) -> np.ndarray:
    with ignoring():
        return np.asarray(G.T @ x)


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("ones", [True, False])
@pytest.mark.parametrize("index", [np.int32, np.int64])
def test_bits_of_scipy(ones: bool, index: type) -> None:
    G = _graph(3000, 2500, 0.02, 5, ones, index)  # 150,000 stored values: above MIN_NNZ
    x = np.random.default_rng(1).standard_normal((3000, 1))
    x[::7] *= 1e12  # large and small terms: any change of the order of additions would show in the bits
    assert csr_scatter.applies(G, x)
    got = csr_scatter.transposed_matvec(G, x)
    assert _same_bits(got, _scipy(G, x))
    with ignoring():
        assert _same_bits(csr_scatter.matmul_transposed_csr(G, x, "f64", transa=True), got)
        assert _same_bits(matmul(G, x, "f64", transa=True), got)


def _without_rows(G, lo: int, hi: int):
    """G with rows lo..hi-1 emptied (canonical CSR, G's index type)."""
    counts = np.diff(G.indptr)
    kept = (np.arange(G.shape[0]) < lo) | (np.arange(G.shape[0]) >= hi)
    cells = np.repeat(kept, counts)
    indptr = np.concatenate([[0], np.cumsum(counts * kept)]).astype(G.indptr.dtype)
    return csr_from_parts(G.data[cells], G.indices[cells], indptr, G.shape)


def test_special_values_and_empty_rows() -> None:
    G = _graph(2000, 2000, 0.02, 9, False)
    G.data[:50] = [np.nan, np.inf, -np.inf, -0.0, 0.0] * 10
    H = _without_rows(G, 400, 600)
    x = np.random.default_rng(2).standard_normal((2000, 1))
    x[3], x[5], x[8] = -0.0, np.inf, np.nan
    assert csr_scatter.applies(H, x)
    assert _same_bits(csr_scatter.transposed_matvec(H, x), _scipy(H, x))


def test_ones_keep_negative_zero() -> None:
    """`1.0 * -0.0` is -0.0: a column whose only terms are -0.0 sums to +0.0 from scipy's zeroed start, as here."""
    G = _graph(2000, 300, 0.1, 3, True)
    x = np.full((2000, 1), -0.0)
    assert _same_bits(csr_scatter.transposed_matvec(G, x), _scipy(G, x))


def test_operands_it_does_not_take_keep_scipys_path() -> None:
    G = _graph(3000, 2500, 0.02, 4, False)
    x = np.random.default_rng(0).standard_normal((3000, 1))
    assert not csr_scatter.applies(G, np.ascontiguousarray(np.hstack([x, x])))  # two columns
    assert not csr_scatter.applies(G, x.astype(np.float32))
    assert not csr_scatter.applies(G, np.hstack([x, x])[:, :1])  # a strided column
    assert not csr_scatter.applies(_graph(100, 100, 0.05, 1, False), x[:100])  # small: scipy's call
    unsorted = sp.csr_array((G.data.copy(), G.indices.copy(), G.indptr.copy()), shape=G.shape)
    unsorted.has_canonical_format = False
    assert not csr_scatter.applies(unsorted, x)
    wide = np.hstack([x, x])
    with ignoring():
        assert _same_bits(csr_scatter.matmul_transposed_csr(G, wide, "f64", transa=True), np.asarray(G.T @ wide))


def test_the_kernel_reports_matmuls_errors() -> None:
    G = _graph(3000, 2500, 0.02, 4, False)
    with pytest.raises(DaphneRuntimeError, match="shape mismatch"):
        csr_scatter.matmul_transposed_csr(G, np.ones((2500, 1)), "f64", transa=True)
