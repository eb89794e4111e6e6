"""`order` by one column (runtime/kernels/reorg.py: a stable argsort, no ranking first) gives the permutation of
DAPHNE's stable sort: the one the multi-column path (ranks of `np.unique`, then `lexsort`) gives, on ties, NaNs,
-0.0, integer extremes and strings, ascending and descending, as indexes and as sorted rows (the sorted rows of a
one-column matrix without zeros or NaNs come from a value sort: the same bits)."""

from __future__ import annotations

import numpy as np
import pytest

from daphnec.runtime.kernels.reorg import order


def _by_ranks(column: np.ndarray, asc: bool) -> np.ndarray:
    """The reference: stable lexicographic sort of the column's ranks (the multi-column path of `order`)."""
    _, rank = np.unique(column, return_inverse=True)
    rank = rank.reshape(-1).astype(np.int64)
    return np.lexsort([rank if asc else -rank])


RNG = np.random.default_rng(11)
COLUMNS = {
    "floats with ties": RNG.integers(0, 5, 200).astype(np.float64) / 2,
    "nan and signed zeros": np.array([0.0, np.nan, -0.0, 1.5, np.nan, -2.0, 0.0, -0.0, 1.5, np.inf, -np.inf]),
    "int extremes": np.array([3, np.iinfo(np.int64).min, 0, np.iinfo(np.int64).max, 3, -1, np.iinfo(np.int64).min]),
    "uint": np.array([5, 0, 2**64 - 1, 5, 7], dtype=np.uint64),
    "f32 eigenvalues": RNG.standard_normal(50).astype(np.float32),
    "strings": np.array(["b", "a", "c", "a", "", "b"], dtype=object),
    "floats without zeros or NaN (sorted by value)": RNG.integers(1, 9, 3000).astype(np.float64) - 0.5,
    "doubles (sorted by value)": RNG.standard_normal(20000),
}


@pytest.mark.parametrize("name", list(COLUMNS))
@pytest.mark.parametrize("asc", [True, False])
def test_one_key_order_is_the_ranked_stable_sort(name: str, asc: bool) -> None:
    column = COLUMNS[name]
    want = _by_ranks(column, asc)
    X = column.reshape(-1, 1)
    idx = order(X, 0, asc, True)
    assert idx.dtype == np.uint64 and idx.shape == (len(column), 1)
    assert idx.ravel().tolist() == want.tolist()
    rows = order(X, 0, asc, False)
    assert rows.flags.c_contiguous and rows.dtype == X.dtype and rows.shape == X.shape
    if X.dtype == object:
        assert rows.ravel().tolist() == X[want].ravel().tolist()
    else:  # bit for bit: the order of -0.0 and 0.0, NaN payloads
        assert rows.tobytes() == X[want].tobytes()


def test_one_key_of_several_columns_moves_whole_rows() -> None:
    X = np.array([[2.0, 10.0], [1.0, 20.0], [2.0, 30.0], [1.0, 40.0]])
    assert order(X, 0, False, False).tolist() == [[2.0, 10.0], [2.0, 30.0], [1.0, 20.0], [1.0, 40.0]]
    assert order(X, 1, False, True).ravel().tolist() == [3, 2, 1, 0]
    assert order(np.empty((0, 2)), 1, True, True).shape == (0, 1)
