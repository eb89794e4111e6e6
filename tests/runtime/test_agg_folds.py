"""Aggregation kernels against DAPHNE's loops written out in Python (AggAll.h, AggRow.h, AggCol.h): the native
sequential sums (`runtime.kernels.native_folds`) and numpy's cumsum path give the same bits as the C++ left folds,
and the vectorised min/max keep `std::min`/`std::max`'s NaN and +0/-0 behaviour."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from daphnec.runtime.kernels import agg, native_folds

SPECIAL = [0.0, -0.0, np.nan, np.inf, -np.inf, 1e300, -1e300, 1e-300, 3.0, -3.0]


def _fold(values, op: str, start, dt):
    """DAPHNE's `agg = func(agg, v)` over `values` in order; min/max are `std::min`/`std::max`."""
    acc = start
    for v in values:
        v = dt.type(v)
        if op == "sum":
            acc = dt.type(acc + v)
        elif op == "aggMin":
            acc = v if v < acc else acc
        else:
            acc = v if acc < v else acc
    return acc


def _reference(op: str, A: np.ndarray, axis: str):
    dt = A.dtype
    neutral = {"sum": dt.type(0), "aggMin": dt.type(np.inf), "aggMax": dt.type(-np.inf)}[op]
    if axis == "all":
        return _fold(A.ravel(), op, neutral, dt)
    lines = A if axis == "row" else A.T
    return np.array([_fold(line[1:], op, line[0], dt) for line in lines], dtype=dt)


def _same_bits(x, y, nan_bits: bool = True) -> bool:
    """Bit-identical (NaN payloads included unless `nan_bits` is False: numpy's scalar `+` of two NaNs does not keep
    the first operand's NaN like x86's `addsd` in the C++ loop, so the Python reference cannot tell them apart)."""
    x, y = np.asarray(x, dtype=np.asarray(y).dtype), np.asarray(y)
    if not nan_bits:
        both = np.isnan(x) & np.isnan(y)
        x, y = np.where(both, 0, x), np.where(both, 0, y)
    return x.tobytes() == y.tobytes()


@st.composite
def matrices(draw):
    dt = np.dtype(draw(st.sampled_from([np.float64, np.float32])))
    rows, cols = draw(st.integers(1, 9)), draw(st.integers(1, 9))
    pool = st.one_of(st.sampled_from(SPECIAL), st.floats(-1e6, 1e6, allow_nan=False, width=32))
    cells = draw(st.lists(pool, min_size=rows * cols, max_size=rows * cols))
    with np.errstate(all="ignore"):
        return np.array(cells, dtype=dt).reshape(rows, cols)


@pytest.fixture(params=["numpy", "native"])
def path(request, monkeypatch):
    """Run the sums through numpy's cumsum (the small-input path) or force the native loops."""
    if request.param == "native":
        monkeypatch.setattr(native_folds, "MIN_NATIVE_CELLS", 0)
        monkeypatch.setattr(native_folds, "MIN_FIRST_CELLS", 0)
    else:
        monkeypatch.setattr(native_folds, "MIN_NATIVE_CELLS", 1 << 62)
    return request.param


@pytest.mark.parametrize("op", ["sum", "aggMin", "aggMax"])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(A=matrices())
def test_fold_matches_daphne_loops(path, op, A):
    vt = "f64" if A.dtype == np.float64 else "f32"
    with np.errstate(all="ignore"):
        assert _same_bits(agg.full_kernel(op, vt)(A), _reference(op, A, "all"), op != "sum")
        assert _same_bits(agg.row_kernel(op, vt)(A).ravel(), _reference(op, A, "row"), op != "sum")
        assert _same_bits(agg.col_kernel(op, vt)(A).ravel(), _reference(op, A, "col"), op != "sum")


@pytest.mark.parametrize("shape", [(4096, 1), (1, 4096), (70, 61), (1000, 5)])
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_native_sums_equal_cumsum_on_large_inputs(monkeypatch, shape):
    rng = np.random.default_rng(7)
    A = rng.standard_normal(shape) * 10.0 ** rng.integers(-8, 8, shape)
    A.flat[rng.integers(0, A.size, 40)] = rng.choice(SPECIAL, 40)  # NaN payloads and signed zeros as cumsum's
    monkeypatch.setattr(native_folds, "MIN_FIRST_CELLS", 0)
    assert native_folds.applies(A)
    assert _same_bits(native_folds.fold_rows(A), np.cumsum(A, axis=1)[:, -1])
    assert _same_bits(native_folds.fold_cols(A), np.cumsum(A, axis=0)[-1])
    assert _same_bits(native_folds.fold_all(A), np.cumsum(A.ravel())[-1])
    F = A.astype(np.float32)
    assert _same_bits(native_folds.fold_all(F), np.cumsum(F.ravel(), dtype=np.float32)[-1])
    view = A[:, ::-1] if shape[1] > 1 else A[::-1]  # non-contiguous input
    assert _same_bits(native_folds.fold_rows(view), np.cumsum(view, axis=1)[:, -1])


def test_mean_var_stddev_equal_on_both_paths(monkeypatch):
    rng = np.random.default_rng(3)
    A = rng.random((3000, 7))
    kernels = [
        k(op, "f64") for op in ("mean", "var", "stddev") for k in (agg.full_kernel, agg.row_kernel, agg.col_kernel)
    ]
    monkeypatch.setattr(native_folds, "MIN_NATIVE_CELLS", 1 << 62)
    expected = [np.asarray(k(A)) for k in kernels]  # numpy's cumsum
    monkeypatch.setattr(native_folds, "MIN_NATIVE_CELLS", 0)
    monkeypatch.setattr(native_folds, "MIN_FIRST_CELLS", 0)
    for k, want in zip(kernels, expected):
        assert _same_bits(k(A), want)


@pytest.mark.parametrize("shape", [(9000, 8), (70, 61), (3, 2500), (5001, 2), (40, 17), (2, 3)])
@pytest.mark.parametrize("dt", [np.float64, np.float32])
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_numpy_ordered_folds_equal_the_left_fold(monkeypatch, shape, dt):
    """Without the native loops, row/column sums (numpy's in-order axis-0 reduce over transposed row blocks) and
    narrow row min/max (fmin/fmax over transposed row blocks, then the order fix-ups) give the bits of the
    sequential folds, signed zeros and NaNs included, across block boundaries and for non-contiguous inputs."""
    monkeypatch.setattr(native_folds, "MIN_NATIVE_CELLS", 1 << 62)
    monkeypatch.setattr(agg, "_BLOCK_CELLS", 64)  # many blocks, a 1-row last block for some shapes
    monkeypatch.setattr(agg, "_MIN_BLOCK_ROWS", 2)
    rng = np.random.default_rng(11)
    A = (rng.standard_normal(shape) * 10.0 ** rng.integers(-8, 8, shape)).astype(dt)
    A.flat[rng.integers(0, A.size, A.size // 3)] = rng.choice(SPECIAL, A.size // 3)
    A[: shape[0] // 2, : shape[1] // 2] = -0.0  # rows and columns of -0 only
    vt = "f64" if dt == np.float64 else "f32"
    for M in (A, A[:, ::-1]):
        assert _same_bits(agg.row_kernel("sum", vt)(M).ravel(), np.cumsum(M, axis=1)[:, -1])
        assert _same_bits(agg.col_kernel("sum", vt)(M).ravel(), np.cumsum(M, axis=0)[-1])
        for op in ("aggMin", "aggMax"):
            assert _same_bits(agg.row_kernel(op, vt)(M).ravel(), _reference(op, M, "row"))


@pytest.mark.parametrize("op", ["var", "stddev"])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(A=matrices(), left=st.integers(0, 2), right=st.integers(0, 2))
def test_row_and_column_statistics_equal_on_both_paths_also_on_column_slices(monkeypatch, op, A, left, right):
    """var/stddev per row and per column: the native fold of squared deviations (no `A - mean` and no square
    materialised) gives numpy's bits, on a matrix and on a column slice of a wider one (read in place); NaN
    payloads aside, as for the sums (LLVM may commute an fadd of two NaNs)."""
    vt = "f64" if A.dtype == np.float64 else "f32"
    wide = np.concatenate([np.full((A.shape[0], left), 7, A.dtype), A, np.full((A.shape[0], right), 7, A.dtype)], 1)
    view = wide[:, left : left + A.shape[1]]
    kernels = (agg.row_kernel(op, vt), agg.col_kernel(op, vt))
    with np.errstate(all="ignore"):
        monkeypatch.setattr(native_folds, "MIN_NATIVE_CELLS", 1 << 62)
        want = [k(A) for k in kernels]
        monkeypatch.setattr(native_folds, "MIN_NATIVE_CELLS", 0)
        monkeypatch.setattr(native_folds, "MIN_FIRST_CELLS", 0)
        for k, w in zip(kernels, want):
            assert _same_bits(k(A), w, False) and _same_bits(k(view), w, False)


def test_native_folds_read_a_column_slice_in_place(monkeypatch):
    """A column slice (rows at a larger distance) is folded where it lies: no contiguous copy is made."""
    monkeypatch.setattr(native_folds, "MIN_FIRST_CELLS", 0)
    rng = np.random.default_rng(9)
    X = rng.standard_normal((500, 40))
    view = X[:, 3:30]
    A, ld = native_folds.rows_of(view)
    assert A is view and ld == 40
    assert _same_bits(native_folds.fold_cols(view), np.cumsum(view, axis=0)[-1])
    assert _same_bits(native_folds.fold_rows(view), np.cumsum(view, axis=1)[:, -1])
    mean = view.mean(axis=0)
    assert _same_bits(native_folds.fold_squared_deviations(view, mean, 0), np.cumsum((view - mean) ** 2, axis=0)[-1])
    assert native_folds.rows_of(X[::-1])[0] is not X  # reversed rows: copied


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_column_statistics_in_blocks_equal_the_fold_of_the_materialised_squares(monkeypatch):
    """var/stddev per column without the native loops: computed block by block (many blocks here), the same bits
    as folding `(A - mean)^2` materialised, NaN columns included."""
    monkeypatch.setattr(native_folds, "MIN_NATIVE_CELLS", 1 << 62)
    rng = np.random.default_rng(12)
    A = rng.standard_normal((20000, 9)) * 10.0 ** rng.integers(-4, 4, (20000, 9))
    A[rng.integers(0, 20000, 3), 4] = np.nan
    mean = np.cumsum(A, axis=0)[-1] / A.shape[0]
    dev = A - mean
    want = np.cumsum(dev * dev, axis=0)[-1]
    got = agg._column_squared_deviations(A, mean)
    assert _same_bits(got, want)
    assert _same_bits(agg.col_kernel("var", "f64")(A).ravel(), want / A.shape[0])


@st.composite
def masked_vectors(draw):
    """Mostly-zero vectors (a tree node's rows of `w * y`): signed zeros, specials and floats between."""
    dt = np.dtype(draw(st.sampled_from([np.float64, np.float32])))
    n = draw(st.integers(1, 60))
    pool = st.one_of(
        st.sampled_from([0.0, 0.0, 0.0, -0.0, -0.0]),
        st.sampled_from(SPECIAL),
        st.floats(-1e6, 1e6, allow_nan=False, width=32),
    )
    cells = draw(st.lists(pool, min_size=n, max_size=n))
    with np.errstate(all="ignore"):
        return np.array(cells, dtype=dt).reshape(n, 1)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(A=masked_vectors())
def test_fold_of_the_non_zeros_is_the_left_fold(monkeypatch, A):
    """`agg._fold_nonzeros` (full sums of mostly-zero vectors add their non-zero cells only) gives the bits of the
    left fold over all cells, -0 and all-zero vectors included; the threshold is lowered to reach small inputs."""
    monkeypatch.setattr(agg, "_MIN_ZERO_CHECK", 1)
    monkeypatch.setattr(agg, "_MIN_INTEGER_CHECK", 1 << 62)
    monkeypatch.setattr(native_folds, "MIN_NATIVE_CELLS", 1 << 62)
    vt = "f64" if A.dtype == np.float64 else "f32"
    with np.errstate(all="ignore"):
        assert _same_bits(agg.full_kernel("sum", vt)(A), _reference("sum", A, "all"), False)
        direct = agg._fold_nonzeros(A.ravel())
        if direct is not None:
            assert _same_bits(direct + A.dtype.type(0) if direct == 0 else direct, _reference("sum", A, "all"), False)


def test_fold_of_the_non_zeros_takes_a_masked_vector_only():
    rng = np.random.default_rng(3)
    y = rng.random(25_000)
    masked = y * (rng.random(25_000) < 0.125)
    assert agg._fold_nonzeros(masked) is not None and agg._fold_nonzeros(y) is None
    assert _same_bits(agg._fold_nonzeros(masked), np.cumsum(masked)[-1])


def test_column_sums_never_build_the_native_folds() -> None:
    """A column sum or variance large enough to build the native folds (a column slice of 10M cells in lmDS) takes
    numpy's in-order axis-0 reduce instead, reading the slice in place: the same bits as the native fold (the left
    fold of every column), without loading llvmlite inside the kernel. Row sums still build them."""
    code = """
import sys
import numpy as np
from daphnec.runtime.kernels import agg, native_folds
native_folds.MIN_FIRST_CELLS = 1000
rng = np.random.default_rng(5)
D = rng.standard_normal((4000, 31)) * np.exp(rng.uniform(-20, 20, (4000, 31)))
X = D[:, 0:30]
got = agg.col_kernel("sum", "f64")(X)
want = np.cumsum(X, axis=0)[-1]
var = agg.col_kernel("var", "f64")(X)  # column statistics too
print(native_folds.LOOPS.built, "llvmlite.binding" in sys.modules, np.array_equal(got.ravel(), want))
agg.row_kernel("sum", "f64")(np.ascontiguousarray(X))
print(native_folds.LOOPS.built, np.array_equal(got.ravel(), native_folds.fold_cols(X)))
mean = agg.col_kernel("mean", "f64")(X).ravel()
print(np.array_equal(var.ravel(), native_folds.fold_squared_deviations(X, mean, 0) / X.shape[0]))
"""
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert res.stdout.split() == ["False", "False", "True", "True", "True", "True"]


def test_a_process_with_llvmlite_loaded_builds_the_folds_in_the_background() -> None:
    """A JIT kernel's thread loads llvmlite; a fold below `MIN_FIRST_CELLS` then takes numpy's path (the same bits)
    instead of building the folds inside the kernel (0.27-0.5 s beside a cold run's JIT), and the folds are built
    on a background thread for the later folds."""
    code = """
import time
import numpy as np
import llvmlite.binding  # noqa: F401 - what a JIT kernel's thread does
from daphnec.runtime.kernels import agg, native_folds
rng = np.random.default_rng(7)
X = rng.standard_normal((3000, 40)) * np.exp(rng.uniform(-20, 20, (3000, 40)))
assert native_folds.MIN_NATIVE_CELLS <= X.size < native_folds.MIN_FIRST_CELLS
first = agg.row_kernel("sum", "f64")(X)
print(native_folds.LOOPS.built)
deadline = time.monotonic() + 60
while not native_folds.LOOPS.built and time.monotonic() < deadline:
    time.sleep(0.01)
print(native_folds.LOOPS.built, native_folds.applies(X))
print(np.array_equal(first, agg.row_kernel("sum", "f64")(X)), np.array_equal(first.ravel(), native_folds.fold_rows(X)))
"""
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert res.stdout.split() == ["False", "True", "True", "True", "True"]
