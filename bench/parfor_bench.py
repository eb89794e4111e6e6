"""`parfor` against the `for` loop it replaces, over threads and over MPI ranks with one slowed rank.

    .venv/bin/python bench/parfor_bench.py [--rounds 3] [--no-mpi] [--cv n,m,k] [--cols n,m] [--before PY]

1. Threads: two scripts written the way analysis scripts are, each with `for` and with `parfor` (the same file
   otherwise: bench/parfor/*.daph, `LOOP` replaced), at `--num-threads=2`, kernel time = the `now()` interval
   around the loop. Both loops run their BLAS products with OpenBLAS at one thread (daphnec pins it while a
   program runs: runtime/kernels/blas_threads.py), so the parfor's two workers have the cores to themselves and
   its products round as the `for` loop's do (OPENBLAS_NUM_THREADS no longer changes anything).
   - 10-fold cross-validation of lmDS (normal equations with a ridge term, one fold per iteration),
   - per-column statistics (mean, standard deviation, min, max, median by sorting), one column per iteration.
2. MPI: the per-column statistics with `mpiexec -n 3 daphnec --distributed` (2 workers x 1 thread), rank 2 slowed
   4x (DAPHNEC_DIST_SLOW_RANK, runtime/testing_hooks.py), STATIC against the dynamic schemes (chunks handed to
   whichever rank asks first).

Every configuration runs once per round, rounds interleaved (a change of machine load hits all of them); the table
shows the best of the rounds and the ratios of those. Each run also reports, from its threads' scheduler
statistics during the loop (`/proc/<pid>/task/*/schedstat`, sampled every 5 ms):
- *parallelism*: summed over the threads, the time each spent running or waiting for a CPU, divided by the loop's
  wall time. A thread blocked on Python's interpreter lock counts in neither, so a loop bound by the lock shows 1
  and one whose 2 workers compute in GIL-free kernels shows about 2, whatever the load does to the wall time.
- *cpu*: the seconds its threads ran (the work; a parfor that only moves the work to other threads keeps it).
- *idle*: the loop's wall time on idle cores, estimated as wall x run / (run + wait): the share of the CPU demand
  the machine served. On a shared machine the wall time says little about threads: with the kernel's autogroup
  scheduling (`/proc/sys/kernel/sched_autogroup_enabled`), every session gets an equal share of the CPUs, so while
  other sessions are busy a 2-thread process gets no more CPU than a 1-thread one and every "for / parfor" tends
  to 1x (measured: colstats' parfor ran 0.60 s of CPU per thread and waited 1.24 s for one). *idle* stayed within
  ~10% from load 2 to 7 (colstats' parfor: 0.61-0.67 s); at load 12 the work itself grew by ~15% (caches are
  shared). Compare the idle ratios when `load average` is not ~0.
The `for 1T` column is the `for` loop at `--num-threads=1` (a large product's blocks one after the other on one
thread, the same bits): the serial reference. `for` at 2 threads already spreads a large product over both cores,
which bounds what the parfor can add on 2 cores: at most 2 / the for loop's parallelism (the `bound` column; the
work, cpu, is the same in both loops). The outputs of all loops must be identical (checked); `--before PY` adds
the `for` and `parfor` runs of another installation's python (e.g. /tmp/basepy), interleaved.

Goal (issue 23): parfor >= 1.7x the `for` loop at 2 threads on both scripts; dynamic schemes beat STATIC with one
slowed rank.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
SCRIPTS = ROOT / "bench" / "parfor"
SLOW = "2:4"
DYNAMIC = ("GSS", "SS", "TSS")


def instantiate(folder: Path, name: str, loop: str) -> Path:
    path = folder / f"{name}_{loop}.daph"
    path.write_text((SCRIPTS / f"{name}.daph").read_text().replace("\nLOOP (", f"\n{loop} ("))
    return path


Samples = list[tuple[int, dict[str, tuple[int, int]]]]


@dataclass
class Run:
    """One run's loop: wall seconds (the script's `now()` interval) and what `_loop_stats` derives from the samples."""

    secs: float
    parallelism: float
    cpu: float
    idle: float


def _sample(pid: int, samples: Samples, stop: threading.Event) -> None:
    """Every 5 ms: per thread of process `pid`, nanoseconds it ran and nanoseconds it waited for a CPU
    (/proc/<pid>/task/<tid>/schedstat). A thread blocked on the interpreter lock counts in neither."""
    while not stop.is_set():
        now = time.time_ns()
        demand: dict[str, tuple[int, int]] = {}
        try:
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/schedstat", encoding="ascii") as f:
                    run_ns, wait_ns, _ = f.read().split()
                demand[tid] = (int(run_ns), int(wait_ns))
        except (OSError, ValueError):
            pass
        samples.append((now, demand))
        time.sleep(0.005)


def _at(samples: Samples, t: int) -> dict[str, tuple[float, float]]:
    """Per thread (run, wait) nanoseconds at time `t`, interpolated between the samples around it (a loop of 0.15 s
    is 30 samples: taking the sample before each end would be off by up to a sixth of one)."""
    i = next((j for j, (ts, _) in enumerate(samples) if ts > t), len(samples))
    if i == 0:
        return {}
    t_a, a = samples[i - 1]
    if i == len(samples):
        return {tid: (float(r), float(w)) for tid, (r, w) in a.items()}
    t_b, b = samples[i]
    f = (t - t_a) / max(t_b - t_a, 1)
    zero = (0, 0)
    return {
        tid: (ra + f * (rb - ra), wa + f * (wb - wa))
        for tid in a.keys() | b.keys()
        for (ra, wa), (rb, wb) in [(a.get(tid, zero), b.get(tid, a.get(tid, zero)))]
    }


def _loop_stats(samples: Samples, t0: int, t1: int) -> tuple[float, float, float]:
    """(parallelism, cpu seconds, idle-core seconds) of the loop [t0, t1]: over the threads, run and wait are the
    nanoseconds they ran and waited for a CPU in it. Parallelism = (run + wait) / wall: how many threads wanted a
    core at once (1 for a loop bound by the interpreter lock); the machine's load changes how long they wait, not
    whether they want to run. Idle = wall x run / (run + wait): the wall time had every such wish been served at
    once (the load's waits removed)."""
    before, after = _at(samples, t0), _at(samples, t1)
    run_ns = sum(r - before.get(tid, (0, 0))[0] for tid, (r, _) in after.items())
    wait_ns = sum(w - before.get(tid, (0, 0))[1] for tid, (_, w) in after.items())
    wall = max(t1 - t0, 1)
    return (run_ns + wait_ns) / wall, run_ns / 1e9, wall / 1e9 * run_ns / max(run_ns + wait_ns, 1)


def run(cmd: list[str], env: dict[str, str] | None = None) -> tuple[Run, str]:
    """The loop's `Run` and the output without the timing line."""
    samples: Samples = []
    stop = threading.Event()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, **(env or {})})  # fmt: skip
    sampler = threading.Thread(target=_sample, args=(p.pid, samples, stop), daemon=True)
    sampler.start()
    out, err = p.communicate(timeout=3600)
    stop.set()
    sampler.join()
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{err}")
    m = re.search(r"kernel_seconds (\S+) interval (\d+) (\d+)", out)
    assert m is not None, out
    stats = _loop_stats(samples, int(m.group(2)), int(m.group(3)))
    return Run(float(m.group(1)), *stats), out[: m.start()]


def _best(runs: list[Run]) -> Run:
    """Per field the best of the rounds (the least disturbed run of each measure)."""
    return Run(min(r.secs for r in runs), max(r.parallelism for r in runs), min(r.cpu for r in runs),
               min(r.idle for r in runs))  # fmt: skip


def _ratio(a: float, b: float) -> str:
    """`a / b` as a speed-up; "-" when a loop ended between two samples (no thread ran in it, by the samples)."""
    return f"{a / b:.2f}x" if b > 0 else "-"


def threads_table(folder: Path, rounds: int, cv: list[str], cols: list[str], before: str) -> None:
    cases = {"cv_lmds": cv, "colstats": cols}
    variants: dict[str, tuple[str, list[str]]] = {
        "for 1T": ("for", [str(BIN / "daphnec"), "--num-threads=1"]),
        "for": ("for", [str(BIN / "daphnec"), "--num-threads=2"]),
        "parfor": ("parfor", [str(BIN / "daphnec"), "--num-threads=2"]),
    }
    if before:
        for label in ("for", "parfor"):
            variants[f"before {label}"] = (label, [before, "-m", "daphnec.tools.daphnec", "--num-threads=2"])
    runs: dict[tuple[str, str], list[Run]] = {}
    outputs: dict[str, set[str]] = {case: set() for case in cases}
    for _ in range(rounds):
        for case, args in cases.items():
            for label, (loop, cmd) in variants.items():
                r, out = run([*cmd, str(instantiate(folder, case, loop)), *args], {})
                outputs[case].add(out)
                runs.setdefault((case, label), []).append(r)
    ratios = ["for / parfor", "idle: for / parfor", "bound: 2 / for's parallelism", "idle: for 1T / parfor"]
    ratios += ["before idle: for / parfor"] if before else []
    print(f"\n## parfor vs for, 2 threads (best of {rounds} interleaved rounds, load average {os.getloadavg()[0]:.1f})")
    print("Per run: wall kernel seconds / idle-core estimate (parallelism, cpu seconds); ratios of walls and of idle.")
    print(f"| script | arguments | {' | '.join([*variants, *ratios])} |")
    print(f"|---|---|{'---:|' * (len(variants) + len(ratios))}")
    for case, args in cases.items():
        assert len(outputs[case]) == 1, f"{case}: the loops' outputs differ: {outputs[case]}"
        b = {label: _best(runs[(case, label)]) for label in variants}
        cells = [f"{r.secs:.3f} / {r.idle:.3f} ({r.parallelism:.2f}, {r.cpu:.3f})" for r in b.values()]
        f, p, s = b["for"], b["parfor"], b["for 1T"]
        cells += [_ratio(f.secs, p.secs), _ratio(f.idle, p.idle), _ratio(2.0, f.parallelism), _ratio(s.idle, p.idle)]
        if before:
            cells.append(_ratio(b["before for"].idle, b["before parfor"].idle))
        print(f"| {case} | {' '.join(args)} | {' | '.join(cells)} |")


def mpi_table(folder: Path, rounds: int, cols: list[str]) -> None:
    script = str(instantiate(folder, "colstats", "parfor"))
    mpi = [str(BIN / "mpiexec"), "-n", "3", str(BIN / "daphnec"), "--distributed", "--num-threads=1"]
    env = {"DAPHNEC_DIST_SLOW_RANK": SLOW}
    best: dict[str, float] = {}
    outputs = set()
    for _ in range(rounds):
        for scheme in ("STATIC", *DYNAMIC):
            r, out = run([*mpi, f"--partitioning={scheme}", script, *cols], env)
            outputs.add(out)
            best[scheme] = min(best.get(scheme, r.secs), r.secs)
    assert len(outputs) == 1, "the schemes' outputs differ"
    print(f"\n## parfor over MPI: 3 ranks (2 workers x 1 thread), rank 2 slowed {SLOW.split(':')[1]}x, colstats "
          f"{' '.join(cols)} (best of {rounds}; kernel seconds)")  # fmt: skip
    print("| scheme | seconds | STATIC / scheme |")
    print("|---|---:|---:|")
    for scheme, secs in best.items():
        print(f"| {scheme} | {secs:.3f} | {best['STATIC'] / secs:.2f}x |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-mpi", action="store_true")
    ap.add_argument("--cv", default="100000,100,10", help="n,m,k of the cross-validation")
    ap.add_argument("--cols", default="200000,64", help="n,m of the per-column statistics")
    ap.add_argument("--mpi-cols", default="200000,48", help="n,m of the per-column statistics over MPI")
    ap.add_argument("--before", default="", help="another installation's python (e.g. /tmp/basepy): its for and "
                    "parfor runs too, interleaved")  # fmt: skip
    a = ap.parse_args()
    cv = [f"{k}={v}" for k, v in zip("nmk", a.cv.split(","))]
    cols = [f"{k}={v}" for k, v in zip("nm", a.cols.split(","))]
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory(prefix="daphnec-parfor-") as tmp:
        threads_table(Path(tmp), a.rounds, cv, cols, a.before)
        if not a.no_mpi:
            mpi_table(Path(tmp), a.rounds, [f"{k}={v}" for k, v in zip("nm", a.mpi_cols.split(","))])
    print(f"\nload average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
