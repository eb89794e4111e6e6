"""Roles and caching: the coordinator ships its flags to the workers, a single rank runs locally with a warning,
and the placement cache sends a loop's graph once."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from dist_helpers import MPIEXEC, ROOT, daphnec, env, run_local, run_mpi


def test_single_rank_warns_and_runs_locally() -> None:
    local = run_local("--vec", "examples/matrix_addition.daph")
    res = run_local("--distributed", "examples/matrix_addition.daph")
    assert res.returncode == 0
    assert res.stdout == local.stdout
    assert res.stderr.startswith("daphnec: warning: --distributed needs at least 2 MPI ranks")


def test_one_rank_under_mpiexec_runs_locally_too() -> None:
    local = run_local("--vec", "examples/matrix_addition.daph")
    res = run_mpi(1, "--distributed", "examples/matrix_addition.daph")
    assert res.returncode == 0
    assert res.stdout == local.stdout
    assert "needs at least 2 MPI ranks" in res.stderr


def test_ranks_without_distributed_warn_once() -> None:
    """`mpiexec -n 2 daphnec s.daph` (issue 25): both ranks run the whole script (DAPHNE does the same), and rank 0
    alone warns, once, that --distributed is missing; a single process or one rank does not warn."""
    local = run_local("examples/hello.daph")
    res = run_mpi(2, "examples/hello.daph")
    assert res.returncode == 0, res.stderr
    assert sorted(res.stdout.splitlines()) == sorted(local.stdout.splitlines() * 2)
    warnings = [ln for ln in res.stderr.splitlines() if "without --distributed" in ln]
    assert warnings == [
        "daphnec: warning: started by mpiexec with 2 ranks but without --distributed: every rank runs the whole "
        "script on its own (and prints everything 2 times); add --distributed before the script to run its "
        "pipelines on the ranks"
    ]
    assert "--distributed" not in local.stderr
    assert "--distributed" not in run_mpi(1, "examples/hello.daph").stderr


def test_workers_take_the_coordinators_flags() -> None:
    """MPMD launch: only rank 0 gets --num-threads=3 --debug-mt, yet both workers run their rows on three threads
    and report it (on stderr: a worker's stdout goes to stderr); stdout is the program's output only."""
    local = run_local("--vec", "examples/matrix_addition.daph")
    cmd = [str(MPIEXEC), "-n", "1", *daphnec("--distributed", "--vec", "--num-threads=3", "--debug-mt",
                                             "examples/matrix_addition.daph"),
           ":", "-n", "2", *daphnec("--distributed", "examples/matrix_addition.daph")]  # fmt: skip
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env(), timeout=180)
    assert res.returncode == 0, res.stderr
    assert res.stdout == local.stdout
    reports = [ln for ln in res.stderr.splitlines() if ln.startswith("_numThreads=")]
    assert reports and all(ln.startswith("_numThreads=3 ") for ln in reports), res.stderr


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("graph") / "g.mtx"
    subprocess.run(daphnec_graph(path), check=True, cwd=ROOT, env=env(), capture_output=True, timeout=120)
    return path


def daphnec_graph(path: Path) -> list[str]:
    import sys

    return [
        sys.executable,
        "-m",
        "daphnec.tools.gen_graph",
        str(path),
        "--vertices",
        "3000",
        "--edges",
        "12000",
        "--seed",
        "5",
    ]


@pytest.mark.parametrize(("scheme", "ranks"), [("STATIC", 3), ("TSS", 4)])
def test_components_ships_the_graph_once(graph: Path, scheme: str, ranks: int, tmp_path: Path) -> None:
    """Connected components on a CSR graph: same output as the local run, and over all iterations the graph's rows
    cross the wire once (its CSR bytes; a stolen chunk may add a little under dynamic scheduling, never a second
    copy), while the per-iteration row vector t(c) is sent every iteration."""
    args = ["--vec", "--select-matrix-repr", "examples/components.daph", f'f="{graph}"']
    local = run_local(*args)
    stats = tmp_path / "stats.json"
    res = run_mpi(ranks, "--distributed", "--num-threads=1", f"--partitioning={scheme}", *args,
                  DAPHNEC_DIST_STATS=str(stats))  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert res.stdout == local.stdout
    shipped = json.loads(stats.read_text())["shipped"]
    iterations = int(next(ln for ln in local.stdout.splitlines() if ln.startswith("iterations:")).split()[1])
    graph_bytes = shipped["csr 3000x3000"]
    nnz = 12000
    csr_bytes = (3000 + 1 + nnz) * 4 + nnz * 8  # int32 indices, f64 values
    if scheme == "STATIC":  # one row block per worker: each block has its own indptr (one entry more per block)
        assert graph_bytes == csr_bytes + (ranks - 2) * 4
    else:  # stolen chunks travel again, to the thief, which keeps them: never a copy per iteration
        assert csr_bytes <= graph_bytes < 2 * csr_bytes
    assert shipped["dense 1x3000"] == iterations * (ranks - 1) * 3000 * 8
