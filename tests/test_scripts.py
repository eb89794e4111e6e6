"""End-to-end script tests: every `tests/scripts/**/X.daph` runs through the real `daphnec` and its stdout must
equal `X.txt` byte for byte, with empty stderr and exit 0 (like DAPHNE's own harness). An optional `X.args` holds
extra command-line words (one per line) given before the script, an optional `X.scriptargs` the `name=value`
words given after it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).parent / "scripts"
CASES = sorted(p for p in SCRIPTS.rglob("*.daph") if p.with_suffix(".txt").exists())


def run_daphnec(*args: str, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run the installed CLI in a fresh interpreter (no in-process shortcuts)."""
    return subprocess.run(
        [sys.executable, "-m", "daphnec.tools.daphnec", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
    )


def test_the_corpus_is_not_empty() -> None:
    assert len(CASES) >= 6


MODES = {"plain": [], "vec": ["--vec", "--vec-min-cells=0"]}  # small test data: pipelines anyway (the cost model)
"""Every script runs as it is and with the vectorized engine; the output must not change."""


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("script", CASES, ids=[str(p.relative_to(SCRIPTS)) for p in CASES])
def test_script_output(script: Path, mode: str) -> None:
    args_file = script.with_suffix(".args")
    extra = MODES[mode] + (args_file.read_text().split() if args_file.exists() else [])
    sargs_file = script.with_suffix(".scriptargs")
    sargs = sargs_file.read_text().split() if sargs_file.exists() else []
    res = run_daphnec(*extra, str(script), *sargs)
    assert res.stderr == ""
    assert res.returncode == 0
    assert res.stdout == script.with_suffix(".txt").read_text()
