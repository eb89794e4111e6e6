"""Native pipeline kernels as the executor sees them: typed objects built by the compiler, run by the runtime.

    NativeKernel.bind(python_body) -> PipelineBody          (the executor's `run_pipeline` takes either kind of body)
    PendingKernel.bind(python_body)                         (waits for a kernel the compiler still builds)

A `PipelineBody` is what `runtime.vectorized.pipeline.run_pipeline` runs for a pipeline with a native kernel: `body`
(row blocks in, the blocks' results out: the compiled wrapper, which itself falls back to the Python body for
blocks of other forms and for errors), `prepare` (single-stage kernels: row-range calls on the whole inputs, see
the executor), `whole_tasks` (one call per task instead of per physical batch) and the scheduling `key` under
which ADAPTIVE remembers the pipeline's timings. The compiler (`compiler.backend.native`) builds these objects; this
module imports nothing from it, so a program restored from the whole-program cache runs without the compiler: a
pipeline kernel's wrapper is generated source the runtime runs (`wrapper_factory`), with the runtime's helpers.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass

import numpy as np

from daphnec.runtime import native_code

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


@dataclass(frozen=True)
class EntryPoint:
    """One Python-facing entry point of a kernel's object code: the name the kernel's factory takes it by, its
    symbol and its C prototype (`ctypes.CFUNCTYPE(restype, *argtypes)`)."""

    name: str
    symbol: str
    restype: type
    argtypes: tuple[type, ...]


Factory = Callable[[Body], tuple[Body, Prepare | None]]
"""`factory(python_body) -> (body, prepare or None)`: a kernel's wrapper, bound to the Python body."""


class NativeKernel:
    """A loaded kernel: its name, the key of its object code (`runtime.native_code`), its entry points and the
    runtime function that makes its wrapper from them (`make(**entry_functions) -> factory`: `wrapper_factory`
    with the generated source of a pipeline's wrapper, or `runtime.kernels.native_matmul.matmul_factory`).

    The object code must be loaded before the kernel is made. A kernel pickles as these four plain values (a
    `functools.partial` of a runtime function as `make`), so a program restored from the whole-program cache
    rebuilds it after loading the code again, with nothing of the compiler."""

    def __init__(self, name: str, object_key: str, entries: tuple[EntryPoint, ...], make: Callable[..., Factory]):
        self.name = name
        self.object_key = object_key
        self.entries = entries
        self.make = make
        at = native_code.addresses(object_key) if entries else {}
        functions = {e.name: ctypes.CFUNCTYPE(e.restype, *e.argtypes)(at[e.symbol]) for e in entries}
        self.factory: Factory = make(**functions)

    def __reduce__(self) -> tuple[object, ...]:
        return NativeKernel, (self.name, self.object_key, self.entries, self.make)

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


# ---------------------------------------------------------------------------------------------------------------------
# The runtime side of generated pipeline wrappers (compiler/backend/wrapper.py generates their source)
# ---------------------------------------------------------------------------------------------------------------------


def wrapper_factory(name: str, source: str, constants: dict[str, object], **entries: object) -> Factory:
    """A pipeline kernel's wrapper: its generated `source` (which defines `factory(_py)`) run with the helpers
    below, the values it was generated with (`constants`: dtypes, the runtime kernels of its opaque ops, ...) and
    its entry points as ctypes functions. The source is data, like a host program's: a cached program holds the
    text, never code objects."""
    ns: dict[str, object] = {
        "_nd": np.ndarray,
        "_empty": np.empty,
        "_ArgErr": ctypes.ArgumentError,
        "_ones": all_ones,
        "_finite_check": finite_check,
        "_i32": np.dtype(np.int32),
        "_i64": np.dtype(np.int64),
        **constants,
        **entries,
    }
    exec(compile(source, f"<kernel {name}>", "exec"), ns)  # noqa: S102 - generated by the compiler from verified IR
    return ns["factory"]  # type: ignore[return-value]


def finite_check() -> Callable[[np.ndarray], bool]:
    """`np.isfinite(x).all()`, remembered for the last object (a broadcast vector is the same for every batch)."""
    last: list[object] = [None, False]

    def check(x: np.ndarray) -> bool:
        if x is not last[0]:
            last[0], last[1] = x, bool(np.isfinite(x).all())
        return last[1]  # type: ignore[return-value]

    return check


CSR_ALL_ONES = 2
"""The flag bit a float CSR input's kernel argument carries when every stored value is 1.0 (the kernel then reads
no values); the calling convention's `CSR_ALL_ONES` (compiler/lowering/abi.py) is this value."""


def all_ones(x: object) -> int:
    """`CSR_ALL_ONES` if every stored value of a float CSR matrix is 1.0, else 0.

    Computed once per matrix and kept on it (run-time values are never mutated); a row block made by the executor
    (`runtime.values.csr_rows`) asks the matrix it shares its arrays with, so a graph is scanned once, not once per
    block and iteration."""
    d = x.__dict__  # type: ignore[attr-defined]
    flag = d.get("_daphne_ones")
    if flag is None:
        base = d.get("_daphne_base")
        if base is not None:
            flag = all_ones(base)
        else:
            data = x.data  # type: ignore[attr-defined]
            flag = CSR_ALL_ONES if data.size and bool((data == 1.0).all()) else 0
        d["_daphne_ones"] = flag
    return flag
