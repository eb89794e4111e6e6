"""`--partitioning=ADAPTIVE`: choose the partitioning scheme per pipeline from timings of its earlier runs.

DAPHNE leaves automatic technique selection as future work (its issue #567; D5.3). A pipeline inside a loop runs
many times (connected components, k-means), so each one gets a small bandit: it first *explores* every candidate
scheme once (in a fixed order), then *exploits* the fastest, measured in seconds per row. While exploiting it keeps
an exponential moving average of the chosen scheme's time; when that drifts by more than `DRIFT` from the value
that won (the load changed: other processes, a different input), or every `RECHECK` runs, it explores again.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

CANDIDATES = ("STATIC", "GSS", "TSS", "FAC2", "MFSC", "PSS", "AUTO")
RECHECK = 50
DRIFT = 0.3
_EMA = 0.3


@dataclass
class _PipelineStats:
    best: dict[str, float] = field(default_factory=dict)  # scheme -> seconds per row (latest exploration)
    to_explore: list[str] = field(default_factory=lambda: list(CANDIDATES))
    chosen: str | None = None
    chosen_at: float = 0.0  # seconds per row when it was chosen
    ema: float = 0.0
    runs_since_choice: int = 0
    history: list[str] = field(default_factory=list)


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

    def record(self, key: object, scheme: str, seconds: float, rows: int) -> None:
        per_row = seconds / max(rows, 1)
        with self._lock:
            st = self._stats[key]
            if st.to_explore and st.to_explore[0] == scheme:
                st.to_explore.pop(0)
                st.best[scheme] = per_row
                if not st.to_explore:
                    self._exploit(st)
                return
            st.runs_since_choice += 1
            st.ema = per_row if st.runs_since_choice == 1 else (1 - _EMA) * st.ema + _EMA * per_row
            drifted = st.runs_since_choice >= 3 and abs(st.ema - st.chosen_at) > DRIFT * st.chosen_at
            if drifted or st.runs_since_choice >= RECHECK:
                st.to_explore = list(CANDIDATES)

    @staticmethod
    def _exploit(st: _PipelineStats) -> None:
        st.chosen = min(st.best, key=st.best.__getitem__)
        st.chosen_at = st.best[st.chosen]
        st.runs_since_choice = 0

    def history(self, key: object) -> list[str]:
        """The schemes a pipeline ran with, in order (for `--debug-mt` and tests)."""
        return list(self._stats[key].history) if key in self._stats else []


ADAPTIVE = AdaptivePartitioner()
