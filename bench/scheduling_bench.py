"""The D5.3 Figure-1 benchmark: connected components with every partitioning scheme (+ AUTO, ADAPTIVE).

Two workloads, each timed around the label-propagation loop (`bench/cc_bench.daph`, `now()`):
- `amazon`: the amazon-sized synthetic graph (403,394 vertices, 3,387,388 non-zeros, `tools/gen_graph.py`);
- `skewed`: a graph whose row degree grows with the row index, where dynamic schemes should beat STATIC.
Every scheme runs `--repeat` times at each thread count; the table shows mean, stdev and the change vs STATIC,
and a bar chart like D5.3's Figure 1 (sorted, AUTO highlighted, dashed STATIC line) is written with matplotlib.

    .venv/bin/python bench/scheduling_bench.py [--repeat 5] [--threads 1 2] [--workloads amazon skewed]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from runtime.scheduling.partitioning import SCHEMES  # noqa: E402
from tools.gen_graph import AMAZON_NONZEROS, AMAZON_VERTICES, write_graph  # noqa: E402

ALL = (*SCHEMES, "ADAPTIVE")


def skewed_graph(path: Path, n: int = 200_000, seed: int = 7) -> None:
    """Row i gets about 40*i/n neighbours (symmetrised), so later rows cost far more than earlier ones."""
    rng = np.random.default_rng(seed)
    deg = (40 * np.arange(n) // n).astype(np.int64)
    rows = np.repeat(np.arange(n), deg)
    cols = rng.integers(0, n, size=rows.size)
    keep = rows != cols
    r, c = np.maximum(rows[keep], cols[keep]), np.minimum(rows[keep], cols[keep])
    pairs = np.unique(r * n + c)
    r, c = pairs // n, pairs % n
    with open(path, "w") as f:
        f.write("%%MatrixMarket matrix coordinate pattern symmetric\n")
        f.write(f"{n} {n} {len(r)}\n")
        np.savetxt(f, np.column_stack([r + 1, c + 1]), fmt="%d")
    meta = f'{{"numCols":{n},"numNonZeros":{2 * len(r)},"numRows":{n},"valueType":"f64"}}'
    Path(str(path) + ".meta").write_text(meta)


def run(graph: Path, scheme: str, threads: int) -> float:
    cmd = [sys.executable, "-m", "tools.daphnec", "--vec", "--select-matrix-repr", f"--partitioning={scheme}"]
    cmd.append(f"--num-threads={threads}")
    out = subprocess.run([*cmd, str(ROOT / "bench" / "cc_bench.daph"), f'f="{graph}"'], capture_output=True,
                         text=True, check=True, cwd=ROOT).stdout  # fmt: skip
    return float(out.split()[0])


def table(name: str, threads: int, times: dict[str, list[float]]) -> None:
    base = statistics.mean(times["STATIC"])
    print(f"\n{name}, {threads} thread(s): seconds of the components loop over {len(times['STATIC'])} runs")
    print(f"{'scheme':<9} {'mean':>8} {'stdev':>8} {'vs STATIC':>10}")
    for s, ts in sorted(times.items(), key=lambda kv: statistics.mean(kv[1])):
        m, sd = statistics.mean(ts), statistics.stdev(ts) if len(ts) > 1 else 0.0
        print(f"{s:<9} {m:>8.3f} {sd:>8.3f} {100 * (m - base) / base:>+9.1f}%")


def chart(results: dict[tuple[str, int], dict[str, list[float]]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(6 * len(results), 4), squeeze=False)
    for ax, ((name, threads), times) in zip(axes[0], results.items()):
        order = sorted(times, key=lambda s: statistics.mean(times[s]))
        means = [statistics.mean(times[s]) for s in order]
        errs = [statistics.stdev(times[s]) if len(times[s]) > 1 else 0 for s in order]
        colors = ["tab:orange" if s == "AUTO" else "tab:green" if s == "ADAPTIVE" else "tab:blue" for s in order]
        ax.bar(order, means, yerr=errs, color=colors)
        ax.axhline(statistics.mean(times["STATIC"]), linestyle="--", color="black", label="STATIC")
        ax.set_title(f"{name}, {threads} thread(s)")
        ax.set_ylabel("seconds")
        ax.tick_params(axis="x", rotation=60)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"\nchart written to {path}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--workloads", nargs="+", default=["amazon", "skewed"])
    ap.add_argument("--schemes", nargs="+", default=list(ALL))
    ap.add_argument("--chart", type=Path, default=ROOT / "bench" / "out" / "scheduling.png")
    args = ap.parse_args()
    results: dict[tuple[str, int], dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        graphs = {}
        if "amazon" in args.workloads:
            graphs["amazon"] = Path(tmp) / "amazon.mtx"
            write_graph(str(graphs["amazon"]), AMAZON_VERTICES, AMAZON_NONZEROS, 42)
        if "skewed" in args.workloads:
            graphs["skewed"] = Path(tmp) / "skewed.mtx"
            skewed_graph(graphs["skewed"])
        for name, graph in graphs.items():
            for threads in args.threads:
                times = {s: [run(graph, s, threads) for _ in range(args.repeat)] for s in args.schemes}
                results[(name, threads)] = times
                table(name, threads, times)
    args.chart.parent.mkdir(parents=True, exist_ok=True)
    chart(results, args.chart)


if __name__ == "__main__":
    main()
