"""One process-wide recursion limit shared by every thread that needs a higher one.

`sys.setrecursionlimit` is process-wide. Compiling deep programs (`tools.driver.with_deep_stack`), running
generated host code (`compiler.host.program`) and shipped MPI bodies raise it; with the Python API two threads
may do so at once, and a thread that restored "its" old limit would cut the other's stack short in the middle of
its compilation. Here every caller registers the limit it needs; the process limit is the largest one still
registered, and the original limit comes back when the last one leaves, whatever the order.
"""

from __future__ import annotations

import _thread  # not `threading`: this module is on every cached run's start-up path
import sys
from collections.abc import Iterator
from contextlib import contextmanager

_LOCK = _thread.allocate_lock()
_WANTED: list[int] = []
_BASE: list[int] = []
"""The limit before the first registration (empty while none is registered)."""


def raise_to(limit: int) -> None:
    """Register `limit` (the process limit becomes at least `limit`); pair with `release(limit)`."""
    with _LOCK:
        if not _WANTED:
            _BASE[:] = [sys.getrecursionlimit()]
        _WANTED.append(limit)
        sys.setrecursionlimit(max(_BASE[0], *_WANTED))


def release(limit: int) -> None:
    """Drop one registration of `limit`; the process limit becomes the largest still registered, or the original
    one when none is left."""
    with _LOCK:
        _WANTED.remove(limit)
        sys.setrecursionlimit(max(_BASE[0], *_WANTED) if _WANTED else _BASE[0])


@contextmanager
def at_least(limit: int) -> Iterator[None]:
    """The process recursion limit is at least `limit` inside the block (see the module docstring)."""
    raise_to(limit)
    try:
        yield
    finally:
        release(limit)
