"""`overlap=true` with parameter servers: the next model arrives matrix by matrix while `upd` already runs (TicTac).

Without it a worker pushes its gradients, waits for the whole next model, then starts `upd`. TicTac (Hashemi et
al., MLSys 2019) orders the transfers by when the computation needs them, so that the forward pass can start on
the first parameters while the others are still on the wire. The `pull-order` pass (compiler/passes/pull_order.py)
makes every read of the model in `upd` a wait (`daphne.awaitParameter`, `daphne.awaitModel`, kernels in
marks.py) right before the forward pass first uses the matrix, and records the order of those first uses on the
call (`PSOptions.pull_order`).

At run time (MPI worker ranks of BSP, SSP, ASP and SBP, one or sharded or co-located servers):

- each shard sends the matrices of a pull one message each, in the pull order (`shard_order`; a shard's
  matrices not in the recorded order follow in index order), instead of one packed message;
- after its push the worker does not wait: an `OrderedPull` receives the answer on a communication thread while
  the worker's main thread calls `upd` with the model of the previous step as a stand-in (same shapes). The
  thread-local pull makes the waits in `upd` return the new matrices, each as soon as it has arrived;
  `daphne.awaitModel` waits for all. Every read of the model in `upd` goes through a wait, so `upd` computes on
  exactly the pulled model: the result equals BSP's bit for bit;
- with streamed pulls (BSP, one server, a per-matrix `agg`: options.streamed_pulls) the pull is asked for with the
  first early push of a step and its `OrderedPull` starts then, while the backward pass still runs; the server
  sends each matrix once it is updated, still in the pull order (mpi_server.ShardLoop.stream);
- if the servers answer STOP (the run is over, or another rank failed), the first wait raises `PullStopped` and
  the worker ends as it would have without the overlap.

Statistics: the communication thread's time from posting the pull to its last matrix counts as communication (N),
the time `upd` spent blocked in a wait as waiting, not as computing (C).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

from daphnec.runtime import testing_hooks
from daphnec.runtime.kernels.lists import DaphneList
from daphnec.runtime.paramserv import marks
from daphnec.runtime.paramserv.options import PSOptions


def pull_sequence(order: Sequence[int], n: int) -> list[int]:
    """The positions of an n-matrix model in pull order: the recorded first reads, then the rest by index."""
    first = list(dict.fromkeys(j for j in order if 0 <= j < n))
    return first + [j for j in range(n) if j not in first]


def shard_order(opts: PSOptions, n: int, a: int, b: int) -> list[int] | None:
    """The order (shard-local indices) in which the shard holding matrices a..b-1 of an n-matrix model sends
    them; None: one packed message (the call does not order its pulls)."""
    if not opts.ordered_pulls:
        return None
    assert opts.pull_order is not None
    return [j - a for j in pull_sequence(opts.pull_order, n) if a <= j < b]


class PullStopped(BaseException):  # noqa: N818 - a signal, not an error
    """The pull `upd` waits for answered STOP (or failed): the worker stops; `OrderedPull.finish` tells why.
    A BaseException, so that it passes the compiled function's handlers, which turn every Exception of a kernel
    into a located DaphneDSL error."""


Receive = Callable[[Callable[[int, object], None]], object]
"""An endpoint's receive of one pull, calling back (position, matrix) for each matrix as it arrives; returns the
endpoint's answer (`server.Pulled`)."""


class OrderedPull:
    """One pull in flight, received on a communication thread (see the module docstring)."""

    def __init__(self, receive: Receive, n: int, kind: tuple[str, str]):
        self.values: list[object | None] = [None] * n
        self.arrived = [threading.Event() for _ in range(n)]
        self.kind = kind
        self.answer: object = None
        self.error: BaseException | None = None
        self.busy = 0.0
        """The communication thread's seconds, from posting the pull to its last matrix."""
        self.blocked = 0.0
        """The seconds `upd` waited for a matrix that had not arrived yet."""
        self.arrivals: list[int] = []
        self.reads: list[int] = []
        """The positions in the order they arrived and in the order `upd` first asked for them (the trace hook)."""
        self.thread = threading.Thread(target=self._run, args=(receive,), name="daphnec-paramserv-pull", daemon=True)
        self.thread.start()

    def _run(self, receive: Receive) -> None:
        t0 = time.perf_counter()
        try:
            self.answer = receive(self._arrive)
        except BaseException as e:  # noqa: BLE001 - re-raised by the worker's thread in `finish`
            self.error = e
        finally:
            self.busy = time.perf_counter() - t0
            for ev in self.arrived:  # wake a waiting `upd`; what did not arrive raises PullStopped
                ev.set()

    def _arrive(self, j: int, m: object) -> None:
        self.values[j] = m
        self.arrivals.append(j)
        self.arrived[j].set()

    def get(self, j: int) -> object:
        """Matrix j of the pulled model, once it has arrived."""
        ev = self.arrived[j]
        if j not in self.reads:
            self.reads.append(j)
        if not ev.is_set():
            t0 = time.perf_counter()
            ev.wait()
            self.blocked += time.perf_counter() - t0
        v = self.values[j]
        if v is None:
            raise PullStopped
        return v

    def model(self) -> DaphneList:
        """The whole pulled model."""
        return DaphneList(tuple(self.get(j) for j in range(len(self.values))), self.kind)

    def finish(self) -> object:
        """The endpoint's answer (the model and its version, or STOP), once the pull is complete."""
        self.thread.join()
        if self.error is not None:
            raise self.error
        return self.answer

    def trace(self, worker: int) -> None:
        """The test hook `DAPHNEC_PS_PULL_TRACE` (runtime/testing_hooks.py): one line per pull, appended (one
        write of a short line: the ranks' lines do not mix)."""
        path = testing_hooks.ps_pull_trace()
        if path is not None:
            if self.answer is None or isinstance(self.answer, str):  # the server said STOP
                line = f"worker {worker} stopped\n"
            else:
                arrived, read = " ".join(map(str, self.arrivals)), " ".join(map(str, self.reads))
                line = f"worker {worker} arrived {arrived} read {read}\n"
            with open(path, "a", encoding="utf-8") as f:
                f.write(line)

    def installed(self) -> marks.Installed:
        """`with pull.installed():` the waits in `upd` on this thread read this pull."""
        return marks.Installed("pull", self)
