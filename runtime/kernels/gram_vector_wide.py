"""The `gramVector` kernels for a dense X that the compiler knows has at least `gram_vector.BLAS_MIN_COLS` columns.

They are gram_vector's own kernel, whose BLAS form runs for such an X (the form depends on X's shape only), in a
module of their own because the warm-up (runtime/scheduling/warmup.py) builds the native loops of the modules a
program's kernels come from: a program whose X is that wide never runs gram_vector's native loops, and building
them at its start took the cores from its first products (the optimizer bench's one-shot `(t(X) @ X) @ v` at 100
columns: 3.8 -> 5.9 ms once the build got a thread of its own). compiler/selection/matrix.py picks this module.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from daphnec.runtime.kernels import gram_vector


def _of_this_module(kernel: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """gram_vector's `kernel` as a function of this module, under its own name (the warm-up reads a kernel's module,
    a restored program finds it by module and name)."""

    def same(*args: object) -> np.ndarray:
        return kernel(*args)

    same.__name__ = same.__qualname__ = kernel.__name__
    same.__doc__ = kernel.__doc__
    return same


gram_vector_plain = _of_this_module(gram_vector.gram_vector_plain)
gram_vector_weighted = _of_this_module(gram_vector.gram_vector_weighted)
gram_vector_residual = _of_this_module(gram_vector.gram_vector_residual)
