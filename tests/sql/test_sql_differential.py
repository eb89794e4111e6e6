"""Differential tests: random frames (ints, floats, strings) and random queries of DAPHNE's SQL subset, run by
daphnec (in-process, plain, `--vec` and `--columnar`) and by DuckDB on the same data; the printed rows must agree.

Labels are normalised by aliasing every item (`AS c0`, ...); row order follows DAPHNE's documented rules, which the
DuckDB query spells out with ORDER BY: input order for filters, left-major for joins and products (by hidden row
ids), ascending keys for GROUP BY, all columns for DISTINCT, a stable sort for ORDER BY. DuckDB values are converted
to the value types daphnec reports and printed by daphnec's own printer. Under `--columnar` the grouped results
(first-appearance order) are compared as multisets and equi-joins (N:1 there) are not generated. Floats are
multiples of 0.25, so every sum is exact and both engines must agree bit for bit. BETWEEN is symmetric in DAPHNE,
which the DuckDB query writes out.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from daphnec.runtime.config import DaphneConfig
from daphnec.runtime.frame import Frame
from daphnec.runtime.printing import format_frame
from daphnec.tools.driver import compile_script

duckdb = pytest.importorskip("duckdb")

EXAMPLES = int(os.environ.get("DAPHNEC_HYPOTHESIS_EXAMPLES", "20"))
STRINGS = ("a", "b", "c", "ab", "B")  # "B" < "a": strings compare byte-wise in both engines

T_COLS = (("k", "si64"), ("g", "str"), ("x", "f64"), ("y", "si64"))
U_COLS = (("k", "si64"), ("h", "str"), ("z", "f64"))

ints = st.integers(-3, 3)
quarters = st.integers(-8, 8).map(lambda i: i / 4)
strs = st.sampled_from(STRINGS)
t_rows = st.lists(st.tuples(ints, strs, quarters, ints), min_size=1, max_size=12)
u_rows = st.lists(st.tuples(ints, strs, quarters), min_size=1, max_size=8)


# --- queries: one text for daphnec, one for DuckDB -------------------------------------------------------------------


@dataclass(frozen=True)
class Query:
    daphne: str
    duck: str
    ordered: bool = True
    """False: compare the rows as a multiset."""


def _lit(v: float | int) -> str:
    return repr(v)


@st.composite
def num_expr(draw: st.DrawFn, cols: tuple[str, ...], depth: int = 2) -> str:
    if depth == 0 or draw(st.booleans()):
        return draw(st.sampled_from(cols)) if draw(st.integers(0, 3)) else _lit(draw(st.one_of(ints, quarters)))
    op = draw(st.sampled_from(["+", "-", "*"]))
    return f"({draw(num_expr(cols, depth - 1))} {op} {draw(num_expr(cols, depth - 1))})"


@st.composite
def condition(draw: st.DrawFn, cols: tuple[str, ...], strcols: tuple[str, ...], depth: int = 2) -> tuple[str, str]:
    """(daphne, duckdb) texts of a boolean condition."""
    kind = draw(st.sampled_from(["cmp", "cmp", "str", "between", "and", "or"] if depth else ["cmp", "str"]))
    if kind == "cmp":
        op = draw(st.sampled_from(["=", "<>", "<", "<=", ">", ">="]))
        c = f"{draw(num_expr(cols, 1))} {op} {draw(num_expr(cols, 1))}"
        return c, c
    if kind == "str":
        c = f"{draw(st.sampled_from(strcols))} {draw(st.sampled_from(['=', '<>', '<', '>=']))} '{draw(strs)}'"
        return c, c
    if kind == "between":
        x, lo, hi = draw(st.sampled_from(cols)), _lit(draw(ints)), _lit(draw(ints))
        return f"{x} BETWEEN {lo} AND {hi}", f"({x} BETWEEN {lo} AND {hi} OR {x} BETWEEN {hi} AND {lo})"
    (a1, a2), (b1, b2) = draw(condition(cols, strcols, depth - 1)), draw(condition(cols, strcols, depth - 1))
    op = "AND" if kind == "and" else "OR"
    return f"({a1} {op} {b1})", f"({a2} {op} {b2})"


def _items(exprs: list[str]) -> str:
    return ", ".join(f"{e} AS c{i}" for i, e in enumerate(exprs))


T_NUM, T_STR = ("t.k", "t.x", "t.y"), ("t.g",)
TU_NUM, TU_STR = ("t.k", "t.x", "t.y", "u.k", "u.z"), ("t.g", "u.h")


@st.composite
def select_items(draw: st.DrawFn, num: tuple[str, ...], strc: tuple[str, ...]) -> list[str]:
    exprs = draw(st.lists(st.one_of(num_expr(num), st.sampled_from(strc)), min_size=1, max_size=3))
    if draw(st.booleans()):
        exprs.append(draw(condition(num, strc, 0))[0])  # a comparison as a value (0/1)
    return exprs


@st.composite
def where(draw: st.DrawFn, num: tuple[str, ...], strc: tuple[str, ...]) -> tuple[str, str]:
    if draw(st.booleans()):
        return "", ""
    a, b = draw(condition(num, strc))
    return f" WHERE {a}", f" WHERE {b}"


@st.composite
def filter_query(draw: st.DrawFn) -> Query:
    items = _items(draw(select_items(T_NUM, T_STR)))
    w1, w2 = draw(where(T_NUM, T_STR))
    return Query(f"SELECT {items} FROM t{w1}", f"SELECT {items} FROM t{w2} ORDER BY t.rid")


@st.composite
def join_query(draw: st.DrawFn, equi: bool) -> Query:
    items = _items(draw(select_items(TU_NUM, TU_STR)))
    w1, w2 = draw(where(TU_NUM, TU_STR))
    kind = draw(st.sampled_from(["equi", "theta", "product"] if equi else ["theta", "product"]))
    if kind == "product":
        src1 = src2 = "t, u"
    elif kind == "equi":
        on = draw(st.sampled_from(["t.k = u.k", "t.g = u.h", "t.y = u.k"]))
        src1 = src2 = f"t JOIN u ON {on}"
    else:
        conds = draw(st.lists(st.sampled_from(["t.k < u.k", "t.y >= u.k", "t.k <> u.k", "t.g = u.h", "t.g > u.h"]),
                              min_size=2, max_size=3))  # fmt: skip
        src1 = src2 = f"t JOIN u ON {' AND '.join(conds)}"
    return Query(f"SELECT {items} FROM {src1}{w1}", f"SELECT {items} FROM {src2}{w2} ORDER BY t.rid, u.rid")


@st.composite
def group_query(draw: st.DrawFn, columnar: bool) -> Query:
    keys = draw(st.sampled_from([["t.g"], ["t.k"], ["t.g", "t.k"], ["t.k", "t.g"]]))
    aggs = []
    for _ in range(draw(st.integers(0 if columnar else 1, 3))):
        f = draw(st.sampled_from(["sum", "count", "min", "max", "avg"]))
        arg = draw(st.sampled_from(["t.g"])) if f in ("min", "max", "count") and draw(st.booleans()) else None
        aggs.append(f"{f}({arg or draw(num_expr(T_NUM, 1))})")
    w1, w2 = draw(where(T_NUM, T_STR))
    having = ""
    if aggs and draw(st.booleans()):
        having = f" HAVING count(t.k) > {draw(st.integers(0, 2))}"
    sel = ", ".join(keys + [f"{a} AS c{i}" for i, a in enumerate(aggs)])
    group = f" GROUP BY {', '.join(keys)}{having}"
    sums_only = all(a.startswith("sum(") for a in aggs) and "count" not in having
    return Query(
        f"SELECT {sel} FROM t{w1}{group}",
        f"SELECT {sel} FROM t{w2}{group} ORDER BY {', '.join(keys)}",
        ordered=not (columnar and sums_only),
    )


@st.composite
def aggregate_query(draw: st.DrawFn) -> Query:
    funcs = draw(st.lists(st.sampled_from(["sum", "count", "min", "max", "avg"]), min_size=1, max_size=4))
    items = _items([f"{f}({draw(num_expr(T_NUM, 1))})" for f in funcs])
    return Query(f"SELECT {items} FROM t", f"SELECT {items} FROM t")  # over no rows DuckDB gives NULL


@st.composite
def distinct_query(draw: st.DrawFn) -> Query:
    exprs = draw(
        st.lists(st.sampled_from(["t.g", "t.k", "t.y", "(t.k * 2)", "t.x"]), min_size=1, max_size=3, unique=True)
    )
    w1, w2 = draw(where(T_NUM, T_STR))
    order = ", ".join(str(i + 1) for i in range(len(exprs)))
    return Query(
        f"SELECT DISTINCT {_items(exprs)} FROM t{w1}", f"SELECT DISTINCT {_items(exprs)} FROM t{w2} ORDER BY {order}"
    )


@st.composite
def order_query(draw: st.DrawFn) -> Query:
    keys = draw(st.lists(st.sampled_from(["t.k", "t.g", "t.x", "t.y"]), min_size=1, max_size=3, unique=True))
    dirs = [draw(st.sampled_from(["", " ASC", " DESC"])) for _ in keys]
    by = ", ".join(k + d for k, d in zip(keys, dirs))
    items = _items(draw(select_items(T_NUM, T_STR)))
    return Query(f"SELECT {items} FROM t ORDER BY {by}", f"SELECT {items} FROM t ORDER BY {by}, t.rid")


def queries(mode: str) -> st.SearchStrategy[Query]:
    columnar = mode == "columnar"
    return st.one_of(
        filter_query(), join_query(equi=not columnar), group_query(columnar), aggregate_query(), distinct_query(),
        order_query(),
    )  # fmt: skip


# --- running both ----------------------------------------------------------------------------------------------------


def _literal_frame(name: str, cols: tuple[tuple[str, str], ...], rows: list[tuple]) -> str:
    parts = []
    for j, (_, vt) in enumerate(cols):
        vals = [f'"{r[j]}"' if vt == "str" else repr(r[j]) for r in rows]
        parts.append(f"[{', '.join(vals)}]")
    labels = ", ".join(f'"{c}"' for c, _ in cols)
    return f'{name} = createFrame({", ".join(parts)}, {labels});\nregisterView("{name}", {name});\n'


_CONFIGS = {"plain": {}, "vec": {"use_vectorized_exec": True}, "columnar": {"use_columnar": True}}


def run_daphnec(tmp: Path, t: list[tuple], u: list[tuple], query: str, mode: str) -> str:
    script = tmp / "q.daph"
    script.write_text(_literal_frame("t", T_COLS, t) + _literal_frame("u", U_COLS, u) + f'print(sql("{query}"));\n')
    cfg = DaphneConfig()
    for k, v in _CONFIGS[mode].items():
        setattr(cfg, k, v)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        compile_script(str(script), {}, cfg, {}).run()
    return out.getvalue()


_DTYPES = {"int64_t": np.int64, "double": np.float64, "std::string": object, "uint64_t": np.uint64}


def run_duckdb(t: list[tuple], u: list[tuple], query: str, header: str) -> str:
    """DuckDB's rows converted to the value types in daphnec's frame header, printed by daphnec's printer."""
    import pyarrow as pa

    con = duckdb.connect()
    for name, cols, rows in (("t", T_COLS, t), ("u", U_COLS, u)):
        data = {c: [r[j] for r in rows] for j, (c, _) in enumerate(cols)}
        data["rid"] = list(range(len(rows)))
        con.register(name, pa.table(data))
    result = con.execute(_doubles(query)).fetchall()
    types = re.findall(r":([^,\]]+)", header)
    cols = []
    for j, ty in enumerate(types):
        vals = [r[j] for r in result]
        cols.append(np.array([str(v) if ty == "std::string" else v for v in vals], dtype=_DTYPES[ty]))
    return format_frame(Frame(cols, [f"c{j}" for j in range(len(cols))]))


_FLOAT = re.compile(r"(?<![\w.'])-?\d+\.\d+(?![\w'])")


def _doubles(query: str) -> str:
    """DuckDB reads `0.25` as a DECIMAL (whose products have no sign bit: `0.0 * -6` is 0); DAPHNE's literals are
    doubles (`-0` is printed as `-0`), so the DuckDB query casts them."""
    return _FLOAT.sub(lambda m: f"CAST({m.group(0)} AS DOUBLE)", query)


def rows_of(printed: str) -> list[str]:
    return printed.splitlines()[1:]


@pytest.mark.parametrize("mode", list(_CONFIGS))
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(t=t_rows, u=u_rows, data=st.data())
def test_queries_agree_with_duckdb(tmp_path_factory, mode: str, t, u, data) -> None:  # noqa: ANN001
    query = data.draw(queries(mode))
    tmp = tmp_path_factory.mktemp("sql")
    ours = run_daphnec(tmp, t, u, query.daphne, mode)
    header = ours.splitlines()[0]
    theirs = run_duckdb(t, u, query.duck, header)
    if query.ordered:
        assert rows_of(ours) == rows_of(theirs), (query, ours, theirs)
    else:
        assert sorted(rows_of(ours)) == sorted(rows_of(theirs)), (query, ours, theirs)
