"""`--partitioning=ADAPTIVE`: choose the partitioning scheme per pipeline from timings of its earlier runs.

DAPHNE leaves automatic technique selection as future work (its issue #567; D5.3). A pipeline inside a loop runs
many times (connected components, k-means), so each one gets a small bandit whose exploration is short, because
every run in a poor scheme costs a whole pipeline run, and whose judgement is robust to a shared machine, where
another process taking a core only ever adds time to a run:

1. The first run uses STATIC (the cheapest scheme: one task per worker) and measures the *imbalance*: how long
   the workers wait for the slowest one, `1 - mean(busy) / max(busy)` over the workers' busy times.
2. If the imbalance is below `BALANCED` (and always with one worker), no dynamic scheme can gain more than it
   costs: STATIC is chosen right away. Otherwise every candidate (`CANDIDATES`: STATIC, the dynamic schemes that
   hand out few large chunks first, GSS, TSS, FAC2, and the fine-grained AUTO and SS, which win when another
   process takes a core away for part of a run) runs `SAMPLES` times, interleaved, and the scheme with the lowest
   best time (seconds per row) wins, unless AUTO came within `MARGIN` of it (`PREFERRED`). One sample each keeps
   the exploration within the first round of a short loop (components on a skewed graph runs its pipeline only a
   few times per loop); a choice that a noisy sample made is corrected by the challengers.
3. While exploiting, every `CHALLENGE` runs one other candidate (in turn) runs once; it takes over if its best
   sample beats the chosen scheme's best recent run by `MARGIN`. So a choice that noise made is corrected at a
   cost of one run in `CHALLENGE`, where a full re-exploration would cost several runs in poor schemes.
4. If the chosen scheme's recent runs all took more than `1 + DRIFT` times its best time when chosen (the input
   changed: another graph), the pipeline is explored again from step 1. The bound is wide on purpose: on a
   shared machine runs of one scheme vary by 2x, and measured against the best sample a tighter bound
   re-explored (running the poor schemes again) over and over; gradual changes are the challengers' job.

So a balanced pipeline is settled after 1 run and an imbalanced one after `SAMPLES * len(CANDIDATES)` runs.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

FIRST = "STATIC"
DYNAMIC = ("GSS", "TSS", "FAC2", "AUTO", "SS")
CANDIDATES = (FIRST, *DYNAMIC)
BALANCED = 0.05
SAMPLES = 1
CHALLENGE = 25
MARGIN = 0.05
DRIFT = 2.0
WINDOW = 8  # recent runs of the chosen scheme that are kept
PREFERRED = "AUTO"
"""Chosen after an exploration unless another scheme's best run beat it by `MARGIN`: single samples of schemes
within a few percent of each other are ordered by noise, and AUTO is never far from the best on any pipeline the
scheduling bench measures, while a noise-made choice costs up to `MARGIN` until a challenger corrects it."""


@dataclass
class _PipelineStats:
    samples: dict[str, list[float]] = field(default_factory=dict)  # scheme -> seconds per row of its latest runs
    to_explore: list[str] = field(default_factory=lambda: [FIRST])
    chosen: str | None = None
    chosen_at: float = 0.0  # the chosen scheme's best sample when it was chosen
    runs_since_choice: int = 0
    challengers: int = 0  # how many challenge runs so far (picks the next challenger)
    history: list[str] = field(default_factory=list)
    imbalance: float = 0.0  # of the latest first STATIC run

    def best(self, scheme: str) -> float:
        return min(self.samples[scheme])

    def add(self, scheme: str, per_row: float) -> None:
        runs = self.samples.setdefault(scheme, [])
        runs.append(per_row)
        del runs[: -(WINDOW if scheme == self.chosen else SAMPLES)]


class AdaptivePartitioner:
    """Per-pipeline scheme selection; thread-safe (pipelines may run concurrently under MPI workers)."""

    def __init__(self) -> None:
        self._stats: dict[object, _PipelineStats] = {}
        self._lock = threading.Lock()

    def choose(self, key: object) -> str:
        with self._lock:
            st = self._stats.setdefault(key, _PipelineStats())
            if st.to_explore:
                scheme = st.to_explore[0]
            elif st.runs_since_choice and st.runs_since_choice % CHALLENGE == 0 and st.imbalance >= BALANCED:
                others = [s for s in CANDIDATES if s != st.chosen]
                scheme = others[st.challengers % len(others)]
            else:
                scheme = st.chosen
            assert scheme is not None
            st.history.append(scheme)
            return scheme

    def record(self, key: object, scheme: str, seconds: float, rows: int, busy: list[float] | None = None) -> None:
        """The time of a run with `scheme`; `busy`: each worker's seconds in tasks (for the imbalance)."""
        per_row = seconds / max(rows, 1)
        with self._lock:
            st = self._stats[key]
            if st.to_explore and st.to_explore[0] == scheme:
                self._explored(st, scheme, per_row, busy)
            elif st.chosen is None:  # a concurrent run of the same pipeline while it is explored
                st.add(scheme, per_row)
            elif scheme == st.chosen:
                self._exploited(st, per_row)
            else:
                self._challenged(st, scheme, per_row)

    @staticmethod
    def _explored(st: _PipelineStats, scheme: str, per_row: float, busy: list[float] | None) -> None:
        st.to_explore.pop(0)
        st.add(scheme, per_row)
        if scheme == FIRST and len(st.samples) == 1 and len(st.samples[FIRST]) == 1:
            st.imbalance = imbalance(busy or [])
            if st.imbalance >= BALANCED:  # explore every candidate SAMPLES times, interleaved
                st.to_explore = [*DYNAMIC] + [*CANDIDATES] * (SAMPLES - 1)
        if not st.to_explore:
            fastest = min(st.samples, key=st.best)
            near = PREFERRED in st.samples and st.best(PREFERRED) <= (1 + MARGIN) * st.best(fastest)
            st.chosen = PREFERRED if near else fastest
            st.chosen_at = st.best(st.chosen)
            st.runs_since_choice = 0

    @staticmethod
    def _exploited(st: _PipelineStats, per_row: float) -> None:
        assert st.chosen is not None
        st.runs_since_choice += 1
        st.add(st.chosen, per_row)
        recent = st.samples[st.chosen]
        if len(recent) >= WINDOW and all(abs(t - st.chosen_at) > DRIFT * st.chosen_at for t in recent):
            st.samples.clear()  # the pipeline's input changed: start over
            st.to_explore = [FIRST]
            st.chosen = None

    @staticmethod
    def _challenged(st: _PipelineStats, scheme: str, per_row: float) -> None:
        assert st.chosen is not None
        st.challengers += 1
        st.runs_since_choice += 1
        st.add(scheme, per_row)
        if st.best(scheme) < (1 - MARGIN) * st.best(st.chosen):
            st.chosen, st.chosen_at = scheme, st.best(scheme)

    def history(self, key: object) -> list[str]:
        """The schemes a pipeline ran with, in order (for `--debug-mt` and tests)."""
        return list(self._stats[key].history) if key in self._stats else []


def imbalance(busy: list[float]) -> float:
    """The share of the slowest worker's time the others wait on average: 0 = perfectly balanced."""
    if len(busy) < 2 or max(busy) <= 0:
        return 0.0
    return 1.0 - sum(busy) / (len(busy) * max(busy))


ADAPTIVE = AdaptivePartitioner()
