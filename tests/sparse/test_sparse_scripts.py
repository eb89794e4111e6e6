"""End-to-end CSR scripts whose exact output depends on the representation the compiler chose (`CSRMatrix` vs
`DenseMatrix` headers): run without the vectorized engine and compared byte for byte. (tests/scripts/sparse holds
the scripts that print the same with and without `--vec`.) With `--vec` only the values must agree, compared like
DAPHNE's own harness does for vectorized pipelines: `DenseMatrix`/`CSRMatrix` replaced by one placeholder."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).parent / "scripts"
CASES = sorted(p for p in SCRIPTS.glob("*.daph") if p.with_suffix(".txt").exists())
VEC_CASES = [p for p in CASES if p.stem != "csr_ops"]  # csr_ops multiplies matrices inside a pipeline


def run_daphnec(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tools.daphnec", *args], capture_output=True, text=True, timeout=120)


def _flags(script: Path) -> list[str]:
    args = script.with_suffix(".args")
    return args.read_text().split() if args.exists() else []


@pytest.mark.parametrize("script", CASES, ids=[p.stem for p in CASES])
def test_csr_script(script: Path) -> None:
    res = run_daphnec(*_flags(script), str(script))
    assert res.stderr == ""
    assert res.returncode == 0
    assert res.stdout == script.with_suffix(".txt").read_text()


@pytest.mark.parametrize("script", VEC_CASES, ids=[p.stem for p in VEC_CASES])
def test_csr_script_vectorized_values(script: Path) -> None:
    res = run_daphnec("--vec", *_flags(script), str(script))
    assert res.returncode == 0, res.stderr
    some = re.compile(r"(DenseMatrix|CSRMatrix)")
    assert some.sub("<SomeMatrix>", res.stdout) == some.sub("<SomeMatrix>", script.with_suffix(".txt").read_text())
