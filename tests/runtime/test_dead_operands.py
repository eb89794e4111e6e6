"""Element-wise kernels writing into an operand the program never reads again (runtime/kernels/dead_operands.py):
only when the generated code says the operand's variable dies at the call AND nothing else holds the array
(another name, a view of it, a read-only input); the printed results are the same with and without the reuse."""

from __future__ import annotations

import contextlib
import io
import re

import numpy as np
import pytest

from daphnec.compiler.host import generator
from daphnec.runtime.config import DaphneConfig
from daphnec.runtime.fperr import ignoring
from daphnec.runtime.kernels import ew_binary, ew_unary
from daphnec.tools.driver import compile_source

SUB = ew_binary.matrix_kernel("sub", "f64")
ABS = ew_unary.matrix_kernel("abs", "f64")


@pytest.mark.parametrize("quiet_scope", [True, False])
def test_a_dead_operand_takes_the_result(quiet_scope: bool) -> None:
    with ignoring() if quiet_scope else contextlib.nullcontext():
        x = np.arange(4.0).reshape(4, 1).copy()  # its own memory (a reshape is a view)
        r = SUB(x, 1.5, 1)  # this test's `x` is the one local holder, as the host code's dying variable is
        assert r is x and r.ravel().tolist() == [-1.5, -0.5, 0.5, 1.5]
        y = np.arange(4.0).reshape(4, 1).copy()
        r = SUB(2.0, y, 2)
        assert r is y and r.ravel().tolist() == [2.0, 1.0, 0.0, -1.0]
        z = -np.arange(4.0).reshape(4, 1)  # a new array: `-` of a view
        r = ABS(z, 1)
        assert r is z and r.ravel().tolist() == [0.0, 1.0, 2.0, 3.0]


def test_an_operand_held_elsewhere_is_never_written() -> None:
    base = np.arange(6.0).reshape(6, 1).copy()
    alias = base
    assert SUB(base, 1.0, 1) is not base and alias.ravel().tolist() == list(range(6))
    view = base[1:3]
    assert SUB(view, 1.0, 1) is not view and base.ravel().tolist() == list(range(6))
    frozen = np.arange(3.0).reshape(3, 1).copy()
    frozen.flags.writeable = False
    assert ABS(frozen, 1) is not frozen
    same = np.arange(3.0).reshape(3, 1).copy()
    assert SUB(same, same, 3) is not same and same.ravel().tolist() == [0.0, 1.0, 2.0]  # two holders: itself twice
    cmp = np.arange(3.0).reshape(3, 1).copy()
    assert ew_binary.matrix_kernel("lt", "f64")(cmp, 1.0, 1).tolist() == [[1.0], [0.0], [0.0]]  # 0/1, not bools


PROGRAM = """
X = seq(1.0, 40.0, 1.0);
Y = X * 0.5;
Z = Y;
W = abs((Y - 7.0) * 3.0) / 2.0;
V = 2.0 - sqrt(W);
print(sum(W));
print(sum(V));
print(as.scalar(Z[3, 0]));
print(as.scalar(X[39, 0]));
"""


def _run(text: str) -> tuple[str, str]:
    program = compile_source(text, "<dead-operands-test>", DaphneConfig(), {})
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        program.run()
    return out.getvalue(), program.host.source


def test_programs_print_the_same_with_and_without_reuse(monkeypatch: pytest.MonkeyPatch) -> None:
    reused, source = _run(PROGRAM)
    assert re.search(r"= _ew_\w+\(v\d+, [^()]*, [123]\)", source), source  # the host code passes `dead`
    monkeypatch.setattr(ew_binary, "DEAD_REFS", -1)
    monkeypatch.setattr(ew_unary, "DEAD_REFS", -1)
    monkeypatch.setattr(generator, "INLINE_DEAD_REFS", -1)  # the host code's inlined f64 ufuncs (`_inline_ufunc`)
    copied, _ = _run(PROGRAM)
    assert reused == copied
    assert reused.splitlines()[2:] == ["2", "40"]
