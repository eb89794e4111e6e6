"""Scheduling overhead per task: a vectorized pipeline over 100,000 rows with SS (one row per task) against STATIC,
in the same process and run, for 1 and 2 threads (goal of the scheduler issue: SS at most 3x slower than STATIC).
Then the cost of handing a pipeline to the workers: a 2-task call with an empty task body on the persistent worker
pool against starting and joining the threads per call (what the scheduler did before the pool).

    .venv/bin/python bench/sched_overhead.py [--rows 100000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import tempfile
import time
from contextlib import redirect_stdout
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from daphnec.runtime.config import DaphneConfig  # noqa: E402
from daphnec.runtime.scheduling.config import SchedulerConfig  # noqa: E402
from daphnec.runtime.scheduling.workers import schedule  # noqa: E402
from daphnec.runtime.vectorized.settings import SETTINGS  # noqa: E402
from daphnec.tools.driver import compile_script  # noqa: E402

SCRIPT = """X = rand({rows}, 4, 0.0, 1.0, 1.0, 1);
Y = rand({rows}, 4, 0.0, 1.0, 1.0, 2);
s = 0.0;
for (i in 1:20) {{ s = s + sum((X - Y) ^ 2 * 3.0 + X * i); }}
print(s);
"""
"""The pipeline runs 20 times per program run, so the two `rand` calls are a small share of the time."""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s.daph"
        path.write_text(SCRIPT.format(rows=args.rows))
        cfg = DaphneConfig()
        cfg.use_vectorized_exec = True
        program = compile_script(str(path), {}, cfg, {})
        base = SETTINGS.scheduler
        print(f"{'threads':>7} {'STATIC s':>9} {'SS s':>9} {'SS/STATIC':>10}")
        for threads in (1, 2):
            t = {}
            for scheme in ("STATIC", "SS"):
                SETTINGS.scheduler = replace(base, scheme=scheme, num_threads=threads)
                runs = []
                for _ in range(args.repeat):
                    t0 = time.perf_counter()
                    with redirect_stdout(io.StringIO()):
                        program.run()
                    runs.append(time.perf_counter() - t0)
                t[scheme] = statistics.median(runs)
            print(f"{threads:>7} {t['STATIC']:>9.4f} {t['SS']:>9.4f} {t['SS'] / t['STATIC']:>9.2f}x")
        SETTINGS.scheduler = base
    dispatch(args.repeat)


def dispatch(repeat: int, calls: int = 2000) -> None:
    """Microseconds per call of `schedule` with 2 workers and 2 empty tasks: pool vs threads started per call."""
    from daphnec.runtime.scheduling import workers

    cfg = SchedulerConfig(num_threads=2, scheme="STATIC")
    busy = workers._POOL._busy

    def per_call() -> float:
        t0 = time.perf_counter()
        for _ in range(calls):
            schedule(2, lambda a, b: None, cfg)
        return (time.perf_counter() - t0) / calls * 1e6

    pool = min(per_call() for _ in range(repeat))
    busy.acquire()  # the pool looks busy: every call starts and joins its own threads
    try:
        fresh = min(per_call() for _ in range(repeat))
    finally:
        busy.release()
    print(f"\n2-worker call, empty tasks: persistent pool {pool:.1f} us, threads started per call {fresh:.1f} us")


if __name__ == "__main__":
    main()
