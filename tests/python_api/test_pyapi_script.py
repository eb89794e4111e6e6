"""The generated DaphneDSL: literals that read back exactly, deterministic text (the cache key), DaphneLib's shape
of program, control-flow emission, and SQL views registered in the same program as their query."""

from __future__ import annotations

import numpy as np
import pytest

from daphnec import DaphneContext
from daphnec.tools.daphnelib.dag import format_literal
from daphnec.tools.daphnelib.script import generate


def text(value: object) -> str:
    return generate(value._node).text  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("value", "literal"),
    [
        (1e-05, "1e-5"),
        (1.5e300, "1.5e300"),
        (-2.5, "(-2.5)"),
        (0.1, "0.1"),
        (float("nan"), "nan"),
        (float("-inf"), "(-inf)"),
        (3, "3"),
        (-3, "(-3)"),
        (2**63, "9223372036854775808u"),
        (True, "true"),
        ('a"b\\c\nd', '"a\\"b\\\\c\\nd"'),
        (np.float32(0.5), "as.f32(0.5)"),
        (np.int32(-4), "as.si32((-4))"),
        (np.float64(2.0), "2.0"),
    ],
)
def test_literals(value: object, literal: str) -> None:
    assert format_literal(value) == literal


def test_literals_read_back_exactly(dc: DaphneContext) -> None:
    for v in (1e-05, 0.1, 1 / 3, -7.25e-300, 2**62):
        assert dc.fill(v, 1, 1).sum().compute() == v
    assert dc.fill(np.float32(0.1), 1, 1).compute().dtype == np.float32
    assert dc.fill('say "hi"\n', 1, 1).compute()[0, 0] == 'say "hi"\n'


def test_programs_are_deterministic(dc: DaphneContext) -> None:
    def build(a: np.ndarray):  # noqa: ANN202 - a Matrix
        X = dc.from_numpy(a)
        return ((X @ X.t()).sum(axis=0) + X[:, 0:1]).cumSum()

    a, b = np.ones((4, 4)), np.zeros((4, 4))
    assert (
        text(build(a))
        == text(build(b))
        == (
            'V0=receiveFromNumpy(0, 4, 4, "f64");\nV1=t(V0);\nV2=V0 @ V1;\nV3=sum(V2, 0);\nV4=V0[, 0:1];\n'
            "V5=V3 + V4;\nV6=cumSum(V5);\nsaveDaphneLibResult(V6);\n"
        )
    )


def test_shared_inputs_and_slots(dc: DaphneContext) -> None:
    X, Y = dc.from_numpy(np.ones((2, 2))), dc.from_numpy(np.ones((2, 2), dtype=np.int64))
    assert text((X + Y) * X) == (
        'V0=receiveFromNumpy(0, 2, 2, "f64");\nV1=receiveFromNumpy(1, 2, 2, "si64");\nV2=V0 + V1;\nV3=V2 * V0;\n'
        "saveDaphneLibResult(V3);\n"
    )


def test_frames_from_pandas(dc: DaphneContext) -> None:
    import pandas as pd

    F = dc.from_pandas(pd.DataFrame({"a": [1, 2], "b": [0.5, 1.5]}))
    assert text(F) == (
        'V0=receiveFromNumpy(0, 2, 1, "si64");\nV1=receiveFromNumpy(1, 2, 1, "f64");\n'
        'V2=createFrame(V0, V1, "a", "b");\nsaveDaphneLibResult(V2);\n'
    )


def test_control_flow_text(dc: DaphneContext) -> None:
    X = dc.fill(1.0, 2, 2)
    (out,) = dc.for_loop([X], lambda x, i: x + i, 1, 3)
    assert text(out) == (
        "V0=fill(1.0, 2, 2);\nV1=V0;\nfor (V2 in 1:3) {\n    V3=V1 + V2;\n    V1=V3;\n}\nsaveDaphneLibResult(V1);\n"
    )

    @dc.function
    def f(x, y):
        return x + y, x * y

    _, prod = f(X, 2.0)
    assert text(prod) == (
        "def function_0(ARG_0, ARG_1) {\n    V1=ARG_0 + ARG_1;\n    V2=ARG_0 * ARG_1;\n    return V1, V2;\n}\n"
        "V0=fill(1.0, 2, 2);\nV3, V4=function_0(V0, 2.0);\nsaveDaphneLibResult(V4);\n"
    )


def test_sql_registers_its_views_in_the_same_program(dc: DaphneContext) -> None:
    """DaphneLib emits `registerView` and `sql` in separate programs, so the query never sees the view; here the
    views registered so far come right before the query (the query text escaped as a DaphneDSL string)."""
    import pandas as pd

    F = dc.from_pandas(pd.DataFrame({"a": [1, 2]}))
    view = F.registerView("t")
    G = dc.fill(1, 1, 1).asType("frame")
    G.registerView("u")
    q = dc.sql('SELECT t.a FROM t WHERE t.a > 1 AND "x" = "x";')
    H = dc.fill(2, 1, 1).asType("frame")
    H.registerView("late")  # registered after the query: not part of it
    assert text(q) == (
        'V0=receiveFromNumpy(0, 2, 1, "si64");\nV1=createFrame(V0, "a");\nV2=fill(1, 1, 1);\nV3=as.frame(V2);\n'
        'registerView("t", V1);\nregisterView("u", V3);\n'
        'V4=sql("SELECT t.a FROM t WHERE t.a > 1 AND \\"x\\" = \\"x\\";");\nsaveDaphneLibResult(V4);\n'
    )
    assert text(view) == 'V0=receiveFromNumpy(0, 2, 1, "si64");\nV1=createFrame(V0, "a");\nregisterView("t", V1);\n'
