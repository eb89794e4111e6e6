"""Chunk sizes of the partitioning schemes (DAPHNE's LoadPartitioning.h, facts §2, and the D5.3 deliverable).

A scheme cuts N rows into tasks for P workers; each step's formula gives a chunk size, which is then raised to the
grain size (`--grain-size`) and cut to the R rows remaining. Notation: N rows, P workers, R rows remaining, k the
step index (0, 1, ...). Integer division is C++'s where DAPHNE's code uses it.

Two schemes follow their publications instead of DAPHNE's code, as the issue asks (DAPHNE's behaviour is noted):
- FISS: the increment has the factor (1 - S/(S+2)), which DAPHNE's integer division turns into 1.
- TSS: the decreasing chunk never goes below 1; DAPHNE's unsigned arithmetic wraps and is saved only by the
  clamp to R.
- AUTO: SS with grain floor(N / (2^f * 2P)), f = floor(log2(N/P) / 1.618) (D5.3), not DAPHNE's code, which by a
  bug runs MSTATIC.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

from daphnec.runtime.scheduling.config import SCHEMES


def fiss_stages(n: int, p: int) -> int:
    """DAPHNE's stage count for FISS/VISS: halve the remaining work per round of P chunks until N is covered."""
    step = sched = a = 0
    while sched < n:
        a = step // p
        sched += math.ceil(0.5 ** (a + 1) * n / p)
        step += 1
    return a + 1


def auto_grain(n: int, p: int) -> int:
    """D5.3's AUTO: SS whose grain is floor(N / (2^f * 2P)) with f = floor(log2(N/P) / 1.618), at least 1."""
    if n <= 0 or p <= 0:
        return 1
    f = math.floor(math.log2(n / p) / 1.618) if n > p else 0
    return max(1, n // (2 ** max(f, 0) * 2 * p))


ChunkFormula = Callable[[int, int], int]
"""(k, remaining) -> raw chunk size for step k."""


def _formula(scheme: str, n: int, p: int) -> ChunkFormula:
    """The raw chunk-size formula of a scheme for N rows and P workers (before grain and remaining clamps)."""
    if scheme == "STATIC":
        return lambda k, r: n // p
    if scheme in ("SS", "AUTO"):
        return lambda k, r: 1
    if scheme == "GSS":
        return lambda k, r: math.ceil(r / p)
    if scheme == "TSS":
        return _tss(n, p)
    if scheme == "FAC2":
        return lambda k, r: math.ceil(0.5 ** (k // p + 1) * (n // p))
    if scheme == "TFSS":
        return lambda k, r: math.ceil(r / (2 * p))
    if scheme == "FISS":
        return _fiss(n, p)
    if scheme == "VISS":
        init = _fiss_init(n, p)
        return lambda k, r: init * math.ceil((1 - 0.5 ** (k // p)) / 0.5)
    if scheme == "PLS":
        return lambda k, r: math.ceil(0.5 * n / p) if r > n - 0.5 * n else math.ceil(r / p)
    if scheme == "MSTATIC":
        return lambda k, r: math.ceil((n // p) / 4.0)
    if scheme == "MFSC":
        return _mfsc(n, p)
    if scheme == "PSS":
        return lambda k, r: math.ceil(r / (1.5 * p))
    raise ValueError(f"unknown partitioning scheme '{scheme}' (valid: {', '.join(SCHEMES)})")


def _tss(n: int, p: int) -> ChunkFormula:
    first = math.ceil(n / (2 * p))
    steps = math.ceil(2 * n / (first + 1))
    delta = (first - 1) // (steps - 1) if steps > 1 else 0
    return lambda k, r: max(first - k * delta, 1)


def _fiss_init(n: int, p: int) -> int:
    return math.ceil(n / ((2 + fiss_stages(n, p)) * p))


def _fiss(n: int, p: int) -> ChunkFormula:
    s = fiss_stages(n, p)
    init = _fiss_init(n, p)
    incr = math.ceil(2 * n * (1 - s / (s + 2)) / (p * s * (s - 1))) if s > 1 else 0
    return lambda k, r: init + k * incr


def _mfsc(n: int, p: int) -> ChunkFormula:
    t = (n + p - 1) / p
    chunk = math.ceil(t * math.log(2) / math.log(t)) if t > 1 else 1
    return lambda k, r: chunk


def chunk_sizes(scheme: str, n: int, p: int, grain: int = 1) -> Iterator[int]:
    """The chunk sizes a scheme yields for N rows, P workers and a grain size, in scheduling order."""
    p = max(p, 1)
    grain = max(grain, 1)
    if scheme == "AUTO":
        grain = max(grain, auto_grain(n, p))
    formula = _formula(scheme, n, p)
    remaining, k = n, 0
    while remaining > 0:
        chunk = min(max(formula(k, remaining), grain), remaining)
        yield chunk
        remaining -= chunk
        k += 1


def tasks(scheme: str, start: int, end: int, p: int, grain: int = 1) -> Iterator[tuple[int, int]]:
    """Row ranges [a, b) covering [start, end) exactly once, cut by a scheme."""
    pos = start
    for chunk in chunk_sizes(scheme, end - start, p, grain):
        yield pos, pos + chunk
        pos += chunk


Run = tuple[int, int, int]
"""`count` consecutive tasks of `chunk` rows from `start`: (start, count, chunk)."""

_CONSTANT = ("STATIC", "SS", "AUTO", "MSTATIC", "MFSC")


def task_runs(scheme: str, start: int, end: int, p: int, grain: int = 1) -> list[Run]:
    """The tasks of `tasks()` as runs of equal chunks, in O(number of distinct chunk sizes): schemes with a constant
    chunk (SS, STATIC, ...) are computed in O(1), so a million one-row tasks cost nothing to schedule."""
    n = end - start
    if n <= 0:
        return []
    if scheme in _CONSTANT:
        first = next(chunk_sizes(scheme, n, p, grain))
        full, rest = divmod(n, first)
        runs = [(start, full, first)] if full else []
        return runs + ([(start + full * first, 1, rest)] if rest else [])
    runs: list[Run] = []
    pos = start
    for c in chunk_sizes(scheme, n, p, grain):
        if runs and runs[-1][2] == c:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1, c)
        else:
            runs.append((pos, 1, c))
        pos += c
    return runs
