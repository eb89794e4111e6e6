"""Faults, with the real `mpiexec` and real signals: a failed worker ends the run quickly, with a non-zero exit
status, naming the failed rank, and leaves no process behind.

What mpich's process manager (hydra) does when a rank dies decides what can be observed (docs/distributed.md,
"Faults"): by default it SIGKILLs every other rank at once and reports the dead process by PID; with
`-disable-auto-cleanup` it usually lets the others run and sends them SIGUSR1, and then daphnec's coordinator
reports the rank itself — but hydra 5.0.2 still kills the survivors in some runs (seen with `strace`: its proxy
sends SIGKILL to their process groups). A killed worker is therefore identified either by the coordinator
("distributed worker rank 2") or by hydra (its PID). A *stopped* worker (SIGSTOP: alive, but silent) is found by
the coordinator's liveness check alone, which makes that test deterministic.
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path

import pytest
from dist_helpers import DATA, Job, mpiexec_cmd, processes_running, rank_pid, run_mpi

FAST = {"DAPHNEC_DIST_DEADLINE": "2", "DAPHNEC_DIST_PING_INTERVAL": "0.2"}


def _start_loop(tmp_path: Path, mpiexec_flags: tuple[str, ...] = ()) -> tuple[Job, str]:
    script = tmp_path / "long_loop.daph"  # a unique path: finds this job's processes and only them
    shutil.copy(DATA / "long_loop.daph", script)
    job = Job(mpiexec_cmd(3, "--distributed", "--vec", str(script), mpiexec_flags=mpiexec_flags), **FAST)
    return job, str(script)


def _no_orphans(marker: str) -> None:
    deadline = time.monotonic() + 5
    while processes_running(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_running(marker) == []


@pytest.mark.parametrize("mpiexec_flags", [(), ("-disable-auto-cleanup",)], ids=["default", "disable-auto-cleanup"])
def test_killed_worker_ends_the_run_quickly(tmp_path: Path, mpiexec_flags: tuple[str, ...]) -> None:
    job, marker = _start_loop(tmp_path, mpiexec_flags)
    try:
        pid = rank_pid(marker, 2)
        time.sleep(3)  # well into the loop of pipelines
        os.kill(pid, signal.SIGKILL)
        code, out, err, waited = job.wait(timeout=30)
    finally:
        job.kill()
    assert code is not None and code != 0, err
    assert waited <= 10, f"the run took {waited:.1f} s to end after the kill"
    assert f"daphnec: distributed worker rank 2 (pid {pid}) was killed by signal 9 (SIGKILL)" in err, out + err
    if mpiexec_flags:  # the survivors live on: the coordinator notices the failure and says so itself
        assert "error: distributed worker rank 2 failed: " in err, err
    assert "Traceback" not in err
    _no_orphans(marker)


def test_stopped_worker_is_reported_by_rank(tmp_path: Path) -> None:
    job, marker = _start_loop(tmp_path)
    try:
        pid = rank_pid(marker, 1)
        time.sleep(3)
        os.kill(pid, signal.SIGSTOP)
        code, out, err, waited = job.wait(timeout=30)
    finally:
        job.kill()
    assert code is not None and code != 0, err
    assert waited <= 10, f"the run took {waited:.1f} s to end after the worker stopped"
    assert "distributed worker rank 1 failed" in err, err
    assert "liveness check" in err
    assert "Traceback" not in err
    _no_orphans(marker)


def test_worker_error_reports_rank_and_location() -> None:
    """Division by zero at row 70 of 100: under STATIC on two workers, rank 2 computes it. The coordinator reports
    the error with the DaphneDSL location of the failing op (as the local run does) and the rank; the run ends
    cleanly (workers DETACHed), with DAPHNE's execution-error status 3."""
    script = "tests/distributed/data/div_zero.daph"
    res = run_mpi(3, "--distributed", "--vec", script, timeout=120)
    assert res.returncode == 3
    assert res.stdout == ""
    assert res.stderr == f"{script}:4:5: error: division by zero (on distributed worker rank 2)\n"


def test_worker_error_under_dynamic_scheduling() -> None:
    script = "tests/distributed/data/div_zero.daph"
    res = run_mpi(4, "--distributed", "--vec", "--partitioning=SS", script, timeout=120)
    assert res.returncode == 3
    assert res.stderr.startswith(f"{script}:4:5: error: division by zero (on distributed worker rank ")
