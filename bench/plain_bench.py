"""The default path (`daphnec` without `--vec`) against numpy on element-wise, aggregation, matmul and indexing
workloads and on the examples, measured in one run.

Kernel workloads: each script generates its inputs with `rand`, then times one statement with `now()` (best of
`--repeat` inside one process); numpy runs the same operation in this process on arrays of the same shape (the
same kind of data: uniform [0, 1)). Examples (`examples/linear_regression.daph`, `kmeans.daph`, `pagerank.daph`,
`components.daph`): whole processes, `daphnec` with a warm program cache against `python -c` running a numpy
formulation of the same script (interpreter start and numpy import included on both sides), best of `--repeat`.

`--before PYTHON` adds a column for another installation's interpreter (e.g. a venv of the main branch), so the
effect of a change is measured in the same run. Ratios > 1 mean daphnec is faster than numpy.

    .venv/bin/python bench/plain_bench.py [--repeat 3] [--log2n 24] [--before OTHER_CHECKOUT/.venv/bin/python]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from vec_bench import timeit as best_of  # a sibling script: best of `repeat` calls

ROOT = Path(__file__).resolve().parents[1]

#: name -> (setup statements (inputs: `rand`), timed statement, numpy: (rng, n) -> thunk of the same operation)
KERNELS: dict[str, tuple[str, str, Callable]] = {
    "sum((a - b) ^ 2 * c)": (
        "a = rand({n}, 1, 0.0, 1.0, 1.0, 1); b = rand({n}, 1, 0.0, 1.0, 1.0, 2); c = rand({n}, 1, 0.0, 1.0, 1.0, 3);",
        "s = sum((a - b) ^ 2 * c);",
        lambda r, n: (lambda a, b, c: lambda: np.sum((a - b) ** 2 * c))(*(r.random((n, 1)) for _ in range(3))),
    ),
    "(a - b) * 3.0 + a * b": (
        "a = rand({n}, 1, 0.0, 1.0, 1.0, 1); b = rand({n}, 1, 0.0, 1.0, 1.0, 2);",
        "o = (a - b) * 3.0 + a * b;",
        lambda r, n: (lambda a, b: lambda: (a - b) * 3.0 + a * b)(r.random((n, 1)), r.random((n, 1))),
    ),
    "sum(X) (X: n/8 x 8)": (
        "X = rand({n8}, 8, 0.0, 1.0, 1.0, 1);",
        "s = sum(X);",
        lambda r, n: (lambda X: lambda: np.sum(X))(r.random((n // 8, 8))),
    ),
    "sum(X, 0) row sums": (
        "X = rand({n8}, 8, 0.0, 1.0, 1.0, 1);",
        "s = sum(X, 0);",
        lambda r, n: (lambda X: lambda: np.sum(X, axis=1, keepdims=True))(r.random((n // 8, 8))),
    ),
    "sum(X, 1) column sums": (
        "X = rand({n8}, 8, 0.0, 1.0, 1.0, 1);",
        "s = sum(X, 1);",
        lambda r, n: (lambda X: lambda: np.sum(X, axis=0, keepdims=True))(r.random((n // 8, 8))),
    ),
    "aggMin(X, 0) row minima": (
        "X = rand({n8}, 8, 0.0, 1.0, 1.0, 1);",
        "s = aggMin(X, 0);",
        lambda r, n: (lambda X: lambda: np.min(X, axis=1, keepdims=True))(r.random((n // 8, 8))),
    ),
    "aggMax(X)": (
        "X = rand({n8}, 8, 0.0, 1.0, 1.0, 1);",
        "s = aggMax(X);",
        lambda r, n: (lambda X: lambda: np.max(X))(r.random((n // 8, 8))),
    ),
    "mean(X, 1), var(X, 1)": (
        "X = rand({n8}, 8, 0.0, 1.0, 1.0, 1);",
        "m = mean(X, 1); v = var(X, 1);",
        lambda r, n: (lambda X: lambda: (X.mean(axis=0), X.var(axis=0)))(r.random((n // 8, 8))),
    ),
    "t(X) @ X (X: n/128 x 128)": (
        "X = rand({n128}, 128, 0.0, 1.0, 1.0, 1);",
        "A = t(X) @ X;",
        lambda r, n: (lambda X: lambda: X.T @ X)(r.random((n // 128, 128))),
    ),
    "X @ v": (
        "X = rand({n128}, 128, 0.0, 1.0, 1.0, 1); v = rand(128, 1, 0.0, 1.0, 1.0, 2);",
        "w = X @ v;",
        lambda r, n: (lambda X, v: lambda: X @ v)(r.random((n // 128, 128)), r.random((128, 1))),
    ),
    "t(X) (X: n/128 x 128)": (
        "X = rand({n128}, 128, 0.0, 1.0, 1.0, 1);",
        "Y = t(X);",
        lambda r, n: (lambda X: lambda: np.ascontiguousarray(X.T))(r.random((n // 128, 128))),
    ),
    "X[10:n-10, 2:6]": (
        "X = rand({n8}, 8, 0.0, 1.0, 1.0, 1);",
        "Y = X[10:{n8} - 10, 2:6];",
        lambda r, n: (lambda X: lambda: X[10 : n // 8 - 10, 2:6].copy())(r.random((n // 8, 8))),
    ),
}

#: example -> (script arguments, numpy formulation run by `python -c`)
EXAMPLES: dict[str, tuple[list[str], str]] = {
    "linear_regression": (
        [],
        """import numpy as np
r = np.random.default_rng(42)
X = r.uniform(-1, 1, (1000, 10)); w_true = r.uniform(-2, 2, (10, 1)); y = X @ w_true + r.uniform(-0.01, 0.01, (1000, 1))
A = X.T @ X; b = X.T @ y; wd = np.linalg.solve(A, b)
w = np.zeros((10, 1)); res = b - A @ w; p = res; rs = float(np.sum(res * res)); it = 0
while rs > 1e-24 and it < 100:
    Ap = A @ p; alpha = rs / np.sum(p * Ap); w = w + alpha * p; res = res - alpha * Ap
    rn = float(np.sum(res * res)); p = res + (rn / rs) * p; rs = rn; it += 1
print(wd.T); print(rs <= 1e-24); print(np.max(np.abs(w - wd)) < 1e-8); print(np.max(np.abs(wd - w_true)) < 0.01)
print(np.sum((X @ wd - y) ** 2))
""",
    ),
    "kmeans": (
        [],
        """import numpy as np
r = np.random.default_rng(1)
X = np.vstack([r.random((200, 2)) + 0.5, r.random((200, 2)) + 4.5, r.random((200, 2)) + [8.5, 0.5]])
C = X[[0, 200, 400]]
for _ in range(10):
    D = -2.0 * (X @ C.T) + np.sum(X ** 2, axis=1, keepdims=True) + np.sum(C ** 2, axis=1, keepdims=True).T
    P = (D <= D.min(axis=1, keepdims=True)).astype(float); P = P / P.sum(axis=1, keepdims=True)
    C = (P.T @ X) / P.sum(axis=0, keepdims=True).T
print(C); print(P.sum(axis=0))
""",
    ),
    "pagerank": (
        [],
        """import numpy as np
n = 500; r = np.random.default_rng(9)
G = (r.random((n, n)) < 0.02).astype(float)
M = G / np.maximum(G.sum(axis=1, keepdims=True), 1.0); p = np.full((n, 1), 1.0 / n)
for _ in range(50):
    p = 0.15 / n + 0.85 * (M.T @ p)
print(p.sum()); print(p.max()); print(int(np.argmax(p)))
""",
    ),
    "components": (
        ['f="examples/data/small_graph.mtx"'],
        """import numpy as np, scipy.io, scipy.sparse as sp
G = sp.csr_array(scipy.io.mmread("examples/data/small_graph.mtx")); n = G.shape[0]
c = np.arange(1.0, n + 1).reshape(n, 1); it = 0
while True:
    u = np.maximum(G.multiply(c.T).max(axis=1).toarray().reshape(n, 1), c)
    d = int(np.sum(u != c)); c = u; it += 1
    if d == 0: break
print(n); print(it); print(int(np.sum(c == np.arange(1.0, n + 1).reshape(n, 1))))
""",
    ),
}


def timed_script(setup: str, stmt: str, n: int, repeat: int) -> str:
    """The setup, then `repeat` times the statement between two `now()`s; its results are printed afterwards (a
    scalar, or one cell of a matrix), so the compiler cannot drop the work."""
    sizes = {"n": n, "n8": n // 8, "n128": n // 128}
    uses = []
    for target in (part.split("=")[0].strip() for part in stmt.split(";") if "=" in part):
        uses.append(
            f"print({target});"
            if stmt.startswith("s = ") and ", " not in stmt
            else f"print(as.scalar({target}[0, 0]));"
        )
    timed = f'for (i in 1:{repeat}) {{\nt0 = now();\n{stmt.format(**sizes)}\nt1 = now();\nprint("t=" + (t1 - t0));\n'
    return setup.format(**sizes) + "\n" + timed + " ".join(uses) + "\n}\n"


def run(python: str, args: list[str]) -> tuple[str, float]:
    t0 = time.perf_counter()
    res = subprocess.run([python, *args], capture_output=True, text=True, cwd=ROOT, check=True)
    return res.stdout, time.perf_counter() - t0


def kernel_times(python: str, script: Path) -> float:
    out, _ = run(python, ["-m", "daphnec.tools.daphnec", str(script)])
    return min(int(x[2:]) / 1e9 for x in out.splitlines() if x.startswith("t="))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--log2n", type=int, default=24, help="cells per input of the kernel workloads")
    ap.add_argument("--before", default="", help="another installation's python to compare with (same run)")
    ap.add_argument("--only", default="", help="'kernels' or 'examples'")
    a = ap.parse_args()
    pythons = {"daphnec": sys.executable} | ({"before": a.before} if a.before else {})
    n = 1 << a.log2n
    rng = np.random.default_rng(0)
    cols = " | ".join(f"{k} ms | numpy/{k}" for k in pythons)
    if a.only != "examples":
        print(f"kernels, 2^{a.log2n} cells per input, best of {a.repeat} (now() around the statement)\n")
        print(f"| workload | numpy ms | {cols} |\n|---|---:|" + "---:|---:|" * len(pythons))
        with tempfile.TemporaryDirectory() as tmp:
            for name, (setup, stmt, np_fn) in KERNELS.items():
                script = Path(tmp) / "k.daph"
                script.write_text(timed_script(setup, stmt, n, a.repeat))
                t_np = best_of(np_fn(rng, n), a.repeat)
                cells = [kernel_times(py, script) for py in pythons.values()]
                row = " | ".join(f"{t * 1e3:.1f} | {t_np / t:.2f}x" for t in cells)
                print(f"| `{name}` | {t_np * 1e3:.1f} | {row} |", flush=True)
    if a.only != "kernels":
        print(f"\nexamples, whole process, best of {a.repeat} (daphnec with a warm program cache)\n")
        print(f"| example | numpy s | {cols.replace('ms', 's')} |\n|---|---:|" + "---:|---:|" * len(pythons))
        for name, (args, code) in EXAMPLES.items():
            script = ["-m", "daphnec.tools.daphnec", f"examples/{name}.daph", *args]
            t_np = min(run(sys.executable, ["-c", code])[1] for _ in range(a.repeat))
            cells = []
            for py in pythons.values():
                run(py, script)  # fills the program cache
                cells.append(min(run(py, script)[1] for _ in range(a.repeat)))
            row = " | ".join(f"{t:.3f} | {t_np / t:.2f}x" for t in cells)
            print(f"| `{name}` | {t_np:.3f} | {row} |", flush=True)


if __name__ == "__main__":
    main()
