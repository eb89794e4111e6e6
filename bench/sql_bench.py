"""SQL benchmark: TPC-H-shaped queries on frames, daphnec against DuckDB, polars and numpy (not a test).

    .venv/bin/python bench/sql_bench.py [--scale 1.0] [--repeat 3] [--threads 2] [--modes plain,vec,columnar]

Generates in a temporary folder a `lineitem`-like frame of 6,000,000 rows (quantity, price, discount, tax as f64,
ship date as si64 days, order key as si64, return flag and line status as one-character strings) and an
`orders`-like frame of 1,500,000 rows (order key, priority as a string, order date), written once as CSV with
`.meta` files. Every engine has the data in memory before timing starts:
- daphnec: a script reads both frames with readFrame, then runs each query `--repeat` times between two `now()`
  calls (compilation, start-up and reading are not timed), once per mode (plain, `--vec`, `--columnar`);
- DuckDB: native in-memory tables, `SET threads`; polars: DataFrames, `POLARS_MAX_THREADS`; numpy: a hand-written
  formulation of each query on the column arrays (boolean masks, bincount), one thread.
Queries: Q6 (three range filters, `sum(price * discount)`), Q1 (a filter, GROUP BY two low-cardinality string keys,
eight aggregates, ORDER BY) and a join of lineitem with orders on the order key followed by GROUP BY priority.
The table shows the best time of each and DuckDB's time / the engine's time (> 1: faster than DuckDB); for Q6 also
the bandwidth of the 4 columns read (4 x 8 bytes x rows / seconds).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

Q6 = (
    "SELECT sum(l.price * l.discount) AS revenue FROM lineitem AS l "
    "WHERE l.shipdate >= 8766 AND l.shipdate < 9131 AND l.discount BETWEEN 0.05 AND 0.07 AND l.quantity < 24"
)
Q1 = (
    "SELECT l.returnflag, l.linestatus, sum(l.quantity) AS sum_qty, sum(l.price) AS sum_base, "
    "sum(l.price * (1 - l.discount)) AS sum_disc, sum(l.price * (1 - l.discount) * (1 + l.tax)) AS sum_charge, "
    "avg(l.quantity) AS avg_qty, avg(l.price) AS avg_price, avg(l.discount) AS avg_disc, count(l.quantity) AS n "
    "FROM lineitem AS l WHERE l.shipdate <= 10471 "
    "GROUP BY l.returnflag, l.linestatus ORDER BY l.returnflag, l.linestatus"
)
QJ = (
    "SELECT o.priority, count(l.quantity) AS n, sum(l.price) AS revenue "
    "FROM lineitem AS l JOIN orders AS o ON l.orderkey = o.orderkey "
    "WHERE o.orderdate < 9500 GROUP BY o.priority"
)
QUERIES = {"Q6": Q6, "Q1": Q1, "join": QJ}
DUCK = {"Q6": Q6, "Q1": Q1, "join": QJ + " ORDER BY o.priority"}
PRIORITIES = np.array(["1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"], dtype=object)


# --- data ------------------------------------------------------------------------------------------------------------


def make_data(n: int) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    rng = np.random.default_rng(6)
    m = n // 4
    lineitem = {
        "orderkey": rng.integers(1, m + 1, n),
        "quantity": rng.integers(1, 51, n).astype(np.float64),
        "price": np.round(rng.uniform(900.0, 105000.0, n), 2),
        "discount": rng.integers(0, 11, n) / 100.0,
        "tax": rng.integers(0, 9, n) / 100.0,
        "shipdate": rng.integers(8000, 10600, n),
        "returnflag": np.array(["A", "N", "R"], dtype=object)[rng.integers(0, 3, n)],
        "linestatus": np.array(["F", "O"], dtype=object)[rng.integers(0, 2, n)],
    }
    orders = {
        "orderkey": rng.permutation(np.arange(1, m + 1)),
        "priority": PRIORITIES[rng.integers(0, 5, m)],
        "orderdate": rng.integers(8000, 10600, m),
    }
    return lineitem, orders


def write_frame(folder: Path, name: str, cols: dict[str, np.ndarray]) -> None:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    table = pa.table({k: pa.array(v, type=pa.string()) if v.dtype == object else v for k, v in cols.items()})
    opts = pacsv.WriteOptions(include_header=False, quoting_style="none")
    pacsv.write_csv(table, folder / f"{name}.csv", write_options=opts)
    vt = {"f": "f64", "i": "si64", "O": "str"}
    schema = [{"label": k, "valueType": vt[v.dtype.kind]} for k, v in cols.items()]
    meta = {"numRows": len(next(iter(cols.values()))), "numCols": len(cols), "schema": schema}
    (folder / f"{name}.csv.meta").write_text(json.dumps(meta))


# --- engines ---------------------------------------------------------------------------------------------------------


def best_of(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def daphnec_times(folder: Path, repeat: int, threads: int, flags: list[str]) -> dict[str, float]:
    """Seconds per query (best of `repeat`), timed inside the script with `now()`."""
    lines = ['L = readFrame("lineitem.csv");', 'O = readFrame("orders.csv");', 'registerView("lineitem", L);',
             'registerView("orders", O);']  # fmt: skip
    for name, q in QUERIES.items():  # no query outside the loop: CSE would hoist its result out of the loop
        lines += [f"for (i in 1:{repeat}) {{", "  t0 = now();", f'  r = sql("{q}");', "  t1 = now();",
                  f'  print("{name} " + (t1 - t0));', f"  if (i == {repeat}) {{ print(r); }}", "}"]  # fmt: skip
    (folder / "bench.daph").write_text("\n".join(lines) + "\n")
    cmd = [sys.executable, "-m", "daphnec.tools.daphnec", f"--num-threads={threads}", *flags, "bench.daph"]
    res = subprocess.run(cmd, cwd=folder, capture_output=True, text=True, timeout=3600)
    if res.returncode != 0:
        raise RuntimeError(res.stderr)
    times: dict[str, float] = {}
    for name, ns in re.findall(r"^(Q6|Q1|join) (\d+)$", res.stdout, flags=re.M):
        times[name] = min(times.get(name, float("inf")), int(ns) / 1e9)
    return times


def duckdb_times(lineitem: dict, orders: dict, repeat: int, threads: int) -> dict[str, float]:
    import duckdb
    import pyarrow as pa

    con = duckdb.connect()
    con.execute(f"SET threads = {threads}")
    for name, cols in (("lineitem", lineitem), ("orders", orders)):
        con.register(f"{name}_arrow", pa.table({k: pa.array(v) for k, v in cols.items()}))
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM {name}_arrow")
    return {name: best_of(lambda q=q: con.execute(q).fetchall(), repeat) for name, q in DUCK.items()}


def polars_times(lineitem: dict, orders: dict, repeat: int) -> dict[str, float]:
    import polars as pl

    li, od = pl.DataFrame(lineitem), pl.DataFrame(orders)
    c = pl.col
    q6 = (
        li.lazy()
        .filter(
            (c("shipdate") >= 8766)
            & (c("shipdate") < 9131)
            & c("discount").is_between(0.05, 0.07)
            & (c("quantity") < 24)
        )
        .select((c("price") * c("discount")).sum())
    )
    disc = c("price") * (1 - c("discount"))
    q1 = (
        li.lazy().filter(c("shipdate") <= 10471).group_by("returnflag", "linestatus")
        .agg(c("quantity").sum(), c("price").sum(), disc.sum().alias("d"), (disc * (1 + c("tax"))).sum().alias("ch"),
             c("quantity").mean().alias("aq"), c("price").mean().alias("ap"), c("discount").mean(), pl.len())
        .sort("returnflag", "linestatus")
    )  # fmt: skip
    qj = (
        li.lazy().join(od.lazy().filter(c("orderdate") < 9500), on="orderkey").group_by("priority")
        .agg(pl.len(), c("price").sum()).sort("priority")
    )  # fmt: skip
    return {name: best_of(lambda q=q: q.collect(), repeat) for name, q in (("Q6", q6), ("Q1", q1), ("join", qj))}


def numpy_times(lineitem: dict, orders: dict, repeat: int) -> dict[str, float]:
    li, od = lineitem, orders

    def q6() -> float:
        m = (li["shipdate"] >= 8766) & (li["shipdate"] < 9131) & (li["discount"] >= 0.05) & (li["discount"] <= 0.07)
        m &= li["quantity"] < 24
        return float(np.dot(li["price"][m], li["discount"][m]))

    flag = np.searchsorted(np.array(["A", "N", "R"]), li["returnflag"].astype("U1"))
    status = np.searchsorted(np.array(["F", "O"]), li["linestatus"].astype("U1"))

    def q1() -> list[np.ndarray]:
        m = li["shipdate"] <= 10471
        g = (flag * 2 + status)[m]
        p, d = li["price"][m], li["discount"][m]
        disc = p * (1 - d)
        cnt = np.bincount(g, minlength=6)
        sums = [np.bincount(g, w, minlength=6) for w in (li["quantity"][m], p, disc, disc * (1 + li["tax"][m]), d)]
        return [*sums, sums[0] / cnt, sums[1] / cnt, sums[4] / cnt, cnt]

    pos = np.empty(len(od["orderkey"]) + 1, dtype=np.int64)
    pos[od["orderkey"]] = np.arange(len(od["orderkey"]))
    prio = np.searchsorted(PRIORITIES.astype(str), od["priority"].astype(str))

    def qj() -> tuple[np.ndarray, np.ndarray]:
        o = pos[li["orderkey"]]
        keep = od["orderdate"][o] < 9500
        g = prio[o[keep]]
        return np.bincount(g, minlength=5), np.bincount(g, li["price"][keep], minlength=5)

    return {"Q6": best_of(q6, repeat), "Q1": best_of(q1, repeat), "join": best_of(qj, repeat)}


# --- report ----------------------------------------------------------------------------------------------------------


def report(results: dict[str, dict[str, float]], rows: int) -> None:
    duck = results["DuckDB"]
    print(f"\n| engine | {' | '.join(f'{q} s | DuckDB / engine' for q in QUERIES)} | Q6 GB/s |")
    print("|---|" + "---:|---:|" * len(QUERIES) + "---:|")
    for engine, t in results.items():
        cells = [f"{t[q]:.3f} | {duck[q] / t[q]:.2f}x" if q in t else "- | -" for q in QUERIES]
        gbs = f"{4 * 8 * rows / t['Q6'] / 1e9:.1f}" if "Q6" in t else "-"
        print(f"| {engine} | {' | '.join(cells)} | {gbs} |")
    print("\nGoals: Q6 >= 1.5x DuckDB and >= 70 % of the 2-core memory bandwidth; Q1 >= 1x; join >= 0.5x.")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scale", type=float, default=1.0, help="shrink the data (0.1 = 600,000 lineitem rows)")
    p.add_argument("--repeat", type=int, default=3, help="runs per query (the best is shown)")
    p.add_argument("--threads", type=int, default=2, help="threads for every engine that has them")
    p.add_argument("--modes", default="plain,vec,columnar", help="daphnec modes: plain, vec, columnar")
    a = p.parse_args()
    os.environ["POLARS_MAX_THREADS"] = str(a.threads)
    rows = int(6_000_000 * a.scale)
    print(
        f"python {sys.version.split()[0]}, numpy {np.__version__}, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.2f}, lineitem {rows:,} rows, orders {rows // 4:,} rows"
    )
    lineitem, orders = make_data(rows)
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="daphnec-sql-bench-") as tmp:
        folder = Path(tmp)
        write_frame(folder, "lineitem", lineitem)
        write_frame(folder, "orders", orders)
        results["DuckDB"] = duckdb_times(lineitem, orders, a.repeat, a.threads)
        results["polars"] = polars_times(lineitem, orders, a.repeat)
        results["numpy"] = numpy_times(lineitem, orders, a.repeat)
        flags = {"plain": [], "vec": ["--vec"], "columnar": ["--columnar"]}
        for mode in a.modes.split(","):
            results[f"daphnec {mode}"] = daphnec_times(folder, a.repeat, a.threads, flags[mode])
    report(results, rows)


if __name__ == "__main__":
    main()
