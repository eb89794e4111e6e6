"""`AND`/`OR`/`XOR` of float matrices (SQL's WHERE over float comparisons) skip the integer copies of their operands
(`ew_binary._truth`); the result must equal casting both operands to the operation's type first, as DAPHNE does
(CastArgsToResType), for every value: fractions, NaN, infinities, values beyond the int32 range."""

from __future__ import annotations

import numpy as np
import pytest

from daphnec.runtime.kernels.ew_binary import matrix_kernel
from daphnec.runtime.values import cast_matrix

VALUES = [0.0, -0.0, 1.0, 0.5, -0.5, -1.0, 2.7, -3.9, 1e10, -1e10, np.nan, np.inf, -np.inf, 300.0, 256.0, 2.0**31]


@pytest.mark.parametrize("vt", ["si64", "ui64", "si32", "ui32", "si8", "ui8"])
@pytest.mark.parametrize("op", ["and", "or", "xor"])
def test_logical_of_floats_equals_casting_first(vt: str, op: str) -> None:
    rng = np.random.default_rng(7)
    kernel = matrix_kernel(op, vt, vt)
    for trial in range(300):
        pool = VALUES if trial % 2 else [0.0, 1.0, 0.5, -0.7, 2.0]  # in range: the fast path
        a = rng.choice(pool, size=(9, 1))
        b = rng.choice([0.0, 1.0, 0.99, -2.0], size=(9, 1))
        fast = kernel(a, b)
        slow = kernel(cast_matrix(a, vt), cast_matrix(b, vt))
        assert fast.dtype == slow.dtype
        assert np.array_equal(fast, slow), (a.ravel(), b.ravel())
