"""The scheduler covers every row exactly once on real threads, for every scheme, queue layout, victim selection
and thread count, and a vectorized script prints the same output under all of them."""

from __future__ import annotations

import itertools
import threading
from pathlib import Path

import pytest

from runtime.config import DaphneConfig
from runtime.scheduling.partitioning import SCHEMES
from runtime.scheduling.queues import LAYOUTS
from runtime.scheduling.topology import logical_cpus, physical_cores, worker_cpus
from runtime.scheduling.victim_selection import STRATEGIES, victim_order
from runtime.scheduling.workers import SchedulerConfig, schedule
from runtime.vectorized.pipeline import SETTINGS
from tools.driver import compile_script


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
    outputs = set()
    combos = list(itertools.product((*SCHEMES, "ADAPTIVE"), LAYOUTS, [1, 2, 4]))
    combos += [("GSS", "PERCPU", 4, v) for v in STRATEGIES]  # type: ignore[misc]
    for combo in combos:
        scheme, layout, threads, *victim = combo
        SETTINGS.scheduler = SchedulerConfig(threads, scheme, layout, victim[0] if victim else "SEQ")
        program.run()
        outputs.add(capsys.readouterr().out)
    SETTINGS.scheduler = SchedulerConfig()
    assert len(outputs) == 1
