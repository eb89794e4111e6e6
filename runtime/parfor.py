"""The parfor executor: a `daphne.parfor`'s iterations on the task scheduler's threads, or on MPI ranks.

What the compiler guarantees (compiler/passes/parfor.py): the loop's carried values are result matrices that the
body only writes, each iteration its own cells (the rows or columns the loop variable selects), through in-place
inserts; nothing else the body does is seen outside its iteration. So the iterations can run in any order and at
once on one private buffer per result (a copy of the value before the loop), and the buffer after the last
iteration holds exactly what the `for` loop would have computed, bit for bit.

Threads: the iterations `[lo, hi)` are the "rows" of `runtime.scheduling.workers.schedule`, cut into tasks by the
configured `--partitioning` scheme and drained by the worker threads with work stealing. An iteration spends its
time in kernels (numpy, BLAS, native loops) that release the GIL, so two workers use two cores. BLAS runs at one
thread in every program (runtime/kernels/blas_threads.py: OpenBLAS rounds differently at other thread counts), so a
body's products use one core each and round as the `for` loop's do. A parfor inside a parfor task, and a large
product's blocks (`split_product`), run serially on that task's thread.

MPI (`--distributed`): the coordinator sends each rank the loop as IR text (a `func.func @dist` over a block of
iteration numbers) and its inputs once, then hands out blocks of iterations with the configured scheme (STATIC:
one contiguous block per rank; any other scheme: chunks given to whichever rank returns first, dynamic scheduling
between processes); each block returns the cells it changed (`parfor_delta`), which the coordinator writes into
its buffers.

Errors: the error of the first failing iteration in loop order is raised, as the `for` loop would raise it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import numpy as np

from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.values import as_dense

_STATE = threading.local()
"""`inside`: this thread is running a parfor task (a nested parfor then runs serially)."""


def in_parfor_task() -> bool:
    """This thread runs a parfor task: a kernel that would run its own tasks runs them here, one after the other
    (the loop's workers already use the cores)."""
    return getattr(_STATE, "inside", False)


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
    serial = in_parfor_task()

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
