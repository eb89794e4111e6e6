"""Exact chunk sequences of every partitioning scheme, computed by hand from the formulas (facts §2, D5.3)."""

from __future__ import annotations

import pytest

from daphnec.runtime.scheduling.partitioning import SCHEMES, auto_grain, chunk_sizes, fiss_stages, tasks

# (scheme, N, P, grain) -> chunks, each worked out by hand in the comments
CASES = {
    ("STATIC", 10, 4, 1): [2, 2, 2, 2, 2],  # N/P = 2 (integer)
    ("SS", 10, 4, 1): [1] * 10,
    ("GSS", 10, 4, 1): [3, 2, 2, 1, 1, 1],  # ceil(R/P): R = 10, 7, 5, 3, 2, 1
    ("GSS", 10, 4, 3): [3, 3, 3, 1],  # raised to the grain 3, last one cut to R = 1
    ("GSS", 100, 4, 1): [25, 19, 14, 11, 8, 6, 5, 3, 3, 2, 1, 1, 1, 1],
    ("TSS", 10, 4, 1): [2, 2, 2, 2, 2],  # c0 = 2, n = 7, delta = floor(1/6) = 0
    ("TSS", 100, 4, 1): [13] * 7 + [9],  # c0 = 13, n = 15, delta = floor(12/14) = 0
    # c0 = ceil(1000/4) = 250, n = ceil(2000/251) = 8, delta = floor(249/7) = 35; the last is cut to R = 25
    ("TSS", 1000, 2, 1): [250, 215, 180, 145, 110, 75, 25],
    ("FAC2", 10, 4, 1): [1] * 10,  # ceil(0.5^(k/P+1) * (N/P)) with N/P = 2: 1, then ceil(0.5) = 1 ...
    ("FAC2", 100, 4, 1): [13, 13, 13, 13, 7, 7, 7, 7, 4, 4, 4, 4, 2, 2],  # N/P = 25: 12.5, 6.25, 3.125, 1.56
    ("TFSS", 10, 4, 1): [2, 1, 1, 1, 1, 1, 1, 1, 1],  # ceil(R/8): R = 10 -> 2, then 1
    ("FISS", 10, 4, 1): [1, 3, 5, 1],  # S = 2, init = ceil(10/16) = 1, incr = ceil(20 * 0.5 / 8) = 2
    ("VISS", 10, 4, 1): [1, 1, 1, 1, 1, 1, 1, 1, 2],  # init 1; factors 0 (grain), 1, then ceil(1.5) = 2
    ("PLS", 10, 4, 1): [2, 2, 2, 1, 1, 1, 1],  # ceil(0.5N/P) = 2 while R > 5, then ceil(R/P)
    ("MSTATIC", 10, 4, 1): [1] * 10,  # ceil((10/4)/4.0) = ceil(0.5) = 1
    ("MFSC", 10, 4, 1): [2, 2, 2, 2, 2],  # T = 3.25, ceil(3.25 * ln2 / ln 3.25) = ceil(1.91) = 2
    ("MFSC", 100, 4, 1): [6] * 16 + [4],  # T = 25.75, ceil(25.75 * 0.21338) = ceil(5.49) = 6
    ("PSS", 10, 4, 1): [2, 2, 1, 1, 1, 1, 1, 1],  # ceil(R/6): R = 10, 8 -> 2, then 1
    ("PSS", 100, 4, 1): [17, 14, 12, 10, 8, 7, 6, 5, 4, 3, 3, 2, 2, 2, 1, 1, 1, 1, 1],
    ("AUTO", 10, 4, 1): [1] * 10,  # f = floor(log2(2.5) / 1.618) = 0, grain = floor(10 / 8) = 1
    ("AUTO", 100, 4, 1): [3] * 33 + [1],  # f = floor(log2(25)/1.618) = 2, grain = floor(100/32) = 3
}


@pytest.mark.parametrize(("key", "expected"), CASES.items(), ids=["-".join(map(str, k)) for k in CASES])
def test_chunk_sequence(key: tuple[str, int, int, int], expected: list[int]) -> None:
    assert list(chunk_sizes(*key)) == expected


def test_fiss_stages_by_hand() -> None:
    # N=10, P=4: rounds add ceil(0.5*2.5)=2 four times (8), then ceil(0.25*2.5)=1 twice -> a = 1, S = 2
    assert fiss_stages(10, 4) == 2


def test_auto_grain_follows_d53() -> None:
    assert auto_grain(100, 4) == 3
    assert auto_grain(1_000_000, 2) == 1_000_000 // (2**11 * 4)  # f = floor(18.93 / 1.618) = 11


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize(("n", "p", "grain"), [(0, 2, 1), (1, 4, 1), (7, 3, 2), (1000, 2, 1), (12345, 4, 7)])
def test_every_row_exactly_once(scheme: str, n: int, p: int, grain: int) -> None:
    ranges = list(tasks(scheme, 5, 5 + n, p, grain))
    covered = [r for a, b in ranges for r in range(a, b)]
    assert covered == list(range(5, 5 + n))
    assert all(b > a for a, b in ranges)


def test_unknown_scheme() -> None:
    with pytest.raises(ValueError, match="unknown partitioning scheme"):
        list(chunk_sizes("FOO", 10, 2))
