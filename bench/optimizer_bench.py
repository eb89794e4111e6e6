"""What the algebraic rewrites, matrix-chain ordering and the one-pass `t(X) @ (w * (X @ v))` kernel buy, against
numpy executing the same expressions as written, measured in one run.

Two groups of cases (each a DaphneDSL script reading its inputs from `.dbdf` files and timing the computation
between two `now()` calls; numpy runs the same expression, written the same way, on the same arrays in this
process; ratio = numpy seconds / daphnec seconds, so > 1 means daphnec is faster):

- naive order: scripts written the way they read (`(t(X) @ X) @ v`, `sum(X @ Y)`, `sum(diagVector(X @ Y))`,
  `sum(X @ Y, 1)` i.e. colSums, `X @ diagMatrix(v)`, `A @ B @ C @ D`, `t(cbind(X, 1)) @ cbind(X, 1)`); goal >= 10x;
- kernels: the inner loops of lmCG (`t(X) @ (X @ p)`) and of Newton-CG logistic regression
  (`t(X) @ (w * (X @ v))`), dense and CSR, where numpy does the same steps; X is read once per iteration.

Each case also runs with `--no-reassociate` (the program as written, every re-associating rewrite off) so that the
table shows what the rewrites themselves bring, and each result is checked against numpy's (relative error of the
largest difference).

Usage: `.venv/bin/python bench/optimizer_bench.py [--repeat 3] [--scale 1.0] [--only gram_chain,lm_cg_loop]
[--before /work/main/.venv/bin/python]` (`--before`: also run another installation's daphnec, interleaved).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from algorithms_bench import rel_error, run_daphnec, write_inputs  # noqa: E402 - the sibling bench's helpers


@dataclass
class Case:
    """A DaphneDSL body computing `R` from the inputs (between the two `now()` calls), its numpy formulation and
    its inputs."""

    group: str
    dsl: str
    numpy: Callable[..., np.ndarray]
    make: Callable[[np.random.Generator, float], dict[str, object]]
    rtol: float = 1e-9
    flags: tuple[str, ...] = ()


def _n(base: int, scale: float) -> int:
    return max(16, int(base * scale))


def _dense(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.random(shape) - 0.5


def _csr(rng: np.random.Generator, n: int, m: int, density: float):
    import scipy.sparse as sp

    return sp.random(n, m, density=density, format="csr", random_state=int(rng.integers(1 << 31)))


ITERS = 20
"""Iterations of the kernel loops (lmCG, logistic regression)."""

LOOP_CG = f"""
p = as.matrix<f64>(v);  # cast: a loop variable started from a .meta-typed value fails to type otherwise
for (i in 1:{ITERS}) {{
    q = t(X) @ (X @ p) + 0.001 * p;
    p = q / sqrt(sum(q ^ 2));
}}
R = p;
"""

LOOP_LOGREG = f"""
p = as.matrix<f64>(v);  # cast: a loop variable started from a .meta-typed value fails to type otherwise
for (i in 1:{ITERS}) {{
    q = t(X) @ (w * (X @ p)) + 0.001 * p;
    p = q / sqrt(sum(q ^ 2));
}}
R = p;
"""


def np_loop(X, v, w=None):
    p = v
    for _ in range(ITERS):
        u = X @ p
        q = X.T @ (u if w is None else w * u) + 0.001 * p
        p = q / np.sqrt(np.sum(q**2))
    return p


def np_lm_ds_intercept(D):
    X, y = D[:, :-1], D[:, -1:]
    A = np.hstack([X, np.ones((X.shape[0], 1))])
    G = A.T @ A + np.diag(np.full(A.shape[1], 0.001))
    return np.linalg.solve(G, A.T @ y)


CASES: dict[str, Case] = {
    "gram_chain": Case(
        "naive order",
        "R = (t(X) @ X) @ v;",
        lambda X, v: (X.T @ X) @ v,
        lambda r, s: {"X": _dense(r, _n(200_000, s), 100), "v": _dense(r, 100, 1)},
    ),
    "sum_of_product": Case(
        "naive order",
        "R = as.matrix(sum(X @ Y));",
        lambda X, Y: np.array([[np.sum(X @ Y)]]),
        lambda r, s: {"X": _dense(r, _n(1500, s), 1500), "Y": _dense(r, 1500, _n(1500, s))},
    ),
    "trace_of_product": Case(
        "naive order",
        "R = as.matrix(sum(diagVector(X @ Y)));",
        lambda X, Y: np.array([[np.trace(X @ Y)]]),
        lambda r, s: {"X": _dense(r, _n(1500, s), 1500), "Y": _dense(r, 1500, _n(1500, s))},
    ),
    "colsums_of_product": Case(
        "naive order",
        "R = sum(X @ Y, 1);",
        lambda X, Y: np.sum(X @ Y, axis=0, keepdims=True),
        lambda r, s: {"X": _dense(r, _n(1500, s), 1500), "Y": _dense(r, 1500, 1500)},
    ),
    "diag_matrix_product": Case(
        "naive order",
        "R = X @ diagMatrix(v);",
        lambda X, v: X @ np.diag(v[:, 0]),
        lambda r, s: {"X": _dense(r, _n(1500, s), 1500), "v": _dense(r, 1500, 1)},
    ),
    "matrix_chain": Case(
        "naive order",
        "R = A @ B @ C @ v;",
        lambda A, B, C, v: A @ B @ C @ v,
        lambda r, s: {
            "A": _dense(r, _n(1200, s), 1200),
            "B": _dense(r, 1200, 1200),
            "C": _dense(r, 1200, 1200),
            "v": _dense(r, 1200, 1),
        },  # fmt: skip
    ),
    "intercept_gram": Case(
        "naive order",
        "A = cbind(X, fill(1.0, nrow(X), 1));\nR = t(A) @ A;",
        lambda X: (lambda A: A.T @ A)(np.hstack([X, np.ones((X.shape[0], 1))])),
        lambda r, s: {"X": _dense(r, _n(400_000, s), 20)},
    ),
    "lm_ds_intercept": Case(
        "kernels",
        "X = D[, 0:(ncol(D) - 1)];\ny = D[, ncol(D) - 1];\nA = cbind(X, fill(1.0, nrow(X), 1));\n"
        "G = t(A) @ A + diagMatrix(fill(0.001, ncol(A), 1));\nR = solve(G, t(A) @ y);",
        lambda D: np_lm_ds_intercept(D),
        lambda r, s: {"D": _dense(r, _n(400_000, s), 51)},
        rtol=1e-8,
    ),
    "lm_cg_loop": Case(
        "kernels",
        LOOP_CG,
        lambda X, v: np_loop(X, v),
        lambda r, s: {"X": _dense(r, _n(200_000, s), 50), "v": _dense(r, 50, 1)},
    ),
    "logreg_loop": Case(
        "kernels",
        LOOP_LOGREG,
        lambda X, v, w: np_loop(X, v, w),
        lambda r, s: {"X": _dense(r, _n(200_000, s), 50), "v": _dense(r, 50, 1), "w": r.random((_n(200_000, s), 1))},
    ),
    "logreg_loop_csr": Case(
        "kernels",
        LOOP_LOGREG,
        lambda X, v, w: np_loop(X, v, w),
        lambda r, s: {
            "X": _csr(r, _n(400_000, s), 200, 0.02),
            "v": _dense(r, 200, 1),
            "w": r.random((_n(400_000, s), 1)),
        },  # fmt: skip
        flags=("--select-matrix-repr",),  # X is read as CSR
    ),
}


def script_of(case: Case, names: list[str]) -> str:
    reads = "".join(f"{n} = readMatrix(${n});\n" for n in names)
    return f'{reads}t0 = now();\n{case.dsl}\nt1 = now();\nprint("t=" + (t1 - t0));\nwrite(R, $out);\n'


def add_non_zeros(meta: Path, nnz: int) -> None:
    """Put `numNonZeros` into a `.meta`, as a user's file of a sparse matrix has it: `--select-matrix-repr` then
    reads the matrix as CSR (without it the CSR logistic loop read a 200,000 x 200 matrix of 2 % non-zeros as 320
    MB of dense cells, 3 s, and ran the dense kernel on them: 64 ms per iteration)."""
    import json

    doc = json.loads(meta.read_text())
    doc["numNonZeros"] = nnz
    meta.write_text(json.dumps(doc))


def bench_case(name: str, case: Case, scale: float, repeat: int, folder: Path, before: str) -> dict[str, object]:
    from daphnec.runtime.kernels.io import read_matrix

    rng = np.random.default_rng(len(name))
    data = case.make(rng, scale)
    paths, arrays = write_inputs(data, folder)
    for n, value in data.items():
        if hasattr(value, "nnz"):  # CSR: DAPHNE's writer leaves numNonZeros out, without it X is read dense
            add_non_zeros(folder / f"{n}.dbdf.meta", int(value.nnz))
    script = folder / f"{name}.daph"
    script.write_text(script_of(case, list(data)))
    out = folder / f"{name}.out.dbdf"
    args = {**paths, "out": f'"{out}"'}
    want = case.numpy(**arrays)  # warm-up
    configs = [("daphnec", [], ""), ("as written", ["--no-reassociate"], "")]
    configs += [("before", [], before)] if before else []
    res: dict[str, list[float]] = {"numpy": [], **{c: [] for c, _, _ in configs}}
    errors: dict[str, float] = {}
    for round_ in range(repeat + 1):  # round 0 fills the kernel caches and is not timed
        t0 = time.perf_counter()
        want = case.numpy(**arrays)
        if round_:
            res["numpy"].append(time.perf_counter() - t0)
        for cfg, flags, python in configs:
            run = run_daphnec([*case.flags, *flags], script, args, python)
            errors[cfg] = max(errors.get(cfg, 0.0), rel_error(read_matrix(str(out), vt="f64"), want))
            if round_:
                res[cfg].append(float(run["compute"]))  # type: ignore[arg-type]
    return {"times": res, "errors": errors}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--only", default="")
    ap.add_argument("--before", default="", help="the Python of another installation (e.g. main's venv) to compare")
    a = ap.parse_args(argv)
    chosen = {k: c for k, c in CASES.items() if not a.only or k in a.only.split(",")}
    print("| group | case | numpy ms | daphnec ms | numpy / daphnec | as written ms | numpy / as written | "
          "rewrites gain | before ms | numpy / before | rel. error |")  # fmt: skip
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    with tempfile.TemporaryDirectory(prefix="optimizer-bench-") as tmp:
        for name, case in chosen.items():
            r = bench_case(name, case, a.scale, a.repeat, Path(tmp), a.before)
            t = {k: min(v) for k, v in r["times"].items()}  # type: ignore[union-attr]
            err = max(r["errors"].values())  # type: ignore[union-attr]
            ok = "ok" if err <= case.rtol else "WRONG"
            tb = t.get("before")
            before = f"{tb * 1e3:.1f} | {t['numpy'] / tb:.2f}x" if tb else "- | -"
            print(f"| {case.group} | {name} | {t['numpy'] * 1e3:.1f} | {t['daphnec'] * 1e3:.1f} | "
                  f"{t['numpy'] / t['daphnec']:.1f}x | {t['as written'] * 1e3:.1f} | "
                  f"{t['numpy'] / t['as written']:.2f}x | {t['as written'] / t['daphnec']:.1f}x | {before} | "
                  f"{err:.1e} {ok} |",
                  flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
