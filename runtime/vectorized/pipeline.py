"""Executing a vectorized pipeline: cut the rows into tasks, run the compiled body per row block, combine.

The task scheduler (`runtime/scheduling`) distributes tasks over worker threads (a pool that lives for the
process). Per-block results are combined in row order, so the result does not depend on which thread ran which
task. Three ways to run a task:

- a single-stage native kernel (a `PipelineBody` with `prepare`, see `runtime.vectorized.kernel`): its input
  checks run once per pipeline on the whole inputs; each task is then one kernel call on its row range, writing
  its rows of the ROWS results (and of a column vector's transpose) straight into buffers allocated once for all
  rows, so there is nothing to combine but the partial aggregates. Consecutive tasks of a queue are coalesced
  into calls of `native_batch_bytes`;
- another native body (stages around numpy/BLAS ops): one call per task on zero-copy row blocks;
- a Python body: calls of `phyBatchSize` bytes of rows (DAPHNE's physical batch), results stacked.

A pipeline with less than `min_parallel_bytes` of rows runs as one call on the calling thread (waking workers
costs more than such work).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TypeVar

import numpy as np

from daphnec.dialects.value_types import Combine, Split
from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.scheduling.adaptive import ADAPTIVE
from daphnec.runtime.scheduling.topology import worker_cpus
from daphnec.runtime.scheduling.workers import schedule
from daphnec.runtime.values import INT_VTS, csr_rows, is_csr, to_f32, vt_of, wrap_int
from daphnec.runtime.vectorized.kernel import Body, PipelineBody
from daphnec.runtime.vectorized.settings import SETTINGS

R = TypeVar("R")


def _rows(x: object) -> int:
    return x.shape[0]  # type: ignore[attr-defined]


def _row_bytes(inputs: Sequence[object], splits: Sequence[int], n: int) -> int:
    """Bytes per row of the inputs that are split by rows (broadcast 1-row inputs do not count)."""
    total = 0
    for x, s in zip(inputs, splits):
        if s == Split.ROWS and not (_rows(x) == 1 and n != 1):
            rows = max(_rows(x), 1)
            total += (x.data.nbytes + x.indices.nbytes) // rows if is_csr(x) else x.itemsize * x.shape[1]  # type: ignore[attr-defined]
    return max(total, 1)


def _row_count(inputs: Sequence[object], splits: Sequence[int]) -> int:
    """Rows of the pipeline: the largest ROWS input; every other ROWS input must match it or have one row."""
    rows = [_rows(x) for x, s in zip(inputs, splits) if s == Split.ROWS]
    n = max(rows, default=0)
    for x, s in zip(inputs, splits):
        if s == Split.ROWS and _rows(x) not in (n, 1):
            shapes = ", ".join(f"{_rows(y)}x{y.shape[1]}" for y, t in zip(inputs, splits) if t == Split.ROWS)  # type: ignore[attr-defined]
            raise DaphneRuntimeError(f"vectorized pipeline: inputs split by rows have different row counts ({shapes})")
    return n


def _combine(parts: list[object], mode: int) -> object:
    if mode == Combine.ROWS:
        return _stack(parts, "vstack", np.vstack)
    if mode == Combine.COLS:
        return _stack(parts, "hstack", np.hstack)
    acc = parts[0]
    for p in parts[1:]:
        acc = _fold(acc, p, mode)
    return acc


def _stack(parts: list[object], sparse_stack: str, dense_stack: Callable) -> object:
    if len(parts) == 1:
        return parts[0]
    if any(is_csr(p) for p in parts):
        import scipy.sparse as sp  # only with CSR parts: importing scipy costs ~0.1 s of every start-up

        return sp.csr_array(getattr(sp, sparse_stack)(parts, format="csr"))
    return np.ascontiguousarray(dense_stack(parts))


def _fold(acc: object, x: object, mode: int) -> object:
    """Merge two partial aggregates like DAPHNE's ADD/MIN/MAX combine (std::min/std::max argument order)."""
    if isinstance(acc, np.ndarray):
        if mode == Combine.ADD:
            return acc + x
        pick = (x < acc) if mode == Combine.MIN else (acc < x)
        return np.where(pick, x, acc)
    if mode == Combine.ADD:
        if type(acc) is bool or type(acc) is np.bool_:  # a bool sum stays bool (logical or), as in one pass
            return bool(acc or x)
        s = acc + x  # type: ignore[operator]
        return wrap_int(s, vt_of(acc)) if type(acc) is int else s
    if mode == Combine.MIN:
        return x if x < acc else acc  # type: ignore[operator]
    return x if acc < x else acc  # type: ignore[operator]


def run_pipeline(
    pipeline_body: Body | PipelineBody,
    inputs: Sequence[object],
    splits: Sequence[int],
    combines: Sequence[int],
    result_vts: Sequence[str | None] | None = None,
    serial: bool = False,
) -> tuple[object, ...]:
    """Run the body over row blocks of the ROWS inputs (1-row inputs and NONE inputs are passed whole): a Python
    function, or a native kernel's `PipelineBody`.

    `result_vts` names the value type of each scalar result (None for matrices): partial sums of integers are
    wrapped to it once more after combining, as one sum over all rows would be. `serial` (the plain path's fused
    sums, and code generated by `--codegen`): one call over all rows on this thread, so sums fold in DAPHNE's
    sequential order."""
    native = pipeline_body if isinstance(pipeline_body, PipelineBody) else None
    body = native.body if native is not None else pipeline_body
    key = native.key if native is not None else getattr(body, "__code__", None) or type(body)
    n = _row_count(inputs, splits)
    row_bytes = _row_bytes(inputs, splits, n)
    step = max(1, SETTINGS.phy_batch_size // row_bytes)
    whole = [s != Split.ROWS or (_rows(x) == 1 and n != 1) for x, s in zip(inputs, splits)]
    one_call = serial  # every row in one call (ordered sums fold in DAPHNE's sequential order)
    serial = serial or n * row_bytes < SETTINGS.min_parallel_bytes  # too little work to share between threads

    # Row blocks of a CSR input share its arrays (scipy's slicing would copy every stored value per block).
    views = [None if w or not is_csr(x) or not x.has_canonical_format else x for x, w in zip(inputs, whole)]  # type: ignore[attr-defined]

    def blocks(a: int, b: int) -> list[object]:
        return [
            x if w else csr_rows(x, a, b) if v is not None else x[a:b]  # type: ignore[index]
            for x, w, v in zip(inputs, whole, views)
        ]

    if n == 0:
        parts = [body(*(x if w else x[0:0] for x, w in zip(inputs, whole)))]  # type: ignore[index]
        return _finish(tuple(_combine([p[i] for p in parts], mode) for i, mode in enumerate(combines)), result_vts)

    ready = native.prepare(n, *inputs) if native is not None and native.prepare is not None else None
    if ready is not None:
        batch = n if one_call else max(step, min(SETTINGS.native_batch_bytes // row_bytes, n // (4 * _workers())))
        return _finish(_run_ranges(ready, body, blocks, key, n, batch, serial, combines), result_vts)

    # A native body fuses the whole row loop (no intermediates to keep in cache): one call per task, not per batch.
    # A small input on the calling thread is one call too: each body call costs its ops' kernel calls again (a
    # decision tree's 10000 x 1 node masks: 8 calls of 5 kernels each per pipeline, 5x the plain kernels' time).
    per_call = n if one_call or serial or (native is not None and native.whole_tasks) else step

    def run_task(start: int, end: int) -> list[tuple[object, ...]]:
        return [body(*blocks(a, min(a + per_call, end))) for a in range(start, end, per_call)]

    parts = [p for _, task_parts in _schedule(key, n, run_task, step, serial) for p in task_parts]
    return _finish(tuple(_combine([p[i] for p in parts], mode) for i, mode in enumerate(combines)), result_vts)


def _run_ranges(
    ready: tuple[Callable[[int, int], tuple[object, ...] | None], tuple[object, ...]],
    body: Body,
    blocks: Callable[[int, int], list[object]],
    key: object,
    n: int,
    batch: int,
    serial: bool,
    combines: Sequence[int],
) -> tuple[object, ...]:
    """A single-stage native kernel (`prepare` succeeded): each task is one kernel call on its row range of the
    whole inputs, writing its rows of the ROWS/COLS results straight into buffers allocated once (no combine
    copy). A task whose kernel asks for the Python body (an error to raise, a domain to honour) runs the body on
    its row block; the results are then combined from the parts."""
    run, buffers = ready
    fell_back: list[int] = []

    def run_range(a: int, b: int) -> tuple[object, ...]:
        out = run(a, b)
        if out is None:
            fell_back.append(a)
            out = body(*blocks(a, b))
        return out

    parts = [p for _, p in _schedule(key, n, run_range, batch, serial)]
    return tuple(
        buf if buf is not None and not fell_back else _combine([p[i] for p in parts], mode)
        for i, (mode, buf) in enumerate(zip(combines, buffers))
    )


def _finish(out: tuple[object, ...], result_vts: Sequence[str | None] | None) -> tuple[object, ...]:
    """Scalar results back in their value type: integer partial sums wrapped, f32 partial sums (added as Python
    floats) rounded to f32 once more, as one pass over all rows would give (the f32 scalar contract)."""
    if result_vts is None:
        return out
    return tuple(
        wrap_int(x, vt) if type(x) is int and vt in INT_VTS else to_f32(x) if type(x) is float and vt == "f32" else x
        for x, vt in zip(out, result_vts)
    )


def _workers() -> int:
    return len(worker_cpus(SETTINGS.scheduler.num_threads, SETTINGS.scheduler.hyperthreading))


def _schedule(key: object, n: int, run_task: Callable[[int, int], R], batch: int, serial: bool) -> list[tuple[int, R]]:
    """Run the tasks with the configured scheme; `ADAPTIVE` picks it per pipeline (`key`) from earlier runs' timings.
    Consecutive small tasks of a queue run as one physical batch (`batch` rows); `serial`: one call on this
    thread."""
    if serial and not SETTINGS.scheduler.debug_mt:  # the run-time side of the vectorizer's cost model: a small
        return [(0, run_task(0, n))]  # pipeline costs one call here, not a scheduler configuration (~30-50 us)
    cfg = replace(SETTINGS.scheduler, coalesce_rows=batch)
    if serial or cfg.scheme != "ADAPTIVE":
        return schedule(n, run_task, cfg if cfg.scheme != "ADAPTIVE" else replace(cfg, scheme="STATIC"), serial)
    scheme = ADAPTIVE.choose(key)  # type: ignore[arg-type]
    finish: list[float] = []
    t0 = time.perf_counter()
    out = schedule(n, run_task, replace(cfg, scheme=scheme), finish=finish)
    ADAPTIVE.record(key, scheme, time.perf_counter() - t0, n, finish)  # type: ignore[arg-type]
    return out


def schedule_tasks(key: object, n: int, run_task: Callable[[int, int], R], serial: bool = False) -> list[tuple[int, R]]:
    """Tasks over [0, n) with the configured scheme (ADAPTIVE per `key`), each task run on its own: the entry of
    every kernel that runs its own tasks on the scheduler (the parfor executor, whose "rows" are iterations; the DNN
    kernels' images and chunks; gramVector's row blocks), so that `--partitioning=ADAPTIVE` is resolved here, in
    one place, and never reaches the scheduler's chunk formulas."""
    return _schedule(key, n, run_task, 1, serial)


# The distributed coordinator (runtime/distributed) counts rows and combines its workers' results with exactly
# these functions, so a distributed run combines like a local one.
row_count = _row_count
combine = _combine
