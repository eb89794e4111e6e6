"""`t(v1) @ outerLe(x, thr)`, `t(v2) @ outerLe(x, thr)`, ... without the n x k 0/1 matrix (`daphne.splitStats`,
built by compiler/passes/fuse_split_stats.py): the split statistics of decision trees (counts and sums of the rows
left of each candidate threshold).

For thresholds sorted ascending and free of NaN (checked at every call), the thresholds a row is counted for are a
contiguous run: from its bin `b_i` to the end for `outerLe`/`outerLt` (`b_i` = how many thresholds `x_i <= t`
fails for, an unordered comparison, so NaN -- false against every threshold -- lands in bin k and is never
counted), below `b_i` for `outerGe`/`outerGt` (`b_i` = how many thresholds the comparison holds for: NaN in bin 0).
-0.0 and 0.0 compare equal there as in the outer kernel. One native loop (LLVM IR below, compiled once per host
into the runtime's llvmlite engine, `runtime.native_code`) reads each row once, counts its bin branch-free over
the k thresholds and adds every vector's value to that vector's per-bin sum, rows in order; a running sum over
the bins (from the bottom or the top) gives the result. No n x k matrix is allocated (1.2 MB per call in the
random-forest bench: 62 us against 253 us for the outer kernel and two products, measured on 10,000 rows,
15 thresholds, two vectors).

The sums are added in another order than the product's dot product (per bin, then across bins): the result
differs in the last bits unless the vectors are integer-valued (counts, bootstrap weights), whose sums below 2^53
are exact in any order -- hence the pass is a re-associating rewrite. Unsorted thresholds, or thresholds with a
NaN, take the written computation (the outer kernel and one product per vector).
"""

from __future__ import annotations

import ctypes

import numpy as np

from daphnec.runtime.kernels.matmul import matmul
from daphnec.runtime.kernels.outer import outer_kernel
from daphnec.runtime.native_code import BuiltOnce, ir_functions

_PREDICATES = {"le": ("ugt", False), "lt": ("uge", False), "ge": ("oge", True), "gt": ("ogt", True)}
"""Outer kind -> (the LLVM comparison whose count over the thresholds is a row's bin, counted below the bin)."""


_LOOP = """
define void @split_{pred}(ptr noalias %x, i64 %xs, i64 %n, ptr noalias %thr, i64 %k, ptr noalias %vp,
                          ptr noalias %vs, i64 %p, ptr noalias %acc) {{
entry:
  %any = icmp slt i64 0, %n
  %kz = add i64 %k, 1
  %k1 = shl i64 %kz, 1
  br i1 %any, label %row, label %done
row:
  %i = phi i64 [0, %entry], [%in, %row_end]
  %xo = mul i64 %i, %xs
  %px = getelementptr inbounds double, ptr %x, i64 %xo
  %xv = load double, ptr %px
  %kany = icmp slt i64 0, %k
  br i1 %kany, label %cnt, label %counted
cnt:
  %j = phi i64 [0, %row], [%jn, %cnt]
  %b = phi i64 [0, %row], [%b1, %cnt]
  %pt = getelementptr inbounds double, ptr %thr, i64 %j
  %tv = load double, ptr %pt
  %c = fcmp {pred} double %xv, %tv
  %ci = zext i1 %c to i64
  %b1 = add i64 %b, %ci
  %jn = add nuw nsw i64 %j, 1
  %jmore = icmp slt i64 %jn, %k
  br i1 %jmore, label %cnt, label %counted
counted:
  %bin = phi i64 [0, %row], [%b1, %cnt]
  %pany = icmp slt i64 0, %p
  br i1 %pany, label %vec, label %row_end
vec:
  %r = phi i64 [0, %counted], [%rn, %vec]
  %ppv = getelementptr inbounds ptr, ptr %vp, i64 %r
  %pv = load ptr, ptr %ppv
  %pst = getelementptr inbounds i64, ptr %vs, i64 %r
  %st = load i64, ptr %pst
  %vo = mul i64 %i, %st
  %pvi = getelementptr inbounds double, ptr %pv, i64 %vo
  %vv = load double, ptr %pvi
  %ro = mul i64 %r, %k1
  %ao = add i64 %ro, %bin
  %pa = getelementptr inbounds double, ptr %acc, i64 %ao
  %av = load double, ptr %pa
  %av1 = fadd double %av, %vv
  store double %av1, ptr %pa
  %zr = add i64 %ro, %kz
  %zo = add i64 %zr, %bin
  %pz = getelementptr inbounds double, ptr %acc, i64 %zo
  %zv = load double, ptr %pz
  %z = fmul double %vv, 0.0
  %zv1 = fadd double %zv, %z
  store double %zv1, ptr %pz
  %rn = add nuw nsw i64 %r, 1
  %rmore = icmp slt i64 %rn, %p
  br i1 %rmore, label %vec, label %row_end
row_end:
  %in = add nuw nsw i64 %i, 1
  %more = icmp slt i64 %in, %n
  br i1 %more, label %row, label %done
done:
  ret void
}}
"""
"""Per row: its bin (how many thresholds the comparison holds for, unordered for le/lt so that NaN lands in bin
k), then each vector's value added to its bin; rows in order, so the bits do not depend on anything else. Columns
k + 1 .. 2k + 1 of a vector's sums add `v_i * 0.0` per bin: NaN for an infinite or NaN value, which the written
product gives the thresholds that do not count the row (`inf * 0`), else 0.0."""

_P, _I = ctypes.c_void_p, ctypes.c_int64
_SIG = ctypes.CFUNCTYPE(None, _P, _I, _I, _P, _I, _P, _P, _I, _P)


def _build() -> dict[str, object]:
    """The native loops (object code cached per host, `runtime.native_code`)."""
    preds = [p for p, _ in _PREDICATES.values()]
    addr = ir_functions("".join(_LOOP.format(pred=p) for p in preds), [f"split_{p}" for p in preds])
    return {p: _SIG(addr[f"split_{p}"]) for p in preds}  # type: ignore[misc]


LOOPS: BuiltOnce[dict[str, object]] = BuiltOnce(_build)
"""The native loops, built once per process."""


def warm_up() -> None:
    """Build the native loops now (for runtime/scheduling/warmup.py's background thread, when a program that calls
    this kernel starts: the first call otherwise pays llvmlite's engine start, ~50 ms in the forest bench)."""
    LOOPS.get()


def _f64_column(a) -> np.ndarray:
    """`a` as an f64 array whose rows are a whole number of doubles apart (a column view of a matrix stays one)."""
    a = np.asarray(a, dtype=np.float64)
    return a if a.strides[0] % 8 == 0 else np.ascontiguousarray(a)


def split_stats(x, thr, *vs, kind: str = "le") -> np.ndarray:
    """A p x k matrix whose row r is `t(vs[r]) @ outer<kind>(x, thr)` for an n x 1 x, a 1 x k thr and n x 1 vs."""
    x = _f64_column(x)
    thr = np.asarray(thr, dtype=np.float64)
    cols = [_f64_column(v) for v in vs]
    n, k = x.shape[0], thr.shape[1]
    if x.shape[1] != 1 or thr.shape[0] != 1 or any(v.shape != (n, 1) for v in cols):
        return _as_written(x, thr, cols, kind)  # the written kernels report the shapes
    t = np.ascontiguousarray(thr[0])
    if np.isnan(t).any() or (k > 1 and not (t[1:] >= t[:-1]).all()):
        return _as_written(x, thr, cols, kind)
    pred, below = _PREDICATES[kind]
    acc = np.zeros((len(cols), 2 * (k + 1)), dtype=np.float64)
    ptrs = np.array([v.ctypes.data for v in cols], dtype=np.uint64)
    strides = np.array([v.strides[0] // 8 for v in cols], dtype=np.int64)
    LOOPS.get()[pred](x.ctypes.data, x.strides[0] // 8, n, t.ctypes.data, k, ptrs.ctypes.data, strides.ctypes.data,
                   len(cols), acc.ctypes.data)  # fmt: skip
    bins, zeros = acc[:, : k + 1], acc[:, k + 1 :]
    up = np.cumsum(zeros if below else bins, axis=1)[:, :k]  # the bins up to j
    down = np.cumsum((bins if below else zeros)[:, ::-1], axis=1)[:, ::-1][:, 1:]  # the bins above j
    # counted for j >= b_i (le, lt) or j < b_i (ge, gt); the other thresholds add v_i * 0 (0, or NaN for inf/NaN)
    return up + down


def _as_written(x: np.ndarray, thr: np.ndarray, vs, kind: str) -> np.ndarray:
    """The unfused computation by the kernels the written program calls: the outer comparison's 0/1 matrix, then
    `t(v) @ L` per vector (the same bits, and the same errors for operands of the wrong shapes)."""
    L = outer_kernel(kind, "f64", "f64")(x, thr)
    return np.concatenate([matmul(v, L, "f64", transa=True) for v in vs], axis=0).reshape(len(vs), thr.shape[1])
