"""The scheduler covers every row exactly once on real threads, for every scheme, queue layout, victim selection
and thread count, and a vectorized script prints the same output under all of them."""

from __future__ import annotations

import itertools
import threading
from pathlib import Path

import pytest

from daphnec.runtime.config import DaphneConfig
from daphnec.runtime.scheduling.config import SchedulerConfig
from daphnec.runtime.scheduling.partitioning import SCHEMES
from daphnec.runtime.scheduling.queues import LAYOUTS
from daphnec.runtime.scheduling.topology import logical_cpus, physical_cores, worker_cpus
from daphnec.runtime.scheduling.victim_selection import STRATEGIES, victim_order
from daphnec.runtime.scheduling.workers import schedule
from daphnec.runtime.vectorized.settings import SETTINGS
from daphnec.tools.driver import compile_script


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("threads", [1, 2, 3, 4])
def test_schedule_covers_rows_once(scheme: str, layout: str, threads: int) -> None:
    seen: list[int] = []
    lock = threading.Lock()

    def run(a: int, b: int) -> int:
        with lock:
            seen.extend(range(a, b))
        return a

    cfg = SchedulerConfig(num_threads=threads, scheme=scheme, queue_layout=layout, pre_partition=threads % 2 == 0)
    res = schedule(1009, run, cfg)
    assert sorted(seen) == list(range(1009))
    assert [r[0] for r in res] == sorted(r[1] for r in res)


def test_worker_errors_reach_the_caller() -> None:
    def run(a: int, b: int) -> None:
        raise ValueError(f"task {a}")

    with pytest.raises(ValueError, match="task"):
        schedule(100, run, SchedulerConfig(num_threads=2, scheme="SS"))


def test_two_workers_run_on_two_threads() -> None:
    names: set[str] = set()
    barrier = threading.Barrier(2, timeout=10)

    def run(a: int, b: int) -> None:
        names.add(threading.current_thread().name)
        barrier.wait()  # both tasks must run at the same time, on two threads

    schedule(2, run, SchedulerConfig(num_threads=2, scheme="SS", pin_workers=True))
    assert len(names) == 2


def test_workers_are_a_persistent_pool() -> None:
    """Threads are started once and parked between calls: later calls wake the same threads, start none."""
    cfg = SchedulerConfig(num_threads=2, scheme="STATIC")
    seen: list[set[int]] = []
    counts = []
    for _ in range(5):
        idents: set[int] = set()
        barrier = threading.Barrier(2, timeout=10)

        def run(a: int, b: int, idents: set[int] = idents, barrier: threading.Barrier = barrier) -> None:
            idents.add(threading.get_ident())
            barrier.wait()  # two tasks at the same time: two threads, the caller and one pool thread

        schedule(1000, run, cfg)
        seen.append(idents)
        counts.append(threading.active_count())
    assert all(len(s) == 2 and threading.get_ident() in s for s in seen)
    assert len(set.union(*seen)) == 2  # the same pool thread every time
    assert len(set(counts)) == 1


def test_a_pipeline_inside_a_task_gets_its_own_threads() -> None:
    """The pool serves one call at a time; a call from a worker (nested) or another thread does not wait for it."""
    inner: list[list[tuple[int, int]]] = []

    def outer(a: int, b: int) -> int:
        inner.append(schedule(100, lambda x, y: y - x, SchedulerConfig(num_threads=2, scheme="SS")))
        return a

    schedule(4, outer, SchedulerConfig(num_threads=2, scheme="SS", coalesce_rows=1))
    assert len(inner) == 4 and all(sum(r for _, r in res) == 100 for res in inner)


def test_pinned_and_unpinned_calls_share_the_pool() -> None:
    import os

    if not hasattr(os, "sched_getaffinity"):
        pytest.skip("no affinity API")
    allowed = os.sched_getaffinity(0)
    cpus: list[set[int]] = []
    lock = threading.Lock()

    def run(a: int, b: int) -> None:
        with lock:
            cpus.append(os.sched_getaffinity(0))

    schedule(4, run, SchedulerConfig(num_threads=2, scheme="STATIC", pin_workers=True))
    assert all(len(c) == 1 for c in cpus)  # every worker pinned (pool threads only)
    cpus.clear()
    schedule(4, run, SchedulerConfig(num_threads=2, scheme="STATIC"))
    assert all(c == allowed for c in cpus)  # unpinned again
    assert os.sched_getaffinity(0) == allowed  # the caller was never pinned


def test_serial_runs_one_task_on_the_caller_and_reports(capsys: pytest.CaptureFixture[str]) -> None:
    calls: list[tuple[int, int, int]] = []
    res = schedule(50, lambda a, b: calls.append((a, b, threading.get_ident())) or a,
                   SchedulerConfig(num_threads=3, debug_mt=True), serial=True)  # fmt: skip
    assert res == [(0, 0)] and calls == [(0, 50, threading.get_ident())]
    out = capsys.readouterr().out
    assert "_numThreads=3 _numQueues=1" in out and "worker 0 (cpu" in out and ": 1 tasks, 50 rows" in out


def test_batches_shrink_as_the_queue_drains() -> None:
    from daphnec.runtime.scheduling.queues import TaskQueue

    q = TaskQueue()
    q.push_run(0, 1000, 1, 1)  # 1000 one-row tasks (SS)
    sizes = []
    while (t := q.pop_run(160, 4)) is not None:
        sizes.append(t[1] - t[0])
    assert sum(sizes) == 1000 and len(q) == 0
    assert sizes[0] == 160 and sizes == sorted(sizes, reverse=True)
    assert min(sizes[:-1]) == 10 and sizes[-1] <= 10  # not below max_rows // 16


def test_finish_times_per_worker() -> None:
    finish: list[float] = []
    schedule(10, lambda a, b: None, SchedulerConfig(num_threads=2, scheme="STATIC"), finish=finish)
    assert len(finish) == 2 and all(f >= 0 for f in finish)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_victim_order_visits_every_other_queue_once(strategy: str) -> None:
    import random

    order = victim_order(strategy, 2, 6, [0, 0, 0, 1, 1, 1], random.Random(1))
    assert sorted(order) == [0, 1, 3, 4, 5]
    if strategy in ("SEQPRI", "RANDOMPRI"):
        assert set(order[:2]) == {0, 1}  # the own package's queues first
    if strategy == "SEQ":
        assert order == [3, 4, 5, 0, 1]


def test_topology_reads_the_machine() -> None:
    cpus = logical_cpus()
    assert cpus and len(physical_cores(cpus)) <= len(cpus)
    assert len(worker_cpus(5, False)) == 5  # more workers than cores cycle over the cores


SCRIPT = """
X = rand(300, 7, -1.0, 1.0, 1.0, 5);
Y = rand(300, 7, 0.0, 2.0, 1.0, 6);
print(sum((X - Y) ^ 2 * 3.0));
print(aggMax(X * Y));
print(sum(abs(X) + Y, 1));
print(sum(t(X + 1.0) * 2.0, 0)[0:3, ]);
print(aggMin(X - Y, 0)[0:4, ]);
"""


def test_output_independent_of_scheduling(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "s.daph"
    script.write_text(SCRIPT)
    cfg = DaphneConfig()
    cfg.use_vectorized_exec = True
    cfg.phyBatchSize = 256
    program = compile_script(str(script), {}, cfg, {})
    old_min = SETTINGS.min_parallel_bytes
    SETTINGS.min_parallel_bytes = 0  # these small inputs would otherwise run as one call on the calling thread
    outputs = set()
    combos = list(itertools.product((*SCHEMES, "ADAPTIVE"), LAYOUTS, [1, 2, 4]))
    combos += [("GSS", "PERCPU", 4, v) for v in STRATEGIES]  # type: ignore[misc]
    for combo in combos:
        scheme, layout, threads, *victim = combo
        SETTINGS.scheduler = SchedulerConfig(threads, scheme, layout, victim[0] if victim else "SEQ")
        program.run()
        outputs.add(capsys.readouterr().out)
    SETTINGS.scheduler = SchedulerConfig()
    SETTINGS.min_parallel_bytes = old_min
    assert len(outputs) == 1
