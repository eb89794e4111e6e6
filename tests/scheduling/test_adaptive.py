"""ADAPTIVE partitioning explores every candidate once, exploits the fastest, and explores again when the load
changes or after RECHECK runs."""

from __future__ import annotations

from runtime.scheduling.adaptive import CANDIDATES, RECHECK, AdaptivePartitioner


def _run(ad: AdaptivePartitioner, key: str, cost: dict[str, float], n: int) -> list[str]:
    used = []
    for _ in range(n):
        s = ad.choose(key)
        ad.record(key, s, cost.get(s, 1.0), 1000)
        used.append(s)
    return used


def test_explores_then_exploits_the_fastest() -> None:
    ad = AdaptivePartitioner()
    cost = {s: 1.0 for s in CANDIDATES} | {"TSS": 0.5}
    used = _run(ad, "p", cost, len(CANDIDATES) + 10)
    assert used[: len(CANDIDATES)] == list(CANDIDATES)
    assert used[len(CANDIDATES) :] == ["TSS"] * 10


def test_re_explores_when_the_load_changes() -> None:
    ad = AdaptivePartitioner()
    cost = {s: 1.0 for s in CANDIDATES} | {"GSS": 0.5}
    _run(ad, "p", cost, len(CANDIDATES) + 2)
    cost["GSS"] = 2.0  # GSS got slow (e.g. another process took a core)
    used = _run(ad, "p", cost, 1 + len(CANDIDATES) + 2)
    assert used[0] == "GSS"  # its time drifted by more than DRIFT: explore again
    assert used[1 : 1 + len(CANDIDATES)] == list(CANDIDATES)
    assert used[-1] != "GSS"


def test_rechecks_periodically_and_keys_are_independent() -> None:
    ad = AdaptivePartitioner()
    cost = {s: 1.0 for s in CANDIDATES}
    used = _run(ad, "a", cost, len(CANDIDATES) + RECHECK + 1)
    assert used[-1] == CANDIDATES[0]  # a new exploration round began
    assert ad.history("b") == []
