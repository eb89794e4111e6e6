"""OpenBLAS at one thread while daphnec runs a program; daphnec's task scheduler splits large products itself.

OpenBLAS's results depend on its thread count: with more threads it blocks the reduction dimension of a product
differently and splits the sums of `gemv` and `dot` (on this project's machine, `t(X) @ u` of a 30000 x 100 matrix,
`X @ Y` of two 500 x 500 matrices and a general `t(X) @ X` of 2000 x 51 differ in the last bits between one and two
threads; `tests/runtime/test_blas_threads.py` keeps such shapes). Its default is one thread per core, so a script's
results would depend on the machine, on `OPENBLAS_NUM_THREADS`, and a `parfor` body (whose products must run on
one thread each, or the loop's workers and OpenBLAS's threads oversubscribe the cores) would round differently
from the `for` loop it replaces. So a program runs inside `one_blas_thread()` (compiler/host/program.py; the MPI
worker's loop in runtime/distributed/worker.py), and the parallelism of a large product comes from daphnec's own
workers (`split_product`: blocks of rows or columns whose sizes depend on the shapes only, so the bits depend on
no thread count). OpenBLAS's own threads spin-wait for each other, too, so on a machine whose cores are busy they
wait for the OS scheduler (a LeNet convolution's filter gradient: 599 ms on 2 BLAS threads, 78 ms on one, same
process and load; bench/README.md).

OpenBLAS's setting is process-wide; the guard counts its users (kernels may run at the same time, e.g. paramserv's
LOCAL workers) and restores the previous count when the last one leaves, so a Python process that uses the
Python API gets numpy's own threading back between runs. Without an OpenBLAS in the process (another BLAS under
numpy, another OS) the guard does nothing.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np

from daphnec.runtime.kernels.product_form import product
from daphnec.runtime.native_code import BuiltOnce

_SETTERS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads", "openblas_set_num_threads")
_GETTERS = ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads", "openblas_get_num_threads")

_lock = threading.Lock()
_users = 0
_saved = 1


def _openblas() -> tuple[object, object] | None:
    """(get, set) of numpy's OpenBLAS, found among the libraries this process mapped (Linux's /proc/self/maps)."""
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
    fns = _OPENBLAS.get()
    return fns[0]() if fns else None  # type: ignore[operator]


_OPENBLAS: BuiltOnce[tuple[object, object] | None] = BuiltOnce(_openblas)
"""(get, set) of OpenBLAS's thread count, looked up once per process (None: no OpenBLAS)."""


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """OpenBLAS runs every product on its calling thread while any user is inside."""
    global _users, _saved
    fns = _OPENBLAS.get()
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


def warm_this_thread() -> None:
    """OpenBLAS's first product on a thread sets up that thread's buffers and faults their pages in (~0.2 ms
    more for the first 3847 x 50 block of PCA's `t(X) @ X`); a small symmetric update and a general product now, on
    a pool thread that waits for work (runtime/scheduling/warmup.py), move that out of the first real block. Both
    stay below OpenBLAS's threading threshold, so they run on this thread at any thread count."""
    x = np.ones((128, 40))
    x.T @ x
    x[:40] @ x[:40]


PARALLEL_PRODUCT_MACS = 1 << 24
"""A float product of more multiply-adds than this (~0.4 ms on one core) is split into blocks for the task
scheduler's workers (`split_product`); smaller ones are one call on the calling thread."""

BLOCK_MIN = 256
"""At least this many rows (columns) per block: every block packs the other operand again (OpenBLAS's threads share
one packed copy), so thin blocks would spend their time copying."""

BLOCK_MACS = 1 << 24
"""Multiply-adds per block when that gives more than `BLOCK_MIN` rows (columns)."""

HALVES_MIN = 128
"""A large product whose blocks of `BLOCK_MIN` would be one block is split into two halves of at least this many
rows (columns): GNMF's `t(W) @ X` (20 x 5000 by 5000 x 300) and `X @ t(H)` (5000 x 300 by 300 x 20) ran on one core
(2.0 and 1.35 ms; in halves on two threads 1.1 and 0.85 ms, the same bits)."""


def product_blocks(m: int, k: int, n: int) -> tuple[int, int]:
    """(axis, size): `A @ B` (m x k @ k x n) as blocks of `size` rows (axis 0) or columns (axis 1) of the result,
    size 0 for one call. A function of the shapes only: the bits of a product never depend on a thread count."""
    if k == 0 or m * k * n <= PARALLEL_PRODUCT_MACS:
        return 0, 0
    for axis, extent, other in ((0, m, n), (1, n, m)):
        size = max(BLOCK_MIN, -(-BLOCK_MACS // (k * other)))
        if extent >= 2 * size:
            return axis, size
    for axis, extent in ((0, m), (1, n)):
        if extent >= 2 * HALVES_MIN:
            return axis, -(-extent // 2)
    return 0, 0  # a long reduction into a small result (t(X) @ X of a tall X): one call


STREAM_SPLIT_BYTES = 8 << 20
"""A product too small for `product_blocks` whose left operand has at least this many bytes, rows contiguous, is
split into two halves of rows (`streaming_halves`)."""


def streaming_halves(a: np.ndarray, b: np.ndarray) -> int:
    """Rows per half for a product that streams a large left operand into a thin result (PCA's `X @ V`: 50,000 x 50
    by 50 x 5, 12.5 M multiply-adds, below `PARALLEL_PRODUCT_MACS`), else 0. Such a product is bound by reading `a`
    (2.0 ms on one core for 20 MB) and two cores read it faster (1.0 ms in halves, this project's machine, quiet);
    a transposed `a` is not split (each half would sweep all of its rows' memory). Like `product_blocks` a function
    of the shapes and the layout, never of a thread count."""
    m, k = a.shape
    if m * k * a.itemsize < STREAM_SPLIT_BYTES or m < 2 * HALVES_MIN or k == 0 or b.shape[1] == 0:
        return 0
    if a.strides[1] != a.itemsize or a.strides[0] != k * a.itemsize:
        return 0
    return -(-m // 2)


def split_product(a: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    """`a @ b` of float matrices computed by daphnec's workers in the blocks of `product_blocks`, or None when it
    is one call. Inside a `parfor` task the blocks run one after the other on the task's thread (the same blocks,
    so the same bits as the `for` loop's product)."""
    if a.dtype.kind != "f" or b.dtype.kind != "f" or a.ndim != 2 or b.ndim != 2:
        return None
    (m, k), n = a.shape, b.shape[1]
    axis, size = product_blocks(m, k, n)
    if size == 0:
        size = streaming_halves(a, b)
        if size == 0:
            return None
    res = np.empty((m, n), dtype=np.result_type(a, b))

    def block(j: int) -> None:
        lo, hi = j * size, (j + 1) * size
        if axis == 0:
            product(a[lo:hi], b, out=res[lo:hi])
        else:
            product(a, b[:, lo:hi], out=res[:, lo:hi])

    run_blocks(("matmul.blocks", axis), -(-(m if axis == 0 else n) // size), block)
    return res


def run_blocks(key: object, blocks: int, block: Callable[[int], None]) -> None:
    """`block(j)` for j in 0..blocks-1 as tasks of daphnec's scheduler (OpenBLAS at one thread), or one after the
    other on this thread inside a `parfor` task (whose products run on one thread each: the same blocks, so the same
    bits as the `for` loop's). Blocks write disjoint outputs; their order never matters."""
    from daphnec.runtime.fperr import quiet
    from daphnec.runtime.parfor import in_parfor_task

    def run(first: int, last: int) -> None:
        with quiet():  # a worker thread has no error state of its own (runtime/fperr.py)
            for j in range(first, last):
                block(j)

    if in_parfor_task():
        run(0, blocks)
        return
    from daphnec.runtime.vectorized.pipeline import schedule_tasks

    with one_blas_thread():
        schedule_tasks(key, blocks, run)


REDUCTION_MAX_BLOCKS = 16
"""At most this many blocks of the reduction dimension: each block's partial result is a full (small) result."""

REDUCTION_BLOCK_MIN = 4096
"""At least this many reduction steps (rows of a tall X) per block, so small inputs stay one call."""

GEMV_SPLIT_BYTES = 64 << 20
"""A matrix-vector reduction (`t(X) @ y`) is split only when X holds at least this many bytes: below, one BLAS
call streams X faster than the threads' start and the partials' sum cost (it is memory bound)."""


def reduction_blocks(m: int, k: int, n: int, itemsize: int) -> int:
    """Rows of the reduction dimension per block for `A @ B` (m x k @ k x n) whose result is too small to split
    (`product_blocks` gave one call), 0 for one call. A function of the shapes only: partial results summed in
    block order give the same bits at any thread count."""
    if k < 2 * REDUCTION_BLOCK_MIN or product_blocks(m, k, n)[1]:
        return 0
    if min(m, n) == 1:  # a matrix-vector product: memory bound, its size in bytes decides
        if max(m, n) * k * itemsize < GEMV_SPLIT_BYTES:
            return 0
    elif m * k * n <= PARALLEL_PRODUCT_MACS:
        return 0
    return max(REDUCTION_BLOCK_MIN, -(-k // REDUCTION_MAX_BLOCKS))


def split_reduction(a: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    """`a @ b` of float matrices with a long inner dimension and a small result (`t(X) @ X`, `t(X) @ y` of a tall
    X) as partial products over shape-determined blocks of the inner dimension, computed on daphnec's workers and
    summed in block order; None when it is one call. `t(X) @ X` blocks stay symmetric rank-k updates (numpy sees
    `X[lo:hi].T @ X[lo:hi]`)."""
    if a.dtype.kind != "f" or b.dtype.kind != "f" or a.ndim != 2 or b.ndim != 2:
        return None
    (m, k), n = a.shape, b.shape[1]
    dt = np.result_type(a, b)
    size = reduction_blocks(m, k, n, dt.itemsize)
    if size == 0:
        return None
    blocks = -(-k // size)
    parts = np.empty((blocks, m, n), dtype=dt)

    def block(j: int) -> None:
        lo, hi = j * size, min(k, (j + 1) * size)
        np.matmul(a[:, lo:hi], b[lo:hi], out=parts[j])

    run_blocks(("matmul.reduce",), blocks, block)
    from daphnec.runtime.fperr import quiet

    res = parts[0].copy()
    with quiet():
        for j in range(1, blocks):  # fixed order: the bits do not depend on which worker ran which block
            res += parts[j]
    return res
