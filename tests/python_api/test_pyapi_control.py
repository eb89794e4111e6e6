"""Control flow and user-defined functions: loops, branches and functions against hand-written DaphneDSL and
numpy; loop-carried variables swapped, values captured from outside, nesting, and misuse."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from api_harness import assert_same, run_dsl

from daphnec import DaphneContext, DaphneUsageError, Frame, Matrix, Scalar


def test_for_loop_matches_daphnedsl(dc: DaphneContext) -> None:
    X = dc.fill(1.0, 2, 2)
    (out,) = dc.for_loop([X], lambda x, i: x * 2 + i, 1, 5, 2)
    expected = run_dsl("X = fill(1.0, 2, 2);\nfor (i in 1:5:2) { X = X * 2 + i; }\nsaveDaphneLibResult(X);\n")
    assert_same(out.compute(), expected)
    (down,) = dc.for_loop([dc.fill(0, 1, 1).sum()], lambda s, i: s * 10 + i, 3, 1, -1)
    assert down.compute() == 321


def test_for_loop_with_node_bounds_and_captured_values(dc: DaphneContext) -> None:
    a = np.arange(6.0).reshape(3, 2)
    A = dc.from_numpy(a)
    Y = A * 10  # built before the loop: emitted once, outside it
    n = A.nrow()
    acc, last = dc.for_loop([dc.fill(0.0, 3, 2), dc.fill(0, 1, 1).sum()], lambda x, s, i: (x + Y, s + i), 1, n)
    assert np.array_equal(acc.compute(), 3 * a * 10)
    assert last.compute() == 6
    from daphnec.tools.daphnelib.script import generate

    text = generate(acc._node).text
    body = text[text.index("for") :]
    ten = '* as.scalar(receiveFromNumpy(1, 1, 1, "si64"))'  # the number 10 is an input (issue 25)
    assert ten not in body and ten in text  # the captured Y is computed before the loop


def test_loop_variables_swapped(dc: DaphneContext) -> None:
    """All loop-carried variables get their new values at once (`x, y = y, x`)."""
    x0, y0 = dc.fill(1, 1, 1).sum(), dc.fill(2, 1, 1).sum()
    x, y = dc.for_loop([x0, y0], lambda a, b, i: (b, a), 1, 3)
    assert (x.compute(), y.compute()) == (2, 1)
    fib, _ = dc.for_loop([x0, y0], lambda a, b, i: (b, a + b), 1, 10)
    assert fib.compute() == 144


def test_nested_loops(dc: DaphneContext) -> None:
    def outer(m: Matrix, i: Scalar) -> Matrix:
        (inner,) = dc.for_loop([m], lambda k, j: k + i * j, 1, 3)
        return inner

    (r,) = dc.for_loop([dc.fill(0, 1, 1)], outer, 1, 4)
    assert r.compute().item() == sum(i * j for i in range(1, 5) for j in range(1, 4))


def test_while_and_do_while(dc: DaphneContext) -> None:
    X, c = dc.while_loop(
        [dc.fill(1.0, 2, 2), dc.fill(0, 1, 1).sum()], lambda x, k: x.sum() < 100, lambda x, k: (x * 3, k + 1)
    )
    assert X.compute().tolist() == [[27.0, 27.0], [27.0, 27.0]] and c.compute() == 3
    expected = run_dsl("X = fill(1.0, 2, 2);\nwhile (sum(X) < 100) { X = X * 3; }\nsaveDaphneLibResult(X);\n")
    assert_same(X.compute(), expected)
    (d,) = dc.do_while_loop([dc.fill(5, 1, 1).sum()], lambda v: v < 0, lambda v: v - 1)
    assert d.compute() == 4  # the body runs once even though the condition is false
    (w,) = dc.while_loop([dc.fill(5, 1, 1).sum()], lambda v: v < 0, lambda v: v - 1)
    assert w.compute() == 5


def test_cond(dc: DaphneContext) -> None:
    s = dc.from_numpy(np.array([[3.0]])).sum()
    X = dc.fill(1.0, 2, 2)
    a, b = dc.cond([X, s], lambda: s > 2, lambda x, t: (x + 100, t * 2), lambda x, t: (x - 100, t))
    assert a.compute()[0, 0] == 101.0 and b.compute() == 6.0
    a, b = dc.cond([X, s], lambda: s > 5, lambda x, t: (x + 100, t * 2), lambda x, t: (x - 100, t))
    assert a.compute()[0, 0] == -99.0 and b.compute() == 3.0
    (only_then,) = dc.cond([X], lambda: s > 5, lambda x: x + 1)
    assert only_then.compute()[0, 0] == 1.0
    expected = run_dsl(
        "X = fill(1.0, 2, 2);\nif (3.0 > 2) { X = X + 100; } else { X = X - 100; }\nsaveDaphneLibResult(X);\n"
    )
    (c,) = dc.cond([X], lambda: dc.fill(3.0, 1, 1).sum() > 2, lambda x: x + 100, lambda x: x - 100)
    assert_same(c.compute(), expected)


def test_cond_on_frames(dc: DaphneContext) -> None:
    F = dc.from_pandas(pd.DataFrame({"a": [1, 2]}))
    (G,) = dc.cond([F], lambda: F.nrow() > 1, lambda f: f.rbind(f), lambda f: f)
    assert G.compute()["a"].tolist() == [1, 2, 1, 2]


def test_functions(dc: DaphneContext) -> None:
    @dc.function
    def affine(x, w: Matrix, b: Scalar):
        return x @ w + b, (x @ w).sum()

    x, w = np.arange(6.0).reshape(3, 2), np.ones((2, 1))
    y, total = affine(dc.from_numpy(x), dc.from_numpy(w), 0.5)
    assert np.array_equal(y.compute(), x @ w + 0.5) and total.compute() == (x @ w).sum()
    yi, _ = affine(dc.fill(1, 2, 2), dc.fill(2, 2, 2), 1)  # another call, other value types: specialised
    assert yi.compute().tolist() == [[5, 5], [5, 5]] and yi.compute().dtype == np.int64
    expected = run_dsl(
        "def affine(x, w, b) { return x @ w + b, sum(x @ w); }\n"
        "y, t = affine(fill(1, 2, 2), fill(2, 2, 2), 1);\nsaveDaphneLibResult(y);\n"
    )
    assert_same(yi.compute(), expected)


def test_function_kinds_nesting_and_capture(dc: DaphneContext) -> None:
    C = dc.fill(10.0, 1, 1).sum()  # captured by the function body: recomputed inside it

    @dc.function
    def rows(f: Frame):
        return f.nrow() + C

    def twice(x):
        return (rows(x)[0] * 2,)

    # a function calling another one; without a hint the argument is a Matrix on the Python side, but DaphneDSL
    # functions are untyped, so any value can be passed
    twice_fn = dc.function(lambda f: twice(f))
    F = dc.from_pandas(pd.DataFrame({"a": [1, 2, 3]}))
    assert rows(F)[0].compute() == 13.0
    assert twice_fn(F)[0].compute() == 26.0
    with pytest.raises(ValueError, match="unsupported type hint"):
        dc.function(_bad_hint)

    @dc.function
    def twice_frame(f: Frame):
        return (rows(f)[0] * 2,)

    assert twice_frame(F)[0].compute() == 26.0

    @dc.function
    def loop_inside(m):
        (o,) = dc.for_loop([m], lambda v, i: v + i, 1, 3)
        return o

    assert loop_inside(dc.fill(0, 1, 1))[0].compute().item() == 6


def _bad_hint(x: int):  # noqa: ANN202 - the hint under test
    return x


def test_misuse(dc: DaphneContext) -> None:
    X = dc.fill(1.0, 2, 2)
    with pytest.raises(ValueError, match="same number of arguments as input nodes \\+ 1"):
        dc.for_loop([X], lambda x: x, 1, 2)
    with pytest.raises(ValueError, match="returned 2 value"):
        dc.for_loop([X], lambda x, i: (x, x), 1, 2)
    leaked = []
    dc.for_loop([X], lambda x, i: leaked.append(x * 2) or x, 1, 2)
    with pytest.raises(DaphneUsageError, match="cannot be\\s+used outside it"):
        leaked[0].compute()
    with pytest.raises(TypeError, match="truth value"):
        if X.sum() > 1:
            pass
