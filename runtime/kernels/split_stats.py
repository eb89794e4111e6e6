"""`t(v1) @ outerLe(x, thr)`, `t(v2) @ outerLe(x, thr)`, ... without the n x k 0/1 matrix (`daphne.splitStats`,
built by compiler/passes/fuse_split_stats.py): the split statistics of decision trees (counts and sums of the rows
left of each candidate threshold).

For thresholds sorted ascending and free of NaN (checked at every call), row i is counted for threshold j exactly
when j is at least its bin `b_i = searchsorted(thr, x_i)` (`outerLe`: side "left", the first j with x_i <= thr_j;
`outerLt`: side "right", the first j with x_i < thr_j), so the result is the running sum of the per-bin sums
`bincount(b, weights=v)`; for `outerGe`/`outerGt` row i is counted for the j below its bin (sides swapped), a
running sum from the top. A NaN in x compares false against every threshold: searchsorted places it after every
threshold (bin k, never counted by le/lt) and the ge/gt kinds move it to bin 0 (never counted either); -0.0 and
0.0 compare equal in searchsorted as in the comparison. O(n log k) for the bins, shared by all the vectors, and
O(n) per vector, against O(n k) per vector and an n x k allocation.

The sums are added in another order than the product's dot product (per bin, then across bins): the result
differs in the last bits unless the vectors are integer-valued (counts, bootstrap weights), whose sums below 2^53
are exact in any order -- hence the pass is a re-associating rewrite. Unsorted thresholds, or thresholds with a
NaN, take the written computation (the outer kernel and one product per vector).
"""

from __future__ import annotations

import numpy as np

from daphnec.runtime.errors import DaphneRuntimeError

_SIDES = {"le": ("left", False), "lt": ("right", False), "ge": ("right", True), "gt": ("left", True)}
"""Outer kind -> (searchsorted side, counted below the bin)."""

_OPS = {"le": np.less_equal, "lt": np.less, "ge": np.greater_equal, "gt": np.greater}


def split_stats(x, thr, *vs, kind: str = "le") -> np.ndarray:
    """A p x k matrix whose row r is `t(vs[r]) @ outer<kind>(x, thr)` for an n x 1 x, a 1 x k thr and n x 1 vs."""
    x = np.asarray(x, dtype=np.float64)
    thr = np.asarray(thr, dtype=np.float64)
    n, k = x.shape[0], thr.shape[1]
    if x.shape[1] != 1 or thr.shape[0] != 1:
        raise DaphneRuntimeError(
            f"outer{kind.capitalize()}: shape mismatch: lhs {x.shape[0]}x{x.shape[1]}, rhs {thr.shape[0]}x{k}: "
            "lhs must be a column (m x 1), rhs a row (1 x n)"
        )
    for v in vs:
        if v.shape != (n, 1):
            raise DaphneRuntimeError(f"matMul: shape mismatch: lhs 1x{v.shape[0]}, rhs {n}x{k}")
    t = thr[0]
    if np.isnan(t).any() or (k > 1 and not (t[1:] >= t[:-1]).all()):
        return _as_written(x, thr, vs, kind)
    side, below = _SIDES[kind]
    col = x[:, 0]
    b = np.searchsorted(t, col, side)
    if below:
        b[np.isnan(col)] = 0
    out = np.empty((len(vs), k), dtype=np.float64)
    for r, v in enumerate(vs):
        per_bin = np.bincount(b, weights=np.asarray(v, dtype=np.float64)[:, 0], minlength=k + 1)
        if below:  # thresholds j < b_i: the sum of the bins above j
            out[r] = np.cumsum(per_bin[::-1])[::-1][1:]
        else:  # thresholds j >= b_i: the sum of the bins up to j
            out[r] = np.cumsum(per_bin)[:k]
    return out


def _as_written(x: np.ndarray, thr: np.ndarray, vs, kind: str) -> np.ndarray:
    """The unfused computation: the 0/1 matrix, then one product per vector."""
    L = _OPS[kind](x, thr).astype(np.float64)
    return np.concatenate([np.asarray(v, dtype=np.float64).T @ L for v in vs], axis=0)
