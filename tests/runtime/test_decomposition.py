"""`eigen` (runtime/kernels/decomposition.py): DAPHNE's eigenvalue order, and the background warm-up of LAPACK's
eigensolver that a program calling `eigen` starts (runtime/scheduling/warmup.py) changes no bit of its results."""

from __future__ import annotations

import subprocess
import sys

import numpy as np

from daphnec.runtime.kernels.decomposition import eigen


def test_eigenvalues_come_in_daphnes_order_not_sorted() -> None:
    """DAPHNE's EigenCalTest: its 3 x 3 matrix gives 44.819, 910.07, 629.11 in this order (Eigen's QR iteration);
    a sorting symmetric solver would give 629.11 second. Each vector solves its own value."""
    A = np.array([[504.0, 360.0, 180.0], [360.0, 360.0, 0.0], [180.0, 0.0, 720.0]])
    vals, vecs = eigen(A)
    assert vals.shape == (3, 1) and vecs.shape == (3, 3)
    assert np.round(vals.ravel(), 2).tolist() == [44.82, 910.07, 629.11]
    assert np.allclose(A @ vecs, vecs * vals.ravel(), rtol=0, atol=1e-9)
    assert np.allclose(np.linalg.norm(vecs, axis=0), 1.0)


_PROBE = """
import sys
import numpy as np
from daphnec.runtime.kernels import decomposition
from daphnec.runtime.scheduling import warmup
if sys.argv[1] == "warm":
    t = warmup.warm_up_for([decomposition.eigen])
    assert t is not None
    t.join()
X = np.random.default_rng(5).random((400, 30))
X = X - X.mean(axis=0)
vals, vecs = decomposition.eigen((X.T @ X) / 399)
print(vals.tobytes().hex(), vecs.tobytes().hex())
"""


def _eigen_bits(mode: str) -> str:
    res = subprocess.run([sys.executable, "-c", _PROBE, mode], capture_output=True, text=True, check=True, timeout=60)
    return res.stdout


def test_warm_up_of_a_program_calling_eigen_keeps_its_bits() -> None:
    """A program whose only worker-free kernel is `eigen` still starts the warm-up thread (LAPACK's first call), and
    the eigensystem computed afterwards is bit for bit the one of a process without it."""
    assert _eigen_bits("warm") == _eigen_bits("cold")
