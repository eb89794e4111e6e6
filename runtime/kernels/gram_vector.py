"""`t(X) @ (X @ v)`, `t(X) @ (w * (X @ v))` and `t(X) @ ((X @ v) - y)` reading X once (the `daphne.gramVector*`
ops that `fuse-x-once` builds).

These products are the inner loop of conjugate gradient on the normal equations (lmCG), of Newton-CG logistic
regression and of GLMs. Computed as written, X is read twice per iteration: once for `X @ v`, once for the
transposed product, and X is usually far larger than the caches. Here each row `x_i` is read once: its dot product
`d_i = x_i . v` is formed, turned into the row's scale `s_i` (`d_i`, `w_i * d_i` or `d_i - y_i`) and `s_i * x_i` is
added to the result while the row is still in the L1 cache. Dense (C-ordered f64) and CSR f64 matrices each have a
native loop (LLVM IR below, compiled once per host into the runtime's llvmlite engine, `runtime.native_code`);
dense matrices of `BLAS_MIN_COLS` or more columns take OpenBLAS's two matrix-vector products per block of rows
instead, which read the block from the L2 cache the second time.

Determinism: the rows are cut into tasks of a fixed size that depends only on X's shape, never on the number of
threads; each task accumulates its own partial result, and the partials are added in task order. The result is
therefore the same bits for any number of threads; it differs from BLAS's two products only by the order of the
additions (the README's 1e-12 relative promise for reductions). The tasks run on daphnec's task scheduler
(`--num-threads`, `--partitioning`); workers call the native loop through ctypes, which releases the GIL.

Small matrices (fewer than `MIN_NATIVE_CELLS` cells) take numpy's two products, exactly the unfused computation.
"""

from __future__ import annotations

import ctypes

import numpy as np

from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.native_code import CSR_INDEX_TYPES, BuiltOnce, csr_loop_ir, ir_functions
from daphnec.runtime.values import is_csr

MIN_NATIVE_CELLS = 1 << 14
"""Below this many cells numpy's two products cost less than starting the native loop's tasks."""
BLAS_MIN_COLS = 96
"""Dense X with at least this many columns takes the row-blocked BLAS form (per task: `u = X_t @ v`, then
`t(X_t) @ s(u)` while the task's rows are in the L2 cache): from about 100 columns OpenBLAS's two matrix-vector
products run at memory speed like the native loop (100,000 x 100: 4.7 vs 4.7 ms, 200,000 x 200: 38 vs 38 ms, one
thread, same process), and they need no llvmlite engine, whose start (~23 ms CPU, more on a busy machine) a
one-shot `(t(X) @ X) @ v` otherwise waited for inside the kernel: 50-140 ms against 5-15 ms measured in the
optimizer bench. Narrower rows keep the native loop (100,000 x 50: 1.8 vs 2.6 ms: gemv's per-row overhead). The
choice depends on X's shape only, so the bits do not depend on timing or threads."""
TASK_BYTES = 1 << 20
"""Bytes of X per task (about the L2 cache): fixed, so the partial sums do not depend on the thread count."""

KINDS = {"plain": 0, "weighted": 1, "residual": 2}
"""The row scale `s_i` from `d_i = x_i . v`: `d_i`, `w_i * d_i`, `d_i - y_i`."""

_SCALE = """
  %kind_w = icmp eq i64 %kind, 1
  %kind_r = icmp eq i64 %kind, 2
  %pa = getelementptr inbounds double, ptr %aux, i64 %r
  br i1 %kind_w, label %weighted, label %notweighted
weighted:
  %w = load double, ptr %pa
  %sw = fmul double %w, %d
  br label %scaled
notweighted:
  br i1 %kind_r, label %residual, label %scaled
residual:
  %y = load double, ptr %pa
  %sr = fsub double %d, %y
  br label %scaled
scaled:
  %s = phi double [%sw, %weighted], [%sr, %residual], [%d, %notweighted]
"""

_DENSE = (
    """
define void @gram_dense(ptr noalias %x, i64 %cols, ptr noalias %v, ptr noalias %aux, i64 %kind, i64 %r0, i64 %r1,
                        ptr noalias %out) {
entry:
  %any = icmp slt i64 %r0, %r1
  br i1 %any, label %row, label %done
row:
  %r = phi i64 [%r0, %entry], [%rn, %upd_end]
  %base = mul i64 %r, %cols
  %px = getelementptr inbounds double, ptr %x, i64 %base
  br label %dot
dot:
  %c = phi i64 [0, %row], [%cn, %dot]
  %acc = phi double [0.0, %row], [%acc1, %dot]
  %pxc = getelementptr inbounds double, ptr %px, i64 %c
  %xv = load double, ptr %pxc
  %pvc = getelementptr inbounds double, ptr %v, i64 %c
  %vv = load double, ptr %pvc
  %prod = fmul reassoc double %xv, %vv
  %acc1 = fadd reassoc double %acc, %prod
  %cn = add nuw nsw i64 %c, 1
  %more = icmp slt i64 %cn, %cols
  br i1 %more, label %dot, label %dotted
dotted:
  %d = phi double [%acc1, %dot]
"""
    + _SCALE
    + """
  br label %upd
upd:
  %j = phi i64 [0, %scaled], [%jn, %upd]
  %pxj = getelementptr inbounds double, ptr %px, i64 %j
  %xj = load double, ptr %pxj
  %poj = getelementptr inbounds double, ptr %out, i64 %j
  %oj = load double, ptr %poj
  %t = fmul double %s, %xj
  %oj1 = fadd double %oj, %t
  store double %oj1, ptr %poj
  %jn = add nuw nsw i64 %j, 1
  %jmore = icmp slt i64 %jn, %cols
  br i1 %jmore, label %upd, label %upd_end
upd_end:
  %rn = add nuw nsw i64 %r, 1
  %rmore = icmp slt i64 %rn, %r1
  br i1 %rmore, label %row, label %done
done:
  ret void
}
"""
)

_CSR = (
    """
define void @gram_csr_{it}(ptr noalias %data, ptr noalias %indices, ptr noalias %indptr, ptr noalias %v,
                           ptr noalias %aux, i64 %kind, i64 %r0, i64 %r1, ptr noalias %out) {{
entry:
  %any = icmp slt i64 %r0, %r1
  br i1 %any, label %row, label %done
row:
  %r = phi i64 [%r0, %entry], [%rn, %upd_end]
  %pb = getelementptr inbounds {it}, ptr %indptr, i64 %r
  %b0 = load {it}, ptr %pb
  %r1p = add i64 %r, 1
  %pe = getelementptr inbounds {it}, ptr %indptr, i64 %r1p
  %e0 = load {it}, ptr %pe
  %b = sext {it} %b0 to i64
  %e = sext {it} %e0 to i64
  %nonempty = icmp slt i64 %b, %e
  br i1 %nonempty, label %dot, label %upd_end
dot:
  %k = phi i64 [%b, %row], [%kn, %dot]
  %acc = phi double [0.0, %row], [%acc1, %dot]
  %pd = getelementptr inbounds double, ptr %data, i64 %k
  %xv = load double, ptr %pd
  %pi = getelementptr inbounds {it}, ptr %indices, i64 %k
  %ci0 = load {it}, ptr %pi
  %ci = sext {it} %ci0 to i64
  %pvc = getelementptr inbounds double, ptr %v, i64 %ci
  %vv = load double, ptr %pvc
  %prod = fmul double %xv, %vv
  %acc1 = fadd double %acc, %prod
  %kn = add nsw i64 %k, 1
  %more = icmp slt i64 %kn, %e
  br i1 %more, label %dot, label %dotted
dotted:
  %d = phi double [%acc1, %dot]
"""
    + _SCALE.replace("{", "{{").replace("}", "}}")
    + """
  br label %upd
upd:
  %j = phi i64 [%b, %scaled], [%jn, %upd]
  %pdj = getelementptr inbounds double, ptr %data, i64 %j
  %xj = load double, ptr %pdj
  %pij = getelementptr inbounds {it}, ptr %indices, i64 %j
  %cj0 = load {it}, ptr %pij
  %cj = sext {it} %cj0 to i64
  %poj = getelementptr inbounds double, ptr %out, i64 %cj
  %oj = load double, ptr %poj
  %t = fmul double %s, %xj
  %oj1 = fadd double %oj, %t
  store double %oj1, ptr %poj
  %jn = add nsw i64 %j, 1
  %jmore = icmp slt i64 %jn, %e
  br i1 %jmore, label %upd, label %upd_end
upd_end:
  %rn = add nuw nsw i64 %r, 1
  %rmore = icmp slt i64 %rn, %r1
  br i1 %rmore, label %row, label %done
done:
  ret void
}}
"""
)

_P, _I = ctypes.c_void_p, ctypes.c_int64
_DENSE_SIG = ctypes.CFUNCTYPE(None, _P, _I, _P, _P, _I, _I, _I, _P)
_CSR_SIG = ctypes.CFUNCTYPE(None, _P, _P, _P, _P, _P, _I, _I, _I, _P)


def _build() -> dict[str, object]:
    """The native loops (object code cached per host, `runtime.native_code`)."""
    text = _DENSE + "".join(csr_loop_ir(_CSR, it) for it in CSR_INDEX_TYPES.values())
    names = ["gram_dense", *(f"gram_csr_{it}" for it in CSR_INDEX_TYPES.values())]
    addr = ir_functions(text, names)
    return {n: (_DENSE_SIG if n == "gram_dense" else _CSR_SIG)(addr[n]) for n in names}  # type: ignore[misc]


LOOPS: BuiltOnce[dict[str, object]] = BuiltOnce(_build)
"""The native loops, built once per process."""


def warm_up() -> None:
    """Build the native loops now (runtime/scheduling/warmup.py calls it in the background when a program that
    calls these kernels starts, so that the first call does not load llvmlite)."""
    LOOPS.get()


def task_rows(rows: int, bytes_per_row: int) -> int:
    """Rows per task: about `TASK_BYTES` of X, a function of X's shape only (see the module docstring)."""
    return max(1, min(rows, TASK_BYTES // max(bytes_per_row, 1)))


def gram_vector(X, v, aux=None, kind: str = "plain") -> np.ndarray:
    """`t(X) @ s(X @ v)` for an n x m f64 matrix X (dense or CSR), an m x 1 vector v and, for `kind` "weighted" /
    "residual", the n x 1 vector `aux` (w or y): an m x 1 matrix (see the module docstring)."""
    n, m = X.shape
    v = np.asarray(v, dtype=np.float64)
    if v.shape != (m, 1):
        raise DaphneRuntimeError(f"matMul: shape mismatch: lhs {n}x{m}, rhs {v.shape[0]}x{v.shape[1]}")
    if kind != "plain":
        aux = np.asarray(aux, dtype=np.float64)
        if aux.shape != (n, 1):
            op = "*" if kind == "weighted" else "-"
            raise DaphneRuntimeError(f"`{op}`: shape mismatch: lhs {n}x1, rhs {aux.shape[0]}x{aux.shape[1]}")
    if n * m < MIN_NATIVE_CELLS or X.dtype != np.float64:
        return _as_written(X, v, aux, kind)
    v = np.ascontiguousarray(v)
    a = np.ascontiguousarray(aux) if kind != "plain" else v  # never read for "plain"
    code = KINDS[kind]
    if is_csr(X):
        it = CSR_INDEX_TYPES.get(X.indices.dtype.name)
        if it is None or X.indptr.dtype != X.indices.dtype:
            return _as_written(X, v, aux, kind)
        fn = LOOPS.get()[f"gram_csr_{it}"]
        data, indices, indptr = X.data, X.indices, X.indptr
        per_row = max(1, X.nnz // max(n, 1)) * (8 + X.indices.itemsize)

        def run(r0: int, r1: int, out: np.ndarray) -> None:
            fn(data.ctypes.data, indices.ctypes.data, indptr.ctypes.data, v.ctypes.data, a.ctypes.data, code, r0, r1,
               out.ctypes.data)  # fmt: skip
    elif m >= BLAS_MIN_COLS:
        Xc = np.asarray(X)  # a column slice is read in place (BLAS takes the row distance; numpy copies a block if not)
        per_row = 8 * m

        def run(r0: int, r1: int, out: np.ndarray) -> None:
            block = Xc[r0:r1]
            u = block @ v
            if kind == "weighted":
                u *= a[r0:r1]
            elif kind == "residual":
                u -= a[r0:r1]
            np.matmul(u.T, block, out=out.reshape(1, m))
    else:
        Xc = np.ascontiguousarray(X)
        fn = LOOPS.get()["gram_dense"]
        per_row = 8 * m

        def run(r0: int, r1: int, out: np.ndarray) -> None:
            fn(Xc.ctypes.data, m, v.ctypes.data, a.ctypes.data, code, r0, r1, out.ctypes.data)

    step = task_rows(n, per_row)
    bounds = [(r, min(n, r + step)) for r in range(0, n, step)]
    partial = np.zeros((len(bounds), m), dtype=np.float64)
    _run_tasks(bounds, partial, run)
    res = partial[0].copy()
    for p in partial[1:]:  # in task order: the same bits for any number of threads
        res += p
    return res.reshape(m, 1)


def _run_tasks(bounds, partial: np.ndarray, run) -> None:
    """Every task (its rows into its own row of `partial`) on the task scheduler; which worker runs a task does
    not change its bits."""
    from daphnec.runtime.vectorized.pipeline import schedule_tasks

    def tasks(t0: int, t1: int) -> None:
        for t in range(t0, t1):
            run(*bounds[t], partial[t])

    schedule_tasks("gramVector", len(bounds), tasks, serial=len(bounds) == 1)


def _as_written(X, v, aux, kind: str) -> np.ndarray:
    """The unfused computation: the kernels of `X @ v`, the element-wise op and `t(X) @ u`."""
    from daphnec.runtime.kernels.matmul import matmul

    u = matmul(X, v, "f64")
    if kind == "weighted":
        u = aux * u
    elif kind == "residual":
        u = u - aux
    return matmul(X, u, "f64", transa=True)


def gram_vector_plain(X, v) -> np.ndarray:
    """`t(X) @ (X @ v)`."""
    return gram_vector(X, v, None, "plain")


def gram_vector_weighted(X, v, w) -> np.ndarray:
    """`t(X) @ (w * (X @ v))`."""
    return gram_vector(X, v, w, "weighted")


def gram_vector_residual(X, v, y) -> np.ndarray:
    """`t(X) @ ((X @ v) - y)`."""
    return gram_vector(X, v, y, "residual")
