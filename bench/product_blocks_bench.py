"""Blocked vs single-call long reductions (syrk t(X)@X, gemv t(X)@y, square products) at 1 and 2 threads.

Prints wall and CPU time per call and the ratio single/blocked measured in the same run, so that a regression on
small or tall-skinny shapes (where splitting would lose) shows up as a ratio below 1.

    python bench/product_blocks_bench.py --repeat 5
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from daphnec.runtime.config import DaphneConfig
from daphnec.runtime.kernels.blas_threads import one_blas_thread
from daphnec.runtime.kernels.matmul import matmul
from daphnec.runtime.kernels.matrix_ops import gemv, syrk
from daphnec.tools.driver import configure_runtime

CASES = {
    "syrk 100000x51": ("syrk", (100000, 51)),
    "syrk 16384x512": ("syrk", (16384, 512)),
    "t(X)@X 100000x51": ("tmm", (100000, 51)),
    "gemv 1e6x51": ("gemv", (1000000, 51)),
    "gemv 100000x51": ("gemv", (100000, 51)),
    "X@X 724x724": ("mm", (724, 724)),
}


def _call(kind: str, X: np.ndarray, y: np.ndarray):
    if kind == "syrk":
        return lambda: syrk(X)
    if kind == "tmm":
        return lambda: matmul(X, X, "f64", transa=True)
    if kind == "gemv":
        return lambda: gemv(X, y)
    return lambda: matmul(X, X, "f64")


def _time(f, repeat: int) -> tuple[float, float]:
    """Best wall and CPU seconds of `repeat` calls (the best is the least disturbed by the other load)."""
    walls, cpus = [], []
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        f()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return min(walls), min(cpus)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--only", default="", help="comma-separated substrings of case names")
    args = ap.parse_args()
    from daphnec.runtime.kernels import blas_threads

    print(f"load: {os.getloadavg()[0]:.2f}")
    print(
        f"{'case':20s} {'thr':>3s} {'single ms':>10s} {'blocked ms':>10s} {'cpu single':>10s} "
        f"{'cpu blocked':>11s} {'speedup':>7s}"
    )
    rng = np.random.default_rng(1)
    for name, (kind, (r, c)) in CASES.items():
        if args.only and not any(s in name for s in args.only.split(",")):
            continue
        X, y = rng.standard_normal((r, c)), rng.standard_normal((r, 1))
        f = _call(kind, X, y)
        for threads in (1, 2):
            configure_runtime(DaphneConfig(numberOfThreads=threads))
            with one_blas_thread():
                saved = blas_threads.split_reduction
                blas_threads.split_reduction = lambda a, b: None  # the single call (as before blocking)
                try:
                    import daphnec.runtime.kernels.matmul as mm

                    mm.split_reduction = blas_threads.split_reduction
                    ws, cs = _time(f, args.repeat)
                finally:
                    blas_threads.split_reduction = saved
                    mm.split_reduction = saved
                wb, cb = _time(f, args.repeat)
            print(
                f"{name:20s} {threads:3d} {ws * 1e3:10.2f} {wb * 1e3:10.2f} {cs * 1e3:10.2f} {cb * 1e3:11.2f} "
                f"{ws / wb:7.2f}"
            )


if __name__ == "__main__":
    main()
