"""How a pipeline binds a kernel that the background thread is still compiling: a `--vec` pipeline waits for it
(`bind`), an ordered pipeline of the default path runs its Python body meanwhile (`bind_when_ready`: the same
bits either way) and takes the kernel from the first run after it is ready; a kernel that failed to build leaves
the Python body in place."""

from __future__ import annotations

import threading
from concurrent.futures import Future

from daphnec.runtime.vectorized.kernel import NativeKernel, PendingKernel, PipelineBody


def _py_body(x: object) -> tuple[object, ...]:
    return (x,)


def _kernel() -> NativeKernel:
    return NativeKernel("vp_test", "key", (), lambda: lambda body: (body, None))  # no entry points: nothing loaded


def test_an_ordered_pipeline_does_not_wait_for_its_kernel() -> None:
    future: Future[NativeKernel] = Future()
    pending = PendingKernel("vp_test", future, lambda e: None)
    assert pending.bind_when_ready(_py_body) is _py_body  # still compiling: the Python body runs now
    future.set_result(_kernel())
    bound = pending.bind_when_ready(_py_body)
    assert isinstance(bound, PipelineBody) and bound.key == "vp_test"


def test_a_vectorized_pipeline_waits_for_its_kernel() -> None:
    future: Future[NativeKernel] = Future()
    pending = PendingKernel("vp_test", future, lambda e: None)
    threading.Timer(0.2, future.set_result, args=(_kernel(),)).start()
    assert isinstance(pending.bind(_py_body), PipelineBody)


def test_a_failed_build_keeps_the_python_body() -> None:
    errors: list[Exception] = []
    future: Future[NativeKernel] = Future()
    future.set_exception(RuntimeError("no LLVM today"))
    pending = PendingKernel("vp_test", future, errors.append)
    assert pending.bind_when_ready(_py_body) is _py_body and pending.bind(_py_body) is _py_body
    assert [str(e) for e in errors] == ["no LLVM today", "no LLVM today"]
