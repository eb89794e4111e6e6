"""The loop nest of a native matrix product (`--codegen`): scf + arith + memref over flat row-major buffers.

    i64 @mm_<hash>(index %m, i64 %k, i64 %n, memref<?xT> %A, memref<?xT> %B, memref<?xT> %C)

computes C (m x n) = op(A) @ op(B), op(X) = X or its transpose (`transa`/`transb`: A is then stored k x m, B
n x k), for any sizes (the sizes are run-time values; tiles and strips that do not divide them get remainder
loops). Three schedules, after DAPHNE's MatMulOp lowering options (doc/Codegen.md; `--matmul-*`):

- `ijk` (default): for each cell a dot product over p, `strip` neighbouring cells of a row at once (the vector
  width times the unroll factor), their accumulators carried in registers;
- `ikj` (`--matmul-invert-loops`): the two inner loops inverted, so the innermost loop streams a row of B into a
  row of C;
- `tiled` (`--matmul-tile`, `--matmul-fixed-tile-sizes`): the BLIS order of cache tiles (NC columns, KC of the
  inner dimension, MC rows), inside them register blocks of `jam` rows x `strip` columns whose accumulators stay
  in registers across the tile's KC steps (unroll-and-jam).

Every schedule adds the products of a cell in the same order, p = 0, 1, ..., k-1, starting from 0, with separate
multiply and add (no reassociation, no contraction): the schedules give bit-identical results, and they differ
from BLAS (which blocks the sum differently) only by rounding.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IndexType, UnitAttr, i64
from xdsl.ir import Block, Region, SSAValue

from daphnec.compiler.lowering import abi
from daphnec.compiler.lowering import elementwise as ew

PARAMS = (
    abi.Param(abi.ArgKind.ROWS, "index"),
    abi.Param(abi.ArgKind.I64, "si64"),
    abi.Param(abi.ArgKind.I64, "si64"),
)
"""m, k, n; then A, B and C as arrays of the value type (`kernel_params`)."""


def kernel_params(vt: str) -> tuple[abi.Param, ...]:
    """The kernel's parameters by the one calling convention (`abi`)."""
    return (*PARAMS, *(abi.Param(abi.ArgKind.ARRAY, vt) for _ in range(3)))


@dataclass(frozen=True)
class Schedule:
    """How the loop nest is built (see the module docstring)."""

    order: str
    """`ijk`, `ikj` or `tiled`."""
    strip: int = 1
    """Columns of C computed together in the innermost step (vector width x unroll factor)."""
    jam: int = 1
    """Rows of C per register block (tiled only)."""
    tiles: tuple[int, int, int] = (0, 0, 0)
    """MC, NC, KC: rows, columns and inner-dimension steps of a cache tile (tiled only)."""


@dataclass(frozen=True)
class MatMulKernel:
    """One kernel: its symbol, element type, transposed operands and schedule."""

    name: str
    vt: str
    transa: bool
    transb: bool
    schedule: Schedule


def build_matmul(spec: MatMulKernel) -> func.FuncOp:
    """The kernel function (a `daphne.task_kernel`, converted by `convert-to-llvm`)."""
    params = kernel_params(spec.vt)
    entry = Block(arg_types=abi.kernel_types(params))
    g = _Gen(spec, entry)
    g.body()
    f = func.FuncOp(spec.name, (list(entry.arg_types), [i64]), Region(entry))
    f.attributes[abi.TASK_KERNEL_ATTR] = UnitAttr()
    f.attributes[abi.ABI_ATTR] = abi.encode(params)
    return f


class _Gen:
    def __init__(self, spec: MatMulKernel, entry: Block):
        self.spec, self.vt = spec, spec.vt
        self.b = ew.Builder(entry)
        m, k, n, self.A, self.B, self.C = entry.args
        self.m = m
        self.k = self.b.add(arith.IndexCastOp(k, IndexType()))
        self.n = self.b.add(arith.IndexCastOp(n, IndexType()))

    # -- arithmetic on indices and elements ----------------------------------------------------------------------------

    def mul(self, x: SSAValue, y: SSAValue) -> SSAValue:
        return self.b.add(arith.MuliOp(x, y))

    def plus(self, x: SSAValue, y: SSAValue | int) -> SSAValue:
        return self.b.add(arith.AddiOp(x, self.b.index(y) if isinstance(y, int) else y))

    def min(self, x: SSAValue, y: SSAValue) -> SSAValue:
        lt = self.b.add(arith.CmpiOp(x, y, "ult"))
        return self.b.add(arith.SelectOp(lt, x, y))

    def split(self, lo: SSAValue, hi: SSAValue, step: int) -> SSAValue:
        """The end of the part of [lo, hi) that whole steps cover (the rest is the remainder loop's)."""
        if step == 1:
            return hi
        s = self.b.index(step)
        span = self.b.add(arith.SubiOp(hi, lo))
        return self.plus(lo, self.mul(self.b.add(arith.DivUIOp(span, s)), s))

    def fma(self, acc: SSAValue, x: SSAValue, y: SSAValue) -> SSAValue:
        """acc + x * y, rounded twice (no contraction: every schedule rounds alike)."""
        if ew.is_float(self.vt):
            return self.b.add(arith.AddfOp(acc, self.b.add(arith.MulfOp(x, y))))
        return self.b.add(arith.AddiOp(acc, self.b.add(arith.MuliOp(x, y))))

    def a(self, i: SSAValue, p: SSAValue) -> SSAValue:
        idx = self.plus(self.mul(p, self.m), i) if self.spec.transa else self.plus(self.mul(i, self.k), p)
        return ew.load(self.b, self.A, idx, self.vt)

    def bv(self, p: SSAValue, j: SSAValue) -> SSAValue:
        idx = self.plus(self.mul(j, self.k), p) if self.spec.transb else self.plus(self.mul(p, self.n), j)
        return ew.load(self.b, self.B, idx, self.vt)

    def c_at(self, i: SSAValue, j: SSAValue) -> SSAValue:
        return self.plus(self.mul(i, self.n), j)

    def loop(
        self,
        lo: SSAValue,
        hi: SSAValue,
        step: int,
        body: Callable[[SSAValue, list[SSAValue]], list[SSAValue]],
        carried: list[SSAValue] | None = None,
    ) -> list[SSAValue]:
        """`scf.for` from lo to hi by step, carrying values (the accumulators of a register block)."""
        b = self.b
        carried = carried or []
        blk = Block(arg_types=[IndexType(), *(v.type for v in carried)])
        b.push(blk)
        new = body(blk.args[0], list(blk.args[1:]))
        b.emit(scf.YieldOp(*new))
        b.pop()
        loop = scf.ForOp(lo, hi, b.index(step), carried, blk)
        b.emit(loop)
        return list(loop.results)

    # -- the schedules -----------------------------------------------------------------------------------------------

    def body(self) -> None:
        sch = self.spec.schedule
        zero = self.b.index(0)
        if sch.order == "ijk":
            self.loop(zero, self.m, 1, lambda i, _: self.strips(i, 1, zero, self.n, zero, self.k, sch.strip, False))
        elif sch.order == "ikj":
            self.zero_c()
            self.loop(zero, self.m, 1, lambda i, _: self.ikj_row(i))
        else:
            self.zero_c()
            self.tiled()
        self.b.emit(func.ReturnOp(self.b.const(i64, 0)))

    def zero_c(self) -> None:
        total = self.mul(self.m, self.n)
        z = self.b.vconst(self.vt, 0)

        def clear(t: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
            ew.store(self.b, z, self.C, t, self.vt)
            return []

        self.loop(self.b.index(0), total, 1, clear)

    def ikj_row(self, i: SSAValue) -> list[SSAValue]:
        """Row i of C: for each p, C[i, :] += A[i, p] * B[p, :], strip by strip."""
        zero, strip = self.b.index(0), self.spec.schedule.strip

        def step(p: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
            a = self.a(i, p)
            end = self.split(zero, self.n, strip)
            parts = [(zero, end, strip)] + ([(end, self.n, 1)] if strip > 1 else [])
            for lo, hi, w in parts:

                def cells(j: SSAValue, _: list[SSAValue], w: int = w) -> list[SSAValue]:
                    for s in range(w):
                        js = self.plus(j, s) if s else j
                        at = self.c_at(i, js)
                        old = ew.load(self.b, self.C, at, self.vt)
                        ew.store(self.b, self.fma(old, a, self.bv(p, js)), self.C, at, self.vt)
                    return []

                self.loop(lo, hi, w, cells)
            return []

        return self.loop(zero, self.k, 1, step)

    def tiled(self) -> None:
        """Cache tiles in BLIS order (columns, inner dimension, rows), register blocks inside."""
        mc, nc, kc = self.spec.schedule.tiles
        jam, zero = self.spec.schedule.jam, self.b.index(0)

        def cols(j0: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
            jhi = self.min(self.plus(j0, nc), self.n)

            def inner(p0: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
                phi = self.min(self.plus(p0, kc), self.k)

                def rows(i0: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
                    ihi = self.min(self.plus(i0, mc), self.m)
                    iend = self.split(i0, ihi, jam)
                    strip = self.spec.schedule.strip
                    self.loop(i0, iend, jam, lambda i, _: self.strips(i, jam, j0, jhi, p0, phi, strip, True))
                    if jam > 1:
                        self.loop(iend, ihi, 1, lambda i, _: self.strips(i, 1, j0, jhi, p0, phi, strip, True))
                    return []

                return self.loop(zero, self.m, mc, rows)

            return self.loop(zero, self.k, kc, inner)

        self.loop(zero, self.n, nc, cols)

    def strips(
        self, i: SSAValue, rows: int, jlo: SSAValue, jhi: SSAValue, plo: SSAValue, phi: SSAValue, strip: int, acc: bool
    ) -> list[SSAValue]:
        """Register blocks of `rows` x `strip` cells over columns [jlo, jhi), then one column at a time for the
        remainder; each block adds the products of p in [plo, phi) to C (`acc`) or to zero."""
        jend = self.split(jlo, jhi, strip)
        self.loop(jlo, jend, strip, lambda j, _: self.block(i, rows, j, strip, plo, phi, acc))
        if strip > 1:
            self.loop(jend, jhi, 1, lambda j, _: self.block(i, rows, j, 1, plo, phi, acc))
        return []

    def block(
        self, i: SSAValue, rows: int, j: SSAValue, cols: int, plo: SSAValue, phi: SSAValue, acc: bool
    ) -> list[SSAValue]:
        """One register block: rows x cols accumulators carried through the p loop, then stored."""
        b = self.b
        ii = [self.plus(i, r) if r else i for r in range(rows)]
        jj = [self.plus(j, s) if s else j for s in range(cols)]
        cells = [self.c_at(x, y) for x in ii for y in jj]
        init = [ew.load(b, self.C, at, self.vt) if acc else b.vconst(self.vt, 0) for at in cells]

        def step(p: SSAValue, accs: list[SSAValue]) -> list[SSAValue]:
            av = [self.a(x, p) for x in ii]
            bv = [self.bv(p, y) for y in jj]
            return [self.fma(accs[r * cols + s], av[r], bv[s]) for r in range(rows) for s in range(cols)]

        out = self.loop(plo, phi, 1, step, init)
        for at, v in zip(cells, out):
            ew.store(b, v, self.C, at, self.vt)
        return []
