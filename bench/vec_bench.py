"""Native pipeline kernels (`daphnec --vec`) against numpy, a hand-written llvmlite kernel and memory bandwidth.

Workloads (2^25 f64 values per input unless `--log2n` says otherwise), every time measured in this run:

- reduce `sum((a - b) ^ 2 * c)`: `daphnec --vec` (kernel time = the `now()` difference around the statement in
  the script, so executor overhead, batches and threads included) vs numpy `np.sum((a - b) ** 2 * c)` vs a
  hand-written LLVM IR kernel compiled by llvmlite at O3 (fast-math reduction, one call over all rows) vs the
  1-core read bandwidth (a hand llvmlite kernel that only sums the three arrays);
- map `o = (a - b) * 3.0 + a * b` (4 ops): `daphnec --vec` vs numpy;
- compile latency per pipeline, cold (empty kernel cache) and cached, from `DAPHNEC_JIT_LOG`, on
  tests/jit/scripts/five_pipelines.daph; and the time from process start to the script's first statement.

Goals (issue "Vectorized pipelines"): reduce >= 3x numpy and >= 0.9x hand llvmlite; map >= 2x numpy; compile
<= 80 ms cold and <= 5 ms cached per pipeline; start executing within 0.5 s cold / 0.2 s cached.

Usage: `.venv/bin/python bench/vec_bench.py [--log2n 25] [--repeat 3]`.
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
"""


def best(times: list[float]) -> float:
    return min(times)


def daphnec(script: str, *args: str, env: dict[str, str] | None = None) -> str:
    with tempfile.NamedTemporaryFile("w", suffix=".daph", delete=False) as f:
        f.write(script)
    try:
        res = subprocess.run(
            [sys.executable, "-m", "daphnec.tools.daphnec", *args, f.name],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env={**os.environ, **(env or {})},
            check=True,
        )
        return res.stdout
    finally:
        os.unlink(f.name)


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


def hand_kernels():
    """The hand-written kernels, compiled and loaded like daphnec's (same target machine, O3)."""
    from daphnec.compiler.jit import compile_llvm_ir, load

    sig = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
    addresses = load("hand-written", compile_llvm_ir(HAND_REDUCE), ["reduce", "readsum"])
    return sig(addresses["reduce"]), sig(addresses["readsum"])


def bench_reduce(n: int, repeat: int) -> dict[str, float]:
    rng = np.random.default_rng(0)
    a, b, c = (rng.random(n) for _ in range(3))
    res = {"numpy": timeit(lambda: np.sum((a - b) ** 2 * c), repeat)}
    reduce, readsum = hand_kernels()
    pa, pb, pc = a.ctypes.data, b.ctypes.data, c.ctypes.data
    res["hand llvmlite"] = timeit(lambda: reduce(n, pa, pb, pc), repeat)
    res["read bandwidth"] = timeit(lambda: readsum(n, pa, pb, pc), repeat)
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
    script = MAP.format(n=n, repeat=repeat)
    res["daphnec --vec"] = best(script_times(daphnec(script, "--vec"), repeat))
    res["daphnec --vec 1 thread"] = best(script_times(daphnec(script, "--vec", "--num-threads=1"), repeat))
    res["daphnec --vec 1 batch"] = best(
        script_times(daphnec(script, "--vec", "--num-threads=1", f"--phy-batch-size={1 << 40}"), repeat)
    )
    res["daphnec (no --vec)"] = best(script_times(daphnec(script), repeat))
    return res


def bench_compile(repeat: int) -> dict[str, object]:
    """Per-pipeline compile/load milliseconds and the time to the first statement, cold and cached."""
    five = (ROOT / "tests" / "jit" / "scripts" / "five_pipelines.daph").read_text()
    first = STARTUP + five
    out: dict[str, list[float]] = {
        "cold ms": [],
        "cached ms": [],
        "start cold s": [],
        "start cached s": [],
        "start no-vec s": [],
    }
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as cache:
            for phase in ("cold", "cached"):
                log = Path(cache) / f"{phase}.log"
                env = {"DAPHNEC_CACHE_DIR": str(Path(cache) / "k"), "DAPHNEC_JIT_LOG": str(log)}
                t0 = time.time_ns()
                stdout = daphnec(first, "--vec", env=env)
                out[f"start {phase} s"].append((int(stdout.split()[0]) - t0) / 1e9)
                out[f"{phase} ms"] += [float(line.split()[2]) for line in log.read_text().splitlines()]
        t0 = time.time_ns()
        stdout = daphnec(first)
        out["start no-vec s"].append((int(stdout.split()[0]) - t0) / 1e9)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log2n", type=int, default=25)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    n = 1 << args.log2n
    print(f"n = 2^{args.log2n} f64 per input, best of {args.repeat}")
    red = bench_reduce(n, args.repeat)
    print("\nreduce sum((a - b) ^ 2 * c)")
    for k, v in red.items():
        print(
            f"  {k:<28} {v * 1000:9.1f} ms   numpy/this {red['numpy'] / v:5.2f}x   hand/this "
            f"{red['hand llvmlite'] / v:5.2f}x   {3 * 8 * n / v / 1e9:5.1f} GB/s"
        )
    mp = bench_map(n, args.repeat)
    print("\nmap o = (a - b) * 3.0 + a * b")
    for k, v in mp.items():
        print(f"  {k:<28} {v * 1000:9.1f} ms   numpy/this {mp['numpy'] / v:5.2f}x")
    comp = bench_compile(args.repeat)
    print("\ncompile latency per pipeline (tests/jit/scripts/five_pipelines.daph)")
    for k in ("cold ms", "cached ms"):
        v = comp[k]
        print(
            f"  {k:<14} median {statistics.median(v):7.1f}   max {max(v):7.1f}   first of a run "
            f"{v[0]:7.1f}   (n={len(v)})"
        )
    for k in ("start no-vec s", "start cold s", "start cached s"):
        print(f"  {k:<14} best {min(comp[k]):6.3f}   median {statistics.median(comp[k]):6.3f}")


if __name__ == "__main__":
    main()
