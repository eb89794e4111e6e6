"""numpy habits on lazy matrices (issue 25): `shape`, `ndim`, `dtype`, `len` where known before running (the
API's rules, else the compiler's inference, without running), `np.asarray(X)` and numpy's functions (they compute
the matrix and use numpy's semantics), and a notebook view that does not compute."""

from __future__ import annotations

import numpy as np
import pytest

from daphnec import DaphneContext
from daphnec.tools.daphnelib import session


def test_shape_ndim_dtype_len(dc: DaphneContext, tmp_path) -> None:  # noqa: ANN001
    a = np.arange(12.0).reshape(3, 4)
    A = dc.from_numpy(a)
    assert A.shape == (3, 4) and A.ndim == 2 and A.dtype == np.float64 and len(A) == 3
    assert (A @ A.t()).shape == (3, 3)
    i = dc.from_numpy(np.arange(6, dtype=np.int64).reshape(2, 3))
    assert (i * 2).dtype == np.int64 and i.sum(axis=0).shape == (2, 1)
    (tmp_path / "m.csv").write_text("1,2,3\n4,5,6\n")
    (tmp_path / "m.csv.meta").write_text('{"numRows": 2, "numCols": 3, "valueType": "f32"}')
    M = dc.readMatrix(str(tmp_path / "m.csv"))
    runs = session.stats()["runs"]
    assert M.shape == (2, 3) and M.dtype == np.float32 and len(M) == 2  # inferred by compiling, not running
    assert session.stats()["runs"] == runs


def test_numpy_functions_compute_the_matrix(dc: DaphneContext) -> None:
    a = np.arange(12.0).reshape(3, 4)
    A = dc.from_numpy(a)
    got = np.asarray(A + 1)
    assert isinstance(got, np.ndarray) and got.shape == (3, 4) and np.array_equal(got, a + 1)
    assert np.asarray(A, dtype=np.float32).dtype == np.float32
    assert np.mean(A) == a.mean() and np.sum(A) == a.sum()
    assert np.array_equal(np.mean(A, axis=0), a.mean(axis=0))  # numpy's axis when numpy calls
    assert np.max(A) == 11.0 and np.array_equal(np.min(A, axis=1), a.min(axis=1))
    assert np.array_equal(A.mean(axis=0).compute(), a.mean(axis=1, keepdims=True))  # DAPHNE's axis as a method
    assert np.array_equal(A.max(2).compute(), np.maximum(a, 2))  # element-wise max stays DaphneDSL's


def test_notebook_view_does_not_compute(dc: DaphneContext) -> None:
    A = dc.from_numpy(np.ones((2, 5)))
    runs = session.stats()["runs"]
    html = (A * 2)._repr_html_()
    assert html.startswith("<div><b>DAPHNE Matrix</b> 2 x 5 <code>f64</code>") and "compute()" in html
    assert session.stats()["runs"] == runs


def test_a_shape_only_the_run_knows_is_none(dc: DaphneContext) -> None:
    A = dc.from_numpy(np.arange(10.0).reshape(10, 1))
    n = dc.from_numpy(np.array([[3]])).sum()  # a number that is data, not a literal
    S = A[0:n, :]
    rows, cols = S.shape
    assert cols == 1 and rows in (None, 3)
    assert len(S) == 3
    with pytest.raises(TypeError):
        bool(A)  # still lazy: the truth value needs compute()
