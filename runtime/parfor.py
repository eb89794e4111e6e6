"""The parfor executor: a `daphne.parfor`'s iterations on the task scheduler's threads, or on MPI ranks.

What the compiler guarantees (compiler/passes/parfor.py): the loop's carried values are result matrices that the
body only writes, each iteration its own cells (the rows or columns the loop variable selects), through in-place
inserts; nothing else the body does is seen outside its iteration. So the iterations can run in any order and at
once on one private buffer per result (a copy of the value before the loop), and the buffer after the last
iteration holds exactly what the `for` loop would have computed, bit for bit.

Threads: the iterations `[lo, hi)` are the "rows" of `runtime.scheduling.workers.schedule`, cut into tasks by the
configured `--partitioning` scheme and drained by the worker threads with work stealing. An iteration spends its
time in kernels (numpy, BLAS, native loops) that release the GIL, so two workers use two cores; the kernels' own
parallelism is off while a parfor runs (one level of parallelism: BLAS threads would compete with the workers for
the same cores, see `_one_blas_thread`). A parfor inside a parfor task runs serially on that task's thread.

MPI (`--distributed`): the coordinator sends each rank the loop as IR text (a `func.func @dist` over a block of
iteration numbers) and its inputs once, then hands out blocks of iterations with the configured scheme (STATIC:
one contiguous block per rank; any other scheme: chunks given to whichever rank returns first, dynamic scheduling
between processes); each block returns the cells it changed (`parfor_delta`), which the coordinator writes into
its buffers.

Errors: the error of the first failing iteration in loop order is raised, as the `for` loop would raise it.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import threading
from collections.abc import Callable, Iterator, Sequence

import numpy as np

from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.values import as_dense

_STATE = threading.local()
"""`inside`: this thread is running a parfor task (a nested parfor then runs serially)."""


def _private(x: object) -> np.ndarray:
    """A result's buffer: a dense C-ordered copy of its value before the loop (values are immutable: the buffer
    must not be shared with anything)."""
    if not isinstance(x, np.ndarray) and not hasattr(x, "toarray"):
        raise DaphneRuntimeError("parfor: a result variable must hold a matrix before the loop")
    return np.array(as_dense(x), order="C", copy=True)


def run_parfor(body: Callable[..., object], lo: int, hi: int, inits: Sequence[object]) -> tuple[np.ndarray, ...]:
    """Run `body(k, *buffers)` for every k in [lo, hi) on the task scheduler; the buffers are the results."""
    buffers = [_private(x) for x in inits]
    n = hi - lo
    if n <= 0:
        return tuple(buffers)
    failed: list[tuple[int, BaseException]] = []
    first_failure = [hi]
    serial = getattr(_STATE, "inside", False)

    def run_task(a: int, b: int) -> None:
        outer = getattr(_STATE, "inside", False)
        _STATE.inside = True
        try:
            for k in range(lo + a, lo + b):
                if k > first_failure[0]:  # a later iteration than one that failed: its result is not needed
                    return
                try:
                    body(k, *buffers)
                except BaseException as e:  # noqa: BLE001 - re-raised below, the first in loop order
                    failed.append((k, e))
                    first_failure[0] = min(first_failure[0], k)
                    return
        finally:
            _STATE.inside = outer

    if serial:
        run_task(0, n)
    else:
        from daphnec.runtime.vectorized.pipeline import schedule_tasks

        with _one_blas_thread():
            schedule_tasks(("parfor", body.__code__), n, run_task, serial=n == 1)
    if failed:
        raise min(failed, key=lambda f: f[0])[1]
    return tuple(buffers)


def run_parfor_distributed(
    ir: str, lo: int, hi: int, inits: Sequence[object], inputs: Sequence[object]
) -> tuple[np.ndarray, ...]:
    """`--distributed`: the iterations [lo, hi) on the MPI workers (`runtime.distributed.coordinator`); `ir` is
    the shipped `@dist(ks, *inits, *inputs) -> (positions, values) per result`."""
    from daphnec.dialects.value_types import Combine, Split
    from daphnec.runtime.distributed.coordinator import run_distributed

    buffers = [_private(x) for x in inits]
    if hi <= lo:
        return tuple(buffers)
    ks = np.arange(lo, hi, dtype=np.int64).reshape(-1, 1)
    args = (ks, *inits, *inputs)
    splits = (int(Split.ROWS),) + (int(Split.NONE),) * (len(args) - 1)
    combines = (int(Combine.ROWS),) * (2 * len(buffers))
    parts = run_distributed(ir, args, splits, combines)
    for j, buf in enumerate(buffers):
        positions, values = (as_dense(p) for p in parts[2 * j : 2 * j + 2])  # type: ignore[arg-type]
        buf.reshape(-1)[positions.reshape(-1)] = values.reshape(-1)
    return tuple(buffers)


def parfor_chunk(ks: object) -> tuple[int, int]:
    """The loop bounds of one MPI task: its block of consecutive iteration numbers as [first, first + rows)."""
    ks = as_dense(ks)
    if ks.shape[0] == 0:  # type: ignore[union-attr]
        return 0, 0
    first = int(ks[0, 0])  # type: ignore[index]
    return first, first + int(ks.shape[0])  # type: ignore[union-attr]


def parfor_delta(final: object, init: object) -> tuple[np.ndarray, np.ndarray]:
    """The cells of `final` whose bits differ from `init`: flat positions (si64 column) and values (a column)."""
    f = np.ascontiguousarray(as_dense(final))
    i = np.ascontiguousarray(as_dense(init))
    if i.dtype != f.dtype:
        i = i.astype(f.dtype)
    if f.shape != i.shape:
        raise DaphneRuntimeError(f"parfor: a result changed its shape from {i.shape} to {f.shape} in the loop")
    if f.dtype == object:
        changed = np.fromiter((a != b for a, b in zip(f.reshape(-1), i.reshape(-1))), bool, f.size)
    else:
        bits = np.dtype(f"u{f.dtype.itemsize}") if f.dtype.itemsize in (1, 2, 4, 8) else None
        if bits is None:  # pragma: no cover - every value type has 1, 2, 4 or 8 bytes
            changed = (f != i).reshape(-1)
        else:
            changed = f.reshape(-1).view(bits) != i.reshape(-1).view(bits)
    positions = np.flatnonzero(changed).astype(np.int64)
    return positions.reshape(-1, 1), f.reshape(-1)[positions].reshape(-1, 1)


@contextlib.contextmanager
def _one_blas_thread() -> Iterator[None]:
    """While a parfor's workers run, OpenBLAS (numpy's and scipy's, each bundles one) uses one thread: the workers
    are the parallelism. Process-wide, not per calling thread: OpenBLAS's per-thread count
    (`openblas_set_num_threads_local`) leaves its pool threads spinning between calls, and on the CV bench a
    2-worker parfor then spent 4x the user time of a 1-worker one (1.0x with the pool at one thread)."""
    saved = [(put, get()) for get, put in _blas_thread_counts()]
    for put, _ in saved:
        put(1)
    try:
        yield
    finally:
        for put, old in saved:
            put(old)


def _blas_thread_counts() -> list[tuple[Callable[[], int], Callable[[int], None]]]:
    """(get, set) of the thread count of every OpenBLAS this process has loaded; empty where there is none."""
    found: list[tuple[Callable[[], int], Callable[[int], None]]] = []
    try:
        with open("/proc/self/maps", encoding="utf-8") as f:
            maps = [line.split() for line in f]
        paths = sorted({m[-1] for m in maps if len(m) >= 6 and "openblas" in os.path.basename(m[-1])})
    except OSError:
        return found
    for path in paths:
        if path not in _BLAS_COUNTS:
            _BLAS_COUNTS[path] = _thread_count_functions(path)
        pair = _BLAS_COUNTS[path]
        if pair is not None:
            found.append(pair)
    return found


def _thread_count_functions(path: str) -> tuple[Callable[[], int], Callable[[int], None]] | None:
    """OpenBLAS's `openblas_get/set_num_threads` in a loaded library, under the prefixes and suffixes the Python
    wheels' builds give them (`scipy_openblas_set_num_threads64_`)."""
    try:
        lib = ctypes.CDLL(path, mode=getattr(os, "RTLD_NOLOAD", 0))
    except OSError:
        return None
    for prefix in ("", "scipy_"):
        for suffix in ("", "64_", "_64"):
            get = getattr(lib, f"{prefix}openblas_get_num_threads{suffix}", None)
            put = getattr(lib, f"{prefix}openblas_set_num_threads{suffix}", None)
            if get is not None and put is not None:
                get.argtypes, get.restype = [], ctypes.c_int
                put.argtypes, put.restype = [ctypes.c_int], None
                return (lambda g=get: int(g())), (lambda n, p=put: p(int(n)))
    return None


_BLAS_COUNTS: dict[str, tuple[Callable[[], int], Callable[[int], None]] | None] = {}
