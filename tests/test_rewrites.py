"""Property tests of the algebraic rewrites (`simplify-algebra`, `reorder-matmul-chains`, `fuse-x-once`): for each
rule, random operands of random shapes give the same result as the program as written (`--no-reassociate`):
exact rules bit for bit, re-associating rules within the README's 1e-12 relative promise. Each test also checks
that its rule fired (the rewritten program no longer has the op the rule removes), so a rule that stops matching
fails here instead of silently passing."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from daphnec.runtime.config import DaphneConfig
from daphnec.tools.driver import compile_source, run_bound

DIMS = st.integers(min_value=1, max_value=12)
DIMS2 = st.integers(min_value=2, max_value=12)
SETTINGS = settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def run(text: str, inputs: list[np.ndarray], reassociate: bool) -> tuple[object, str]:
    """The value the program saves and the text of its IR after the passes."""
    config = DaphneConfig()
    config.use_reassociating_rewrites = reassociate
    program = compile_source(text, "<rewrite-test>", config, {})
    ir = str(program.module) if program.module is not None else ""
    results = run_bound(program, list(inputs))
    return results[-1], ir


def receive(inputs: list[np.ndarray]) -> str:
    return "".join(f'M{i} = receiveFromNumpy({i}, {a.shape[0]}, {a.shape[1]}, "f64");\n' for i, a in enumerate(inputs))


def matrix(seed: int, rows: int, cols: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1.0, 1.0, (rows, cols))


def product(n: int, k: int, m: int) -> str:
    """The n x k by k x m matrix product (what a rule pushing an aggregation through it removes; n, m > 1 so that
    the rewritten program's vector products differ)."""
    return rf'"daphne\.matMul".* : \(!daphne\.Matrix<{n}x{k}xf64>, !daphne\.Matrix<{k}x{m}xf64>\)'


def assert_rewrite(
    expr: str, inputs: list[np.ndarray], gone: str, exact: bool = False, kept: str | None = None
) -> None:
    """`expr` (over M0, M1, ...) rewritten equals `expr` as written; `gone` is an op the rewrite removes (an op
    name, or a regular expression over the IR's text)."""
    gone = gone if not gone.startswith("daphne.") else f'"{re.escape(gone)}"'
    kept = kept if kept is None or not kept.startswith("daphne.") else kept
    text = receive(inputs) + f"R = {expr};\nsaveDaphneLibResult(R);\n"
    want, plain_ir = run(text, inputs, reassociate=False)
    got, ir = run(text, inputs, reassociate=True)
    assert re.search(gone, plain_ir), plain_ir
    assert not re.search(gone, ir), ir
    if kept is not None:
        assert f'"{kept}"' in ir, ir
    if exact:
        assert np.array_equal(np.asarray(got), np.asarray(want))
        return
    g, w = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    assert g.shape == w.shape
    # a reassociated sum differs by rounding, bounded relative to the sum of the magnitudes of its terms
    scale = max(1.0, float(np.max(np.abs(w))) if w.size else 1.0)
    assert np.allclose(g, w, rtol=1e-12, atol=1e-12 * scale * 64), (g, w)


@SETTINGS
@given(n=DIMS2, k=DIMS, m=DIMS2, seed=st.integers(0, 2**16))
def test_sum_of_product(n, k, m, seed):
    assert_rewrite("sum(M0 @ M1)", [matrix(seed, n, k), matrix(seed + 1, k, m)], product(n, k, m), kept="daphne.sumCol")


@SETTINGS
@given(n=DIMS2, k=DIMS, m=DIMS2, seed=st.integers(0, 2**16))
def test_col_sums_of_product(n, k, m, seed):
    assert_rewrite(
        "sum(M0 @ M1, 1)", [matrix(seed, n, k), matrix(seed + 1, k, m)], product(n, k, m), kept="daphne.sumCol"
    )


@SETTINGS
@given(n=DIMS2, k=DIMS, m=DIMS2, seed=st.integers(0, 2**16))
def test_row_sums_of_product(n, k, m, seed):
    assert_rewrite(
        "sum(M0 @ M1, 0)", [matrix(seed, n, k), matrix(seed + 1, k, m)], product(n, k, m), kept="daphne.sumRow"
    )


@SETTINGS
@given(n=DIMS, k=DIMS, seed=st.integers(0, 2**16))
def test_trace_of_product(n, k, seed):
    assert_rewrite(
        "sum(diagVector(M0 @ M1))",
        [matrix(seed, n, k), matrix(seed + 1, k, n)],
        "daphne.diagVector",
        kept="daphne.traceOfProduct",
    )


@pytest.mark.parametrize("shape", [(3000, 7), (40, 5000), (1, 1)])
def test_trace_of_product_kernel(shape):
    """The kernel (several blocks of rows for the large shapes) against numpy's trace of the product, and its shape
    error in DaphneDSL terms."""
    from daphnec.runtime.errors import DaphneRuntimeError
    from daphnec.runtime.kernels.matrix_ops import trace_of_product

    n, k = shape
    x, y = matrix(1, n, k), matrix(2, k, n)
    want = float(np.trace(x @ y))
    assert abs(trace_of_product(x, y) - want) <= 1e-12 * max(1.0, float(np.sum(np.abs(x * y.T))))
    with pytest.raises(DaphneRuntimeError, match="trace: shape mismatch: X 2x3, Y 2x2"):
        trace_of_product(np.ones((2, 3)), np.ones((2, 2)))


@SETTINGS
@given(n=DIMS, k=DIMS, seed=st.integers(0, 2**16))
def test_diag_of_product(n, k, seed):
    assert_rewrite("diagVector(M0 @ M1)", [matrix(seed, n, k), matrix(seed + 1, k, n)], "daphne.diagVector")


@SETTINGS
@given(n=DIMS, k=DIMS, seed=st.integers(0, 2**16))
def test_product_with_diag_matrix(n, k, seed):
    assert_rewrite("M0 @ diagMatrix(M1)", [matrix(seed, n, k), matrix(seed + 1, k, 1)], "daphne.diagMatrix")
    assert_rewrite("diagMatrix(M1) @ M0", [matrix(seed, k, n), matrix(seed + 1, k, 1)], "daphne.diagMatrix")


@SETTINGS
@given(n=st.integers(32, 80), k=st.integers(32, 64), seed=st.integers(0, 2**16))
def test_dot_of_product(n, k, seed):
    assert_rewrite("sum(M0 * M1)", [matrix(seed, n, k), matrix(seed + 1, n, k)], "daphne.ewMul", kept="daphne.reshape")
    assert_rewrite("sum(M0 ^ 2)", [matrix(seed, n, k)], "daphne.ewPow", kept="daphne.reshape")


@SETTINGS
@given(n=DIMS, k=DIMS, seed=st.integers(0, 2**16))
def test_double_transpose(n, k, seed):
    """An exact rule is on even with --no-reassociate: the result is the written program's, bit for bit."""
    x = matrix(seed, n, k)
    for reassociate in (False, True):
        got, ir = run(receive([x]) + "R = t(t(M0)) + 1.0;\nsaveDaphneLibResult(R);\n", [x], reassociate)
        assert '"daphne.transpose"' not in ir
        assert np.array_equal(got, x + 1.0)


@SETTINGS
@given(n=st.integers(6, 12), k=DIMS, seed=st.integers(0, 2**16))
def test_transposed_factors(n, k, seed):
    # t(X) @ t(Y) is n x n, smaller than X (k x n) only for k > n: the transposed use makes it apply always
    assert_rewrite("t(t(M0) @ t(M1))", [matrix(seed, k, n), matrix(seed + 1, n, k)], "daphne.transpose")


@SETTINGS
@given(n=st.integers(4, 12), k=DIMS, m=st.integers(4, 12), seed=st.integers(0, 2**16))
def test_slice_of_product(n, k, m, seed):
    ins = [matrix(seed, n, k), matrix(seed + 1, k, m)]
    text_rows = "(M0 @ M1)[1:3, ]"
    text_cols = "(M0 @ M1)[, 1:3]"
    for expr, marker in ((text_rows, "daphne.sliceRow"), (text_cols, "daphne.sliceCol")):
        src = receive(ins) + f"R = {expr};\nsaveDaphneLibResult(R);\n"
        want, _ = run(src, ins, reassociate=False)
        got, ir = run(src, ins, reassociate=True)
        assert f'"{marker}"(%M' not in ir.replace("%0", "%M0")  # the slice reads an operand, not the product
        assert np.allclose(got, want, rtol=1e-12, atol=1e-13)


@SETTINGS
@given(
    n=DIMS,
    k=st.integers(2, 12),
    seed=st.integers(0, 2**16),
    s=st.floats(-4, 4, allow_nan=False).filter(lambda s: s not in (0.0, 1.0)),  # x * 1, x * 0: canonicalized away
)
def test_scalar_out_of_product_and_sum(n, k, seed, s):
    scaled_x = rf'"daphne\.ewMul".*-> !daphne\.Matrix<{n}x{k}xf64>'
    lit = re.sub(r"e([+-])0*(\d)", r"e\1\2", repr(s))  # DaphneDSL writes 6.1e-5, not 6.1e-05
    assert_rewrite(f"({lit} * M0) @ M1", [matrix(seed, n, k), matrix(seed + 1, k, 1)], scaled_x, kept="daphne.ewMul")
    assert_rewrite(f"sum(M0 * {lit})", [matrix(seed, n, k)], scaled_x, kept="daphne.ewMul")


@SETTINGS
@given(n=st.integers(2, 40), m=DIMS, seed=st.integers(0, 2**16), c=st.sampled_from([1.0, 2.0, -0.5]))
def test_intercept(n, m, seed, c):
    x, y = matrix(seed, n, m), matrix(seed + 1, n, 2)
    b = matrix(seed + 2, m + 1, 1)
    design = f"cbind(M0, fill({c!r}, nrow(M0), 1))"
    design_matrix = rf'"daphne\.colBind".* : \(!daphne\.Matrix<{n}x{m}xf64>, !daphne\.Matrix<{n}x1xf64>\)'
    for expr, ins in (
        (f"A = {design};\nR = t(A) @ A", [x]),
        (f"A = {design};\nR = t(A) @ M1", [x, y]),
        (f"A = {design};\nR = A @ M1", [x, b]),
    ):
        src = receive(ins) + f"{expr};\nsaveDaphneLibResult(R);\n"
        want, plain_ir = run(src, ins, reassociate=False)
        got, ir = run(src, ins, reassociate=True)
        assert re.search(design_matrix, plain_ir), plain_ir
        if n != m:  # at n == m the rewritten block matrix's cbind of m x m and m x 1 has the design's signature
            assert not re.search(design_matrix, ir), ir  # the n x (m+1) design matrix is never built
        scale = max(1.0, float(np.max(np.abs(want))))
        assert np.allclose(got, want, rtol=1e-12, atol=1e-12 * scale * n), (got, want)


def test_no_reassociate_keeps_the_written_program():
    """`--no-reassociate` (use_reassociating_rewrites = false) keeps every re-associating rule off."""
    x, y = matrix(1, 20, 4), matrix(2, 4, 6)
    text = receive([x, y]) + "R = sum(M0 @ M1);\nsaveDaphneLibResult(R);\n"
    got, ir = run(text, [x, y], reassociate=False)
    assert '"daphne.matMul"' in ir and '"daphne.sumCol"' not in ir
    assert got == float(np.sum(x @ y)) or abs(got - float(np.sum(x @ y))) < 1e-12


@pytest.mark.parametrize("shape", [(3, 3), (40, 7)])
def test_rewritten_errors_point_at_the_written_expression(shape, tmp_path):
    """A rewritten op keeps the source location of the expression the user wrote."""
    import subprocess
    import sys

    r, c = shape
    script = tmp_path / "bad.daph"
    script.write_text(
        f"X = rand({r}, {c}, 0.0, 1.0, 1, 1);\nY = rand({c + 1}, 2, 0.0, 1.0, 1, 2);\nprint(sum(X @ Y));\n"
    )
    out = subprocess.run([sys.executable, "-m", "daphnec.tools.daphnec", str(script)], capture_output=True, text=True)
    assert out.returncode == 2
    assert "bad.daph:3:" in out.stderr and "Traceback" not in out.stderr


# --- reorder-matmul-chains --------------------------------------------------------------------------------------------


@SETTINGS
@given(dims=st.lists(st.integers(1, 30), min_size=4, max_size=6), seed=st.integers(0, 2**16))
def test_matmul_chain_order(dims, seed):
    """Any chain gives the written product's value; the cheapest order never costs more than the written one."""
    from daphnec.compiler.passes.reorder_matmul_chains import Factor, chain_cost, cheapest

    ins = [matrix(seed + i, dims[i], dims[i + 1]) for i in range(len(dims) - 1)]
    expr = " @ ".join(f"M{i}" for i in range(len(ins)))
    src = receive(ins) + f"R = {expr};\nsaveDaphneLibResult(R);\n"
    want, _ = run(src, ins, reassociate=False)
    got, _ = run(src, ins, reassociate=True)
    scale = max(1.0, float(np.max(np.abs(want))))
    assert np.allclose(got, want, rtol=1e-12, atol=1e-12 * scale * max(dims) ** 2)

    class V:  # a stand-in SSA value with a matrix type
        def __init__(self, r, c):
            from daphnec.dialects.types import F64, MatrixType

            self.type = MatrixType(F64, r, c)

    fs = [Factor(V(dims[i], dims[i + 1])) for i in range(len(dims) - 1)]  # type: ignore[arg-type]
    left: object = 0
    for i in range(1, len(fs)):
        left = (left, i)
    assert chain_cost(fs, cheapest(fs)) <= chain_cost(fs, left)  # type: ignore[arg-type]


def test_gram_chain_becomes_one_pass():
    """`(t(X) @ X) @ v` is reordered to `t(X) @ (X @ v)` and then read X once."""
    x, v = matrix(3, 300, 20), matrix(4, 20, 1)
    src = receive([x, v]) + "R = (t(M0) @ M0) @ M1;\nsaveDaphneLibResult(R);\n"
    got, ir = run(src, [x, v], reassociate=True)
    assert '"daphne.gramVector"' in ir and '"daphne.syrk"' not in ir
    want, ir0 = run(src, [x, v], reassociate=False)
    assert '"daphne.syrk"' in ir0
    assert np.allclose(got, want, rtol=1e-12, atol=1e-10)


# --- fuse-x-once and its kernel ---------------------------------------------------------------------------------------


@SETTINGS
@given(n=st.integers(1, 3000), m=st.one_of(st.integers(1, 40), st.integers(90, 130)), seed=st.integers(0, 2**16),
       kind=st.sampled_from(["plain", "weighted", "residual"]))  # fmt: skip
def test_fuse_x_once(n, m, seed, kind):
    x, v, a = matrix(seed, n, m), matrix(seed + 1, m, 1), matrix(seed + 2, n, 1)
    expr = {"plain": "t(M0) @ (M0 @ M1)", "weighted": "t(M0) @ (M2 * (M0 @ M1))",
            "residual": "t(M0) @ ((M0 @ M1) - M2)"}[kind]  # fmt: skip
    ins = [x, v] if kind == "plain" else [x, v, a]
    assert_rewrite(
        expr,
        ins,
        r'"daphne\.matMul"',
        kept="daphne.gramVector" + {"plain": "", "weighted": "Weighted", "residual": "Residual"}[kind],
    )


@pytest.mark.parametrize("layout", ["dense", "dense-wide", "csr"])
@pytest.mark.parametrize("kind", ["plain", "weighted", "residual"])
def test_gram_vector_kernel_independent_of_threads(layout, kind):
    """The same bits for 1, 2 and 3 threads (tasks of fixed size, partials added in task order; OpenBLAS at one
    thread as in a program); within 1e-12 of numpy's two products; dense (the native loop, and the row-blocked BLAS
    form of `BLAS_MIN_COLS` columns and more) and CSR."""
    import scipy.sparse as sp

    from daphnec.runtime.kernels.blas_threads import one_blas_thread
    from daphnec.runtime.kernels.gram_vector import BLAS_MIN_COLS, gram_vector
    from daphnec.runtime.scheduling.config import SchedulerConfig
    from daphnec.runtime.vectorized.settings import SETTINGS

    rng = np.random.default_rng(7)
    n, m = (20_000, BLAS_MIN_COLS + 5) if layout == "dense-wide" else (60_000, 23)
    X = sp.random(n, m, density=0.2, format="csr", random_state=3) if layout == "csr" else rng.standard_normal((n, m))
    v, a = rng.standard_normal((m, 1)), rng.random((n, 1))
    u = X @ v
    ref = X.T @ {"plain": u, "weighted": a * u, "residual": u - a}[kind]
    results, before = [], SETTINGS.scheduler
    try:
        for threads in (1, 2, 3):  # the task scheduler's workers (--num-threads)
            SETTINGS.scheduler = SchedulerConfig(num_threads=threads)
            with one_blas_thread():
                results.append(gram_vector(X, v, a, kind))
                if layout != "csr":  # a column slice of a wider matrix (read in place by the BLAS form)
                    wide = np.concatenate([np.ones((n, 2)), X, np.ones((n, 3))], axis=1)
                    results.append(gram_vector(wide[:, 2 : 2 + m], v, a, kind))
    finally:
        SETTINGS.scheduler = before
    assert all(np.array_equal(results[0], r) for r in results[1:])
    assert np.allclose(results[0], ref, rtol=1e-12, atol=1e-12 * float(np.max(np.abs(ref))))


def test_gram_vector_kernel_shape_errors():
    from daphnec.runtime.errors import DaphneRuntimeError
    from daphnec.runtime.kernels.gram_vector import gram_vector

    with pytest.raises(DaphneRuntimeError, match="shape mismatch"):
        gram_vector(np.zeros((10, 3)), np.zeros((4, 1)))
    with pytest.raises(DaphneRuntimeError, match="shape mismatch"):
        gram_vector(np.zeros((10, 3)), np.zeros((3, 1)), np.zeros((9, 1)), "weighted")


@SETTINGS
@given(n=DIMS2, k=DIMS2, seed=st.integers(0, 2**16), axis=st.sampled_from(["", ", 0", ", 1"]))
def test_aggregate_of_transpose(n, k, seed, axis):
    assert_rewrite(
        f"sum(t(M0){axis})", [matrix(seed, n, k)], rf'"daphne\.transpose".*: \(!daphne\.Matrix<{n}x{k}xf64>\)'
    )


@SETTINGS
@given(dims=st.lists(st.integers(1, 30), min_size=4, max_size=6), seed=st.integers(0, 2**16))
def test_matmul_chain_ordered_at_run_time(dims, seed):
    """A chain whose first dimension is known only at run time: `daphne.matMulChain` equals the written product."""
    ins = [matrix(seed + i, dims[i], dims[i + 1]) for i in range(len(dims) - 1)]
    expr = " @ ".join(["M0[0:(as.si64(now() * 0) + nrow(M0)), ]", *(f"M{i}" for i in range(1, len(ins)))])
    assert_rewrite(expr, ins, r'"daphne\.matMul"\(', kept="daphne.matMulChain")


@SETTINGS
@given(n=st.integers(1, 400), m=st.integers(1, 30), seed=st.integers(0, 2**16), written=st.booleans())
def test_gram_chain_of_unknown_shape_is_ordered_at_compile_time(n, m, seed, written):
    """`(t(X) @ X) @ v` and `t(X) @ (X @ v)` with X's rows known only at run time (an lmCG's design matrix from a
    function): no run-time chain and no materialised t(X), one pass over X (fuse-x-once), the written value."""
    x, v = matrix(seed, n, m), matrix(seed + 1, m, 1)
    rows = "M0[0:(as.si64(now() * 0) + nrow(M0)), ]"
    expr = "(t(X) @ X) @ M1" if not written else "t(X) @ (X @ M1)"
    src = receive([x, v]) + f"X = {rows};\nR = {expr};\nsaveDaphneLibResult(R);\n"
    got, ir = run(src, [x, v], reassociate=True)
    want, ir0 = run(src, [x, v], reassociate=False)
    assert '"daphne.gramVector"' in ir and '"daphne.matMulChain"' not in ir and '"daphne.transpose"' not in ir, ir
    assert '"daphne.gramVector"' not in ir0
    scale = max(1.0, float(np.max(np.abs(want))))
    assert np.allclose(got, want, rtol=1e-12, atol=1e-12 * scale * 64)


@SETTINGS
@given(dims=st.lists(st.integers(1, 30), min_size=4, max_size=4), seed=st.integers(0, 2**16))
def test_matmul_chain_at_run_time_reads_transposed_factors_in_place(dims, seed):
    """`A @ B @ t(C)` with A's rows known only at run time: one `daphne.matMulChain` with C marked transposed (no
    `daphne.transpose` built), equal to the written product."""
    a, b, c = matrix(seed, dims[0], dims[1]), matrix(seed + 1, dims[1], dims[2]), matrix(seed + 2, dims[3], dims[2])
    expr = "M0[0:(as.si64(now() * 0) + nrow(M0)), ] @ M1 @ t(M2)"
    assert_rewrite(expr, [a, b, c], r'"daphne\.matMul"\(', kept="daphne.matMulChain")
    _, ir = run(receive([a, b, c]) + f"R = {expr};\nsaveDaphneLibResult(R);\n", [a, b, c], reassociate=True)
    assert '"daphne.transpose"' not in ir and "#builtin.int<0>, #builtin.int<0>, #builtin.int<1>" in ir, ir


@pytest.mark.parametrize("csr", [False, True])
def test_matmul_chain_kernel(csr):
    """The run-time order: the cheapest one for the actual shapes (a CSR factor costs its non-zeros), a transposed
    factor next to its matrix as one syrk, the value of the written product."""
    import scipy.sparse as sp

    from daphnec.runtime.kernels.matmul_chain import cheapest_order, density_of, matmul_chain, order_cost

    rng = np.random.default_rng(5)
    a = sp.random(400, 300, density=0.01, format="csr", random_state=1) if csr else rng.random((400, 300))
    b, c = rng.random((300, 50)), rng.random((50, 2))
    got = matmul_chain(a, b, c, transposed=(False, False, False))
    assert np.allclose(got, (a @ b) @ c, rtol=1e-12)
    dims, dens = [400, 300, 50, 2], [density_of(a), 1.0, 1.0]
    best = cheapest_order(dims, dens)
    assert best == (0, (1, 2)) and order_cost(dims, dens, best) <= order_cost(dims, dens, ((0, 1), 2))
    x, v = rng.random((100, 7)), rng.random((7, 1))
    assert np.allclose(matmul_chain(x, x, v, transposed=(True, False, False)), x.T @ (x @ v), rtol=1e-12)
    from daphnec.runtime.errors import DaphneRuntimeError

    with pytest.raises(DaphneRuntimeError, match="shape mismatch"):
        matmul_chain(x, v, v, transposed=(False, False, False))


def test_rewrites_with_csr_operands(tmp_path):
    """With `--select-matrix-repr` (CSR operands, typed results) every rule keeps the printed output of the
    program as written, and the compile ends (a rewritten value of another representation gets a merge cast)."""
    import subprocess
    import sys

    script = tmp_path / "csr.daph"
    script.write_text(
        "X = rand(3000, 40, 0.0, 1.0, 0.01, 1);\nY = rand(40, 30, 0.0, 1.0, 0.02, 2);\n"
        "v = rand(40, 1, -1.0, 1.0, 1, 3);\nw = rand(3000, 1, 0.0, 1.0, 1, 4);\n"
        "print(sum(X @ Y));\nprint(sum(X @ Y, 1)[0, 0:3]);\nprint(sum(X @ Y, 0)[0:3, ]);\n"
        "print((t(X) @ (w * (X @ v)))[0:3,]);\nprint(((t(X) @ X) @ v)[0:3,]);\nprint(sum(t(X)));\n"
        "S = X @ Y;\nprint(S[1:3, ]);\n"
    )
    cmd = [sys.executable, "-m", "daphnec.tools.daphnec", "--select-matrix-repr"]
    outs = [subprocess.run([*cmd, *extra, str(script)], capture_output=True, text=True, timeout=300)
            for extra in ([], ["--no-reassociate"])]  # fmt: skip
    assert all(o.returncode == 0 for o in outs), [o.stderr for o in outs]
    assert outs[0].stdout == outs[1].stdout


@SETTINGS
@given(n=st.integers(2, 40), m=DIMS, seed=st.integers(0, 2**16), data=st.data())
def test_stacked_rows(n, m, seed, data):
    """A cross-validation fold's training rows `rbind(X[0:lo, ], X[hi:n, ])` (either part possibly empty): the Gram
    matrix and `t(Xtr) @ ytr` from the two parts equal the products of the stacked copy; the copy is not built."""
    lo = data.draw(st.integers(0, n))
    hi = data.draw(st.integers(lo, n))
    x, y = matrix(seed, n, m), matrix(seed + 1, n, 2)
    stacked = r'"daphne\.rowBind"'
    for expr, ins in (
        (f"A = rbind(M0[0:{lo}, ], M0[{hi}:{n}, ]);\nR = t(A) @ A", [x]),
        (f"A = rbind(M0[0:{lo}, ], M0[{hi}:{n}, ]);\nB = rbind(M1[0:{lo}, ], M1[{hi}:{n}, ]);\nR = t(A) @ B", [x, y]),
    ):
        src = receive(ins) + f"{expr};\nsaveDaphneLibResult(R);\n"
        want, plain_ir = run(src, ins, reassociate=False)
        got, ir = run(src, ins, reassociate=True)
        assert re.search(stacked, plain_ir), plain_ir
        assert not re.search(stacked, ir), ir
        scale = max(1.0, float(np.max(np.abs(want))) if np.asarray(want).size else 1.0)
        assert np.allclose(got, want, rtol=1e-12, atol=1e-12 * scale * n), (got, want)
