"""Caching: the same DAG shape with new data reuses the compiled program (no parse, no passes, no JIT); what
changes the program compiles again; `explain=` prints the IR like `--explain`; options reach the compiler."""

from __future__ import annotations

import numpy as np
import pytest

from daphnec import DaphneContext
from daphnec.tools.daphnelib import session
from daphnec.tools.daphnelib.script import generate


def _compiles() -> int:
    return session.stats()["compiles"]


def shift_and_scale(dc: DaphneContext, a: np.ndarray):  # noqa: ANN201 - a Matrix
    X = dc.from_numpy(a)
    return (X - X.mean(axis=1)) / X.stddev(axis=1)


def test_same_shape_new_data_does_not_compile(dc: DaphneContext) -> None:
    rng = np.random.default_rng(3)
    a, b = rng.random((20, 4)), rng.random((20, 4))
    first = shift_and_scale(dc, a).compute()
    n = _compiles()
    hits = session.stats()["hits"]
    again = shift_and_scale(dc, a).compute()  # a new DAG of the same shape
    other = shift_and_scale(dc, b).compute()  # new data
    assert _compiles() == n and session.stats()["hits"] == hits + 2
    assert np.array_equal(first, again)
    assert np.allclose(other, (b - b.mean(0)) / b.std(0))
    assert generate(shift_and_scale(dc, a)._node).text == (
        'V0=receiveFromNumpy(0, 20, 4, "f64");\nV1=mean(V0, 1);\nV2=V0 - V1;\nV3=stddev(V0, 1);\nV4=V2 / V3;\n'
        "saveDaphneLibResult(V4);\n"
    )


def test_what_compiles_again(dc: DaphneContext) -> None:
    base = np.ones((7, 3))
    shift_and_scale(dc, base).compute()
    for changed in (np.ones((8, 3)), np.ones((7, 3), dtype=np.float32)):  # another shape, another value type
        n = _compiles()
        shift_and_scale(dc, changed).compute()
        assert _compiles() == n + 1
    n = _compiles()
    shift_and_scale(dc, base).compute(num_threads=1, partitioning="GSS")  # run-time knobs only: no compile
    assert _compiles() == n
    shift_and_scale(dc, base).compute(vec=True)  # a compiler option
    assert _compiles() == n + 1


def test_vectorized_native_kernels_are_reused(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    """With `vec=True` the program's native pipeline kernels are compiled (or loaded) once: a second run of the
    same shape neither compiles nor loads any kernel (DAPHNEC_JIT_LOG stays silent)."""
    log = tmp_path / "jit.log"
    monkeypatch.setenv("DAPHNEC_JIT_LOG", str(log))
    session.clear_cache()
    dc = DaphneContext(vec=True, vec_min_cells=0)  # small arrays: pipelines anyway (the cost model)
    a = np.random.default_rng(4).random((2000, 8))
    X = dc.from_numpy(a)
    Y = (X * 2 + 1).sqrt()
    assert np.allclose(Y.compute(), np.sqrt(a * 2 + 1))
    seen = log.read_text()
    assert seen.split()[0] in ("compiled", "loaded")  # the first run got its kernel (built or from the disk cache)
    n = _compiles()
    b = a[::-1].copy()
    assert np.allclose((dc.from_numpy(b) * 2 + 1).sqrt().compute(), np.sqrt(b * 2 + 1))
    assert _compiles() == n and log.read_text() == seen


def test_explain_prints_the_ir(dc: DaphneContext, capfd: pytest.CaptureFixture[str]) -> None:
    Y = dc.fill(1.0, 3, 3) + 1
    Y.compute()
    capfd.readouterr()
    n = _compiles()
    Y.compute(explain=["parsing", "kernels"])
    err = capfd.readouterr().err
    assert "IR after parsing:" in err and "IR after kernel lowering:" in err and "daphne.fill" in err
    assert _compiles() == n + 1  # --explain always compiles, so that the IR is shown
    DaphneContext(explain="parsing").fill(2.0, 1, 1).compute()
    assert "IR after parsing:" in capfd.readouterr().err


def test_context_options_reach_the_compiler(capfd: pytest.CaptureFixture[str]) -> None:
    dc = DaphneContext(vec=True, vec_min_cells=0, num_threads=2, explain="vectorized")
    a = np.random.default_rng(5).random((100, 3))
    r = ((dc.from_numpy(a) + 1) * 3).compute()
    assert np.allclose(r, (a + 1) * 3)
    assert '"daphne.vectorizedPipeline"' in capfd.readouterr().err
    assert dc._settings.config.numberOfThreads == 2


def test_files_read_by_name_recompile_when_their_meta_changes(dc: DaphneContext, tmp_path) -> None:  # noqa: ANN001
    """`readMatrix(file)` compiles the type and shape of the file's .meta into the program: a changed .meta (a
    rewritten file) compiles again instead of failing the check of the compiled reader."""
    path = str(tmp_path / "m.csv")
    dc.fill(1.5, 2, 3).write(path).compute()
    M = dc.readMatrix(path)
    assert M.compute().shape == (2, 3)
    n = _compiles()
    assert dc.readMatrix(path).compute().shape == (2, 3) and _compiles() == n  # unchanged: cached
    dc.fill(7, 4, 1).write(path).compute()
    r = dc.readMatrix(path).compute()
    assert r.shape == (4, 1) and r.dtype == np.int64


def test_a_python_number_changing_in_a_loop_compiles_once(dc: DaphneContext) -> None:
    """Issue 25: Python numbers are inputs of the program, not literals, so the DAG shape alone keys the cache: a
    step counter or a learning rate in a Python loop compiles once (ints and floats are two programs: si64 and
    f64 scalars), and every result is the value for that number."""
    z = np.random.default_rng(5).random((6, 6))
    Z = dc.from_numpy(z)
    ((Z + 100) @ Z).sum().compute()
    n = _compiles()
    for i in range(-3, 7):
        assert ((Z + i) @ Z).sum().compute() == pytest.approx(((z + i) @ z).sum(), rel=1e-12)
    for lr in (0.5, 1e-3, -2.25, float("inf")):
        np.testing.assert_array_equal((Z - lr * Z).compute(), z - lr * z)
        np.testing.assert_array_equal((Z > lr).ifElse(lr, 2 * lr).compute(), np.where(z > lr, lr, 2 * lr))
    for k in (2, 3):
        np.testing.assert_allclose(Z.pow(k).compute(), z**k, rtol=1e-15)
    # (Z + i) @ Z is cached; Z - lr * Z, the comparison with ifElse (f64) and pow (si64) compile once each
    assert _compiles() == n + 3
    text = generate(((Z + 7) @ Z).sum()._node).text
    assert "7" not in text and 'as.scalar(receiveFromNumpy(1, 1, 1, "si64"))' in text


def test_a_python_number_keeps_its_value_type(dc: DaphneContext) -> None:
    """A number input has the literal's value type (an int stays si64, a numpy f32 scalar f32, a bool a literal),
    so results are those of the literal in DaphneDSL."""
    a = np.arange(6, dtype=np.int64).reshape(2, 3)
    X = dc.from_numpy(a)
    got = (X * 3).compute()
    assert got.dtype == np.int64 and np.array_equal(got, a * 3)
    f = dc.from_numpy(np.ones((2, 2), dtype=np.float32))
    assert (f + np.float32(0.5)).compute().dtype == np.float32
    assert "true" in generate((X == True)._node).text  # noqa: E712 - a DaphneDSL comparison with a bool literal
