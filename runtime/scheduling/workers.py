"""Worker threads that run a pipeline's tasks (DAPHNE's MTWrapper/WorkerCPU): the rows are cut into tasks by the
partitioning scheme, tasks are distributed over the queues, and each worker drains its own queue, then steals from
the others in its victim-selection order. Native task kernels release the GIL, so two workers use two cores.

The workers are a pool that lives for the process (`_Pool`): the threads are started once and parked on a lock
between pipelines, and the calling thread works as worker 0, so a pipeline call costs a wake-up (~40 us), not a
thread start and join per worker (~170 us for two; `bench/sched_overhead.py`). A program whose kernels use the
workers starts them in the background when it starts (`warm_pool`, from runtime/scheduling/warmup.py).

Results come back tagged with their first row, so combining them is independent of which thread ran what.
"""

from __future__ import annotations

import os
import random
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from daphnec.runtime.fperr import ignore_in_this_thread
from daphnec.runtime.scheduling.config import SchedulerConfig
from daphnec.runtime.scheduling.partitioning import task_runs
from daphnec.runtime.scheduling.queues import TaskQueue, home_queue, num_queues
from daphnec.runtime.scheduling.topology import Cpu, worker_cpus
from daphnec.runtime.scheduling.victim_selection import victim_order

R = TypeVar("R")


@dataclass
class _Plan:
    cpus: list[Cpu]
    queues: list[TaskQueue]
    queue_packages: list[int]
    homes: list[int] = field(default_factory=list)


def _plan_cpus(cfg: SchedulerConfig) -> list[Cpu]:
    """The CPU of every worker of a pipeline of `cfg`."""
    if cfg.queue_layout != "CENTRALIZED" and cfg.num_threads <= 0:
        return worker_cpus(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1, True)
    return worker_cpus(cfg.num_threads, cfg.hyperthreading)


def _plan(n: int, cfg: SchedulerConfig) -> _Plan:
    cpus = _plan_cpus(cfg)
    packages = sorted({c.package for c in cpus})
    pkg_index = {p: i for i, p in enumerate(packages)}
    q = num_queues(cfg.queue_layout, len(cpus), len(packages))
    queues = [TaskQueue() for _ in range(q)]
    if cfg.queue_layout == "PERGROUP":
        queue_packages = list(range(q))
    elif cfg.queue_layout == "PERCPU":
        queue_packages = [pkg_index[c.package] for c in cpus]
    else:
        queue_packages = [0]
    plan = _Plan(cpus, queues, queue_packages)
    plan.homes = [home_queue(cfg.queue_layout, w, pkg_index[c.package]) for w, c in enumerate(cpus)]
    _fill(plan, n, cfg)
    return plan


def _fill(plan: _Plan, n: int, cfg: SchedulerConfig) -> None:
    """Enqueue all tasks: task i goes to queue i % Q; with pre-partitioning each queue first gets a contiguous
    share of the rows (queue 0 also the remainder), cut by its own partitioner (P = all workers)."""
    q, p = len(plan.queues), len(plan.cpus)
    if cfg.pre_partition and q > 1:
        share, rem = divmod(n, q)
        start = 0
        for i in range(q):
            end = start + share + (rem if i == 0 else 0)
            for run_start, count, chunk in task_runs(cfg.scheme, start, end, p, cfg.grain):
                plan.queues[i].push_run(run_start, count, chunk, chunk)
            start = end
        return
    index = 0  # global task index: task i goes to queue i % Q
    for run_start, count, chunk in task_runs(cfg.scheme, 0, n, p, cfg.grain):
        for first in range(min(q, count)):  # the run's tasks first, first + q, ... all land in one queue
            queue = (index + first) % q
            plan.queues[queue].push_run(run_start + first * chunk, (count - first + q - 1) // q, chunk, q * chunk)
        index += count


class _Pool:
    """Worker threads that live for the whole process (DAPHNE keeps its workers too): between pipelines each one is
    parked on its own lock, and a pipeline wakes only the helpers it needs. The calling thread is worker 0 (one
    fewer hand-off), except with `--pin-workers`, where every worker is a pool thread so that pinning never
    touches the caller. One pipeline uses the pool at a time; a caller that finds it busy (another thread's
    pipeline, e.g. under an MPI worker) starts its own threads for that call."""

    def __init__(self) -> None:
        self._busy = threading.Lock()
        self._growing = threading.Lock()  # `warm` grows the pool from another thread while a pipeline may run
        self._threads: list[threading.Thread] = []
        self._go: list[threading.Lock] = []
        self._done: list[threading.Lock] = []
        self._pinned: list[int | None] = []
        self._job: Callable[[int], None] | None = None

    def _grow(self, count: int, init: Callable[[], None] | None = None) -> None:
        with self._growing:
            while len(self._threads) < count:
                i = len(self._threads)
                go, done = threading.Lock(), threading.Lock()
                go.acquire()
                done.acquire()
                self._go.append(go)
                self._done.append(done)
                self._pinned.append(None)
                t = threading.Thread(target=self._loop, args=(i, init), name=f"daphne-worker-{i}", daemon=True)
                self._threads.append(t)
                t.start()

    def warm(self, count: int, init: Callable[[], None]) -> None:
        """Start pool threads up to `count` ahead of the first pipeline (runtime/scheduling/warmup.py); each new
        thread runs `init` once before it parks (OpenBLAS's per-thread buffers). A pipeline that starts meanwhile
        waits for the threads being created, then finds them parked or about to park; never holds `_busy`."""
        self._grow(count, init)

    def _loop(self, i: int, init: Callable[[], None] | None = None) -> None:
        ignore_in_this_thread()  # kernels then skip their own numpy error state (runtime/fperr.py)
        if init is not None:
            try:
                init()
            except Exception:  # noqa: BLE001, S110 - a warm-up is an optimisation: the thread works without it
                pass
        go, done = self._go[i], self._done[i]
        while True:
            go.acquire()  # parked until a pipeline needs this thread
            job = self._job
            try:
                if job is not None:
                    job(i)
            finally:
                done.release()

    def pin(self, i: int, cpu: int | None) -> None:
        """Pin pool thread `i` to `cpu` (None: every allowed CPU again); called by that thread itself."""
        if self._pinned[i] != cpu and hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, {cpu} if cpu is not None else _ALLOWED)  # pid 0 = this thread on Linux
            self._pinned[i] = cpu

    def run(self, workers: int, work: Callable[[int], None], cpus: list[int] | None) -> bool:
        """Run `work(w)` for w in 0..workers-1 in parallel; False if the pool is busy (the caller then starts
        threads itself). `cpus`: pin worker w to cpus[w], all workers on pool threads; None: the calling thread
        runs worker 0 and the pool threads are unpinned."""
        if not self._busy.acquire(blocking=False):
            return False
        try:
            first = 0 if cpus is not None else 1
            helpers = workers - first

            def job(i: int) -> None:
                self.pin(i, cpus[i] if cpus is not None else None)
                work(i + first)

            self._grow(helpers)
            self._job = job
            for i in range(helpers):
                self._go[i].release()
            try:
                if cpus is None:
                    work(0)
            finally:
                for i in range(helpers):
                    self._done[i].acquire()
                self._job = None
        finally:
            self._busy.release()
        return True


_ALLOWED: set[int] = set(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else set()
_POOL = _Pool()


def _pins(cfg: SchedulerConfig) -> bool:
    """Whether a pipeline of `cfg` pins its workers (then every worker is a pool thread, see `_Pool.run`)."""
    return cfg.pin_workers and hasattr(os, "sched_setaffinity")


def pool_helpers(cfg: SchedulerConfig) -> int:
    """How many pool threads a pipeline of `cfg` wakes: one per worker but the calling thread (every worker when
    it pins them)."""
    workers = len(_plan_cpus(cfg))
    return workers if _pins(cfg) else workers - 1


def warm_pool(cfg: SchedulerConfig, init: Callable[[], None]) -> None:
    """The process's pool threads for pipelines of `cfg`, started now (`_Pool.warm`)."""
    _POOL.warm(pool_helpers(cfg), init)


def _forget_pool_after_fork() -> None:
    """A forked child has none of the parent's threads: it starts its own pool when it needs one."""
    global _POOL
    _POOL = _Pool()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_after_fork)


def schedule(
    n: int,
    run_task: Callable[[int, int], R],
    cfg: SchedulerConfig,
    serial: bool = False,
    finish: list[float] | None = None,
) -> list[tuple[int, R]]:
    """Run `run_task(start, end)` for tasks covering rows [0, n) on worker threads; results sorted by row.

    `serial`: the work is too small to share (a tiny pipeline): one task of all rows on the calling thread,
    no queues (`--debug-mt` still reports it). `finish` receives, per worker, the seconds from the start until
    it found no more tasks (ADAPTIVE's imbalance measure)."""
    if serial:
        return _serial(n, run_task, cfg)
    plan = _plan(n, cfg)
    workers = len(plan.cpus)
    counts = [[0, 0] for _ in plan.cpus]  # per worker: tasks, rows
    results: list[list[tuple[int, R]]] = [[] for _ in plan.cpus]
    errors: list[BaseException] = []
    done = [0.0] * workers
    share = 2 * max(1, workers // len(plan.queues)) if workers > 1 and cfg.coalesce_rows > 1 else 0  # pop_run
    t0 = time.perf_counter()

    def work(w: int) -> None:
        own = plan.homes[w]
        rng = random.Random(cfg.seed * 1_000_003 + w)
        order = [own, *victim_order(cfg.victim_selection, own, len(plan.queues), plan.queue_packages, rng)]
        out, cnt, queues, rows = results[w], counts[w], plan.queues, cfg.coalesce_rows
        try:
            for q in order:
                pop = queues[q].pop_run
                while (task := pop(rows, share)) is not None and not errors:
                    out.append((task[0], run_task(*task)))
                    cnt[0] += 1
                    cnt[1] += task[1] - task[0]
        except BaseException as e:  # noqa: BLE001 - re-raised in the calling thread
            errors.append(e)
        done[w] = time.perf_counter() - t0

    if workers == 1 or sum(len(q) for q in plan.queues) <= 1:
        work(0)  # one worker or one task: no thread to wake
    else:
        cpus = [c.id for c in plan.cpus] if _pins(cfg) else None
        if not _POOL.run(workers, work, cpus):
            _threads(workers, work, cpus)
    if cfg.debug_mt:
        _report(plan.cpus, len(plan.queues), plan.homes, counts)
    if finish is not None:
        finish[:] = done
    if errors:
        raise errors[0]
    merged = [r for part in results for r in part]
    merged.sort(key=lambda r: r[0])
    return merged


def _threads(workers: int, work: Callable[[int], None], cpus: list[int] | None) -> None:
    """Threads started for one call (the pool is busy with another thread's pipeline)."""

    def run(w: int) -> None:
        if cpus is not None:
            os.sched_setaffinity(0, {cpus[w]})  # pid 0 = this thread on Linux
        work(w)

    threads = [threading.Thread(target=run, args=(w,), daemon=True) for w in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def _serial(n: int, run_task: Callable[[int, int], R], cfg: SchedulerConfig) -> list[tuple[int, R]]:
    result = [(0, run_task(0, n))]
    if cfg.debug_mt:
        cpus = worker_cpus(cfg.num_threads, cfg.hyperthreading)
        counts = [[1, n]] + [[0, 0] for _ in cpus[1:]]
        _report(cpus, 1, [0] * len(cpus), counts)
    return result


def _report(cpus: list[Cpu], num_queues: int, homes: list[int], counts: list[list[int]]) -> None:
    """`--debug-mt`: the topology, the queues and what every worker did, on stdout like DAPHNE's."""
    out = sys.stdout
    out.write(f"topologyPhysicalIds: {', '.join(str(c.package) for c in cpus)}\n")
    out.write(f"topologyUniqueThreads: {', '.join(str(c.id) for c in cpus)}\n")
    out.write(f"topologyCoreIds: {', '.join(str(c.core) for c in cpus)}\n")
    out.write(f"_numThreads={len(cpus)} _numQueues={num_queues}\n")
    for w, (n_tasks, n_rows) in enumerate(counts):
        out.write(f"worker {w} (cpu {cpus[w].id}, queue {homes[w]}): {n_tasks} tasks, {n_rows} rows\n")
