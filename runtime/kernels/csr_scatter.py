"""`t(G) @ x` of a CSR matrix G and a dense f64 column vector x as one native scatter over G's rows.

PageRank's power iteration (`t(G) @ (w * p)`, bench/scripts/lib/graph.daph) spends ~80 % of its time in this
product. scipy computes it with the CSC kernel on G's arrays (`csc_matvec`: for each row i of G, in order,
`y[k] += G[i, k] * x[i]` for each stored k of the row): what `matmul` with `transa` computes, and numpy-based code
too. The loop here adds the same terms in the same order, so every result element is the
same sequential sum, bit for bit: a row's terms touch distinct elements (canonical CSR: no duplicate columns), and
each element receives its terms from the rows in ascending order, starting from +0.0 like scipy's zeroed output.
No transposed copy is built (on this project's VM, 5 MB of fresh memory for a 0.4 M-edge graph's CSR transpose
cost 8-16 ms of first-touch page faults, more than 30 iterations saved with it, even split over two threads).

For a graph whose stored values are all 1.0 (an adjacency matrix: `runtime.vectorized.kernel.all_ones`, computed
once per matrix) the loop does not read the values, since `1.0 * x[i]` is `x[i]` exactly (NaN, infinities and -0.0
included): 1.11-1.18x faster than scipy's loop for a 50 k-vertex, 0.42 M-edge graph (480-490 against 540-580 us
CPU, one thread, same process, interleaved, on a loaded machine; no 8-byte value per edge read). Weighted graphs run at
scipy's speed (1.00-1.03x).

The loops are built once per process into the runtime's llvmlite engine (`runtime.native_code`; ~60 ms the first
time on a host, then ~1 ms from the cache folder, plus loading llvmlite, ~25 ms and ~46 MiB): in the background on
the first large product of a process that loaded llvmlite anyway (a JIT-compiled kernel's; `applies`), `matmul`
(scipy) computing the products meanwhile -- the same bits either way, so a result never depends on when the build
finished. The warm-up does not build them for every program that calls `matmul_transposed_csr`: PageRank at 50 k
vertices (30 products) then ran its kernel ~1.5 ms faster but its whole process ~20 ms slower (0.300 against 0.280
s wall, median of 12, and 118 against 72 MiB peak: llvmlite loaded for nothing else).
"""

from __future__ import annotations

import ctypes
import sys

import numpy as np

from daphnec.runtime.kernels.matmul import matmul
from daphnec.runtime.memory import check_alloc
from daphnec.runtime.native_code import CSR_INDEX_TYPES, BuiltOnce, csr_loop_ir, ir_functions

MIN_NNZ = 1 << 15
"""Below this many stored values scipy's call is as fast (the product takes microseconds either way)."""

_LOOP = """
define void @csr_t_matvec_{kind}_{it}(ptr noalias %data, ptr noalias %indices, ptr noalias %indptr,
                                      ptr noalias %x, i64 %r0, i64 %r1, ptr noalias %out) {{
entry:
  %any = icmp slt i64 %r0, %r1
  br i1 %any, label %row, label %done
row:
  %r = phi i64 [%r0, %entry], [%rn, %row_end]
  %pb = getelementptr inbounds {it}, ptr %indptr, i64 %r
  %b0 = load {it}, ptr %pb
  %rn = add nuw nsw i64 %r, 1
  %pe = getelementptr inbounds {it}, ptr %indptr, i64 %rn
  %e0 = load {it}, ptr %pe
  %b = sext {it} %b0 to i64
  %e = sext {it} %e0 to i64
  %px = getelementptr inbounds double, ptr %x, i64 %r
  %xv = load double, ptr %px
  %nonempty = icmp slt i64 %b, %e
  br i1 %nonempty, label %cell, label %row_end
cell:
  %j = phi i64 [%b, %row], [%jn, %cell]
  %pi = getelementptr inbounds {it}, ptr %indices, i64 %j
  %k0 = load {it}, ptr %pi
  %k = sext {it} %k0 to i64
{term}  %po = getelementptr inbounds double, ptr %out, i64 %k
  %o = load double, ptr %po
  %o1 = fadd double %o, %t
  store double %o1, ptr %po
  %jn = add nsw i64 %j, 1
  %more = icmp slt i64 %jn, %e
  br i1 %more, label %cell, label %row_end
row_end:
  %rmore = icmp slt i64 %rn, %r1
  br i1 %rmore, label %row, label %done
done:
  ret void
}}
"""
"""`out[k] += data[j] * x[r]` (`values`) or `out[k] += x[r]` (`ones`) for the stored cells j of rows r0..r1-1."""

_TERMS = {
    "values": "  %pd = getelementptr inbounds double, ptr %data, i64 %j\n  %dv = load double, ptr %pd\n"
    "  %t = fmul double %dv, %xv\n",
    "ones": "  %t = bitcast double %xv to double\n",  # x[r] itself (a no-op cast names it %t)
}

_P, _I = ctypes.c_void_p, ctypes.c_int64
_SIG = ctypes.CFUNCTYPE(None, _P, _P, _P, _P, _I, _I, _P)


def _build() -> dict[tuple[str, str], object]:
    """The four loops (object code cached per host, `runtime.native_code`). `all_ones`'s module is imported here
    too (~1 ms, on the build's thread), so that the first native product does not import it."""
    import daphnec.runtime.vectorized.kernel  # noqa: F401

    keys = [(kind, it) for kind in _TERMS for it in CSR_INDEX_TYPES.values()]
    text = "".join(csr_loop_ir(_LOOP, it, kind=k, term=_TERMS[k]) for k, it in keys)
    addr = ir_functions(text, [f"csr_t_matvec_{k}_{it}" for k, it in keys])
    return {(k, it): _SIG(addr[f"csr_t_matvec_{k}_{it}"]) for k, it in keys}  # type: ignore[misc]


LOOPS: BuiltOnce[dict[tuple[str, str], object]] = BuiltOnce(_build)
"""The native loops, built once per process."""


def applies(G: object, x: object) -> bool:
    """Whether `transposed_matvec(G, x)` runs the native loop: a canonical f64 CSR matrix of at least `MIN_NNZ`
    stored values, a C-contiguous f64 column vector of its row count, and the loops built. A large product whose
    loops are not built yet starts their build in the background if llvmlite is loaded anyway (scipy computes it
    meanwhile); otherwise scipy's product runs (see the module docstring)."""
    if getattr(G, "format", None) != "csr" or type(x) is not np.ndarray:
        return False
    if G.dtype != np.float64 or x.dtype != np.float64 or x.ndim != 2 or x.shape != (G.shape[0], 1):  # type: ignore[attr-defined]
        return False
    if G.nnz < MIN_NNZ or not G.has_canonical_format or G.indices.dtype.name not in CSR_INDEX_TYPES:  # type: ignore[attr-defined]
        return False
    if G.indptr.dtype != G.indices.dtype or not x.flags.c_contiguous:  # type: ignore[attr-defined]
        return False
    if LOOPS.built:
        return True
    if "llvmlite.binding" in sys.modules:  # loading llvmlite for one product would cost more than it saves
        LOOPS.build_in_background()
    return False


def transposed_matvec(G, x: np.ndarray) -> np.ndarray:
    """`t(G) @ x` for the operands `applies` accepted: an n x 1 f64 matrix, the bits of scipy's `G.T @ x`."""
    from daphnec.runtime.vectorized.kernel import all_ones

    kind = "ones" if all_ones(G) else "values"
    out = np.zeros((G.shape[1], 1))
    fn = LOOPS.get()[(kind, CSR_INDEX_TYPES[G.indices.dtype.name])]
    fn(G.data.ctypes.data, G.indices.ctypes.data, G.indptr.ctypes.data, x.ctypes.data, 0, G.shape[0], out.ctypes.data)  # type: ignore[operator]
    return out


def matmul_transposed_csr(A, B, vt: str, transa: bool = False, transb: bool = False):
    """The kernel of a product the compiler typed `t(G) @ X` with a CSR `G` (compiler/selection/matrix.py): the
    native scatter where it applies, else `matmul` (which also checks the shapes and reports DAPHNE's errors)."""
    if transa and not transb and vt == "f64" and applies(A, B):
        check_alloc("@", A.shape[1], 1, vt, "result")
        return transposed_matvec(A, B)
    return matmul(A, B, vt, transa, transb)
