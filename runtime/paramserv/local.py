"""LOCAL mode: k worker threads in this process (numpy releases the GIL in its kernels).

- Server strategies: each `Server` object (server.py; one per shard with `servers=M`) lives behind its own
  condition variable (`LocalHub`); a worker's push runs the server logic (and `agg`) in the worker's own thread
  under that lock, then the worker waits on the condition until `try_pull` lets it go on. No server thread: the
  last worker to complete a clock applies it.
- ALLREDUCE / LOCALSGD: a cyclic barrier (`LocalReducer`) collects one contribution per worker per round; the last
  to arrive reduces them in the canonical order (reduction.py), and every worker takes the same result. The
  all-reduce algorithm (`allreduce=`) only decides how ranks talk in MPI mode; here every algorithm is this sum.
- GOSSIP: the same barrier hands every worker the replicas of its neighbours (`LocalMixer`).
- Failures: the first exception of any worker (a UDF error, a bad gradient) aborts every hub: waiting workers wake
  up and stop, computing workers stop at their next batch, and the caller re-raises that first exception. With
  k = 1 the single worker runs in the calling thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from daphnec.runtime.kernels.lists import DaphneList
from daphnec.runtime.paramserv.compression import raw_bytes
from daphnec.runtime.paramserv.reduction import tree_mean, tree_sum
from daphnec.runtime.paramserv.server import Pulled, Server
from daphnec.runtime.paramserv.stats import EpochStats
from daphnec.runtime.paramserv.topology import neighbourhood
from daphnec.runtime.paramserv.worker import Aborted, Contribution


class AbortGroup:
    """One failure flag for several conditions (the shards of a sharded server): aborting wakes all of them."""

    def __init__(self) -> None:
        self.failed = False
        self.conditions: list[threading.Condition] = []

    def abort(self) -> None:
        self.failed = True
        for cv in self.conditions:
            with cv:
                cv.notify_all()

    def aborted(self) -> bool:
        return self.failed


class _Abortable:
    def __init__(self, group: AbortGroup | None = None) -> None:
        self.cv = threading.Condition()
        self.group = group or AbortGroup()
        self.group.conditions.append(self.cv)

    def abort(self) -> None:
        self.group.abort()

    def aborted(self) -> bool:
        return self.group.failed

    @property
    def failed(self) -> bool:
        return self.group.failed


class LocalHub(_Abortable):
    """A server (or one shard) behind a lock: `send`/`receive` are the worker's side of the protocol."""

    def __init__(self, server: Server, group: AbortGroup | None = None):
        super().__init__(group)
        self.server = server

    def send(self, w: int, clock: int, used: int, nxt: int | None, c: Contribution, stats: EpochStats) -> None:
        with self.cv:
            if self.failed:
                raise Aborted
            if self.server.push(w, clock, c.grads, used):
                self.cv.notify_all()

    def receive(self, w: int, nxt: int | None, used: int, stats: EpochStats) -> Pulled:
        if nxt is None:
            return None
        server = self.server
        with self.cv:
            if self.failed:
                raise Aborted
            r = server.try_pull(w, nxt)
            if r is None:
                t0 = time.perf_counter()
                while r is None:
                    self.cv.wait()
                    if self.failed:
                        raise Aborted
                    r = server.try_pull(w, nxt)
                stats.wait_seconds += time.perf_counter() - t0
        if isinstance(r, tuple) and r[1] != used:
            stats.pulled += sum(raw_bytes(x) for x in r[0])
        return r

    def close(self, w: int) -> None:
        pass


class LocalReducer(_Abortable):
    """A cyclic barrier for k workers; each round's result is computed once, by the last to arrive."""

    def __init__(self, k: int):
        super().__init__()
        self.k = k
        self.slots: list[object] = [None] * k
        self.arrived = 0
        self.round = 0
        self.result: object = ()
        self.sizes: list[int] = [0] * k
        self.total = 0

    def _exchange(self, w: int, item: object, size: int, combine: Callable[[list[object]], object],
                  stats: EpochStats) -> object:  # fmt: skip
        """Hand in this worker's item for the current round; the combined result of all k items."""
        with self.cv:
            if self.failed:
                raise Aborted
            self.slots[w] = item
            self.sizes[w] = size
            self.arrived += 1
            if self.arrived == self.k:
                self.result = combine(self.slots)
                self.total = sum(self.sizes)
                self.slots = [None] * self.k
                self.arrived = 0
                self.round += 1
                self.cv.notify_all()
            else:
                mine = self.round
                t0 = time.perf_counter()
                while self.round == mine:
                    self.cv.wait()
                    if self.failed:
                        raise Aborted
                stats.wait_seconds += time.perf_counter() - t0
            # the next round cannot complete before this worker hands in again: result and total are stable
            stats.pulled += self.total - size
            return self.result

    def reduce(self, w: int, c: Contribution | None, stats: EpochStats) -> tuple:
        def combine(slots: list[object]) -> tuple:
            return tree_sum([s.grads if s is not None else None for s in slots])  # type: ignore[attr-defined]

        return self._exchange(w, c, c.sent if c is not None else 0, combine, stats)  # type: ignore[return-value]

    def average(self, w: int, model: DaphneList, stats: EpochStats) -> tuple:
        size = sum(raw_bytes(x) for x in model)
        stats.pushes += 1
        stats.push_raw += size
        stats.push_sent += size
        return self._exchange(w, model, size, lambda slots: tree_mean(slots), stats)  # type: ignore[arg-type,return-value]


class LocalMixer:
    """GOSSIP in LOCAL mode: the barrier collects every replica of a clock; each worker then averages its own
    neighbourhood (the same mean a rank computes from its neighbours' messages in MPI mode)."""

    def __init__(self, reducer: LocalReducer, topology: str, seed: int):
        self.reducer = reducer
        self.topology = topology
        self.seed = seed

    def mix(self, w: int, clock: int, model: DaphneList, stats: EpochStats) -> tuple:
        size = sum(raw_bytes(x) for x in model)
        group = neighbourhood(self.reducer.k, clock, self.topology, self.seed)[w]
        stats.pushes += 1
        stats.push_raw += size * (len(group) - 1)
        stats.push_sent += size * (len(group) - 1)
        slots: list[object] = self.reducer._exchange(w, model, 0, lambda s: list(s), stats)  # type: ignore[assignment]
        stats.pulled += size * (len(group) - 1)
        return tree_mean([slots[j] for j in group])  # type: ignore[misc]


def run_threads(k: int, target: Callable[[int], object], abort: Callable[[], None]) -> list[object]:
    """Run target(0..k-1) in k threads (inline for k = 1); re-raise the first failure after all have stopped."""
    if k == 1:
        return [target(0)]
    results: list[object] = [None] * k
    errors: list[BaseException] = []
    lock = threading.Lock()

    def body(i: int) -> None:
        try:
            results[i] = target(i)
        except Aborted:  # the call was aborted elsewhere: wake up the other threads (they may be at a barrier)
            abort()
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller
            with lock:
                errors.append(e)
            abort()

    threads = [threading.Thread(target=body, args=(i,), name=f"daphnec-paramserv-{i}", daemon=True)
               for i in range(k)]  # fmt: skip
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results
