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
from collections.abc import Callable
from typing import Any

from runtime.distributed import coordinator as coord
from runtime.distributed.protocol import COORDINATOR, Comms, make_comms
from runtime.distributed.worker import Worker, redirect_stdout

COORDINATOR_ROLE, WORKER_ROLE, LOCAL_ROLE = "coordinator", "worker", "local"

_WORKER: Worker | None = None
_COMMS: Comms | None = None


def start(
    compile_body: Callable[[str], Callable[..., tuple[object, ...]]],
    configure: Callable[[dict[str, Any]], None],
) -> str:
    """Initialise MPI and take this rank's role."""
    global _WORKER, _COMMS
    world = _init_mpi()
    if world is None or world.Get_size() < 2:
        coord.ACTIVE = coord.LocalRunner(compile_body)
        return LOCAL_ROLE
    _COMMS = make_comms(world)
    if _COMMS.rank == COORDINATOR:
        c = coord.Coordinator(_COMMS)
        coord.ACTIVE = c
        _on_sigusr1(c.liveness.alarm.set)
        c.start()
        return COORDINATOR_ROLE
    redirect_stdout()
    _WORKER = Worker(_COMMS, compile_body, configure)
    _on_sigusr1(_WORKER.liveness.alarm.set)
    return WORKER_ROLE


def _init_mpi() -> Any:
    """COMM_WORLD, or None when MPI is unavailable."""
    try:
        from mpi4py import MPI
    except ImportError:
        return None
    return MPI.COMM_WORLD


def _on_sigusr1(action: Callable[[], None]) -> None:
    """hydra (`-disable-auto-cleanup`) tells the surviving ranks about a dead one with SIGUSR1, whose default
    action would kill them: wake the liveness check instead."""
    signal.signal(signal.SIGUSR1, lambda signum, frame: action())


def serve() -> int:
    assert _WORKER is not None
    return _WORKER.serve()


def ship_config(config: dict[str, Any]) -> None:
    """Rank 0: send the user config to the workers (a no-op without workers)."""
    if isinstance(coord.ACTIVE, coord.Coordinator):
        coord.ACTIVE.configure(config)


def finish(code: int) -> int:
    """Rank 0 at the end of the run: DETACH every worker and return `code`; after a worker failure, report it if
    nobody has yet and MPI_Abort the job, so that no process is left behind."""
    c = coord.ACTIVE
    coord.ACTIVE = None
    if not isinstance(c, coord.Coordinator):
        return code
    if not c.failed:
        try:
            c.detach()
            return code
        except coord.WorkerFailure as e:
            coord.report_and_abort(str(e), c.comms, code or 3)
    rank, reason = next(iter(c.failed.items()))
    coord.report_and_abort(str(coord.WorkerFailure(rank, reason)) if code == 0 else "aborting the distributed run",
                           c.comms, code or 3)  # fmt: skip
    return code or 3
