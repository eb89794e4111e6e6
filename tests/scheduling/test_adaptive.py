"""ADAPTIVE partitioning starts with STATIC, keeps it when the workers are balanced, otherwise explores the dynamic
candidates once each, exploits the fastest, and explores again when the load changes or after RECHECK runs."""

from __future__ import annotations

from daphnec.runtime.scheduling.adaptive import CANDIDATES, DYNAMIC, FIRST, RECHECK, AdaptivePartitioner, imbalance

BALANCED = [1.0, 0.99]  # per-worker finish times of a balanced STATIC run
SKEWED = [0.4, 1.0]  # one worker waits 60 % of the time


def _run(ad: AdaptivePartitioner, key: str, cost: dict[str, float], n: int, finish: list[float]) -> list[str]:
    used = []
    for _ in range(n):
        s = ad.choose(key)
        ad.record(key, s, cost.get(s, 1.0), 1000, finish if s == FIRST else None)
        used.append(s)
    return used


def test_imbalance() -> None:
    assert imbalance([]) == imbalance([2.0]) == imbalance([1.0, 1.0]) == 0.0
    assert abs(imbalance([0.5, 1.0]) - 0.25) < 1e-12


def test_balanced_pipelines_keep_static_after_one_run() -> None:
    ad = AdaptivePartitioner()
    cost = {s: 1.0 for s in CANDIDATES} | {"TSS": 0.5}
    assert _run(ad, "p", cost, 6, BALANCED) == [FIRST] * 6  # one worker or balanced: nothing to gain


def test_imbalanced_pipelines_explore_then_exploit_the_fastest() -> None:
    ad = AdaptivePartitioner()
    cost = {s: 1.0 for s in CANDIDATES} | {"TSS": 0.5}
    used = _run(ad, "p", cost, len(CANDIDATES) + 10, SKEWED)
    assert used[: len(CANDIDATES)] == [FIRST, *DYNAMIC]
    assert used[len(CANDIDATES) :] == ["TSS"] * 10


def test_re_explores_when_the_load_changes() -> None:
    ad = AdaptivePartitioner()
    cost = {s: 1.0 for s in CANDIDATES} | {"GSS": 0.5}
    _run(ad, "p", cost, len(CANDIDATES) + 2, SKEWED)
    cost["GSS"] = 2.0  # GSS got slow (e.g. another process took a core)
    used = _run(ad, "p", cost, 1 + len(CANDIDATES) + 2, SKEWED)
    assert used[0] == "GSS"  # its time drifted by more than DRIFT: explore again
    assert used[1 : 1 + len(CANDIDATES)] == [FIRST, *DYNAMIC]
    assert used[-1] != "GSS"


def test_rechecks_periodically_and_keys_are_independent() -> None:
    ad = AdaptivePartitioner()
    cost = {s: 1.0 for s in CANDIDATES} | {"FAC2": 0.5}
    used = _run(ad, "a", cost, len(CANDIDATES) + RECHECK + 1, SKEWED)
    assert used[len(CANDIDATES)] == "FAC2"
    assert used[-1] == FIRST  # a new exploration round began
    assert ad.history("b") == []
