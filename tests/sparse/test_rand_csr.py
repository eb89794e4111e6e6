"""`rand` and `fill` straight into CSR (runtime/kernels/datagen_csr.py).

The vectorised `rand` is checked against a plain, line-by-line port of DAPHNE's `RandMatrix<CSRMatrix<VT>>` (with
libstdc++'s minstd_rand0, generate_canonical and uniform_int_distribution) written independently below.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.kernels import datagen_csr
from daphnec.runtime.values import as_dense, is_csr

M = 2147483647
U64 = (1 << 64) - 1


class Engine:
    """std::minstd_rand0, one output at a time."""

    def __init__(self, seed: int) -> None:
        self.x = (seed & U64) % M or 1

    def __call__(self) -> int:
        self.x = self.x * 16807 % M
        return self.x


def uniform_int(g: Engine, urange: int) -> int:
    """libstdc++ uniform_int_distribution::operator() over [0, urange] with a [1, 2^31 - 2] engine."""
    urng = M - 2
    if urng > urange:
        uerange = urange + 1
        scaling = urng // uerange
        past = uerange * scaling
        while True:
            ret = g() - 1
            if ret < past:
                return ret // scaling
    if urng < urange:
        while True:
            tmp = ((urng + 1) * uniform_int(g, urange // (urng + 1))) & U64
            ret = (tmp + g() - 1) & U64
            if not (ret > urange or ret < tmp):
                return ret
    return g() - 1


def uniform_real(g: Engine, a: float, b: float, f32: bool) -> float:
    """uniform_real_distribution via generate_canonical (k = 2 draws for double, 1 for float)."""
    r = M - 1
    if f32:
        f = np.float32
        u = f(g() - 1) / f(r)
        u = np.nextafter(f(1), f(0)) if u >= f(1) else u
        return u * (f(b) - f(a)) + f(a)
    total, tmp = 0.0, 1.0
    for _ in range(2):
        total += float(g() - 1) * tmp
        tmp = float(tmp * r)
    u = total / tmp
    u = np.nextafter(1.0, 0.0) if u >= 1.0 else u
    return u * (b - a) + a


def reference_rand(rows: int, cols: int, lo, hi, sparsity: float, seed: int, kind: str):
    g = Engine(seed)
    nnz = math.floor(rows * cols * sparsity + 0.5)
    if kind == "int":
        vals = [lo + uniform_int(g, (hi - lo) & U64) for _ in range(nnz)]
    else:
        vals = [uniform_real(g, lo, hi, kind == "f32") for _ in range(nnz)]
    if sparsity <= 0.5:
        counts, assigned = [0] * rows, 0
        while assigned < nnz:
            r = uniform_int(g, rows - 1)
            if counts[r] < cols:
                counts[r] += 1
                assigned += 1
    else:
        counts, assigned = [cols] * rows, rows * cols
        while assigned > nnz:
            r = uniform_int(g, rows - 1)
            if counts[r] > 0:
                counts[r] -= 1
                assigned -= 1
    indices: list[int] = []
    for r in range(rows):
        chosen: set[int] = set()
        need = counts[r] if sparsity <= 0.5 else cols - counts[r]
        while len(chosen) < need:
            chosen.add(uniform_int(g, cols - 1))
        indices += sorted(chosen) if sparsity <= 0.5 else [c for c in range(cols) if c not in chosen]
    return vals, counts, indices


CASES = [
    (10, 10, 0.0, 1.0, 0.2, 1, "f64"),
    (10, 10, 0.0, 1.0, 0.7, 5, "f64"),
    (7, 13, -5, 5, 0.3, 42, "si64"),
    (50, 40, 1, 3, 0.1, 7, "ui8"),
    (3, 200, 0.5, 2.5, 0.05, 9, "f32"),
    (100, 3, -1.0, 1.0, 0.5, 11, "f64"),
    (1, 1, 1, 1, 1.0, 3, "si64"),
    (40, 40, 0, 100, 0.9, 123456789012, "si32"),
    (20, 30, -3.0, 3.0, 0.25, -5, "f64"),
    (30, 30, -(2**40), 2**40, 0.2, 17, "si64"),
    (60, 50, 1, 9, 0.45, 2, "si8"),
    (8, 500, 0.0, 1.0, 0.02, 0, "f64"),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}x{c[1]}-{c[4]}-{c[6]}" for c in CASES])
def test_rand_csr_matches_a_plain_port_of_daphnes_algorithm(case: tuple) -> None:
    rows, cols, lo, hi, sparsity, seed, vt = case
    kind = vt if vt in ("f64", "f32") else "int"
    vals, counts, indices = reference_rand(rows, cols, lo, hi, sparsity, seed, kind)
    m = datagen_csr.rand(rows, cols, lo, hi, sparsity, seed, vt)
    assert is_csr(m) and m.shape == (rows, cols) and m.has_canonical_format
    assert np.diff(m.indptr).tolist() == counts
    assert m.indices.tolist() == indices
    expected = np.array(vals).astype(m.dtype)
    assert np.array_equal(m.data, expected)


def test_rand_csr_is_deterministic_and_in_range() -> None:
    a = datagen_csr.rand(200, 300, 2.0, 5.0, 0.05, 99, "f64")
    b = datagen_csr.rand(200, 300, 2.0, 5.0, 0.05, 99, "f64")
    assert a.nnz == 3000 and np.array_equal(as_dense(a), as_dense(b))
    assert ((a.data >= 2.0) & (a.data < 5.0)).all()
    assert a.dtype == np.float64
    assert not np.array_equal(as_dense(datagen_csr.rand(200, 300, 2.0, 5.0, 0.05, 98, "f64")), as_dense(a))


def test_rand_csr_random_seed() -> None:
    a = datagen_csr.rand(50, 50, 1, 10, 0.1, -1, "si64")
    assert a.nnz == 250 and a.dtype == np.int64


def test_rand_csr_full_and_empty() -> None:
    assert datagen_csr.rand(3, 4, 1.0, 2.0, 0.0, 1, "f64").nnz == 0
    full = datagen_csr.rand(3, 4, 1.0, 2.0, 1.0, 1, "f64")
    assert full.nnz == 12 and (as_dense(full) != 0).all()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((0, 3, 1.0, 2.0, 0.1, 1, "f64"), "RandMatrix - numRows must be > 0"),
        ((3, 0, 1.0, 2.0, 0.1, 1, "f64"), "RandMatrix - numCols must be > 0"),
        ((3, 3, 5, 1, 0.1, 1, "si64"), "RandMatrix - min must be <= max"),
        ((3, 3, 0, 0, 0.1, 1, "si64"), "RandMatrix - min and max must not both be zero"),
        ((3, 3, 1.0, 2.0, -0.5, 1, "f64"), "sparsity has to be in the interval [0.0, 1.0]"),
        ((3, 3, 1.0, 2.0, 0.1, 1, "str"), "RandMatrix - value type str is not supported"),
    ],
)
def test_rand_csr_errors(args: tuple, message: str) -> None:
    with pytest.raises(DaphneRuntimeError) as e:
        datagen_csr.rand(*args)
    assert message in str(e.value)


def test_rand_csr_large_is_fast_enough() -> None:
    """400k x 400k with 3.4M non-zeros: built directly as CSR (a dense intermediate would need 1.28 TB)."""
    start = time.perf_counter()
    m = datagen_csr.rand(400_000, 400_000, 0.0, 1.0, 3.4e6 / 1.6e11, 42, "f64")
    assert m.nnz == 3_400_000 and m.has_canonical_format
    assert time.perf_counter() - start < 30


def test_fill_csr() -> None:
    z = datagen_csr.fill(0, 3, 4, "f64")
    assert is_csr(z) and z.nnz == 0 and z.shape == (3, 4) and z.dtype == np.float64
    f = datagen_csr.fill(2.5, 2, 3, "f32")
    assert is_csr(f) and np.array_equal(as_dense(f), np.full((2, 3), 2.5, dtype=np.float32))
    assert datagen_csr.fill(1, 0, 5, "si64").shape == (0, 5)
    with pytest.raises(DaphneRuntimeError, match="must not be negative"):
        datagen_csr.fill(0, -1, 2, "si64")


def test_engine_matches_minstd_rand0() -> None:
    """The 10000th output of minstd_rand0 seeded with 1 is 1043618065 (the C++ standard's [rand.predef])."""
    g = datagen_csr.MinstdRand0(1)
    assert int(g.take(10000)[-1]) == 1043618065
    g.pos = 9999
    assert g.next() == 1043618065
