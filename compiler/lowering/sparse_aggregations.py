"""Aggregations of CSR values inside a task kernel: loops over stored cells only (`G * t(c)`, `sum(G)`).

Which semantics applies depends on the static type of the aggregated value, because the runtime object matches
the type (`compiler.selection.representations`):

- typed `rep[sparse]`: `agg._csr_aggregate`. Sums fold the stored values of a row from its first; min/max skip
  NaNs, meet the implicit zeros with `np.minimum`/`np.maximum` (ties give the zero), and a NaN stored in column 0
  wins. (Which of +0 and -0 numpy's SIMD `reduceat` keeps among equal stored values is unspecified; the kernel
  keeps the last, like numpy's scalar loop.)
- typed dense (the CSR product was densified, implicit cells are +0.0): the dense folds of `agg.py` over every
  cell in row-major order. Only the *first* implicit zero can change a fold (a +0.0 after it never wins a tie
  and turns no -0.0 sum back), so the kernel folds one +0.0 where the first gap in the column indices is, and
  starts a row min/max from the value of column 0 (stored or +0.0), which keeps the NaN-first rule.

Integer aggregates have no ties to worry about: stored values, then the zero if any cell is implicit.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith
from xdsl.dialects.builtin import i1
from xdsl.ir import SSAValue

from daphnec.compiler.lowering import elementwise as ew
from daphnec.dialects import ops
from daphnec.dialects.types import MatrixType


def _csr_typed(v: SSAValue) -> bool:
    return isinstance(v.type, MatrixType) and v.type.is_sparse


class SparseAggregations:
    """Mixin of the kernel generator (`lower_pipeline_to_loops._KernelGen`) for aggregations of sparse values."""

    # -- row aggregations ------------------------------------------------------------------------------------------

    def _sparse_row_agg(self, op: ops.AggOp, k: object, vout: str, r: SSAValue) -> SSAValue:
        b = self.b  # type: ignore[attr-defined]
        src = self._src(k)  # type: ignore[attr-defined]
        start = self._indptr(src, r)  # type: ignore[attr-defined]
        end = self._indptr(src, b.add(arith.AddiOp(r, b.index(1))))  # type: ignore[attr-defined]
        agg = "sum" if op.KIND == "mean" else op.KIND
        cols = k.cols  # type: ignore[attr-defined]

        def x_of(kk: SSAValue) -> SSAValue:
            x = self.elem(op.arg, self._sparse_pos(src, kk))  # type: ignore[attr-defined]
            return ew.cast(b, x, k.vt, vout)  # type: ignore[attr-defined]

        if not ew.is_float(vout):
            acc = self._int_stored(agg, vout, start, end, x_of, b.index(cols))
        elif _csr_typed(op.arg):
            acc = self._csr_row(agg, vout, cols, src, start, end, x_of)
        else:
            acc = self._dense_row(agg, vout, cols, src, start, end, x_of)
        return self._mean(op, vout, acc, cols)  # type: ignore[attr-defined]

    def _int_stored(
        self, agg: str, vt: str, start: SSAValue, end: SSAValue, x_of: Callable[[SSAValue], SSAValue], cells: SSAValue
    ) -> SSAValue:
        """Integer (and bool) aggregate of stored values, then of one zero if fewer than `cells` are stored."""
        b = self.b  # type: ignore[attr-defined]
        init = b.vconst(vt, ew.neutral(vt, agg))
        acc = self.loop(start, end, [init], lambda kk, a: [ew.fold(b, agg, vt, a[0], x_of(kk))])[0]  # type: ignore[attr-defined]
        if agg == "sum":
            return acc
        count = b.add(arith.SubiOp(end, start))
        has_zeros = b.add(arith.CmpiOp(count, cells, "slt"))
        return ew.select(b, has_zeros, ew.fold(b, agg, vt, acc, b.vconst(vt, 0)), acc)

    def _csr_row(
        self,
        agg: str,
        vt: str,
        cols: int,
        src: object,
        start: SSAValue,
        end: SSAValue,
        x_of: Callable[[SSAValue], SSAValue],
    ) -> SSAValue:
        b = self.b  # type: ignore[attr-defined]
        if agg == "sum":  # from -0.0: equals the fold from the first stored value; an empty row is +0.0
            acc = self.loop(
                start,
                end,
                [b.vconst(vt, -0.0)],  # type: ignore[attr-defined]
                lambda kk, a: [ew.fold(b, "sum", vt, a[0], x_of(kk))],
            )[0]
            return ew.select(b, b.add(arith.CmpiOp(start, end, "eq")), b.vconst(vt, 0.0), acc)
        init = b.vconst(vt, ew.neutral(vt, agg))
        acc = self.loop(
            start,
            end,
            [init],  # type: ignore[attr-defined]
            lambda kk, a: [ew.np_fold(b, agg, vt, a[0], self._no_nan(agg, vt, x_of(kk)))],
        )[0]
        has_zeros = b.add(arith.CmpiOp(b.add(arith.SubiOp(end, start)), b.index(cols), "slt"))
        acc = ew.select(b, has_zeros, ew.np_fold(b, agg, vt, acc, b.vconst(vt, 0.0)), acc)
        nonempty = b.add(arith.CmpiOp(start, end, "slt"))
        return self.if_(
            nonempty,
            [ew.ir_type(vt)],  # type: ignore[attr-defined]
            lambda: [self._nan_first(src, start, x_of, acc)],
            [acc],
        )[0]

    def _nan_first(self, src: object, start: SSAValue, x_of: Callable[[SSAValue], SSAValue], acc: SSAValue) -> SSAValue:
        b = self.b  # type: ignore[attr-defined]
        x = x_of(start)
        in_col0 = b.add(arith.CmpiOp(self._col_index(src, start), b.index(0), "eq"))  # type: ignore[attr-defined]
        return ew.select(b, b.add(arith.AndIOp(in_col0, ew.is_nan(b, x))), x, acc)

    def _no_nan(self, agg: str, vt: str, x: SSAValue) -> SSAValue:
        b = self.b  # type: ignore[attr-defined]
        return ew.select(b, ew.is_nan(b, x), b.vconst(vt, ew.neutral(vt, agg)), x)

    def _dense_row(
        self,
        agg: str,
        vt: str,
        cols: int,
        src: object,
        start: SSAValue,
        end: SSAValue,
        x_of: Callable[[SSAValue], SSAValue],
    ) -> SSAValue:
        """The dense row fold over stored cells plus the first implicit +0.0 (see the module docstring)."""
        b = self.b  # type: ignore[attr-defined]
        zero = b.vconst(vt, 0.0)
        if agg == "sum":
            init, gap_done = b.vconst(vt, -0.0), b.const(i1, 0)
        else:  # a min/max starts from column 0: stored there, or an implicit +0.0 (then that zero is the gap)
            nonempty = b.add(arith.CmpiOp(start, end, "slt"))
            first, col0 = self.if_(
                nonempty,
                [ew.ir_type(vt), i1],
                lambda: self._col0(src, start, x_of, zero),  # type: ignore[attr-defined]
                [zero, b.const(i1, 0)],
            )
            init, gap_done = first, b.add(arith.XOrIOp(col0, b.const(i1, 1)))
        acc, expect, gap_done = self._gap_loop(agg, vt, src, start, end, x_of, [init, b.index(0), gap_done])
        return self._tail_gap(agg, vt, acc, expect, gap_done, cols)[0]

    def _col0(
        self, src: object, start: SSAValue, x_of: Callable[[SSAValue], SSAValue], zero: SSAValue
    ) -> list[SSAValue]:
        b = self.b  # type: ignore[attr-defined]
        in_col0 = b.add(arith.CmpiOp(self._col_index(src, start), b.index(0), "eq"))  # type: ignore[attr-defined]
        return [ew.select(b, in_col0, x_of(start), zero), in_col0]

    def _gap_loop(
        self,
        agg: str,
        vt: str,
        src: object,
        start: SSAValue,
        end: SSAValue,
        x_of: Callable[[SSAValue], SSAValue],
        init: list[SSAValue],
    ) -> list[SSAValue]:
        """Fold stored cells in column order; before the first cell past a gap, fold the gap's +0.0 once.
        Carries (acc, next expected column, gap folded)."""
        b = self.b  # type: ignore[attr-defined]

        def step(kk: SSAValue, a: list[SSAValue]) -> list[SSAValue]:
            acc, expect, done = a
            j = self._col_index(src, kk)  # type: ignore[attr-defined]
            gap = b.add(arith.AndIOp(b.add(arith.XOrIOp(done, b.const(i1, 1))), b.add(arith.CmpiOp(j, expect, "sgt"))))
            acc = ew.select(b, gap, ew.fold(b, agg, vt, acc, b.vconst(vt, 0.0)), acc)
            acc = ew.fold(b, agg, vt, acc, x_of(kk))
            return [acc, b.add(arith.AddiOp(j, b.index(1))), b.add(arith.OrIOp(done, gap))]

        return self.loop(start, end, init, step)  # type: ignore[attr-defined]

    def _tail_gap(
        self, agg: str, vt: str, acc: SSAValue, expect: SSAValue, done: SSAValue, cols: int
    ) -> list[SSAValue]:
        """The gap after the last stored cell of a row (if no earlier gap was folded)."""
        b = self.b  # type: ignore[attr-defined]
        tail = b.add(
            arith.AndIOp(b.add(arith.XOrIOp(done, b.const(i1, 1))), b.add(arith.CmpiOp(expect, b.index(cols), "slt")))
        )
        acc = ew.select(b, tail, ew.fold(b, agg, vt, acc, b.vconst(vt, 0.0)), acc)
        return [acc, b.add(arith.OrIOp(done, tail))]

    # -- full aggregations -----------------------------------------------------------------------------------------

    def _sparse_full(self, v: SSAValue, o: object) -> SSAValue:
        """A full aggregate of a CSR value over the batch's stored cells (+ the implicit zeros, see above)."""
        b = self.b  # type: ignore[attr-defined]
        arg = self._arg(v)  # type: ignore[attr-defined]
        k = self.kinds[arg]  # type: ignore[attr-defined]
        src = self._src(k)  # type: ignore[attr-defined]
        agg, vt = o.agg, o.vt  # type: ignore[attr-defined]

        def x_of(kk: SSAValue) -> SSAValue:
            return ew.cast(b, self.elem(arg, self._sparse_pos(src, kk)), k.vt, vt)  # type: ignore[attr-defined]

        start, end = self._indptr(src, b.index(0)), self._indptr(src, self.n)  # type: ignore[attr-defined]
        cells = b.add(arith.MuliOp(self.n, b.index(k.cols)))  # type: ignore[attr-defined]
        if agg == "sum" and ew.is_float(vt):  # the stored values alone: an added zero changes no sum but -0
            init = b.vconst(vt, 0.0)
            return self.loop(
                start,
                end,
                [init],  # type: ignore[attr-defined]
                lambda kk, a: [ew.fold(b, "sum", vt, a[0], x_of(kk), reassoc=vt == "f64")],
            )[0]
        if not ew.is_float(vt):
            return self._int_stored(agg, vt, start, end, x_of, cells)
        if _csr_typed(arg):
            acc = self.loop(
                start,
                end,
                [b.vconst(vt, ew.neutral(vt, agg))],  # type: ignore[attr-defined]
                lambda kk, a: [ew.fold(b, agg, vt, a[0], x_of(kk))],
            )[0]
            has_zeros = b.add(arith.CmpiOp(b.add(arith.SubiOp(end, start)), cells, "slt"))
            return ew.select(b, has_zeros, ew.np_fold(b, agg, vt, acc, b.vconst(vt, 0.0)), acc)
        return self._dense_full_minmax(agg, vt, k.cols, src, x_of)

    def _dense_full_minmax(
        self, agg: str, vt: str, cols: int, src: object, x_of: Callable[[SSAValue], SSAValue]
    ) -> SSAValue:
        """Row-major fold from the neutral element (NaNs never win), the first implicit zero folded once."""
        b = self.b  # type: ignore[attr-defined]

        def row(r: SSAValue, a: list[SSAValue]) -> list[SSAValue]:
            start = self._indptr(src, r)  # type: ignore[attr-defined]
            end = self._indptr(src, b.add(arith.AddiOp(r, b.index(1))))
            acc, expect, done = self._gap_loop(agg, vt, src, start, end, x_of, [a[0], b.index(0), a[1]])
            return self._tail_gap(agg, vt, acc, expect, done, cols)

        init = [b.vconst(vt, ew.neutral(vt, agg)), b.const(i1, 0)]
        return self.loop(b.index(0), self.n, init, row)[0]  # type: ignore[attr-defined]
