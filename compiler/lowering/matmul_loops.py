"""The loop nest of a native matrix product (`--codegen`): scf + arith + memref over flat row-major buffers.

    i64 @mm_<hash>(index %m, i64 %k, i64 %n, memref<?xT> %A, memref<?xT> %B, memref<?xT> %C)

computes C (m x n) = op(A) @ op(B), op(X) = X or its transpose (`transa`/`transb`: A is then stored k x m, B
n x k), for any sizes (the sizes are run-time values; tiles and strips that do not divide them get remainder
loops). Three schedules, after DAPHNE's MatMulOp lowering options (doc/Codegen.md; `--matmul-*`):

- `ijk` (default): for each cell a dot product over p, `vectors` groups of `width` neighbouring cells of a row at
  once (`--matmul-vec-size-bits`, `--matmul-unroll-factor`), their accumulators carried in registers;
- `ikj` (`--matmul-invert-loops`): the two inner loops inverted, so the innermost loop streams a row of B into a
  row of C, a strip of `vectors` x `width` cells per step;
- `tiled` (`--matmul-tile`, `--matmul-fixed-tile-sizes`): the BLIS order of cache tiles (NC columns, KC of the
  inner dimension, MC rows), inside them register blocks of `jam` rows x `vectors` groups whose accumulators stay
  in registers across the tile's KC steps (unroll-and-jam).

A group of `width` > 1 cells is one value of `vector<width x T>` (`vector.load`/`vector.store` of neighbouring
cells, `vector.broadcast` of an element of A; `convert-to-llvm` makes them LLVM vector loads, stores and
shuffles); columns left over by whole strips, and a transposed B (whose row cells are not neighbours), use
scalars.

Every schedule adds the products of a cell in the same order, p = 0, 1, ..., k-1, starting from 0, with separate
multiply and add (no reassociation, no contraction): the schedules give bit-identical results, and they differ
from BLAS (which blocks the sum differently) only by rounding.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.dialects import arith, func, scf, vector
from xdsl.dialects.builtin import IndexType, UnitAttr, VectorType, i64
from xdsl.ir import Attribute, Block, Region, SSAValue

from daphnec.compiler.lowering import abi
from daphnec.compiler.lowering import elementwise as ew
from daphnec.dialects.attr_names import ABI_ATTR, TASK_KERNEL_ATTR

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
    width: int = 1
    """Cells per vector (1: scalars)."""
    vectors: int = 1
    """Vectors per innermost step (the unroll factor; register-block columns / width when tiled)."""
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
    _Gen(spec, entry).body()
    f = func.FuncOp(spec.name, (list(entry.arg_types), [i64]), Region(entry))
    f.attributes[TASK_KERNEL_ATTR] = UnitAttr()
    f.attributes[ABI_ATTR] = abi.encode(params)
    return f


Body = Callable[[SSAValue, list[SSAValue]], list[SSAValue]]


class _Gen:
    def __init__(self, spec: MatMulKernel, entry: Block):
        self.spec, self.vt, sch = spec, spec.vt, spec.schedule
        # a transposed B has no neighbouring cells in a row of C's columns: scalars, as many per step
        self.width, self.vectors = (1, sch.width * sch.vectors) if spec.transb else (sch.width, sch.vectors)
        self.b = ew.Builder(entry)
        m, k, n, self.A, self.B, self.C = entry.args
        self.m = m
        self.k = self.b.add(arith.IndexCastOp(k, IndexType()))
        self.n = self.b.add(arith.IndexCastOp(n, IndexType()))

    # -- indices -------------------------------------------------------------------------------------------------------

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

    def offsets(self, base: SSAValue, count: int, step: int = 1) -> list[SSAValue]:
        """base, base + step, ...: neighbouring cells as one base plus constants (consecutive addresses)."""
        return [self.plus(base, s * step) if s else base for s in range(count)]

    # -- elements and vectors --------------------------------------------------------------------------------------

    def vtype(self, width: int) -> Attribute:
        t = ew.ir_type(self.vt)
        return t if width == 1 else VectorType(t, [width])

    def load(self, ref: SSAValue, idx: SSAValue, width: int) -> SSAValue:
        if width == 1:
            return ew.load(self.b, ref, idx, self.vt)
        return self.b.add(vector.LoadOp(ref, [idx], self.vtype(width)))  # type: ignore[arg-type]

    def store(self, value: SSAValue, ref: SSAValue, idx: SSAValue, width: int) -> None:
        if width == 1:
            ew.store(self.b, value, ref, idx, self.vt)
        else:
            self.b.emit(vector.StoreOp(value, ref, [idx]))

    def splat(self, x: SSAValue, width: int) -> SSAValue:
        return x if width == 1 else self.b.add(vector.BroadcastOp(x, self.vtype(width)))  # type: ignore[arg-type]

    def fma(self, acc: SSAValue, x: SSAValue, y: SSAValue) -> SSAValue:
        """acc + x * y, rounded twice (no contraction: every schedule rounds alike), lane by lane."""
        if ew.is_float(self.vt):
            return self.b.add(arith.AddfOp(acc, self.b.add(arith.MulfOp(x, y))))
        return self.b.add(arith.AddiOp(acc, self.b.add(arith.MuliOp(x, y))))

    def a_rows(self, i: SSAValue, rows: int, p: SSAValue, width: int) -> list[SSAValue]:
        """A[i + r, p] for r < rows, each broadcast to `width` lanes (A is stored k x m when `transa`)."""
        if self.spec.transa:
            idx = self.offsets(self.plus(self.mul(p, self.m), i), rows)
        else:
            idx = [self.plus(self.mul(x, self.k), p) for x in self.offsets(i, rows)]
        return [self.splat(self.load(self.A, x, 1), width) for x in idx]

    def b_groups(self, p: SSAValue, j: SSAValue, groups: int, width: int) -> list[SSAValue]:
        """B[p, j + g * width ...] for g < groups (B is stored n x k when `transb`: then width is 1)."""
        if self.spec.transb:
            idx = [self.plus(self.mul(y, self.k), p) for y in self.offsets(j, groups)]
        else:
            idx = self.offsets(self.plus(self.mul(p, self.n), j), groups, width)
        return [self.load(self.B, x, width) for x in idx]

    def c_groups(self, i: SSAValue, rows: int, j: SSAValue, groups: int, width: int) -> list[SSAValue]:
        """Where the groups of C[i + r, j ...] start, row by row."""
        starts = [self.plus(self.mul(x, self.n), j) for x in self.offsets(i, rows)]
        return [c for s in starts for c in self.offsets(s, groups, width)]

    def loop(self, lo: SSAValue, hi: SSAValue, step: int, body: Body, carried: list[SSAValue] | None = None) -> list:
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
            self.loop(zero, self.m, 1, lambda i, _: self.strips(i, 1, zero, self.n, zero, self.k, False))
        else:
            self.zero_c()
            if sch.order == "ikj":
                self.loop(zero, self.m, 1, lambda i, _: self.ikj_row(i))
            else:
                self.tiled()
        self.b.emit(func.ReturnOp(self.b.const(i64, 0)))

    def zero_c(self) -> None:
        z = self.b.vconst(self.vt, 0)

        def clear(t: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
            ew.store(self.b, z, self.C, t, self.vt)
            return []

        self.loop(self.b.index(0), self.mul(self.m, self.n), 1, clear)

    def ikj_row(self, i: SSAValue) -> list[SSAValue]:
        """Row i of C: for each p, C[i, :] += A[i, p] * B[p, :], strip by strip, then the leftover columns."""
        zero, w, v = self.b.index(0), self.width, self.vectors

        def step(p: SSAValue, _: list[SSAValue]) -> list[SSAValue]:
            end = self.split(zero, self.n, w * v)
            for lo, hi, width, groups in [(zero, end, w, v)] + ([(end, self.n, 1, 1)] if w * v > 1 else []):

                def cells(j: SSAValue, _: list[SSAValue], width: int = width, groups: int = groups) -> list:
                    a = self.a_rows(i, 1, p, width)[0]
                    at = self.c_groups(i, 1, j, groups, width)
                    olds = [self.load(self.C, x, width) for x in at]
                    for x, old, bv in zip(at, olds, self.b_groups(p, j, groups, width)):
                        self.store(self.fma(old, a, bv), self.C, x, width)
                    return []

                self.loop(lo, hi, width * groups, cells)
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
                    self.loop(i0, iend, jam, lambda i, _: self.strips(i, jam, j0, jhi, p0, phi, True))
                    if jam > 1:
                        self.loop(iend, ihi, 1, lambda i, _: self.strips(i, 1, j0, jhi, p0, phi, True))
                    return []

                return self.loop(zero, self.m, mc, rows)

            return self.loop(zero, self.k, kc, inner)

        self.loop(zero, self.n, nc, cols)

    def strips(
        self, i: SSAValue, rows: int, jlo: SSAValue, jhi: SSAValue, plo: SSAValue, phi: SSAValue, acc: bool
    ) -> list[SSAValue]:
        """Register blocks of `rows` x `vectors` groups over columns [jlo, jhi), then one column at a time for the
        rest; each block adds the products of p in [plo, phi) to C (`acc`) or to zero."""
        w, v = self.width, self.vectors
        jend = self.split(jlo, jhi, w * v)
        self.loop(jlo, jend, w * v, lambda j, _: self.block(i, rows, j, v, w, plo, phi, acc))
        if w * v > 1:
            self.loop(jend, jhi, 1, lambda j, _: self.block(i, rows, j, 1, 1, plo, phi, acc))
        return []

    def block(
        self, i: SSAValue, rows: int, j: SSAValue, groups: int, width: int, plo: SSAValue, phi: SSAValue, acc: bool
    ) -> list[SSAValue]:
        """One register block: rows x groups accumulators carried through the p loop, then stored."""
        at = self.c_groups(i, rows, j, groups, width)
        zero = self.splat(self.b.vconst(self.vt, 0), width) if not acc else None
        init = [self.load(self.C, x, width) if acc else zero for x in at]

        def step(p: SSAValue, accs: list[SSAValue]) -> list[SSAValue]:
            av = self.a_rows(i, rows, p, width)
            bv = self.b_groups(p, j, groups, width)
            return [self.fma(accs[r * groups + g], av[r], bv[g]) for r in range(rows) for g in range(groups)]

        out = self.loop(plo, phi, 1, step, init)  # type: ignore[arg-type]
        for x, val in zip(at, out):
            self.store(val, self.C, x, width)
        return []
