"""Compile time of long and deeply nested DaphneDSL scripts (follow-up of issue 14: they compiled, but slowly).

Each shape is a generated script; each run is a whole `daphnec --no-kernel-cache --timing` process with
`DAPHNEC_NO_PROGRAM_CACHE=1`, so every run parses and compiles. The figure printed is `parsing_seconds +
compilation_seconds` of `--timing` (best of `--repeat`; the machine is shared and noisy, about ±30 %), plus the
whole process's wall time. `--before DIR` times another checkout (its `.venv`) in the same run, interleaved, so
both columns see the same load. `--profile SHAPE` compiles one shape in this process under cProfile (inside the
deep-stack compile thread, where the work happens) and prints the top functions by cumulative time.

`--scripts` instead runs the library-style analysis scripts of bench/scripts/ (lmDS, lmCG, PCA, decision tree,
RDP, ...; tiny inputs) cold: a fresh DAPHNEC_CACHE_DIR per run, so kernels and the program are compiled too. It
reports the whole process's CPU time (user + system, from wait4), wall time, the imports (`-X importtime`, all
top-level imports of the process, which the other columns include), and `--timing`'s phases: startup, parse,
compile (the imports the compiler needs, passes, host code, JIT) and the rest (run: execution + exit; imports
come from a second run under `-X importtime`, which slows). `--before-py PY` runs another
installation's python (e.g. /work/main/.venv/bin/python) interleaved in the same run.

`--phases` answers "where did a cold compile's CPU go" for one bench/scripts/ script (default `lmDS icpt=2`, at
`--scale` 0.1 of its rows: 10,000 x 50): each run is a fresh process with an empty DAPHNEC_CACHE_DIR, instrumented
from inside (wrappers around the compiler's entry points; nothing of daphnec changes) with the CPU time of the
thread doing the work (`time.thread_time`: the background JIT threads' CPU would otherwise land in whatever phase
runs meanwhile). Imports are charged to the first group importing them (self time per module, by a meta-path
hook): numpy, xDSL's core (`xdsl.ir`, `xdsl.irdl`, builtin, func, scf, ...), xDSL's lowering dialects and llvmlite
(only when a native kernel is built), daphnec's dialects, frontend (with Lark), compiler and runtime. Phases:
parse (Lark's tables, parsing, the AST), IR building, the passes (without verification), verification (after each
pass), host code generation, the kernels (planning, lowering, JIT; on the compile thread only). `--before-py PY`
runs another installation interleaved; medians of `--repeat` runs.

Usage: `.venv/bin/python bench/compile_bench.py [--repeat 3] [--before DIR] [--only SHAPE ...]`
       `.venv/bin/python bench/compile_bench.py --scripts [--before-py PY] [--repeat 3] [--only-scripts lmDS ...]`
       `.venv/bin/python bench/compile_bench.py --phases [--before-py PY] [--repeat 5] [--only-scripts "lmDS icpt=2"]`
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
PYC_DIR = Path(tempfile.gettempdir()) / "daphnec-compile-bench-pyc"


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


def script_once(
    python: str, sc: object, args: dict[str, object], tmp: Path, importtime: bool = False, extra: dict | None = None
) -> dict[str, float]:
    """One cold whole-process run of a bench/scripts/ script: cpu, wall and the `--timing` phases (seconds)."""
    cache = tempfile.mkdtemp(dir=tmp, prefix="cache-")  # fresh: nothing cached, kernels and program compile
    # Byte code cached as in an ordinary install (this machine sets PYTHONDONTWRITEBYTECODE, which made every run
    # compile daphnec's modules from source, ~0.13 s): written under a prefix per python, not into the checkout.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env |= {**(extra or {}), "DAPHNEC_CACHE_DIR": cache, "PYTHONPYCACHEPREFIX": str(PYC_DIR / str(abs(hash(python))))}
    cmd = [
        python,
        "-X",
        "importtime",
        "-m",
        "daphnec.tools.daphnec",
        "--timing",
        *sc.flags,
        str(ROOT / "bench" / "scripts" / sc.script),
    ]
    cmd += [f"{k}={v}" for k, v in args.items()]
    from script_steps import measure

    m = measure(cmd, env, ROOT)
    if m.returncode != 0 or m.cpu != m.cpu:
        raise SystemExit(f"{python}: {sc.script} failed ({m.returncode}):\n{m.stderr[-2000:]}")
    head, wall, cpu = m.stderr, m.wall, m.cpu
    timing = next(json.loads(x) for x in head.splitlines() if x.startswith('{"startup_seconds"'))
    # -X importtime: top-level lines ("| name", not indented) carry the cumulative microseconds of each import tree
    imports = (
        sum(
            int(x.split("|")[1])
            for x in head.splitlines()
            if x.startswith("import time:") and x.split("|")[2][1:2] != " " and x.split("|")[1].strip().isdigit()
        )
        / 1e6
    )
    startup, parse = timing["startup_seconds"], timing["parsing_seconds"]
    comp = timing["compilation_seconds"]
    return {
        "cpu": cpu,
        "wall": wall,
        "imports": imports,
        "startup": startup,
        "parse": parse,
        "compile": comp,
        "run": wall - startup - parse - comp,
    }


def bench_scripts(repeat: int, before: str | None, only: list[str] | None, last: bool = False) -> None:
    """Cold first runs of the library-style analysis scripts (see the module docstring)."""
    sys.path.insert(0, str(ROOT / "bench"))
    import numpy as np
    from algorithms_bench import write_script_inputs
    from script_steps import SCRIPTS

    here = str(ROOT / ".venv" / "bin" / "python")
    pythons: list[tuple[str, str, dict[str, str]]] = [("after", here, {})]
    pythons += [("before", before, {})] if before else []
    pythons += [("last", here, {"DAPHNEC_VERIFY": "last"})] if last else []  # verified after the last pass only
    cols = ["cpu", "wall", "imports", "startup", "parse", "compile", "run"]
    print(f"best of {repeat} (per column), seconds; cold: fresh DAPHNEC_CACHE_DIR per run")
    print("script".ljust(16) + "which".ljust(8) + "".join(f"{c:>9}" for c in cols))
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        for name, sc in SCRIPTS.items():
            if only and not any(o.lower() in name.lower() for o in only):
                continue
            folder = tmp / name.replace(" ", "_").replace("=", "")
            folder.mkdir()
            paths, _ = write_script_inputs(sc.make(np.random.default_rng(1), 0.001), folder)
            args = {**paths, **{k: str(v).lower() if isinstance(v, bool) else v for k, v in sc.args.items()}}
            args["out"] = f'"{folder / "out.dbdf"}"'
            best: dict[str, dict[str, float]] = {w: {} for w, _, _ in pythons}
            for _, py, _ in pythons:  # untimed: fills PYC_DIR, so the timed runs load byte code as an install would
                script_once(py, sc, args, tmp)
            for _ in range(repeat):
                for w, py, extra in pythons:  # interleaved: all see the same machine load
                    r = script_once(py, sc, args, tmp, extra=extra)
                    r["imports"] = script_once(py, sc, args, tmp, True, extra)["imports"]  # -X importtime slows
                    best[w] = {c: min(best[w].get(c, float("inf")), r[c]) for c in cols}
            for w, _, _ in pythons:
                print(name.ljust(16) + w.ljust(8) + "".join(f"{best[w][c]:>9.3f}" for c in cols), flush=True)
            if before:
                print(
                    " " * 16
                    + "ratio".ljust(8)
                    + "".join(f"{best['before'][c] / max(best['after'][c], 1e-9):>8.2f}x" for c in cols),
                    flush=True,
                )


PHASE_CHILD = """
import importlib.abc, json, os, sys, threading, time
clock = time.thread_time
acc: dict[str, float] = {}
local = threading.local()

def group(name: str) -> str:
    top = name.split(".")
    if top[0] == "daphnec" and len(top) > 2 and top[1] == "compiler" and top[2] in ("lowering", "backend"):
        return "daphnec.compiler.lowering+backend"
    if top[0] == "daphnec" and len(top) > 1:
        return "daphnec." + top[1]
    if top[0] == "xdsl":
        lowering = ("llvm", "memref", "vector", "math", "cf", "arith", "ptr")
        return "xdsl lowering dialects" if len(top) > 2 and top[1] == "dialects" and top[2] in lowering else "xdsl"
    return {"numpy": "numpy", "lark": "lark", "llvmlite": "llvmlite", "pyarrow": "pyarrow"}.get(top[0], "other")

class Timed(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is None:
                continue
            run = getattr(spec.loader, "exec_module", None)
            if run is not None:
                def exec_module(module, run=run, name=name):
                    stack = local.__dict__.setdefault("stack", [])  # per thread: the JIT threads import too
                    t = clock()
                    stack.append(0.0)
                    try:
                        run(module)
                    finally:
                        took = clock() - t
                        key = "imports " + group(name)
                        acc[key] = acc.get(key, 0.0) + took - stack.pop()
                        if stack:
                            stack[-1] += took
                        else:  # a top-level import: the phase running it does not count it (see `timed`)
                            local.imported = getattr(local, "imported", 0.0) + took
                try:
                    spec.loader.exec_module = exec_module
                except (AttributeError, TypeError):
                    pass
            return spec
        return None

sys.meta_path.insert(0, Timed())

def timed(owner, attr, key):
    inner = getattr(owner, attr)
    def wrapper(*args, **kwargs):
        t, imported = clock(), getattr(local, "imported", 0.0)
        try:
            return inner(*args, **kwargs)
        finally:  # without the imports it ran: those are in the imports rows
            acc[key] = acc.get(key, 0.0) + clock() - t - (getattr(local, "imported", 0.0) - imported)
    setattr(owner, attr, wrapper)

import daphnec.compiler.pipeline as pipeline
import daphnec.compiler.backend.native as native
import daphnec.compiler.host.generator as generator
import daphnec.frontend.ir_builder as ir_builder
import daphnec.frontend.parser as parser
import daphnec.tools.driver as driver
timed(parser, "parse_source", "parse")
timed(ir_builder, "build_module", "IR building")
timed(pipeline, "verify_module", "verification")
timed(pipeline.PassManager, "run_stages", "passes + verification")
timed(generator, "generate_host", "host code")
timed(native, "compile_kernels", "kernels (compile thread)")
timed(driver, "_compile", "whole compile (compile thread)")
def compile_thread(inner=driver.with_deep_stack):
    def run(fn):
        out = {}
        def measured():
            t = clock()
            try:
                return fn()
            finally:
                out["imports"] = getattr(local, "imported", 0.0)  # a new thread: its imports only
                out["cpu"] = clock() - t - out["imports"]
        try:
            return inner(measured)
        finally:
            acc["whole compile (compile thread)"] = out.get("cpu", 0.0)
            acc["compile thread imports"] = out.get("imports", 0.0)
    return run
driver.with_deep_stack = compile_thread()
from daphnec.tools.daphnec import main
try:
    main(sys.argv[1:])
finally:
    acc["whole process"] = time.process_time()
    acc["main thread"] = clock()
    print("PHASES " + json.dumps(acc), file=sys.__stderr__, flush=True)
"""

PHASE_ROWS = [
    "imports numpy",
    "imports pyarrow",
    "imports lark",
    "imports xdsl",
    "imports daphnec.dialects",
    "imports daphnec.frontend",
    "imports daphnec.compiler",
    "imports daphnec.runtime",
    "imports daphnec.tools",
    "imports other",
    "imports daphnec.compiler.lowering+backend",
    "imports xdsl lowering dialects",
    "imports llvmlite",
    "parse",
    "IR building",
    "passes",
    "verification",
    "host code",
    "kernels (compile thread)",
    "whole compile (compile thread)",
    "compile thread imports",
    "main thread",
    "other threads (JIT, workers)",
    "whole process",
]


def phases_once(python: str, sc: object, args: dict[str, object], tmp: Path) -> dict[str, float]:
    """One cold instrumented run (see the module docstring's `--phases`): CPU seconds per phase."""
    cache = tempfile.mkdtemp(dir=tmp, prefix="cache-")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env |= {"DAPHNEC_CACHE_DIR": cache, "PYTHONPYCACHEPREFIX": str(PYC_DIR / str(abs(hash(python))))}
    cmd = [python, "-c", PHASE_CHILD, *sc.flags, str(ROOT / "bench" / "scripts" / sc.script)]
    cmd += [f"{k}={v}" for k, v in args.items()]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT, check=False)
    line = next((x for x in r.stderr.splitlines() if x.startswith("PHASES ")), None)
    if r.returncode != 0 or line is None:
        raise SystemExit(f"{python}: {sc.script} failed ({r.returncode}):\n{r.stderr[-2000:]}")
    acc = json.loads(line[len("PHASES ") :])
    acc["passes"] = acc.get("passes + verification", 0.0) - acc.get("verification", 0.0)
    compile_thread = acc["whole compile (compile thread)"] + acc.get("compile thread imports", 0.0)
    acc["other threads (JIT, workers)"] = acc["whole process"] - acc["main thread"] - compile_thread
    return acc


def bench_phases(repeat: int, before: str | None, only: list[str] | None, scale: float) -> None:
    """Where a cold compile's CPU goes, per phase (see the module docstring)."""
    import statistics

    sys.path.insert(0, str(ROOT / "bench"))
    import numpy as np
    from algorithms_bench import write_script_inputs
    from script_steps import SCRIPTS

    pythons = [("after", str(ROOT / ".venv" / "bin" / "python"))] + ([("before", before)] if before else [])
    names = [n for n in SCRIPTS if any(o.lower() in n.lower() for o in (only or ["lmDS icpt=2"]))]
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        for name in names:
            sc = SCRIPTS[name]
            folder = tmp / name.replace(" ", "_").replace("=", "")
            folder.mkdir()
            paths, _ = write_script_inputs(sc.make(np.random.default_rng(1), scale), folder)
            args = {**paths, **{k: str(v).lower() if isinstance(v, bool) else v for k, v in sc.args.items()}}
            args["out"] = f'"{folder / "out.dbdf"}"'
            runs: dict[str, list[dict[str, float]]] = {w: [] for w, _ in pythons}
            for _, py in pythons:  # untimed: fills PYC_DIR, so the timed runs load byte code as an install would
                phases_once(py, sc, args, tmp)
            for _ in range(repeat):
                for w, py in pythons:  # interleaved: all see the same machine load
                    runs[w].append(phases_once(py, sc, args, tmp))
            print(f"{name}: CPU ms per phase, cold (empty caches), median of {repeat}")
            print("phase".ljust(42) + "".join(f"{w:>10}" for w, _ in pythons) + ("     ratio" if before else ""))
            for row in PHASE_ROWS:
                meds = [statistics.median(r.get(row, 0.0) for r in runs[w]) * 1000 for w, _ in pythons]
                ratio = f"{meds[1] / meds[0]:>9.2f}x" if before and meds[0] > 0 else ""
                print(row.ljust(42) + "".join(f"{m:>10.1f}" for m in meds) + ratio, flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3, help="runs per shape and checkout; the best is printed")
    ap.add_argument("--before", type=Path, help="another checkout (with its .venv) to time in the same run")
    ap.add_argument("--only", nargs="*", choices=list(SHAPES), help="these shapes only")
    ap.add_argument("--profile", choices=list(SHAPES), help="profile one shape in-process instead")
    ap.add_argument("--top", type=int, default=40, help="functions listed by --profile")
    ap.add_argument("--profile-out", type=Path, help="also write --profile's raw stats here (for pstats)")
    ap.add_argument("--scripts", action="store_true", help="cold runs of the bench/scripts/ analysis scripts")
    ap.add_argument("--before-py", help="with --scripts: another installation's python to run interleaved")
    ap.add_argument("--last", action="store_true", help="with --scripts: also this checkout with DAPHNEC_VERIFY=last")
    ap.add_argument("--only-scripts", nargs="*", help="with --scripts: names containing one of these")
    ap.add_argument("--phases", action="store_true", help="CPU per phase of a cold compile of bench/scripts/ scripts")
    ap.add_argument("--scale", type=float, default=0.1, help="with --phases: the scripts' data scale")
    args = ap.parse_args()
    if args.phases:
        bench_phases(args.repeat, args.before_py, args.only_scripts, args.scale)
        return
    if args.scripts:
        bench_scripts(args.repeat, args.before_py, args.only_scripts, args.last)
        return
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
