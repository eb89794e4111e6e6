"""Differential test of `fuse-filter-agg` (compiler/passes/fuse_filter_agg.py): random frames and random queries
`SELECT sum(..), min(..), max(..), count(..) FROM t WHERE ..` and `SELECT keys, sum(..), avg(..), count(..) FROM t
WHERE .. GROUP BY keys` (int and string keys), run in-process with the pass and without it.

The promise: on the default path the fused pipeline folds in DAPHNE's sequential order, so the printed result is
byte-identical to the unfused ops; under `--vec` sums are per-task partials combined in task order, within 1e-12
relative of the unfused result, and min, max and count are exact, whatever the thread count and the task size.
Floats are arbitrary doubles (with NaN and infinities sometimes), so sums really depend on their order.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from daphnec.compiler.passes import fuse_filter_agg
from daphnec.runtime.config import DaphneConfig
from daphnec.tools.driver import compile_script

EXAMPLES = max(1, int(os.environ.get("DAPHNEC_HYPOTHESIS_EXAMPLES", "20")) // 2)  # 5 compiles per example
NUM = ("t.k", "t.x", "t.y", "t.d")


@st.composite
def num_expr(draw: st.DrawFn, depth: int = 2) -> str:
    if depth == 0 or draw(st.booleans()):
        return draw(st.sampled_from(NUM)) if draw(st.integers(0, 3)) else repr(draw(st.sampled_from([2, 0.5, -1])))
    op = draw(st.sampled_from(["+", "-", "*"]))
    return f"({draw(num_expr(depth - 1))} {op} {draw(num_expr(depth - 1))})"


@st.composite
def condition(draw: st.DrawFn, depth: int = 2) -> str:
    kind = draw(st.sampled_from(["cmp", "cmp", "between", "and", "or"] if depth else ["cmp"]))
    if kind == "cmp":
        op = draw(st.sampled_from(["=", "<>", "<", "<=", ">", ">="]))
        return f"{draw(st.sampled_from(NUM))} {op} {draw(num_expr(1))}"
    if kind == "between":
        return f"{draw(st.sampled_from(NUM))} BETWEEN {draw(num_expr(0))} AND {draw(num_expr(0))}"
    return f"{draw(condition(depth - 1))} {kind.upper()} {draw(condition(depth - 1))}"


@st.composite
def query(draw: st.DrawFn) -> str:
    funcs = draw(st.lists(st.sampled_from(["sum", "sum", "min", "max", "count"]), min_size=1, max_size=4))
    args = [draw(num_expr()) for _ in funcs]
    args = [a if "t." in a else f"({a} * t.x)" for a in args]  # a constant is filled to a column: not fused
    items = ", ".join(f"{f}({a}) AS a{i}" for i, (f, a) in enumerate(zip(funcs, args)))
    return f"SELECT {items} FROM t WHERE {draw(condition())}"


@st.composite
def group_query(draw: st.DrawFn) -> str:
    keys = draw(st.lists(st.sampled_from(["t.k", "t.g", "t.y"]), min_size=1, max_size=2, unique=True))
    funcs = draw(st.lists(st.sampled_from(["sum", "avg", "count"]), min_size=1, max_size=3))
    args = [draw(num_expr()) for _ in funcs]
    args = [a if "t." in a else f"({a} * t.x)" for a in args]
    items = ", ".join([*keys, *(f"{f}({a}) AS a{i}" for i, (f, a) in enumerate(zip(funcs, args)))])
    return f"SELECT {items} FROM t WHERE {draw(condition())} GROUP BY {', '.join(keys)}"


def frame_script(seed: int, rows: int, specials: bool) -> str:
    rng = np.random.default_rng(seed)
    x = rng.normal(0.0, 100.0, rows)
    if specials:
        x[rng.integers(0, rows, 3)] = rng.choice([np.nan, np.inf, -np.inf], 3)
    cols = {
        "k": [str(v) for v in rng.integers(-3, 4, rows)],
        "x": [repr(float(v)) for v in x],
        "y": [str(v) for v in rng.integers(-3, 4, rows)],
        "d": [repr(float(v)) for v in rng.integers(-8, 9, rows) / 4],
        "g": [f'"{v}"' for v in rng.choice(["a", "b", "B", "ab"], rows)],
    }
    mats = ", ".join(f"[{', '.join(v)}]" for v in cols.values())
    labels = ", ".join(f'"{c}"' for c in cols)
    return f'T = createFrame({mats}, {labels});\nregisterView("t", T);\n'


def run(tmp: Path, script: str, fused: bool, vec: bool, threads: int = 2, grain: int = 1) -> tuple[str, bool]:
    """The printed output and whether the compiled program holds a fused selection (`daphne.cond`)."""
    path = tmp / "q.daph"
    path.write_text(script)
    cfg = DaphneConfig()
    cfg.use_vectorized_exec = vec
    cfg.num_threads = threads
    cfg.grain_size = grain
    out = io.StringIO()
    with pytest.MonkeyPatch.context() as mp:
        if not fused:
            mp.setattr(fuse_filter_agg, "fuse_filters_in", lambda block, ordered: None)
        program = compile_script(str(path), {}, cfg, {})
        with contextlib.redirect_stdout(out):
            program.run()
    return out.getvalue(), program.module is not None and "daphne.cond" in str(program.module)


def written(tmp: Path) -> list[float | str]:
    """The cells the script wrote to out.csv (`%f`, as DAPHNE writes floats: more digits than `print` shows),
    numbers as floats, strings (group keys) as they are."""
    cells = (tmp / "out.csv").read_text().replace("\n", ",").split(",")
    out: list[float | str] = []
    for c in (c for c in cells if c):
        try:
            out.append(float(c))
        except ValueError:
            out.append(c)
    return out


def same(a: float | str, b: float | str) -> bool:
    return close(a, b) if isinstance(a, float) and isinstance(b, float) else a == b


def close(a: float, b: float) -> bool:
    """Within 1e-12 relative (or the 1e-6 absolute resolution of `%f`); NaN and infinities must be equal."""
    if math.isnan(a) or math.isnan(b) or math.isinf(a) or math.isinf(b):
        return (math.isnan(a) and math.isnan(b)) or a == b
    return abs(a - b) <= max(1e-12 * max(abs(a), abs(b)), 1e-6)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    q=st.one_of(query(), group_query()),
    seed=st.integers(0, 2**32 - 1),
    rows=st.integers(1, 300),
    specials=st.booleans(),
)
def test_fused_equals_unfused(tmp_path_factory, q: str, seed: int, rows: int, specials: bool) -> None:  # noqa: ANN001
    tmp = tmp_path_factory.mktemp("fusion")
    script = frame_script(seed, rows, specials) + f'r = sql("{q}");\nprint(r);\nwriteFrame(r, "{tmp}/out.csv");\n'
    plain, _ = run(tmp, script, fused=False, vec=False)
    expected = written(tmp)
    fused, did_fuse = run(tmp, script, fused=True, vec=False)
    assert did_fuse
    assert fused == plain  # ordered folds: byte-identical
    for threads, grain in ((1, 1), (2, 1), (2, 7)):
        vec, _ = run(tmp, script, fused=True, vec=True, threads=threads, grain=grain)
        assert vec.splitlines()[0] == plain.splitlines()[0] and len(vec.splitlines()) == len(plain.splitlines())
        got = written(tmp)
        assert all(same(a, b) for a, b in zip(got, expected, strict=True)), (q, got, expected)


def test_large_sum_is_close_across_partitionings(tmp_path: Path) -> None:
    """Many rows, several tasks: the partial sums combine in task order, within 1e-12 of the sequential fold."""
    script = (
        "n = 200000;\n"
        'u = createFrame(seq(1, n), rand(n, 1, -1000.0, 1000.0, 1, 7), "i", "v");\n'
        'registerView("u", u);\n'
        'r = sql("SELECT sum(u.v * u.v) AS s, sum(u.v) AS t, max(u.v) AS m FROM u WHERE u.i > 17 AND u.v < 900.0");\n'
        f'print(r);\nwriteFrame(r, "{tmp_path}/out.csv");\n'
    )
    plain, _ = run(tmp_path, script, fused=False, vec=False)
    want = written(tmp_path)
    fused, did = run(tmp_path, script, fused=True, vec=False)
    assert did and fused == plain and written(tmp_path) == want
    for threads, grain in ((1, 1), (2, 1000), (2, 33333)):
        run(tmp_path, script, fused=True, vec=True, threads=threads, grain=grain)
        got = written(tmp_path)
        assert got[2] == want[2]
        assert all(same(a, b) for a, b in zip(got, want, strict=True)), (got, want)
