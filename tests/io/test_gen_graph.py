"""tools/gen_graph.py on small sizes: a symmetric pattern matrix without loops or repeats, reproducible, with a
`.meta` that lets `readMatrix` type it at compile time."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.io

from daphnec.tools.gen_graph import lower_triangle_edges, main

ROOT = Path(__file__).resolve().parents[2]


def _read(path: Path):
    return scipy.io.mmread(str(path)).tocsr()


def test_small_graph(tmp_path: Path) -> None:
    out = tmp_path / "g.mtx"
    assert main([str(out), "--vertices", "500", "--edges", "3000", "--seed", "7"]) == 0
    assert out.read_text().startswith("%%MatrixMarket matrix coordinate pattern symmetric\n")
    meta = json.loads((tmp_path / "g.mtx.meta").read_text())
    assert meta == {"numCols": 500, "numNonZeros": 3000, "numRows": 500, "valueType": "f64"}
    a = _read(out)
    assert a.shape == (500, 500) and a.nnz == 3000  # the stored (symmetrised) matrix has --edges non-zeros
    assert (a != a.T).nnz == 0 and a.diagonal().sum() == 0
    assert set(np.unique(a.data)) == {1.0}


def test_reproducible_and_seed_dependent(tmp_path: Path) -> None:
    for name, seed in (("a", 1), ("b", 1), ("c", 2)):
        main([str(tmp_path / f"{name}.mtx"), "--vertices", "200", "--edges", "800", "--seed", str(seed)])
    a, b, c = ((tmp_path / f"{n}.mtx").read_bytes() for n in "abc")
    assert a == b and a != c


@pytest.mark.parametrize(("n", "m"), [(10, 45), (10, 40), (30, 200), (3, 0)])
def test_dense_and_edge_cases(n: int, m: int) -> None:
    r, c = lower_triangle_edges(n, m, seed=0)
    assert len(r) == m and np.all(r > c) and np.all(r < n) and np.all(c >= 0)
    keys = r * n + c
    assert np.all(np.diff(keys) > 0)  # row-major, no repeats


def test_errors(tmp_path: Path) -> None:
    assert main([str(tmp_path / "x.mtx"), "--vertices", "10", "--edges", "7"]) == 1  # odd: not symmetric
    assert main([str(tmp_path / "x.mtx"), "--vertices", "4", "--edges", "14"]) == 1  # more than a complete graph


def test_cli_and_daphnec_read_it(tmp_path: Path) -> None:
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    res = subprocess.run(
        [sys.executable, "-m", "daphnec.tools.gen_graph", "g.mtx", "--vertices", "60", "--edges", "240"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0 and "240 non-zeros" in res.stdout
    (tmp_path / "s.daph").write_text('G = readMatrix("g.mtx");\nprint(sum(G));\nprint(sum(abs(G - t(G))));\n')
    res = subprocess.run(
        [sys.executable, "-m", "daphnec.tools.daphnec", "s.daph"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (res.returncode, res.stderr, res.stdout) == (0, "", "240\n0\n")
