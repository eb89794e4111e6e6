"""The one sequential loop of DAPHNE's dense RandMatrix, compiled: Knuth's selection sampling (RandMatrix.h).

Position i is chosen iff `draw_i % (n - i) < limit - chosen`: each decision depends on the ones before it, so the
loop cannot be vectorised with numpy; in Python it took half a minute for 10^8 cells. numba compiles it once (and
caches the machine code beside this file).
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def select(draws: np.ndarray, i: int, n: int, chosen: int, limit: int, positions: np.ndarray) -> tuple[int, int, int]:
    """Consume `draws` (uniform in [0, n)) from position i on until they run out or `limit` positions are chosen;
    the chosen ones go to `positions`. Returns the next position, the number chosen so far and how many were
    written. Knuth's method has chosen exactly `limit` by position n, so i never passes n."""
    k = 0
    for j in range(draws.size):
        if chosen >= limit:
            break
        if draws[j] % np.uint64(n - i) < np.uint64(limit - chosen):
            positions[k] = i
            k += 1
            chosen += 1
        i += 1
    return i, chosen, k
