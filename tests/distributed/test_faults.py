"""Faults, with the real `mpiexec` and real signals: a rank that dies or stops in any phase of a run, and hydra's
proxy killed or stopped, end the job within 10 s, with a non-zero exit status, naming the failed rank, and leave no
process behind; mpiexec stopped and continued (job control) only pauses the job. tests/distributed/fault_matrix.py
runs every cell of this matrix many times; the tests here take one run of the cells that need their own code.

What mpich's process manager (hydra) does when a rank dies decides what can be observed (docs/distributed.md,
"Faults"): by default it SIGKILLs every other rank at once; with `-disable-auto-cleanup` it lets the others run and
sends them SIGUSR1, and then daphnec's coordinator reports the rank itself. Before a rank has finished MPI_Init
hydra does nothing at all: the supervisor of the dead rank ends the job (`launch.supervise`). A *stopped* worker
(SIGSTOP: alive, but silent) is found by the coordinator's liveness check alone.

Each test prints the seconds from the fault to the end of the job (`pytest -s` shows them).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import time
from pathlib import Path

import pytest
from dist_helpers import DATA, ROOT, Job, mpiexec_cmd, parent_pid, processes_running, rank_pid, run_local, run_mpi

FAST = {"DAPHNEC_DIST_DEADLINE": "2", "DAPHNEC_DIST_PING_INTERVAL": "0.2"}
MODES = pytest.mark.parametrize("mpiexec_flags", [(), ("-disable-auto-cleanup",)], ids=["default", "no-cleanup"])
KILLED = "daphnec: distributed {role} rank {rank} (pid {pid}) was killed by signal 9 (SIGKILL)"


def _start(tmp_path: Path, name: str, mpiexec_flags: tuple[str, ...] = (), ranks: int = 3,
           flags: tuple[str, ...] = ("--vec",), **env: str) -> tuple[Job, str]:  # fmt: skip
    script = tmp_path / name  # a unique path: finds this job's processes and only them
    if not script.exists():
        shutil.copy(DATA / name, script)
    job = Job(mpiexec_cmd(ranks, "--distributed", *flags, str(script), mpiexec_flags=mpiexec_flags),
              **{**FAST, **env})  # fmt: skip
    return job, str(script)


def _ends_after(job: Job, what: str) -> tuple[int | None, str, str]:
    code, out, err, waited = job.wait(timeout=30)
    print(f"\n{what}: the job ended {waited:.2f} s after the fault (exit status {code})")
    assert code is not None and code != 0, err
    assert waited <= 10, f"the run took {waited:.1f} s to end after the fault"
    assert "Traceback" not in err, err
    return code, out, err


def _no_orphans(marker: str) -> None:
    deadline = time.monotonic() + 5
    while processes_running(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_running(marker) == []


def _mapped(pid: int, library: str) -> bool:
    try:
        return library in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


# -- start-up ------------------------------------------------------------------------------------------------------


@MODES
def test_worker_killed_before_mpi_init(tmp_path: Path, mpiexec_flags: tuple[str, ...]) -> None:
    """Killed as soon as it exists (before it imports MPI): the others would wait in MPI_Init for ever, and hydra
    knows nothing of a rank that never reached PMI's handshake. Its supervisor ends the job."""
    job, marker = _start(tmp_path, "long_loop.daph", mpiexec_flags)
    try:
        pid = rank_pid(marker, 2)
        os.kill(pid, signal.SIGKILL)
        _, _, err = _ends_after(job, f"worker killed before MPI_Init ({mpiexec_flags or 'default'})")
    finally:
        job.kill()
    assert KILLED.format(role="worker", rank=2, pid=pid) + " during start-up; ending the job" in err, err
    _no_orphans(marker)


@MODES
@pytest.mark.parametrize("victim", [2, 0], ids=["worker", "coordinator"])
def test_rank_killed_inside_mpi_init(tmp_path: Path, mpiexec_flags: tuple[str, ...], victim: int) -> None:
    """The other ranks are held (SIGSTOP) so that the victim, which has loaded libmpi, waits inside MPI_Init for
    them; it is killed there, and the others are let go into an MPI_Init that cannot complete. (Held longer than
    the deadline, they would end the job themselves: a long deadline here.)"""
    job, marker = _start(tmp_path, "long_loop.daph", mpiexec_flags, DAPHNEC_DIST_DEADLINE="60")
    try:
        others = [rank_pid(marker, r) for r in (0, 1, 2) if r != victim]
        for p in others:
            os.kill(p, signal.SIGSTOP)
        pid = rank_pid(marker, victim)
        deadline = time.monotonic() + 60
        while not _mapped(pid, "libmpi") and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.5)  # well inside MPI_Init, waiting for the held ranks
        os.kill(pid, signal.SIGKILL)
        for p in others:
            with contextlib.suppress(ProcessLookupError):  # the victim's supervisor may have ended the job already
                os.kill(p, signal.SIGCONT)
        _, _, err = _ends_after(job, f"rank {victim} killed inside MPI_Init ({mpiexec_flags or 'default'})")
    finally:
        job.kill()
    role = "coordinator" if victim == 0 else "worker"
    assert KILLED.format(role=role, rank=victim, pid=pid) + " during start-up; ending the job" in err, err
    _no_orphans(marker)


def test_worker_stopped_during_start_up(tmp_path: Path) -> None:
    """Stopped as soon as it exists: the others would wait for it in MPI_Init for ever (and did, > 60 s). Its
    supervisor sees it stopped for the deadline and ends the job."""
    job, marker = _start(tmp_path, "long_loop.daph")
    try:
        pid = rank_pid(marker, 2)
        os.kill(pid, signal.SIGSTOP)
        _, _, err = _ends_after(job, "worker stopped during start-up")
    finally:
        job.kill()
    assert f"daphnec: distributed worker rank 2 (pid {pid}) is stopped (SIGSTOP) and made no progress for 2 s " \
           "during start-up; ending the job" in err, err  # fmt: skip
    _no_orphans(marker)


# -- running -------------------------------------------------------------------------------------------------------


def _strike(tmp_path: Path, name: str, rank: int, what: str, sig: int = signal.SIGKILL, after: float = 1.5,
            mpiexec_flags: tuple[str, ...] = (), flags: tuple[str, ...] = ("--vec",)) -> tuple[int, str]:  # fmt: skip
    """Run `name`, and `after` seconds past its "started" mark send `sig` to rank `rank`'s MPI process; returns
    that pid and the job's stderr once it has ended (within 10 s, without orphans)."""
    job, marker = _start(tmp_path, name, mpiexec_flags, flags=flags)
    try:
        pid = rank_pid(marker, rank)
        job.wait_for("started")
        time.sleep(after)
        os.kill(pid, sig)
        _, _, err = _ends_after(job, what)
    finally:
        job.kill()
    _no_orphans(marker)
    return pid, err


@MODES
def test_killed_worker_during_pipelines(tmp_path: Path, mpiexec_flags: tuple[str, ...]) -> None:
    what = f"worker killed during pipelines ({mpiexec_flags or 'default'})"
    pid, err = _strike(tmp_path, "long_loop.daph", 2, what, mpiexec_flags=mpiexec_flags)
    # the coordinator, which watches the worker's process, ends the job with the failure's location; the worker's
    # supervisor gives it the time before hydra learns of the death (launch.REPORT_GRACE) and often names the rank
    # first (hydra's abort may end it before it has)
    assert f"error: distributed worker rank 2 failed: its process (pid {pid}) has ended" in err, err
    assert "Abort(" not in err, err  # no mpich banner after daphnec's message


def test_killed_worker_while_the_coordinator_computes_alone(tmp_path: Path) -> None:
    """No pipeline runs: the coordinator's main thread is busy with host code; its liveness thread reports."""
    what = "worker killed while the coordinator computes alone"
    pid, err = _strike(tmp_path, "local_loop.daph", 1, what, after=0.5, mpiexec_flags=("-disable-auto-cleanup",))
    assert f"error: distributed worker rank 1 failed: its process (pid {pid}) has ended" in err, err


def test_killed_coordinator_ends_the_workers(tmp_path: Path) -> None:
    """With -disable-auto-cleanup nobody kills the workers: they see the coordinator's process gone and exit."""
    what = "coordinator killed during pipelines"
    pid, err = _strike(tmp_path, "long_loop.daph", 0, what, mpiexec_flags=("-disable-auto-cleanup",))
    assert KILLED.format(role="coordinator", rank=0, pid=pid) in err, err


def test_killed_worker_during_paramserv(tmp_path: Path) -> None:
    models = ROOT / "examples" / "paramserv" / "models.daph"
    (tmp_path / "ps_loop.daph").write_text(
        f'import "{models}" as "m";\nX, y = m.regression_data(20000, 10);\nprint("started", true, true);\n'
        'M = paramserv(model=m.linreg_init(10), features=X, labels=y, upd=m.linreg_gradients, agg=m.sgd, '
        'hyperparams=createList(as.matrix(0.01)), freq="BATCH", utype="BSP", mode="MPI", epochs=100000, '
        "batchsize=8);\nprint(m.linreg_mse(M, X, y));\n"
    )  # fmt: skip
    pid, err = _strike(tmp_path, "ps_loop.daph", 2, "worker killed during paramserv", after=3,  # UDFs compiled
                       mpiexec_flags=("-disable-auto-cleanup",), flags=("--dist_backend=MPI",))  # fmt: skip
    assert f"distributed worker rank 2 failed: its process (pid {pid}) has ended" in err, err


def test_stopped_worker_is_reported_by_rank(tmp_path: Path) -> None:
    pid, err = _strike(tmp_path, "long_loop.daph", 1, "worker stopped (SIGSTOP) during pipelines", signal.SIGSTOP)
    assert f"distributed worker rank 1 failed: its process (pid {pid}) is stopped (state T)" in err, err


def test_stopped_coordinator_ends_the_job(tmp_path: Path) -> None:
    """Nobody watches the coordinator but its supervisor (the workers only wait for it)."""
    pid, err = _strike(tmp_path, "long_loop.daph", 0, "coordinator stopped (SIGSTOP) during pipelines", signal.SIGSTOP)
    assert f"daphnec: distributed coordinator rank 0 (pid {pid}) is stopped (SIGSTOP) and made no progress" in err


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSTOP], ids=["killed", "stopped"])
def test_the_process_manager_lost_ends_every_rank(tmp_path: Path, sig: int) -> None:
    """hydra's proxy killed: the ranks used to compute on for ever, and mpiexec waited for them (they hold its
    output pipes). Each rank's supervisor tells mpiexec itself (through the proxy's inherited stderr) and ends its
    rank; a stopped proxy is killed first."""
    job, marker = _start(tmp_path, "long_loop.daph")
    try:
        proxy = parent_pid(parent_pid(rank_pid(marker, 0)))
        job.wait_for("started")
        time.sleep(1)
        os.kill(proxy, sig)
        _, _, err = _ends_after(job, f"hydra's proxy {'killed' if sig == signal.SIGKILL else 'stopped'} mid-run")
    finally:
        job.kill()
    how = "has ended; ending this rank" if sig == signal.SIGKILL else "is stopped (SIGSTOP)"
    assert f"the process manager (hydra_pmi_proxy, pid {proxy}) {how}" in err, err
    assert "daphnec: distributed coordinator rank 0 (pid " in err or "daphnec: distributed worker rank " in err, err
    _no_orphans(marker)


def test_stopping_mpiexec_only_pauses_the_job(tmp_path: Path) -> None:
    """SIGSTOP to mpiexec is what Ctrl-Z does: the job must not end for it, and finishes normally once continued."""
    expected = run_local(str(DATA / "small_loop.daph")).stdout
    job, marker = _start(tmp_path, "small_loop.daph")
    try:
        job.wait_for("started")
        os.kill(job.proc.pid, signal.SIGSTOP)
        time.sleep(5)  # longer than any deadline (the ranks may finish meanwhile: that is fine)
        os.kill(job.proc.pid, signal.SIGCONT)
        code, out, err, waited = job.wait(timeout=30)
    finally:
        job.kill()
    assert (code, out) == (0, expected), err
    assert "daphnec:" not in err, err
    _no_orphans(marker)


def test_worker_killed_during_shutdown(tmp_path: Path) -> None:
    """After the script's last statement (DETACH, MPI_Finalize, the interpreter's exit): the job still ends with
    the rank named, never with hydra's banner alone."""
    (tmp_path / "short.daph").write_text((DATA / "small_loop.daph").read_text() + 'print("ending", true, true);\n')
    job, marker = _start(tmp_path, "short.daph")
    try:
        pid = rank_pid(marker, 1)
        job.wait_for("ending")
        with contextlib.suppress(ProcessLookupError):  # it may have ended cleanly already
            os.kill(pid, signal.SIGKILL)
        code, _, err, waited = job.wait(timeout=30)
    finally:
        job.kill()
    print(f"\nworker killed during shutdown: the job ended {waited:.2f} s after the fault (exit status {code})")
    assert waited <= 10 and "Traceback" not in err, err
    if code != 0:  # the kill may land after the rank's clean exit: then nothing failed
        assert f"daphnec: distributed worker rank 1 (pid {pid}) was killed by signal 9 (SIGKILL)" in err, err
    _no_orphans(marker)


# -- errors ----------------------------------------------------------------------------------------------------------


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
