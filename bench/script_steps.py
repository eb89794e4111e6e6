"""The library-style scripts of `bench/scripts/` (imported modules, CSV + `.meta` inputs) as numpy steps, and the
whole-process peer: a Python process that reads the same files with pyarrow, does the same steps with numpy and
writes the result (`python bench/script_steps.py NAME OUT key=value ...`).

Every function below mirrors its DaphneDSL script operation by operation (same formulas, same order of the
products), so that the kernel ratio compares execution, not algorithms. Inputs are generated here too (`make`),
seeded, at sizes scaled by the bench's `--scale`.
"""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

# ---------------------------------------------------------------------------------------------------------------------
# One measured process (bench/algorithms_bench.py, bench/compile_bench.py)
# ---------------------------------------------------------------------------------------------------------------------

#: Forks and execs the measured command from a small process, so that `wait4`'s CPU time and peak RSS are the
#: child's alone: Linux charges a process that `exec`s the peak RSS of the memory it had before, so a child forked
#: from a big bench process would start at the bench's size.
MEASURE = """import os, sys, time
t0 = time.perf_counter()
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
sys.stderr.write(f"\\nMEASURED {time.perf_counter() - t0} {usage.ru_maxrss} {usage.ru_utime + usage.ru_stime}\\n")
sys.exit(os.waitstatus_to_exitcode(status))
"""


@dataclass
class Measured:
    """A measured process: exit code, stdout, stderr (without the measurement line), wall seconds, peak RSS (KiB)
    and CPU seconds (user + system; NaN when the process did not report)."""

    returncode: int
    stdout: str
    stderr: str
    wall: float
    rss_kb: float
    cpu: float


def measure(cmd: list[str], env: dict[str, str] | None = None, cwd: object = None) -> Measured:
    """Run `cmd` as a process of its own and measure it (`MEASURE`)."""
    res = subprocess.run([sys.executable, "-c", MEASURE, *cmd], capture_output=True, text=True, env=env, cwd=cwd)
    head, _, tail = res.stderr.rpartition("\nMEASURED ")
    wall, rss_kb, cpu = (float(x) for x in tail.split()[:3]) if tail else (math.nan,) * 3
    return Measured(res.returncode, res.stdout, head if tail else res.stderr, wall, rss_kb, cpu)


# ---------------------------------------------------------------------------------------------------------------------
# numpy steps (one per script)
# ---------------------------------------------------------------------------------------------------------------------


def _prepare_design(X, icpt):
    m = X.shape[1]
    scale, shift = np.ones((1, m)), np.zeros((1, m))
    if icpt == 2:
        avg = X.mean(axis=0, keepdims=True)
        sd = X.std(axis=0, keepdims=True)
        scale = 1.0 / np.maximum(sd, 1e-12)
        shift = -avg * scale
        X = X * scale + shift
    if icpt > 0:
        X = np.hstack([X, np.ones((X.shape[0], 1))])
    return X, scale, shift


def _restore_beta(beta, scale, shift, icpt):
    if icpt == 2:
        m = scale.shape[1]
        bf = beta[:m]
        b0 = beta[m, 0] + np.sum(shift.T * bf)
        beta = np.vstack([scale.T * bf, [[b0]]])
    return beta


def lm_ds(X, y, icpt):
    Xd, scale, shift = _prepare_design(X, icpt)
    A = Xd.T @ Xd + np.diag(np.full(Xd.shape[1], 0.001))
    beta = np.linalg.solve(A, Xd.T @ y)
    return _restore_beta(beta, scale, shift, icpt)


def lm_cg(X, y, icpt, maxi):
    Xd, scale, shift = _prepare_design(X, icpt)
    beta = np.zeros((Xd.shape[1], 1))
    r = -(Xd.T @ y)
    p = -r
    norm_r2 = np.sum(r**2)
    target = norm_r2 * 1e-9 * 1e-9
    i = 0
    while i < maxi and norm_r2 > target:
        q = Xd.T @ (Xd @ p) + 0.001 * p
        alpha = norm_r2 / np.sum(p * q)
        beta = beta + alpha * p
        r = r + alpha * q
        old, norm_r2 = norm_r2, np.sum(r**2)
        p = -r + (norm_r2 / old) * p
        i += 1
    return _restore_beta(beta, scale, shift, icpt)


def pca(X, K, scale):
    n = X.shape[0]
    X = X - X.mean(axis=0, keepdims=True)
    if scale:
        X = X / np.maximum(X.std(axis=0, keepdims=True), 1e-12)
    C = (X.T @ X) / (n - 1)
    vals, vecs = np.linalg.eig(C)
    V = np.real(vecs)[:, np.argsort(-np.real(vals), kind="stable")[:K]]
    return np.sum(np.abs(X @ V), axis=0, keepdims=True)


def pagerank(G, maxi):
    n = G.shape[0]
    w = 1.0 / np.maximum(np.asarray(G.sum(axis=1)).reshape(n, 1), 1.0)
    p = np.full((n, 1), 1.0 / n)
    i, delta = 0, 1.0 + 1e-12
    while i < maxi and delta > 1e-12:
        q = 0.85 * (G.T @ (w * p)) + 0.15 / n  # scipy's G.T is a CSC view: no copy
        delta = np.sum(np.abs(q - p))
        p = q
        i += 1
    return p


def components(G):
    n = G.shape[0]
    c = np.arange(1.0, n + 1).reshape(n, 1)
    H = G.copy()
    for _ in range(1000):
        H.data = G.data * c[G.indices, 0]
        u = np.maximum(H.max(axis=1).toarray().reshape(n, 1), c)
        changed = np.sum(u != c)
        c = u
        if changed == 0:
            break
    return c


def gnmf(X, W, H, maxi):
    for _ in range(maxi):
        H = H * ((W.T @ X) / ((W.T @ W) @ H + 1e-9))
        W = W * ((X @ H.T) / (W @ (H @ H.T) + 1e-9))
    return np.vstack([W.sum(axis=0, keepdims=True), H.sum(axis=1, keepdims=True).T])


def multilogreg(X, y, k, maxi):
    n = X.shape[0]
    X = np.hstack([X, np.ones((n, 1))])
    Y = (y == np.arange(1.0, k + 1).reshape(1, k)).astype(np.float64)
    B = np.zeros((X.shape[1], k))
    for _ in range(maxi):
        Z = X @ B
        E = np.exp(Z - Z.max(axis=1, keepdims=True))
        P = E / E.sum(axis=1, keepdims=True)
        G = X.T @ (P - Y) / n + 0.0001 * B
        B = B - 0.5 * G
    return B


def _decision_tree(X, y, w, fmask, depth, min_leaf, nbins):
    m = X.shape[1]
    M = np.zeros((2 ** (depth + 1) - 1, 3))
    nid = np.ones((X.shape[0], 1))
    thr = np.arange(0.0, nbins - 1).reshape(1, nbins - 1)
    for d in range(depth + 1):
        for node in range(2**d, 2 ** (d + 1)):
            in_node = (nid == node) * w
            cnt = np.sum(in_node)
            if cnt > 0.0:
                wy = in_node * y
                s = np.sum(wy)
                M[node - 1, 2] = s / cnt
                if d < depth and cnt >= 2.0 * min_leaf:
                    base = s * s / cnt
                    best, best_f, best_t = 0.0, 0, 0.0
                    for j in range(1, m + 1):
                        if fmask[0, j - 1] > 0.0:
                            L = (X[:, j - 1 : j] <= thr).astype(np.float64)
                            cL = in_node.T @ L
                            sL = wy.T @ L
                            cR, sR = cnt - cL, s - sL
                            ok = (cL >= min_leaf) * (cR >= min_leaf)
                            gain = ok * (sL**2 / np.maximum(cL, 1e-12) + sR**2 / np.maximum(cR, 1e-12) - base)
                            g = np.max(gain)
                            if g > best:
                                best, best_f, best_t = g, j, float(np.argmax(gain[0]))
                    if best_f > 0:
                        M[node - 1, 0], M[node - 1, 1] = best_f, best_t
                        nid = nid + (nid == node) * (node + (X[:, best_f - 1 : best_f] > best_t))
    return M


def _tree_predict(X, M, depth):
    nid = np.ones((X.shape[0], 1))
    for d in range(depth):
        for node in range(2**d, 2 ** (d + 1)):
            f = int(M[node - 1, 0])
            if f > 0:
                nid = nid + (nid == node) * (node + (X[:, f - 1 : f] > M[node - 1, 1]))
    pred = np.zeros((X.shape[0], 1))
    for node in range(1, M.shape[0] + 1):
        pred = pred + (nid == node) * M[node - 1, 2]
    return pred


def decision_tree(X, y, depth, nbins):
    M = _decision_tree(X, y, np.ones((X.shape[0], 1)), np.ones((1, X.shape[1])), depth, 10.0, nbins)
    return _tree_predict(X, M, depth)


def random_forest(X, y, W, F, depth, nbins):
    pred = np.zeros((X.shape[0], 1))
    models = [_decision_tree(X, y, W[:, i : i + 1], F[i : i + 1], depth, 10.0, nbins) for i in range(W.shape[1])]
    for M in models:
        pred = pred + _tree_predict(X, M, depth)
    return pred / len(models)


def rdp(P, eps):
    n = P.shape[0]
    keep = np.zeros((n, 1))
    keep[0, 0] = keep[n - 1, 0] = 1.0
    stack = [(0, n - 1)]
    while stack:
        a, b = stack.pop()
        if b - a > 1:
            ax, ay = P[a]
            dx, dy = P[b, 0] - ax, P[b, 1] - ay
            Q = P[a + 1 : b]
            d = np.abs(dy * (Q[:, 0] - ax) - dx * (Q[:, 1] - ay)) / max(np.sqrt(dx * dx + dy * dy), 1e-300)
            k = int(np.argmax(d))
            if d[k] > eps:
                c = a + 1 + k
                keep[c, 0] = 1.0
                stack += [(a, c), (c, b)]
    return keep


def _triangle(P, a, b, c):
    ax, ay = P[a]
    return 0.5 * abs((P[b, 0] - ax) * (P[c, 1] - ay) - (P[c, 0] - ax) * (P[b, 1] - ay))


def vw(P, k):
    n = P.shape[0]
    x, y = P[:, 0], P[:, 1]
    prev = np.arange(-1, n - 1)
    nxt = np.arange(1, n + 1)
    area = np.full(n, np.inf)
    area[1 : n - 1] = 0.5 * np.abs((x[1:-1] - x[:-2]) * (y[2:] - y[:-2]) - (x[2:] - x[:-2]) * (y[1:-1] - y[:-2]))
    keep = np.ones((n, 1))
    for _ in range(n - k):
        i = int(np.argmin(area))
        keep[i, 0] = 0.0
        area[i] = np.inf
        p, q = prev[i], nxt[i]
        nxt[p], prev[q] = q, p
        if p > 0:
            area[p] = _triangle(P, prev[p], p, q)
        if q < n - 1:
            area[q] = _triangle(P, p, q, nxt[q])
    return keep


# ---------------------------------------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------------------------------------


def scaled_rows(n: float, scale: float) -> int:
    return max(int(n * scale), 64)


def _regression(rng, n, d):
    X = rng.random((n, d)) * rng.uniform(0.5, 20.0, (1, d)) + rng.uniform(-10.0, 10.0, (1, d))
    y = X @ (rng.random((d, 1)) * 4 - 2) + 3.0 + 0.01 * rng.standard_normal((n, 1))
    return {"X": X, "y": y}


def _classes(rng, n, d, k):
    X = rng.standard_normal((n, d))
    y = np.argmax(X @ rng.standard_normal((d, k)) + rng.standard_normal((n, k)), axis=1) + 1.0
    return {"X": X, "y": y.reshape(n, 1)}


def _binned(rng, n, d, nbins):
    X = rng.integers(0, nbins, (n, d)).astype(np.float64)
    y = (X[:, :1] > nbins / 2) * 2.0 + (X[:, 1:2] < 3) * 1.5 + X[:, 2:3] * 0.1 + 0.3 * rng.standard_normal((n, 1))
    return {"X": X, "y": y}


def _forest(rng, n, d, nbins, trees):
    data = _binned(rng, n, d, nbins)
    W = np.stack([np.bincount(rng.integers(0, n, n), minlength=n) for _ in range(trees)], axis=1)
    F = (rng.random((trees, d)) < 0.6).astype(np.float64)
    F[:, 0] = 1.0
    return {**data, "W": W.astype(np.float64), "F": F}


def _polyline(rng, n):
    return {"P": np.cumsum(rng.standard_normal((n, 2)), axis=0)}


def _graph(scale: float):
    from daphnec.tools.gen_graph import AMAZON_NONZEROS, AMAZON_VERTICES

    return {"G": ("graph", int(AMAZON_VERTICES * scale), int(AMAZON_NONZEROS * scale) // 2 * 2)}


@dataclass
class Script:
    """A benchmarked script (here and in algorithms_bench.py's WORKLOADS): its inputs (`make(rng, scale)`: arrays
    the bench writes as CSV + `.meta` for the library-style scripts, `.dbdf` for the classic workloads; a graph as
    Matrix Market), scalar arguments, extra daphnec flags, its numpy steps and the tolerance of the check."""

    script: str
    make: Callable[[np.random.Generator, float], dict[str, object]]
    numpy: Callable[..., np.ndarray]
    args: dict[str, object] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)
    rtol: float = 1e-8


SCRIPTS: dict[str, Script] = {
    "lmDS icpt=1": Script("lm_ds.daph", lambda r, s: _regression(r, scaled_rows(100_000, s), 50), lm_ds, {"icpt": 1}),
    "lmDS icpt=2": Script("lm_ds.daph", lambda r, s: _regression(r, scaled_rows(100_000, s), 50), lm_ds, {"icpt": 2}),
    "lmCG icpt=2": Script(
        "lm_cg.daph",
        lambda r, s: _regression(r, scaled_rows(100_000, s), 50),
        lm_cg,
        {"icpt": 2, "maxi": 20},
        rtol=1e-6,
    ),
    "PCA": Script(
        "pca.daph",
        lambda r, s: {"X": r.random((scaled_rows(100_000, s), 50))},
        pca,
        {"K": 5, "scale": False},
        rtol=1e-6,
    ),
    "PCA scaled": Script(
        "pca.daph", lambda r, s: {"X": r.random((scaled_rows(100_000, s), 50))}, pca, {"K": 5, "scale": True}, rtol=1e-6
    ),
    "PageRank": Script(
        "pagerank.daph", lambda r, s: _graph(0.25 * s), pagerank, {"maxi": 30}, ["--select-matrix-repr"]
    ),
    "components": Script(
        "components.daph", lambda r, s: _graph(0.25 * s), components, {}, ["--select-matrix-repr"], rtol=0.0
    ),
    "GNMF": Script(
        "gnmf.daph",
        lambda r, s: {
            "X": r.random((scaled_rows(10_000, s), 300)),
            "W": r.random((scaled_rows(10_000, s), 20)),
            "H": r.random((20, 300)),
        },
        gnmf,
        {"maxi": 20},
        rtol=1e-6,
    ),
    "multiLogReg": Script(
        "multilogreg.daph", lambda r, s: _classes(r, scaled_rows(100_000, s), 20, 5), multilogreg, {"k": 5, "maxi": 30}
    ),
    "decisionTree": Script(
        "decision_tree.daph",
        lambda r, s: _binned(r, scaled_rows(50_000, s), 10, 16),
        decision_tree,
        {"depth": 5, "nbins": 16},
    ),
    "randomForest": Script(
        "random_forest.daph",
        lambda r, s: _forest(r, scaled_rows(20_000, s), 10, 16, 8),
        random_forest,
        {"depth": 4, "nbins": 16},
    ),
    "RDP": Script("rdp.daph", lambda r, s: _polyline(r, scaled_rows(100_000, s)), rdp, {"eps": 20.0}, rtol=0.0),
    "VW": Script("vw.daph", lambda r, s: _polyline(r, scaled_rows(10_000, s)), vw, {"k": 500}, rtol=0.0),
}


# ---------------------------------------------------------------------------------------------------------------------
# The whole-process peer: pyarrow reads the files, numpy computes, the result goes to a .npy file
# ---------------------------------------------------------------------------------------------------------------------


def read_csv_matrix(path: str) -> np.ndarray:
    """A CSV matrix as pyarrow reads it with the column types given (from the `.meta`), as one f64 array."""
    import json

    import pyarrow as pa
    import pyarrow.csv as pcsv

    with open(path + ".meta") as f:
        cols = json.load(f)["numCols"]
    names = [f"c{i}" for i in range(cols)]
    table = pcsv.read_csv(
        path,
        read_options=pcsv.ReadOptions(column_names=names),
        convert_options=pcsv.ConvertOptions(column_types={c: pa.float64() for c in names}),
    )
    return np.column_stack([_column(c) for c in table.columns])


def _column(chunked) -> np.ndarray:
    """A float64 column without nulls as numpy, from arrow's buffers: `to_numpy` would import pandas (seconds on a
    loaded machine), which a careful pyarrow + numpy script avoids too."""
    parts = [np.frombuffer(a.buffers()[1], dtype=np.float64, count=len(a), offset=a.offset * 8) for a in chunked.chunks]
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def read_graph(path: str):  # noqa: ANN201 - a scipy CSR array
    """A Matrix Market graph as the scripts' peers read it (scipy CSR, every edge weight 1)."""
    import fast_matrix_market as fmm
    import scipy.sparse as sp

    G = sp.csr_array(fmm.read_scipy(path))
    G.data[:] = 1.0
    return G


def script_arguments(pairs: list[str], read_csv: Callable[[str], np.ndarray] = read_csv_matrix) -> dict[str, object]:
    """A script's numpy arguments from its `key=value` pairs (input files and scalars), CSV files read by
    `read_csv` (the peer's pyarrow reader, or daphnec's for bench/numpy_fresh.py)."""
    kwargs: dict[str, object] = {}
    for pair in pairs:
        key, value = pair.split("=", 1)
        if value.endswith(".mtx"):
            kwargs[key] = read_graph(value)
        elif value.endswith(".csv"):
            kwargs[key] = read_csv(value)
        else:
            kwargs[key] = {"True": True, "False": False}.get(value, value)
            if isinstance(kwargs[key], str):
                kwargs[key] = float(value) if "." in value or "e" in value else int(value)
    return kwargs


def peer_main(argv: list[str]) -> None:
    name, out, *pairs = argv
    np.save(out, SCRIPTS[name].numpy(**script_arguments(pairs)))


if __name__ == "__main__":
    peer_main(sys.argv[1:])
