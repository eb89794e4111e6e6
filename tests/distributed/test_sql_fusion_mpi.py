"""`fuse-filter-agg` under `--distributed`: the fused filter + aggregate pipelines (selection as `daphne.cond`)
become `daphne.distributedPipeline`s, ship to the MPI workers as IR text and print what the local run prints.
Real `mpiexec -n 3`, nothing mocked."""

from __future__ import annotations

from dist_helpers import ROOT, run_local, run_mpi

SCRIPT = "tests/scripts/sql/fused_aggregates.daph"


def test_fused_pipelines_are_shipped() -> None:
    res = run_local("--distributed", "--explain=vectorized", SCRIPT)
    assert res.returncode == 0, res.stderr
    shipped = [ln for ln in res.stderr.splitlines() if '"daphne.distributedPipeline"' in ln]
    assert sum("daphne.cond" in ln for ln in shipped) >= 8  # every fused query (the selects travel in the IR)
    assert "daphne.filterRow" in res.stderr  # the shapes that are not fused keep their filter


def test_fused_pipelines_print_what_the_local_run_prints() -> None:
    res = run_mpi(3, "--distributed", "--dist_backend=MPI", "--vec", "--num-threads=2", SCRIPT)
    assert res.stderr == ""
    assert res.returncode == 0
    assert res.stdout == (ROOT / SCRIPT).with_suffix(".txt").read_text()
