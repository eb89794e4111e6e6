"""Building canonical CSR matrices (`scipy.sparse.csr_array`: sorted column indices, no duplicates) from
coordinate triplets, as the readers of coordinate formats need."""

from __future__ import annotations

import numpy as np


def _index_dtype(shape: tuple[int, int], nnz: int) -> np.dtype:
    return np.dtype(np.int32) if max(shape[0], shape[1], nnz) < 2**31 else np.dtype(np.int64)


def _sorted_unique(r: np.ndarray, c: np.ndarray) -> bool:
    """True if the positions are in row-major order without repeats (how writers usually emit them)."""
    if len(r) < 2:
        return True
    dr = np.diff(r)
    return bool(np.all((dr > 0) | ((dr == 0) & (np.diff(c) > 0))))


def _from_sorted(data: np.ndarray, r: np.ndarray, c: np.ndarray, shape: tuple[int, int]):
    import scipy.sparse as sp

    idx = _index_dtype(shape, len(data))
    indptr = np.zeros(shape[0] + 1, dtype=idx)
    np.cumsum(np.bincount(r, minlength=shape[0]), out=indptr[1:])
    m = sp.csr_array((data, c.astype(idx, copy=False), indptr), shape=shape)
    m.has_canonical_format = True
    return m


def _last_wins(data: np.ndarray, r: np.ndarray, c: np.ndarray, shape: tuple[int, int]):
    """Positions sorted row-major with one entry each: the last one in file order (DAPHNE's dense readers overwrite
    a cell given twice)."""
    if shape[0] * shape[1] < 2**62:
        key = r.astype(np.int64) * shape[1] + c  # row-major cell number
        keys, first_rev = np.unique(key[::-1], return_index=True)  # first in reverse = last in file order
        return data[len(key) - 1 - first_rev], keys // shape[1], keys % shape[1]
    order = np.lexsort((c, r))  # stable: within a run of equal positions, file order is kept
    r, c, data = r[order], c[order], data[order]
    last = np.ones(len(r), dtype=bool)
    last[:-1] = (r[1:] != r[:-1]) | (c[1:] != c[:-1])
    return data[last], r[last], c[last]


def coo_to_csr(data: np.ndarray, r: np.ndarray, c: np.ndarray, shape: tuple[int, int]):
    """A canonical CSR matrix from in-bounds 0-based positions; a position given twice keeps its last value.

    Row-major input (what writers usually emit) is taken as it is; otherwise scipy's O(nnz) COO->CSR conversion
    sorts it, and only if that finds repeated positions are they resolved by a (slower) stable sort.
    """
    import scipy.sparse as sp

    if _sorted_unique(r, c):
        return _from_sorted(data, r, c, shape)
    m = sp.csr_array((data, (r, c)), shape=shape)  # sorted; repeated positions summed
    if m.nnz == len(data):
        return m
    return _from_sorted(*_last_wins(data, r, c, shape), shape)


def dense_to_csr(m: np.ndarray):
    """The non-zero cells of a dense matrix as CSR."""
    import scipy.sparse as sp

    out = sp.csr_array(m)
    out.sum_duplicates()
    return out


#: Triplets per step of `lower_symmetric_to_csr`'s mirror pass (bounds its temporary arrays to a few tens of MB).
_MIRROR_CHUNK = 1 << 20


def lower_symmetric_to_csr(data: np.ndarray | None, r: np.ndarray, c: np.ndarray, shape: tuple[int, int], skew: bool):
    """The full CSR matrix of a (skew-)symmetric file that stores its lower triangle in row-major order without
    repeats (`lower_sorted(r, c)`), built straight into the result's arrays: row i is the stored entries of row i
    (columns <= i) followed by the mirrored ones (columns > i, the rows that store column i, in increasing order).
    `data` None: a pattern file, every value is 1.0.

    Besides the result this needs only the triplets and three arrays of one entry per row, unlike adding the
    transpose of the stored triangle (which holds the triangle, its transpose and the sum at once: ~2x the memory).
    """
    import scipy.sparse as sp

    n = shape[0]
    low = np.bincount(r, minlength=n)
    up = np.bincount(c, minlength=n) - np.bincount(r[r == c], minlength=n)  # mirrored entries per row
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(low + up, out=indptr[1:])
    del up
    nnz = int(indptr[-1])
    idx = _index_dtype(shape, nnz)
    indices = np.empty(nnz, dtype=idx)
    values = np.empty(nnz, dtype=np.float64 if data is None else data.dtype)
    if data is None:
        values.fill(1.0)
    next_free = indptr[:-1] + low  # where the next mirrored entry of each row goes
    up_before = next_free - np.cumsum(low)  # mirrored entries of the rows before each row
    del low
    for lo in range(0, len(r), _MIRROR_CHUNK):
        rs, cs = r[lo : lo + _MIRROR_CHUNK], c[lo : lo + _MIRROR_CHUNK]
        ds = None if data is None else data[lo : lo + _MIRROR_CHUNK]
        dest = up_before[rs] + np.arange(lo, lo + len(rs))  # the stored entries keep their row-major order
        indices[dest] = cs
        off = rs != cs
        mc = cs[off]
        order = np.argsort(mc, kind="stable")  # rows ascending within each mirrored row, as in the file
        mc = mc[order]
        rank = np.arange(len(mc)) - np.searchsorted(mc, mc)  # position among this chunk's entries of the row
        dest2 = next_free[mc] + rank
        indices[dest2] = rs[off][order]
        if ds is not None:
            values[dest] = ds
            md = ds[off][order]
            values[dest2] = -md if skew else md
        next_free += np.bincount(mc, minlength=n)
    m = sp.csr_array((values, indices, indptr.astype(idx, copy=False)), shape=shape)
    m.has_sorted_indices = True
    m.has_canonical_format = True
    return m


def lower_sorted(r: np.ndarray, c: np.ndarray) -> bool:
    """True if the positions are a lower triangle (row >= column) in row-major order without repeats."""
    return bool(np.all(r >= c)) and _sorted_unique(r, c)
