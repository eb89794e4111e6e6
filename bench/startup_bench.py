"""Start-up latency of `daphnec`: wall time from launching the process to the script's first statement.

The script is `print(now());` followed by tests/jit/scripts/five_pipelines.daph (five pipelines, five native
kernels with `--vec`), written once into a temporary folder (the same path in every run, as a user re-running a
script). Each run is a fresh `python -m tools.daphnec` process; the parent takes `time.time_ns()` just before
starting it and the script's first statement prints `now()` (the same clock), so the difference is everything a
user waits for: interpreter start, imports, parsing, compiling (or loading from the caches) and the first
statement. Phases, each in its own empty cache folder per round (`DAPHNEC_CACHE_DIR`):

- cold: empty kernel and program caches (every kernel compiled);
- kernels cached: the kernel cache is warm, the program cache is off (`DAPHNEC_NO_PROGRAM_CACHE=1`): the script is
  parsed and compiled, its kernels' object code is loaded (this was "cached" before the program cache existed);
- cached: both caches warm (the program comes from the program cache: no parsing, no compiling, no xDSL);
- the same three without `--vec` (no kernels).

Goal (issue "Vectorized pipelines"): `daphnec --vec` starts executing within 0.5 s cold and 0.2 s cached.

Usage: `.venv/bin/python bench/startup_bench.py [--repeat 7] [--breakdown]`; `--breakdown` also prints the
import-time tree (`python -X importtime`) of a cached run, largest first.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIVE = ROOT / "tests" / "jit" / "scripts" / "five_pipelines.daph"


def run(script: Path, cache: Path, args: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """(seconds to the first statement, seconds for the whole process)."""
    full_env = {**os.environ, "DAPHNEC_CACHE_DIR": str(cache), **(env or {})}
    full_env.pop("DAPHNEC_PROGRAM_CACHE_DIR", None)
    t0 = time.time_ns()
    res = subprocess.run(
        [sys.executable, "-m", "daphnec.tools.daphnec", *args, str(script)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=full_env,
        check=True,
    )
    t1 = time.time_ns()
    return (int(res.stdout.split()[0]) - t0) / 1e9, (t1 - t0) / 1e9


def measure(repeat: int) -> dict[str, list[tuple[float, float]]]:
    out: dict[str, list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "five.daph"
        script.write_text("print(now());\n" + FIVE.read_text())
        for r in range(repeat):
            for label, args in (("--vec", ["--vec"]), ("no --vec", [])):
                cache = Path(tmp) / f"cache-{r}-{len(args)}"
                out.setdefault(f"{label}, cold", []).append(run(script, cache, args, {"DAPHNEC_NO_PROGRAM_CACHE": "1"}))
                out.setdefault(f"{label}, kernels cached", []).append(
                    run(script, cache, args, {"DAPHNEC_NO_PROGRAM_CACHE": "1"})
                )
                run(script, cache, args)  # fills the program cache
                out.setdefault(f"{label}, cached", []).append(run(script, cache, args))
    return out


def breakdown() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "five.daph"
        script.write_text("print(now());\n" + FIVE.read_text())
        env = {**os.environ, "DAPHNEC_CACHE_DIR": str(Path(tmp) / "c")}
        cmd = [sys.executable, "-X", "importtime", "-m", "daphnec.tools.daphnec", "--vec", str(script)]
        for _ in range(2):
            res = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env, check=True)
    rows = []
    for line in res.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            _, cum, name = line.split("|")
            if cum.strip().isdigit() and not name.startswith("   "):  # top-level and first-level imports
                rows.append((int(cum), name.rstrip()))
    print("\nimport time of a cached `--vec` run (cumulative ms, top two levels)")
    for cum, name in sorted(rows, reverse=True)[:15]:
        print(f"  {cum / 1000:7.1f}  {name}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--breakdown", action="store_true")
    args = ap.parse_args()
    res = measure(args.repeat)
    print(f"process start -> first statement (and whole process), {args.repeat} rounds, seconds")
    print(f"  {'phase':<26} {'best':>6} {'median':>7}   {'whole: best':>11} {'median':>7}")
    for k, v in res.items():
        first, whole = [x for x, _ in v], [y for _, y in v]
        print(
            f"  {k:<26} {min(first):6.3f} {statistics.median(first):7.3f}   {min(whole):11.3f} "
            f"{statistics.median(whole):7.3f}"
        )
    if args.breakdown:
        breakdown()


if __name__ == "__main__":
    main()
