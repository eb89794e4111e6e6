"""Native pipeline kernels as the executor sees them: typed objects built by the compiler, run by the runtime.

    NativeKernel.bind(python_body) -> PipelineBody          (the executor's `run_pipeline` takes either kind of body)
    PendingKernel.bind(python_body)                         (waits for a kernel the compiler still builds)

A `PipelineBody` is what `runtime.vectorized.pipeline.run_pipeline` runs for a pipeline with a native kernel: `body`
(row blocks in, the blocks' results out: the compiled wrapper, which itself falls back to the Python body for
blocks of other forms and for errors), `prepare` (single-stage kernels: row-range calls on the whole inputs, see
the executor), `whole_tasks` (one call per task instead of per physical batch) and the scheduling `key` under
which ADAPTIVE remembers the pipeline's timings. The compiler (`compiler.backend.native`) builds these objects; this
module imports nothing from it, so a program restored from the whole-program cache runs without the compiler.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass

import numpy as np

Body = Callable[..., tuple[object, ...]]
Ranges = Callable[[int, int], tuple[object, ...] | None]
Prepare = Callable[..., tuple[Ranges, tuple[object, ...]] | None]
"""`prepare(n, *inputs) -> (run(start, end) -> results | None, preallocated buffers) | None`."""


@dataclass(frozen=True)
class PipelineBody:
    """A pipeline body backed by a native kernel (see the module docstring)."""

    body: Body
    prepare: Prepare | None
    whole_tasks: bool
    """A fused loop keeps no intermediates: one call per task, not per physical batch."""
    key: str
    """ADAPTIVE's scheduling key: the kernel's name (equal pipelines share their timings)."""


@dataclass
class NativeKernel:
    """A loaded pipeline kernel: the generated wrapper around its entry points, and where its code came from."""

    name: str
    factory: Callable[[Body], tuple[Body, Prepare | None]]
    """`factory(python_body) -> (body, prepare or None)`: the generated wrapper, bound to the Python body."""
    object_key: str
    """The kernel-cache key of its object code (the whole-program cache reloads the code by it)."""
    entries: tuple[tuple[str, int], ...]
    """(symbol, address) of every Python-facing entry point in the loaded code."""

    def bind(self, py_body: Body) -> PipelineBody:
        body, prepare = self.factory(py_body)
        # Stages around opaque ops materialise the ops' operands per call: they run per physical batch, like a
        # Python body (whose BLAS/numpy calls then see the same row blocks); a single fused loop runs per task.
        return PipelineBody(body, prepare, prepare is not None, self.name)

    def bind_when_ready(self, py_body: Body) -> PipelineBody:
        return self.bind(py_body)


class PendingKernel:
    """A kernel still being built on the compiler's background thread. `bind` waits for it; if building it failed
    (reported through `on_error`), the pipeline keeps its Python body."""

    def __init__(self, name: str, future: Future[NativeKernel], on_error: Callable[[Exception], None]):
        self.name = name
        self.future = future
        self.on_error = on_error

    def kernel(self) -> NativeKernel | None:
        try:
            return self.future.result()
        except Exception as e:  # noqa: BLE001 - the Python body is always a correct fallback
            self.on_error(e)
            return None

    def bind(self, py_body: Body) -> PipelineBody | Body:
        k = self.kernel()
        return py_body if k is None else k.bind(py_body)

    def bind_when_ready(self, py_body: Body) -> PipelineBody | Body:
        """For ordered pipelines (the default path's fused sums, maps and filters), which compute what their Python
        body computes, bit for bit: while the kernel is still being compiled, the body runs instead of waiting."""
        return self.bind(py_body) if self.future.done() else py_body


def _array_data_offset() -> int:
    """Where `PyArrayObject.data` sits (right after PyObject_HEAD); probed, not assumed."""
    a = np.empty(1)
    for off in range(8, 65, 8):
        if ctypes.c_void_p.from_address(id(a) + off).value == a.ctypes.data:
            return off
    raise RuntimeError("cannot locate the data pointer of a numpy array")


ARRAY_DATA_OFFSET = _array_data_offset()
"""Kernel entry points read a numpy array's data pointer from the array object at this offset (reading it there
costs nothing; `arr.ctypes.data` costs microseconds per call)."""
