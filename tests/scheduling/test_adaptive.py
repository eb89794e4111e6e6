"""ADAPTIVE partitioning starts with STATIC, keeps it when the workers are balanced, otherwise explores every
candidate SAMPLES times, exploits the one with the lowest best time (AUTO if it came within MARGIN), lets one other
candidate challenge it every CHALLENGE runs, and explores again when the pipeline's time moved away for good."""

from __future__ import annotations

from daphnec.runtime.scheduling.adaptive import (
    CANDIDATES,
    CHALLENGE,
    DYNAMIC,
    FIRST,
    MARGIN,
    PREFERRED,
    SAMPLES,
    WINDOW,
    AdaptivePartitioner,
    imbalance,
)

BALANCED = [1.0, 0.99]  # per-worker finish times of a balanced STATIC run
SKEWED = [0.4, 1.0]  # one worker waits 60 % of the time
EXPLORATION = [FIRST, *DYNAMIC] + [*CANDIDATES] * (SAMPLES - 1)


def _run(ad: AdaptivePartitioner, key: str, cost, n: int, finish: list[float]) -> list[str]:
    """`cost`: scheme -> seconds, or a function (scheme, run index) -> seconds."""
    used = []
    for i in range(n):
        s = ad.choose(key)
        t = cost(s, i) if callable(cost) else cost.get(s, 1.0)
        ad.record(key, s, t, 1000, finish if s == FIRST else None)
        used.append(s)
    return used


def test_imbalance() -> None:
    assert imbalance([]) == imbalance([2.0]) == imbalance([1.0, 1.0]) == 0.0
    assert abs(imbalance([0.5, 1.0]) - 0.25) < 1e-12


def test_balanced_pipelines_keep_static_without_challenges() -> None:
    ad = AdaptivePartitioner()
    cost = {s: 1.0 for s in CANDIDATES} | {"TSS": 0.5}
    assert _run(ad, "p", cost, 3 * CHALLENGE, BALANCED) == [FIRST] * (3 * CHALLENGE)  # nothing to gain


def test_imbalanced_pipelines_explore_then_exploit_the_fastest() -> None:
    ad = AdaptivePartitioner()
    cost = {s: 1.0 for s in CANDIDATES} | {"TSS": 0.5}
    used = _run(ad, "p", cost, len(EXPLORATION) + 10, SKEWED)
    assert used[: len(EXPLORATION)] == EXPLORATION
    assert used[len(EXPLORATION) :] == ["TSS"] * 10


def test_auto_is_kept_unless_another_scheme_is_clearly_faster() -> None:
    """Single samples within `MARGIN` of each other are ordered by noise: the preferred scheme stays."""
    ad = AdaptivePartitioner()
    cost = {s: 1.0 for s in CANDIDATES} | {"TSS": 1 - MARGIN / 2, PREFERRED: 1.0}
    used = _run(ad, "p", cost, len(EXPLORATION) + 3, SKEWED)
    assert used[len(EXPLORATION) :] == [PREFERRED] * 3
    ad = AdaptivePartitioner()
    cost = {s: 1.0 for s in CANDIDATES} | {"TSS": 1 - 2 * MARGIN}
    assert _run(ad, "q", cost, len(EXPLORATION) + 3, SKEWED)[len(EXPLORATION) :] == ["TSS"] * 3


def test_a_noisy_exploration_run_is_corrected_by_a_challenge() -> None:
    """GSS is the fastest, but its exploration run shared a core: a later challenge run of GSS wins it back."""
    ad = AdaptivePartitioner()
    gss_runs = iter([3.0])

    def cost(s: str, i: int) -> float:
        return next(gss_runs, 0.8) if s == "GSS" else 1.0

    used = _run(ad, "p", cost, len(EXPLORATION) + (len(DYNAMIC) + 1) * CHALLENGE, SKEWED)
    assert used[len(EXPLORATION)] != "GSS"
    assert used[-CHALLENGE:].count("GSS") >= CHALLENGE - 1  # GSS again, but for one challenge run


def test_a_challenger_takes_over_when_clearly_faster() -> None:
    """After the choice the load changes so that FAC2 becomes 25 % faster than GSS: a challenge run finds it."""
    ad = AdaptivePartitioner()
    n_explore = len(EXPLORATION)

    def cost(s: str, i: int) -> float:
        if i < n_explore:
            return 0.5 if s == "GSS" else 1.0
        return {"GSS": 0.6, "FAC2": 0.45}.get(s, 1.2)

    used = _run(ad, "p", cost, n_explore + 4 * CHALLENGE, SKEWED)
    exploit = used[n_explore:]
    assert exploit[0] == "GSS"
    challenges = [s for s in exploit if s not in ("GSS", "FAC2")]
    assert len(challenges) <= 3  # at most one run in CHALLENGE tries another scheme
    assert exploit[-(CHALLENGE // 2) :] == ["FAC2"] * (CHALLENGE // 2)


def test_challenges_are_rare_and_keep_a_good_choice() -> None:
    ad = AdaptivePartitioner()
    cost = {s: 1.0 for s in CANDIDATES} | {"TSS": 0.6}
    used = _run(ad, "p", cost, len(EXPLORATION) + 4 * CHALLENGE, SKEWED)
    exploit = used[len(EXPLORATION) :]
    assert exploit.count("TSS") >= len(exploit) - len(exploit) // CHALLENGE
    assert exploit[-1] == "TSS"


def test_re_explores_when_the_input_changes_for_good_and_keys_are_independent() -> None:
    ad = AdaptivePartitioner()
    cost = {s: 1.0 for s in CANDIDATES} | {"GSS": 0.5}
    _run(ad, "a", cost, len(EXPLORATION) + 2, SKEWED)
    slower = {s: 4.0 * t for s, t in cost.items()}  # e.g. a denser graph: every scheme 4x slower per row
    used = _run(ad, "a", slower, WINDOW + len(EXPLORATION), SKEWED)
    assert used[:WINDOW] == ["GSS"] * WINDOW  # a few slow runs alone do not trigger it
    assert used[WINDOW:] == EXPLORATION
    assert ad.history("b") == []


def test_concurrent_runs_during_exploration_are_recorded() -> None:
    ad = AdaptivePartitioner()
    a, b = ad.choose("p"), ad.choose("p")  # two runs of one pipeline started before either ended
    for s in (a, b):
        ad.record("p", s, 1.0, 1000, SKEWED)
    assert ad.choose("p") in CANDIDATES
