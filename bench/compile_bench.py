"""Compile time of long and deeply nested DaphneDSL scripts (follow-up of issue 14: they compiled, but slowly).

Each shape is a generated script; each run is a whole `daphnec --no-kernel-cache --timing` process with
`DAPHNEC_NO_PROGRAM_CACHE=1`, so every run parses and compiles. The figure printed is `parsing_seconds +
compilation_seconds` of `--timing` (best of `--repeat`; the machine is shared and noisy, about ±30 %), plus the
whole process's wall time. `--before DIR` times another checkout (its `.venv`) in the same run, interleaved, so
both columns see the same load. `--profile SHAPE` compiles one shape in this process under cProfile (inside the
deep-stack compile thread, where the work happens) and prints the top functions by cumulative time.

Usage: `.venv/bin/python bench/compile_bench.py [--repeat 3] [--before DIR] [--only SHAPE ...]`
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def nested_ifs(n: int) -> str:
    """`x = 0; if (x < 1) { if (x < 2) { ... x = x + 1; } } print(x);`"""
    return "x = 0;\n" + "".join(f"if (x < {k + 1}) {{\n" for k in range(n)) + "x = x + 1;\n" + "}\n" * n + "print(x);\n"


def nested_loops(n: int) -> str:
    loops = "".join(f"for (i{k} in 1:1) {{\n" for k in range(n))
    return "s = 0;\n" + loops + "s = s + 1;\n" + "}\n" * n + "print(s);\n"


def long_sum(n: int) -> str:
    return "x = " + "+".join(["1"] * n) + ";\nprint(x);\n"


def nested_abs(n: int) -> str:
    return "x = " + "abs(" * n + "-1" + ")" * n + ";\nprint(x);\n"


def chained_calls(n: int) -> str:
    """`g0` calls `g1` ... calls `g<n>`: n + 1 functions, each specialized once."""
    defs = "".join(f"def g{i}(x) {{ return g{i + 1}(x) + 1; }}\n" for i in range(n))
    return defs + f"def g{n}(x) {{ return x; }}\nprint(g0(1));\n"


def nested_blocks(n: int) -> str:
    return "x = 1;\n" + "{\n" * n + "x = x + 1;\n" + "}\n" * n + "print(x);\n"


SHAPES: dict[str, tuple[Callable[[int], str], int, str]] = {
    "ifs-300": (nested_ifs, 300, "1"),
    "ifs-1000": (nested_ifs, 1000, "1"),
    "loops-100": (nested_loops, 100, "1"),
    "sum-10000": (long_sum, 10_000, "10000"),
    "abs-1000": (nested_abs, 1000, "1"),
    "calls-1000": (chained_calls, 1000, "1001"),
    "blocks-1000": (nested_blocks, 1000, "2"),
}
"""name -> (generator, size, expected output): the shapes of issue 14's hardening, at the sizes it names."""


def script_text(name: str) -> str:
    gen, n, _ = SHAPES[name]
    return gen(n)


def time_once(checkout: Path, script: Path, expected: str) -> tuple[float, float]:
    """(parse + compile seconds from `--timing`, wall seconds of the process) of one run in `checkout`."""
    env = {**os.environ, "DAPHNEC_NO_PROGRAM_CACHE": "1"}
    cmd = [str(checkout / ".venv" / "bin" / "python"), "-m", "daphnec.tools.daphnec", "--no-kernel-cache"]
    t0 = time.perf_counter()
    res = subprocess.run([*cmd, "--timing", str(script)], capture_output=True, text=True, env=env, cwd=checkout)
    wall = time.perf_counter() - t0
    if res.returncode != 0 or res.stdout.strip() != expected:
        raise SystemExit(f"{checkout}: {script.name} failed ({res.returncode}): {res.stdout[-200:]}{res.stderr[-800:]}")
    timing = json.loads(res.stderr.strip().splitlines()[-1])
    return timing["parsing_seconds"] + timing["compilation_seconds"], wall


def profile(name: str, top: int, out: Path | None = None) -> None:
    """Compile one shape in-process under cProfile, inside the deep-stack thread (where the passes run)."""
    import cProfile
    import pstats

    from daphnec.runtime.config import DaphneConfig
    from daphnec.tools import driver

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{name}.daph"
        path.write_text(script_text(name))
        prof = cProfile.Profile()
        real = driver.with_deep_stack

        def profiled(fn: Callable[[], object]) -> object:
            return real(lambda: prof.runcall(fn))

        driver.with_deep_stack = profiled  # type: ignore[assignment] - this process only, single-threaded use
        t0 = time.perf_counter()
        driver.compile_script(str(path), {}, DaphneConfig(no_kernel_cache=True), {})
        print(f"{name}: {time.perf_counter() - t0:.2f} s under the profiler")
        if out is not None:
            prof.dump_stats(out)
        pstats.Stats(prof).sort_stats("cumulative").print_stats(top)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3, help="runs per shape and checkout; the best is printed")
    ap.add_argument("--before", type=Path, help="another checkout (with its .venv) to time in the same run")
    ap.add_argument("--only", nargs="*", choices=list(SHAPES), help="these shapes only")
    ap.add_argument("--profile", choices=list(SHAPES), help="profile one shape in-process instead")
    ap.add_argument("--top", type=int, default=40, help="functions listed by --profile")
    ap.add_argument("--profile-out", type=Path, help="also write --profile's raw stats here (for pstats)")
    args = ap.parse_args()
    if args.profile:
        profile(args.profile, args.top, args.profile_out)
        return
    checkouts = [("after", ROOT)] + ([("before", args.before.resolve())] if args.before else [])
    header = "shape".ljust(12) + "".join(f"{c + ' compile':>16}{c + ' wall':>13}" for c, _ in checkouts)
    print(header + ("     speed-up" if args.before else ""))
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.only or list(SHAPES):
            script = Path(tmp) / f"{name}.daph"
            script.write_text(script_text(name))
            best = {c: (float("inf"), float("inf")) for c, _ in checkouts}
            for _ in range(args.repeat):
                for c, checkout in checkouts:  # interleaved: both see the same machine load
                    comp, wall = time_once(checkout, script, SHAPES[name][2])
                    best[c] = (min(best[c][0], comp), min(best[c][1], wall))
            row = name.ljust(12) + "".join(f"{best[c][0]:>14.2f} s{best[c][1]:>11.2f} s" for c, _ in checkouts)
            if args.before:
                row += f"{best['before'][0] / best['after'][0]:>12.1f}x"
            print(row, flush=True)


if __name__ == "__main__":
    sys.exit(main())
