"""Sequential float sums as native loops: DAPHNE's `AggAll`/`AggRow`/`AggCol` folds at memory speed.

DAPHNE sums a dense matrix with a left fold in element order (`agg = func(agg, value)` per cell, in
src/runtime/local/kernels/AggAll.h, AggRow.h and AggCol.h), so a float sum depends on the order of its additions.
numpy's `sum` adds pairwise and does not reproduce it; its `cumsum` does, but writes a whole matrix of prefix
sums (an allocation the size of the input, first-touched, plus a second pass): about 10x the time of `np.sum`.
These loops add in DAPHNE's order without fast-math flags, so LLVM keeps the order (a full or row fold is one
dependency chain per row, bound by the add latency; a column fold adds whole rows into the column accumulators,
which vectorises across columns) and the results are bit-identical to the C++ loops.

The module (row and column folds, and row and column folds of squared deviations from a mean for var/stddev, for f64
and f32; each reads a view of contiguous rows in place, e.g. a column slice) is compiled by llvmlite the first time an
aggregation is large enough to gain (`applies`); smaller inputs keep numpy (`agg._ordered_sum`, an in-order
axis-0 reduce, for row/column sums; `cumsum` for full ones), which gives the same bits.
The code lives in the runtime's one llvmlite engine (`runtime.native_code`), next to the JIT's kernels.
"""

from __future__ import annotations

import ctypes
import sys

import numpy as np

from daphnec.runtime.native_code import BuiltOnce, ir_functions

#: Once the loops are built, inputs of this many cells use them (a process that loaded llvmlite anyway, e.g. for
#: a JIT kernel, builds them in the background: `applies`).
MIN_NATIVE_CELLS = 1 << 12
#: The first input this large builds them: its cumsum costs about what loading llvmlite and compiling the loops
#: costs (~0.1 s, more on a loaded machine), so scripts that only sum small matrices never pay for it.
MIN_FIRST_CELLS = 1 << 23

_ROWS = """
define void @{name}_{{t}}(ptr noalias %a, i64 %rows, i64 %cols, i64 %ld{params}, ptr noalias %out) {{{{
entry:
  %any = icmp sgt i64 %rows, 0
  br i1 %any, label %row, label %done
row:
  %r = phi i64 [0, %entry], [%r1, %rowend]
  %base = mul i64 %r, %ld
{row_setup}  %p0 = getelementptr inbounds {{t}}, ptr %a, i64 %base
  %v0 = load {{t}}, ptr %p0
{first_term}  %more0 = icmp sgt i64 %cols, 1
  br i1 %more0, label %cell, label %rowend
cell:
  %c = phi i64 [1, %row], [%c1, %cell]
  %acc = phi {{t}} [{first}, %row], [%acc1, %cell]
  %i = add i64 %base, %c
  %p = getelementptr inbounds {{t}}, ptr %a, i64 %i
  %v = load {{t}}, ptr %p
{term}  %acc1 = fadd {{t}} %acc, {value}
  %c1 = add nuw nsw i64 %c, 1
  %morec = icmp slt i64 %c1, %cols
  br i1 %morec, label %cell, label %rowend
rowend:
  %res = phi {{t}} [{first}, %row], [%acc1, %cell]
  %po = getelementptr inbounds {{t}}, ptr %out, i64 %r
  store {{t}} %res, ptr %po
  %r1 = add nuw nsw i64 %r, 1
  %morer = icmp slt i64 %r1, %rows
  br i1 %morer, label %row, label %done
done:
  ret void
}}}}
"""
"""A left fold per row from its first cell's term: `out[r] = ((t(a[r,0]) + t(a[r,1])) + ...)`."""

_COLS = """
define void @{name}_{{t}}(ptr noalias %a, i64 %rows, i64 %cols, i64 %ld{params}, ptr noalias %out) {{{{
entry:
  %any = icmp sgt i64 %rows, 0
  %anyc = icmp sgt i64 %cols, 0
  %go = and i1 %any, %anyc
  br i1 %go, label %init, label %done
init:
  %c = phi i64 [0, %entry], [%c01, %init]
  %pa0 = getelementptr inbounds {{t}}, ptr %a, i64 %c
  %v = load {{t}}, ptr %pa0
{term}  %po0 = getelementptr inbounds {{t}}, ptr %out, i64 %c
  store {{t}} {value}, ptr %po0
  %c01 = add nuw nsw i64 %c, 1
  %morec0 = icmp slt i64 %c01, %cols
  br i1 %morec0, label %init, label %rest
rest:
  %more = icmp sgt i64 %rows, 1
  br i1 %more, label %row, label %done
row:
  %r = phi i64 [1, %rest], [%r1, %rowend]
  %base = mul i64 %r, %ld
  br label %cell
cell:
  %cc = phi i64 [0, %row], [%c1, %cell]
  %i = add i64 %base, %cc
  %p = getelementptr inbounds {{t}}, ptr %a, i64 %i
  %vv = load {{t}}, ptr %p
{cell_term}  %po = getelementptr inbounds {{t}}, ptr %out, i64 %cc
  %acc = load {{t}}, ptr %po
  %acc1 = fadd {{t}} %acc, {cell_value}
  store {{t}} %acc1, ptr %po
  %c1 = add nuw nsw i64 %cc, 1
  %morec = icmp slt i64 %c1, %cols
  br i1 %morec, label %cell, label %rowend
rowend:
  %r1 = add nuw nsw i64 %r, 1
  %morer = icmp slt i64 %r1, %rows
  br i1 %morer, label %row, label %done
done:
  ret void
}}}}
"""
"""Per column, the rows' terms added in order into `out` from the first row's: `out[c] = t(a[0,c]) + t(a[1,c]) ..."""


def _sq_dev(v: str, mean_at: str, tag: str) -> tuple[str, str]:
    """IR of the term `(v - mean[mean_at])^2` (the mean loaded here unless `mean_at` is empty: already in %m)."""
    load = ""
    if mean_at:
        load = (
            f"  %pm{tag} = getelementptr inbounds {{t}}, ptr %mean, i64 {mean_at}\n"
            f"  %m{tag} = load {{t}}, ptr %pm{tag}\n"
        )
    m = f"%m{tag}" if mean_at else "%m"
    return load + f"  %d{tag} = fsub {{t}} {v}, {m}\n  %q{tag} = fmul {{t}} %d{tag}, %d{tag}\n", f"%q{tag}"


def _module_template() -> str:
    """The folds (`{t}`: the LLVM float type): plain sums, and sums of squared deviations from a per-row or
    per-column mean (var/stddev), for rows and for columns."""
    mean = ", ptr noalias %mean"
    row_mean = "  %pm = getelementptr inbounds {t}, ptr %mean, i64 %r\n  %m = load {t}, ptr %pm\n"
    first_sq, first = _sq_dev("%v0", "", "0")
    term_sq, value = _sq_dev("%v", "", "")
    init_sq, init = _sq_dev("%v", "%c", "i")
    cell_sq, cell = _sq_dev("%vv", "%cc", "c")
    return "".join(
        (
            _ROWS.format(name="rows", params="", row_setup="", first_term="", first="%v0", term="", value="%v"),
            _ROWS.format(
                name="sqdevrows",
                params=mean,
                row_setup=row_mean,
                first_term=first_sq,
                first=first,
                term=term_sq,
                value=value,
            ),
            _COLS.format(name="cols", params="", term="", value="%v", cell_term="", cell_value="%vv"),
            _COLS.format(name="sqdevcols", params=mean, term=init_sq, value=init, cell_term=cell_sq, cell_value=cell),
        )
    )


_TEMPLATE = _module_template()

_SIG = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p)
_SQDEV_SIG = ctypes.CFUNCTYPE(
    None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p
)
_KINDS = {"rows": _SIG, "cols": _SIG, "sqdevrows": _SQDEV_SIG, "sqdevcols": _SQDEV_SIG}
_LLVM_TYPES = {np.dtype(np.float64): "double", np.dtype(np.float32): "float"}


def _compile() -> dict[tuple[str, str], object]:
    """Build the module once per process (~60 ms at O3 on a quiet machine the first time on a host, then ~1 ms from
    the cache folder) into the runtime's one llvmlite engine
    (`runtime.native_code`, which the JIT's kernels share; llvmlite is imported only then)."""
    names = [f"{kind}_{t}" for kind in _KINDS for t in _LLVM_TYPES.values()]
    ir_text = "".join(_TEMPLATE.format(t=t) for t in _LLVM_TYPES.values())
    addresses = ir_functions(ir_text, names)
    return {(kind, t): _KINDS[kind](addresses[f"{kind}_{t}"]) for kind in _KINDS for t in _LLVM_TYPES.values()}  # type: ignore[misc]


LOOPS: BuiltOnce[dict[tuple[str, str], object]] = BuiltOnce(_compile)
"""The folds, built once per process."""


def _function(kind: str, dt: np.dtype):
    return LOOPS.get()[(kind, _LLVM_TYPES[dt])]


def applies(A: np.ndarray, first_build: bool = True) -> bool:
    """True if `A` is a float matrix large enough for the native folds and they are built, or `A` is large
    enough (`MIN_FIRST_CELLS`) to pay for building them now. `first_build=False`: never build them inside the
    kernel -- for a fold whose numpy path runs at the same speed and gives the same bits (column sums:
    `agg._ordered_sum`), building them there is pure cost (a 200,000 x 50 column slice: 0.34 s against ~5 ms).
    A process that loaded llvmlite anyway (a JIT kernel) builds them in the background for its later folds: in
    the foreground a first build costs ~60 ms on a quiet machine and 0.27-0.5 s beside a cold run's JIT thread
    (`mean_col` of 10,000 x 50 in lmDS's first run), where numpy's fold takes ~1 ms."""
    if A.dtype not in _LLVM_TYPES or A.size < MIN_NATIVE_CELLS:
        return False
    if LOOPS.built:
        return True
    if first_build and A.size >= MIN_FIRST_CELLS:
        return True
    if "llvmlite.binding" in sys.modules:
        LOOPS.build_in_background()
    return False


def rows_of(A: np.ndarray) -> tuple[np.ndarray, int]:
    """`A` and its row stride in elements: a view of contiguous rows at any row distance (a column slice of a wider
    matrix, DAPHNE's `X[, a:b]` view) is read in place, any other layout is copied once."""
    item = A.itemsize
    if A.ndim == 2 and A.shape[0] > 0 and (A.shape[1] <= 1 or A.strides[1] == item):
        if A.shape[0] == 1 or (A.strides[0] >= item * A.shape[1] and A.strides[0] % item == 0):
            return A, (A.strides[0] // item if A.shape[0] > 1 else A.shape[1])
    A = np.ascontiguousarray(A)
    return A, A.shape[1]


def fold_rows(A: np.ndarray) -> np.ndarray:
    """Per row of the 2-D float matrix `A` (at least one column): `((a0 + a1) + a2) + ...`, a 1-D array."""
    A, ld = rows_of(A)
    out = np.empty(A.shape[0], dtype=A.dtype)
    _function("rows", A.dtype)(A.ctypes.data, A.shape[0], A.shape[1], ld, out.ctypes.data)
    return out


def fold_cols(A: np.ndarray) -> np.ndarray:
    """Per column of the 2-D float matrix `A` (at least one row): the rows added in order, a 1-D array."""
    A, ld = rows_of(A)
    out = np.empty(A.shape[1], dtype=A.dtype)
    _function("cols", A.dtype)(A.ctypes.data, A.shape[0], A.shape[1], ld, out.ctypes.data)
    return out


def fold_squared_deviations(A: np.ndarray, mean: np.ndarray, axis: int) -> np.ndarray:
    """Per column (axis 0) or row (axis 1) of the 2-D float matrix `A` (non-empty along `axis`): the fold of
    `(a - mean) * (a - mean)` from its first cell, `mean` holding one value per column/row -- what var and stddev
    sum, without the two matrices `A - mean` and its square (numpy's way: a pass and a fresh allocation each; on
    100k x 50 the column statistics of a scale-and-shift take 3x less time). Same operations in the same order as
    `_stat`'s numpy path, so the same bits."""
    A, ld = rows_of(A)
    mean = np.ascontiguousarray(mean, dtype=A.dtype)
    out = np.empty(A.shape[1 - axis], dtype=A.dtype)
    kind = "sqdevcols" if axis == 0 else "sqdevrows"
    _function(kind, A.dtype)(A.ctypes.data, A.shape[0], A.shape[1], ld, mean.ctypes.data, out.ctypes.data)
    return out


def fold_all(A: np.ndarray):
    """All cells of the float matrix `A` in row-major order, starting from 0 like `AggAll` (never -0)."""
    flat = np.ascontiguousarray(A).reshape(1, -1)
    s = fold_rows(flat)[0]
    return s + A.dtype.type(0) if s == 0 else s
