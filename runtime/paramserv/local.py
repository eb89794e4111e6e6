"""LOCAL mode: k worker threads in this process (numpy releases the GIL in its kernels).

- Server strategies: the `Server` object (server.py) lives behind one condition variable (`LocalHub`); a worker's
  push runs the server logic (and `agg`) in the worker's own thread under the lock, then the worker waits on the
  condition until `try_pull` lets it go on. No server thread: the last worker to complete a clock applies it.
- ALLREDUCE / LOCALSGD: a cyclic barrier (`LocalReducer`) collects one contribution per worker per round; the last
  to arrive reduces them in worker order, and every worker takes the same result.
- Failures: the first exception of any worker (a UDF error, a bad gradient) aborts the hub: waiting workers wake up
  and stop, computing workers stop at their next batch, and the caller re-raises that first exception. With k = 1
  the single worker runs in the calling thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from daphnec.runtime.kernels.lists import DaphneList
from daphnec.runtime.paramserv.compression import raw_bytes
from daphnec.runtime.paramserv.server import Pulled, Server
from daphnec.runtime.paramserv.stats import EpochStats
from daphnec.runtime.paramserv.udf import mean_in_order, sum_in_order
from daphnec.runtime.paramserv.worker import Aborted, Contribution


class _Abortable:
    def __init__(self) -> None:
        self.cv = threading.Condition()
        self.failed = False

    def abort(self) -> None:
        with self.cv:
            self.failed = True
            self.cv.notify_all()

    def aborted(self) -> bool:
        return self.failed


class LocalHub(_Abortable):
    """The server behind a lock: `push_pull` is the worker's side of the protocol."""

    def __init__(self, server: Server):
        super().__init__()
        self.server = server

    def push_pull(self, w: int, clock: int, used: int, nxt: int | None, c: Contribution,
                  stats: EpochStats) -> Pulled:  # fmt: skip
        server = self.server
        with self.cv:
            if self.failed:
                raise Aborted
            if server.push(w, clock, c.grads, used):
                self.cv.notify_all()
            if nxt is None:
                return None
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


class LocalReducer(_Abortable):
    """A cyclic barrier for k workers; each round's result is computed once, by the last to arrive."""

    def __init__(self, k: int):
        super().__init__()
        self.k = k
        self.slots: list[object] = [None] * k
        self.arrived = 0
        self.round = 0
        self.result: tuple = ()
        self.sizes: list[int] = [0] * k
        self.total = 0

    def _exchange(self, w: int, item: object, size: int, combine: Callable[[list[object]], tuple],
                  stats: EpochStats) -> tuple:  # fmt: skip
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
            return sum_in_order([s.grads for s in slots if s is not None])  # type: ignore[attr-defined]

        return self._exchange(w, c, c.sent if c is not None else 0, combine, stats)

    def average(self, w: int, model: DaphneList, stats: EpochStats) -> tuple:
        size = sum(raw_bytes(x) for x in model)
        stats.pushes += 1
        stats.push_raw += size
        stats.push_sent += size
        return self._exchange(w, model, size, lambda slots: mean_in_order(slots), stats)  # type: ignore[arg-type]


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
        except Aborted:
            pass
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
