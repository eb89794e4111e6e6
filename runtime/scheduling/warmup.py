"""Start the task scheduler's workers in the background when a program that will use them starts running.

The first kernel of a process that runs tasks on the scheduler paid for the scheduler's start in the measured
path: importing the task engine (`runtime.vectorized.pipeline`, `runtime.parfor` and the adaptive scheme: ~2.8 ms),
reading the CPU topology (~0.2 ms), starting the pool's threads (0.2-1.3 ms on a busy machine) and OpenBLAS's
first product on each of them (~0.1-0.2 ms: per-thread buffers). PCA's one `t(X) @ X` (50,000 x 50, 13 row blocks
on two threads) took ~6-7 ms in a process whose program came from the program cache against ~2.5 ms once started.
A program knows the kernels it will call, so when it starts (compiler/host/program.py) and names a kernel of
`WORKER_KERNEL_MODULES`, one background thread does all of that while the program reads its inputs; a kernel that
needs the scheduler before the warm-up is done waits for the module being imported or the thread being created,
never for more. The warm-up changes no result: no kernel's blocks depend on it.
"""

from __future__ import annotations

import functools
import importlib
import os
import threading
from collections.abc import Iterable

WORKER_KERNEL_MODULES = frozenset(
    {
        "daphnec.runtime.kernels.matmul",  # split_product / split_reduction (blas_threads)
        "daphnec.runtime.kernels.matmul_chain",
        "daphnec.runtime.kernels.matrix_ops",  # syrk, gemv: split_reduction
        "daphnec.runtime.kernels.gram_vector",
        "daphnec.runtime.kernels.gram_vector_wide",
        "daphnec.runtime.kernels.dnn",
        "daphnec.runtime.parfor",
        "daphnec.runtime.vectorized.pipeline",
        "daphnec.runtime.vectorized.kernel",
    }
)
"""Modules whose kernels run tasks on the scheduler's workers (`schedule_tasks`, `run_blocks`, pipelines).
`tests/runtime/test_warmup.py` checks that every runtime module that calls the scheduler is listed."""

FIRST_USE_MODULES = frozenset(
    {
        "daphnec.runtime.kernels.gram_vector",
        "daphnec.runtime.kernels.split_stats",
        "daphnec.runtime.kernels.decomposition",
    }
)
"""Modules whose kernels pay a cost on their first use in a process that `warm_up()` pays in advance: a native
loop the runtime builds (llvmlite's engine,
~23 ms on a quiet machine, and the loop's cached object code): `t(X) @ (X @ v)` in a one-shot process spent
~31 ms in its first call against ~2.4 ms in the next; a random forest's split statistics 0.095-0.24 s over 840 calls
against 0.069 s warmed. `eigen` runs LAPACK's code, whose first call in a
process pays for loading it. (The sum folds are not here: whether they are used depends on
the input sizes, and building them speculatively cost more than it saved.)"""

_lock = threading.Lock()
_started = False


def kernel_modules(kernels: Iterable[object]) -> set[str]:
    """The modules `kernels` (a host program's globals: functions, partials, pipelines) come from."""
    out = set()
    for k in kernels:
        while isinstance(k, functools.partial):
            out.update(kernel_modules(a for a in k.args if callable(a)))  # a wrapper's kernel (dense_result's)
            k = k.func
        module = getattr(k, "__module__", None) or getattr(type(k), "__module__", None)
        if isinstance(module, str):
            out.add(module)
    return out


def uses_workers(kernels: Iterable[object]) -> bool:
    """Whether any of `kernels` comes from a module of `WORKER_KERNEL_MODULES`."""
    return bool(kernel_modules(kernels) & WORKER_KERNEL_MODULES)


def warm_up_for(kernels: Iterable[object]) -> threading.Thread | None:
    """Start the background warm-up once per process if `kernels` use the workers or a native loop; the thread
    started (None when it was not needed or already done)."""
    global _started
    if _started:
        return None
    modules = kernel_modules(kernels)
    workers, native = bool(modules & WORKER_KERNEL_MODULES), sorted(modules & FIRST_USE_MODULES)
    if not (workers or native):
        return None
    with _lock:
        if _started:
            return None
        _started = True
    builder = None
    if native:  # not a daemon: the interpreter waits for it at exit (LLVM torn down under it crashed the process)
        builder = threading.Thread(target=_warm_native, args=(native,), name="daphne-native-warmup")
        builder.start()
    t = threading.Thread(target=_warm, args=(workers, builder), name="daphne-warmup", daemon=True)
    t.start()
    return t


def _warm(workers: bool, builder: threading.Thread | None) -> None:
    """Import the task engine, then start the pool threads a pipeline of the configured scheduler wakes, each one
    warming OpenBLAS on itself before it parks; then wait for `builder` (so that joining this thread waits for the
    whole warm-up)."""
    try:
        if workers:
            import daphnec.runtime.parfor  # noqa: F401 - imported for its cost, here rather than in a kernel
            from daphnec.runtime.kernels.blas_threads import warm_this_thread
            from daphnec.runtime.scheduling.workers import warm_pool
            from daphnec.runtime.vectorized.pipeline import SETTINGS

            warm_pool(SETTINGS.scheduler, warm_this_thread)
    except Exception:  # noqa: BLE001, S110 - only an optimisation: the first kernel then does it itself
        pass
    if builder is not None:
        builder.join()


def _warm_native(native: list[str]) -> None:
    """Build the native loops of the modules `native`, on a thread of its own that starts with the program: behind
    the pool's warm-up (its imports hold the GIL), the engine of a loop of lmCG's `t(X) @ (X @ p)` (100,000 x 50)
    was still loading when the first iteration needed it (~25 ms waited, 20 iterations of ~1 ms); before the pool's
    warm-up, a one-shot `(t(X) @ X) @ v` waited for the pool instead (5 -> 11 ms)."""
    try:
        for module in native:
            importlib.import_module(module).warm_up()
    except Exception:  # noqa: BLE001, S110 - only an optimisation: the first kernel then does it itself
        pass


def _forget_after_fork() -> None:
    """A forked child has a new, empty pool (workers.py): it warms its own when its program starts."""
    global _started, _lock
    _started = False
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)
