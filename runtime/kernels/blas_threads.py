"""OpenBLAS's thread count, lowered to one while daphnec's task scheduler runs BLAS products in parallel itself.

A large product on OpenBLAS's own threads is fast on an idle machine, but OpenBLAS's threads spin-wait for each
other, so on a machine whose cores are busy they wait for the OS scheduler instead (a LeNet convolution's filter
gradient: 599 ms on 2 BLAS threads, 78 ms on one, same process and load; bench/README.md). A kernel that splits its
work into products over chunks itself (runtime/kernels/dnn.py: a large convolution's chunks of images) runs them on
the task scheduler inside `one_blas_thread()`, so the cores are used once, by daphnec's workers.

OpenBLAS's setting is process-wide; the guard counts its users (kernels may run at the same time, e.g. paramserv's
LOCAL workers) and restores the previous count when the last one leaves. OpenBLAS computes every element of a
product on one thread with the same kernel, so the thread count never changes a result (tests/dnn). Without an
OpenBLAS in the process (another BLAS under numpy, another OS) the guard does nothing.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_SETTERS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads", "openblas_set_num_threads")
_GETTERS = ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads", "openblas_get_num_threads")

_lock = threading.Lock()
_users = 0
_saved = 1
_functions: tuple[object, object] | None | bool = False  # False: not looked up yet; None: no OpenBLAS


def _openblas() -> tuple[object, object] | None:
    """(get, set) of numpy's OpenBLAS, found among the libraries this process mapped (Linux's /proc/self/maps)."""
    import numpy  # noqa: F401  (numpy loads its BLAS)

    try:
        with open("/proc/self/maps") as f:
            paths = sorted({line.split()[-1] for line in f if "openblas" in line.rsplit("/", 1)[-1].lower()})
    except OSError:
        return None
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        get = next((getattr(lib, n) for n in _GETTERS if hasattr(lib, n)), None)
        set_ = next((getattr(lib, n) for n in _SETTERS if hasattr(lib, n)), None)
        if get is not None and set_ is not None:
            get.restype, get.argtypes = ctypes.c_int, []
            set_.restype, set_.argtypes = None, [ctypes.c_int]
            return get, set_
    return None


def blas_threads() -> int | None:
    """OpenBLAS's current thread count (None without OpenBLAS)."""
    fns = _lookup()
    return fns[0]() if fns else None  # type: ignore[operator]


def _lookup() -> tuple[object, object] | None:
    global _functions
    if _functions is False:
        with _lock:
            if _functions is False:
                _functions = _openblas()
    return _functions  # type: ignore[return-value]


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """OpenBLAS runs every product on its calling thread while any user is inside."""
    global _users, _saved
    fns = _lookup()
    if fns is None:
        yield
        return
    get, set_ = fns
    with _lock:
        if _users == 0:
            _saved = get()  # type: ignore[operator]
            if _saved != 1:
                set_(1)  # type: ignore[operator]
        _users += 1
    try:
        yield
    finally:
        with _lock:
            _users -= 1
            if _users == 0 and _saved != 1:
                set_(_saved)  # type: ignore[operator]
