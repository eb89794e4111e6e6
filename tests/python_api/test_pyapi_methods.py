"""Every API method against the equivalent hand-written DaphneDSL program, run in the same process: the results
must be identical (values, value types, frame labels), so the API maps each method to DAPHNE's semantics (axis
meaning, operand order, value-type rules) and not to numpy's."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from api_harness import assert_same, run_dsl

from daphnec import DaphneContext

PRELUDE = """\
X = rand(4, 3, -2.0, 5.0, 1.0, 7);
Y = rand(4, 3, 1.0, 3.0, 1.0, 8);
P = rand(4, 3, 0.5, 4.0, 1.0, 9);
I = rand(4, 3, -5, 5, 1.0, 10);
C = rand(4, 1, 1.0, 2.0, 1.0, 11);
Rw = rand(1, 3, 1.0, 2.0, 1.0, 12);
S = rand(3, 3, 1.0, 2.0, 1.0, 13) + diagMatrix(fill(5.0, 3, 1));
b = rand(3, 1, 0.0, 1.0, 1.0, 14);
s = sum(X);
U = rand(4, 3, -1.0, 1.0, 1.0, 15);
u = mean(U);
F = createFrame(seq(1, 4, 1), C, "k", "v");
G = createFrame(seq(4, 1, -1), C * 2, "k2", "w");
"""


@dataclass
class Data:
    """The prelude's values, built through the API."""

    X: Any
    Y: Any
    P: Any
    I: Any  # noqa: E741 - the prelude's name
    C: Any
    Rw: Any
    S: Any
    b: Any
    s: Any
    U: Any
    u: Any
    F: Any
    G: Any
    dc: Any


def data(dc: DaphneContext) -> Data:
    C = dc.rand(4, 1, 1.0, 2.0, 1.0, 11)
    X = dc.rand(4, 3, -2.0, 5.0, 1.0, 7)
    U = dc.rand(4, 3, -1.0, 1.0, 1.0, 15)
    return Data(
        X=X,
        Y=dc.rand(4, 3, 1.0, 3.0, 1.0, 8),
        P=dc.rand(4, 3, 0.5, 4.0, 1.0, 9),
        I=dc.rand(4, 3, -5, 5, 1.0, 10),
        C=C,
        Rw=dc.rand(1, 3, 1.0, 2.0, 1.0, 12),
        S=dc.rand(3, 3, 1.0, 2.0, 1.0, 13) + dc.diagMatrix(dc.fill(5.0, 3, 1)),
        b=dc.rand(3, 1, 0.0, 1.0, 1.0, 14),
        s=X.sum(),
        U=U,
        u=U.mean(),
        F=dc.createFrame([dc.seq(1, 4, 1), C], ["k", "v"]),
        G=dc.createFrame([dc.seq(4, 1, -1), C * 2], ["k2", "w"]),
        dc=dc,
    )


Case = tuple[str, Callable[[Data], Any], str]


@functools.cache
def expected(expr: str) -> object:
    """The value of a DaphneDSL expression over the prelude (computed once per test session)."""
    return run_dsl(f"{PRELUDE}Res = {expr};\nsaveDaphneLibResult(Res);\n")


_UNARY = ("abs sign exp ln sqrt round floor ceil sin cos tan asin acos atan sinh cosh tanh isNan").split()
#: The operand of each unary method: X (mixed signs) unless the function's domain needs P (> 0) or U ([-1, 1]).
_DOMAIN = {"ln": ("P", "s"), "sqrt": ("P", "s"), "asin": ("U", "u"), "acos": ("U", "u")}
_OUTER = "Add Sub Mul Div Pow Log Mod Min Max And Or Xor Concat Eq Neq Lt Le Gt Ge".split()
_AGG = ("sum", "aggMin", "aggMax", "mean", "var", "stddev")


def method(owner: str, name: str, *args: object, **kwargs: object) -> Callable[[Data], Any]:
    """`d.<owner>.<name>(*args, **kwargs)`, where a string argument naming a prelude value is that value."""

    def build(d: Data) -> Any:
        values = [getattr(d, a) if isinstance(a, str) and hasattr(d, a) else a for a in args]
        return getattr(getattr(d, owner), name)(*values, **kwargs)

    return build


_COMPARE = {"<": "__lt__", "<=": "__le__", ">": "__gt__", ">=": "__ge__", "==": "__eq__", "!=": "__ne__"}

CASES: list[Case] = [
    *(
        (
            f"{_DOMAIN.get(u, ('X',))[0]}.{u}()",
            method(_DOMAIN.get(u, ("X",))[0], u),
            f"{u}({_DOMAIN.get(u, ('X',))[0]})",
        )
        for u in _UNARY
    ),
    *(
        (
            f"{_DOMAIN.get(u, ('', 's'))[1]}.{u}()",
            method(_DOMAIN.get(u, ("", "s"))[1], u),
            f"{u}({_DOMAIN.get(u, ('', 's'))[1]})",
        )
        for u in _UNARY
    ),
    *((f"X.{m}(Y)", method("X", m, "Y"), f"{m}(X, Y)") for m in ("pow", "mod", "min", "max")),
    ("P.log(Y)", lambda d: d.P.log(d.Y), "log(P, Y)"),
    ("X.pow(2)", lambda d: d.X.pow(2), "pow(X, 2)"),
    *((f"s.{m}(3.5)", method("s", m, 3.5), f"{m}(s, 3.5)") for m in ("pow", "log", "mod", "min", "max")),
    *((f"C.outer{o}(Rw)", method("C", f"outer{o}", "Rw"), f"outer{o}(C, Rw)") for o in _OUTER),
    *((f"X.{a}()", method("X", a), f"{a}(X)") for a in _AGG),
    *((f"X.{a}(axis=0)", method("X", a, axis=0), f"{a}(X, 0)") for a in _AGG),
    *((f"X.{a}(axis=1)", method("X", a, axis=1), f"{a}(X, 1)") for a in _AGG),
    *((f"I.{a}(axis=1)", method("I", a, axis=1), f"{a}(I, 1)") for a in ("sum", "mean")),
    ("X.idxMin(0)", lambda d: d.X.idxMin(0), "idxMin(X, 0)"),
    ("X.idxMin(1)", lambda d: d.X.idxMin(1), "idxMin(X, 1)"),
    ("X.idxMax(0)", lambda d: d.X.idxMax(0), "idxMax(X, 0)"),
    ("X.idxMax(1)", lambda d: d.X.idxMax(1), "idxMax(X, 1)"),
    *((f"X.{c}()", method("X", c), f"{c}(X)") for c in ("cumSum", "cumProd", "cumMin", "cumMax")),
    ("X.nrow()", lambda d: d.X.nrow(), "nrow(X)"),
    ("X.ncol()", lambda d: d.X.ncol(), "ncol(X)"),
    ("X.ncell()", lambda d: d.X.ncell(), "ncell(X)"),
    ("X.t()", lambda d: d.X.t(), "t(X)"),
    ("X.reshape(6, 2)", lambda d: d.X.reshape(6, 2), "reshape(X, 6, 2)"),
    ("X.cbind(Y)", lambda d: d.X.cbind(d.Y), "cbind(X, Y)"),
    ("X.rbind(Y)", lambda d: d.X.rbind(d.Y), "rbind(X, Y)"),
    ("X.reverse()", lambda d: d.X.reverse(), "reverse(X)"),
    ("S.lowerTri(True, False)", lambda d: d.S.lowerTri(True, False), "lowerTri(S, true, false)"),
    ("S.upperTri(False, True)", lambda d: d.S.upperTri(False, True), "upperTri(S, false, true)"),
    ("I.replace(0, 99)", lambda d: d.I.replace(0, 99), "replace(I, 0, 99)"),
    ("X.order(...)", lambda d: d.X.order([0, 1], [True, False], False), "order(X, 0, 1, true, false, false)"),
    ("X.order(..., True)", lambda d: d.X.order([2], [False], True), "order(X, 2, false, true)"),
    ("abs(I).oneHot(info)", lambda d: abs(d.I).oneHot(d.dc.fill(6, 1, 3)), "oneHot(abs(I), fill(6, 1, 3))"),
    ("X.bin(3)", lambda d: d.X.bin(3), "bin(X, 3)"),
    ("X.bin(3, -2.0, 5.0)", lambda d: d.X.bin(3, -2.0, 5.0), "bin(X, 3, -2.0, 5.0)"),
    ("S.diagVector()", lambda d: d.S.diagVector(), "diagVector(S)"),
    ("S.solve(b)", lambda d: d.S.solve(d.b), "solve(S, b)"),
    ("X.asType(vtype='f32')", lambda d: d.X.asType(vtype="f32"), "as.f32(X)"),
    ("X.asType('matrix', 'si64')", lambda d: d.X.asType("matrix", "si64"), "as.matrix<si64>(X)"),
    ("X.asType('frame')", lambda d: d.X.asType("frame"), "as.frame(X)"),
    ("(X > 0).ifElse(X, Y)", lambda d: (d.X > 0).ifElse(d.X, d.Y), "(X > 0) ? X : Y"),
    ("(X > 0).ifElse(1.0, s)", lambda d: (d.X > 0).ifElse(1.0, d.s), "(X > 0) ? 1.0 : s"),
    # operators
    ("X + Y", lambda d: d.X + d.Y, "X + Y"),
    ("X - Y", lambda d: d.X - d.Y, "X - Y"),
    ("X * Y", lambda d: d.X * d.Y, "X * Y"),
    ("X / Y", lambda d: d.X / d.Y, "X / Y"),
    ("X ** 2", lambda d: d.X**2, "X ^ 2"),
    ("X % 3", lambda d: d.X % 3, "X % 3"),
    ("I / 2", lambda d: d.I / 2, "I / 2"),
    ("X @ t(Y)", lambda d: d.X @ d.Y.t(), "X @ t(Y)"),
    ("X - Rw (row broadcast)", lambda d: d.X - d.Rw, "X - Rw"),
    ("X / C (column broadcast)", lambda d: d.X / d.C, "X / C"),
    *((f"X {op} Y", method("X", dunder, "Y"), f"X {op} Y") for op, dunder in _COMPARE.items()),
    ("2 < X", lambda d: 2 < d.X, "X > 2"),
    ("2 * X", lambda d: 2 * d.X, "2 * X"),
    ("1 - X", lambda d: 1 - d.X, "1 - X"),
    ("10 / P", lambda d: 10 / d.P, "10 / P"),
    ("2 ** X", lambda d: 2**d.X, "2 ^ X"),
    ("7 % I", lambda d: 7 % (abs(d.I) + 1), "7 % (abs(I) + 1)"),
    ("-X", lambda d: -d.X, "-X"),
    ("X // 2", lambda d: d.X // 2, "floor(as.f64(X) / 2.0)"),
    ("s + 1", lambda d: d.s + 1, "s + 1"),
    ("1 - s", lambda d: 1 - d.s, "1 - s"),
    ("s ** 2", lambda d: d.s**2, "s ^ 2"),
    ("s % 3", lambda d: d.s % 3, "s % 3"),
    ("s // 2", lambda d: d.s // 2, "floor(as.f64(s) / 2.0)"),
    ("7 // s", lambda d: 7 // d.s, "floor(7.0 / as.f64(s))"),
    ("-s", lambda d: -d.s, "-s"),
    ("s < 3", lambda d: d.s < 3, "s < 3"),
    ("s * X (a matrix)", lambda d: d.s * d.X, "s * X"),
    # indexing
    ("X[1:3, 0:2]", lambda d: d.X[1:3, 0:2], "X[1:3, 0:2]"),
    ("X[1, :]", lambda d: d.X[1, :], "X[1, ]"),
    ("X[:, 2]", lambda d: d.X[:, 2], "X[, 2]"),
    ("X[2:, ]", lambda d: d.X[2:,], "X[2:, ]"),
    ("X[seq(0, 2, 2), ]", lambda d: d.X[d.dc.seq(0, 2, 2),], "X[seq(0, 2, 2), ]"),
    ("X[nrow(X) - 1, ]", lambda d: d.X[d.X.nrow() - 1, :], "X[nrow(X) - 1, ]"),
    # frames
    ("F.rbind(F)", lambda d: d.F.rbind(d.F), "rbind(F, F)"),
    ("F.cbind(G)", lambda d: d.F.cbind(d.G), "cbind(F, G)"),
    ("F.cartesian(G)", lambda d: d.F.cartesian(d.G), "cartesian(F, G)"),
    ("F.innerJoin(G, 'k', 'k2')", lambda d: d.F.innerJoin(d.G, "k", "k2"), 'innerJoin(F, G, "k", "k2")'),
    ("F.setColLabels", lambda d: d.F.setColLabels(["x", "y"]), 'setColLabels(F, "x", "y")'),
    ("F.setColLabelsPrefix", lambda d: d.F.setColLabelsPrefix("p"), 'setColLabelsPrefix(F, "p")'),
    ("F.toMatrix()", lambda d: d.F.toMatrix(), "as.matrix<f64>(F)"),
    ("F.toMatrix('si64')", lambda d: d.F.toMatrix("si64"), "as.matrix<si64>(F)"),
    ("F.nrow()", lambda d: d.F.nrow(), "nrow(F)"),
    ("F.ncol()", lambda d: d.F.ncol(), "ncol(F)"),
    ("F.ncell()", lambda d: d.F.ncell(), "ncell(F)"),
    ("F.order(...)", lambda d: d.F.order([1], [False], False), "order(F, 1, false, false)"),
    ("F.order(..., True)", lambda d: d.F.order([1], [False], True), "order(F, 1, false, true)"),
    # the context
    ("dc.fill", lambda d: d.dc.fill(2.5, 2, 3), "fill(2.5, 2, 3)"),
    ("dc.seq", lambda d: d.dc.seq(1, 10, 3), "seq(1, 10, 3)"),
    ("dc.seq default inc", lambda d: d.dc.seq(1.0, 4.0), "seq(1.0, 4.0, 1)"),
    ("dc.rand", lambda d: d.dc.rand(3, 2, 0, 10, 0.5, 42), "rand(3, 2, 0, 10, 0.5, 42)"),
    ("dc.rand defaults", lambda d: d.dc.rand(3, 2), "rand(3, 2, 0.0, 1.0, 1.0, 0)"),
    ("dc.createFrame", lambda d: d.dc.createFrame([d.C, d.C + 1]), "createFrame(C, C + 1)"),
    ("dc.diagMatrix", lambda d: d.dc.diagMatrix(d.C), "diagMatrix(C)"),
    ("dc.sample", lambda d: d.dc.sample(10, 5, False, 3), "sample(10, 5, false, 3)"),
    ("dc.logical_and", lambda d: d.dc.logical_and(d.s > 1, d.s < 100), "(s > 1) && (s < 100)"),
    ("dc.logical_or", lambda d: d.dc.logical_or(d.s > 1e9, d.s < 0), "(s > 1e9) || (s < 0)"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_method_matches_daphnedsl(case: Case) -> None:
    _, build, expr = case
    assert_same(build(data(DaphneContext())).compute(), expected(expr))


_MATRICES = ("X", "Y", "P", "I", "C", "Rw", "S", "b", "U")


def numpy_data(dc: DaphneContext, layout: str) -> Data:
    """The prelude's matrices as numpy inputs in another memory layout (`F` order, or strided views)."""
    values = {m: expected(m) for m in _MATRICES}
    if layout == "F":
        arrays = {m: np.asfortranarray(v) for m, v in values.items()}
    else:  # every other row and column of a bigger array: neither C- nor F-contiguous
        arrays = {}
        for m, v in values.items():
            big = np.zeros((2 * v.shape[0], 2 * v.shape[1]), dtype=v.dtype)
            big[::2, ::2] = v
            arrays[m] = big[::2, ::2]
    M = {m: dc.from_numpy(a) for m, a in arrays.items()}
    return Data(
        **M,
        s=M["X"].sum(),
        u=M["U"].mean(),
        F=dc.createFrame([dc.seq(1, 4, 1), M["C"]], ["k", "v"]),
        G=dc.createFrame([dc.seq(4, 1, -1), M["C"] * 2], ["k2", "w"]),
        dc=dc,
    )


@pytest.mark.parametrize("layout", ["F", "strided"])
def test_methods_on_other_layouts(layout: str) -> None:
    """Kernels take numpy inputs in any layout (zero-copy): every case gives the same result on F-ordered and on
    strided inputs as the DaphneDSL program on its own (C-ordered) matrices."""
    d = numpy_data(DaphneContext(), layout)
    for name, build, expr in CASES:
        try:
            assert_same(build(d).compute(), expected(expr))
        except AssertionError as e:
            raise AssertionError(f"{name} on {layout} inputs: {e}") from None


def test_left_indexing_matches_daphnedsl() -> None:
    d = data(DaphneContext())
    Z = d.X
    Z[0:2, 1] = d.dc.fill(9.0, 2, 1)
    Z[3, :] = 0.5
    expected = run_dsl(f"{PRELUDE}Z = X;\nZ[0:2, 1] = fill(9.0, 2, 1);\nZ[3, ] = 0.5;\nsaveDaphneLibResult(Z);\n")
    assert_same(Z.compute(), expected)
    assert_same(d.X.compute(), expected)  # the handle X is Z
    before = run_dsl(f"{PRELUDE}saveDaphneLibResult(X);\n")
    assert_same(data(DaphneContext()).X.compute(), before)


def test_print_matches_daphnedsl(capfd: pytest.CaptureFixture[str]) -> None:
    """`print()` nodes print exactly what DaphneDSL's print does (matrix, frame, scalar)."""
    d = data(DaphneContext())
    for value in (d.X, d.F, d.s, d.I):
        assert value.print().compute() is None
    api = capfd.readouterr().out
    run_dsl(f"{PRELUDE}print(X);\nprint(F);\nprint(s);\nprint(I);\n")
    assert api == capfd.readouterr().out
    assert api.startswith("DenseMatrix(4x3, double)\n")


def test_write_matches_daphnedsl(tmp_path) -> None:  # noqa: ANN001 - pytest's tmp_path
    d = data(DaphneContext())
    d.X.write(str(tmp_path / "api.csv")).compute()
    d.F.write(str(tmp_path / "apif.csv")).compute()
    run_dsl(f'{PRELUDE}writeMatrix(X, "{tmp_path}/dsl.csv");\nwriteFrame(F, "{tmp_path}/dslf.csv");\n')
    for a, b in (("api.csv", "dsl.csv"), ("apif.csv", "dslf.csv")):
        assert (tmp_path / a).read_bytes() == (tmp_path / b).read_bytes()
        assert (tmp_path / (a + ".meta")).read_text() == (tmp_path / (b + ".meta")).read_text()
    M = DaphneContext().readMatrix(str(tmp_path / "api.csv")).compute()
    Fr = DaphneContext().readFrame(str(tmp_path / "apif.csv")).compute()
    assert_same(M, run_dsl(f'M = readMatrix("{tmp_path}/dsl.csv");\nsaveDaphneLibResult(M);\n'))
    assert_same(Fr, run_dsl(f'M = readFrame("{tmp_path}/dslf.csv");\nsaveDaphneLibResult(M);\n'))


SQL_QUERIES = [
    "SELECT f.k, f.v FROM f WHERE f.k > 1 AND f.v < 1.8;",
    "SELECT f.k, g.w FROM f, g WHERE f.k = g.k2 ORDER BY g.w DESC;",
    "SELECT f.k, sum(f.v), count(f.k) FROM f GROUP BY f.k;",
    "SELECT DISTINCT g.k2 FROM g;",
]


@pytest.mark.parametrize("query", SQL_QUERIES)
def test_sql_matches_daphnedsl(query: str) -> None:
    """`registerView` + `dc.sql` give what the same views and query give in a DaphneDSL program."""
    d = data(DaphneContext())
    d.F.registerView("f")
    d.G.registerView("g")
    dsl = f'{PRELUDE}registerView("f", F);\nregisterView("g", G);\nRes = sql("{query}");\nsaveDaphneLibResult(Res);\n'
    assert_same(d.dc.sql(query).compute(), run_dsl(dsl))


def test_sql_on_a_pandas_frame_with_strings() -> None:
    """A pandas frame's string column in a filter and as a group key; the view is registered in the query's
    program, and a view registered after the query is not part of it."""
    import pandas as pd

    dc = DaphneContext()
    df = pd.DataFrame({"a": np.array([3, 1, 2, 1], dtype=np.int64), "b": [1.5, 2.5, 3.5, 4.5], "s": list("xyxz")})
    dc.from_pandas(df).registerView("t")
    q = dc.sql("SELECT t.s, sum(t.b) FROM t WHERE t.a > 1 OR t.s = 'z' GROUP BY t.s;")
    dc.from_pandas(df.iloc[:1]).registerView("t")
    res = q.compute()
    assert list(res.columns) == ["t.s", "sum(t.b)"]
    assert res["t.s"].tolist() == ["x", "z"] and res["sum(t.b)"].tolist() == [5.0, 4.5]
