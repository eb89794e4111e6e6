"""Statistics of `paramserv` calls: per call and per epoch.

| column | meaning |
|---|---|
| seconds | wall time of the epoch (until the update that completes it) |
| updates | model updates applied: server `agg` calls (BSP/SSP/SBP one per clock, ASP one per gradient), ALLREDUCE |
|         | one per step, LOCALSGD the workers' local updates |
| pushes | gradients the workers sent (LOCALSGD: model replicas sent for averaging) |
| dropped | gradients computed but not applied (SBP: late for their step; ASP/SBP: after the update budget) |
| max stale | the largest staleness of an applied gradient: the clock it was pushed for minus the version of the |
|           | model it was computed on (SSP, ASP; 0 for BSP and SBP) |
| push raw / push sent | bytes of the pushes before and after compression (equal without compression) |
| pulled | bytes of the models sent to workers (pulls; ALLREDUCE: the gathered gradients a worker receives) |
| wait s | seconds workers spent blocked waiting for others (pulls, barriers, collectives), summed over workers |
| compute s | seconds workers spent in `upd` and `agg`, summed over workers |
| comm s | seconds workers spent communicating (push to pull answer, collectives, exchanges), summed over workers; |
|        | MPI workers of the server strategies count the time their pushes and pulls are on the wire (`Flights`) |
| val loss | `val(model, hyperparams, val_features, val_labels)` on the epoch's final model (only with `val=`; |
|          | computed after the run, so it costs no training time) |

LOCAL mode counts the bytes a transport would move (array sizes); MPI mode counts real message sizes (control
messages and raw buffers). When the ranks talk over TCP (a cluster, or `mpiexec` with shared memory off), the
table adds the bytes each rank of the call really sent, measured by the kernel on its sockets (netbytes.py): every
message of the call, data, control and liveness, with its MPI headers.

`STATS` collects every call of the process; `runtime.statistics.PARAMSERV_TABLES` (set by the driver from
`--statistics`/`--timing`) makes the engine print `report()` on stderr after each call.
"""

from __future__ import annotations

import math
import threading
from dataclasses import asdict, dataclass, field, fields

from daphnec.runtime.paramserv.options import PSOptions


@dataclass
class EpochStats:
    seconds: float = 0.0
    updates: int = 0
    pushes: int = 0
    dropped: int = 0
    max_staleness: int = 0
    push_raw: int = 0
    push_sent: int = 0
    pulled: int = 0
    wait_seconds: float = 0.0
    compute_seconds: float = 0.0
    comm_seconds: float = 0.0
    val_loss: float = math.nan

    def merge(self, o: EpochStats) -> None:
        for f in fields(self):
            a, b = getattr(self, f.name), getattr(o, f.name)
            if f.name == "val_loss":
                setattr(self, f.name, a if math.isnan(b) else b)
            else:
                setattr(self, f.name, max(a, b) if f.name == "max_staleness" else a + b)

    def to_dict(self) -> dict[str, float]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, float]) -> EpochStats:
        return cls(**d)  # type: ignore[arg-type]


class EpochLog:
    """Per-epoch counters of one party (a worker or the server), grown on demand; epochs beyond the last are
    counted in the last (ASP/SBP workers may run past their epochs while the server spends its budget)."""

    def __init__(self, epochs: int):
        self.epochs = [EpochStats() for _ in range(max(epochs, 1))]

    def __getitem__(self, e: int) -> EpochStats:
        return self.epochs[min(e, len(self.epochs) - 1)]

    def merge(self, other: list[EpochStats]) -> None:
        for e, s in enumerate(other):
            self[e].merge(s)


@dataclass
class CallStats:
    mode: str
    utype: str
    k: int
    freq: str
    compression: str
    epochs: list[EpochStats] = field(default_factory=list)
    seconds: float = 0.0
    detail: str = ""
    """The communication options that differ from the defaults (allreduce=RING, servers=3, ...)."""
    wire: dict[int, int] = field(default_factory=dict)
    """MPI over TCP: the bytes each rank of the call sent (measured), by rank."""
    epoch_models: list = field(default_factory=list, repr=False)
    """The model at the end of each epoch where the engine has it (server strategies, LOCAL replicas)."""

    @property
    def total(self) -> EpochStats:
        t = EpochStats()
        for e in self.epochs:
            t.merge(e)
        t.seconds = self.seconds
        return t

    @property
    def max_staleness(self) -> int:
        return max((e.max_staleness for e in self.epochs), default=0)

    def overlap(self, workers: int) -> float:
        """The overlap coefficient alpha = (N + C - T) / min(N, C) over the whole call, with C and N the compute and
        communication seconds per worker (`workers` of them) and T the wall time of the epochs; NaN when either
        is zero."""
        t = self.total
        c, n = t.compute_seconds / workers, t.comm_seconds / workers
        wall = sum(e.seconds for e in self.epochs)
        if c <= 0.0 or n <= 0.0:
            return math.nan
        return (n + c - wall) / min(n, c)


class Collector:
    """Every paramserv call of this process (thread-safe)."""

    def __init__(self) -> None:
        self.calls: list[CallStats] = []
        self._lock = threading.Lock()

    def add(self, call: CallStats) -> None:
        with self._lock:
            self.calls.append(call)

    @property
    def last(self) -> CallStats | None:
        return self.calls[-1] if self.calls else None

    def reset(self) -> None:
        with self._lock:
            self.calls.clear()


STATS = Collector()


def new_call(opts: PSOptions, mode: str, k: int) -> CallStats:
    """The statistics of a call that is about to start."""
    return CallStats(mode, opts.utype, k, opts.freq, opts.compressor.spec(), detail=describe(opts, mode))


def describe(opts: PSOptions, mode: str) -> str:
    """The communication options of a call that differ from the defaults, as `name=value` words."""
    words = []
    if opts.allreduce:
        words.append(f"allreduce={opts.allreduce}")
    if opts.servers > 1:
        words.append(f"servers={opts.servers}")
    if opts.colocated:
        words.append("colocated")
    if opts.utype == "GOSSIP":
        words.append(f"topology={opts.neighbourhood}")
    if opts.utype == "EASGD":
        words.append(f"period={opts.period}" + (f" alpha={opts.alpha:g}" if opts.alpha != -1.0 else ""))
    if opts.delta_max > 0.0:
        words.append(f"delta_max={opts.delta_max:g}")
    if opts.threads > 1:
        words.append(f"threads={opts.threads}")
    if opts.sfb:
        words.append("sfb")
    if opts.overlap:
        pulls = " (ordered pulls, streamed)" if opts.streamed_pulls else " (ordered pulls)"
        words.append("overlap" + (pulls if mode == "MPI" and opts.ordered_pulls else ""))
    return " ".join(words)


def epoch_seconds(t0: float, ends: list[float], epochs: int) -> list[float]:
    """Each epoch's wall time from the start `t0` and the epochs' end times (missing ends repeat the last)."""
    out, prev = [], t0
    for e in range(epochs):
        end = ends[e] if e < len(ends) else (ends[-1] if ends else prev)
        out.append(max(end - prev, 0.0))
        prev = end
    return out


def collect(call: CallStats, logs: list[list[EpochStats]], t0: float, ends: list[float], epochs: int,
            models: list | None = None) -> None:  # fmt: skip
    """Merge per-party epoch logs into the call's stats, stamp the epoch times, keep the epochs' models."""
    call.epoch_models = list(models or [])
    total = EpochLog(epochs)
    for log in logs:
        total.merge(log)
    for e, sec in enumerate(epoch_seconds(t0, ends, epochs)):
        total.epochs[e].seconds = sec
    call.epochs = total.epochs


def _mb(n: float) -> str:
    return f"{n / 1e6:.3f}"


_HEADER = ("epoch", "seconds", "updates", "pushes", "dropped", "max stale", "push raw MB", "push sent MB",
           "pulled MB", "wait s", "compute s", "comm s")  # fmt: skip


def _row(label: str, e: EpochStats, val: bool) -> tuple[str, ...]:
    row = (label, f"{e.seconds:.3f}", str(e.updates), str(e.pushes), str(e.dropped), str(e.max_staleness),
           _mb(e.push_raw), _mb(e.push_sent), _mb(e.pulled), f"{e.wait_seconds:.3f}", f"{e.compute_seconds:.3f}",
           f"{e.comm_seconds:.3f}")  # fmt: skip
    return (*row, "" if math.isnan(e.val_loss) else f"{e.val_loss:.6g}") if val else row


def format_call(i: int, c: CallStats) -> str:
    comp = f", compression={c.compression}" if c.compression else ""
    detail = f" {c.detail}" if c.detail else ""
    title = (f"paramserv call {i}: mode={c.mode} utype={c.utype}{detail} freq={c.freq} k={c.k}{comp}, "
             f"{c.seconds:.3f} s")  # fmt: skip
    val = any(not math.isnan(e.val_loss) for e in c.epochs)
    header = _HEADER + (("val loss",) if val else ())
    total = c.total
    total.val_loss = math.nan
    rows = [header] + [_row(str(e + 1), s, val) for e, s in enumerate(c.epochs)] + [_row("total", total, val)]
    widths = [max(len(r[j]) for r in rows) for j in range(len(header))]
    lines = [title] + ["  " + "  ".join(v.rjust(w) for v, w in zip(r, widths)).rstrip() for r in rows]
    if c.wire:
        per = ", ".join(f"rank {r} {_mb(b)}" for r, b in sorted(c.wire.items()))
        lines.append(f"  sent over TCP (MB, measured): {per}; total {_mb(sum(c.wire.values()))}")
    return "\n".join(lines)


def report(calls: list[CallStats] | None = None) -> str:
    """A readable table per call (all calls of the process by default)."""
    cs = STATS.calls if calls is None else calls
    return "\n".join(format_call(i + 1, c) for i, c in enumerate(cs)) + ("\n" if cs else "")


class Flights:
    """The intervals one MPI worker's pushes and pulls are in flight, over all its server shards: N of the overlap
    coefficient is the length of their union (a push overlapping a pull, or two shards' messages, count once),
    not the worker's wall time from push to answer, which includes the server's sum and `agg` and the wait for
    the other workers, when no byte of this worker moves.

    A push is in flight from its post to the completion of its send, a pull from the shard's answer (its control
    message) to its last matrix. Thread-safe: the pull's communication thread and the progress thread record too.
    With the test hook `DAPHNEC_PS_TIMELINE` (runtime/testing_hooks.py) every interval, and every step's compute
    interval, is also written to that file: `worker <w> <kind> <matrix> <start> <end>` in seconds of the host's
    monotonic clock (`time.perf_counter`, common to the ranks of one machine). The decentralised ALLREDUCE workers
    write one too (collectives.Collective.flights): per step `compute` (upd), `reduce` (the whole reduction) and
    `agg`, and inside the reduction each reduce-scatter level (`rs`, then `add`), all-gather step (`ag`), broadcast
    step (`bcast`) or all-gather (`gather`), and with `overlap=true` each bucket (`bucket`, its index)."""

    def __init__(self, worker: int, path: str | None = None):
        self.worker = worker
        self.path = path
        self.lock = threading.Lock()
        self.closed: list[tuple[float, float]] = []
        self.taken = -math.inf
        """The end of the union counted so far: an interval reaching back before it counts from there."""
        self.lines: list[str] = []

    def add(self, kind: str, j: int, start: float, end: float) -> None:
        with self.lock:
            self.closed.append((start, end))
            if self.path is not None:
                self.lines.append(f"worker {self.worker} {kind} {j} {start:.6f} {end:.6f}\n")

    def compute(self, start: float, end: float) -> None:
        """A step's `upd` (timeline only)."""
        self.mark("compute", -1, start, end)

    def mark(self, kind: str, j: int, start: float, end: float) -> None:
        """An interval for the timeline only, not counted in N: the ALLREDUCE workers' phases (their N is the
        reduction's own clock), which `take` never collects, so `add` would keep every one for the whole call."""
        if self.path is not None:
            with self.lock:
                self.lines.append(f"worker {self.worker} {kind} {j} {start:.6f} {end:.6f}\n")

    def take(self) -> float:
        """Seconds of the union of the intervals closed since the last call (not counted before)."""
        with self.lock:
            spans, self.closed = sorted(self.closed), []
            total, reach = 0.0, self.taken
            for a, b in spans:
                a = max(a, reach)
                if b > a:
                    total += b - a
                    reach = b
            self.taken = max(self.taken, reach)
            return total

    def flush(self) -> None:
        """Append the timeline's lines to the hook's file (one write)."""
        with self.lock:
            lines, self.lines = self.lines, []
        if self.path is not None and lines:
            with open(self.path, "a", encoding="utf-8") as f:
                f.write("".join(lines))
