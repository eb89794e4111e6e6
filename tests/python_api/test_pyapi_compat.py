"""DaphneLib's documented examples run unchanged through its import path (`doc/DaphneLib/Overview.md`,
`Numpy2DaphneLib.md`, the package README), with the documented output; plus the notebook niceties."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

OVERVIEW_NUMPY = """\
from daphne.context.daphne_context import DaphneContext
import numpy as np

dc = DaphneContext()

# Create data in numpy.
a = np.arange(8.0).reshape((2, 4))

# Transfer data to DaphneLib (lazily evaluated).
X = dc.from_numpy(a)

print("How DAPHNE sees the data from numpy:")
X.print().compute()

# Add 100 to each value in X.
X = X + 100.0

# Compute in DAPHNE, transfer result back to Python.
print("\\nResult of adding 100 to each value, back in Python:")
print(X.compute())
"""

OVERVIEW_NUMPY_OUTPUT = """\
How DAPHNE sees the data from numpy:
DenseMatrix(2x4, double)
0 1 2 3
4 5 6 7

Result of adding 100 to each value, back in Python:
[[100. 101. 102. 103.]
 [104. 105. 106. 107.]]
"""

OVERVIEW_PANDAS = """\
from daphne.context.daphne_context import DaphneContext
import pandas as pd

dc = DaphneContext()

# Create data in pandas.
df = pd.DataFrame({"a": [1, 2, 3], "b": [1.1, -2.2, 3.3]})

# Transfer data to DaphneLib (lazily evaluated).
F = dc.from_pandas(df)

print("How DAPHNE sees the data from pandas:")
F.print().compute()

# Append F to itself.
F = F.rbind(F)

# Compute in DAPHNE, transfer result back to Python.
print("\\nResult of appending the frame to itself, back in Python:")
print(F.compute())
"""

# The documented output shows DaphneLib's CSV bug (the first row of the result is eaten as a header); the frame
# appended to itself has six rows.
OVERVIEW_PANDAS_OUTPUT = """\
How DAPHNE sees the data from pandas:
Frame(3x2, [a:int64_t, b:double])
1 1.1
2 -2.2
3 3.3

Result of appending the frame to itself, back in Python:
   a    b
0  1  1.1
1  2 -2.2
2  3  3.3
3  1  1.1
4  2 -2.2
5  3  3.3
"""


def _run(tmp_path: Path, source: str) -> str:
    script = tmp_path / "example.py"
    script.write_text(source)
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    return res.stdout


def test_overview_numpy_example(tmp_path: Path) -> None:
    assert _run(tmp_path, OVERVIEW_NUMPY) == OVERVIEW_NUMPY_OUTPUT


def test_overview_pandas_example(tmp_path: Path) -> None:
    assert _run(tmp_path, OVERVIEW_PANDAS) == OVERVIEW_PANDAS_OUTPUT


def test_introductory_example() -> None:
    """Overview.md's shift-and-scale: `axis=1` is per column, stddev the population one."""
    from daphne.context.daphne_context import DaphneContext

    dc = DaphneContext()
    a = np.random.rand(5, 3)
    X = dc.from_numpy(a)
    Y = (X - X.mean(axis=1)) / X.stddev(axis=1)
    assert np.allclose(Y.compute(), (a - a.mean(axis=0)) / a.std(axis=0), rtol=1e-12)
    assert np.allclose((1.5 * X @ dc.from_numpy(np.ones((3, 1))) + 0.001).compute(), 1.5 * a.sum(1, keepdims=1) + 0.001)


def test_numpy2daphnelib_examples() -> None:
    """Every DaphneLib expression of Numpy2DaphneLib.md, unchanged, against the numpy it replaces."""
    from daphne.context.daphne_context import DaphneContext

    dc = DaphneContext()
    a = np.arange(12.0).reshape(4, 3)
    X = dc.from_numpy(a)
    assert X.asType(vtype="f32").compute().dtype == np.float32
    X1c = X.reshape(X.ncell(), 1)
    assert np.array_equal(X1c.cbind(X1c).cbind(X1c).compute(), np.column_stack([a.ravel()] * 3))
    assert np.array_equal(X.cbind(X).cbind(X).compute(), np.concatenate((a, a, a), axis=1))
    assert np.array_equal(X.rbind(X).compute(), np.concatenate((a, a), axis=0))
    assert np.array_equal(dc.fill(0, 3, 2).asType(vtype="f32").compute(), np.zeros((3, 2), np.float32))
    assert np.array_equal(dc.fill(7.5, 3, 2).compute(), np.full((3, 2), 7.5))
    nan = dc.from_numpy(np.array([[np.nan, 1.0]]))
    assert nan.isNan().compute().tolist() == [[1.0, 0.0]]
    b = dc.from_numpy(np.array([[1, 0, 1]], dtype=np.int64))
    assert (b - 1).abs().compute().tolist() == np.logical_not([[1, 0, 1]]).astype(int).tolist()
    s = dc.sample(10, 5, False).compute()
    assert s.shape == (5, 1) and len(set(s.ravel().tolist())) == 5 and s.max() < 10
    col = dc.from_numpy(np.arange(4.0))
    drawn = col[dc.sample(col.nrow(), 3 * 2, True),].reshape(3, 2).compute()
    assert drawn.shape == (3, 2) and set(drawn.ravel().tolist()) <= {0.0, 1.0, 2.0, 3.0}
    perm = X[dc.sample(X.nrow(), X.nrow(), False),].compute()
    assert sorted(map(tuple, perm.tolist())) == sorted(map(tuple, a.tolist()))
    assert np.array_equal(
        col.outerAdd(dc.fill(0, 1, 3)).reshape(col.nrow() * 3, 1).compute(), np.repeat(np.arange(4.0), 3).reshape(-1, 1)
    )
    row = dc.from_numpy(np.arange(3.0).reshape(1, 3))
    assert np.array_equal(dc.fill(0, 3, 1).outerAdd(row).compute(), np.repeat(np.arange(3.0).reshape(1, 3), 3, 0))
    # np.tile(X, (3, 2)) as the document writes it (its inclusive `seq` draws one more row and column)
    tiled = X[dc.seq(0, X.nrow() * 3).mod(X.nrow()), dc.seq(0, X.ncol() * 2).mod(X.ncol())].compute()
    assert np.array_equal(tiled, a[np.arange(13) % 4][:, np.arange(7) % 3])


def test_import_paths_and_notebook_niceties(capfd: pytest.CaptureFixture[str]) -> None:
    import daphne.context
    import daphne.operator.nodes.frame
    import daphne.operator.nodes.scalar
    import daphne.operator.operation_node

    import daphnec

    dc = daphnec.DaphneContext()
    assert daphne.context.Matrix is daphnec.Matrix and daphne.operator.nodes.frame.Frame is daphnec.Frame
    assert daphne.operator.nodes.scalar.Scalar is daphnec.Scalar
    assert daphne.operator.operation_node.OperationNode is daphnec.OperationNode
    X = dc.from_numpy(np.ones((5, 3)))
    Y = (X - X.mean(axis=1)) / X.stddev(axis=1)
    assert repr(Y) == ("Matrix(5x3 f64) lazy: ((numpy[5x3 f64] - mean(numpy[5x3 f64], 1)) / stddev(numpy[5x3 f64], 1))")
    assert repr(X.sum()) == "Scalar(f64) lazy: sum(numpy[5x3 f64])"
    assert repr(X.print()).startswith("OperationNode lazy: print(")
    Y.compute(progress=True, verbose=True)
    out, err = capfd.readouterr()
    assert "compute(): total Python-side execution time:" in out
    assert "[daphnec]" in err and "running" in err and err.rstrip().endswith("done")


def test_tensor_examples_need_their_library(tmp_path: Path) -> None:
    """The TensorFlow/PyTorch examples of Overview.md raise the library's ImportError when it is missing."""
    source = textwrap.dedent(
        """\
        import numpy as np
        from daphne.context.daphne_context import DaphneContext
        dc = DaphneContext()
        try:
            import torch
        except ImportError:
            try:
                dc.from_pytorch(np.zeros((2, 2)))
            except ImportError:
                print("ImportError")
        else:
            t2d = torch.tensor(np.random.random(size=(2, 4)))
            T2D = dc.from_pytorch(t2d) + 100.0
            print(type(T2D.compute(asPyTorch=True)).__name__)
        """
    )
    assert _run(tmp_path, source).strip() in ("ImportError", "Tensor")
