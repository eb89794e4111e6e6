"""The JIT: kernel modules in xDSL's llvm dialect to object code, on the background compile thread.

    object_key(text) -> key                          (the runtime's key scheme, plus the lowering's own sources)
    compile_module(kernel_module) -> object code     (the llvm-dialect module `convert-to-llvm` produced)
    submit(build) -> Future; finish_background()

A kernel module (`builtin.module @vp_<hash>` of `llvm.func`s, see `compiler.lowering`) is translated to LLVM IR by
xDSL's llvmlite backend for the runtime's target machine and compiled by the runtime (`runtime.native_code`: O3
for the host CPU), which also caches the object code under `object_key(pipeline text)` and loads it: a later run
loads a kernel in about a millisecond and never lowers its pipeline at all.

`submit(build)` runs a build on the one background compile thread (LLVM releases the GIL, so the script starts
while kernels compile); `finish_background()` waits for every build handed to it (the driver calls it at the end
of the run, so the kernel cache ends up complete).
"""

from __future__ import annotations

import hashlib
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from daphnec.runtime import native_code

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

T = TypeVar("T")

_LOWERING_DIGEST: list[str] = []


def _lowering_digest() -> str:
    """A hash of the compiler code that shapes a kernel: the lowering passes, the pass pipeline that runs them and
    this translation (the runtime adds its own target machine and optimisation pipeline to every key)."""
    if not _LOWERING_DIGEST:
        compiler = Path(__file__).parents[1]
        files = sorted((compiler / "lowering").glob("*.py")) + [compiler / "pipeline.py", Path(__file__)]
        h = hashlib.sha256()
        for f in files:
            h.update(f.name.encode())
            h.update(f.read_bytes())
        _LOWERING_DIGEST.append(h.hexdigest())
    return _LOWERING_DIGEST[0]


def object_key(pipeline_text: str) -> str:
    """The key of a kernel's object code: the text that identifies it (a pipeline's IR before lowering), for this
    host and this lowering."""
    return native_code.object_key(pipeline_text, _lowering_digest())


def compile_module(kernel_module: ModuleOp) -> bytes:
    """A kernel module in xDSL's llvm dialect -> object code (xDSL's translation to llvmlite, then LLVM)."""
    from xdsl.backend.llvm.convert import convert_module  # imported by the compile thread: it costs start-up time

    engine = native_code.engine()
    tm = engine.tm
    ir_mod = convert_module(kernel_module, fallback_target_triple=tm.triple, data_layout=str(tm.target_data))
    return engine.compile_ir(str(ir_mod))


# ---------------------------------------------------------------------------------------------------------------------
# The background compile thread
# ---------------------------------------------------------------------------------------------------------------------

_QUEUE: queue.SimpleQueue[tuple[Callable[[], object], Future[object]]] | None = None
_PENDING: list[Future[object]] = []


def submit(build: Callable[[], T]) -> Future[T]:
    """Run `build` on the background compile thread (one thread: the kernels' order is the program's). A daemon
    thread: a script that ends early does not wait for kernels it never used, unless `finish_background` is
    called (the driver does, so that the kernel cache is complete)."""
    global _QUEUE
    if _QUEUE is None:
        _QUEUE = queue.SimpleQueue()
        threading.Thread(target=_compile_thread, args=(_QUEUE,), name="daphnec-jit", daemon=True).start()
    fut: Future[T] = Future()
    _PENDING.append(fut)  # type: ignore[arg-type]
    _QUEUE.put((build, fut))  # type: ignore[arg-type]
    return fut


def _compile_thread(q: queue.SimpleQueue[tuple[Callable[[], object], Future[object]]]) -> None:
    while True:
        build, fut = q.get()
        if not fut.set_running_or_notify_cancel():
            continue
        try:
            fut.set_result(build())
        except BaseException as e:  # noqa: BLE001 - handed to whoever waits for the kernel
            fut.set_exception(e)


def finish_background() -> None:
    """Wait until every build handed to the background compile thread is done (and in the kernel cache)."""
    while _PENDING:
        fut = _PENDING.pop()
        if not fut.done():
            try:
                fut.result()
            except Exception:  # noqa: BLE001, S110 - reported by PendingKernel.kernel when used; the body runs then
                pass
