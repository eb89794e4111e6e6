"""Whole analysis scripts (`bench/algorithms/*.daph`) against numpy doing the same steps, measured in one run.

Scripts: least squares by the normal equations (direct solve, `lm_ds`) and by conjugate gradients (`lm_cg`), PCA,
PageRank, GNMF, multinomial logistic regression, k-means and connected components. The bench generates every
input with numpy (seeded), writes it as DAPHNE binary files (`.dbdf`; the graph as Matrix Market by
`tools/gen_graph.py`) that the scripts read, and runs per workload, in interleaved rounds:

- numpy: the same steps in this process on the same arrays (`NUMPY_STEPS`), best of `--repeat`;
- `daphnec` plain, `daphnec --vec --num-threads=1` and `--num-threads=2`, one process each: the computation alone
  (the script's `now()` difference around the work, after reading the data), the whole process (wall time), its
  peak RSS, and the `--timing` breakdown (start-up, parsing, compilation, execution).

Each daphnec result (written by the script as `.dbdf`) is checked against the numpy result (relative error of the
largest difference; the sums add in other orders, so not bit for bit). Ratios > 1 mean daphnec is faster.

Usage: `.venv/bin/python bench/algorithms_bench.py [--repeat 1] [--scale 1.0] [--only lm_cg,kmeans] [--keep DIR]`.
Goals (issue "speed everywhere"): plain >= 1.0x numpy on every workload; `--vec` never slower than plain; `--vec`
at 2 threads >= 1.5x numpy on the element-wise/aggregation-heavy ones.

`--suite scripts` runs the library-style scripts of `bench/scripts/` instead (`bench/script_steps.py`): each one
imports its algorithm from a module (`import "lib/lm.daph" as "lm";`), reads CSV + `.meta` (graphs: Matrix Market)
and times the call between two `now()`; besides the kernel ratio (numpy doing the same steps on in-memory data /
daphnec; `fresh/x`: the same steps run once in a fresh process of their own, `bench/numpy_fresh.py --script`, best
of the rounds: the treatment daphnec's kernel gets) it reports the whole process (read + compile + compute + write)
against a Python process that reads the same files with pyarrow and computes with numpy (`peer/x` > 1: daphnec's
whole process is faster). The first (untimed) round of each script is also reported as the first-run compile time
(`--timing` parse + compile, cold program cache). Goals (issue "real analysis scripts faster than numpy"): kernel
plain >= 1.0x numpy, `--vec` >= plain, whole process >= 1/1.5 of the peer, first-run compile <= 0.25 s.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from script_steps import Script, measure, scaled_rows  # the sibling module: one record of a benchmarked script

ROOT = Path(__file__).resolve().parents[1]
ALGOS = ROOT / "bench" / "algorithms"
SCRIPTS_DIR = ROOT / "bench" / "scripts"
CONFIGS: dict[str, list[str]] = {
    "plain": [],
    "vec 1T": ["--vec", "--num-threads=1"],
    "vec 2T": ["--vec", "--num-threads=2"],
}


def rotated(configs: dict[str, list[str]], round_: int) -> list[tuple[str, list[str]]]:
    """The configurations in the order of round `round_`: each round starts one later, so no configuration always
    runs right after another. A process started right after another one measured up to 1.4x slower in its BLAS
    kernels (lmDS icpt=1's `syrk`: median 5.2 ms first, 8.5-8.9 ms second, equal minimums), which in a fixed order
    made `vec 2T` always look slower than `plain`."""
    items = list(configs.items())
    k = round_ % len(items) if items else 0
    return items[k:] + items[:k]


def configs_of(before: str, only: str = "") -> dict[str, list[str]]:
    """The daphnec configurations of a run (`only`: comma-separated names of `CONFIGS`, default all); with
    `--before`, also that installation's runs of the same names (interleaved with this one's, so that both see
    the same machine)."""
    chosen = {c: f for c, f in CONFIGS.items() if not only or c in only.split(",")}
    extra = {f"before {c}": f for c, f in chosen.items() if c in (("plain", "vec 2T") if not only else chosen)}
    return {**chosen, **(extra if before else {})}


# ---------------------------------------------------------------------------------------------------------------------
# Data and numpy formulations (the same steps as the scripts)
# ---------------------------------------------------------------------------------------------------------------------


def _regression(rng: np.random.Generator, n: int, d: int) -> dict[str, object]:
    X = rng.random((n, d)) - 0.5
    y = X @ (rng.random((d, 1)) * 4 - 2) + 0.01 * rng.standard_normal((n, 1))
    return {"X": X, "y": y}


def np_lm_ds(X, y):
    A = X.T @ X + np.diag(np.full(X.shape[1], 0.001))
    return np.linalg.solve(A, X.T @ y)


def np_lm_cg(X, y, iters):
    r = -(X.T @ y)
    p = -r
    norm_r2 = np.sum(r**2)
    beta = np.zeros((X.shape[1], 1))
    for _ in range(iters):
        q = X.T @ (X @ p) + 0.001 * p
        alpha = norm_r2 / np.sum(p * q)
        beta = beta + alpha * p
        r = r + alpha * q
        old, norm_r2 = norm_r2, np.sum(r**2)
        p = -r + (norm_r2 / old) * p
    return beta


def np_pca(X, K):
    n = X.shape[0]
    Xc = X - X.mean(axis=0, keepdims=True)
    Xs = Xc / np.sqrt(np.sum(Xc**2, axis=0, keepdims=True) / (n - 1))
    C = (Xs.T @ Xs) / (n - 1)
    vals, vecs = np.linalg.eig(C)
    V = np.real(vecs)[:, np.argsort(-np.real(vals), kind="stable")[:K]]
    return np.sum(np.abs(Xs @ V), axis=0, keepdims=True)


def np_pagerank(G, iters):
    n = G.shape[0]
    M = (G / np.maximum(G.sum(axis=1, keepdims=True), 1.0)).T
    p = np.full((n, 1), 1.0 / n)
    for _ in range(iters):
        p = 0.85 * (M @ p) + 0.15 / n
    return p


def np_gnmf(X, W, H, iters):
    for _ in range(iters):
        H = H * ((W.T @ X) / (((W.T @ W) @ H) + 1e-9))
        W = W * ((X @ H.T) / ((W @ (H @ H.T)) + 1e-9))
    return np.vstack([W.sum(axis=0, keepdims=True), H.sum(axis=1, keepdims=True).T])


def np_multilogreg(X, Y, iters):
    B = np.zeros((X.shape[1], Y.shape[1]))
    for _ in range(iters):
        Z = X @ B
        E = np.exp(Z - Z.max(axis=1, keepdims=True))
        P = E / E.sum(axis=1, keepdims=True)
        B = B - 0.5 * (X.T @ (P - Y) / X.shape[0])
    return B


def np_kmeans(X, C, iters):
    xx = np.sum(X**2, axis=1, keepdims=True)
    for _ in range(iters):
        D = -2.0 * (X @ C.T) + xx + np.sum(C**2, axis=1, keepdims=True).T
        P = (D <= D.min(axis=1, keepdims=True)).astype(np.float64)
        P = P / P.sum(axis=1, keepdims=True)
        C = (P.T @ X) / P.sum(axis=0, keepdims=True).T
    return C


def np_components(G):
    n = G.shape[0]
    c = np.arange(1.0, n + 1).reshape(n, 1)
    H = G.copy()
    while True:
        H.data = G.data * c[G.indices, 0]
        u = np.maximum(H.max(axis=1).toarray().reshape(n, 1), c)
        changed = np.sum(u != c)
        c = u
        if changed == 0:
            return c


def _blobs(rng: np.random.Generator, n: int, d: int, k: int) -> dict[str, object]:
    centres = rng.random((k, d)) * 10
    X = centres[rng.integers(0, k, n)] + rng.standard_normal((n, d))
    return {"X": X, "C": X[rng.choice(n, k, replace=False)].copy()}


def _softmax_data(rng: np.random.Generator, n: int, d: int, k: int) -> dict[str, object]:
    X = rng.standard_normal((n, d))
    labels = np.argmax(X @ rng.standard_normal((d, k)) + rng.standard_normal((n, k)), axis=1)
    return {"X": X, "Y": np.eye(k)[labels]}


def _graph(_rng: np.random.Generator, scale: float) -> dict[str, object]:
    from daphnec.tools.gen_graph import AMAZON_NONZEROS, AMAZON_VERTICES

    return {"G": ("graph", int(AMAZON_VERTICES * scale), int(AMAZON_NONZEROS * scale) // 2 * 2)}


WORKLOADS: dict[str, Script] = {
    "lm_ds": Script("lm_ds.daph", lambda r, s: _regression(r, scaled_rows(200_000, s), 150), np_lm_ds, rtol=1e-8),
    "lm_cg": Script(
        "lm_cg.daph", lambda r, s: _regression(r, scaled_rows(400_000, s), 100), np_lm_cg, {"iters": 20}, rtol=1e-8
    ),
    "pca": Script(
        "pca.daph", lambda r, s: {"X": r.random((scaled_rows(200_000, s), 100))}, np_pca, {"K": 5}, rtol=1e-6
    ),
    "pagerank": Script(
        "pagerank.daph",
        lambda r, s: {
            "G": (r.random((scaled_rows(5000, s**0.5), scaled_rows(5000, s**0.5))) < 0.02).astype(np.float64)
        },
        np_pagerank,
        {"iters": 50},
        rtol=1e-6,
    ),
    "gnmf": Script(
        "gnmf.daph",
        lambda r, s: {
            "X": r.random((scaled_rows(4000, s), 1500)),
            "W": r.random((scaled_rows(4000, s), 30)),
            "H": r.random((30, 1500)),
        },
        np_gnmf,
        {"iters": 20},
        rtol=1e-6,
    ),
    "multilogreg": Script(
        "multilogreg.daph",
        lambda r, s: _softmax_data(r, scaled_rows(200_000, s), 50, 5),
        np_multilogreg,
        {"iters": 30},
        rtol=1e-6,
    ),
    "kmeans": Script(
        "kmeans.daph", lambda r, s: _blobs(r, scaled_rows(500_000, s), 10, 8), np_kmeans, {"iters": 20}, rtol=1e-6
    ),
    "components": Script("components.daph", _graph, np_components, flags=["--select-matrix-repr"], rtol=0.0),
}


# ---------------------------------------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------------------------------------


def write_inputs(data: dict[str, object], folder: Path) -> tuple[dict[str, str], dict[str, object]]:
    """Write every input; returns the script arguments (name -> quoted path) and the arrays numpy gets."""
    from daphnec.runtime.kernels.io import write
    from daphnec.tools.gen_graph import write_graph

    paths, arrays = {}, {}
    for name, value in data.items():
        if isinstance(value, tuple):  # a graph: written by tools/gen_graph.py, read back by scipy for numpy
            import fast_matrix_market as fmm
            import scipy.sparse as sp

            path = folder / f"{name}.mtx"
            write_graph(str(path), value[1], value[2], 42)
            arrays[name] = sp.csr_array(fmm.read_scipy(str(path)))
            arrays[name].data[:] = 1.0
        else:
            path = folder / f"{name}.dbdf"
            write(value, str(path))
            arrays[name] = value
        paths[name] = f'"{path}"'
    return paths, arrays


def measured(cmd: list[str], env: dict[str, str] | None = None) -> tuple[int, str, str, float, float]:
    """Exit code, stdout, stderr, wall seconds and peak RSS (MiB) of `cmd` (a process of its own; `env`: extra
    environment variables)."""
    env = {**os.environ, **env} if env else None
    m = measure(cmd, env, ROOT)
    return m.returncode, m.stdout, m.stderr, m.wall, m.rss_kb / 1024


def run_daphnec(
    flags: list[str], script: Path, args: dict[str, object], python: str = "", env: dict[str, str] | None = None
) -> dict[str, object]:
    """One process (of `python`'s installation, default this one): compute seconds (`t=` line), wall seconds, peak
    RSS (MiB) and the `--timing` JSON."""
    cmd = [python or sys.executable, "-m", "daphnec.tools.daphnec", "--timing", *flags, str(script)]
    cmd += [f"{k}={v}" for k, v in args.items()]
    code, stdout, stderr, wall, rss = measured(cmd, env)
    if code != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({code}):\n{stderr[-2000:]}")
    compute = next(int(x[2:]) / 1e9 for x in stdout.splitlines() if x.startswith("t="))
    timing = next((json.loads(x) for x in stderr.splitlines() if x.startswith('{"startup_seconds"')), {})
    return {"compute": compute, "wall": wall, "rss": rss, "timing": timing}


def rel_error(got: np.ndarray, want: np.ndarray) -> float:
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        return float("inf")
    scale = max(float(np.max(np.abs(want))), 1e-300)
    return float(np.max(np.abs(got - want))) / scale


def bench_workload(
    name: str, wl: Script, scale: float, repeat: int, folder: Path, before: str = "", only: str = ""
) -> dict[str, object]:
    from daphnec.runtime.kernels.io import read_matrix

    rng = np.random.default_rng(abs(hash(name)) % (1 << 32))
    paths, arrays = write_inputs(wl.make(rng, scale), folder)
    out = folder / f"{name}.out.dbdf"
    args = {**paths, **wl.args, "out": f'"{out}"'}
    configs = configs_of(before, only)
    res: dict[str, object] = {"numpy": [], **{c: [] for c in configs}}
    want = wl.numpy(**arrays, **wl.args)  # warm-up (BLAS threads); every config runs once untimed as well
    failed: dict[str, str] = {}
    for round_ in range(repeat + 1):
        if round_:
            t0 = time.perf_counter()
            want = wl.numpy(**arrays, **wl.args)
            res["numpy"].append(time.perf_counter() - t0)
        for cfg, flags in rotated(configs, round_):
            if cfg in failed:
                continue
            try:
                python = before if cfg.startswith("before") else ""
                run = run_daphnec(wl.flags + flags, ALGOS / wl.script, args, python)
            except RuntimeError as e:
                failed[cfg] = str(e).splitlines()[-1].replace(f"{ROOT}/", "")
                res[cfg] = [{"failed": failed[cfg]}]
                continue
            run["error"] = rel_error(read_matrix(str(out), vt="f64"), want)
            if round_:  # round 0 fills the kernel and program caches: the timed rounds are cached runs
                res[cfg].append(run)
    return res


def write_script_inputs(data: dict[str, object], folder: Path) -> tuple[dict[str, str], dict[str, object]]:
    """The library scripts' inputs as CSV + `.meta` (graphs as Matrix Market); numpy gets the values read back (CSV
    holds 6 decimals)."""
    from daphnec.runtime.kernels.io import read_matrix, write

    csv = {k: v for k, v in data.items() if not isinstance(v, tuple)}
    paths, arrays = write_inputs({k: v for k, v in data.items() if isinstance(v, tuple)}, folder)
    for name, value in csv.items():
        path = folder / f"{name}.csv"
        write(value, str(path))
        arrays[name] = read_matrix(str(path), vt="f64")
        paths[name] = f'"{path}"'
    return paths, arrays


def bench_script(
    name: str, sc, scale: float, repeat: int, folder: Path, configs: dict[str, list[str]], before: str = ""
) -> dict[str, object]:
    """One library-style script: numpy in-process, each daphnec configuration (`before ...`: of the installation
    whose python is `before`) and the pyarrow + numpy peer process, in interleaved rounds; round 0 (untimed) runs
    with nothing cached and gives the cold compile time."""
    from daphnec.runtime.kernels.io import read_matrix

    rng = np.random.default_rng(sum(name.encode()))
    paths, arrays = write_script_inputs(sc.make(rng, scale), folder)
    out = folder / "out.dbdf"
    args = {**paths, **{k: str(v).lower() if isinstance(v, bool) else v for k, v in sc.args.items()}, "out": f'"{out}"'}
    peer_out = folder / "peer.npy"
    peer_cmd = [sys.executable, str(ROOT / "bench" / "script_steps.py"), name, str(peer_out)]
    peer_cmd += [f"{k}={v.strip(chr(34)) if isinstance(v, str) else v}" for k, v in {**paths, **sc.args}.items()]
    fresh_cmd = [sys.executable, str(ROOT / "bench" / "numpy_fresh.py"), "--script", name, *peer_cmd[4:]]
    res: dict[str, object] = {
        "numpy": [],
        "numpy fresh": [],
        "peer": [],
        "first compile": {},
        **{c: [] for c in configs},
    }
    cold = {"DAPHNEC_CACHE_DIR": str(folder / "cold-cache")}  # round 0: nothing cached (kernels, programs)
    want = sc.numpy(**arrays, **sc.args)
    for round_ in range(repeat + 1):
        if round_:
            t0 = time.perf_counter()
            want = sc.numpy(**arrays, **sc.args)
            res["numpy"].append(time.perf_counter() - t0)
            code, _, err, wall, _ = measured(peer_cmd)
            if code != 0:
                raise RuntimeError(f"peer failed: {err[-2000:]}")
            res["peer"].append({"wall": wall, "error": rel_error(np.load(peer_out), want)})
            code, ms, err, _, _ = measured(fresh_cmd)
            if code != 0:
                raise RuntimeError(f"numpy_fresh.py failed: {err[-2000:]}")
            res["numpy fresh"].append(float(ms.split()[-1]) / 1e3)
        for cfg, flags in rotated(configs, round_):
            if round_ and res[cfg] and "failed" in res[cfg][0]:
                continue
            py = before if cfg.startswith("before") else ""
            try:
                run = run_daphnec(sc.flags + flags, SCRIPTS_DIR / sc.script, args, py, None if round_ else cold)
                if round_ == 1:  # a program-cache miss (one more, unused, argument) with the kernels cached
                    nonce = {**args, "nonce": time.time_ns()}
                    first = run_daphnec(sc.flags + flags, SCRIPTS_DIR / sc.script, nonce, py)
                    t = first["timing"]
                    res["first compile"][cfg] = (
                        res["first compile"][cfg],
                        t.get("parsing_seconds", 0) + t.get("compilation_seconds", 0),
                    )
            except RuntimeError as e:
                res[cfg] = [{"failed": str(e).splitlines()[-1].replace(f"{ROOT}/", "")}]
                continue
            run["error"] = rel_error(read_matrix(str(out), vt="f64"), want)
            if round_:
                res[cfg].append(run)
            else:
                t = run["timing"]
                res["first compile"][cfg] = t.get("parsing_seconds", 0) + t.get("compilation_seconds", 0)
                for cache in folder.glob("cold-cache*"):
                    shutil.rmtree(cache, ignore_errors=True)
                run_daphnec(sc.flags + flags, SCRIPTS_DIR / sc.script, args, py)  # fills this user's caches
    return res


def _compiles(first: object) -> str:
    """`cold / new-program` compile seconds of the first runs."""
    if not isinstance(first, tuple):
        return "?"
    return f"{first[0]:4.2f} / {first[1]:4.2f}"


def summarise_script(name: str, res: dict[str, object], rtol: float) -> list[str]:
    np_s = min(res["numpy"])
    fresh = min(res.get("numpy fresh", []), default=np.nan)
    peer = min(r["wall"] for r in res["peer"])
    plain = min((r.get("compute", np.inf) for r in res.get("plain", [])), default=np.inf)
    lines = []
    for cfg in (c for c in res if c not in ("numpy", "numpy fresh", "peer", "first compile")):
        if not res[cfg] or "failed" in res[cfg][0]:
            lines.append(f"| {name} | {cfg} | failed: {res[cfg][0]['failed'] if res[cfg] else '?'} | | | | | | | |")
            continue
        best = min(res[cfg], key=lambda r: r["compute"])
        walls = min(r["wall"] for r in res[cfg])
        t = best["timing"]
        err = max(r["error"] for r in res[cfg])
        ok = "ok" if err <= max(rtol, 1e-12) else "WRONG"
        lines.append(
            f"| {name} | {cfg} | {best['compute'] * 1e3:8.1f} | {np_s / best['compute']:5.2f}x | "
            f"{fresh / best['compute']:5.2f}x | {plain / best['compute']:5.2f}x | {walls:5.2f} | "
            f"{peer / walls:5.2f}x | "
            f"{_compiles(res['first compile'].get(cfg))} / "
            f"{t.get('compilation_seconds', 0) + t.get('parsing_seconds', 0):4.2f} | {err:.1e} {ok} |"
        )
    perr = max(r["error"] for r in res["peer"])
    lines.append(
        f"| {name} | numpy / peer | {np_s * 1e3:8.1f} | 1.00x | {fresh / np_s:5.2f}x | | {peer:5.2f} | 1.00x | "
        f"| {perr:.1e} |"
    )
    return lines


def summarise(name: str, res: dict[str, object], rtol: float) -> list[str]:
    np_s = min(res["numpy"])
    lines = []
    plain = min((r.get("compute", np.inf) for r in res.get("plain", [])), default=np.inf)
    for cfg in (c for c in res if c != "numpy"):
        if "failed" in res[cfg][0]:
            lines.append(f"| {name} | {cfg} | failed: {res[cfg][0]['failed']} | | | | | | | | |")
            continue
        best = min(res[cfg], key=lambda r: r["compute"])
        t = best["timing"]
        err = max(r["error"] for r in res[cfg])
        ok = "ok" if err <= max(rtol, 1e-12) else "WRONG"
        lines.append(
            f"| {name} | {cfg} | {best['compute'] * 1e3:9.1f} | {np_s / best['compute']:5.2f}x | "
            f"{plain / best['compute']:5.2f}x | {best['wall']:6.2f} | {t.get('startup_seconds', 0):5.2f} | "
            f"{t.get('compilation_seconds', 0) + t.get('parsing_seconds', 0):5.2f} | "
            f"{t.get('execution_seconds', 0):6.2f} | {best['rss']:7.0f} | {err:.1e} {ok} |"
        )
    lines.append(f"| {name} | numpy | {np_s * 1e3:9.1f} | 1.00x | {plain / np_s:5.2f}x | | | | | | |")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--scale", type=float, default=1.0, help="multiply the data sizes (rows; graph vertices)")
    ap.add_argument("--only", default="", help="comma-separated workload names")
    ap.add_argument("--keep", default="", help="folder for the data (kept); default: a temporary folder")
    ap.add_argument("--json", default="", help="also write the raw measurements to this file")
    ap.add_argument("--before", default="", help="another installation's python: its plain and 2-thread runs too")
    ap.add_argument("--configs", default="", help="comma-separated configurations (plain, vec 1T, vec 2T); default all")
    ap.add_argument(
        "--suite",
        choices=("classic", "scripts"),
        default="classic",
        help="classic: bench/algorithms/*.daph on .dbdf; scripts: the library-style bench/scripts/",
    )
    a = ap.parse_args()
    if a.suite == "scripts":
        return main_scripts(a)
    names = [n for n in (a.only.split(",") if a.only else WORKLOADS) if n]
    folder = Path(a.keep or tempfile.mkdtemp(prefix="daphnec-algos-"))
    folder.mkdir(parents=True, exist_ok=True)
    print(f"scale {a.scale}, best of {a.repeat}; times: computation (now() around the work); numpy/x > 1: x faster")
    print(
        "| workload | run | compute ms | numpy/x | plain/x | whole s | startup s | parse+compile s | exec s "
        "| peak RSS MiB | max rel err |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    raw = {}
    try:
        for name in names:
            wl = WORKLOADS[name]
            raw[name] = bench_workload(name, wl, a.scale, a.repeat, folder, a.before, a.configs)
            print("\n".join(summarise(name, raw[name], wl.rtol)), flush=True)
    finally:
        if not a.keep:
            shutil.rmtree(folder, ignore_errors=True)
    if a.json:
        Path(a.json).write_text(json.dumps(raw, indent=1))


def main_scripts(a: argparse.Namespace) -> None:
    from script_steps import SCRIPTS

    names = [n for n in (a.only.split(",") if a.only else SCRIPTS) if n]
    configs = configs_of(a.before, a.configs)
    print(f"scale {a.scale}, best of {a.repeat}; kernel = now() around the call; numpy/x, peer/x > 1: daphnec faster")
    print(
        "| script | run | kernel ms | numpy/x | fresh/x | plain/x | whole s | peer/x | compile s cold / new / cached "
        "| max rel err |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---|---|")
    raw = {}
    for name in names:
        folder = Path(a.keep or tempfile.mkdtemp(prefix="daphnec-scripts-"))
        folder.mkdir(parents=True, exist_ok=True)
        try:
            raw[name] = bench_script(name, SCRIPTS[name], a.scale, a.repeat, folder, configs, a.before)
            print("\n".join(summarise_script(name, raw[name], SCRIPTS[name].rtol)), flush=True)
        finally:
            if not a.keep:
                shutil.rmtree(folder, ignore_errors=True)
    if a.json:
        Path(a.json).write_text(json.dumps(raw, indent=1))


if __name__ == "__main__":
    main()
