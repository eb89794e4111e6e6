"""`parfor` against the `for` loop it replaces, over threads and over MPI ranks with one slowed rank.

    .venv/bin/python bench/parfor_bench.py [--rounds 3] [--no-mpi] [--cv n,m,k] [--cols n,m]

1. Threads: two scripts written the way analysis scripts are, each with `for` and with `parfor` (the same file
   otherwise: bench/parfor/*.daph, `LOOP` replaced), at `--num-threads=2`, kernel time = the `now()` interval
   around the loop. `for (BLAS 1)` runs the `for` loop with OpenBLAS at one thread (OPENBLAS_NUM_THREADS=1), as
   every parfor task does (runtime/parfor.py): it tells how much of the ratio is parallel iterations and how much
   is BLAS's own threads.
   - 10-fold cross-validation of lmDS (normal equations with a ridge term, one fold per iteration),
   - per-column statistics (mean, standard deviation, min, max, median by sorting), one column per iteration.
2. MPI: the per-column statistics with `mpiexec -n 3 daphnec --distributed` (2 workers x 1 thread), rank 2 slowed
   4x (DAPHNEC_DIST_SLOW_RANK, runtime/testing_hooks.py), STATIC against the dynamic schemes (chunks handed to
   whichever rank asks first).

Every configuration runs once per round, rounds interleaved (a change of machine load hits all of them); the table
shows the best of the rounds and the ratios of those. Each run also reports CPU seconds / wall seconds of the whole
process (user + system of the child): a parfor that runs its iterations on two cores shows about 2 where the `for`
loop shows about 1, whatever the load on the machine does to the wall time. The outputs of `for` and `parfor` must
be identical (checked).

Goal (issue 23): parfor >= 1.7x the `for` loop at 2 threads on both scripts; dynamic schemes beat STATIC with one
slowed rank.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
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


def run(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float, str]:
    """(kernel seconds, CPU seconds / wall seconds of the process, output without the timing line)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=3600)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{r.stderr}")
    m = re.search(r"kernel_seconds (\S+)", r.stdout)
    assert m is not None, r.stdout
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return float(m.group(1)), cpu / wall, r.stdout[: m.start()]


def threads_table(folder: Path, rounds: int, cv: list[str], cols: list[str]) -> None:
    daphnec = [str(BIN / "daphnec"), "--num-threads=2"]
    cases = {"cv_lmds": cv, "colstats": cols}
    variants = {"for": ("for", {}), "for (BLAS 1)": ("for", {"OPENBLAS_NUM_THREADS": "1"}), "parfor": ("parfor", {})}
    best: dict[tuple[str, str], tuple[float, float]] = {}
    outputs: dict[tuple[str, str], str] = {}
    for _ in range(rounds):
        for case, args in cases.items():
            for label, (loop, env) in variants.items():
                secs, cpu, out = run([*daphnec, str(instantiate(folder, case, loop)), *args], env)
                outputs[(case, label)] = out
                if (case, label) not in best or secs < best[(case, label)][0]:
                    best[(case, label)] = (secs, cpu)
    print(f"## parfor vs for, 2 threads (best of {rounds} interleaved rounds; kernel seconds, CPU/wall of the process)")
    print("| script | arguments | for | for (BLAS 1) | parfor | for / parfor | for (BLAS 1) / parfor |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for case, args in cases.items():
        assert outputs[(case, "for")] == outputs[(case, "parfor")], f"{case}: parfor's output differs from for's"
        f, f1, p = (best[(case, v)] for v in variants)
        print(f"| {case} | {' '.join(args)} | {f[0]:.3f} ({f[1]:.2f}) | {f1[0]:.3f} ({f1[1]:.2f}) | "
              f"{p[0]:.3f} ({p[1]:.2f}) | {f[0] / p[0]:.2f}x | {f1[0] / p[0]:.2f}x |")  # fmt: skip


def mpi_table(folder: Path, rounds: int, cols: list[str]) -> None:
    script = str(instantiate(folder, "colstats", "parfor"))
    mpi = [str(BIN / "mpiexec"), "-n", "3", str(BIN / "daphnec"), "--distributed", "--num-threads=1"]
    env = {"DAPHNEC_DIST_SLOW_RANK": SLOW}
    best: dict[str, float] = {}
    outputs = set()
    for _ in range(rounds):
        for scheme in ("STATIC", *DYNAMIC):
            secs, _cpu, out = run([*mpi, f"--partitioning={scheme}", script, *cols], env)
            outputs.add(out)
            best[scheme] = min(best.get(scheme, secs), secs)
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
    a = ap.parse_args()
    cv = [f"{k}={v}" for k, v in zip("nmk", a.cv.split(","))]
    cols = [f"{k}={v}" for k, v in zip("nm", a.cols.split(","))]
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory(prefix="daphnec-parfor-") as tmp:
        threads_table(Path(tmp), a.rounds, cv, cols)
        if not a.no_mpi:
            mpi_table(Path(tmp), a.rounds, [f"{k}={v}" for k, v in zip("nm", a.mpi_cols.split(","))])
    print(f"\nload average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
