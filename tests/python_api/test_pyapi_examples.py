"""The notebook-style example (examples/python/notebook.py) runs top to bottom and prints what numpy computes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def _sql_builtins_exist() -> bool:
    from daphnec.frontend.builtins import all_builtins

    return {"sql", "registerView"} <= set(all_builtins())


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
    if _sql_builtins_exist():
        assert res.returncode == 0, res.stderr
        weights = [float(v) for v in out[6].split("[")[1].rstrip("]").split()]
        assert abs(weights[1] - 1500) < 50 and abs(weights[2] - 20_000) < 2_000, weights
    else:  # SQL is being built on another branch: until it lands the SQL cell stops with the API's parse error
        assert res.returncode == 1
        assert "DaphneParseError: Error in DaphneDSL script: <daphnelib>:" in res.stderr
        assert "unknown function 'registerView'" in res.stderr and "notebook.py:" in res.stderr
