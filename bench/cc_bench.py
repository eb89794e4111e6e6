"""Connected components by label propagation, per iteration, on the amazon-sized graph: daphnec against scipy,
numba and Apache SystemDS, measured in one run (issue "connected components" benchmark).

    .venv/bin/python bench/cc_bench.py [--repeat 3] [--no-systemds] [--systemds-dir DIR] [--keep DIR] [--scale 10]

Every engine runs `c = max(rowmax(G * t(c)), c)` from `c = 1..n` until no label changes, on the same Matrix Market
file (`tools/gen_graph.py`: 403,394 vertices, 3,387,388 stored non-zeros, pattern symmetric), written into a temp
folder. Per-iteration time = kernel time / iterations; every engine must report the same iteration and component
counts. Kernel times:

- daphnec: `bench/cc_bench.daph`, `now()` around the loop (graph read excluded), best of `--repeat` processes,
  and each configuration's peak RSS against the CSR size (`--scale 10`: the 10x graph of the scale goal);
- scipy / numba: in-process, the graph read once by scipy (fast_matrix_market), best of `--repeat` loops (numba
  compiled before timing);
- SystemDS: its peer folder (`../shared/peers/systemds`, read-only) is copied to the temp folder, its `setup.sh`
  run there, and `run_peer.sh cc_mm` run with `METRIC=kernel` on our graph file (in-script `time()` around the
  loop, a cold JVM: what its README reports), plus one JVM that runs the loop `--repeat` times (warm: best of the
  later runs).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DAPHNEC = ROOT / ".venv" / "bin" / "daphnec"
SCRIPT = ROOT / "bench" / "cc_bench.daph"
PEER = ROOT.parent / "shared" / "peers" / "systemds"


# -- daphnec -----------------------------------------------------------------------------------------------------------


#: configuration -> the largest peak RSS (MiB) of its daphnec processes
PEAK_RSS: dict[str, float] = {}


def daphnec(graph: Path, flags: list[str], name: str = "") -> tuple[float, int, int]:
    """(kernel seconds, iterations, components) of one daphnec process; its peak RSS goes to `PEAK_RSS[name]`."""
    from algorithms_bench import measured  # a sibling script: the launcher that measures a process's peak RSS

    cmd = [str(DAPHNEC), *flags, str(SCRIPT), f'f="{graph}"']
    code, stdout, stderr, _, rss = measured(cmd)
    if code != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {stderr.strip()[-300:]}")
    PEAK_RSS[name] = max(PEAK_RSS.get(name, 0.0), rss)
    sec, it, comp = stdout.split()
    return float(sec), int(it), int(comp)


# -- scipy and numba ---------------------------------------------------------------------------------------------------


def load_csr(graph: Path):
    import fast_matrix_market as fmm
    import scipy.sparse as sp

    G = sp.csr_array(fmm.mmread(str(graph)))
    G.sum_duplicates()
    return G


def cc_scipy_multiply(G) -> tuple[float, int, int]:
    """The literal formulation: `max(rowMaxs(G * t(c)), c)` with scipy.sparse operations."""
    n = G.shape[0]
    c = np.arange(1.0, n + 1.0)
    t0 = time.perf_counter()
    diff, it = 1, 0
    while diff > 0:
        u = np.maximum(G.multiply(c[None, :]).max(axis=1).toarray().ravel(), c)
        diff = int(np.count_nonzero(u != c))
        c, it = u, it + 1
    return time.perf_counter() - t0, it, int(np.count_nonzero(c == np.arange(1.0, n + 1.0)))


def cc_scipy_data(G) -> tuple[float, int, int]:
    """The fastest few-line scipy form: `G .* t(c)` as a copy of G with data = data * c[indices], then scipy's
    row max (the implicit zeros never win: labels are >= 1)."""
    n = G.shape[0]
    c = np.arange(1.0, n + 1.0)
    H = G.copy()
    t0 = time.perf_counter()
    diff, it = 1, 0
    while diff > 0:
        np.multiply(G.data, c[G.indices], out=H.data)
        u = np.maximum(H.max(axis=1).toarray().ravel(), c)
        diff = int(np.count_nonzero(u != c))
        c, it = u, it + 1
    return time.perf_counter() - t0, it, int(np.count_nonzero(c == np.arange(1.0, n + 1.0)))


def numba_kernel(parallel: bool = False):
    from numba import njit, prange

    rows = prange if parallel else range

    @njit(cache=False, nogil=True, parallel=parallel)
    def step(indptr, indices, c, u):  # pragma: no cover - compiled
        diff = 0
        for i in rows(c.shape[0]):
            m = c[i]
            for k in range(indptr[i], indptr[i + 1]):
                x = c[indices[k]]
                if x > m:
                    m = x
            u[i] = m
            if m != c[i]:
                diff += 1
        return diff

    return step


def cc_numba(G, step) -> tuple[float, int, int]:
    """Hand-written CSR kernel: per row, the max over c[indices] and the own label (G's values are all 1)."""
    n = G.shape[0]
    c = np.arange(1.0, n + 1.0)
    u = np.empty_like(c)
    t0 = time.perf_counter()
    diff, it = 1, 0
    while diff > 0:
        diff = step(G.indptr, G.indices, c, u)
        c, u = u, c
        it += 1
    return time.perf_counter() - t0, it, int(np.count_nonzero(c == np.arange(1.0, n + 1.0)))


# -- SystemDS ----------------------------------------------------------------------------------------------------------


def systemds_setup(tmp: Path, peer: Path, reuse: Path | None) -> Path:
    """A writable copy of the peer folder with its venv (reused from `reuse` if that copy already has one)."""
    if reuse is not None and (reuse / "venv" / "bin" / "python").exists():
        return reuse
    dst = tmp / "systemds"
    shutil.copytree(peer, dst)
    for p in [dst, *dst.rglob("*")]:
        p.chmod(p.stat().st_mode | 0o200)
    res = subprocess.run(["./setup.sh"], cwd=dst, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise RuntimeError(f"SystemDS setup.sh failed: {res.stderr.strip()[-500:]}")
    return dst


def systemds_cold(sysds: Path, graph: Path, reps: int, threads: int | None) -> list[tuple[float, int, int]]:
    """`METRIC=kernel ./run_peer.sh <reps> cc_mm` on our graph (one cold JVM per repetition)."""
    data = sysds / "data"
    data.mkdir(exist_ok=True)
    link = data / "graph.mtx"
    if link.exists() or link.is_symlink():
        link.unlink()
    link.symlink_to(graph)
    env = dict(os.environ, METRIC="kernel")
    if threads:
        env["THREADS"] = str(threads)
    res = subprocess.run(
        ["./run_peer.sh", str(reps), "cc_mm"], cwd=sysds, env=env, capture_output=True, text=True, check=False
    )
    if "FAIL" in res.stdout or res.returncode != 0:
        raise RuntimeError(f"run_peer.sh cc_mm failed: {res.stdout.strip()} {res.stderr.strip()[-300:]}")
    out = []
    for i in range(1, reps + 1):
        out.append(_sysds_runs((sysds / "logs" / f"cc_mm.{i}.log").read_text())[0])
    return out


def systemds_warm(sysds: Path, graph: Path, reps: int, threads: int | None) -> list[tuple[float, int, int]]:
    """One JVM running the loop `reps` times (`cc_mm.dml reps=`), the same java command as run_peer.sh."""
    sp_dir = next((sysds / "venv" / "lib").glob("python3*/site-packages/systemds"))
    cmd = [
        "java",
        "--add-modules=jdk.incubator.vector",
        "-Xmx8g",
        "-Xms8g",
        f"-Dlog4j.configuration=file:{sp_dir}/conf/log4j.properties",
    ]
    if threads:
        cmd.append(f"-XX:ActiveProcessorCount={threads}")
    cmd += [
        "-cp",
        f"{sp_dir}/SystemDS.jar:{sp_dir}/lib/*",
        "org.apache.sysds.api.DMLScript",
        "-f",
        "cc_mm.dml",
        "-exec",
        "singlenode",
        "-config",
        str(sysds / "sysds-config.xml"),
        "-nvargs",
        f"G={graph}",
        f"reps={reps}",
    ]
    res = subprocess.run(cmd, cwd=sysds / "dml", capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise RuntimeError(f"SystemDS warm run failed: {res.stderr.strip()[-300:]}")
    return _sysds_runs(res.stdout)


def _sysds_runs(log: str) -> list[tuple[float, int, int]]:
    its = re.findall(r"iters = (\d+), components = ([\d.]+)", log)
    ms = re.findall(r"^KERNEL_MS ([\d.eE+-]+)", log, re.M)
    return [(float(m) / 1e3, int(i), int(float(c))) for m, (i, c) in zip(ms, its)]


# -- main --------------------------------------------------------------------------------------------------------------


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-systemds", action="store_true")
    ap.add_argument("--systemds-dir", type=Path, default=PEER, help="the read-only peer folder")
    ap.add_argument(
        "--systemds-reuse",
        type=Path,
        default=None,
        help="a writable copy of the peer folder whose setup.sh already ran (skips pip)",
    )
    ap.add_argument("--keep", type=Path, default=None, help="work in this folder (kept) instead of a temp folder")
    ap.add_argument("--scale", type=int, default=1, help="vertices and non-zeros x this (10: 4.0 M / 33.9 M)")
    args = ap.parse_args()

    tmp_ctx = None
    if args.keep is None:
        tmp_ctx = tempfile.TemporaryDirectory(prefix="cc_bench_")
        tmp = Path(tmp_ctx.name)
    else:
        tmp = args.keep
        tmp.mkdir(parents=True, exist_ok=True)
    graph = tmp / ("amazon.mtx" if args.scale == 1 else f"amazon_x{args.scale}.mtx")
    if not graph.exists():
        from daphnec.tools.gen_graph import AMAZON_NONZEROS, AMAZON_VERTICES

        size = [f"--vertices={AMAZON_VERTICES * args.scale}", f"--edges={AMAZON_NONZEROS * args.scale}"]
        subprocess.run(
            [sys.executable, "-m", "daphnec.tools.gen_graph", str(graph), *size],
            cwd=ROOT,
            check=True,
            stdout=subprocess.DEVNULL,
        )

    results: dict[str, list[tuple[float, int, int]]] = {}
    notes: dict[str, str] = {}
    configs = {
        "daphnec --vec --select-matrix-repr, 1 thread": ["--vec", "--select-matrix-repr", "--num-threads=1"],
        "daphnec --vec --select-matrix-repr, 2 threads": ["--vec", "--select-matrix-repr", "--num-threads=2"],
        "daphnec --select-matrix-repr (no --vec)": ["--select-matrix-repr"],
    }
    for _ in range(args.repeat):  # interleaved: load changes hit every engine alike
        for name, flags in configs.items():
            results.setdefault(name, []).append(daphnec(graph, flags, name))

    G = load_csr(graph)
    from numba import set_num_threads

    step, pstep = numba_kernel(), numba_kernel(parallel=True)
    cc_numba(G, step)  # compile
    cc_numba(G, pstep)
    for _ in range(args.repeat):
        results.setdefault("scipy G.multiply(c^T).max(axis=1)", []).append(cc_scipy_multiply(G))
        results.setdefault("scipy G.data * c[G.indices], H.max(axis=1)", []).append(cc_scipy_data(G))
        results.setdefault("numba @njit CSR kernel (1 thread)", []).append(cc_numba(G, step))
        set_num_threads(2)
        results.setdefault("numba @njit(parallel) prange kernel, 2 threads", []).append(cc_numba(G, pstep))
        set_num_threads(1)

    if not args.no_systemds:
        try:
            sysds = systemds_setup(tmp, args.systemds_dir, args.systemds_reuse)
            for threads in (None, 1):
                label = "2 threads" if threads is None else "1 thread"
                results[f"SystemDS 3.4.0 cc_mm, {label}, cold JVM (METRIC=kernel)"] = systemds_cold(
                    sysds, graph, args.repeat, threads
                )
                warm = systemds_warm(sysds, graph, args.repeat + 1, threads)
                results[f"SystemDS 3.4.0 cc_mm, {label}, warm (best of later runs in one JVM)"] = warm[1:]
        except Exception as e:  # noqa: BLE001 - report why, keep the other numbers
            notes["SystemDS"] = f"could not run: {e}"

    counts = {(it, comp) for runs in results.values() for _, it, comp in runs}
    per_iter = {name: min(s / it for s, it, _ in runs) * 1e3 for name, runs in results.items()}
    vec1 = per_iter["daphnec --vec --select-matrix-repr, 1 thread"]
    best_d = min(per_iter[k] for k in configs if "--vec" in k)
    scipy_best = min(v for k, v in per_iter.items() if k.startswith("scipy"))
    numba = per_iter["numba @njit CSR kernel (1 thread)"]
    n, nnz = G.shape[0], G.nnz
    print(f"graph: {n:,} vertices, {nnz:,} stored non-zeros; iterations/components seen: {sorted(counts)}")
    print(f"per-iteration ms, best of {args.repeat}; ratio = this / daphnec --vec 1 thread (> 1: daphnec faster)\n")
    print("| engine | ms / iteration | this / daphnec --vec (1 thread) |")
    print("|---|---:|---:|")
    for name, ms in per_iter.items():
        print(f"| {name} | {ms:.1f} | {ms / vec1:.2f}x |")
    for k, v in notes.items():
        print(f"| {k} | {v} | |")
    csr_mib = (G.data.nbytes + G.indices.nbytes + G.indptr.nbytes) / 2**20
    print(
        f"\nCSR size {csr_mib:.0f} MiB; ns per stored non-zero and iteration: daphnec --vec 2 threads "
        f"{per_iter['daphnec --vec --select-matrix-repr, 2 threads'] * 1e6 / nnz:.1f}, numba 1 thread "
        f"{numba * 1e6 / nnz:.1f}"
    )
    for name, rss in PEAK_RSS.items():
        print(f"peak RSS {name}: {rss:.0f} MiB = {rss / csr_mib:.2f}x the CSR size (goal <= 2.5x)")
    print()
    print(f"best daphnec --vec: {best_d:.1f} ms/iteration")
    print(
        f"goal >= 3x faster than scipy (best scipy form): {scipy_best / best_d:.2f}x "
        f"({'met' if scipy_best / best_d >= 3 else 'NOT met'})"
    )
    print(
        f"goal within 1.2x of numba, 1 thread: daphnec / numba = {vec1 / numba:.2f}x "
        f"({'met' if vec1 / numba <= 1.2 else 'NOT met'})"
    )
    vec2 = per_iter["daphnec --vec --select-matrix-repr, 2 threads"]
    numba2 = per_iter["numba @njit(parallel) prange kernel, 2 threads"]
    print(
        f"              2 threads: daphnec / numba prange = {vec2 / numba2:.2f}x "
        f"({'met' if vec2 / numba2 <= 1.2 else 'NOT met'})"
    )
    sysds = [v for k, v in per_iter.items() if k.startswith("SystemDS")]
    if sysds:
        print(
            f"goal faster than SystemDS (its best row): SystemDS / daphnec = {min(sysds) / best_d:.2f}x "
            f"({'met' if min(sysds) > best_d else 'NOT met'})"
        )
    if len(counts) != 1:
        print("WARNING: engines disagree on iterations/components")
        return 1
    if tmp_ctx is not None:
        tmp_ctx.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
