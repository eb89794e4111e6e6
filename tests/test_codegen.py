"""`--codegen` (DAPHNE's doc/Codegen.md): element-wise ops, aggregations and transposes outside vectorized pipelines
are fused and compiled to native kernels (compiler/passes/codegen.py) and run as one call; dense matrix products
become native loop nests shaped by --matmul-* (compiler/lowering/lower_matmul_to_loops.py; their numerics:
tests/jit/test_native_matmul.py). Output must equal the kernels' byte for byte, with nothing on stderr."""

from __future__ import annotations

import os
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
    assert "{daphne.codegen, daphne.native_kernel = @vp_" in kernels


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


MATMUL = """A = round(rand(23, 17, -9.0, 9.0, 1, 1));
B = round(rand(17, 11, -9.0, 9.0, 1, 2));
print(A @ B);
print(t(B) @ t(A));
"""


@pytest.mark.parametrize(
    "flags",
    [
        (),
        ("--matmul-invert-loops", "--matmul-vec-size-bits=128"),
        ("--matmul-tile", "--matmul-vec-size-bits=512", "--matmul-unroll-factor=2"),
        ("--matmul-fixed-tile-sizes=2,3,4,5,6",),
        ("--matmul-fixed-tile-sizes=8", "--matmul-unroll-jam-factor=3", "--matmul-num-vec-registers=4"),
    ],
)
def test_native_products_print_what_blas_prints(tmp_path: Path, flags: tuple[str, ...]) -> None:
    """Integer-valued operands: every summation order is exact, so the output is BLAS's byte for byte."""
    p = tmp_path / "mm.daph"
    p.write_text(MATMUL)
    plain = daphnec(str(p))
    res = daphnec("--codegen", *flags, "--explain=kernels", str(p))
    assert res.returncode == 0 and res.stdout == plain.stdout
    kernels = res.stderr.split("IR after kernel lowering:\n", 1)[1]
    assert kernels.count("{daphne.native_kernel = @mm_") == 2  # both products (the second with transa, transb)
    quiet = daphnec("--codegen", *flags, str(p))
    assert (quiet.returncode, quiet.stderr, quiet.stdout) == (0, "", plain.stdout)


def test_matmul_settings_choose_the_kernel(tmp_path: Path) -> None:
    """The --matmul-* settings reach the lowering: other settings, another kernel; and they are config keys too."""
    p = tmp_path / "mm.daph"
    p.write_text(MATMUL)
    cfg = tmp_path / "c.json"
    cfg.write_text('{"matmul_tile": true, "matmul_vec_size_bits": 256}')

    def kernel(*flags: str) -> str:
        res = daphnec("--codegen", "--explain=kernels", *flags, str(p))
        return res.stderr.split("daphne.native_kernel = @mm_", 1)[1].split("}", 1)[0]

    default, tiled = kernel(), kernel("--matmul-tile", "--matmul-vec-size-bits=256")
    assert default != tiled and kernel(f"--config={cfg}") == tiled


def test_program_cache_keeps_native_products(tmp_path: Path) -> None:
    """A second run restores the compiled program, native product kernels included, and prints the same."""
    p = tmp_path / "mm.daph"
    p.write_text(MATMUL)
    env_dir = tmp_path / "cache"
    runs = [
        subprocess.run(
            [sys.executable, "-m", "daphnec.tools.daphnec", "--codegen", "--matmul-tile", str(p)],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=ROOT,
            env={**os.environ, "DAPHNEC_CACHE_DIR": str(env_dir), "DAPHNEC_JIT_LOG": str(tmp_path / "jit.log")},
        )
        for _ in range(2)
    ]
    assert [(r.returncode, r.stderr) for r in runs] == [(0, ""), (0, "")]
    assert runs[0].stdout == runs[1].stdout == daphnec(str(p)).stdout
    assert "compiled mm_" in (tmp_path / "jit.log").read_text()
