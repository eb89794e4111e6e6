"""Running a native matrix product (`--codegen`, compiler/lowering/lower_matmul_to_loops.py) on numpy matrices.

The compiler builds one `NativeKernel` per product kernel whose factory is `matmul_factory(...)`; host code calls
`run_native(kernel.bind, fallback, a, b)`, where `fallback` is the product's runtime kernel (BLAS), which also
runs whenever the operands are not what the kernel was compiled for (a CSR matrix, another dtype) or the inner
dimensions differ (it then raises DAPHNE's error). Operands must be C-contiguous for the kernel (Python-API
inputs may be views of any layout: they are copied first).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from daphnec.runtime.memory import check_bytes
from daphnec.runtime.vectorized.kernel import Body, PipelineBody, Prepare

Entry = Callable[..., int]
Factory = Callable[[Body], tuple[Body, Prepare | None]]


def matmul_factory(entry: Entry, dtype: np.dtype, transa: bool, transb: bool) -> Factory:
    """`factory(fallback) -> (body, None)`: `body(a, b)` computes op(a) @ op(b) with the kernel at `entry`
    (`entry(m, k, n, a, b, out)`, the calling convention of `compiler.lowering.matmul_loops`)."""

    def factory(fallback: Body) -> tuple[Body, Prepare | None]:
        def body(a: object, b: object) -> object:
            if not (_fits(a, dtype) and _fits(b, dtype)):
                return fallback(a, b)
            (ar, ac), (br, bc) = a.shape, b.shape  # type: ignore[attr-defined]
            m, k = (ac, ar) if transa else (ar, ac)
            k2, n = (bc, br) if transb else (br, bc)
            if k != k2:
                return fallback(a, b)
            check_bytes("@", f"a {m}x{n} result", m * n * dtype.itemsize)
            out = np.empty((m, n), dtype)
            if entry(m, k, n, _contiguous(a), _contiguous(b), out) != 0:
                return fallback(a, b)
            return out

        return body, None

    return factory


def _fits(x: object, dtype: np.dtype) -> bool:
    return type(x) is np.ndarray and x.ndim == 2 and x.dtype == dtype


def _contiguous(x: np.ndarray) -> np.ndarray:
    return x if x.flags.c_contiguous else np.ascontiguousarray(x)


def run_native(bind: Callable[[Body], PipelineBody | Body], fallback: Body, a: object, b: object) -> object:
    """The product by its native kernel (`bind`: `NativeKernel.bind`, or a pending kernel's, which waits for the
    compile thread and gives the fallback itself if the kernel failed to build)."""
    body = bind(fallback)
    return (body.body if isinstance(body, PipelineBody) else body)(a, b)
