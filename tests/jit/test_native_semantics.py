"""Native kernels reproduce the runtime kernels' edge cases exactly (fixed data, single operations).

Each case builds a one-op pipeline and compares the kernel's result bit for bit (NaN signs included: an
operation with one NaN operand, or none, has a defined x86 result) with the non-fused path.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest
from pipeline_harness import (  # noqa: F401 - no_disk_cache is an autouse fixture
    C_ADD,
    C_MAX,
    C_MIN,
    C_ROWS,
    NONE,
    NP,
    ROWS,
    Calls,
    build,
    mat,
    native_kernel,
    no_disk_cache,
    reference,
    run_native,
    same_bits,
)

from daphnec.compiler.lowering.kernel_plan import try_plan
from daphnec.runtime.errors import DaphneRuntimeError

NEG_NAN = struct.unpack("<d", struct.pack("<Q", 0xFFF8000000000000))[0]
NAN = float("nan")
INF = float("inf")
FLOATS = np.array(
    [
        [
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            -0.5,
            2.5,
            -2.5,
            INF,
            -INF,
            NAN,
            NEG_NAN,
            5e-324,
            1e308,
            9.3e18,
            -9.3e18,
            1.9e19,
            2.1e9,
            -2.2e9,
            255.7,
        ]
    ]
)
INT_VTS = ("si64", "si32", "si8", "ui64", "ui32", "ui8")


def _ints(values: list[int], vt: str) -> np.ndarray:
    """A 1 x n matrix of `vt` holding `values` wrapped to the type (two's complement)."""
    bits = np.iinfo(NP[vt]).bits
    return np.array([[v % (1 << bits) for v in values]], dtype=object).astype(f"u{bits // 8}").view(NP[vt])


def check_native_equals_reference(p, inputs, expect_fallback: bool = False):
    calls = Calls()
    ref = reference(p, inputs)
    got = run_native(p, inputs, 1 << 40, calls)
    for a, b in zip(ref, got):
        assert same_bits(a, b), f"{a!r} vs {b!r}"
    assert (calls.fallbacks > 0) == expect_fallback
    return got


def check_pair(kind: str, vt: str, x: np.ndarray, y: np.ndarray):
    p = build(
        [(mat(vt, *x.shape), ROWS), (mat(vt, *y.shape), ROWS)], lambda b, a: [(b.binary(kind, a[0], a[1]), C_ROWS)]
    )
    return check_native_equals_reference(p, [x, y])


@pytest.mark.parametrize(
    "kind", ["add", "sub", "mul", "div", "mod", "min", "max", "eq", "neq", "lt", "le", "gt", "ge", "and", "or", "xor"]
)
@pytest.mark.parametrize("vt", ["f64", "f32"])
def test_float_binary_ops_on_special_values(kind: str, vt: str) -> None:
    """Every pairing of the special values; NaNs created by invalid operations get x86's sign bit."""
    v = FLOATS.astype(NP[vt])
    x = np.repeat(v, v.shape[1], axis=0)
    y = np.ascontiguousarray(x.T)
    with np.errstate(all="ignore"):
        check_pair(kind, vt, x, y)


@pytest.mark.parametrize("kind", ["add", "sub", "mul", "min", "max", "bitwiseAnd", "eq", "lt", "ge", "and", "xor"])
@pytest.mark.parametrize("vt", INT_VTS + ("bool",))
def test_integer_binary_ops_wrap(kind: str, vt: str) -> None:
    info = np.iinfo(NP[vt]) if vt != "bool" else None
    vals = [0, 1, 2, 3] + ([info.max, info.min, info.max - 1] if info else [])
    v = np.array([vals], dtype=object).astype(NP[vt])
    x = np.repeat(v, v.shape[1], axis=0)
    check_pair(kind, vt, x, np.ascontiguousarray(x.T))


@pytest.mark.parametrize("vt", INT_VTS)
def test_integer_division_truncates_and_min_by_minus_one_wraps(vt: str) -> None:
    info = np.iinfo(NP[vt])
    x = _ints([7, -7, info.min, info.max, 0, -1, 5], vt)
    y = _ints([2, 2, -1, -1, 3, 2, -2], vt)
    check_pair("div", vt, x, y)
    check_pair("mod", vt, x, y)


@pytest.mark.parametrize("kind", ["div", "mod"])
def test_integer_division_by_zero_raises_daphnes_error(kind: str) -> None:
    p = build(
        [(mat("si32", 2, 2), ROWS), (mat("si32", 2, 2), ROWS)], lambda b, a: [(b.binary(kind, a[0], a[1]), C_ROWS)]
    )
    x = np.array([[1, 2], [3, 4]], dtype=np.int32)
    with pytest.raises(DaphneRuntimeError, match="division by zero"):
        run_native(p, [x, np.array([[1, 0], [1, 1]], dtype=np.int32)], 1 << 40)


@pytest.mark.parametrize("src", ["f64", "f32"])
@pytest.mark.parametrize("dst", INT_VTS + ("bool", "f32", "f64"))
def test_casts_reproduce_x86_conversions(src: str, dst: str) -> None:
    """cvttsd2si: out of range and NaN give the integer indefinite value; narrow types keep the low bits."""
    p = build([(mat(src, *FLOATS.shape), ROWS)], lambda b, a: [(b.cast(a[0], dst), C_ROWS)])
    with np.errstate(all="ignore"):
        check_native_equals_reference(p, [FLOATS.astype(NP[src])])


@pytest.mark.parametrize("src", INT_VTS + ("bool",))
@pytest.mark.parametrize("dst", INT_VTS + ("bool", "f32", "f64"))
def test_integer_casts(src: str, dst: str) -> None:
    info = np.iinfo(NP[src]) if src != "bool" else None
    vals = [0, 1, 2] + ([info.max, info.min, info.max // 3 + 7] if info else [])
    x = np.array([vals], dtype=object).astype(NP[src])
    p = build([(mat(src, *x.shape), ROWS)], lambda b, a: [(b.cast(a[0], dst), C_ROWS)])
    check_native_equals_reference(p, [x])


def test_scalar_operands_use_scalar_casts() -> None:
    """An si64 scalar added to an f32 matrix goes through double (values.cast_scalar), not straight to float."""
    big = (1 << 53) + 1
    p = build([(mat("f32", 1, 3), ROWS)], lambda b, a: [(b.binary("add", a[0], b.const(big, "si64")), C_ROWS)])
    check_native_equals_reference(p, [np.array([[0.0, 1.0, -1.0]], dtype=np.float32)])


@pytest.mark.parametrize("kind", ["minus", "abs", "sign", "round", "floor", "ceil", "isNan"])
@pytest.mark.parametrize("vt", ["f64", "f32"] + list(INT_VTS) + ["bool"])
def test_unary_ops(kind: str, vt: str) -> None:
    if vt in ("f64", "f32"):
        x = FLOATS.astype(NP[vt])
    else:
        info = np.iinfo(NP[vt]) if vt != "bool" else None
        x = np.array([[0, 1, 2] + ([info.max, info.min] if info else [])], dtype=object).astype(NP[vt])
    p = build([(mat(vt, *x.shape), ROWS)], lambda b, a: [(b.unary(kind, a[0]), C_ROWS)])
    with np.errstate(all="ignore"):
        check_native_equals_reference(p, [x])


def test_sqrt_domain_error_has_daphnes_message() -> None:
    p = build([(mat("f64", 1, 3), ROWS)], lambda b, a: [(b.unary("sqrt", a[0]), C_ROWS)])
    check_native_equals_reference(p, [np.array([[4.0, -0.0, NAN]])])
    with pytest.raises(DaphneRuntimeError, match=r"invalid argument '-2' passed to unary func SQRT"):
        run_native(p, [np.array([[4.0, -2.0, 1.0]])], 1 << 40)


def test_pow_is_native_for_exponent_two_and_falls_back_otherwise() -> None:
    def body(b, a):
        return [(b.binary("pow", a[0], a[1]), C_ROWS)]

    p = build([(mat("f64", 2, 2), ROWS), (mat("f64", 1, 1).element_type, NONE)], body)
    x = np.array([[1.5, -3.0], [NAN, 1e200]])
    calls = Calls()
    assert same_bits(run_native(p, [x, 2.0], 1 << 40, calls)[0], reference(p, [x, 2.0])[0])
    assert calls.fallbacks == 0
    assert same_bits(run_native(p, [x, 3.0], 1 << 40, calls)[0], reference(p, [x, 3.0])[0])
    assert calls.fallbacks == 1  # numpy's SIMD pow for any other exponent: the Python body


@pytest.mark.parametrize("agg", ["sum", "min", "max"])
@pytest.mark.parametrize("vt", ["f64", "f32", "si64", "ui8", "bool"])
def test_row_and_column_aggregates_are_exact(agg: str, vt: str) -> None:
    if vt.startswith("f"):
        x = np.array([[NAN, 1.0, -0.0], [0.0, -0.0, 2.0], [-0.0, NAN, 0.0], [INF, -INF, 3.0]], dtype=NP[vt])
    else:
        x = np.array([[1, 0, 3], [2, 2, 0], [0, 0, 0], [1, 1, 1]]).astype(NP[vt])
    combine = {"sum": C_ADD, "min": C_MIN, "max": C_MAX}[agg]
    p = build(
        [(mat(vt, *x.shape), ROWS)],
        lambda b, a: [(b.agg(agg, "row", a[0]), C_ROWS), (b.agg(agg, "col", a[0]), combine)],
    )
    check_native_equals_reference(p, [x])


def test_mean_row() -> None:
    x = np.array([[1, 2, 4], [-3, 0, 0]], dtype=np.int32)
    p = build([(mat("si32", 2, 3), ROWS)], lambda b, a: [(b.agg("mean", "row", a[0]), C_ROWS)])
    check_native_equals_reference(p, [x])


def test_full_min_max_skip_nans_and_keep_the_first_of_equal_zeros() -> None:
    x = np.array([[NAN, -0.0, 0.0], [NAN, 3.0, -1.0]])
    p = build(
        [(mat("f64", 2, 3), ROWS)],
        lambda b, a: [(b.agg("min", "all", a[0]), C_MIN), (b.agg("max", "all", b.unary("minus", a[0])), C_MAX)],
    )
    check_native_equals_reference(p, [x])


def test_broadcasts_row_column_and_scalar() -> None:
    x = np.arange(12.0).reshape(4, 3)
    col = np.array([[1.0], [2.0], [0.0], [-1.0]])
    row = np.array([[10.0, 0.0, -10.0]])

    def body(b, a):
        return [
            (b.binary("div", b.binary("sub", a[0], a[1]), a[2]), C_ROWS),
            (b.binary("max", b.const(5.0, "f64"), a[0]), C_ROWS),
        ]

    p = build([(mat("f64", 4, 3), ROWS), (mat("f64", 4, 1), ROWS), (mat("f64", 1, 3), NONE)], body)
    check_native_equals_reference(p, [x, col, row])


def test_transpose_and_extract_column() -> None:
    x = np.arange(12, dtype=np.int64).reshape(4, 3)
    p = build(
        [(mat("si64", 4, 3), ROWS)],
        lambda b, a: [(b.transpose(b.binary("mul", a[0], a[0])), 2), (b.extract_col(a[0], -1), C_ROWS)],
    )
    check_native_equals_reference(p, [x])


def test_blocks_of_another_form_go_to_the_python_body() -> None:
    """The kernel was compiled for dense f64 blocks: an int matrix or a CSR block runs the Python body."""
    from scipy import sparse

    p = build([(mat("f64", 3, 2), ROWS)], lambda b, a: [(b.agg("sum", "row", a[0]), C_ROWS)])
    calls = Calls()
    run_native(p, [np.ones((3, 2), dtype=np.int64)], 1 << 40, calls)
    run_native(p, [sparse.csr_array(np.eye(3, 2))], 1 << 40, calls)
    assert calls.fallbacks == 2


@pytest.mark.parametrize(
    "body, reason",
    [
        (lambda b, a: [(b.matmul(a[0], a[1]), C_ROWS)], "every op is run by its runtime kernel"),
        (lambda b, a: [(b.unary("exp", a[0]), C_ROWS)], "every op is run by its runtime kernel"),
        (lambda b, a: [(b.binary("add", a[0], a[1]), C_ROWS)], "a whole matrix input"),
    ],
)
def test_pipelines_without_native_work_keep_the_python_body(body, reason: str) -> None:
    p = build([(mat("f64", 3, 3), ROWS), (mat("f64", 3, 3), NONE)], body)
    plan, why = try_plan(p.op)
    assert plan is None and why.startswith(reason)


def check_staged(p, inputs, stages: int, fallback: bool = False):
    plan, why = try_plan(p.op)
    assert plan is not None, why
    assert len(plan.stages) == stages and plan.opaque
    return check_native_equals_reference(p, inputs, fallback)


def test_numpy_math_runs_between_native_stages() -> None:
    """`sum(exp(X - 1) * Y)`: stage 0 writes X - 1, numpy's exp runs on it, stage 1 multiplies and sums."""
    x = np.array([[0.5, -1.0, 700.0], [NAN, -INF, 2.0]])
    y = np.array([[1.0, 2.0, 0.0], [1.0, 1.0, -3.0]])
    p = build(
        [(mat("f64", 2, 3), ROWS), (mat("f64", 2, 3), ROWS)],
        lambda b, a: [
            (
                b.agg("max", "row", b.binary("mul", b.unary("exp", b.binary("sub", a[0], b.const(1.0, "f64"))), a[1])),
                C_ROWS,
            )
        ],
    )
    check_staged(p, [x, y], 2)


def test_opaque_domain_errors_raise_the_python_bodys_first_error() -> None:
    """ln of a negative raises; the Python body reruns the batch, so its first error (in body order) wins."""
    p = build(
        [(mat("f64", 1, 3), ROWS), (mat("si64", 1, 3), ROWS)],
        lambda b, a: [
            (
                b.binary(
                    "add",
                    b.unary("ln", b.binary("sub", a[0], b.const(1.0, "f64"))),
                    b.cast(b.binary("div", a[1], a[1]), "f64"),
                ),
                C_ROWS,
            )
        ],
    )
    with pytest.raises(DaphneRuntimeError, match="LN"):
        run_native(p, [np.array([[0.5, 2.0, 3.0]]), np.array([[1, 2, 3]])], 1 << 40)
    with pytest.raises(DaphneRuntimeError, match="division by zero"):
        run_native(p, [np.array([[2.5, 2.0, 3.0]]), np.array([[1, 0, 3]])], 1 << 40)
    check_staged(p, [np.array([[2.5, 2.0, 3.0]]), np.array([[1, 5, 3]])], 2)


def test_matmul_on_the_row_block_then_native_ops() -> None:
    """`rowSums((X @ W) * 2 + 1)`: BLAS (numpy's matmul kernel) on each row block, the rest fused."""
    rng = np.random.default_rng(3)
    x, w = rng.normal(size=(40, 5)), rng.normal(size=(5, 3))
    p = build(
        [(mat("f64", 40, 5), ROWS), (mat("f64", 5, 3), NONE)],
        lambda b, a: [
            (
                b.agg(
                    "sum",
                    "row",
                    b.binary("add", b.binary("mul", b.matmul(a[0], a[1]), b.const(2.0, "f64")), b.const(1.0, "f64")),
                ),
                C_ROWS,
            )
        ],
    )
    check_staged(p, [x, w], 1)


def test_log_and_matrix_power_are_opaque() -> None:
    x = np.array([[1.5, 8.0, 0.0], [-1.0, 2.0, 3.0]])
    y = np.array([[2.0, 0.5, 3.0], [2.0, 10.0, -1.0]])
    p = build(
        [(mat("f64", 2, 3), ROWS), (mat("f64", 2, 3), ROWS)],
        lambda b, a: [
            (
                b.binary(
                    "add",
                    b.binary("log", b.unary("abs", a[0]), b.const(2.0, "f64")),
                    b.binary("pow", a[0], b.binary("mul", a[1], b.const(1.0, "f64"))),
                ),
                C_ROWS,
            )
        ],
    )
    with np.errstate(all="ignore"):
        check_staged(p, [x, y], 2)


def test_tasks_call_the_kernel_on_row_ranges_of_the_whole_inputs() -> None:
    """The executor's fast path (`prepare`): a components step over a CSR graph on 2 threads in many tasks, each
    a kernel call on its row range (the graph's arrays whole, its row pointers sliced), writing into one result
    buffer; the same bits as the non-fused path, and no Python body call."""
    from scipy import sparse

    from daphnec.runtime.scheduling.config import SchedulerConfig
    from daphnec.runtime.vectorized import pipeline as executor

    rng = np.random.default_rng(3)
    n = 3000
    G = sparse.random_array((n, n), density=0.003, format="csr", random_state=4)
    G = sparse.csr_array((G + G.T) != 0, dtype=np.float64)
    G.sum_duplicates()
    c = rng.permutation(n).astype(np.float64).reshape(n, 1) + 1.0

    def body(b, a):
        u = b.binary("max", b.agg("max", "row", b.binary("mul", a[0], a[1])), a[2])
        return [(u, C_ROWS), (b.agg("sum", "all", b.binary("neq", u, a[2])), C_ADD)]

    p = build([(mat("f64", n, n, sparse=True), ROWS), (mat("f64", 1, n), ROWS), (mat("f64", n, 1), ROWS)], body)
    inputs = [G, c.T.copy(), c]
    kernel = native_kernel(p)
    assert kernel is not None
    calls = Calls()

    def py_body(*blocks):
        calls.fallbacks += 1
        return reference(p, blocks)

    bound = kernel.bind(py_body)
    assert bound.prepare is not None
    old = (executor.SETTINGS.scheduler, executor.SETTINGS.min_parallel_bytes, executor.SETTINGS.native_batch_bytes)
    try:
        executor.SETTINGS.scheduler = SchedulerConfig(num_threads=2, scheme="SS")
        executor.SETTINGS.min_parallel_bytes, executor.SETTINGS.native_batch_bytes = 0, 2048
        got = executor.run_pipeline(bound, inputs, [ROWS, ROWS, ROWS], [C_ROWS, C_ADD])
    finally:
        executor.SETTINGS.scheduler, executor.SETTINGS.min_parallel_bytes, executor.SETTINGS.native_batch_bytes = old
    ref = reference(p, inputs)
    assert calls.fallbacks == 0
    assert same_bits(ref[0], got[0]) and ref[1] == got[1]
