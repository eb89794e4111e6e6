"""The `gramVector` kernels for a dense X that the compiler knows has at least `gram_vector.BLAS_MIN_COLS` columns.

They are gram_vector's own kernel, whose BLAS form runs for such an X (the form depends on X's shape only), in a
module of their own because the warm-up (runtime/scheduling/warmup.py) builds the native loops of the modules a
program's kernels come from: a program whose X is that wide never runs gram_vector's native loops, and building
them at its start took the cores from its first products (the optimizer bench's one-shot `(t(X) @ X) @ v` at 100
columns: 3.8 -> 5.9 ms once the build got a thread of its own). compiler/selection/matrix.py picks this module.
"""

from __future__ import annotations

import numpy as np

from daphnec.runtime.kernels.gram_vector import gram_vector


def gram_vector_plain(X, v) -> np.ndarray:
    """`t(X) @ (X @ v)`."""
    return gram_vector(X, v, None, "plain")


def gram_vector_weighted(X, v, w) -> np.ndarray:
    """`t(X) @ (w * (X @ v))`."""
    return gram_vector(X, v, w, "weighted")


def gram_vector_residual(X, v, y) -> np.ndarray:
    """`t(X) @ ((X @ v) - y)`."""
    return gram_vector(X, v, y, "residual")
