"""Property tests of the any-order sum of integer-valued matrices (compiler/analysis/integer_valued.py,
`agg.exact_sum_kernel`): its result equals DAPHNE's sequential fold bit for bit, for the kernel on random integer
matrices within its cell limit (and past it, where it folds in order), and for whole programs whose sums the
compiler marked (`daphne.exact_sum_cells`), against the same program with the sums fed through an opaque
non-integer step that keeps the sequential kernel."""

from __future__ import annotations

import struct

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from daphnec.compiler.analysis.integer_valued import EXACT_F32, EXACT_F64
from daphnec.runtime.config import DaphneConfig
from daphnec.runtime.kernels.agg import compared_sum_kernel, exact_sum_kernel, full_kernel
from daphnec.tools.driver import compile_source, run_bound

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def bits(x: float) -> bytes:
    return struct.pack("<d", x)


def sequential(values: np.ndarray) -> float:
    """DAPHNE's AggAll fold, in Python floats (f64) from +0."""
    acc = 0.0
    for v in values.ravel().tolist():
        acc += v
    return acc


@SETTINGS
@given(
    rows=st.integers(0, 300),
    cols=st.integers(1, 7),
    bound=st.sampled_from([0, 1, 3, 1000, 2**20, 2**40]),
    seed=st.integers(0, 2**16),
)
def test_kernel_equals_the_sequential_fold(rows, cols, bound, seed):
    rng = np.random.default_rng(seed)
    X = rng.integers(-bound, bound + 1, (rows, cols)).astype(np.float64)
    X[rng.random(X.shape) < 0.2] = -0.0  # -0 cells: the fold from +0 never returns -0
    cells = -1 if bound == 0 else EXACT_F64 // bound
    if 0 < cells < X.size:
        return  # such inputs take the fold itself (tested below)
    got = exact_sum_kernel("f64", cells)(X)
    assert bits(got) == bits(full_kernel("sum", "f64")(X)) == bits(sequential(X))


def test_kernel_over_its_limit_folds_in_order():
    """Past `max_cells` the kernel is the sequential fold (here values that are not integers at all, so a pairwise
    sum would differ: the kernel must not have taken it)."""
    X = np.array([[1e16], [1.0], [-1e16], [1.0]] * 4)
    kernel = exact_sum_kernel("f64", 4)
    assert bits(kernel(X)) == bits(sequential(X)) == bits(1.0)
    assert bits(float(np.sum(X))) != bits(1.0)  # pairwise: what the limit protects against


def test_kernel_f32():
    rng = np.random.default_rng(1)
    X = rng.integers(-3, 4, (500, 3)).astype(np.float32)
    got = exact_sum_kernel("f32", EXACT_F32 // 3)(X)
    assert bits(got) == bits(full_kernel("sum", "f32")(X))


def run(text: str, inputs: list[np.ndarray]) -> tuple[object, str]:
    program = compile_source(text, "<exact-sum-test>", DaphneConfig(), {})
    ir = str(program.module) if program.module is not None else ""
    return run_bound(program, list(inputs))[-1], ir


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.integers(1, 3000), seed=st.integers(0, 2**16), scale=st.sampled_from([1.0, 7.0, 2.0**30]))
def test_marked_program_equals_the_sequential_program(rows, seed, scale):
    """`sum((X > t) * w)` with an integer weight is marked and pairwise; the same expression plus a zero computed
    from the data (`0 * X`, not provably an integer: NaN-free data gives +-0) is not marked and folds in order.
    Both print the same bits (the mask's products and -0 cells included)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, (rows, 1))
    head = f'X = receiveFromNumpy(0, {rows}, 1, "f64");\nw = fill({scale}, {rows}, 1) - 2.0 * (X < -0.5) * {scale};\n'
    marked, ir = run(head + "R = fill(sum((X > 0.25) * w - (X < 0.0)), 1, 1);\nsaveDaphneLibResult(R);\n", [X])
    plain, plain_ir = run(
        head + "R = fill(sum((X > 0.25) * w - (X < 0.0) + 0.0 * X), 1, 1);\nsaveDaphneLibResult(R);\n", [X]
    )
    assert "daphne.exact_sum_cells" in ir, ir
    assert "daphne.exact_sum_cells" not in plain_ir, plain_ir
    got, want = float(np.asarray(marked).ravel()[0]), float(np.asarray(plain).ravel()[0])
    assert bits(got) == bits(want)


@SETTINGS
@given(
    rows=st.integers(2000, 6000),
    bound=st.sampled_from([1, 5, 2**20, 2**40, 2**45]),
    special=st.sampled_from([None, 0.5, np.nan, np.inf, -np.inf, 2.0**60, -0.0]),
    seed=st.integers(0, 2**16),
)
def test_run_time_integer_check_equals_the_sequential_fold(rows, bound, special, seed):
    """Without the compiler's proof, `sum` of a large float matrix checks for integer cells at run time
    (`agg._integer_sum`): the result equals the sequential fold bit for bit, whether the check passes (integers
    within 2^53 / cells) or fails (a fraction, NaN, an infinity, a cell too large: the fold itself runs)."""
    rng = np.random.default_rng(seed)
    X = rng.integers(-bound, bound + 1, (rows, 1)).astype(np.float64)
    if special is not None:
        X[rng.integers(0, rows), 0] = special
    got = full_kernel("sum", "f64")(X)
    want = sequential(X)
    assert bits(got) == bits(want) or (got != got and want != want)


@SETTINGS
@given(rows=st.integers(4096, 20000), seed=st.integers(0, 2**16), signed=st.booleans())
def test_compared_sum_answers_as_the_fold(rows, seed, signed):
    """`agg.compared_sum_kernel` (a sum the program only compares): every comparison with a threshold far from,
    near to, or exactly at the sequential fold's value (and the pairwise one's, and their neighbours) has the
    fold's outcome."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((rows, 1)) if signed else rng.random((rows, 1)) * 1e-3
    fold = full_kernel("sum", "f64")(X)
    got = compared_sum_kernel()(X)
    pairwise = float(np.sum(X))
    near = [fold, pairwise, np.nextafter(fold, np.inf), np.nextafter(fold, -np.inf), fold * (1 + 1e-13)]
    for t in [*near, fold + 1.0, fold - 1.0, 0.0, np.inf, -np.inf, np.nan]:
        for op in ("__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__"):
            assert getattr(got, op)(t) == getattr(fold, op)(float(t)), (op, t, fold, pairwise)
        assert (got > t) == (fold > t) and (t < got) == (t < fold) and (t >= got) == (t >= fold)


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.integers(4096, 9000), seed=st.integers(0, 2**16))
def test_compared_program_stops_where_the_fold_does(rows, seed):
    """A convergence loop whose test compares the sum with a threshold placed at the fold's value of one
    iteration (where the pairwise sum may be on the other side): the marked program counts the same iterations
    as the program whose sum is printed too (not marked)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((rows, 1))
    tol = full_kernel("sum", "f64")(np.abs(X * 0.5**3))  # the fold's value after 3 halvings
    loop = (
        f'X = receiveFromNumpy(0, {rows}, 1, "f64");\ndelta = {tol!r} + 1.0;\ni = 0;\n'
        f"while (delta > {tol!r} && i < 10) {{ X = X * 0.5; delta = sum(abs(X)); i = i + 1; }}\n"
    )
    marked, ir = run(loop + "R = fill(as.f64(i), 1, 1);\nsaveDaphneLibResult(R);\n", [X])
    plain, plain_ir = run(loop + "print(delta);\nR = fill(as.f64(i), 1, 1);\nsaveDaphneLibResult(R);\n", [X])
    assert "daphne.only_compared" in ir and "daphne.only_compared" not in plain_ir
    assert np.asarray(marked).ravel()[0] == np.asarray(plain).ravel()[0] == 3.0


def test_two_compared_sums_compare_their_folds():
    """Two compared sums compared with each other both resolve to their folds when close."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((5000, 1))
    a, b = compared_sum_kernel()(X), compared_sum_kernel()(X[::-1].copy())
    fa, fb = full_kernel("sum", "f64")(X), full_kernel("sum", "f64")(X[::-1].copy())
    assert (a < b) == (fa < fb) and (a == b) == (fa == fb) and (b > a) == (fb > fa)
