"""`--partitioning=ADAPTIVE`: choose the partitioning scheme per pipeline from timings of its earlier runs.

DAPHNE leaves automatic technique selection as future work (its issue #567; D5.3). A pipeline inside a loop runs
many times (connected components, k-means), so each one gets a small bandit whose exploration is short, because
every exploration run in a poor scheme costs a whole pipeline run:

1. The first run uses STATIC (the cheapest scheme: one task per worker) and measures the *imbalance*: how long
   the workers wait for the slowest one, `1 - mean(busy) / max(busy)` over the workers' busy times.
2. If the imbalance is below `BALANCED` (and always with one worker), no dynamic scheme can gain more than it
   costs: STATIC is chosen right away. Otherwise the dynamic candidates `DYNAMIC` (few large chunks first, then
   smaller ones: GSS, TSS, FAC2) run once each, and the fastest of all explored schemes (seconds per row) wins.
3. While exploiting it keeps an exponential moving average of the chosen scheme's time; when that drifts by more
   than `DRIFT` from the value that won (the load changed: other processes, a different input), or every
   `RECHECK` runs, it explores again from step 1.

So a balanced pipeline is settled after 1 run and an imbalanced one after 4.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

FIRST = "STATIC"
DYNAMIC = ("GSS", "TSS", "FAC2")
CANDIDATES = (FIRST, *DYNAMIC)
BALANCED = 0.05
RECHECK = 50
DRIFT = 0.3
_EMA = 0.3


@dataclass
class _PipelineStats:
    best: dict[str, float] = field(default_factory=dict)  # scheme -> seconds per row (latest exploration)
    to_explore: list[str] = field(default_factory=lambda: [FIRST])
    chosen: str | None = None
    chosen_at: float = 0.0  # seconds per row when it was chosen
    ema: float = 0.0
    runs_since_choice: int = 0
    history: list[str] = field(default_factory=list)
    imbalance: float = 0.0  # of the latest STATIC exploration run


class AdaptivePartitioner:
    """Per-pipeline scheme selection; thread-safe (pipelines may run concurrently under MPI workers)."""

    def __init__(self) -> None:
        self._stats: dict[object, _PipelineStats] = {}
        self._lock = threading.Lock()

    def choose(self, key: object) -> str:
        with self._lock:
            st = self._stats.setdefault(key, _PipelineStats())
            scheme = st.to_explore[0] if st.to_explore else st.chosen
            assert scheme is not None
            st.history.append(scheme)
            return scheme

    def record(self, key: object, scheme: str, seconds: float, rows: int, busy: list[float] | None = None) -> None:
        """The time of a run with `scheme`; `busy`: each worker's seconds in tasks (for the imbalance)."""
        per_row = seconds / max(rows, 1)
        with self._lock:
            st = self._stats[key]
            if st.to_explore and st.to_explore[0] == scheme:
                st.to_explore.pop(0)
                st.best[scheme] = per_row
                if scheme == FIRST and not st.to_explore:
                    st.imbalance = imbalance(busy or [])
                    if st.imbalance >= BALANCED:
                        st.to_explore = list(DYNAMIC)
                if not st.to_explore:
                    self._exploit(st)
                return
            st.runs_since_choice += 1
            st.ema = per_row if st.runs_since_choice == 1 else (1 - _EMA) * st.ema + _EMA * per_row
            drifted = st.runs_since_choice >= 3 and abs(st.ema - st.chosen_at) > DRIFT * st.chosen_at
            if drifted or st.runs_since_choice >= RECHECK:
                st.best.clear()
                st.to_explore = [FIRST]

    @staticmethod
    def _exploit(st: _PipelineStats) -> None:
        st.chosen = min(st.best, key=st.best.__getitem__)
        st.chosen_at = st.best[st.chosen]
        st.runs_since_choice = 0

    def history(self, key: object) -> list[str]:
        """The schemes a pipeline ran with, in order (for `--debug-mt` and tests)."""
        return list(self._stats[key].history) if key in self._stats else []


def imbalance(busy: list[float]) -> float:
    """The share of the slowest worker's time the others wait on average: 0 = perfectly balanced."""
    if len(busy) < 2 or max(busy) <= 0:
        return 0.0
    return 1.0 - sum(busy) / (len(busy) * max(busy))


ADAPTIVE = AdaptivePartitioner()
