"""Roles of the MPI ranks under `daphnec --distributed` (DAPHNE's MPI-Usage.md, facts §5).

    role = start(compile_body, configure)   # MPI_Init; "coordinator", "worker" or "local"
    serve()                                 # workers: the worker loop until DETACH, returns 0
    ship_config(config_dict)                # coordinator: the scheduler flags for every worker, once
    finish(code)                            # coordinator: DETACH the workers (or MPI_Abort after a failure)

- Rank 0 is the coordinator: it parses, compiles and runs the script and computes no pipeline rows itself.
- Ranks >= 1 are workers: they return before the script is parsed and serve pipelines until DETACH; they exit 0.
- One rank only (plain `daphnec --distributed`, or `mpiexec -n 1`): there is nobody to distribute to. daphnec
  warns and runs every distributed pipeline in-process from its shipped IR ("local"), so the result is the same.

mpi4py is imported here, never at module import time elsewhere, so plain runs do not initialise MPI.
"""

from __future__ import annotations

import signal
import sys
import time
from collections.abc import Callable
from typing import Any

from daphnec.runtime.distributed import coordinator as coord
from daphnec.runtime.distributed import liveness
from daphnec.runtime.distributed.protocol import COORDINATOR, Comms, make_comms, pmi_abort
from daphnec.runtime.distributed.worker import Worker, redirect_stdout

COORDINATOR_ROLE, WORKER_ROLE, LOCAL_ROLE = "coordinator", "worker", "local"

_WORKER: Worker | None = None
_COMMS: Comms | None = None
REPORT_GRACE = 2.0
"""Seconds the supervisor of a rank that died after start-up waits before hydra learns of it (its PMI socket
closes). A coordinator on the same machine sees the dead process itself within a fraction of a second and ends the
job with a located `distributed worker rank N failed` (exit 3); hydra would otherwise kill every rank at once (its
default) or now and then even with -disable-auto-cleanup. A coordinator on another machine learns of the death
only from hydra: the job then ends about this much later (well within 10 s)."""
_READY_FD: int | None = None
"""The child of `supervise`: the pipe on which it tells its parent that it has started."""
_SIGUSR1_SEEN = False


def start(
    compile_body: Callable[[str], Callable[..., tuple[object, ...]]],
    configure: Callable[[dict[str, Any]], None],
    warn: Callable[[str], None] | None = None,
) -> str:
    """Initialise MPI and take this rank's role. `warn` prints the single-rank warning (once the script has
    compiled: a script that does not even parse gets only its own error). Until this returns the rank is starting
    up: if any rank dies meanwhile, its supervisor ends the whole job (`supervise`)."""
    global _WORKER, _COMMS
    world = _init_mpi()
    if world is None or world.Get_size() < 2:
        coord.ACTIVE = coord.LocalRunner(compile_body, warn)
        _started()
        return LOCAL_ROLE
    _COMMS = make_comms(world)
    _COMMS.peers = world.allgather(liveness.me())  # collective, so still start-up: guarded by the supervisors
    if _COMMS.rank == COORDINATOR:
        c = coord.Coordinator(_COMMS)
        coord.ACTIVE = c
        _on_sigusr1(c.liveness.alarm.set)
        c.start()
        _started()
        return COORDINATOR_ROLE
    redirect_stdout()
    _WORKER = Worker(_COMMS, compile_body, configure)
    _on_sigusr1(_WORKER.liveness.alarm.set)
    _started()
    return WORKER_ROLE


def under_process_manager() -> bool:
    """Started by mpiexec (hydra sets PMI_RANK, or PMI_ID with a PMI port)."""
    import os

    return "PMI_RANK" in os.environ or "PMI_ID" in os.environ


def supervise() -> int | None:
    """Run this rank in a child process and wait for it; returns the child's exit status in the parent and None in
    the child, which goes on to be the MPI process.

    Why: mpich's hydra proxy SIGKILLs every rank of the job as soon as one of its direct children is killed by a
    signal (`WIFSIGNALED` in its waitpid loop), even with `mpiexec -disable-auto-cleanup`, so a worker killed with
    `kill -9` (or by the OOM killer) would take the coordinator down before it can say which rank failed. The
    parent turns the child's death by a signal into a normal exit with status 128 + signal; hydra then only
    notifies the survivors (SIGUSR1, with -disable-auto-cleanup) and the coordinator reports the failure itself.
    Without -disable-auto-cleanup hydra still ends the job at once (and names the PID of the dead process).

    Start-up is the parent's alone: a rank that dies before or inside MPI_Init (or in the collective set-up after
    it) leaves the others waiting in MPI_Init or a collective for ever, and hydra does nothing about a process
    that never finished PMI's handshake. So the child reports through a pipe when it has started (`_started`);
    a child that ends before that makes its parent abort the whole job through the process manager (PMI abort).

    The parent uses no MPI. It keeps its inherited copy of the PMI socket open until it has printed which rank died
    (hydra acts when that socket closes), forwards termination signals to the child, and ignores SIGUSR1 (meant for
    the child). Both are in one process group, so hydra's cleanup (a kill of the group) ends both."""
    import os

    global _READY_FD
    parent = os.getpid()
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(ready_r)
        _READY_FD = ready_w
        _die_with(parent)
        _record_sigusr1()
        return None
    os.close(ready_w)
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(sig, lambda signum, frame: os.kill(pid, signum))
    status = _wait_child(pid)
    started = _child_started(ready_r)
    code = os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)
    if started and os.WIFEXITED(status):
        return code
    rank = os.environ.get("PMI_RANK", os.environ.get("PMI_ID", "?"))
    role = "coordinator" if rank == "0" else "worker"
    how = f"exited with status {code}"
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        how = f"was killed by signal {sig} ({signal.Signals(sig).name})"
    when = "" if started else " during start-up; ending the job"
    sys.stderr.write(f"daphnec: distributed {role} rank {rank} (pid {pid}) {how}{when}\n")
    sys.stderr.flush()
    if not started:
        pmi_abort(code)
    else:
        time.sleep(REPORT_GRACE)  # the coordinator may end the job first, with the failure's location
    _close_pmi_socket()  # only now does hydra learn that this rank is gone
    return code


def _wait_child(pid: int) -> int:
    import os

    while True:
        try:
            return os.waitpid(pid, 0)[1]
        except InterruptedError:
            continue


def _child_started(ready_r: int) -> bool:
    import os

    os.set_blocking(ready_r, False)
    try:
        return os.read(ready_r, 1) == b"1"
    except OSError:
        return False
    finally:
        os.close(ready_r)


def _started() -> None:
    """The child of `supervise` has started (MPI initialised, communicators and peers set up, liveness running):
    from now on a death is the liveness check's to report."""
    import os

    global _READY_FD
    if _READY_FD is not None:
        os.write(_READY_FD, b"1")
        os.close(_READY_FD)
        _READY_FD = None
    if _SIGUSR1_SEEN:  # hydra reported a dead process while this rank was still starting
        signal.raise_signal(signal.SIGUSR1)


def _close_pmi_socket() -> None:
    """The parent inherited the child's PMI socket and keeps it open while the child lives: hydra reacts to the
    socket closing (by default it kills the whole job), and the report above must be out first."""
    import os

    pmi_fd = os.environ.get("PMI_FD", "")
    if pmi_fd.isdigit():
        try:
            os.close(int(pmi_fd))
        except OSError:
            pass


def _die_with(parent: int) -> None:
    """The child of `supervise` dies with its parent (Linux PR_SET_PDEATHSIG): killing either process of a rank
    ends the rank."""
    import ctypes
    import os

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before prctl
        os._exit(1)


def _init_mpi() -> Any:
    """COMM_WORLD, or None when MPI is unavailable."""
    import os

    os.environ.setdefault("MPIR_CVAR_SUPPRESS_ABORT_MESSAGE", "1")  # daphnec prints its own report before aborting
    try:
        from mpi4py import MPI
    except ImportError:
        return None
    return MPI.COMM_WORLD


def _record_sigusr1() -> None:
    """Until the liveness check runs, hydra's SIGUSR1 (some process died) is remembered, not fatal."""

    def seen(signum: int, frame: object) -> None:
        global _SIGUSR1_SEEN
        _SIGUSR1_SEEN = True

    signal.signal(signal.SIGUSR1, seen)


def _on_sigusr1(action: Callable[[], None]) -> None:
    """hydra (`-disable-auto-cleanup`) tells the surviving ranks about a dead one with SIGUSR1, whose default
    action would kill them: wake the liveness check instead."""
    signal.signal(signal.SIGUSR1, lambda signum, frame: action())


def serve() -> int:
    assert _WORKER is not None
    return _WORKER.serve()


def ship_config(config: dict[str, Any]) -> None:
    """Rank 0, once the script has compiled: send the user config to the workers (without workers: warn)."""
    if isinstance(coord.ACTIVE, coord.Coordinator):
        coord.ACTIVE.configure(config)
    elif isinstance(coord.ACTIVE, coord.LocalRunner):
        coord.ACTIVE.warn_once()


def finish(code: int) -> int:
    """Rank 0 at the end of the run: DETACH every worker and return `code`; after a worker failure, report it
    unless the script's error already did, and MPI_Abort the job, so that no process is left behind."""
    c = coord.ACTIVE
    coord.ACTIVE = None
    if not isinstance(c, coord.Coordinator):
        return code
    if not c.failed:
        try:
            c.detach()
            return code
        except coord.WorkerFailure:
            pass
    rank, reason = next(iter(c.failed.items()))
    coord.report_and_abort(str(coord.WorkerFailure(rank, reason)) if code == 0 else None, c.comms, code or 3)
    return code or 3
