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
from daphnec.runtime.distributed.protocol import COORDINATOR, Comms, make_comms, pmi_abort, wait_until_read
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
    rank = os.environ.get("PMI_RANK", os.environ.get("PMI_ID", "?"))
    role = "coordinator" if rank == "0" else "worker"
    watch = _Watch(pid, ready_r, f"distributed {role} rank {rank}")
    status = watch.until_child_ends()
    started = watch.started
    code = os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)
    if started and os.WIFEXITED(status):
        return code
    how = f"exited with status {code}"
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        how = f"was killed by signal {sig} ({signal.Signals(sig).name})"
    when = "" if started else " during start-up; ending the job"
    sys.stderr.write(f"daphnec: {watch.who} (pid {pid}) {how}{when}\n")
    sys.stderr.flush()
    if not started:
        wait_until_read((2,))  # hydra's abort must not kill this process before the proxy has read the report
        pmi_abort(code)
    else:
        time.sleep(REPORT_GRACE)  # the coordinator may end the job first, with the failure's location
    _close_pmi_socket()  # only now does hydra learn that this rank is gone
    return code


class _Watch:
    """The supervisor's watch over its rank (`supervise`): it waits for the child to end, and meanwhile ends the
    job itself when nobody else can:

    - **The child is stopped** (SIGSTOP: alive, but it will never answer). During start-up the other ranks wait for
      it in MPI_Init or a collective, for ever; at shutdown the coordinator has already gone, and hydra waits for
      every rank. After `TIMING.deadline` seconds in state T (plus `REPORT_GRACE` once started, so that a
      coordinator that watches the worker reports it with the pipeline's location first) the child is killed and
      the job aborted through the process manager.
    - **The process manager is gone or stopped.** hydra's proxy (this process's parent) forwards the ranks' output
      and would end the job; when it is killed, the ranks would compute on for ever with nobody to tell, and
      mpiexec waits for them (they hold its output pipes). The supervisor reports to mpiexec directly (the proxy's
      own stderr, inherited), kills its child and exits; a proxy stopped for the deadline is killed first.

    A stopped *mpiexec* is left alone: that is job control (Ctrl-Z), and the job goes on when it is continued."""

    POLL = 0.1
    """Seconds between looks at the child's and the proxy's state (the child's end wakes the watch at once)."""

    def __init__(self, pid: int, ready_r: int, who: str) -> None:
        import os

        self.pid = pid
        self.ready_r = ready_r
        self.who = who
        self.started = False
        self.proxy = os.getppid()
        self.to_mpiexec = _proxy_stderr(self.proxy)
        os.set_blocking(ready_r, False)

    def until_child_ends(self) -> int:
        """The child's wait status (the job may be ended on the way, see the class docstring)."""
        import os
        import select

        try:
            child = os.pidfd_open(self.pid)
        except (AttributeError, OSError):
            child = -1
        self.poller = select.poll()
        if child >= 0:
            self.poller.register(child, select.POLLIN)
        self.poller.register(self.ready_r, select.POLLIN)
        stopped: dict[str, float] = {}
        try:
            while True:
                done, status = os.waitpid(self.pid, os.WNOHANG)
                self._read_ready()
                if done:
                    return status
                self._look(time.monotonic(), stopped)
                try:
                    self.poller.poll(self.POLL * 1000)
                except InterruptedError:
                    pass
        finally:
            if child >= 0:
                os.close(child)
            if self.ready_r >= 0:
                os.close(self.ready_r)

    def _read_ready(self) -> None:
        """Whether the child has said that it started; the pipe leaves the poll once it has said so or closed."""
        import os

        if self.started or self.ready_r < 0:
            return
        try:
            got = os.read(self.ready_r, 1)
        except BlockingIOError:
            return
        except OSError:
            got = b""
        self.started = got == b"1"
        self.poller.unregister(self.ready_r)
        os.close(self.ready_r)
        self.ready_r = -1

    def _look(self, now: float, stopped: dict[str, float]) -> None:
        import os

        from daphnec.runtime.distributed.liveness import process_state
        from daphnec.runtime.distributed.protocol import TIMING

        if os.getppid() != self.proxy:
            self._leave(f"the process manager (hydra_pmi_proxy, pid {self.proxy}) has ended; ending this rank")
        for what, pid, patience in (("child", self.pid, TIMING.deadline + (REPORT_GRACE if self.started else 0.0)),
                                    ("proxy", self.proxy, TIMING.deadline)):  # fmt: skip
            if process_state(pid) != "T":
                stopped.pop(what, None)
                continue
            since = stopped.setdefault(what, now)
            if now - since < patience:
                continue
            if what == "proxy":
                self._leave(f"the process manager (hydra_pmi_proxy, pid {pid}) is stopped (SIGSTOP) and made no "
                            f"progress for {now - since:.0f} s; ending the job", kill_proxy=True)  # fmt: skip
            else:
                self._abort(f"is stopped (SIGSTOP) and made no progress for {now - since:.0f} s"
                            + ("" if self.started else " during start-up") + "; ending the job")  # fmt: skip

    def _abort(self, what: str) -> None:
        """The child hangs: report, kill it, and have the process manager end the whole job."""
        import os

        sys.stderr.write(f"daphnec: {self.who} (pid {self.pid}) {what}\n")
        sys.stderr.flush()
        _kill(self.pid)
        wait_until_read((2,))
        pmi_abort(3)
        time.sleep(10)  # hydra kills this process within milliseconds
        os._exit(3)

    def _leave(self, what: str, kill_proxy: bool = False) -> None:
        """The process manager cannot end the job: report straight to mpiexec, end this rank (and the stopped
        proxy), and exit."""
        import os

        message = f"daphnec: {self.who} (pid {self.pid}): {what}\n".encode()
        for fd in (self.to_mpiexec, 2):
            if fd is None:
                continue
            try:
                os.set_blocking(fd, False)  # a full pipe to a stopped reader must not hold this up
                os.write(fd, message)
                break
            except OSError:
                continue
        _kill(self.pid)
        if kill_proxy:
            _kill(self.proxy, reap=False)
        os._exit(3)


def _kill(pid: int, reap: bool = True) -> None:
    import os

    try:
        os.kill(pid, signal.SIGKILL)
        if reap:
            os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass


def _proxy_stderr(proxy: int) -> int | None:
    """A descriptor this process inherited from hydra's proxy that is the proxy's own stderr (a pipe or socket
    that mpiexec reads and prints), or None: the way to mpiexec when the proxy itself is gone."""
    import os

    try:
        target = os.readlink(f"/proc/{proxy}/fd/2")
        mine = os.readlink("/proc/self/fd/2")
    except OSError:
        return None
    if target == mine or not target.startswith(("pipe:", "socket:")):
        return None
    try:
        fds = [int(n) for n in os.listdir("/proc/self/fd")]
    except OSError:
        return None
    for fd in sorted(fds):
        try:
            if fd > 2 and os.readlink(f"/proc/self/fd/{fd}") == target:
                return fd
        except OSError:
            continue
    return None


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
