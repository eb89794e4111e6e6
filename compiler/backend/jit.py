"""The JIT: compile kernel modules to host object code and load it, with the on-disk cache and a compile thread.

    compile_module(kernel_module) -> object code        (the LLVM-dialect module `convert-to-llvm` produced)
    load(key, object code, symbols) -> {symbol: address}

A kernel module (`builtin.module @vp_<hash>` of `llvm.func`s, see `compiler.lowering`) is translated to LLVM IR by
xDSL's llvmlite backend, optimised at O3 for the host CPU and emitted as object code, which the runtime's loader
(`runtime.vectorized.loader`) links into the process. Object code goes to the on-disk kernel cache
(`compiler.backend.kernel_cache`) under `object_key(pipeline text)`: a later run loads it in about a millisecond and
never lowers the pipeline at all.

`submit(build)` runs a build on the one background compile thread (LLVM releases the GIL, so the script starts
while kernels compile); `finish_background()` waits for every build handed to it (the driver calls it at the end
of the run, so the kernel cache ends up complete).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, TypeVar

from daphnec.compiler.backend import kernel_cache
from daphnec.runtime.vectorized.loader import loader

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

T = TypeVar("T")


def object_key(pipeline_text: str) -> str:
    """The kernel-cache key of a pipeline's object code: its IR before lowering, for this host."""
    return kernel_cache.cache_key(pipeline_text, loader().host)


def compile_llvm_ir(ir_text: str) -> bytes:
    """LLVM IR text -> optimised (O3) object code for the host."""
    return loader().compile_ir(ir_text)


def compile_module(kernel_module: ModuleOp) -> bytes:
    """A kernel module in xDSL's llvm dialect -> object code (xDSL's translation to llvmlite, then LLVM)."""
    from xdsl.backend.llvm.convert import convert_module  # imported by the compile thread: it costs start-up time

    tm = loader().tm
    ir_mod = convert_module(kernel_module, fallback_target_triple=tm.triple, data_layout=str(tm.target_data))
    return compile_llvm_ir(str(ir_mod))


def cached(key: str) -> bytes | None:
    return kernel_cache.load(key)


def store(key: str, obj: bytes) -> None:
    kernel_cache.store(key, obj)


def drop(key: str) -> None:
    kernel_cache.drop(key)


def load(key: str, obj: bytes, symbols: list[str]) -> dict[str, int]:
    return loader().load(key, obj, symbols)


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
