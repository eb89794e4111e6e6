"""Errors: one exception hierarchy (parse 1 / compile 2 / execution 3), each with the location in the generated
program and the Python line that built the failing node, and never a traceback from inside the compiler."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from daphnec import (
    DaphneCompileError,
    DaphneContext,
    DaphneExecutionError,
    DaphneLibError,
    DaphneParseError,
    DaphneUsageError,
)

HERE = Path(__file__).resolve()


def _line_of(text: str) -> int:
    return next(i for i, ln in enumerate(HERE.read_text().splitlines(), 1) if text in ln)


def test_compile_error_points_at_program_and_python(dc: DaphneContext) -> None:
    X = dc.from_numpy(np.ones((3, 2)))
    Z = X @ X  # the failing node: a shape mismatch found by the compiler
    with pytest.raises(DaphneCompileError) as info:
        Z.compute()
    e = info.value
    assert isinstance(e, DaphneLibError) and isinstance(e, RuntimeError) and e.exit_code == 2
    assert (e.location.file, e.location.line) == ("<daphnelib>", 2)
    assert e.program_line == "V1=V0 @ V0;" and "`@`: shape mismatch" in e.message
    assert e.node_site.filename == str(HERE) and e.node_site.lineno == _line_of("Z = X @ X  # the failing node")
    text = str(e)
    assert text.startswith("Error in DaphneDSL script: <daphnelib>:2:4: error: `@`: shape mismatch")
    assert "in the generated program: V1=V0 @ V0;" in text and "Z = X @ X" in text
    assert e.__cause__ is None and e.__suppress_context__  # no internal traceback attached


def test_execution_and_parse_errors(dc: DaphneContext) -> None:
    W = dc.from_numpy(np.ones((3, 1), dtype=np.int64)) // 1 + dc.from_numpy(np.ones((3, 1), dtype=np.int64)) / 0
    with pytest.raises(DaphneExecutionError, match="division by zero") as info:
        W.compute()
    assert info.value.exit_code == 3 and info.value.node_site.lineno == _line_of("W = dc.from_numpy")
    with pytest.raises(DaphneParseError, match="expected a type") as pinfo:
        dc.fill(1.0, 2, 2).asType(vtype="foo").compute()
    assert pinfo.value.exit_code == 1 and pinfo.value.program_line == "V1=as.foo(V0);"
    with pytest.raises(DaphneCompileError, match="meta data file"):
        dc.readMatrix("/nonexistent/x.csv").compute()


def test_errors_inside_bodies_point_at_the_body(dc: DaphneContext) -> None:
    @dc.function
    def f(x):
        return x @ dc.fill(1.0, 5, 5)  # the failing node inside a function body

    with pytest.raises(DaphneCompileError) as info:
        f(dc.fill(1.0, 2, 2))[0].compute()
    assert info.value.node_site.lineno == _line_of("the failing node inside a function body")
    assert info.value.program_line.endswith("@ V1;") or "@" in info.value.program_line

    (y,) = dc.for_loop([dc.fill(1, 2, 1)], lambda v, i: v / (i - 2), 1, 3)  # integer division by zero at i = 2
    with pytest.raises(DaphneExecutionError, match="division by zero") as einfo:
        y.compute()
    assert einfo.value.node_site.lineno == _line_of("integer division by zero at i = 2")


def test_debug_keeps_the_internal_cause() -> None:
    dc = DaphneContext(debug=True)
    with pytest.raises(DaphneCompileError) as info:
        (dc.fill(1.0, 3, 2) @ dc.fill(1.0, 3, 2)).compute()
    assert info.value.__cause__ is not None


def test_internal_errors_are_wrapped(dc: DaphneContext, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug inside a kernel (not a DAPHNE error) still surfaces as the API's exception, located, without the
    traceback and without the Python exception's class name (compiler/host/program.py)."""
    from daphnec.runtime.kernels import daphnelib
    from daphnec.tools.daphnelib import session

    session.clear_cache()  # compiled programs hold the kernels they were compiled with

    def broken(x: object) -> None:
        raise KeyError("boom")

    monkeypatch.setattr(daphnelib, "save_result", broken)
    with pytest.raises(DaphneExecutionError, match="error: 'boom'") as info:
        dc.fill(1.0, 1, 1).compute()
    assert info.value.__cause__ is None and "KeyError" not in str(info.value)
    session.clear_cache()


def test_usage_errors() -> None:
    with pytest.raises(DaphneUsageError, match="did you mean 'num_threads'"):
        DaphneContext(num_thread=2)
    with pytest.raises(DaphneUsageError, match="Cannot find option named 'FOO'"):
        DaphneContext(partitioning="FOO")
    with pytest.raises(DaphneUsageError, match="takes True or False"):
        DaphneContext(vec="yes")
    with pytest.raises(ValueError):  # DaphneUsageError is a ValueError too
        DaphneContext().fill(1, 1, 1).compute(explain="nonsense")
    with pytest.raises(TypeError, match="exactly two dimensions"):
        DaphneContext().fill(1, 2, 2)[1, 2, 3]
    with pytest.raises(TypeError, match="no step"):
        DaphneContext().fill(1, 2, 2)[::2, :]


def test_uncaught_error_shows_no_compiler_frames(tmp_path: Path) -> None:
    script = tmp_path / "user.py"
    script.write_text(
        textwrap.dedent(
            """\
            from daphnec import DaphneContext
            dc = DaphneContext()
            bad = dc.fill(1.0, 3, 2) @ dc.fill(1.0, 3, 2)
            bad.compute()
            """
        )
    )
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 1
    err = res.stderr
    assert "DaphneCompileError: Error in DaphneDSL script: <daphnelib>:3:4: error:" in err
    assert f"built at {script}:3 in <module>: bad = dc.fill(1.0, 3, 2) @ dc.fill(1.0, 3, 2)" in err
    frames = [ln for ln in err.splitlines() if ln.strip().startswith('File "')]
    assert not any("/compiler/" in f or "/frontend/" in f or "xdsl" in f for f in frames), frames
