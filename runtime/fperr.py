"""numpy's floating-point error state: set once per program run and per worker thread, not per kernel call.

DAPHNE's kernels compute IEEE results silently (x / 0 is inf, 0 / 0 NaN, float overflow inf), so numpy must not warn
about them. Entering `np.errstate` costs about 10 us, more than the work of a small kernel (a 10 x 1 `+`), so a
host program runs inside one `ignoring()` scope, each worker thread of the pool ignores the errors for its life
(it runs nothing but pipeline tasks), and kernels enter `quiet()`: nothing inside such a scope, an `np.errstate`
elsewhere (kernels called directly, constant folding, threads of their own). numpy keeps its error state per
thread (a context variable), so one thread's setting never leaks into another's.
"""

from __future__ import annotations

import _thread  # not `threading` (start-up): `threading.local` is `_thread._local`
import contextlib
from collections.abc import Iterator

import numpy as np

_STATE = _thread._local()
_NOTHING = contextlib.nullcontext()


def quiet() -> contextlib.AbstractContextManager:
    """What a kernel enters around numpy operations that may raise floating-point errors."""
    return _NOTHING if getattr(_STATE, "ignoring", False) else np.errstate(all="ignore")


@contextlib.contextmanager
def ignoring() -> Iterator[None]:
    """The scope of a program run on this thread: numpy ignores floating-point errors, kernels skip their own
    error state (nested scopes, e.g. a program run by the Python API from another one, change nothing)."""
    if getattr(_STATE, "ignoring", False):
        yield
        return
    with np.errstate(all="ignore"):
        _STATE.ignoring = True
        try:
            yield
        finally:
            _STATE.ignoring = False


def ignore_in_this_thread() -> None:
    """For the life of this thread (a worker of the pool): numpy ignores floating-point errors."""
    np.seterr(all="ignore")
    _STATE.ignoring = True
