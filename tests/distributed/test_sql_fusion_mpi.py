"""`fuse-filter-agg` under `--distributed`: the fused filter + aggregate pipelines (selection as `daphne.cond`,
grouped sums as `daphne.groupedSum`) become `daphne.distributedPipeline`s, ship to the MPI workers as IR text and
print what the local run prints. Real `mpiexec -n 3`, nothing mocked."""

from __future__ import annotations

import pytest
from dist_helpers import ROOT, run_local, run_mpi

SCRIPTS = {
    "tests/scripts/sql/fused_aggregates.daph": ("daphne.cond", 8),
    "tests/scripts/sql/fused_group.daph": ("daphne.groupedSum", 6),
}


@pytest.mark.parametrize("script", list(SCRIPTS))
def test_fused_pipelines_are_shipped(script: str) -> None:
    res = run_local("--distributed", "--explain=vectorized", script)
    assert res.returncode == 0, res.stderr
    shipped = [ln for ln in res.stderr.splitlines() if '"daphne.distributedPipeline"' in ln]
    marker, count = SCRIPTS[script]
    assert sum(marker in ln for ln in shipped) >= count  # every fused query travels in the IR
    assert "daphne.filterRow" in res.stderr  # the shapes that are not fused keep their filter


@pytest.mark.parametrize("script", list(SCRIPTS))
def test_fused_pipelines_print_what_the_local_run_prints(script: str) -> None:
    res = run_mpi(3, "--distributed", "--dist_backend=MPI", "--vec", "--num-threads=2", script)
    assert res.stderr == ""
    assert res.returncode == 0
    assert res.stdout == (ROOT / script).with_suffix(".txt").read_text()
