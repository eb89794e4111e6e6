"""numpy's floating-point error state: set once per program run and per worker thread, not per kernel call.

DAPHNE's kernels compute IEEE results silently (x / 0 is inf, 0 / 0 NaN, float overflow inf), so numpy must not warn
about them. Entering `np.errstate` costs about 10 us, more than the work of a small kernel (a 10 x 1 `+`), so a
host program runs inside one `ignoring()` scope, each worker thread of the pool ignores the errors for its life
(it runs nothing but pipeline tasks), and kernels enter `quiet()`: nothing inside such a scope, an `np.errstate`
elsewhere (kernels called directly, constant folding, threads of their own). numpy keeps its error state per
thread (a context variable), so one thread's setting never leaks into another's.

The hottest kernels (element-wise f64 on small matrices, ~0.4 us of numpy each) test `STATE.ignoring` themselves
and call numpy directly, `quietly(...)` otherwise: entering even the no-op `quiet()` scope costs ~0.16 us (two
Python-level context-manager calls), 0.5-1 us per segment of RDP's loop.
"""

from __future__ import annotations

import _thread  # not `threading` (start-up): `threading.local` is `_thread._local`
import contextlib
from collections.abc import Callable, Iterator
from typing import TypeVar

import numpy as np

T = TypeVar("T")


class _State(_thread._local):
    ignoring = False
    """Whether numpy already ignores floating-point errors on this thread (the class value: a thread that never
    said so does not)."""


STATE = _State()
_NOTHING = contextlib.nullcontext()


def quiet() -> contextlib.AbstractContextManager:
    """What a kernel enters around numpy operations that may raise floating-point errors."""
    return _NOTHING if STATE.ignoring else np.errstate(all="ignore")


def quietly(fn: Callable[..., T], *args: object, **kwargs: object) -> T:
    """`fn(*args, **kwargs)` with numpy ignoring floating-point errors, for a kernel that found `STATE.ignoring`
    false (outside a program run: called directly, constant folding)."""
    with np.errstate(all="ignore"):
        return fn(*args, **kwargs)


@contextlib.contextmanager
def ignoring() -> Iterator[None]:
    """The scope of a program run on this thread: numpy ignores floating-point errors, kernels skip their own
    error state (nested scopes, e.g. a program run by the Python API from another one, change nothing)."""
    if STATE.ignoring:
        yield
        return
    with np.errstate(all="ignore"):
        STATE.ignoring = True
        try:
            yield
        finally:
            STATE.ignoring = False


def ignore_in_this_thread() -> None:
    """For the life of this thread (a worker of the pool): numpy ignores floating-point errors."""
    np.seterr(all="ignore")
    STATE.ignoring = True
