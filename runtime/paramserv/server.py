"""The parameter server's update strategies, independent of the transport.

A worker talks to the server with two calls (in LOCAL mode under a lock, local.py; in MPI mode from rank 0's
message loop, mpi.py):

    push(worker, clock, grads, used)  # a gradient computed on model version `used`, for step `clock`
    try_pull(worker, clock)           # (model, version) if the worker may go on to compute for `clock`,
                                      # STOP if the run is over, None if it must wait

`version` counts the model updates applied so far (version 0 = the initial model).

- **BSP** (bulk synchronous): clock c is complete when every worker with a push at c (`partition.participants`)
  has pushed; the server then sums the clock's gradients *in worker order* and calls `agg` once (SystemDS's
  accrue-then-update): model_{c+1} = agg(model_c, hp, g_0 + g_1 + ...). A worker pulls for its next clock c' only
  once model_{c'} exists. The result does not depend on thread or message timing.
- **SSP** (stale synchronous, staleness s): the server applies clocks exactly as BSP, but a worker may compute its
  next push (clock c') as soon as model_{c'-s} exists, with the freshest model there is. Staleness of a gradient
  = its clock - the version of the model it was computed on, always <= s (recorded, max in the stats). s = 0 is
  exactly BSP.
- **ASP** (asynchronous): each gradient is applied on arrival (`agg` under the server's lock); a pull returns the
  current model. Staleness = version at arrival - version used.
- **SBP** (synchronous with backup workers, b of them): each step the server takes the first k - b gradients
  pushed for the current version, sums them in worker order, applies them and publishes the next version;
  gradients computed on an older version arrive late and are dropped (counted). A worker that pushed for version
  v waits for version v+1 (or newer) and goes on with the newest model.

ASP and SBP have a *budget*: they apply epochs * sum_i P_i gradients, as many as BSP sums (ASP one per update,
SBP k - b per step, so SBP takes k / (k - b) times as many steps as BSP). Their workers stream batches from their
partitions epoch after epoch until the server has spent the budget (then pulls answer STOP): a worker slowed down
does not hold the run back, the others cover for it (so with a straggler these finish sooner than BSP; see
docs/paramserv.md).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from daphnec.runtime.kernels.lists import DaphneList
from daphnec.runtime.paramserv.stats import EpochLog
from daphnec.runtime.paramserv.udf import call_agg, sum_in_order

STOP = "STOP"
"""What `try_pull` returns once the run is over."""

Pulled = tuple[DaphneList, int] | str | None


class Server:
    """State shared by the strategies: the model, its version, the statistics and epoch timing.

    `progress` measures the run against its epochs: clocks for BSP/SSP (max_i P_i per epoch), gradients applied
    for ASP and SBP (sum_i P_i per epoch)."""

    def __init__(self, model: DaphneList, hp: DaphneList, agg: Callable[..., object], log: EpochLog,
                 per_epoch: int, epochs: int):  # fmt: skip
        self.model = model
        self.hp = hp
        self.agg = agg
        self.log = log
        self.version = 0
        self.progress = 0
        self.stopped = False
        self.per_epoch = max(per_epoch, 1)
        self.epochs = epochs
        self.epoch_ends: list[float] = []
        self.epoch_models: list[DaphneList] = []
        """The model at the end of each epoch (models are values, so a reference is a snapshot); for `val`."""

    def epoch(self) -> int:
        return min(self.progress // self.per_epoch, self.epochs - 1)

    def _apply(self, grads: tuple, weight: int = 1) -> None:
        """model = agg(model, hp, grads); one more version, `weight` more progress."""
        e = self.epoch()
        self.model = call_agg(self.agg, self.model, self.hp, grads)
        self.version += 1
        self.progress += weight
        self.log[e].updates += 1
        while len(self.epoch_ends) < self.epochs and self.progress >= (len(self.epoch_ends) + 1) * self.per_epoch:
            self.epoch_ends.append(time.perf_counter())
            self.epoch_models.append(self.model)

    def _drop(self) -> None:
        self.log[self.epoch()].dropped += 1

    def push(self, w: int, clock: int, grads: tuple, used: int) -> bool:
        """Take a worker's gradients; True if the model version changed (or the run stopped)."""
        raise NotImplementedError

    def try_pull(self, w: int, clock: int) -> Pulled:
        raise NotImplementedError

    def finish(self) -> None:
        """The run is over: stamp the epochs that have not ended yet (a run cut short by an error)."""
        while len(self.epoch_ends) < self.epochs:
            self.epoch_ends.append(time.perf_counter())
            self.epoch_models.append(self.model)


class SyncServer(Server):
    """BSP (staleness 0) and SSP."""

    def __init__(self, model: DaphneList, hp: DaphneList, agg: Callable[..., object], log: EpochLog,
                 pushes: list[int], epochs: int, staleness: int = 0):  # fmt: skip
        self.max_pushes = max(pushes)
        super().__init__(model, hp, agg, log, self.max_pushes, epochs)
        self.staleness = staleness
        self.needed = [sum(1 for p in pushes if p > s) for s in range(self.max_pushes)]
        self.pending: dict[int, dict[int, tuple]] = {}

    def push(self, w: int, clock: int, grads: tuple, used: int) -> bool:
        entry = self.log[min(clock // self.max_pushes, self.epochs - 1)]
        stale = clock - used
        if stale > entry.max_staleness:
            entry.max_staleness = stale
        self.pending.setdefault(clock, {})[w] = grads
        changed = False
        while True:
            got = self.pending.get(self.version)
            if got is None or len(got) < self.needed[self.version % self.max_pushes]:
                return changed
            del self.pending[self.version]
            self._apply(sum_in_order([got[i] for i in sorted(got)]))
            changed = True

    def try_pull(self, w: int, clock: int) -> Pulled:
        if self.version >= clock - self.staleness:
            return self.model, self.version
        return None


class AsyncServer(Server):
    """ASP: apply every gradient on arrival, until `budget` updates are applied."""

    def __init__(self, model: DaphneList, hp: DaphneList, agg: Callable[..., object], log: EpochLog,
                 pushes: list[int], epochs: int):  # fmt: skip
        super().__init__(model, hp, agg, log, sum(pushes), epochs)
        self.budget = sum(pushes) * epochs

    def push(self, w: int, clock: int, grads: tuple, used: int) -> bool:
        if self.stopped:
            self._drop()
            return False
        entry = self.log[self.epoch()]
        stale = self.version - used
        if stale > entry.max_staleness:
            entry.max_staleness = stale
        self._apply(grads)
        if self.version >= self.budget:
            self.stopped = True
        return True

    def try_pull(self, w: int, clock: int) -> Pulled:
        return STOP if self.stopped else (self.model, self.version)


class BackupServer(Server):
    """SBP: each step applies the first k - b gradients pushed for the current version, until as many gradients
    as BSP sums (epochs * sum_i P_i) are applied."""

    def __init__(self, model: DaphneList, hp: DaphneList, agg: Callable[..., object], log: EpochLog,
                 pushes: list[int], epochs: int, backup: int):  # fmt: skip
        super().__init__(model, hp, agg, log, sum(pushes), epochs)
        self.need = max(1, len(pushes) - backup)
        self.budget = sum(pushes) * epochs
        self.pending: dict[int, tuple] = {}

    def push(self, w: int, clock: int, grads: tuple, used: int) -> bool:
        if self.stopped or clock < self.version:
            self._drop()
            return False
        self.pending[w] = grads
        if len(self.pending) < self.need:
            return False
        got, self.pending = self.pending, {}
        self._apply(sum_in_order([got[i] for i in sorted(got)]), len(got))
        if self.progress >= self.budget:
            self.stopped = True
        return True

    def try_pull(self, w: int, clock: int) -> Pulled:
        if self.stopped:
            return STOP
        return (self.model, self.version) if self.version >= clock else None


def make_server(utype: str, model: DaphneList, hp: DaphneList, agg: Callable[..., object], log: EpochLog,
                pushes: list[int], epochs: int, staleness: int, backup: int) -> Server:  # fmt: skip
    if utype == "BSP":
        return SyncServer(model, hp, agg, log, pushes, epochs, 0)
    if utype == "SSP":
        return SyncServer(model, hp, agg, log, pushes, epochs, staleness)
    if utype == "ASP":
        return AsyncServer(model, hp, agg, log, pushes, epochs)
    if utype == "SBP":
        return BackupServer(model, hp, agg, log, pushes, epochs, backup)
    raise ValueError(utype)
