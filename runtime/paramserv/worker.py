"""The worker loops of `paramserv`, shared by LOCAL threads (local.py) and MPI worker ranks (mpi.py).

A worker owns its partition (partition.py), walks it in batches, and per *push* (one batch, NBATCHES batches or an
epoch) computes gradients with `upd`. When a push spans several batches the worker applies `agg` to its own copy
of the model after each batch but the last and pushes the sum of the batches' gradients; then it pulls the
server's model (its local updates are discarded). Three loops:

- `run_server_worker` (BSP, SSP, ASP, SBP): push gradients to the server, pull the model (an `Endpoint`).
- `run_allreduce_worker` (ALLREDUCE): no server; every worker keeps a replica. Each clock the workers' gradients
  are summed in worker order by a `Reducer` (a barrier in LOCAL mode, an all-gather among the worker ranks in MPI
  mode) and every worker applies `agg` to its replica, so the replicas stay identical and equal BSP's model.
  A worker without a batch at a clock (a smaller partition) contributes nothing but still applies the update.
- `run_localsgd_worker` (LOCALSGD, period tau): every worker applies its own gradient after each batch; after every
  tau clocks (and at the end) the replicas are replaced by their element-wise mean (`Reducer.average`).

A test hook (`runtime.testing_hooks.ps_slow_worker`) makes one worker sleep after each batch, a straggler: the
tests and the benchmark use it to show that ASP and SBP do not wait for a slow worker.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

from daphnec.runtime import testing_hooks
from daphnec.runtime.kernels.lists import DaphneList
from daphnec.runtime.paramserv.compression import Compressor, Payload, raw_bytes
from daphnec.runtime.paramserv.options import PSOptions
from daphnec.runtime.paramserv.partition import Partition, Plan
from daphnec.runtime.paramserv.server import STOP, Pulled
from daphnec.runtime.paramserv.stats import EpochLog, EpochStats
from daphnec.runtime.paramserv.udf import add, call_agg, call_upd


class Aborted(Exception):
    """Another worker failed: this one stops (the first failure is what the caller sees)."""


@dataclass
class Contribution:
    """One worker's gradients for a push: as the server should see them (decoded after compression) and, for a
    transport, the compressed payloads (None where a matrix goes raw)."""

    grads: tuple
    payloads: list[Payload | None] | None
    raw: int
    sent: int


class Endpoint(Protocol):
    def push_pull(self, w: int, clock: int, used: int, nxt: int | None, c: Contribution,
                  stats: EpochStats) -> Pulled: ...  # fmt: skip


class Reducer(Protocol):
    def reduce(self, w: int, c: Contribution | None, stats: EpochStats) -> tuple: ...

    def average(self, w: int, model: DaphneList, stats: EpochStats) -> tuple: ...


@dataclass
class Job:
    """Everything one worker needs."""

    index: int
    model: DaphneList
    hp: DaphneList
    upd: Callable[..., object]
    agg: Callable[..., object]
    part: Partition
    plan: Plan
    pushes: list[int]
    """P_i (pushes per epoch) of every worker."""
    opts: PSOptions
    log: EpochLog = field(init=False)
    compressor: Compressor | None = field(init=False)
    slow: float = field(init=False)
    aborted: Callable[[], bool] = lambda: False
    epoch_ends: list[float] = field(default_factory=list)
    """Decentralised strategies: when this worker finished each epoch (worker 0's are the call's epoch times)."""
    epoch_models: list[DaphneList] = field(default_factory=list)
    """Decentralised strategies: this worker's replica at the end of each epoch (for `val`)."""

    def __post_init__(self) -> None:
        self.log = EpochLog(self.opts.epochs)
        c = self.opts.compressor
        self.compressor = Compressor(c) if c else None
        slow_index, seconds = testing_hooks.ps_slow_worker()
        self.slow = seconds if slow_index == self.index else 0.0

    @property
    def max_pushes(self) -> int:
        return max(self.pushes)

    # -- computing ---------------------------------------------------------------------------------------------------

    def gradients(self, model: DaphneList, s: int) -> tuple:
        """The gradients of the s-th push of an epoch, computed from `model`."""
        ranges = self.plan.push_batches(s)
        last = len(ranges) - 1
        local, acc = model, None
        for j, (a, b) in enumerate(ranges):
            if self.aborted():
                raise Aborted
            X, y = self.part.batch(a, b)
            g = call_upd(self.upd, local, self.hp, X, y)
            if self.slow:
                time.sleep(self.slow)
            acc = g if acc is None else add(acc, g, owned=j > 1)
            if j < last:
                local = call_agg(self.agg, local, self.hp, g)
        assert acc is not None
        return acc

    def contribution(self, grads: tuple, stats: EpochStats) -> Contribution:
        if self.compressor is None:
            raw = sum(raw_bytes(g) for g in grads)
            c = Contribution(grads, None, raw, raw)
        else:
            payloads, decoded, raw, sent = self.compressor.compress(grads)
            c = Contribution(tuple(decoded), payloads, raw, sent)
        stats.pushes += 1
        stats.push_raw += c.raw
        stats.push_sent += c.sent
        return c

    # -- the push sequence -------------------------------------------------------------------------------------------

    def clocks(self) -> Iterator[tuple[int, int, int]]:
        """(clock, epoch, push of the epoch) of this worker's pushes: BSP/SSP its epochs' pushes at their global
        clocks; ASP/SBP an endless stream over its partition (the server says when to stop)."""
        p, m = self.plan.pushes, self.max_pushes
        if self.opts.utype in ("BSP", "SSP"):
            for e in range(self.opts.epochs):
                for s in range(p):
                    yield e * m + s, e, s
            return
        for g in itertools.count():
            e, s = divmod(g, p)
            yield g, e, s


def run_server_worker(job: Job, endpoint: Endpoint) -> None:
    """BSP/SSP/ASP/SBP: compute, push, pull, until the pushes run out or the server says STOP."""
    model, version = job.model, 0
    utype = job.opts.utype
    stream = job.clocks()
    cur = next(stream, None)
    while cur is not None:
        clock, e, s = cur
        stats = job.log[e]
        c = job.contribution(job.gradients(model, s), stats)
        nxt_item = next(stream, None)
        if utype in ("BSP", "SSP"):
            tag, nxt = clock, (nxt_item[0] if nxt_item is not None else None)
        elif utype == "SBP":
            tag, nxt = version, version + 1
        else:
            tag, nxt = version, 0
        r = endpoint.push_pull(job.index, tag, version, nxt, c, stats)
        if r is None or r == STOP:
            return
        model, version = r  # type: ignore[misc]
        cur = nxt_item


def run_allreduce_worker(job: Job, reducer: Reducer) -> DaphneList:
    """ALLREDUCE: every clock, sum the workers' gradients (in worker order) and apply them to the replica."""
    replica = job.model
    m, p = job.max_pushes, job.plan.pushes
    for clock in range(job.opts.epochs * m):
        e, s = divmod(clock, m)
        stats = job.log[e]
        c = job.contribution(job.gradients(replica, s), stats) if s < p else None
        summed = reducer.reduce(job.index, c, stats)
        replica = call_agg(job.agg, replica, job.hp, summed)
        if job.index == 0:
            stats.updates += 1
        if s == m - 1:
            job.epoch_ends.append(time.perf_counter())
            job.epoch_models.append(replica)
    return replica


def run_localsgd_worker(job: Job, reducer: Reducer) -> DaphneList:
    """LOCALSGD: local updates every batch, replicas averaged every `period` clocks and at the end."""
    replica = job.model
    m, p, tau = job.max_pushes, job.plan.pushes, job.opts.period
    total = job.opts.epochs * m
    for clock in range(total):
        e, s = divmod(clock, m)
        stats = job.log[e]
        if s < p:
            g = job.gradients(replica, s)
            replica = call_agg(job.agg, replica, job.hp, g)
            stats.updates += 1
        if (clock + 1) % tau == 0 or clock == total - 1:
            replica = DaphneList(reducer.average(job.index, replica, stats), replica.elem_kind)
        if s == m - 1:
            job.epoch_ends.append(time.perf_counter())
            job.epoch_models.append(replica)
    return replica
