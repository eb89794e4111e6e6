"""The notebook-style example (examples/python/notebook.py) runs top to bottom and prints what numpy computes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def test_notebook_example() -> None:
    res = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "python" / "notebook.py")],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    out = res.stdout.splitlines()
    assert out[0].startswith("Matrix(100000x10 f64) lazy: ((numpy[100000x10 f64] - mean(")
    assert out[1] == "shift-and-scale matches numpy: True"
    assert out[2] == "k-means centroids:"
    centroids = np.array([[float(v) for v in line.strip(" []").split()] for line in out[3:6]])
    assert np.allclose(centroids, [[0, 0], [4, 4], [8, 0]], atol=0.1), centroids
    assert res.returncode == 0, res.stderr
    assert out[6].startswith("regression weights (intercept, area, rooms): [")
    weights = [float(v) for v in out[6].split("[")[1].rstrip("]").split()]
    assert abs(weights[1] - 1500) < 50 and abs(weights[2] - 20_000) < 2_000, weights
