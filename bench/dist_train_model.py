"""A calibrated analytic model of paramserv's data-parallel training beyond this machine (issue 22).

    .venv/bin/python bench/dist_train_model.py [--runs BENCH.json ...] [--rows 60000] [--plot FILE]

Why a model and not SimGrid: SimGrid's Python bindings on PyPI come as a source distribution only (no wheel for
this platform), whose build compiles the whole C++ simulator with cmake and Boost: tens of minutes on this 2-core
machine, repeated on every fresh machine and CI run. What the question needs is small: per step, a worker
computes, then its messages cross its link; both are measured here, and the strategies' bytes per step are exact
(runtime/paramserv/costs.py, checked against the kernel's TCP counters to 0.0 %). So the model is a few lines of
arithmetic over measured numbers:

- **compute**: the FC MLP's layers are timed here, one numpy process, forward and backward at the batch size
  (`layer_seconds`: X @ W, dY @ t(W), t(X) @ dY per layer); their sum is C, the flop rate F. On a loaded machine
  `--step-ms` scales them to a quiet machine's step (the issue measured 3.3 s for 32 steps: 103 ms), keeping the
  layers' shares;
- **link**: a switched network, every node a full-duplex link of bandwidth B (1 Gbit/s: 117 MB/s as measured
  over netem here; 10 GbE: 1.17 GB/s) and a per-message latency L = 50 us;
- **step time** for n workers (|w| bytes of gradient; costs.py's bytes):
  BSP, one server: C + n |w| / B + 2 L (the server's link carries n models out and n gradients in);
  RING: C + 2 (n-1)/n |w| / B + 2 (n-1) L;
  RING + overlap (wait-free backprop): C_fwd + max(C_bwd, N - N_0) + N_0, N the ring's time, N_0 that of the
  first layer's gradient (final only when the backward pass ends; the others travel during it);
  SFB (Poseidon's hybrid): C + R + N_sfb, N_sfb the factors' all-gather plus the ring of the other matrices
  (costs.sfb_per_step), R = n 2 K M N / F per factored layer (every worker rebuilds every product);
- **epochs per hour** over a data set of `--rows` rows (MNIST's 60,000 by default), K rows per worker and step:
  3600 / (ceil(rows / (n K)) T); the **speed-up** n T(1) / T(n) (throughput, fixed batch per worker, as Poseidon
  reports it).

**Error against the runs here** (`--runs`: bench/dist_train_bench.py --json files): there all ranks share one
emulated link (netem), so the bytes of a step add up (total bytes / B), and the CPU is shared too, so each run's
measured compute seconds stand for C; the model predicts the epoch from them and the bytes.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from daphnec.runtime.paramserv import costs

FC = [(784, 1024), (1024, 1024), (1024, 10)]
"""The FC MLP's weight matrices (each with a 1 x N bias)."""
SHAPES = [s for m, n in FC for s in ((m, n), (1, n))]
FACTORED = (0, 2, 4)
LATENCY = 50e-6
RATES = {"1gbit": 117e6, "10gbit": 1.17e9}
POSEIDON = (16, 15.5)
"""Poseidon's published speed-up: 15.5x on 16 single-GPU nodes over 10 GbE (VGG19-22K, Zhang et al. 2017)."""


@dataclass
class Compute:
    fwd: list[float]
    """Seconds of each layer's forward product at batch K."""
    bwd: list[float]
    """Seconds of each layer's backward products (input gradient and weight gradient)."""
    flops: float
    """Flop rate of the weight-gradient products (for SFB's rebuilds)."""

    @property
    def total(self) -> float:
        return sum(self.fwd) + sum(self.bwd)


def _best(a: np.ndarray, b: np.ndarray, reps: int = 5) -> float:
    """Seconds of a @ b, the best of `reps`."""
    out = math.inf
    for _ in range(reps):
        t0 = time.perf_counter()
        np.matmul(a, b)
        out = min(out, time.perf_counter() - t0)
    return out


def layer_seconds(K: int, seed: int = 0) -> Compute:
    """Each FC layer's forward and backward products at batch K, timed with numpy (best of 5)."""
    rng = np.random.default_rng(seed)
    fwd, bwd, flop, secs = [], [], 0.0, 0.0
    for m, n in FC:
        X, W, dY = rng.random((K, m)), rng.random((m, n)), rng.random((K, n))
        fwd.append(_best(X, W))
        dw = _best(X.T, dY)
        bwd.append(_best(dY, W.T) + dw)
        flop += 2 * K * m * n
        secs += dw
    return Compute(fwd, bwd, flop / secs)


def step_seconds(strategy: str, n: int, K: int, c: Compute, B: float, shared: bool = False,
                 compute: float | None = None) -> float:  # fmt: skip
    """Predicted seconds of one step of n workers. `shared`: all ranks on one link (this machine's netem);
    `compute`: a measured compute time per step replacing the calibrated C."""
    w = sum(a * b for a, b in SHAPES) * 8.0
    C = c.total if compute is None else compute
    scale = C / c.total
    if n == 1:
        return C
    if strategy == "BSP":
        per_rank = costs.per_step("BSP", n, w)
        N = (sum(per_rank) if shared else per_rank[0]) / B + 2 * LATENCY
        return C + N
    ring = costs.allreduce("RING", n, w)
    N = (sum(ring) if shared else ring[0]) / B + 2 * (n - 1) * LATENCY
    if strategy == "RING":
        return C + N
    if strategy == "RING overlap":
        first = 2 * (n - 1) / n * (FC[0][0] * FC[0][1] + FC[0][1]) * 8.0 / B * (n if shared else 1)
        return scale * sum(c.fwd) + max(scale * sum(c.bwd), N - first) + first
    if strategy == "SFB":
        chosen = [j for j in FACTORED if costs.sfb_wins("RING", n, K, SHAPES[j], 8)]
        per_rank = costs.sfb_per_step("RING", n, K, SHAPES, 8, chosen)[1:]
        N = (sum(per_rank) if shared else max(per_rank)) / B + 2 * (n - 1) * LATENCY
        R = sum(n * 2.0 * K * SHAPES[j][0] * SHAPES[j][1] for j in chosen) / c.flops * scale
        return C + R + N
    raise ValueError(strategy)


STRATEGIES = ("BSP", "RING", "RING overlap", "SFB")
BENCH_NAMES = {"BSP": "BSP", "ALLREDUCE RING": "RING", "ALLREDUCE RING overlap": "RING overlap",
               "ALLREDUCE RING sfb": "SFB"}  # fmt: skip


def errors(runs: list[dict], c: Compute, K: int) -> list[str]:
    """The model's epoch time next to each measured run (its own measured compute as C)."""
    lines = [f"{'ranks':>5} {'strategy':<24} {'measured s':>10} {'model s':>8} {'error':>7}"]
    for r in runs:
        name = BENCH_NAMES.get(r["strategy"])
        if name is None or r["code"] != "new" or r["rate"] not in RATES or not r["compute"] > 0:
            continue
        per_step = r["compute"] / r["steps"]
        pred = r["steps"] * step_seconds(name, r["k"], K, c, RATES[r["rate"]], shared=True, compute=per_step)
        err = (pred - r["seconds"]) / r["seconds"]
        lines.append(f"{r['ranks']:>5} {r['strategy']:<24} {r['seconds']:>10.2f} {pred:>8.2f} {err:>+7.1%}")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=Path, nargs="*", default=[], help="bench/dist_train_bench.py --json files")
    ap.add_argument("--rows", type=int, default=60000)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--plot", type=Path, default=None, help="write the speed-up curve (PNG)")
    ap.add_argument(
        "--step-ms",
        type=float,
        default=0.0,
        help="scale the timed layers to this compute per step (a quiet machine's; 0: as timed)",
    )
    args = ap.parse_args()
    K = args.batch
    c = layer_seconds(K)
    if args.step_ms > 0:  # the layers' shares as timed, their sum as measured where nothing else runs
        f = args.step_ms / 1e3 / c.total
        c = Compute([x * f for x in c.fwd], [x * f for x in c.bwd], c.flops / f)
    print(f"calibration: compute per step {c.total * 1e3:.1f} ms (forward {sum(c.fwd) * 1e3:.1f}, backward "
          f"{sum(c.bwd) * 1e3:.1f}), weight-gradient flop rate {c.flops / 1e9:.1f} GFLOP/s")  # fmt: skip
    nodes = (1, 2, 4, 8, 16, 32, 64)
    curves: dict[str, list[float]] = {}
    for rate, B in RATES.items():
        print(f"\nepochs per hour, {args.rows} rows, batch {K} per worker, {rate} links (B = {B / 1e6:.0f} MB/s):")
        print(f"{'nodes':>5} " + " ".join(f"{s:>13}" for s in STRATEGIES))
        for n in nodes:
            steps = math.ceil(args.rows / (n * K))
            eph = [3600 / (steps * step_seconds(s, n, K, c, B)) for s in STRATEGIES]
            print(f"{n:>5} " + " ".join(f"{e:>13.1f}" for e in eph))
        print(f"speed-up n T(1) / T(n), {rate}:")
        for s in STRATEGIES:
            sp = [n * step_seconds(s, 1, K, c, B) / step_seconds(s, n, K, c, B) for n in nodes]
            curves[f"{s} {rate}"] = sp
            print(f"  {s:<13} " + " ".join(f"{n}:{x:.1f}x" for n, x in zip(nodes, sp)))
    print(
        "\nthis machine's link (all ranks on one 1 Gbit/s netem link), the calibrated compute, one epoch of 2,048 rows:"
    )
    print(f"{'ranks':>5} " + " ".join(f"{s:>13}" for s in STRATEGIES) + "   SFB vs BSP")
    for n in (3, 4, 5):
        k = n - 1
        steps = math.ceil(math.ceil(2048 / k) / K)
        t = [steps * step_seconds(s, k, K, c, RATES["1gbit"], shared=True) for s in STRATEGIES]
        print(f"{n:>5} " + " ".join(f"{x:>12.2f}s" for x in t) + f"   {t[0] / t[3]:.2f}x")
    if args.runs:
        runs = [r for p in args.runs for r in json.loads(p.read_text())]
        print("\nthe model against the runs here (one shared netem link; each run's measured compute):")
        print("\n".join(errors(runs, c, K)))
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7, 4.5))
        ax.plot(nodes, nodes, "k:", label="linear")
        for name, sp in curves.items():
            if name.endswith("10gbit"):
                ax.plot(nodes, sp, marker="o", label=f"daphnec model: {name}")
        ax.plot(*POSEIDON, "r*", markersize=14, label="Poseidon (VGG19-22K, 16 GPUs, 10 GbE): 15.5x")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        ax.set_xlabel("nodes (one worker each)")
        ax.set_ylabel("speed-up (throughput vs 1 node)")
        ax.set_title("FC MLP 784-1024-1024-10, batch 64 per node, 10 Gbit/s links")
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(args.plot, dpi=110)
        print(f"\nplot: {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
