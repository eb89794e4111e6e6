"""Read-speed benchmark of daphnec's file readers against the fastest Python readers on PyPI (not a test).

    .venv/bin/python bench/io_bench.py [--repeat 3] [--scale 1.0] [--graph] [--keep DIR]

Generates, in a temporary folder (never in the repository):
- a CSV file of 1,000,000 x 10 random f64 cells (10 million cells, written by daphnec's own CSV writer),
- a Matrix Market file with 10 million entries: a 10,000 x 5,000 `coordinate real general` matrix with 20 %
  non-zeros in row-major order (small enough to read densely, so daphnec can read it end to end),
- with `--graph`, the amazon-sized graph of `tools/gen_graph.py`.

Then it times, best of `--repeat` runs interleaved so that every reader sees the same machine load:
- daphnec's kernel (`runtime.kernels.io.read_matrix`) and daphnec end to end (a script that prints `now()` before
  and after `readMatrix`, so compilation and start-up are not counted);
- pyarrow's CSV reader (with the column types given, its fastest setting, and with type inference), numpy.loadtxt;
- fast_matrix_market.read_coo, scipy.io.mmread and numpy.loadtxt for the Matrix Market file.
The table shows seconds and each baseline's time divided by daphnec's kernel time (> 1: daphnec is faster).
Goals: daphnec >= 0.5x the fastest reader (pyarrow typed, fast_matrix_market) and >= 5x numpy.loadtxt.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from daphnec.runtime.io import atomic  # noqa: E402
from daphnec.runtime.io import csv as dcsv  # noqa: E402
from daphnec.runtime.io.meta import dump_json, matrix_meta_json  # noqa: E402
from daphnec.runtime.kernels import io as kio  # noqa: E402


def make_csv(folder: Path, rows: int, cols: int) -> Path:
    path = folder / "cells.csv"
    m = np.random.default_rng(1).random((rows, cols))
    atomic.write_files(
        [
            (str(path), lambda f: dcsv.write_matrix(m, f)),
            (str(path) + ".meta", lambda f: f.write(matrix_meta_json(rows, cols, "f64").encode())),
        ]
    )
    return path


def make_mtx(folder: Path, rows: int, cols: int, nnz: int) -> Path:
    import fast_matrix_market as fmm
    import scipy.sparse as sp

    rng = np.random.default_rng(2)
    cells = np.flatnonzero(rng.random(rows * cols) < nnz / (rows * cols) * 1.001)
    cells = np.delete(cells, rng.choice(len(cells), len(cells) - nnz, replace=False)) if len(cells) > nnz else cells
    m = sp.coo_array((rng.standard_normal(len(cells)), (cells // cols, cells % cols)), shape=(rows, cols))
    path = folder / "entries.mtx"
    fmm.mmwrite(str(path), m, symmetry="general")
    path.with_suffix(".mtx.meta").write_text(dump_json({"numRows": rows, "numCols": cols, "valueType": "f64"}))
    return path


def daphnec_seconds(folder: Path, name: str, extra: str = "") -> float:
    """Run a script that times `readMatrix` with `now()` and return the printed seconds."""
    script = folder / "bench.daph"
    script.write_text(f't0 = now();\nX = readMatrix("{name}");\nt1 = now();\nprint(t1 - t0);\nprint(nrow(X));\n{extra}')
    res = subprocess.run(
        [sys.executable, "-m", "daphnec.tools.daphnec", str(script)],
        cwd=folder,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=600,
    )
    if res.returncode != 0:
        raise RuntimeError(res.stderr)
    return int(res.stdout.split()[0]) / 1e9


def best_of(readers: dict[str, Callable[[], object]], repeat: int) -> dict[str, float]:
    best = dict.fromkeys(readers, float("inf"))
    for _ in range(repeat):
        for name, fn in readers.items():
            t0 = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    return best


def table(title: str, times: dict[str, float], ours: str, goals: dict[str, str]) -> None:
    print(f"\n{title}")
    print(f"  {'reader':<44} {'seconds':>8}  {'baseline / daphnec kernel':>26}")
    for name, t in times.items():
        ratio = "" if name == ours or name.startswith("daphnec") else f"{t / times[ours]:.2f}x"
        goal = f"  (goal {goals[name]})" if name in goals else ""
        print(f"  {name:<44} {t:8.3f}  {ratio:>26}{goal}")


def bench_csv(folder: Path, rows: int, cols: int, repeat: int) -> None:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    t0 = time.perf_counter()
    path = make_csv(folder, rows, cols)
    print(
        f"wrote {path.name}: {rows}x{cols} f64, {path.stat().st_size / 1e6:.1f} MB with daphnec's CSV writer "
        f"in {time.perf_counter() - t0:.2f} s"
    )
    names = [f"f{i}" for i in range(cols)]
    typed = pacsv.ConvertOptions(column_types=dict.fromkeys(names, pa.float64()))
    auto = pacsv.ReadOptions(autogenerate_column_names=True)
    readers: dict[str, Callable[[], object]] = {
        "daphnec kernel readMatrix": lambda: kio.read_matrix(str(path), vt="f64", rows=rows, cols=cols),
        "daphnec end to end (now() around readMatrix)": lambda: None,
        "pyarrow.csv.read_csv, column types given": lambda: pacsv.read_csv(
            path, read_options=auto, convert_options=typed
        ),
        "pyarrow.csv.read_csv, types inferred": lambda: pacsv.read_csv(path, read_options=auto),
        "numpy.loadtxt": lambda: np.loadtxt(path, delimiter=","),
    }
    times = best_of(readers, repeat)
    times["daphnec end to end (now() around readMatrix)"] = min(
        daphnec_seconds(folder, path.name) for _ in range(repeat)
    )
    table(
        f"CSV, {rows * cols:,} cells",
        times,
        "daphnec kernel readMatrix",
        {"pyarrow.csv.read_csv, column types given": ">= 0.5x", "numpy.loadtxt": ">= 5x"},
    )


def bench_mtx(folder: Path, rows: int, cols: int, nnz: int, repeat: int) -> None:
    import fast_matrix_market as fmm
    import scipy.io

    t0 = time.perf_counter()
    path = make_mtx(folder, rows, cols, nnz)
    print(
        f"\nwrote {path.name}: {rows}x{cols}, {nnz:,} entries, {path.stat().st_size / 1e6:.1f} MB "
        f"in {time.perf_counter() - t0:.2f} s"
    )
    readers: dict[str, Callable[[], object]] = {
        "daphnec kernel readMatrix -> CSR": lambda: kio.read_matrix(str(path), vt="f64", sparse=True),
        "daphnec kernel readMatrix -> dense": lambda: kio.read_matrix(str(path), vt="f64"),
        "daphnec end to end -> dense (now())": lambda: None,
        "fast_matrix_market.read_coo (triplets)": lambda: fmm.read_coo(str(path)),
        "scipy.io.mmread (COO)": lambda: scipy.io.mmread(str(path)),
        "numpy.loadtxt (triplets)": lambda: np.loadtxt(path, comments="%", skiprows=2),
    }
    times = best_of(readers, repeat)
    times["daphnec end to end -> dense (now())"] = min(daphnec_seconds(folder, path.name) for _ in range(repeat))
    table(
        f"Matrix Market, {nnz:,} entries",
        times,
        "daphnec kernel readMatrix -> CSR",
        {"fast_matrix_market.read_coo (triplets)": ">= 0.5x", "numpy.loadtxt (triplets)": ">= 5x"},
    )


def bench_graph(folder: Path, repeat: int) -> None:
    import fast_matrix_market as fmm

    from daphnec.tools.gen_graph import main as gen_graph

    path = folder / "amazon.mtx"
    t0 = time.perf_counter()
    gen_graph([str(path)])
    print(f"daphnec.tools.gen_graph (default amazon size) took {time.perf_counter() - t0:.2f} s")
    meta = kio.read_meta(str(path))
    readers: dict[str, Callable[[], object]] = {
        "daphnec kernel readMatrix -> CSR (symmetrised)": lambda: kio.read_matrix(
            str(path), vt="f64", sparse=True, rows=meta.num_rows, cols=meta.num_cols
        ),
        "fast_matrix_market.read_coo (symmetrised)": lambda: fmm.read_coo(str(path)),
    }
    table(
        f"Graph, {meta.num_non_zeros:,} stored non-zeros",
        best_of(readers, repeat),
        "daphnec kernel readMatrix -> CSR (symmetrised)",
        {},
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=3, help="runs per reader (the best is shown)")
    p.add_argument("--scale", type=float, default=1.0, help="shrink the data (0.1 = a tenth) for a quick check")
    p.add_argument("--graph", action="store_true", help="also generate and read the amazon-sized graph")
    p.add_argument("--keep", help="generate the files in this folder and keep them")
    a = p.parse_args()
    print(
        f"python {sys.version.split()[0]}, numpy {np.__version__}, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    with tempfile.TemporaryDirectory(prefix="daphnec-io-bench-") as tmp:
        folder = Path(a.keep) if a.keep else Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        bench_csv(folder, int(1_000_000 * a.scale), 10, a.repeat)
        bench_mtx(folder, int(10_000 * a.scale), 5_000, int(10_000_000 * a.scale), a.repeat)
        if a.graph:
            bench_graph(folder, a.repeat)


if __name__ == "__main__":
    main()
