"""Worker threads that run a pipeline's tasks (DAPHNE's MTWrapper/WorkerCPU): the rows are cut into tasks by the
partitioning scheme, tasks are distributed over the queues, and each worker drains its own queue, then steals from
the others in its victim-selection order. Native task kernels release the GIL, so two workers use two cores.

Results come back tagged with their first row, so combining them is independent of which thread ran what.
"""

from __future__ import annotations

import os
import random
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from runtime.scheduling.partitioning import task_runs
from runtime.scheduling.queues import TaskQueue, home_queue, num_queues
from runtime.scheduling.topology import Cpu, worker_cpus
from runtime.scheduling.victim_selection import victim_order

R = TypeVar("R")


@dataclass
class SchedulerConfig:
    """The scheduling knobs of the user config / command line (DAPHNE's names in comments)."""

    num_threads: int = -1  # numberOfThreads / --num-threads (<= 0: one per physical core)
    scheme: str = "STATIC"  # taskPartitioningScheme / --partitioning
    queue_layout: str = "CENTRALIZED"  # queueSetupScheme / --queue_layout
    victim_selection: str = "SEQ"  # victimSelection / --victim_selection
    grain: int = 1  # minimumTaskSize / --grain-size
    pin_workers: bool = False  # pinWorkers / --pin-workers
    hyperthreading: bool = False  # hyperthreadingEnabled / --hyperthreading
    pre_partition: bool = False  # prePartitionRows / --pre-partition
    debug_mt: bool = False  # debugMultiThreading / --debug-mt
    seed: int = 0  # for RANDOM/RANDOMPRI victim selection (reproducible runs)
    coalesce_rows: int = 1  # consecutive tasks of a queue are run together up to this many rows (a physical batch)


@dataclass
class _Plan:
    cpus: list[Cpu]
    queues: list[TaskQueue]
    queue_packages: list[int]
    homes: list[int] = field(default_factory=list)


def _plan(n: int, cfg: SchedulerConfig) -> _Plan:
    cpus = worker_cpus(cfg.num_threads, cfg.hyperthreading)
    if cfg.queue_layout != "CENTRALIZED" and cfg.num_threads <= 0:
        cpus = worker_cpus(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1, True)
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


def schedule(n: int, run_task: Callable[[int, int], R], cfg: SchedulerConfig) -> list[tuple[int, R]]:
    """Run `run_task(start, end)` for tasks covering rows [0, n) on worker threads; results sorted by row."""
    plan = _plan(n, cfg)
    counts = [[0, 0] for _ in plan.cpus]  # per worker: tasks, rows
    results: list[tuple[int, R]] = []
    errors: list[BaseException] = []

    def work(w: int) -> None:
        if cfg.pin_workers and hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, {plan.cpus[w].id})  # pid 0 = this thread on Linux
        own = plan.homes[w]
        rng = random.Random(cfg.seed * 1_000_003 + w)
        order = [own, *victim_order(cfg.victim_selection, own, len(plan.queues), plan.queue_packages, rng)]
        try:
            for q in order:
                while (task := plan.queues[q].pop_run(cfg.coalesce_rows)) is not None and not errors:
                    results.append((task[0], run_task(*task)))
                    counts[w][0] += 1
                    counts[w][1] += task[1] - task[0]
        except BaseException as e:  # noqa: BLE001 - re-raised in the calling thread
            errors.append(e)

    if len(plan.cpus) == 1 or sum(len(q) for q in plan.queues) <= 1:
        work(0)  # one worker or one task: no thread to start
    else:
        threads = [threading.Thread(target=work, args=(w,), daemon=True) for w in range(len(plan.cpus))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    if cfg.debug_mt:
        _report(plan, counts)
    if errors:
        raise errors[0]
    results.sort(key=lambda r: r[0])
    return results


def _report(plan: _Plan, counts: list[list[int]]) -> None:
    """`--debug-mt`: the topology, the queues and what every worker did, on stdout like DAPHNE's."""
    out = sys.stdout
    out.write(f"topologyPhysicalIds: {', '.join(str(c.package) for c in plan.cpus)}\n")
    out.write(f"topologyUniqueThreads: {', '.join(str(c.id) for c in plan.cpus)}\n")
    out.write(f"topologyCoreIds: {', '.join(str(c.core) for c in plan.cpus)}\n")
    out.write(f"_numThreads={len(plan.cpus)} _numQueues={len(plan.queues)}\n")
    for w, (n_tasks, n_rows) in enumerate(counts):
        out.write(f"worker {w} (cpu {plan.cpus[w].id}, queue {plan.homes[w]}): {n_tasks} tasks, {n_rows} rows\n")
