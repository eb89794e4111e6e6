"""`lower-pipeline-to-loops`: each `daphne.vectorizedPipeline` gets a kernel module of task-kernel functions.

For every pipeline that lowers (`kernel_plan`), the pass adds `builtin.module @vp_<hash>` (the hash of the
pipeline's IR) holding one `func.func` per stage, and names the module on the pipeline (`daphne.native_kernel`);
host code finds the compiled kernel by that symbol. A kernel computes one batch of rows, fused: one loop nest reads
every input once and writes every result, with no intermediate matrices. Its parameters follow the calling
convention of `abi` (recorded on the function as `daphne.abi`):

    i64 @vp_<hash>(index %n, <per input>, <per opaque result>, <per output>)   (0, or 1: "rerun the Python body")

- `%n` is the number of rows of the batch; a batch [row_start, row_end) is passed as pointers to its first row
  (C-contiguous row blocks), so the kernel itself always starts at row 0;
- a CSR input's index arrays come as an i32 and an i64 view, and its flags say which is valid (scipy picks the
  index width) and whether every stored value is 1 (a pattern matrix such as a graph: a float kernel then reads
  the constant 1.0 instead of the values, which saves their memory traffic); LLVM unswitches the loops on both;
- an output holds n x C rows, C x n for a transpose (COLS), one cell for a full aggregate, 1 x C for column
  aggregates (the per-batch partial results the executor combines).

Loops: `scf.for %r` over the rows, an inner `scf.for %c` per group of results with the same column count (none
when that count is 1), one `scf.for` per row aggregation, and a loop over stored cells for CSR values. When no
op needs (row, column) coordinates the kernel is a single loop over n * C cells. Full sums of f64 carry
`fastmath<reassoc, nsz>` so LLVM vectorises them (the result then differs from the sequential fold in the last
bits, within 1e-12 relative for data without cancellation), except in an ordered pipeline (`fuse-sums`); every
other reduction is the exact sequential fold.

A pipeline with opaque ops (numpy math, matMul: see `kernel_plan`) gets one kernel per stage, `@vp_<hash>_s<k>`,
which also reads the results of the opaque ops run before it (`memref<?xT>`, n x C) and writes the dense operands
of the next ones; the pipeline names its opaque ops in `daphne.opaque`. Pipelines that do not lower keep their
Python body; the pass records why in a `daphne.native` attribute.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from xdsl.context import Context
from xdsl.dialects import arith, func, math, scf
from xdsl.dialects.builtin import (
    IndexType,
    ModuleOp,
    StringAttr,
    UnitAttr,
    i1,
    i64,
)
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.passes import ModulePass

from daphnec.compiler.lowering import abi
from daphnec.compiler.lowering import elementwise as ew
from daphnec.compiler.lowering.kernel_plan import (
    KernelPlan,
    Kind,
    PipelinePlans,
    Stage,
    Unsupported,
    annotate,
    plan_pipelines,
    stage_params,
)
from daphnec.compiler.lowering.sparse_aggregations import SparseAggregations
from daphnec.dialects import ops
from daphnec.dialects.attr_names import ABI_ATTR, ORDERED_ATTR, TASK_KERNEL_ATTR
from daphnec.dialects.op_kinds import EW_BINARY
from daphnec.dialects.ops_pipeline import VectorizedPipelineOp
from daphnec.dialects.ops_relational import GroupedSumOp
from daphnec.dialects.types import vt_name


class Pos(NamedTuple):
    """Where an element is read: row r, column c (None: column 0 of a 1-column value) and stored cell k."""

    r: SSAValue | None
    c: SSAValue | None
    k: SSAValue | None = None


@dataclass
class _Input:
    spec_form: str
    data: SSAValue
    ind32: SSAValue | None = None
    ind64: SSAValue | None = None
    ptr32: SSAValue | None = None
    ptr64: SSAValue | None = None
    wide: SSAValue | None = None
    ones: SSAValue | None = None


def build_kernels(op: VectorizedPipelineOp, plan: KernelPlan) -> list[func.FuncOp]:
    """The task-kernel functions of a pipeline whose plan succeeded, one per stage."""
    return [_KernelGen(op, plan, stage).build() for stage in plan.stages]


class _KernelGen(SparseAggregations):
    """Builds one stage kernel: `build()` emits the loops over the stage's sinks, `elem()` the value of any body
    value at a position (memoised per scope, loop invariants hoisted to the entry block)."""

    def __init__(self, op: VectorizedPipelineOp, plan: KernelPlan, stage: Stage):
        self.op, self.plan, self.kinds, self.stage = op, plan, plan.kinds, stage
        self.params = stage_params(plan, stage)
        self.entry = Block(arg_types=abi.kernel_types(self.params))
        self.b = ew.Builder(self.entry)
        self.inputs: dict[SSAValue, _Input] = {}
        self.outs: list[SSAValue] = []
        self.n: SSAValue = self.entry.args[0]
        self.stride_one = plan.flat

    # -- structure -------------------------------------------------------------------------------------------------

    def build(self) -> func.FuncOp:
        self._bind_args()
        b = self.b
        sinks = [(v, o, ref) for (v, o), ref in zip(self.stage.sinks, self.outs)]
        self.needed = self._needed([v for v, _, _ in sinks])
        for v, k in self.kinds.items():  # loop invariants first, at the top of the function
            if k.form == "scalar" and v in self.needed:
                self.elem(v, Pos(None, None))
        for v, o, ref in sinks:
            if o.form == "group":
                self._zero_groups(v, o, ref)
        full = [(v, o, ref) for v, o, ref in sinks if o.form == "all"]
        dense_full = [s for s in full if self._arg_kind(s[0]).form == "dense"]
        accs = [b.vconst(o.vt, ew.neutral(o.vt, o.agg)) for _, o, _ in dense_full]
        if self.plan.flat:
            total = b.add(arith.MuliOp(self.n, b.index(self._flat_cols())))
            accs = self.loop(b.index(0), total, accs, lambda i, a: self._cells(Pos(i, None), sinks, a, None))
        else:
            accs = self.loop(b.index(0), self.n, accs, lambda r, a: self._row(r, sinks, a))
        for (_, o, ref), acc in zip(dense_full, accs):
            self._store_full(o, acc, ref)
        for v, o, ref in full:
            if self._arg_kind(v).form == "sparse":
                self._store_full(o, self._sparse_full(v, o), ref)
        status = self._status()
        b.emit(func.ReturnOp(b.add(arith.ExtUIOp(status, i64))))
        f = func.FuncOp(self.stage.name, (list(self.entry.arg_types), [i64]), Region(self.entry))
        f.attributes[TASK_KERNEL_ATTR] = UnitAttr()
        f.attributes[ABI_ATTR] = abi.encode(self.params)
        return f

    def _bind_args(self) -> None:
        args = iter(self.entry.args[1:])
        for arg, s in zip(self.op.body.block.args, self.plan.inputs):
            if s.form == "csr":
                data, i32_, i64_, p32, p64, wide = (next(args) for _ in range(6))
                flag = self._bit(wide, abi.CSR_INDEX64)
                ones = self._bit(wide, abi.CSR_ALL_ONES) if ew.is_float(s.vt) else None
                self.inputs[arg] = _Input("csr", data, i32_, i64_, p32, p64, flag, ones)
            else:
                self.inputs[arg] = _Input(s.form, next(args))
        for v in self.stage.opaque_in:  # results of opaque ops: dense n x C buffers, read like inputs
            self.inputs[v] = _Input("dense", next(args))
        self.outs = list(args)

    def _bit(self, flags: SSAValue, bit: int) -> SSAValue:
        masked = self.b.add(arith.AndIOp(flags, self.b.const(i64, bit)))
        return self.b.add(arith.CmpiOp(masked, self.b.const(i64, 0), "ne"))

    def _needed(self, roots: list[SSAValue]) -> set[SSAValue]:
        """Values this stage computes: the sinks' operands, transitively, up to inputs and opaque results."""
        seen: set[SSAValue] = set()
        todo = list(roots)
        while todo:
            v = todo.pop()
            if v in seen:
                continue
            seen.add(v)
            if v not in self.inputs and isinstance(v.owner, ops.DaphneOp):
                todo.extend(v.owner.operands)
        return seen

    def _status(self) -> SSAValue:
        status = self.b.const(i1, 0)
        for e in self.b.scopes[0].errors:
            status = self.b.add(arith.OrIOp(status, e))
        return status

    def loop(
        self,
        lo: SSAValue,
        hi: SSAValue,
        carried: list[SSAValue],
        body: Callable[[SSAValue, list[SSAValue]], list[SSAValue]],
    ) -> list[SSAValue]:
        """`scf.for` carrying `carried` plus an error flag; errors raised inside flow to the enclosing scope."""
        b = self.b
        blk = Block(arg_types=[IndexType(), *(v.type for v in carried), i1])
        b.push(blk)
        new = body(blk.args[0], list(blk.args[1:-1]))
        err: SSAValue = blk.args[-1]
        for e in b.scopes[-1].errors:
            err = b.add(arith.OrIOp(err, e))
        b.emit(scf.YieldOp(*new, err))
        b.pop()
        loop = scf.ForOp(lo, hi, b.index(1), [*carried, b.const(i1, 0)], blk)
        b.emit(loop)
        b.error(loop.results[-1])
        return list(loop.results[:-1])

    def if_(
        self, cond: SSAValue, types: list[Attribute], then: Callable[[], list[SSAValue]], other: list[SSAValue]
    ) -> list[SSAValue]:
        """`scf.if` yielding `then()` when cond holds, else `other` (for reads that may be out of bounds)."""
        b = self.b
        blk = Block()
        b.push(blk)
        vals = then()
        err = b.const(i1, 0)
        for e in b.scopes[-1].errors:
            err = b.add(arith.OrIOp(err, e))
        b.emit(scf.YieldOp(*vals, err))
        b.pop()
        els = Block()
        els.add_op(scf.YieldOp(*other, b.const(i1, 0)))
        res = b.emit(scf.IfOp(cond, [*types, i1], Region(blk), Region(els)))
        b.error(res.results[-1])
        return list(res.results[:-1])

    # -- rows and cells ----------------------------------------------------------------------------------------------

    def _flat_cols(self) -> int:
        return next(k.cols for k in self.kinds.values() if k.form in ("dense", "sink"))

    def _row(self, r: SSAValue, sinks: list, accs: list[SSAValue]) -> list[SSAValue]:
        for inner in self.op.body.block.ops:
            if isinstance(inner, ops.AggOp) and inner.AXIS == "row" and inner.res in self.needed:
                self.b.remember((inner.res, r, None), self._row_agg(inner, r))
        groups = sorted({self._sink_cols(v, o) for v, o, _ in sinks if self._in_group(v, o)})
        dense_full = [s for s in sinks if s[1].form == "all" and self._arg_kind(s[0]).form == "dense"]
        out_accs = list(accs)
        for cols in groups:
            idx = [i for i, s in enumerate(dense_full) if self._sink_cols(s[0], s[1]) == cols]
            mine = [s for s in sinks if self._in_group(s[0], s[1]) and self._sink_cols(s[0], s[1]) == cols]
            sub = [out_accs[i] for i in idx]
            if cols == 1:
                res = self._cells(Pos(r, None), mine, sub, r)
            else:
                res = self.loop(
                    self.b.index(0), self.b.index(cols), sub, lambda c, a, mine=mine: self._cells(Pos(r, c), mine, a, r)
                )
            for i, v in zip(idx, res):
                out_accs[i] = v
        return out_accs

    def _in_group(self, v: SSAValue, o: object) -> bool:
        return o.form != "all" or self._arg_kind(v).form == "dense"  # type: ignore[attr-defined]

    def _sink_cols(self, v: SSAValue, o: object) -> int:
        if o.form == "rows":  # type: ignore[attr-defined]
            return self.kinds[v].cols
        return self._arg_kind(v).cols

    def _arg_kind(self, v: SSAValue) -> Kind:
        owner = v.owner
        if isinstance(owner, GroupedSumOp):
            return self.kinds[owner.values]
        assert isinstance(owner, (ops.AggOp, ops.TransposeOp))
        return self.kinds[owner.arg]

    def _cells(self, pos: Pos, sinks: list, accs: list[SSAValue], r: SSAValue | None) -> list[SSAValue]:
        """Every sink of one cell (row r, column c): stores, column aggregates and full-aggregate steps."""
        b = self.b
        out = list(accs)
        j = 0
        for v, o, ref in sinks:
            if o.form == "rows":
                ew.store(b, self.elem(v, pos), ref, self._offset(pos, o.cols), o.vt)
            elif o.form == "cols":
                x = self.elem(self._arg(v), pos)
                c = pos.c if pos.c is not None else b.index(0)
                ew.store(b, x, ref, b.add(arith.AddiOp(b.add(arith.MuliOp(c, self.n)), pos.r)), o.vt)
            elif o.form == "col":
                self._col_step(v, o, ref, pos, r)
            elif o.form == "group":
                self._group_step(v, o, ref, pos)
            elif o.form == "all":
                out[j] = self._full_step(v, o, out[j], pos)
                j += 1
        return out

    def _arg(self, v: SSAValue) -> SSAValue:
        return v.owner.arg  # type: ignore[union-attr]

    def _agg_elem(self, v: SSAValue, o: object, pos: Pos) -> SSAValue:
        """The aggregated argument at `pos`, cast to the aggregate's value type (`agg.py` casts first)."""
        arg = self._arg(v)
        return ew.cast(self.b, self.elem(arg, pos), self.kinds[arg].vt, o.vt)  # type: ignore[attr-defined]

    def _full_step(self, v: SSAValue, o: object, acc: SSAValue, pos: Pos) -> SSAValue:
        reassoc = o.vt == "f64" and ORDERED_ATTR not in self.op.attributes  # type: ignore[attr-defined]
        return ew.fold(self.b, o.agg, o.vt, acc, self._agg_elem(v, o, pos), reassoc)  # type: ignore[attr-defined]

    def _col_step(self, v: SSAValue, o: object, ref: SSAValue, pos: Pos, r: SSAValue | None) -> None:
        """Column aggregates of the batch in the output, starting from its first row (`agg._minmax`, cumsum)."""
        b = self.b
        c = pos.c if pos.c is not None else b.index(0)
        x = self._agg_elem(v, o, pos)
        old = ew.load(b, ref, c, o.vt)  # type: ignore[attr-defined]
        new = ew.fold(b, o.agg, o.vt, old, x)  # type: ignore[attr-defined]
        first = b.add(arith.CmpiOp(r, b.index(0), "eq"))  # type: ignore[arg-type]
        ew.store(b, ew.select(b, first, x, new), ref, c, o.vt)  # type: ignore[attr-defined]

    def _groups(self, v: SSAValue) -> SSAValue:
        op = v.owner
        assert isinstance(op, GroupedSumOp)
        return self.b.add(arith.IndexCastOp(self.elem(op.ngroups, Pos(None, None)), IndexType()))

    def _zero_groups(self, v: SSAValue, o: object, ref: SSAValue) -> None:
        """A task's per-group sums start at zero (the output is not initialised by the caller)."""
        zero = self.b.vconst(o.vt, 0)  # type: ignore[attr-defined]

        def step(g: SSAValue, a: list[SSAValue]) -> list[SSAValue]:
            ew.store(self.b, zero, ref, g, o.vt)  # type: ignore[attr-defined]
            return []

        self.loop(self.b.index(0), self._groups(v), [], step)

    def _group_step(self, v: SSAValue, o: object, ref: SSAValue, pos: Pos) -> None:
        """`out[id] += value` in row order (per group the sequential fold `relational.grouped_sum` does); an id
        outside [0, G) asks for the Python body (and adds to group 0 meanwhile, never out of bounds)."""
        b, op = self.b, v.owner
        assert isinstance(op, GroupedSumOp)
        x = self.kinds[op.values]
        gid = b.add(arith.IndexCastOp(self.elem(op.ids, pos), IndexType()))
        inside = b.add(arith.CmpiOp(gid, self._groups(v), "ult"))
        b.error(b.add(arith.XOrIOp(inside, b.const(i1, 1))))
        idx = ew.select(b, inside, gid, b.index(0))
        value = ew.cast(b, self.elem(op.values, pos), x.vt, o.vt)  # type: ignore[attr-defined]
        ew.store(b, ew.fold(b, "sum", o.vt, ew.load(b, ref, idx, o.vt), value), ref, idx, o.vt)  # type: ignore[attr-defined]

    def _store_full(self, o: object, acc: SSAValue, ref: SSAValue) -> None:
        b = self.b
        if o.agg == "sum" and ew.is_float(o.vt):  # type: ignore[attr-defined]
            acc = b.add(arith.AddfOp(acc, b.vconst(o.vt, 0.0)))  # type: ignore[attr-defined] # -0 -> +0
        ew.store(b, acc, ref, b.index(0), o.vt)  # type: ignore[attr-defined]

    # -- aggregations ------------------------------------------------------------------------------------------------

    def _row_agg(self, op: ops.AggOp, r: SSAValue) -> SSAValue:
        k = self.kinds[op.arg]
        vout = vt_name(op.res.type)
        assert vout is not None
        if k.form == "sparse":
            return self._sparse_row_agg(op, k, vout, r)
        b = self.b
        agg = "sum" if op.KIND == "mean" else op.KIND

        def step(c: SSAValue, a: list[SSAValue]) -> list[SSAValue]:
            x = ew.cast(b, self.elem(op.arg, Pos(r, c)), k.vt, vout)
            return [ew.fold(b, agg, vout, a[0], x)]

        if agg == "sum":  # -0.0 + x == x: the fold from -0.0 equals the fold from the first element
            init, lo = b.vconst(vout, -0.0 if ew.is_float(vout) else 0), 0
        else:
            init, lo = ew.cast(b, self.elem(op.arg, Pos(r, b.index(0))), k.vt, vout), 1
        acc = self.loop(b.index(lo), b.index(k.cols), [init], step)[0] if k.cols > lo else init
        return self._mean(op, vout, acc, k.cols)

    def _mean(self, op: ops.AggOp, vt: str, acc: SSAValue, cols: int) -> SSAValue:
        if op.KIND != "mean":
            return acc
        return self.b.add(arith.DivfOp(acc, self.b.vconst(vt, float(cols))))

    # -- CSR access --------------------------------------------------------------------------------------------------

    def _src(self, k: Kind) -> _Input:
        return self.inputs[self.op.body.block.args[k.src]]

    def _wide_load(self, src: _Input, which: str, i: SSAValue) -> SSAValue:
        """An index from the int32 or int64 view (`scf.if`; LLVM unswitches the loops on the flag)."""
        b = self.b
        r32, r64 = (src.ind32, src.ind64) if which == "ind" else (src.ptr32, src.ptr64)

        def wide() -> SSAValue:
            return ew.load(b, r64, i, "si64")  # type: ignore[arg-type]

        narrow_blk = Block()
        b.push(narrow_blk)
        n32 = b.add(arith.ExtSIOp(ew.load(b, r32, i, "si32"), i64))  # type: ignore[arg-type]
        b.emit(scf.YieldOp(n32))
        b.pop()
        wide_blk = Block()
        b.push(wide_blk)
        b.emit(scf.YieldOp(wide()))
        b.pop()
        v = b.add(scf.IfOp(src.wide, [i64], Region(wide_blk), Region(narrow_blk)))  # type: ignore[arg-type]
        return b.add(arith.IndexCastOp(v, IndexType()))

    def _ones_or_load(self, inp: _Input, k: SSAValue, vt: str) -> SSAValue:
        """A stored value of a float CSR input: 1.0 when the caller flagged all values as 1 (`scf.if`), else loaded."""
        b = self.b
        one_blk = Block()
        b.push(one_blk)
        b.emit(scf.YieldOp(b.vconst(vt, 1.0)))
        b.pop()
        load_blk = Block()
        b.push(load_blk)
        b.emit(scf.YieldOp(ew.load(b, inp.data, k, vt)))
        b.pop()
        return b.add(scf.IfOp(inp.ones, [ew.ir_type(vt)], Region(one_blk), Region(load_blk)))  # type: ignore[arg-type]

    def _indptr(self, src: _Input, r: SSAValue) -> SSAValue:
        key = ("indptr", src.data, r)
        return self.b.lookup(key) or self.b.remember(key, self._wide_load(src, "ptr", r))

    def _col_index(self, src: _Input, k: SSAValue) -> SSAValue:
        key = ("ind", src.data, k)
        return self.b.lookup(key) or self.b.remember(key, self._wide_load(src, "ind", k))

    def _sparse_pos(self, src: _Input, k: SSAValue) -> Pos:
        return Pos(None, self._col_index(src, k), k)

    # -- elements ----------------------------------------------------------------------------------------------------

    def _offset(self, pos: Pos, cols: int) -> SSAValue:
        """Cell (r, c) of a C-contiguous n x cols block."""
        b = self.b
        assert pos.r is not None
        if cols == 1 or self.stride_one:
            return pos.r
        key = ("row_off", pos.r, cols)
        base = b.lookup(key) or b.remember(key, b.add(arith.MuliOp(pos.r, b.index(cols))))
        return b.add(arith.AddiOp(base, pos.c)) if pos.c is not None else base

    def elem(self, v: SSAValue, pos: Pos) -> SSAValue:
        """The value of `v` at `pos`, computed once per scope (memoised)."""
        k = self.kinds[v]
        key: tuple[object, ...]
        if k.form == "scalar":
            key = (v,)
        elif k.form == "rowvec":
            key = (v, pos.c if k.cols > 1 else None)
        elif k.form == "sparse":
            key = (v, pos.k)
        else:
            key = (v, pos.r, pos.c if k.cols > 1 else None)
        found = self.b.lookup(key)
        if found is not None:
            return found
        if k.form == "scalar":  # loop invariant: computed in the entry block, before the loop being built
            with self.b.at_entry():
                return self.b.remember(key, self._compute(v, k, pos))
        return self.b.remember(key, self._compute(v, k, pos))

    def _compute(self, v: SSAValue, k: Kind, pos: Pos) -> SSAValue:
        if v in self.inputs:
            return self._read_input(self.inputs[v], k, pos)
        op = v.owner
        if isinstance(op, ops.ConstantOp):
            val = op.python_value()
            return self.b.vconst(k.vt, float(val) if ew.is_float(k.vt) else int(val))  # type: ignore[arg-type]
        if isinstance(op, ops.EwBinaryOp):
            return self._binary(op, k, pos)
        if isinstance(op, ops.EwUnaryOp):
            src = self.kinds[op.arg]
            return ew.unary(self.b, op.KIND, src.vt, k.vt, self.elem(op.arg, self._operand_pos(src, k, pos)))
        if isinstance(op, ops.CastOp):
            src = self.kinds[op.arg]
            x = self.elem(op.arg, self._operand_pos(src, k, pos))
            return ew.cast(self.b, x, src.vt, k.vt, scalar=src.form == "scalar")
        if isinstance(op, ops.CondOp):
            return self._cond(op, k, pos)
        if isinstance(op, ops.ExtractColOp):
            src = self.kinds[op.source]
            j = ops.constant_value(op.selection)
            j = j + src.cols if j < 0 else j  # type: ignore[operator]
            return self.elem(op.source, Pos(pos.r, self.b.index(j)))  # type: ignore[arg-type]
        raise Unsupported(f"no element lowering for '{op.name}'")  # type: ignore[union-attr]

    def _read_input(self, inp: _Input, k: Kind, pos: Pos) -> SSAValue:
        b = self.b
        if k.form == "scalar":
            arg = inp.data
            src = "f64" if ew.is_float(k.vt) else "si64"
            return ew.cast(b, arg, src, k.vt) if k.vt != "index" else arg
        if k.form == "rowvec":
            idx = pos.c if k.cols > 1 and pos.c is not None else b.index(0)
            return ew.load(b, inp.data, idx, k.vt)
        if k.form == "sparse":
            assert pos.k is not None
            if inp.ones is None:
                return ew.load(b, inp.data, pos.k, k.vt)
            return self._ones_or_load(inp, pos.k, k.vt)
        return ew.load(b, inp.data, self._offset(pos, k.cols), k.vt)

    def _operand_pos(self, src: Kind, res: Kind, pos: Pos) -> Pos:
        """Broadcasting: a 1-column operand of a wider result is read at column 0, a row vector at row 0."""
        if src.form == "dense" and src.cols == 1 and res.cols != 1:
            return Pos(pos.r, None, pos.k)
        return pos

    def _binary(self, op: ops.EwBinaryOp, k: Kind, pos: Pos) -> SSAValue:
        b = self.b
        lk, rk = self.kinds[op.lhs], self.kinds[op.rhs]
        ovt = EW_BINARY[op.KIND].operand_vt(lk.vt, rk.vt)
        x = self._operand(op.lhs, lk, k, pos, ovt)
        y = self._operand(op.rhs, rk, k, pos, ovt)
        if k.form == "sparse":
            self._keeps_pattern(op.KIND, ovt, lk if lk.form != "sparse" else rk, x if lk.form != "sparse" else y)
        return ew.binary(b, op.KIND, ovt, k.vt, x, y)

    def _cond(self, op: ops.CondOp, k: Kind, pos: Pos) -> SSAValue:
        """`c ? a : b` as a select (both values computed, no branch: the loop stays vectorisable); the values are
        cast to the result type first, as the runtime kernel does (`select_cond`)."""
        ck = self.kinds[op.cond]
        c = ew.nonzero(self.b, ck.vt, self.elem(op.cond, self._operand_pos(ck, k, pos)))
        x = self._operand(op.then_val, self.kinds[op.then_val], k, pos, k.vt)
        y = self._operand(op.else_val, self.kinds[op.else_val], k, pos, k.vt)
        return ew.select(self.b, c, x, y)

    def _operand(self, v: SSAValue, src: Kind, res: Kind, pos: Pos, ovt: str) -> SSAValue:
        """An operand cast to the operand type (`CastArgsToResType`); scalar casts are hoisted to the entry."""
        x = self.elem(v, self._operand_pos(src, res, pos))
        if src.form != "scalar":
            return ew.cast(self.b, x, src.vt, ovt)
        key = ("cast", v, ovt)
        found = self.b.lookup(key)
        if found is None:
            with self.b.at_entry():
                found = self.b.remember(key, ew.cast(self.b, x, src.vt, ovt, scalar=True))
        return found

    def _keeps_pattern(self, kind: str, ovt: str, other: Kind, val: SSAValue) -> None:
        """A scalar factor/divisor of a CSR value: `0 op s` must be 0 (s finite; for `/` also non-zero)."""
        if other.form != "scalar" or not ew.is_float(ovt):
            return
        b = self.b
        inf = b.vconst(ovt, float("inf"))
        absval = b.add(arith.CmpfOp(b.add(math.AbsFOp(val)), inf, "oeq"))
        b.error(b.add(arith.OrIOp(absval, ew.is_nan(b, val))))
        if kind == "div":
            b.error(b.add(arith.CmpfOp(val, b.vconst(ovt, 0.0), "oeq")))


# ---------------------------------------------------------------------------------------------------------------------
# The pass
# ---------------------------------------------------------------------------------------------------------------------


def kernel_module(op: VectorizedPipelineOp, plan: KernelPlan) -> ModuleOp:
    """`builtin.module @vp_<hash>` with the pipeline's stage kernels: what the JIT compiles into one object. Reads
    the pipeline only (the backend builds it on the compile thread while host code is generated)."""
    return ModuleOp(build_kernels(op, plan), sym_name=StringAttr(plan.name))


def add_kernel_modules(module: ModuleOp, plans: PipelinePlans) -> None:
    """Add the kernel module of every distinct planned pipeline to the module; a pipeline whose body turns out
    not to lower keeps its Python body and says why."""
    known = {m.sym_name.data for m in module.ops if isinstance(m, ModuleOp) and m.sym_name is not None}
    for pipe, plan in plans.items():
        if plan is None or plan.name in known:
            continue
        try:
            module.body.block.add_op(kernel_module(pipe, plan))
            known.add(plan.name)
        except Unsupported as e:
            annotate(pipe, None, str(e))


@dataclass(frozen=True)
class LowerPipelineToLoopsPass(ModulePass):
    """Adds one kernel module per distinct lowerable pipeline and names it on the pipeline (`daphne.native_kernel`);
    other pipelines get `daphne.native = "fallback: <reason>"`."""

    name = "lower-pipeline-to-loops"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        add_kernel_modules(op, self.plans(op))

    def plans(self, op: ModuleOp) -> PipelinePlans:
        """The pipelines' plans: made here (`daphne-opt`); the native backend, which plans every pipeline once
        for all its uses, runs this pass with the plans it made (`compiler.backend.native`)."""
        return plan_pipelines(op)
