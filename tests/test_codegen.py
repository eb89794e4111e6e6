"""`--codegen` (DAPHNE's doc/Codegen.md): element-wise ops, aggregations and transposes outside vectorized pipelines
are fused and compiled to native kernels (compiler/passes/codegen.py) and run as one call; matrix products run
BLAS between them. Output must equal the kernels' byte for byte, with nothing on stderr, whatever --matmul-* says."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "tests" / "scripts"

PROGRAM = """X = rand(2000, 50, 0.0, 1.0, 1, 42);
Y = (X * 2.0 + 1.0) / 3.0;
print(sum(Y));
print(aggMax(abs(X - 0.5)));
print(mean(X, 1)[0, 0:3]);
print(sum(X @ t(X[0:50, ])));
I = as.si32(X * 100.0);
print(sum(I % 7));
print(t(sqrt(X[0:3, 0:2])));
f = [1.0, 2.0, 3.0];
print(sum(X[0:3, 0:3] * t(f)));
"""

MATMUL_FLAGS = ("--matmul-vec-size-bits=256", "--matmul-tile", "--matmul-fixed-tile-sizes=4,8",
                "--matmul-unroll-factor=2", "--matmul-unroll-jam-factor=2", "--matmul-num-vec-registers=8",
                "--matmul-invert-loops")  # fmt: skip


def daphnec(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "daphnec.tools.daphnec", *args], capture_output=True, text=True, timeout=300, cwd=ROOT
    )


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("codegen") / "p.daph"
    p.write_text(PROGRAM)
    return p


@pytest.mark.parametrize("flags", [("--codegen",), ("--codegen", *MATMUL_FLAGS), ("--codegen", "--vec")])
def test_codegen_output_equals_the_kernels(program: Path, flags: tuple[str, ...]) -> None:
    plain = daphnec(str(program))
    res = daphnec(*flags, str(program))
    assert (res.returncode, res.stderr) == (0, "")
    assert res.stdout == plain.stdout and plain.stderr == ""


def test_codegen_fuses_and_compiles_to_native_kernels(program: Path) -> None:
    res = daphnec("--codegen", "--explain=codegen,kernels", str(program))
    assert res.returncode == 0
    before, after = res.stderr.split("IR after codegen pipeline\n", 1)
    assert before.startswith("IR before codegen pipeline\n") and "daphne.vectorizedPipeline" not in before
    assert after.count("{daphne.codegen}") >= 3
    kernels = after.split("IR after kernel lowering:\n", 1)[1]
    assert "{daphne.codegen, daphne.kernel = @vp_" in kernels


def test_codegen_explain_prints_only_with_codegen(program: Path) -> None:
    res = daphnec("--explain=codegen", str(program))
    assert res.returncode == 0 and res.stderr == ""


@pytest.mark.parametrize(
    "name", ["matrices", "operators", "second_order", "language/codegen_map", "sparse/csr_ops", "sparse/rand_csr"]
)
def test_corpus_scripts_under_codegen(name: str) -> None:
    script = SCRIPTS / f"{name}.daph"
    args = script.with_suffix(".args")
    extra = args.read_text().split() if args.exists() else []
    res = daphnec("--codegen", *extra, str(script))
    assert (res.returncode, res.stderr) == (0, "")
    assert res.stdout == script.with_suffix(".txt").read_text()


def test_map_of_an_elementwise_udf_becomes_matrix_ops() -> None:
    res = daphnec("--codegen", "--explain=codegen", str(SCRIPTS / "language" / "codegen_map.daph"))
    assert res.returncode == 0
    after = res.stderr.split("IR after codegen pipeline\n", 1)[1]
    main = after.split('sym_name = "lin', 1)[0]
    assert main.count('"daphne.map"') == 1  # only the UDF with a branch
    assert '"daphne.ewMul"(%' in main and "{daphne.codegen}" in main
