"""bench/parfor_bench.py's measures: the loop's parallelism, CPU seconds and idle-core estimate from per-thread
scheduler samples (the figures the parfor goal is judged by on a shared machine), and a tiny real run of the bench
(its `for`, `for 1T` and `parfor` outputs must agree)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "parfor_bench.py"
_spec = importlib.util.spec_from_file_location("parfor_bench", BENCH)
assert _spec is not None and _spec.loader is not None
pb = importlib.util.module_from_spec(_spec)
sys.modules["parfor_bench"] = pb  # dataclasses look their module up while the class is built
_spec.loader.exec_module(pb)

MS = 1_000_000


def test_loop_stats_of_two_threads_that_each_waited_half_the_loop() -> None:
    # loop [100 ms, 200 ms]; each thread ran 50 ms and waited 50 ms for a CPU in it: both wanted a core all along
    samples = [
        (90 * MS, {"1": (10 * MS, 0), "2": (0, 0)}),
        (100 * MS, {"1": (10 * MS, 0), "2": (0, 0)}),
        (150 * MS, {"1": (40 * MS, 20 * MS), "2": (25 * MS, 25 * MS)}),
        (200 * MS, {"1": (60 * MS, 50 * MS), "2": (50 * MS, 50 * MS)}),
        (210 * MS, {"1": (70 * MS, 50 * MS), "2": (50 * MS, 50 * MS)}),
    ]
    parallelism, cpu, idle = pb._loop_stats(samples, 100 * MS, 200 * MS)
    assert parallelism == pytest.approx(2.0)
    assert cpu == pytest.approx(0.1)
    assert idle == pytest.approx(0.05)  # 100 ms of work on two idle cores


def test_loop_stats_interpolate_between_samples_and_count_a_thread_started_in_the_loop() -> None:
    # the loop [5 ms, 120 ms] ends between samples: each end's counts are interpolated; thread 2 appears after 0
    samples = [
        (0, {"1": (0, 0)}),
        (100 * MS, {"1": (80 * MS, 0), "2": (30 * MS, 10 * MS)}),
        (130 * MS, {"1": (90 * MS, 0), "2": (40 * MS, 10 * MS)}),
    ]
    parallelism, cpu, idle = pb._loop_stats(samples, 5 * MS, 120 * MS)
    run = (80 + 20 / 3 - 4) + (30 + 20 / 3 - 1.5)  # thread 1: 4 -> 86.7 ms; thread 2: 1.5 -> 36.7 ms
    wait = 10 - 0.5
    assert cpu == pytest.approx(run / 1000)
    assert parallelism == pytest.approx((run + wait) / 115)
    assert idle == pytest.approx(0.115 * run / (run + wait))


def test_best_takes_each_measure_from_its_best_round() -> None:
    runs = [pb.Run(1.0, 1.5, 2.0, 0.9), pb.Run(1.2, 1.9, 1.8, 0.8)]
    assert pb._best(runs) == pb.Run(1.0, 1.9, 1.8, 0.8)


def test_the_bench_runs_and_its_loops_agree(tmp_path: Path) -> None:
    r = subprocess.run(
        [sys.executable, str(BENCH), "--rounds", "1", "--no-mpi", "--cv", "400,5,4", "--cols", "300,3"],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    rows = {line.split(" | ")[0]: line for line in r.stdout.splitlines() if line.startswith("| cv_lmds |")
            or line.startswith("| colstats |")}  # fmt: skip
    assert set(rows) == {"| cv_lmds", "| colstats"}
    assert all(line.count("|") == 10 for line in rows.values()), r.stdout  # name, args, 3 runs, 3 ratios, bound
