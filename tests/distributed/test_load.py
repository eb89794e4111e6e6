"""No false alarms: on a busy machine a healthy rank may take many seconds to answer a liveness ping, and is only
slow (runtime/distributed/liveness.py decides death by process state, lost connections and progress). These runs
load both cores with busy processes; one also starves a worker (SCHED_IDLE: it runs only when a core is free)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from dist_helpers import DATA, Job, mpiexec_cmd, rank_pid, run_local

ARGS = ("--distributed", "--dist_backend=MPI", "--max-distr-chunk-size=100")


@pytest.fixture
def loaded_cores() -> Iterator[int]:
    """Two busy processes per core for the duration of the test."""
    n = 2 * (os.cpu_count() or 1)
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        yield n
    finally:
        for p in busy:
            p.kill()
            p.wait()


def _expected() -> str:
    res = run_local(str(DATA / "small_loop.daph"))
    assert res.returncode == 0, res.stderr
    return res.stdout


def test_four_ranks_on_loaded_cores(tmp_path: Path, loaded_cores: int) -> None:
    script = tmp_path / "small_loop.daph"
    shutil.copy(DATA / "small_loop.daph", script)
    job = Job(mpiexec_cmd(4, *ARGS, str(script)))
    code, out, err, _ = job.wait(timeout=600)
    assert code == 0, err
    assert out == _expected()
    assert "liveness" not in err and "failed" not in err, err


CPU_CGROUP = Path("/sys/fs/cgroup/cpu")


def _starve(pid: int, seconds: float) -> None:
    """Throttle every thread of process `pid` to 1 ms of CPU time per second for `seconds` (a cgroup-v1 CPU quota:
    the kernel's own mechanism, unaffected by how busy the machine is), then release it."""
    group = CPU_CGROUP / f"daphnec-starve-{os.getpid()}"
    group.mkdir()
    try:
        (group / "cpu.cfs_period_us").write_text("1000000")
        (group / "cpu.cfs_quota_us").write_text("1000")
        for task in Path(f"/proc/{pid}/task").iterdir():  # threads started later stay in the group
            (group / "tasks").write_text(task.name)
        time.sleep(seconds)
    finally:
        for tid in (group / "tasks").read_text().split():
            try:
                (CPU_CGROUP / "tasks").write_text(tid)
            except OSError:  # the thread has ended
                pass
        group.rmdir()


def test_a_starved_worker_is_slow_not_dead(tmp_path: Path) -> None:
    """Worker rank 2 gets almost no CPU time for 8 s in the middle of its pipelines, so it answers pings seconds
    late (the old fixed 4 s answer time declared it dead). It is alive and finishes its work once released."""
    assert os.access(CPU_CGROUP, os.W_OK), f"{CPU_CGROUP} must be writable (the tests run as root)"
    script = tmp_path / "small_loop.daph"
    shutil.copy(DATA / "small_loop.daph", script)
    job = Job(mpiexec_cmd(4, *ARGS, str(script)))
    try:
        pid = rank_pid(str(script), 2)
        job.wait_for("started")
        _starve(pid, 8.0)
        code, out, err, _ = job.wait(timeout=600)
    finally:
        job.kill()
    assert code == 0, err
    assert out == _expected()
