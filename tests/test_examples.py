"""Every example in examples/ runs through the real CLI and its result is checked against numpy/scipy computing
the same thing on the same data (the data is regenerated with the runtime's bit-exact `rand`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from daphnec.runtime.kernels.datagen import rand

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def run_example(name: str, *args: str, flags: tuple[str, ...] = ()) -> list[str]:
    res = subprocess.run(
        [sys.executable, "-m", "daphnec.tools.daphnec", *flags, str(EXAMPLES / name), *args],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert res.stderr == ""
    return res.stdout.splitlines()


def numbers(line: str) -> np.ndarray:
    return np.array([float(x) for x in line.split()])


def test_hello() -> None:
    out = run_example("hello.daph")
    assert out == ["Hello, DAPHNE!", "DenseMatrix(2x3, int64_t)", "1 2 3", "4 5 6", "21"]


@pytest.mark.parametrize("flags", [(), ("--vec", "--vec-min-cells=0")])
def test_linear_regression(flags: tuple[str, ...]) -> None:
    out = run_example("linear_regression.daph", flags=flags)
    X = rand(1000, 10, -1.0, 1.0, 1.0, 42, "f64")
    w_true = rand(10, 1, -2.0, 2.0, 1.0, 7, "f64")
    y = X @ w_true + rand(1000, 1, -0.01, 0.01, 1.0, 3, "f64")
    w = np.linalg.solve(X.T @ X, X.T @ y)
    assert out[1] == "DenseMatrix(1x10, double)"
    np.testing.assert_allclose(numbers(out[2]), w.ravel(), rtol=1e-5)
    assert out[3:9] == ["conjugate gradient converged:", "1", "largest difference to the direct solution below 1e-8:",
                        "1", "largest error to the true weights below 0.01:", "1"]  # fmt: skip
    np.testing.assert_allclose(float(out[10]), float(np.sum((X @ w - y) ** 2)), rtol=1e-5)


def test_kmeans() -> None:
    out = run_example("kmeans.daph")
    n = 200
    X = np.vstack([
        rand(n, 2, 0.0, 1.0, 1.0, 1, "f64") + 0.5,
        rand(n, 2, 0.0, 1.0, 1.0, 2, "f64") + 4.5,
        rand(n, 2, 0.0, 1.0, 1.0, 3, "f64") + np.array([[8.5, 0.5]]),
    ])  # fmt: skip
    C = X[[0, n, 2 * n]]
    for _ in range(10):
        D = ((X[:, None, :] - C[None, :, :]) ** 2).sum(axis=2)
        labels = D.argmin(axis=1)
        C = np.array([X[labels == j].mean(axis=0) for j in range(3)])
    assert out[1] == "DenseMatrix(3x2, double)"
    got = np.array([numbers(line) for line in out[2:5]])
    np.testing.assert_allclose(got, C, rtol=1e-5)
    assert out[7] == " ".join(str(int(np.sum(labels == j))) for j in range(3))


def test_pagerank() -> None:
    out = run_example("pagerank.daph")
    n = 500
    G = rand(n, n, 1.0, 1.0, 0.02, 9, "f64")
    M = G / np.maximum(G.sum(axis=1, keepdims=True), 1.0)
    p = np.full((n, 1), 1.0 / n)
    for _ in range(50):
        p = 0.15 / n + 0.85 * (M.T @ p)
    np.testing.assert_allclose(float(out[1]), p.sum(), rtol=1e-5)
    np.testing.assert_allclose(float(out[3]), p.max(), rtol=1e-5)
    assert int(out[5]) == int(p.argmax())


def _components_of(mtx: Path) -> tuple[int, int]:
    from scipy.io import mmread

    G = sp.csr_array(mmread(str(mtx)))
    n_comp, _ = connected_components(G, directed=False)
    return G.shape[0], n_comp


def test_components_small_graph() -> None:
    out = run_example("components.daph", 'f="examples/data/small_graph.mtx"')
    n, n_comp = _components_of(EXAMPLES / "data" / "small_graph.mtx")
    assert out == [f"vertices: {n}", "iterations: 4", f"components: {n_comp}"]


@pytest.mark.parametrize("flags", [(), ("--vec", "--vec-min-cells=0")])
def test_paramserv_linreg(flags: tuple[str, ...]) -> None:
    """With --vec the update functions' pipelines run from both worker threads at once."""
    out = run_example("paramserv_linreg.daph", flags=flags)
    assert out[0] == "initial MSE:" and out[2] == "final MSE:"
    assert float(out[1]) > 1.0 and float(out[3]) < 0.0105  # down to the noise floor (variance 0.01)


def test_paramserv_logreg() -> None:
    out = run_example("paramserv_logreg.daph")
    assert out[0] == "log loss before and after:" and out[3] == "training accuracy:"
    assert float(out[1]) == pytest.approx(np.log(2.0), rel=1e-5)  # the zero model predicts 0.5 everywhere
    assert float(out[2]) < 0.35
    assert float(out[4]) > 0.9  # 5 % of the labels are flipped on purpose


def test_paramserv_mlp() -> None:
    """The SystemDS peer's workload; its final MSE there is about 0.13 (paramserv BSP, 5 epochs)."""
    out = run_example("paramserv_mlp.daph")
    assert out[0] == "initial MSE:" and out[2] == "final MSE:"
    assert float(out[1]) > 5.0 and float(out[3]) < 0.13
