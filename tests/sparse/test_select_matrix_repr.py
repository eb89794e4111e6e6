"""`select-matrix-repr`: sparsity estimates, the representation each matrix gets, control-flow merges, the
`sparsity(X)` builtin, the `:sp[...]` type syntax and the kernels' adaptation to CSR operands and results."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from xdsl.dialects import func, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from daphnec.compiler.analysis.sparsity import SparsityEstimates, estimate
from daphnec.compiler.passes.select_matrix_repr import SelectMatrixReprPass
from daphnec.compiler.pipeline import PassManager
from daphnec.dialects import make_context, ops, ops_io
from daphnec.dialects.attr_names import MERGE_CAST_ATTR
from daphnec.dialects.ops_matrix import SparsityOp
from daphnec.dialects.types import MatrixType
from daphnec.frontend.ir_builder import build_module
from daphnec.frontend.parser import parse_source
from daphnec.runtime.kernels import agg, matmul
from daphnec.runtime.values import is_csr

ROOT = Path(__file__).resolve().parents[2]


def compile_ir(source: str, select: bool = True, threshold: float = 0.25) -> ModuleOp:
    """The module after the pipeline up to (and with) `select-matrix-repr`."""
    module = build_module(parse_source(source, "t.daph"), "t.daph")
    pm = PassManager(
        make_context(),
        options=frozenset({"select_matrix_repr"} if select else ()),
        pass_args={"select-matrix-repr": {"threshold": threshold}},
    )
    pm.run_stages(module)
    return module


def printed(module: ModuleOp) -> list[tuple[str, ModuleOp]]:
    """(type of the printed value, print op) for every `print` of the main function, in order."""
    main = next(f for f in module.ops if isinstance(f, func.FuncOp) and f.sym_name.data == "main")
    return [p.arg.type for p in main.body.walk() if isinstance(p, ops_io.PrintOp)]


def run(source: str, *flags: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    script = tmp / "s.daph"
    script.write_text(source)
    return subprocess.run(
        [sys.executable, "-m", "daphnec.tools.daphnec", *flags, str(script)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


# --- the type syntax -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "printed_as"),
    [
        ("!daphne.Matrix<2x3xf64>", "!daphne.Matrix<2x3xf64>"),
        ("!daphne.Matrix<?x?xsi64:rep[sparse]>", "!daphne.Matrix<?x?xsi64:rep[sparse]>"),
        (
            "!daphne.Matrix<4x1xsi64:sp[0.000000e+00]:rep[sparse]>",
            "!daphne.Matrix<4x1xsi64:sp[0.000000e+00]:rep[sparse]>",
        ),  # noqa: E501
        ("!daphne.Matrix<?x?xf64:sp[0.25]>", "!daphne.Matrix<?x?xf64:sp[2.500000e-01]>"),
        ("!daphne.Matrix<3x3xf64:rep[sparse]:sp[0.1]>", "!daphne.Matrix<3x3xf64:sp[1.000000e-01]:rep[sparse]>"),
        ("!daphne.Matrix<3x3xf64:rep[dense]>", "!daphne.Matrix<3x3xf64>"),
    ],
)
def test_matrix_type_round_trip(text: str, printed_as: str) -> None:
    t = Parser(make_context(), text).parse_type()
    assert str(t) == printed_as
    assert Parser(make_context(), str(t)).parse_type() == t


def test_sparsity_is_part_of_the_type() -> None:
    from daphnec.dialects.types import F64

    a = MatrixType(F64, 2, 2)
    assert a.sparsity_estimate == -1.0 and not a.is_sparse
    b = a.with_representation("sparse", 0.1)
    assert b != a and b.is_sparse and b.sparsity_estimate == 0.1 and b.shape == (2, 2)


# --- estimates -----------------------------------------------------------------------------------------------------

ESTIMATES = [
    ("rand(10, 10, 0.0, 1.0, 0.1, 1)", 0.1),
    ("fill(0, 3, 3)", 0.0),
    ("fill(0.0, 3, 3)", 0.0),
    ("fill(7, 3, 3)", 1.0),
    ('fill("a", 3, 3)', -1.0),
    ("[0, 0, 1, 0]", 0.25),
    ("[0.0, -0.0, 1.5, 0.0, 0.0]", 0.2),
    ("[true, false, false, false]", -1.0),
    ('["a", "b"]', -1.0),
    ("seq(1, 10)", 1.0),
    ("rand(4, 4, 1.0, 2.0, 0.1, 1) + rand(4, 4, 1.0, 2.0, 0.2, 2)", 0.1 + 0.2 - 0.02),
    ("rand(4, 4, 1.0, 2.0, 0.1, 1) - rand(4, 4, 1.0, 2.0, 0.2, 2)", 0.1 + 0.2 - 0.02),
    ("rand(4, 4, 1.0, 2.0, 0.1, 1) * rand(4, 4, 1.0, 2.0, 0.2, 2)", 0.1 * 0.2),
    ("rand(4, 4, 1.0, 2.0, 0.1, 1) * 3.0", 0.1),
    ("3.0 * rand(4, 4, 1.0, 2.0, 0.1, 1)", 0.1),
    ("rand(4, 4, 1.0, 2.0, 0.1, 1) + 3.0", -1.0),
    ("rand(4, 4, 1.0, 2.0, 0.1, 1) / 3.0", -1.0),
    ("t(rand(4, 3, 1.0, 2.0, 0.1, 1))", 0.1),
    ("reshape(rand(4, 3, 1.0, 2.0, 0.1, 1), 2, 6)", 0.1),
    ("-rand(4, 3, 1.0, 2.0, 0.1, 1)", 0.1),
    ("sqrt(rand(4, 3, 1.0, 2.0, 0.1, 1))", 0.1),
    ("exp(rand(4, 3, 1.0, 2.0, 0.1, 1))", -1.0),
    ("as.matrix<si64>(rand(4, 3, 1.0, 2.0, 0.1, 1))", 0.1),
    ("rand(8, 3, 1.0, 2.0, 0.1, 1)[2:5, ]", 0.1),
    ("rand(8, 3, 1.0, 2.0, 0.1, 1)[, 1:2]", 0.1),
    ("upperTri(rand(4, 4, 1.0, 2.0, 0.1, 1), true, true)", 0.05),
    ("diagMatrix(rand(4, 1, 1.0, 2.0, 0.5, 1))", 0.5 / 4),
    ("diagMatrix(seq(1.0, 4.0))", 1 / 4),
    ("t(rand(5, 4, 1.0, 2.0, 0.1, 1)) @ rand(5, 4, 1.0, 2.0, 0.1, 1)", 1 - (1 - 0.01) ** 5),
    ("rand(4, 5, 1.0, 2.0, 0.1, 1) @ rand(5, 2, 1.0, 2.0, 0.2, 2)", 1 - (1 - 0.02) ** 5),
    ("rand(4, 5, 1.0, 2.0, 0.1, 1) @ fill(1.0, 5, 2)", 1 - (1 - 0.1) ** 5),
    ("sum(rand(4, 5, 1.0, 2.0, 0.1, 1), 0)", -1.0),
]


@pytest.mark.parametrize(("expr", "expected"), ESTIMATES, ids=[e for e, _ in ESTIMATES])
def test_sparsity_estimates(expr: str, expected: float) -> None:
    t = printed(compile_ir(f"X = {expr};\nprint(X);", threshold=-1.0))[0]  # threshold -1: estimates only, all dense
    assert isinstance(t, MatrixType) and not t.is_sparse
    assert t.sparsity_estimate == pytest.approx(expected)


def test_rand_with_a_run_time_sparsity_has_no_estimate() -> None:
    src = "n = sum(rand(2, 2, 1.0, 2.0, 1.0, -1));\nX = rand(10, 10, 0.0, 1.0, n / 100.0, 1);\nprint(X);"
    (t,) = printed(compile_ir(src))
    assert t.sparsity_estimate == -1.0 and not t.is_sparse


def test_estimate_is_available_without_the_pass() -> None:
    module = compile_ir("X = rand(10, 10, 1.0, 2.0, 0.3, 1);\nprint(sparsity(X * 2.0));", select=False)
    op = next(o for o in module.walk() if isinstance(o, SparsityOp))
    assert estimate(op.arg) == pytest.approx(0.3)
    main = next(f for f in module.ops if isinstance(f, func.FuncOp))
    assert SparsityEstimates(main).of(op.arg) == pytest.approx(0.3)


# --- representations -----------------------------------------------------------------------------------------------


def test_threshold_decides_the_representation() -> None:
    src = "print(rand(4, 4, 1.0, 2.0, 0.2, 1));\nprint(rand(4, 4, 1.0, 2.0, 0.25, 1));\nprint(seq(1, 3));"
    low, at, dense = printed(compile_ir(src))
    assert low.is_sparse and not at.is_sparse and not dense.is_sparse
    assert all(t.is_sparse for t in printed(compile_ir(src, threshold=0.3))[:2])
    assert not any(t.is_sparse for t in printed(compile_ir(src, select=False)))


def test_strings_are_never_sparse() -> None:
    (t,) = printed(compile_ir('print(fill("", 3, 3));', threshold=2.0))
    assert not t.is_sparse


def _merge_casts(module: ModuleOp) -> list[ops.CastOp]:
    return [o for o in module.walk() if isinstance(o, ops.CastOp) and MERGE_CAST_ATTR in o.attributes]


def test_loop_keeping_the_estimate_stays_sparse() -> None:
    src = "X = rand(4, 4, 1.0, 2.0, 0.1, 1);\nfor (i in 1:3) { X = X * 2.0; }\nprint(X);"
    module = compile_ir(src)
    (t,) = printed(module)
    assert t.is_sparse and not _merge_casts(module)
    loop = next(o for o in module.walk() if isinstance(o, scf.ForOp))
    assert loop.body.block.args[1].type.is_sparse


def test_loop_changing_the_estimate_merges_dense() -> None:
    src = "X = rand(4, 4, 1.0, 2.0, 0.1, 1);\nfor (i in 1:3) { X = X + 1.0; }\nprint(X);"
    module = compile_ir(src)
    (t,) = printed(module)
    assert not t.is_sparse and t.sparsity_estimate == -1.0
    (cast,) = _merge_casts(module)
    assert cast.arg.type.is_sparse and not cast.res.type.is_sparse


def test_while_and_if_merges() -> None:
    src = (
        "X = rand(4, 4, 1.0, 2.0, 0.1, 1);\ni = 0;\nwhile (i < 2) { X = -X; i = i + 1; }\nprint(X);\n"
        "Y = X;\nif (i > 1) { Y = X * 2.0; } else { Y = fill(1.0, 4, 4); }\nprint(Y);"
    )
    module = compile_ir(src)
    x, y = printed(module)
    assert x.is_sparse and not y.is_sparse
    assert len(_merge_casts(module)) == 2  # each branch's yield converted to the merged dense type


def test_function_results_are_dense_and_parameters_follow_their_calls() -> None:
    """A parameter every call passes a CSR matrix to stays CSR (no densifying at the call: a graph handed to a
    library function); results are converted to dense at the return."""
    src = "def f(M) { return M * 2.0; }\nX = rand(4, 4, 1.0, 2.0, 0.1, 1);\nprint(f(X));\nprint(X);"
    module = compile_ir(src)
    result, x = printed(module)
    assert not result.is_sparse and x.is_sparse
    call = next(o for o in module.walk() if isinstance(o, func.CallOp))
    assert call.arguments[0].type.is_sparse
    callee = next(o for o in module.walk() if isinstance(o, func.FuncOp) and o.sym_name.data != "main")
    assert callee.function_type.inputs.data[0].is_sparse


def test_a_parameter_called_with_dense_and_sparse_matrices_is_dense() -> None:
    src = (
        "def f(M:matrix<f64>) -> matrix<f64> { return M * 2.0; }\n"
        "X = rand(4, 4, 1.0, 2.0, 0.1, 1);\nY = fill(1.0, 4, 4);\nprint(f(X));\nprint(f(Y));"
    )
    module = compile_ir(src)
    callees = [o for o in module.walk() if isinstance(o, func.FuncOp) and o.sym_name.data != "main"]
    assert callees and all(not f.function_type.inputs.data[0].is_sparse for f in callees)
    for call in (o for o in module.walk() if isinstance(o, func.CallOp)):
        assert not call.arguments[0].type.is_sparse  # the CSR argument converted at the call


def test_daphne_opt_runs_the_pass_with_a_threshold() -> None:
    ir = """
func.func @main() {
  %r = "daphne.constant"() <{value = 4 : index}> : () -> index
  %lo = "daphne.constant"() <{value = 1.0 : f64}> : () -> f64
  %hi = "daphne.constant"() <{value = 2.0 : f64}> : () -> f64
  %sp = "daphne.constant"() <{value = 0.4 : f64}> : () -> f64
  %s = "daphne.constant"() <{value = 1 : si64}> : () -> si64
  %x = "daphne.randMatrix"(%r, %r, %lo, %hi, %sp, %s) : (index, index, f64, f64, f64, si64) -> !daphne.Matrix<4x4xf64>
  %t = "daphne.constant"() <{value = true}> : () -> i1
  "daphne.print"(%x, %t, %t) : (!daphne.Matrix<4x4xf64>, i1, i1) -> ()
  func.return
}
"""
    out = subprocess.run(
        [sys.executable, "-m", "daphnec.tools.daphne_opt", "-p", "select-matrix-repr{threshold=0.5}"],
        input=ir,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "-> !daphne.Matrix<4x4xf64:sp[4.000000e-01]:rep[sparse]>" in out.stdout
    module = Parser(make_context(), ir).parse_module()
    SelectMatrixReprPass().apply(make_context(), module)
    rand = next(o for o in module.walk() if isinstance(o, ops.RandMatrixOp))
    assert not rand.res.type.is_sparse and rand.res.type.sparsity_estimate == pytest.approx(0.4)


# --- end to end ----------------------------------------------------------------------------------------------------


def test_explain_shows_the_chosen_representation(tmp_path: Path) -> None:
    res = run("print([0, 0, 0, 0]);", "--select-matrix-repr", "--explain=select_matrix_repr", tmp=tmp_path)
    assert res.returncode == 0
    assert res.stderr.startswith("IR after selecting matrix representations:\n")
    assert "!daphne.Matrix<4x1xsi64:sp[0.000000e+00]:rep[sparse]>" in res.stderr
    assert res.stdout == "CSRMatrix(4x1, int64_t)\n0\n0\n0\n0\n"


def test_explain_slot_prints_even_without_the_pass(tmp_path: Path) -> None:
    res = run("print([0, 0, 0, 0]);", "--explain=select_matrix_repr", tmp=tmp_path)
    assert res.stderr.startswith("IR after selecting matrix representations:\n")
    assert "rep[sparse]" not in res.stderr
    assert res.stdout.startswith("DenseMatrix(4x1, int64_t)")


def test_config_threshold(tmp_path: Path) -> None:
    cfg = tmp_path / "c.json"
    cfg.write_text('{"sparsity_threshold": 0.6}')
    src = "print(typeOf([0, 1, 0, 1]));"
    assert run(src, "--select-matrix-repr", tmp=tmp_path).stdout == "DenseMatrix(4x1, int64_t)\n"
    assert run(src, "--select-matrix-repr", f"--config={cfg}", tmp=tmp_path).stdout == "CSRMatrix(4x1, int64_t)\n"


def test_sparsity_builtin(tmp_path: Path) -> None:
    src = (
        "X = rand(10, 10, 1.0, 2.0, 0.3, 1);\nprint(sparsity(X));\nprint(sparsity(X + 1.0));\n"
        "print(sparsity([0, 0, 0, 1]));\nprint(sparsity(seq(1, 5)));\ndef f(M) { return sparsity(M); }\nprint(f(X));"
    )
    expected = "0.3\n-1\n0.25\n1\n-1\n"
    assert run(src, tmp=tmp_path).stdout == expected
    assert run(src, "--select-matrix-repr", tmp=tmp_path).stdout == expected


def test_kernels_without_csr_paths_get_dense_operands(tmp_path: Path) -> None:
    src = (
        "X = [0, 0, 3, 0, 0, 0, 0, 0](4, 2);\nprint(cbind(X, X));\nprint(as.scalar(X[1, 0]));\n"
        "B = [1, 0, 0, 1];\nprint(X[[B, ]]);\nprint(X > 1);\nX[0, 0] = 5;\nprint(X);"
    )
    plain = run(src, tmp=tmp_path)
    sparse = run(src, "--select-matrix-repr", tmp=tmp_path)
    assert sparse.returncode == 0 and sparse.stderr == ""
    assert sparse.stdout == plain.stdout


# --- performance ---------------------------------------------------------------------------------------------------


def test_large_csr_row_aggregation_and_matmul_are_fast() -> None:
    """400k x 400k with 3.4M non-zeros: row sums and CSR @ dense each well under a second."""
    n, nnz = 400_000, 3_400_000
    a = sp.random_array((n, n), density=nnz / (n * n), rng=np.random.default_rng(0), format="csr")
    assert is_csr(a)
    row_sum = agg.row_kernel("sum", "f64")
    v = np.random.default_rng(1).random((n, 1))
    row_sum(a)  # warm-up (imports, caches)
    start = time.perf_counter()
    sums = row_sum(a)
    agg_seconds = time.perf_counter() - start
    start = time.perf_counter()
    prod = matmul.matmul(a, v, "f64")
    mm_seconds = time.perf_counter() - start
    assert sums.shape == (n, 1) and prod.shape == (n, 1)
    assert np.allclose(sums[:, 0], a.sum(axis=1)) and np.allclose(prod, a @ v)
    assert agg_seconds < 1.0 and mm_seconds < 1.0
