"""The host code's inlined kernel fast paths (compiler/host/generator.py): f64 element-wise ufuncs (`_inline_ufunc`)
compute the bits their kernels compute (the same ufunc on the same operands, or the kernel itself for anything its
type test rejects: broadcasts, integer matrices, errors) and write into a dying operand only when nothing else
holds it; row ranges and read-once columns (`_inline_view`) are the views the kernels return, errors theirs."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import numpy as np
import pytest

from daphnec.compiler.host import generator
from daphnec.dialects.errors import DaphneError
from daphnec.runtime.config import DaphneConfig
from daphnec.runtime.kernels.io import read_matrix
from daphnec.tools.driver import compile_source

PROGRAM = """
X = rand(6, 3, -2.0, 2.0, 1.0, 7);
Z = fill(0.0, 6, 3) / 0.0;
E = fill(1.0, 0, 3);
r = t(seq(1.0, 3.0, 1.0));
c = seq(1.0, 6.0, 1.0);
s = as.scalar(X[2, 1]);
write(abs((X - 0.5) * 3.0) / 2.0 + X, "{d}/chain.dbdf");
write(2.0 - X, "{d}/scalar_lhs.dbdf");
write(X * X, "{d}/same.dbdf");
write(X + r, "{d}/row.dbdf");
write(X - c, "{d}/col.dbdf");
write(X / 0.0, "{d}/div0.dbdf");
write((Z + 1.0) * X, "{d}/nan.dbdf");
write(-(X * s), "{d}/minus.dbdf");
write(E + 1.0, "{d}/empty.dbdf");
write(E * E, "{d}/empty2.dbdf");
M = seq(1, 6, 1);
write(M * 3 - M, "{d}/int.dbdf");
Y = X;
W = (Y - 1.0) * 2.0;
write(X, "{d}/held.dbdf");
write(W, "{d}/w.dbdf");
"""
NAMES = ["chain", "scalar_lhs", "same", "row", "col", "div0", "nan", "minus", "empty", "empty2", "int", "held", "w"]


def _run(text: str) -> tuple[str, str]:
    program = compile_source(text, "<inline-ufunc-test>", DaphneConfig(), {})
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        program.run()
    return out.getvalue(), program.host.source


def _results(tmp: Path, name: str) -> tuple[dict[str, tuple[tuple[int, ...], str, bytes]], str]:
    """Each written matrix's shape, dtype and bytes, and the host source."""
    d = tmp / name
    d.mkdir()
    _, source = _run(PROGRAM.replace("{d}", str(d)))
    out = {}
    for n in NAMES:
        m = read_matrix(str(d / f"{n}.dbdf"), vt="si64" if n == "int" else "f64")
        out[n] = (m.shape, m.dtype.str, m.tobytes())
    return out, source


def test_inlined_ops_give_the_kernels_bits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    inlined, source = _results(tmp_path, "inlined")
    assert ".getrefcount(" in source and "out=" in source, source  # the inline path with the dying-operand test
    monkeypatch.setattr(generator.HostCodegen, "_inline_ufunc", lambda *a: False)
    monkeypatch.setattr(generator.HostCodegen, "_ufunc_run", lambda *a: [])
    kernels, plain = _results(tmp_path, "kernels")
    assert ".getrefcount(" not in plain
    assert inlined == kernels
    assert inlined["empty"][0] == (0, 3) and inlined["int"][1] == "<i8"
    held = np.frombuffer(inlined["held"][2])
    assert np.array_equal(np.frombuffer(inlined["w"][2]), (held - 1.0) * 2.0)  # Y's buffer (X's) not overwritten
    assert np.isnan(np.frombuffer(inlined["nan"][2])).all()


def test_without_writing_into_operands_the_bits_are_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reused, _ = _results(tmp_path, "reused")
    monkeypatch.setattr(generator, "INLINE_DEAD_REFS", -1)
    copied, source = _results(tmp_path, "copied")
    assert ") == -1 and" in source
    assert reused == copied


RUNS = """
X = rand(6, 3, -2.0, 2.0, 1.0, 7);
c = seq(1.0, 6.0, 1.0);
Z = fill(0.0, 6, 3) / 0.0;
n = 2;
while (n < 4) { n = n + 1; }
a = as.scalar(X[n, 1]);
b = as.scalar(X[n, 2]);
Q = X[1:n, ];
write(abs(b * (Q[, 0] - a) - a * (Q[, 1] - b)) / max(sqrt(a * a + b * b), 1e-300), "{d}/rdp.dbdf");
write(abs((X - 0.5) * 3.0) / 2.0 + X, "{d}/chain.dbdf");
write((X - c) * 2.0, "{d}/col.dbdf");
write((X * 2.0) - (X + 1.0), "{d}/twice.dbdf");
Y = X;
W = (Y - 1.0) * 2.0 + Y;
write(X, "{d}/held.dbdf");
write(W, "{d}/w.dbdf");
write((Z + 1.0) * X - 1.0, "{d}/nan.dbdf");
M = seq(1, 6, 1);
write((M * 3 - M) * 2, "{d}/int.dbdf");
V = fill(1.0, n, 1);
write((V + 1.0) * (X[0:n, 0] - 1.0) * 3.0, "{d}/shapes.dbdf");
write((X - t(seq(1.0, 3.0, 1.0))) * 2.0, "{d}/row.dbdf");
"""


def _runs(tmp: Path, name: str) -> tuple[dict[str, bytes], str]:
    d = tmp / name
    d.mkdir()
    _, source = _run(RUNS.replace("{d}", str(d)))
    return {p.name: p.read_bytes() for p in sorted(d.iterdir())}, source


def _untested_writes(source: str) -> int:
    """How many ufunc calls write into an operand without the refcount test on the line before."""
    lines = source.splitlines()
    return sum(1 for k, line in enumerate(lines) if "out=" in line and "getrefcount(" not in lines[k - 1])


def test_runs_of_inlined_ops_give_the_ops_bits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`_ufunc_region`: a run of inlined f64 ops tested once (the operands from before it; a scalar computed
    between its ops where it is first read) writes the same matrices as each op under its own test, also when a
    test fails (a broadcast column, integers, a shape known only at run time)."""
    runs, source = _runs(tmp_path, "runs")
    assert re.search(r"\n +if type\(v\d+\) is float:\n", source), source  # RDP's scalar divisor, tested late
    monkeypatch.setattr(generator.HostCodegen, "_ufunc_run", lambda *a: [])
    single, plain = _runs(tmp_path, "single")
    assert _untested_writes(source) > 0 and _untested_writes(plain) == 0, source
    assert runs == single and len(runs) == 20  # ten matrices and their .meta files
    held = np.frombuffer(runs["held.dbdf"][-8 * 18 :])
    assert np.array_equal(np.frombuffer(runs["w.dbdf"][-8 * 18 :]), (held - 1.0) * 2.0 + held)


def test_a_shape_mismatch_in_a_run_reports_as_the_kernel_does() -> None:
    text = "n = 2;\nwhile (n < 4) { n = n + 1; }\nA = fill(1.0, n, 3);\nB = fill(2.0, 2, 3);\nprint((A + 1.0) * B);\n"
    with pytest.raises(DaphneError, match=r"shape mismatch: lhs 4x3, rhs 2x3"):
        _run(text)


def test_a_shape_mismatch_reports_as_the_kernel_does() -> None:
    text = "n = 2;\nwhile (n < 4) { n = n + 1; }\nA = fill(1.0, n, 3);\nB = fill(2.0, 2, 3);\nprint(A + B);\n"
    with pytest.raises(DaphneError, match=r"shape mismatch: lhs 4x3, rhs 2x3"):
        _run(text)


VIEWS = """
X = rand(6, 3, -2.0, 2.0, 1.0, 7);
n = 2;
while (n < 4) { n = n + 1; }
k = n - 3;
write(X[1:n, ], "{d}/rows.dbdf");
write(X[n:n, ], "{d}/none.dbdf");
Q = X[k:n, ];
write(Q[, 0] - 1.0, "{d}/col0.dbdf");
write(Q[, k + 1] * 2.0, "{d}/col2.dbdf");
S = t(X)[0:2, ];
write(S[, 1] + 0.5, "{d}/strided.dbdf");
"""


def _views(tmp: Path, name: str) -> tuple[dict[str, bytes], str]:
    d = tmp / name
    d.mkdir()
    _, source = _run(VIEWS.replace("{d}", str(d)))
    return {p.name: p.read_bytes() for p in sorted(d.iterdir())}, source


def test_inlined_views_give_the_kernels_matrices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`_inline_view`: `X[a:b, ]` and a column read once are numpy views under the kernels' own tests (in range
    and contiguous; anything else calls the kernel), the same matrices as the kernels give."""
    inlined, source = _views(tmp_path, "inlined")
    assert "[:, " in source and "_slice_row_" in source, source
    monkeypatch.setattr(generator.HostCodegen, "_inline_view", lambda *a: False)
    kernels, plain = _views(tmp_path, "kernels")
    assert "[:, " not in plain
    assert inlined == kernels and len(inlined) == 10  # five matrices and their .meta files


@pytest.mark.parametrize("rows", ["2:(n + 5)", "(n - 5):n", "n:(n - 1)"])
def test_a_bad_row_range_reports_as_the_kernel_does(rows: str, monkeypatch: pytest.MonkeyPatch) -> None:
    text = f"X = rand(6, 3, 0.0, 1.0, 1.0, 7);\nn = 2;\nwhile (n < 4) {{ n = n + 1; }}\nprint(X[{rows}, ]);\n"
    with pytest.raises(DaphneError) as inlined:
        _run(text)
    monkeypatch.setattr(generator.HostCodegen, "_inline_view", lambda *a: False)
    with pytest.raises(DaphneError) as kernel:
        _run(text)
    assert str(inlined.value) == str(kernel.value)


IDX = """
V = [3.0, nan, 1.0, 1.0, 7.0, 7.0](6, 1);
W = [nan, 2.0, 0.5](3, 1);
E = fill(1.0, 0, 1);
n = 0;
while (n < 2) { n = n + 1; }
print(as.scalar(idxMin(V[n:6, ], 1)) + " " + as.scalar(idxMax(V[n:6, ], 1)) + " " + as.scalar(idxMax(V, 1)));
print(as.scalar(idxMin(W, 1)) + " " + as.scalar(idxMax(W[1:3, ], 1)) + " " + as.scalar(idxMin(t(W), 0)));
print(as.scalar(idxMin(E[0:(n - 2), ], 1)));
"""


def test_inlined_idx_of_a_vector_gives_the_kernels_positions() -> None:
    """`_idx_scalar`: `as.scalar(idxMax(v, 1))` of an f64 vector is numpy's argmax inline (a NaN found, a row of a
    column-wise position, an empty vector: the kernel, which skips later NaNs and reports)."""
    out, source = _run(IDX.replace("E[0:(n - 2), ]", "V"))
    assert ".argmin())" in source and ".argmax())" in source, source
    assert out.splitlines() == ["0 2 4", "0 0 0", "2"]  # NaN first wins (V[2:6]: 1, 1, 7, 7); ties keep the first
    with pytest.raises(DaphneError, match="idxMin: cannot aggregate an empty column"):
        _run(IDX)
