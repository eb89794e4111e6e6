"""Data in and out: numpy and pandas round trips for every value type, zero-copy both ways (np.shares_memory on
results, tracemalloc on inputs), DaphneLib's `files` transfer, tensors, and scalars as Python values."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pandas as pd
import pytest
from api_harness import run_dsl

from daphnec import DaphneContext

NUMERIC = [np.float64, np.float32, np.int64, np.int32, np.int8, np.uint64, np.uint32, np.uint8, np.bool_]


def _matrix(dtype: type, order: str = "C") -> np.ndarray:
    a = (np.arange(12).reshape(3, 4) * 7 % 5).astype(dtype)
    return np.asarray(a, order=order)


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("dtype", NUMERIC, ids=lambda t: np.dtype(t).name)
def test_numpy_round_trip_is_zero_copy(dc: DaphneContext, dtype: type, order: str) -> None:
    a = _matrix(dtype, order)
    r = dc.from_numpy(a).compute()
    assert r.dtype == a.dtype and r.shape == a.shape and np.array_equal(r, a)
    assert np.shares_memory(r, a) and r.flags.writeable
    # what the program sees is the array itself: the same sum as a DaphneDSL matrix of that type
    total = dc.from_numpy(a).sum().compute()
    assert total == run_dsl("saveDaphneLibResult(sum(receiveFromNumpy(0, 3, 4, 7)));", [a.astype(np.float64)]) or (
        dtype is np.bool_
    )


@pytest.mark.parametrize("dtype", NUMERIC, ids=lambda t: np.dtype(t).name)
def test_numpy_results_keep_value_types(dc: DaphneContext, dtype: type) -> None:
    a = _matrix(dtype)
    X = dc.from_numpy(a)
    expected_vt = run_dsl(f'X = receiveFromNumpy(0, 3, 4, "{_vt(dtype)}");\nsaveDaphneLibResult(t(X));\n', [a]).dtype  # type: ignore[union-attr]
    r = X.t().compute()
    assert r.dtype == expected_vt == a.dtype and np.array_equal(r, a.T)


def _vt(dtype: type) -> str:
    from daphnec.dialects.value_types import VT_OF_DTYPE

    return VT_OF_DTYPE[np.dtype(dtype)]


def test_strings_and_shapes(dc: DaphneContext) -> None:
    s = np.array([["a", "bc"], ["d,e", 'f"g']])
    r = dc.from_numpy(s).compute()
    assert r.dtype == object and r.tolist() == s.tolist()
    assert dc.from_numpy(np.arange(5.0)).compute().shape == (5, 1)  # 1-D: a column
    m, shape = dc.from_numpy(np.arange(24.0).reshape(2, 3, 4), return_shape=True)
    assert shape == (2, 3, 4) and m.compute().shape == (2, 12)
    assert dc.from_python([[1, 2], [3, 4]]).compute().dtype == np.int64
    assert dc.from_python([1.5, 2.5]).compute().tolist() == [[1.5], [2.5]]
    r16 = dc.from_numpy(np.array([[1, -2]], dtype=np.int16)).compute()
    assert r16.dtype == np.int32 and r16.tolist() == [[1, -2]]  # widened before the transfer (DaphneLib: not)


def test_strided_views_and_empty(dc: DaphneContext) -> None:
    big = np.arange(40.0).reshape(5, 8)
    view = big[1:4, ::2]  # neither C- nor F-contiguous
    assert np.array_equal(dc.from_numpy(view).compute(), view)
    assert np.array_equal((dc.from_numpy(view) * 2).compute(), view * 2)
    empty = np.zeros((0, 3))
    assert dc.from_numpy(empty).compute().shape == (0, 3)


def test_inputs_are_not_copied_and_not_changed(dc: DaphneContext) -> None:
    a = np.random.default_rng(1).random((1000, 1000))
    keep = a.copy()
    X = dc.from_numpy(np.zeros((1000, 1000)))
    for warm in (X.nrow(), X, X[0:10,] * 2):  # compile first: only the runs are measured
        warm.compute()
    for build in (lambda M: M.nrow(), lambda M: M, lambda M: M[0:10,] * 2):
        Y = dc.from_numpy(a)
        tracemalloc.start()
        try:
            build(Y).compute()
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < a.nbytes // 16, peak  # an 8 MB input, at most 0.5 MB allocated: never copied
    Z = dc.from_numpy(a)
    Z[0, 0] = 5.0  # copy-on-write: the caller's array is not written
    assert Z.compute()[0, 0] == 5.0 and np.array_equal(a, keep)


def test_result_views_share_memory(dc: DaphneContext) -> None:
    a = np.asfortranarray(np.random.default_rng(2).random((50, 40)))
    X = dc.from_numpy(a)
    t = X.t().compute()  # transposing an F-ordered matrix gives a C-ordered view
    assert np.shares_memory(t, a) and np.array_equal(t, a.T) and t.flags.writeable
    r = (X + 1).compute()
    assert not np.shares_memory(r, a) and np.array_equal(r, a + 1)


def test_scalars_are_python_values(dc: DaphneContext) -> None:
    for build, typ in (
        (lambda: dc.fill(2.5, 2, 2).sum(), float),
        (lambda: dc.fill(3, 2, 2).sum(), int),
        (lambda: dc.fill(3, 2, 2).nrow(), int),
        (lambda: dc.fill(3.0, 2, 2).asType(vtype="f32").sum(), float),
        (lambda: dc.fill(3.0, 2, 2).sum() > 1, float),
        (lambda: (dc.fill(1, 1, 1) > 0).asType(vtype="bool").sum(), bool),
    ):
        v = build().compute()
        assert type(v) is typ, (v, typ)


# --- pandas ------------------------------------------------------------------------------------------------------


def _frame() -> pd.DataFrame:
    n = 5
    return pd.DataFrame(
        {
            "f64": np.linspace(-1, 1, n),
            "f32": np.arange(n, dtype=np.float32),
            "si64": np.arange(n, dtype=np.int64) - 2,
            "si32": np.arange(n, dtype=np.int32),
            "si8": np.arange(n, dtype=np.int8),
            "ui64": np.arange(n, dtype=np.uint64),
            "ui32": np.arange(n, dtype=np.uint32),
            "ui8": np.arange(n, dtype=np.uint8),
            "bool": np.array([True, False, True, True, False]),
            "str": ["a", "b,c", 'q"x', "", "e"],
        }
    )


def test_pandas_round_trip(dc: DaphneContext) -> None:
    df = _frame()
    r = dc.from_pandas(df).compute()
    assert list(r.columns) == list(df.columns)
    for c in df.columns:
        assert r[c].tolist() == df[c].tolist(), c
        if c != "str":
            assert r[c].dtype == df[c].dtype, c
            assert np.shares_memory(r[c].to_numpy(), df[c].to_numpy()), c  # zero-copy both ways
    printed = dc.from_pandas(df).ncol().compute()
    assert printed == 10


def test_pandas_special_columns(dc: DaphneContext) -> None:
    df = pd.DataFrame({"cat": pd.Categorical(["x", "y", "x"]), "i16": np.array([1, 2, 3], dtype=np.int16)})
    codes = dc.from_pandas(df).compute()
    assert codes["cat"].tolist() == [0, 1, 0] and codes["i16"].dtype == np.int32  # DaphneLib: codes
    values = dc.from_pandas(df, categorical="values").compute()
    assert values["cat"].tolist() == ["x", "y", "x"]
    s = pd.Series([1.5, 2.5], name="v")
    assert dc.from_pandas(s).compute()["v"].tolist() == [1.5, 2.5]
    nullable = pd.DataFrame({"n": pd.array([1, 2], dtype="Int64")})
    assert dc.from_pandas(nullable).compute()["n"].dtype == np.int64
    with pytest.raises(ValueError, match="missing values"):
        dc.from_pandas(pd.DataFrame({"s": ["a", None]}))
    with pytest.raises(TypeError, match='Unsupported numpy dtype in column "t"'):
        dc.from_pandas(pd.DataFrame({"t": pd.to_datetime(["2020-01-01"])}))


def test_pandas_index(dc: DaphneContext) -> None:
    df = pd.DataFrame({"v": [1.0, 2.0]}, index=pd.Index([10, 20], name="index"))
    F = dc.from_pandas(df, keepIndex=True)
    assert list(df.columns) == ["v"]  # the caller's frame is not modified (DaphneLib resets it in place)
    r = F.compute()
    assert list(r.columns) == ["index", "v"] and r["index"].tolist() == [10, 20]
    r = F.compute(useIndexColumn=True)
    assert list(r.columns) == ["v"] and r.index.tolist() == [10, 20]


# --- files (DaphneLib's `shared_memory=False` / `type="files"`) -----------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.int32, np.uint8, np.int8], ids=str)
def test_files_transfer_of_matrices(dc: DaphneContext, dtype: type) -> None:
    a = (np.arange(12).reshape(3, 4) * 1.25 - 3).astype(dtype)
    X = dc.from_numpy(a, shared_memory=False)
    r = X.compute()
    assert r.dtype == a.dtype and np.array_equal(r, a) and not np.shares_memory(r, a)
    rf = X.compute(type="files")  # written by DAPHNE's writer: %f (six decimals), read back with its .meta
    assert rf.dtype == a.dtype and np.allclose(rf, a, atol=1e-6)
    assert (X * 2).sum().compute(type="files") == (a.astype(np.float64) * 2).sum().astype(a.dtype).item() or dtype in (
        np.int8,
        np.uint8,
    )


def test_files_transfer_of_frames(dc: DaphneContext) -> None:
    df = _frame().drop(columns=["bool"])
    F = dc.from_pandas(df, shared_memory=False)
    r = F.compute()
    assert list(r.columns) == list(df.columns)  # DaphneLib's reader eats the first row as a header
    for c in df.columns:
        assert r[c].tolist() == df[c].tolist(), c
    rf = dc.from_pandas(df).compute(type="files")
    assert rf.shape == df.shape and rf["str"].tolist() == df["str"].tolist()
    with pytest.raises(RuntimeError, match="unknown way to transfer the data: 'ftp'"):
        F.compute(type="ftp")


def test_tensors_need_their_library(dc: DaphneContext) -> None:
    """from_pytorch/from_tensorflow: the conversion when the library is there, else its ImportError (DaphneLib)."""
    for name, method in (("torch", dc.from_pytorch), ("tensorflow", dc.from_tensorflow)):
        try:
            lib = __import__(name)
        except ImportError:
            with pytest.raises(ImportError):
                method(np.zeros((2, 2)))
            continue
        t = lib.ones((2, 3, 2), dtype=lib.float64) if name == "torch" else lib.ones((2, 3, 2), dtype=lib.float64)
        m, shape = method(t, return_shape=True)
        assert m.compute().shape == (2, 6) and tuple(shape) == (2, 3, 2)
