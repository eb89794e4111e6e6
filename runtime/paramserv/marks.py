"""Where the marks the compiler puts into `upd` meet the engine: one record per worker thread.

- `daphne.gradientReady(g) {position = j}` (compiler/passes/wait_free_backprop.py) hands g to the thread's
  *gradient sink*: an `overlap.OverlapReducer` (the all-reduce beside the backward pass) or a
  `worker.EarlyPushes` (pushes to sharded servers beside it) or `worker.MatrixPushes` (one server: each matrix
  pushed on its own); without one nothing happens.
- `daphne.awaitParameter(model) {position = j}` and `daphne.awaitModel(model)` (compiler/passes/pull_order.py)
  read the thread's *pull* in flight (`pulls.OrderedPull`); without one they are `model[j]` and `model`.

Thread-local, because the kernels are called from `upd` in whichever thread runs it (a LOCAL worker thread, an MPI
worker rank's main thread), and only that thread's worker loop knows its reducer, pushes and pull.
"""

from __future__ import annotations

import threading

_THREAD = threading.local()


def gradient_ready(grad: object, position: int) -> None:
    """The kernel of `daphne.gradientReady` (runtime/kernels/paramserv.py)."""
    sink = getattr(_THREAD, "sink", None)
    if sink is not None:
        sink.ready(position, grad)


def await_parameter(model: tuple, position: int) -> object:
    """The kernel of `daphne.awaitParameter`: matrix `position` of the pull in flight, once it has arrived."""
    pull = getattr(_THREAD, "pull", None)
    return model[position] if pull is None else pull.get(position)


def await_model(model: tuple) -> tuple:
    """The kernel of `daphne.awaitModel`: the whole pulled model."""
    pull = getattr(_THREAD, "pull", None)
    return model if pull is None else pull.model()


def current(role: str) -> object | None:
    """The calling thread's "sink" or "pull"."""
    return getattr(_THREAD, role, None)


def install(role: str, target: object | None) -> None:
    """Make `target` the calling thread's "sink" or "pull" (None: none)."""
    setattr(_THREAD, role, target)


class Installed:
    """`with Installed(role, target):` the calling thread's sink or pull while the block runs (`upd`'s call)."""

    def __init__(self, role: str, target: object | None):
        self.role, self.target = role, target

    def __enter__(self) -> None:
        install(self.role, self.target)

    def __exit__(self, *exc: object) -> None:
        install(self.role, None)
