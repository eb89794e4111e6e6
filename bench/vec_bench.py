"""Native pipeline kernels (`daphnec --vec`) against numpy, a hand-written llvmlite kernel and memory bandwidth.

Workloads (2^25 f64 values per input unless `--log2n` says otherwise), every time measured in this run:

- reduce `sum((a - b) ^ 2 * c)`: `daphnec --vec` (kernel time = the `now()` difference around the statement in
  the script, so executor overhead, batches and threads included) vs numpy `np.sum((a - b) ** 2 * c)` vs a
  hand-written LLVM IR kernel compiled by llvmlite at O3 (fast-math reduction, one call over all rows) vs the
  1-core read bandwidth (a hand llvmlite kernel that only sums the three arrays);
- the same hand reduction and read-bandwidth kernels on 2 threads (two equal row ranges at once, as STATIC
  partitions them), so `--vec` at 2 threads is compared with what 2 cores can read here;
- map `o = (a - b) * 3.0 + a * b` (4 ops): `daphnec --vec` vs numpy vs a hand llvmlite map kernel on 1 and 2
  threads (writing a freshly allocated output, as the engine does, and a reused one);
- a roofline chart (`--chart`, default `bench/out/roofline.png`): achieved GB/s per workload and configuration
  against the measured 1- and 2-core read bandwidth;
- compile latency per pipeline, cold (empty kernel cache), kernels cached (program compiled again) and cached
  (program cache hit; the script keeps its path, as a user re-runs it), from `DAPHNEC_JIT_LOG` (the work's own
  time; time queued behind the compiling thread apart), on tests/jit/scripts/five_pipelines.daph; and the time
  from process start to the script's first statement.

Goals (issue "Vectorized pipelines"): reduce >= 3x numpy and >= 0.9x hand llvmlite; map >= 2x numpy; compile
<= 80 ms cold and <= 5 ms cached per pipeline; start executing within 0.5 s cold / 0.2 s cached.

Usage: `.venv/bin/python bench/vec_bench.py [--log2n 25] [--repeat 3] [--chart PATH] [--no-compile] [--compile-only]`.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

REDUCE = """a = rand({n}, 1, 0.0, 1.0, 1.0, 1);
b = rand({n}, 1, 0.0, 1.0, 1.0, 2);
c = rand({n}, 1, 0.0, 1.0, 1.0, 3);
for (i in 1:{repeat}) {{
  t0 = now();
  s = sum((a - b) ^ 2 * c);
  t1 = now();
  print("t=" + (t1 - t0));
  print(s);
}}
"""
MAP = """a = rand({n}, 1, 0.0, 1.0, 1.0, 1);
b = rand({n}, 1, 0.0, 1.0, 1.0, 2);
for (i in 1:{repeat}) {{
  t0 = now();
  o = (a - b) * 3.0 + a * b;
  t1 = now();
  print("t=" + (t1 - t0));
  print(o[0:1, ]);
}}
"""
STARTUP = "print(now());\n"

HAND_REDUCE = """
define double @reduce(i64 %n, ptr noalias %a, ptr noalias %b, ptr noalias %c) {
entry:
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%i1, %loop]
  %acc = phi double [0.0, %entry], [%acc1, %loop]
  %pa = getelementptr inbounds double, ptr %a, i64 %i
  %pb = getelementptr inbounds double, ptr %b, i64 %i
  %pc = getelementptr inbounds double, ptr %c, i64 %i
  %x = load double, ptr %pa
  %y = load double, ptr %pb
  %z = load double, ptr %pc
  %d = fsub double %x, %y
  %sq = fmul double %d, %d
  %p = fmul double %sq, %z
  %acc1 = fadd reassoc nsz double %acc, %p
  %i1 = add nuw nsw i64 %i, 1
  %more = icmp ult i64 %i1, %n
  br i1 %more, label %loop, label %done
done:
  ret double %acc1
}
define double @readsum(i64 %n, ptr noalias %a, ptr noalias %b, ptr noalias %c) {
entry:
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%i1, %loop]
  %acc = phi double [0.0, %entry], [%acc1, %loop]
  %pa = getelementptr inbounds double, ptr %a, i64 %i
  %pb = getelementptr inbounds double, ptr %b, i64 %i
  %pc = getelementptr inbounds double, ptr %c, i64 %i
  %x = load double, ptr %pa
  %y = load double, ptr %pb
  %z = load double, ptr %pc
  %s1 = fadd reassoc nsz double %x, %y
  %s2 = fadd reassoc nsz double %s1, %z
  %acc1 = fadd reassoc nsz double %acc, %s2
  %i1 = add nuw nsw i64 %i, 1
  %more = icmp ult i64 %i1, %n
  br i1 %more, label %loop, label %done
done:
  ret double %acc1
}
define void @map(i64 %n, ptr noalias %a, ptr noalias %b, ptr noalias %o) {
entry:
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%i1, %loop]
  %pa = getelementptr inbounds double, ptr %a, i64 %i
  %pb = getelementptr inbounds double, ptr %b, i64 %i
  %po = getelementptr inbounds double, ptr %o, i64 %i
  %x = load double, ptr %pa
  %y = load double, ptr %pb
  %d = fsub double %x, %y
  %d3 = fmul double %d, 3.0
  %xy = fmul double %x, %y
  %r = fadd double %d3, %xy
  store double %r, ptr %po
  %i1 = add nuw nsw i64 %i, 1
  %more = icmp ult i64 %i1, %n
  br i1 %more, label %loop, label %done
done:
  ret void
}
"""


def best(times: list[float]) -> float:
    return min(times)


def daphnec(script: str, *args: str, env: dict[str, str] | None = None) -> str:
    with tempfile.NamedTemporaryFile("w", suffix=".daph", delete=False) as f:
        f.write(script)
    try:
        return daphnec_file(Path(f.name), *args, env=env)
    finally:
        os.unlink(f.name)


def daphnec_file(path: Path, *args: str, env: dict[str, str] | None = None) -> str:
    res = subprocess.run(
        [sys.executable, "-m", "daphnec.tools.daphnec", *args, str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        check=True,
    )
    return res.stdout


def script_times(out: str, repeat: int) -> list[float]:
    """The `now()` differences a script printed (`t=<ns>` lines), in seconds."""
    return [int(x[2:]) / 1e9 for x in out.splitlines() if x.startswith("t=")][:repeat]


def timeit(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return best(times)


def _hand(symbols: list[str]) -> dict[str, int]:
    """Addresses of the hand-written kernels, compiled and loaded like daphnec's (same target machine, O3)."""
    from daphnec.runtime import native_code

    engine = native_code.engine()
    return engine.load("hand-written", engine.compile_ir(HAND_REDUCE), symbols)


def hand_kernels():
    sig = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
    addresses = _hand(["reduce", "readsum"])
    return sig(addresses["reduce"]), sig(addresses["readsum"])


def hand_map():
    sig = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
    return sig(_hand(["map"])["map"])


def on_threads(kernel, n: int, arrays: list[np.ndarray], threads: int) -> None:
    """Run `kernel(rows, *pointers)` on `threads` equal row ranges at once (ctypes releases the GIL), like the
    scheduler's STATIC partitioning; the calling thread takes the first range."""
    import threading

    bounds = [n * t // threads for t in range(threads + 1)]

    def part(t: int) -> None:
        lo, hi = bounds[t], bounds[t + 1]
        kernel(hi - lo, *(x.ctypes.data + 8 * lo for x in arrays))

    others = [threading.Thread(target=part, args=(t,)) for t in range(1, threads)]
    for th in others:
        th.start()
    part(0)
    for th in others:
        th.join()


def bench_reduce(n: int, repeat: int) -> dict[str, float]:
    rng = np.random.default_rng(0)
    a, b, c = (rng.random(n) for _ in range(3))
    res = {"numpy": timeit(lambda: np.sum((a - b) ** 2 * c), repeat)}
    reduce, readsum = hand_kernels()
    pa, pb, pc = a.ctypes.data, b.ctypes.data, c.ctypes.data
    res["hand llvmlite"] = timeit(lambda: reduce(n, pa, pb, pc), repeat)
    res["read bandwidth"] = timeit(lambda: readsum(n, pa, pb, pc), repeat)
    res["hand llvmlite 2 threads"] = timeit(lambda: on_threads(reduce, n, [a, b, c], 2), repeat)
    res["read bandwidth 2 threads"] = timeit(lambda: on_threads(readsum, n, [a, b, c], 2), repeat)
    script = REDUCE.format(n=n, repeat=repeat)
    res["daphnec --vec"] = best(script_times(daphnec(script, "--vec"), repeat))
    res["daphnec --vec 1 thread"] = best(script_times(daphnec(script, "--vec", "--num-threads=1"), repeat))
    res["daphnec --vec 1 batch"] = best(
        script_times(daphnec(script, "--vec", "--num-threads=1", f"--phy-batch-size={1 << 40}"), repeat)
    )
    res["daphnec --vec Python body"] = best(
        script_times(daphnec(script, "--vec", env={"DAPHNEC_NO_NATIVE": "1"}), repeat)
    )
    res["daphnec (no --vec)"] = best(script_times(daphnec(script), repeat))
    return res


def bench_map(n: int, repeat: int) -> dict[str, float]:
    rng = np.random.default_rng(0)
    a, b = rng.random(n), rng.random(n)
    res = {"numpy": timeit(lambda: (a - b) * 3.0 + a * b, repeat)}
    kernel = hand_map()
    res["hand llvmlite (new output)"] = timeit(lambda: on_threads(kernel, n, [a, b, np.empty(n)], 1), repeat)
    res["hand llvmlite 2 threads (new output)"] = timeit(lambda: on_threads(kernel, n, [a, b, np.empty(n)], 2), repeat)
    out = np.empty(n)
    out.fill(0.0)
    res["hand llvmlite 2 threads (reused output)"] = timeit(lambda: on_threads(kernel, n, [a, b, out], 2), repeat)
    script = MAP.format(n=n, repeat=repeat)
    res["daphnec --vec"] = best(script_times(daphnec(script, "--vec"), repeat))
    res["daphnec --vec 1 thread"] = best(script_times(daphnec(script, "--vec", "--num-threads=1"), repeat))
    res["daphnec --vec 1 batch"] = best(
        script_times(daphnec(script, "--vec", "--num-threads=1", f"--phy-batch-size={1 << 40}"), repeat)
    )
    res["daphnec (no --vec)"] = best(script_times(daphnec(script), repeat))
    return res


def bench_compile(repeat: int) -> dict[str, list[float]]:
    """Per-pipeline compile/load milliseconds and the time to the first statement: cold (empty caches), kernels
    cached (the program is compiled again: `DAPHNEC_NO_PROGRAM_CACHE=1`) and cached (the program cache hits).

    The script is written once per round to the same path, as a user re-runs a script: the program cache's key
    names the script's path, so a fresh temporary file per run would never hit it. Load times are the JIT log's
    own milliseconds (the load itself; the first kernel of a process also sets up LLVM's engine); `waited=` is
    reported apart (time queued behind the compiling thread)."""
    five = (ROOT / "tests" / "jit" / "scripts" / "five_pipelines.daph").read_text()
    first = STARTUP + five
    phases = {"cold": {}, "kernels cached": {"DAPHNEC_NO_PROGRAM_CACHE": "1"}, "cached": {}}
    out: dict[str, list[float]] = {}
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as cache:
            script = Path(cache) / "five.daph"
            script.write_text(first)
            for phase, extra in phases.items():
                log = Path(cache) / f"{phase}.log"
                env = {"DAPHNEC_CACHE_DIR": str(Path(cache) / "k"), "DAPHNEC_JIT_LOG": str(log), **extra}
                t0 = time.time_ns()
                stdout = daphnec_file(script, "--vec", env=env)
                out.setdefault(f"start {phase} s", []).append((int(stdout.split()[0]) - t0) / 1e9)
                lines = [line.split() for line in log.read_text().splitlines()] if log.exists() else []
                ms = [float(f[2]) for f in lines]
                out.setdefault(f"{phase} ms", []).extend(ms)
                out.setdefault(f"{phase} first ms", []).extend(ms[:1])
                out.setdefault(f"{phase} waited ms", []).extend(
                    float(x.split("=")[1]) for f in lines for x in f[3:] if x.startswith("waited=")
                )
        t0 = time.time_ns()
        stdout = daphnec(first)
        out.setdefault("start no-vec s", []).append((int(stdout.split()[0]) - t0) / 1e9)
    return out


def roofline(n: int, red: dict[str, float], mp: dict[str, float], path: Path) -> None:
    """Achieved GB/s per fused workload and configuration against the measured 1- and 2-core read bandwidth."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [
        ("reduce numpy", red["numpy"]),
        ("reduce --vec 1T", red["daphnec --vec 1 thread"]),
        ("reduce hand 1T", red["hand llvmlite"]),
        ("reduce --vec 2T", red["daphnec --vec"]),
        ("reduce hand 2T", red["hand llvmlite 2 threads"]),
        ("reduce plain", red["daphnec (no --vec)"]),
        ("map numpy", mp["numpy"]),
        ("map --vec 1T", mp["daphnec --vec 1 thread"]),
        ("map hand 1T", mp["hand llvmlite (new output)"]),
        ("map --vec 2T", mp["daphnec --vec"]),
        ("map hand 2T", mp["hand llvmlite 2 threads (new output)"]),
        ("map plain", mp["daphnec (no --vec)"]),
    ]
    gbs = [3 * 8 * n / t / 1e9 for _, t in rows]
    fig, ax = plt.subplots(figsize=(9, 4))
    colors = ["tab:green" if "--vec" in k else "tab:gray" if "hand" in k else "tab:blue" for k, _ in rows]
    ax.bar([k for k, _ in rows], gbs, color=colors)
    for label, t, style in (
        ("1-core read", red["read bandwidth"], ":"),
        ("2-core read", red["read bandwidth 2 threads"], "--"),
    ):
        ax.axhline(3 * 8 * n / t / 1e9, linestyle=style, color="black", label=f"{label} {3 * 8 * n / t / 1e9:.1f} GB/s")
    ax.set_ylabel("GB/s (bytes read + written / time)")
    ax.set_title(f"fused kernels vs memory bandwidth, 2^{n.bit_length() - 1} f64 per input")
    ax.tick_params(axis="x", rotation=60)
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    print(f"\nchart written to {path}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log2n", type=int, default=25)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--chart", default=str(ROOT / "bench" / "out" / "roofline.png"), help="'' for none")
    ap.add_argument("--no-compile", action="store_true", help="skip the compile-latency and start-up part")
    ap.add_argument("--compile-only", action="store_true", help="only the compile-latency and start-up part")
    args = ap.parse_args()
    if args.compile_only:
        report_compile(args.repeat)
        return
    n = 1 << args.log2n
    print(f"n = 2^{args.log2n} f64 per input, best of {args.repeat}")
    red = bench_reduce(n, args.repeat)
    print("\nreduce sum((a - b) ^ 2 * c)")
    for k, v in red.items():
        print(
            f"  {k:<28} {v * 1000:9.1f} ms   numpy/this {red['numpy'] / v:5.2f}x   hand/this "
            f"{red['hand llvmlite'] / v:5.2f}x   {3 * 8 * n / v / 1e9:5.1f} GB/s"
        )
    bw1, bw2 = 3 * 8 * n / red["read bandwidth"] / 1e9, 3 * 8 * n / red["read bandwidth 2 threads"] / 1e9
    print(
        f"  read bandwidth: 1 core {bw1:.1f} GB/s, 2 cores {bw2:.1f} GB/s; --vec reaches "
        f"{100 * red['read bandwidth'] / red['daphnec --vec 1 thread']:.0f} % of 1-core (goal 90 %) and "
        f"{100 * red['read bandwidth 2 threads'] / red['daphnec --vec']:.0f} % of 2-core (goal 85 %)"
    )
    mp = bench_map(n, args.repeat)
    print("\nmap o = (a - b) * 3.0 + a * b   (GB/s: 2 arrays read + 1 written)")
    for k, v in mp.items():
        print(f"  {k:<40} {v * 1000:9.1f} ms   numpy/this {mp['numpy'] / v:5.2f}x   {3 * 8 * n / v / 1e9:5.1f} GB/s")
    print(
        f"  --vec map vs the hand kernel writing a new output: 1 thread "
        f"{100 * mp['hand llvmlite (new output)'] / mp['daphnec --vec 1 thread']:.0f} %, 2 threads "
        f"{100 * mp['hand llvmlite 2 threads (new output)'] / mp['daphnec --vec']:.0f} %"
    )
    if args.chart:
        roofline(n, red, mp, Path(args.chart))
    if not args.no_compile:
        report_compile(args.repeat)


def report_compile(repeat: int) -> None:
    comp = bench_compile(repeat)
    print("\ncompile/load milliseconds per pipeline (tests/jit/scripts/five_pipelines.daph, goal: cached load <= 5)")
    for phase in ("cold", "kernels cached", "cached"):
        v, firsts, waited = comp[f"{phase} ms"], comp[f"{phase} first ms"], comp[f"{phase} waited ms"]
        if not v:
            continue
        print(
            f"  {phase:<15} median {statistics.median(v):7.1f}   max {max(v):7.1f}   first of a process (LLVM set-up) "
            f"median {statistics.median(firsts):7.1f}   queued median {statistics.median(waited or [0]):7.1f}"
            f"   (n={len(v)})"
        )
    for k in ("start no-vec s", "start cold s", "start kernels cached s", "start cached s"):
        print(f"  {k:<22} best {min(comp[k]):6.3f}   median {statistics.median(comp[k]):6.3f}")


if __name__ == "__main__":
    main()
