"""Honest reporting (issue 14), from real `daphnec` processes: `--timing`'s parts add up to `total_seconds` and a
program served from the whole-program cache reports no parsing or compilation; `--statistics` prints DAPHNE's
operator statistics table (time, calls, bytes, location) for every run, with or without `--vec`."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "examples" / "linear_regression.daph"


def run(cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, DAPHNEC_CACHE_DIR=str(cache), DAPHNEC_PROGRAM_CACHE_LOG=str(cache) + ".log")
    env.pop("DAPHNEC_PROGRAM_CACHE_DIR", None)
    cmd = [sys.executable, "-m", "daphnec.tools.daphnec", *args, str(SCRIPT)]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300, cwd=ROOT)


def timing(res: subprocess.CompletedProcess[str]) -> dict[str, float]:
    assert res.returncode == 0, res.stderr
    return json.loads(res.stderr.strip().splitlines()[-1])


def test_timing_parts_add_up_and_a_cache_hit_compiles_nothing(tmp_path: Path) -> None:
    first = timing(run(tmp_path / "c", "--timing"))
    parts = ("startup_seconds", "parsing_seconds", "compilation_seconds", "execution_seconds")
    assert first["parsing_seconds"] > 0 and first["compilation_seconds"] > 0
    assert sum(first[p] for p in parts) == pytest.approx(first["total_seconds"], rel=1e-5)
    hit = timing(run(tmp_path / "c", "--timing"))
    assert (tmp_path / "c.log").read_text().split()[-2] == "hit"
    assert hit["parsing_seconds"] == 0 and hit["compilation_seconds"] == 0
    assert sum(hit[p] for p in parts) == pytest.approx(hit["total_seconds"], rel=1e-5)


PRODUCTS = {"matmul", "syrk", "solve"}
"""The script's product kernels (a 1000 x 10 `t(X) @ X`, `solve`, 10 x 10 products in the loop)."""
ROW = re.compile(r"(\d+) +(\S+) +(\d+\.\d{4}) *(\d+) +(\d+\.\d{4}) *(\d+) +(\S+:\d+:\d+)$")


@pytest.mark.parametrize("mode", [[], ["--vec", "--vec-min-cells=0"]])  # small matrices: pipelines anyway
def test_statistics_table_for_every_run(tmp_path: Path, mode: list[str]) -> None:
    res = run(tmp_path / "c", "--statistics", *mode)
    assert res.returncode == 0
    lines = res.stderr.splitlines()
    assert lines[0] == "DAPHNE operator execution runtime statistics."
    assert lines[1].split() == ["#", "Operator", "Name", "Time(s)", "Count", "Avg(s)", "Bytes", "File:Line:Column"]
    rows = [ROW.match(line) for line in lines[2:]]
    assert rows and all(rows) and len(rows) <= 10, res.stderr
    names = {m.group(2) for m in rows if m}
    # the ten most expensive rows: which of the small products make it depends on the machine's timing
    assert "rand" in names and (any(n.startswith("pipeline(") for n in names) if mode else names & PRODUCTS)
    times = [float(m.group(3)) for m in rows if m]
    assert times == sorted(times, reverse=True)
    rand = next(m for m in rows if m and m.group(2) == "rand" and m.group(7).endswith(":7:5"))
    assert int(rand.group(6)) == 80000 and rand.group(4) == "1"  # rand(1000, 10, ...) of f64, called once
