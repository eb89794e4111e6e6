"""Host code generation: every IR function becomes one Python function that calls runtime kernels.

A tree-walking interpreter over xDSL objects costs microseconds per op; generated Python costs one call per op.
Kernels are selected at compile time (`compiler.selection.table`) and bound into the module's globals, constants are
inlined as literals, casts that change nothing at run time are plain aliases, and structured control flow
(`scf.if/for/while`) becomes Python `if`/`for`/`while`. Every generated line remembers the IR op it came from, so
a run-time failure is reported at the DaphneDSL source location of the failing operation. A pipeline with a native
kernel (`daphne.native_kernel`, written by `lower-pipeline-to-loops`) runs the loaded kernel of that symbol
(`compiler.backend.native` builds them), bound to its Python body as the fallback.

Python limits how deep code may nest (20 statically nested loops, 100 indentation levels), DaphneDSL does not: a
structured op nested `OUTLINE_DEPTH` deep in a function is outlined into a module-level function of its own, whose
parameters are the outer values it reads and whose result is the op's results (`_outline`).
"""

from __future__ import annotations

import functools
import keyword
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import func, scf
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Block, Operation, SSAValue

from daphnec.compiler.analysis.free_values import free_values
from daphnec.compiler.host.paramserv_udfs import shipped_udfs
from daphnec.compiler.host.program import HostProgram
from daphnec.compiler.lowering.abi import kernel_symbol
from daphnec.compiler.passes.distribute_parfor import shipped_inputs
from daphnec.compiler.selection.spec import KernelSpec
from daphnec.compiler.selection.table import is_noop_cast, select_kernel
from daphnec.dialects.attr_names import CODEGEN_ATTR, ORDERED_ATTR, PARFOR_SHIPPED_ATTR, PARFOR_WRITES_ATTR
from daphnec.dialects.errors import CompileError, Loc
from daphnec.dialects.locations import loc_of
from daphnec.dialects.ops import (
    CastOp,
    CondOp,
    ConstantOp,
    DaphneOp,
    EwBinaryOp,
    EwUnaryOp,
    ExtractColOp,
    ExtractRowOp,
    InsertOp,
    MapOp,
    MatrixLiteralOp,
    NumColsOp,
    NumRowsOp,
)
from daphnec.dialects.ops_distributed import DistributedPipelineOp
from daphnec.dialects.ops_matrix import IdxAggOp, MatMulOp
from daphnec.dialects.ops_paramserv import ParamservOp
from daphnec.dialects.ops_parfor import ParForOp
from daphnec.dialects.ops_pipeline import PipelineReturnOp, VectorizedPipelineOp
from daphnec.dialects.types import MatrixType, vt_name
from daphnec.runtime.fperr import STATE
from daphnec.runtime.kernels import dead_operands
from daphnec.runtime.kernels.agg import idx_scalar_kernel
from daphnec.runtime.kernels.dead_operands import INLINE_DEAD_REFS
from daphnec.runtime.kernels.indexing import cell, insert_range_in_place
from daphnec.runtime.kernels.meta import as_scalar
from daphnec.runtime.kernels.native_matmul import run_native
from daphnec.runtime.parfor import run_parfor, run_parfor_distributed
from daphnec.runtime.values import as_dense, dtype_of, to_csr
from daphnec.runtime.vectorized.kernel import NativeKernel, PendingKernel
from daphnec.runtime.vectorized.pipeline import run_pipeline

_IDENT = re.compile(r"[^A-Za-z0-9_]")
OUTLINE_DEPTH = 8
"""Structured ops (if/for/while) nested this deep in one generated function go to a function of their own."""


def py_function_name(sym: str) -> str:
    return "f_" + _IDENT.sub("_", sym)


class _Names(dict):
    """SSA value -> Python name, also indexed by name (a no-op cast's result shares its operand's name)."""

    def __init__(self) -> None:
        super().__init__()
        self.holders: dict[str, list[SSAValue]] = {}

    def __setitem__(self, v: SSAValue, name: str) -> None:
        super().__setitem__(v, name)
        self.holders.setdefault(name, []).append(v)


@dataclass
class _Emitter:
    lines: list[str] = field(default_factory=list)
    locs: list[Loc | None] = field(default_factory=list)
    globals: dict[str, object] = field(default_factory=dict)
    names: _Names = field(default_factory=_Names)
    bound: dict[int, str] = field(default_factory=dict)
    counter: int = 0
    indent: int = 0

    def emit(self, text: str, op: Operation | None = None) -> None:
        self.lines.append("    " * self.indent + text)
        self.locs.append(loc_of(op) if op is not None else None)

    def fresh(self, prefix: str = "v") -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def bind(self, obj: object, hint: str = "k") -> str:
        """A global name for a Python object (a kernel or a constant the generated code refers to)."""
        key = id(obj)
        if key not in self.bound:
            name = f"_{_IDENT.sub('_', hint)}_{len(self.bound)}"
            self.bound[key] = name
            self.globals[name] = obj
        return self.bound[key]

    def define(self, v: SSAValue) -> str:
        name = self.fresh()
        self.names[v] = name
        return name

    def ref(self, v: SSAValue) -> str:
        return self.names[v]


class HostCodegen:
    """Translates a fully inferred module into a `HostProgram`; `kernels` are the loaded native kernels by symbol
    (kernel modules in the IR are not host code)."""

    def __init__(self, module: ModuleOp, kernels: Mapping[str, NativeKernel | PendingKernel]):
        self.module = module
        self.kernels = kernels
        self.e = _Emitter()
        self.depth = 0
        """How many structured ops enclose the op being generated, in the current Python function."""
        self.outlined: list[tuple[list[str], list[Loc | None]]] = []
        self.function: func.FuncOp | None = None
        """The function being generated."""
        self.free: dict[Operation, list[SSAValue]] | None = None
        """Its ops' free values (`_free_names`), computed when it first outlines an op."""
        self.fused: set[Operation] = set()
        """Ops an earlier op's code already computes (`_cell_read`): they emit nothing."""
        self.cells: dict[Operation, tuple[Operation, CastOp, str | None]] = {}
        """extractCol ops that read one cell (`_cell_read`): their extractRow, as.scalar cast and its value type."""
        self.dying: frozenset[str] = frozenset()
        """The names deleted right after the op being generated (`_dead_names`)."""
        self.row_writes: dict[Operation, MatrixLiteralOp] = {}
        """In-place inserts of a 1 x k matrix literal into a row (`_row_literal`): the literal, built only if the
        numpy store cannot be done."""
        self.ufuncs: dict[Operation, tuple[KernelSpec, object] | None] = {}
        """Element-wise ops -> their kernel and the f64 ufunc the host code may inline (`_ufunc_of`)."""

    def generate(self) -> HostProgram:
        for op in self.module.ops:
            if isinstance(op, func.FuncOp):
                self._function(op)
        for lines, locs in self.outlined:
            self.e.lines += lines
            self.e.locs += locs
        return HostProgram("\n".join(self.e.lines) + "\n", self.e.globals, self.e.locs)

    # -- structure ------------------------------------------------------------------------------------------------

    def _function(self, f: func.FuncOp) -> None:
        e = self.e
        self.function, self.free = f, None
        params = [e.define(a) for a in f.body.block.args]
        e.emit(f"def {py_function_name(f.sym_name.data)}({', '.join(params)}):", f)
        e.indent += 1
        self._block(f.body.block)
        e.emit("pass")
        e.indent -= 1

    def _block(self, block: Block) -> None:
        last = _last_uses(block)
        self._plan_cells(block, last)
        for op in block.ops:
            lit = self._row_literal(op) if isinstance(op, InsertOp) else None
            if lit is not None:
                self.row_writes[op] = lit
                self.fused.add(lit)
        dies: dict[int, list[SSAValue]] = {}
        for v, end in last.items():
            if end is not None:
                dies.setdefault(end, []).append(v)
        ops = list(block.ops)
        i = 0
        while i < len(ops):
            run = self._ufunc_run(ops, i)
            if run:
                self._ufunc_region(run, i, dies, last)
                i += len(run)
                continue
            self._op_and_dels(ops[i], i, dies, last)
            i += 1

    def _op_and_dels(
        self, op: Operation, i: int, dies: dict[int, list[SSAValue]], last: dict[SSAValue, int | None]
    ) -> list[str]:
        """Op i of its block, then the `del` of the names no later op reads (returned)."""
        self.dying = frozenset(self._dead_names(dies.get(i, ()), i, last))
        self._op(op)
        dead = self._dead_names(dies.get(i, ()), i, last)  # again: the op may have given a name more holders
        if dead:
            self.e.emit(f"del {', '.join(dead)}")
        return dead

    def _dead_names(self, values: Iterable[SSAValue], i: int, last: dict[SSAValue, int | None]) -> list[str]:
        """The names to `del` after op i: the matrices that no later op of the block reads, so numpy can reuse
        their memory for the next temporaries (a held 268 MB temporary costs a fresh allocation and its first
        touch), and op i's element-wise kernel may write its result into them (`_dead_operands`). A name goes only
        when every value it holds (a no-op cast shares its operand's) is a result of this block read for the last
        time here: never a parameter, a loop-carried name or a value a terminator passes on."""
        dead: list[str] = []
        for v in values:
            name = self.e.names.get(v)
            if name is None or not name.isidentifier() or name in dead:
                continue
            if all((end := last.get(w)) is not None and end <= i for w in self.e.names.holders[name]):
                dead.append(name)
        return dead

    def _dead_operands(self, spec: KernelSpec, args: list[str]) -> str:
        """The `dead` argument of an element-wise kernel that can write its result into an operand
        (runtime/kernels/dead_operands.py): bit k set when argument k is a name deleted right after this op (an
        operand cast first is a fresh value, not a name); empty when there is none."""
        if not getattr(spec.fn, "reuses_dead_operands", False):
            return ""
        bits = sum(1 << k for k, a in enumerate(args) if a in self.dying)
        return f", {bits}" if bits else ""

    def _op(self, op: Operation) -> None:
        if isinstance(op, ConstantOp):
            self.e.names[op.res] = self._literal(op.python_value())
        elif isinstance(op, DaphneOp):
            self._daphne_op(op)
        elif isinstance(op, (scf.IfOp, scf.ForOp, scf.WhileOp)):
            self._structured(op)
        elif isinstance(op, func.CallOp):
            self._call(op)
        elif isinstance(op, func.ReturnOp):
            vals = [self.e.ref(v) for v in op.arguments]
            self.e.emit(
                "return" if not vals else f"return {vals[0]}" if len(vals) == 1 else f"return ({', '.join(vals)})", op
            )
        elif isinstance(op, VectorizedPipelineOp):
            self._pipeline(op)
        elif isinstance(op, DistributedPipelineOp):
            self._distributed_pipeline(op)
        elif isinstance(op, PipelineReturnOp):
            self.e.emit(f"return ({''.join(self.e.ref(v) + ', ' for v in op.operands)})", op)
        elif isinstance(op, (scf.YieldOp, scf.ConditionOp)):
            pass  # handled by the enclosing structured op
        else:
            raise CompileError(f"no host lowering for operation '{op.name}'", loc_of(op))

    # -- nesting: outlining deep structured ops (see the module docstring) ---------------------------------------

    def _structured(self, op: scf.IfOp | scf.ForOp | scf.WhileOp) -> None:
        if self.depth >= OUTLINE_DEPTH:
            self._outline(op)
            return
        self.depth += 1
        if isinstance(op, scf.IfOp):
            self._if(op)
        elif isinstance(op, scf.ForOp):
            self._for(op)
        else:
            self._while(op)
        self.depth -= 1

    def _outline(self, op: scf.IfOp | scf.ForOp | scf.WhileOp) -> None:
        """`op` as a module-level function over the outer values it reads (under their outer names), returning its
        results, which the call assigns to the names the op's results get inside it."""
        e = self.e
        params = self._free_names(op)
        name = e.fresh("outlined")
        outer = (e.lines, e.locs, e.indent, self.depth)
        e.lines, e.locs, e.indent, self.depth = [], [], 0, 0
        e.emit(f"def {name}({', '.join(params)}):", op)
        e.indent = 1
        self._structured(op)
        results = [e.ref(r) for r in op.results]
        e.emit(f"return ({''.join(r + ', ' for r in results)})")
        self.outlined.append((e.lines, e.locs))
        e.lines, e.locs, e.indent, self.depth = outer
        call = f"{name}({', '.join(params)})"
        e.emit(f"{''.join(r + ', ' for r in results)}= {call}" if results else call, op)

    def _free_names(self, op: Operation) -> list[str]:
        """The generated names of the values defined outside `op` that ops inside it read (constants are literals
        and kernels globals: neither is passed). The free values of every op of the function are computed once, on
        its first outlined op (`compiler/analysis/free_values.py`: walking each outlined op again is cubic in the
        nesting)."""
        if self.free is None:
            assert self.function is not None
            self.free = free_values(self.function)
        names = dict.fromkeys(self.e.ref(v) for v in self.free[op])
        return [n for n in names if n.isidentifier() and not keyword.iskeyword(n) and n not in self.e.globals]

    def _literal(self, v: object) -> str:
        if isinstance(v, float) and not math.isfinite(v):
            return self.e.bind(v, "nan" if math.isnan(v) else "inf")
        return repr(v)

    def _folded_cast(self, v: SSAValue, conv: object) -> str | None:
        """The literal of a scalar constant operand's cast, done here (`x ^ 2` of an f64 matrix: the si64 2 as
        2.0) instead of a cast call per run of the op; None for anything else (a cast that fails or makes no
        plain number stays at run time, where it reports)."""
        if conv is None or not isinstance(v.owner, ConstantOp):
            return None
        value = v.owner.python_value()
        if type(value) not in (int, float, bool):
            return None
        try:
            out = conv(value)  # type: ignore[operator]
        except Exception:
            return None
        return self._literal(out) if type(out) in (int, float, bool) else None

    def _assign(self, targets: list[str], values: list[str], op: Operation) -> None:
        pairs = [(t, v) for t, v in zip(targets, values) if t != v]
        if pairs:
            lhs, rhs = zip(*pairs)
            self.e.emit(f"{', '.join(lhs)} = {', '.join(rhs)}", op)

    def _daphne_op(self, op: DaphneOp) -> None:
        e = self.e
        if op in self.fused:
            return
        if is_noop_cast(op):
            e.names[op.results[0]] = e.ref(op.operands[0])
            return
        if op in self.cells:
            self._emit_cell(op)
            return
        spec = select_kernel(op)
        if spec.inline is not None and len(op.results) == 1:
            self._inline(op, spec)
            return
        if isinstance(op, InsertOp) and op in self.row_writes:
            self._row_write(op, spec, self.row_writes[op])
            return
        if isinstance(op, InsertOp) and spec.fn is insert_range_in_place and self._cell_write(op, spec):
            return
        if isinstance(op, IdxAggOp) and self._idx_scalar(op):
            return
        if isinstance(op, (NumRowsOp, NumColsOp)) and isinstance(op.arg.type, MatrixType):
            # `meta.nrow`/`ncol` of a matrix (dense or CSR): its shape, inline (frames keep the kernel)
            e.emit(f"{e.define(op.res)} = {e.ref(op.arg)}.shape[{0 if isinstance(op, NumRowsOp) else 1}]", op)
            return
        if isinstance(op, MapOp):  # the UDF's generated Python function is the kernel's second argument
            out = e.define(op.res)
            e.emit(f"{out} = {e.bind(spec.fn, spec.name)}({e.ref(op.arg)}, {py_function_name(op.func.data)})", op)
            return
        if isinstance(op, ParamservOp):  # named arguments, the UDFs' Python functions and their IR for MPI workers
            out = e.define(op.res)
            named = [f"{n}={e.ref(v)}" for n, v in zip(op.names, op.args)]
            udfs = [f"{role}={py_function_name(sym)}" for role, sym in op.udfs]
            udfs += [f"factored={op.factored_positions!r}"] if op.factors is not None else []
            udfs += [f"pull_order={op.pull_positions!r}"] if op.pull_order is not None else []
            udfs += ["per_matrix_agg=True"] if op.per_matrix_agg is not None else []
            shipped = repr(shipped_udfs(self.module, op))
            e.emit(f"{out} = {e.bind(spec.fn, spec.name)}({', '.join(named + udfs)}, shipped={shipped})", op)
            return
        args = []
        for v, conv in zip(op.operands, spec.arg_casts):
            a = self._folded_cast(v, conv)
            if a is None:
                a = e.ref(v) if conv is None else f"{e.bind(conv, 'cast')}({e.ref(v)})"
            args.append(a)
        call = f"{e.bind(spec.fn, spec.name)}({', '.join(args)}{self._dead_operands(spec, args)})"
        if self._inline_ufunc(op, spec, args, call) or self._inline_view(op, spec, args, call):
            return
        native = self.kernels.get(kernel_symbol(op) or "") if isinstance(op, MatMulOp) else None
        if native is not None:  # --codegen: the product's loop nest, its runtime kernel as the fallback
            call = f"{e.bind(run_native, 'run_native')}({e.bind(native.bind, 'native_' + native.name)}, "
            call += f"{e.bind(spec.fn, spec.name)}, {', '.join(args)})"
        if not op.results:
            e.emit(call, op)
        else:
            outs = [e.define(r) for r in op.results]
            e.emit(f"{', '.join(outs)} = {call}", op)

    def _inline_ufunc(self, op: DaphneOp, spec: KernelSpec, args: list[str], call: str) -> bool:
        """An f64 element-wise op whose kernel names its fast path's ufunc (`f64_ufunc`: + - * / of dense f64
        matrices and f64 scalars, abs, sqrt-free unary ufuncs) as that ufunc's call in the host code, under the
        kernel's own type test, with the kernel call `call` for everything else. The kernel call and its checks
        cost ~0.3 us of a ~0.35 us `v * s` on a few cells (RDP's loop makes 7 per segment). A dying operand that
        nothing else holds (`dead_operands.INLINE_DEAD_REFS`, the refcount test the kernel makes in its own frame)
        and whose buffer the program owns is the output, as in the kernel. Same ufunc, same operands: same bits."""
        ufunc = _f64_ufunc(op, spec)
        if ufunc is None:
            return False
        types = [v.type for v in op.operands]
        e = self.e
        tests = [e.bind(STATE, "fperr_state") + ".ignoring"]
        matrices = []
        for a, t in zip(args, types):
            if isinstance(t, MatrixType):
                tests.append(_is_f64_matrix(e, a))
                matrices.append(a)
            else:
                tests.append(f"type({a}) is float")
        if len(matrices) == 2:
            tests.append(f"{matrices[0]}.shape == {matrices[1]}.shape")
        fn, out = e.bind(ufunc, spec.name), e.define(op.results[0])
        refs = e.bind(dead_operands, "dead_operands")  # a module: `--statistics` wraps no callable of it
        e.emit(f"if {' and '.join(tests)}:", op)
        _emit_ufunc_call(e, op, out, fn, args, dict.fromkeys(a for a in matrices if a in self.dying), refs, "    ")
        e.emit("else:", op)
        e.emit(f"    {out} = {call}", op)
        return True

    def _ufunc_run(self, ops: list[Operation], i: int) -> list[Operation]:
        """The ops from i on that `_ufunc_region` takes: f64 element-wise ops that `_inline_ufunc` inlines and
        scalar ops between them, starting and ending with such an op and with two or more of them; else empty."""
        run: list[Operation] = []
        ufuncs = 0
        for op in ops[i:]:
            if op in self.fused or not isinstance(op, _PURE_SCALAR) or is_noop_cast(op):
                break
            if not isinstance(op, ConstantOp) and self._inlined_ufunc(op):
                ufuncs += 1
            elif not run or op in self.cells or any(
                isinstance(v.type, MatrixType) for v in (*op.operands, *op.results)
            ):
                break
            run.append(op)
        while run and not self._inlined_ufunc(run[-1]):
            run.pop()
        return run if ufuncs > 1 else []

    def _inlined_ufunc(self, op: Operation) -> bool:
        """`op` is an element-wise op whose f64 fast path `_inline_ufunc` inlines."""
        return op not in self.fused and not is_noop_cast(op) and self._ufunc_of(op) is not None

    def _ufunc_of(self, op: Operation) -> tuple[KernelSpec, object] | None:
        """The kernel of an element-wise op and the f64 ufunc `_inline_ufunc` would inline, or None; selected once
        per op (`_ufunc_run` looks ahead from every op of a block)."""
        if op not in self.ufuncs:
            found = None
            if isinstance(op, (EwBinaryOp, EwUnaryOp)):
                spec = select_kernel(op)
                ufunc = _f64_ufunc(op, spec) if spec.inline is None else None
                found = None if ufunc is None else (spec, ufunc)
            self.ufuncs[op] = found
        return self.ufuncs[op]

    def _ufunc_region(
        self, run: list[Operation], start: int, dies: dict[int, list[SSAValue]], last: dict[SSAValue, int | None]
    ) -> None:
        """A run of f64 element-wise ops the host code inlines (`_inline_ufunc`), e.g. RDP's
        `abs(dy * (Q[, 0] - ax) - dx * (Q[, 1] - ay))`: one test of the operands from before the run (f64
        matrices, f64 scalars, equal shapes where two matrices meet; the shape of a matrix the run computes is that
        of its first matrix operand), then the ufunc calls alone; anything else runs the ops' usual code (each
        under its own test). A scalar the run's scalar ops compute is tested where an op first reads it, the rest
        of the run's usual code the other branch. Inside the run a ufunc's result is a fresh f64 array that only
        its variable holds, so an op whose operand it is and dies writes into it without the refcount and
        ownership tests (~0.4 us per op; RDP's loop makes 7 per segment). Each op computes what its own test
        would have chosen: the same ufunc on the same operands, the same bits."""
        e = self.e
        base = e.indent
        outer = (e.lines, e.locs)
        e.lines, e.locs = [], []
        e.indent += 1
        spans, dels = [], []
        for k, op in enumerate(run):  # the usual code, op by op
            first = len(e.lines)
            dels.append(self._op_and_dels(op, start + k, dies, last))
            spans.append((first, len(e.lines)))
        usual = (e.lines, e.locs)

        def usual_from(k: int, depth: int) -> None:
            lo = spans[k][0]
            e.lines += ["    " * depth + line for line in usual[0][lo:]]
            e.locs += usual[1][lo:]

        e.lines, e.locs = [], []
        tests = [e.bind(STATE, "fperr_state") + ".ignoring"]
        refs = e.bind(dead_operands, "dead_operands")
        inside = {r for op in run for r in op.results}
        shape_of: dict[SSAValue, SSAValue] = {}  # a matrix the run computes -> the matrix from before of its shape
        nested: list[int] = []  # the ops where a later test opens a branch
        for k, op in enumerate(run):
            if not self._inlined_ufunc(op):  # a scalar op: its usual code
                lo, hi = spans[k]
                e.lines += ["    " * len(nested) + line for line in usual[0][lo:hi]]
                e.locs += usual[1][lo:hi]
                continue
            spec, ufunc = self._ufunc_of(op)  # type: ignore[misc]
            fn, out = e.bind(ufunc, spec.name), e.ref(op.results[0])
            args = [e.ref(v) for v in op.operands]
            roots, late = [], []
            for a, v in zip(args, op.operands):
                if isinstance(v.type, MatrixType):
                    roots.append(shape_of.get(v, v))
                    if v not in shape_of:
                        tests.append(_is_f64_matrix(e, a))
                elif not (isinstance(v.owner, ConstantOp) and type(v.owner.python_value()) is float):
                    (late if v in inside else tests).append(f"type({a}) is float")
            if len(roots) == 2 and roots[0] is not roots[1]:
                tests.append(f"{e.ref(roots[0])}.shape == {e.ref(roots[1])}.shape")
            shape_of[op.results[0]] = roots[0]
            if late:
                e.emit(f"if {' and '.join(dict.fromkeys(late))}:", op)
                nested.append(k)
                e.indent += 1
            dying = dict.fromkeys(
                a for a, v in zip(args, op.operands) if a in dels[k] and isinstance(v.type, MatrixType)
            )
            fresh = [a for a, v in zip(args, op.operands) if a in dying and v in shape_of]
            if fresh:
                e.emit(f"{out} = {fn}({', '.join(args)}, out={fresh[0]})", op)
            else:
                _emit_ufunc_call(e, op, out, fn, args, dying, refs, "")
            if dels[k]:
                e.emit(f"del {', '.join(dels[k])}")
        for depth in range(len(nested), 0, -1):
            e.indent -= 1
            e.emit("else:", run[nested[depth - 1]])
            usual_from(nested[depth - 1], depth)
        fast = (e.lines, e.locs)
        e.lines, e.locs = outer
        e.indent = base
        e.emit(f"if {' and '.join(dict.fromkeys(tests))}:", run[0])
        e.lines += fast[0]
        e.locs += fast[1]
        e.emit("else:", run[0])
        e.lines += usual[0]
        e.locs += usual[1]

    def _inline_view(self, op: DaphneOp, spec: KernelSpec, args: list[str], call: str) -> bool:
        """An indexing op whose kernel names its fast path (`host_view`: the kernel's own test and the numpy view it
        returns then, `indexing.slice_row`, `extract_col_view`) as that test and view in the host code, with the
        kernel call `call` for everything else: the call costs more than the view (RDP's loop makes three per
        segment)."""
        view = getattr(spec.fn, "host_view", None)
        if view is None or len(op.results) != 1 or any(c is not None for c in spec.arg_casts):
            return False
        e = self.e
        refs = [f"({a})" if a.startswith("-") else a for a in args]
        test, expr = (t.format(*refs, ndarray=e.bind(np.ndarray, "ndarray")) for t in view)
        out = e.define(op.results[0])
        e.emit(f"if {test}:", op)
        e.emit(f"    {out} = {expr}", op)
        e.emit("else:", op)
        e.emit(f"    {out} = {call}", op)
        return True

    def _inline(self, op: DaphneOp, spec: KernelSpec) -> None:
        """The op as the Python statements of its kernel's template (`KernelSpec.inline`): scalar arithmetic,
        comparisons and casts cost a kernel call each otherwise, more than the operation. An operand with a cast
        is cast into a temporary first (templates may read an operand twice); a negative literal is parenthesised."""
        e = self.e
        args = []
        for v, conv in zip(op.operands, spec.arg_casts):
            a = self._folded_cast(v, conv)
            if a is None and conv is not None:
                a = e.fresh("c")
                e.emit(f"{a} = {e.bind(conv, 'cast')}({e.ref(v)})", op)
            elif a is None:
                a = e.ref(v)
            if a.startswith("-"):
                a = f"({a})"
            args.append(a)
        helpers = {h: e.bind(obj, h) for h, obj in spec.helpers}
        assert spec.inline is not None
        for line in spec.inline.format(*args, r=e.define(op.results[0]), **helpers).split("\n"):
            e.emit(line, op)

    def _plan_cells(self, block: Block, last: dict[SSAValue, int | None]) -> None:
        """Find the block's cell reads (`_cell_read`) before generating it: the matrix a fused extractRow reads
        lives until its last cell is read, not only until the extractRow (`_dead_names`)."""
        pos = {op: i for i, op in enumerate(block.ops)}
        for op in block.ops:
            cols = self._cell_read(op) if isinstance(op, ExtractRowOp) else None
            if cols:
                self.fused.add(op)
                src = op.source
                if last.get(src) is not None:
                    last[src] = max(last[src], *(pos[c] for c in cols))  # type: ignore[type-var]

    def _cell_read(self, row: ExtractRowOp) -> list[Operation] | None:
        """`as.scalar(X[i, j])`: extractRow, then extractCol and the matrix-to-scalar cast right after it, become one
        cell read (`indexing.cell`) instead of two views and a 1 x 1 unwrap. The row may feed several such pairs
        (CSE merges `P[a, 0]` and `P[a, 1]`): it is fused when all its readers are, and the ops between it and its
        last reader are scalar ops and other pairs (nothing can write X in between, as an in-place insert could);
        each cell is read where its extractCol was. The extractCol ops, None: no fusion."""
        if not isinstance(row.source.type, MatrixType) or isinstance(row.selection.type, MatrixType):
            return None
        readers = {use.operation for use in row.res.uses}
        if not readers or any(c.parent is not row.parent for c in readers):
            return None
        pairs: dict[Operation, tuple[CastOp, str | None]] = {}
        op = row.next_op
        while len(pairs) < len(readers):
            if op is None:
                return None
            if op in readers:
                pair = self._cell_pair(op)
                if pair is None:
                    return None
                pairs[op] = pair
                op = pair[0].next_op
            elif isinstance(op, _PURE_SCALAR):
                op = op.next_op
            else:
                return None
        if any(c is not None for c in select_kernel(row).arg_casts):
            return None
        for col, (cast, vt) in pairs.items():
            self.cells[col] = (row, cast, vt)
        return list(pairs)

    def _cell_pair(self, col: Operation) -> tuple[CastOp, str | None] | None:
        """The as.scalar cast (and its target value type, None: the matrix's) that directly follows `col` and is
        its only reader, when `col` is an extractCol of one scalar position."""
        if not (isinstance(col, ExtractColOp) and not isinstance(col.selection.type, MatrixType)):
            return None
        if select_kernel(col).arg_casts != (None, None):
            return None
        return _as_scalar_after(col)

    def _emit_cell(self, col: Operation) -> None:
        row, cast, vt = self.cells.pop(col)
        e = self.e
        assert isinstance(row, ExtractRowOp) and isinstance(col, ExtractColOp)
        src, i, j = e.ref(row.source), e.ref(row.selection), e.ref(col.selection)
        out = e.define(cast.res)  # the lines report errors where DaphneDSL's indexing is, as the kernels do
        self.fused.add(cast)
        if vt is None and _int_typed(row.selection) and _int_typed(col.selection):
            # ndarray.item(i, j) is the cell as a Python scalar, a negative position counting from the end as
            # DaphneDSL's does; anything else (out of range, CSR) takes the kernel, which reports it
            e.emit("try:", col)
            e.emit(f"    {out} = {src}.item({i}, {j})", col)
            e.emit("except Exception:", col)
            e.emit(f"    {out} = {e.bind(cell, 'cell')}({src}, {i}, {j})", col)
            return
        extra = f", {vt!r}" if vt is not None else ""
        e.emit(f"{out} = {e.bind(cell, 'cell')}({src}, {i}, {j}{extra})", col)

    def _idx_scalar(self, op: IdxAggOp) -> bool:
        """`as.scalar(idxMin(v, 1))` right after each other, the position matrix 1 x 1 by its type and read only by
        the cast: one kernel returning the position (`agg.idx_scalar_kernel`), no 1 x 1 matrix between."""
        t = op.res.type
        if not (isinstance(t, MatrixType) and (t.rows.data, t.cols.data) == (1, 1)):
            return False
        found = _as_scalar_after(op)
        if found is None or found[1] is not None or select_kernel(op).arg_casts != (None,):
            return False
        cast = found[0]
        e = self.e
        fn = idx_scalar_kernel(op.KIND, op.AXIS)
        x, out, call = e.ref(op.arg), e.define(cast.res), f"{e.bind(fn, fn.__name__)}({e.ref(op.arg)})"
        if isinstance(op.arg.type, MatrixType) and not op.arg.type.is_sparse:
            # the kernel's fast path for an f64 vector inline (RDP's farthest point per segment: the call and its
            # checks cost about as much as the argmax of a short segment); a NaN found takes the kernel
            vector = (  # a non-empty column vector (per column) or row vector (per row)
                f"len({x}.shape) == 2 and {x}.shape[0] == 1 and {x}.shape[1]"
                if op.AXIS == "row"
                else f"{x}.shape[1:] == (1,) and {x}.shape[0]"
            )
            e.emit(f"if {_is_f64_matrix(e, x)} and {vector}:", op)
            e.emit(f"    {out} = int({x}.{'argmin' if op.KIND == 'min' else 'argmax'}())", op)
            e.emit(f"    if {x}.item({out}) != {x}.item({out}):", op)
            e.emit(f"        {out} = {call}", op)
            e.emit("else:", op)
            e.emit(f"    {out} = {call}", op)
        else:
            e.emit(f"{out} = {call}", op)
        self.fused.add(cast)
        return True

    def _cell_write(self, op: InsertOp, spec: KernelSpec) -> bool:
        """`X[i, j] = v` in place (`X[i:i+1, j:j+1]` as the IR has it) of an f64 scalar into an f64 matrix: one
        numpy item store when the program owns X's buffer and i, j are in range, else the kernel
        (`indexing.insert_range_in_place`, which copies a buffer it does not own and reports bad positions)."""
        t = op.arg.type
        if not (
            isinstance(t, MatrixType)
            and not t.is_sparse
            and vt_name(t) == "f64"
            and not isinstance(op.ins.type, MatrixType)
            and vt_name(op.ins.type) == "f64"
            and _int_typed(op.row_lower)
            and _int_typed(op.col_lower)
            and _plus_one(op.row_upper, op.row_lower)
            and _plus_one(op.col_upper, op.col_lower)
            and spec.arg_casts == (None,) * 6
        ):
            return False
        e = self.e
        x, v, rl, rh, cl, ch = (e.ref(a) for a in op.operands)
        fallback = f"{e.bind(spec.fn, spec.name)}({x}, {v}, {rl}, {rh}, {cl}, {ch})"
        self._owned_store(op, x, (rl, cl), f"{x}[{rl}, {cl}] = {v}", fallback)
        return True

    def _owned_store(self, op: Operation, x: str, positions: tuple[str, ...], store: str, fallback: str) -> None:
        """The code of an in-place store into X: `store` when the program owns X's buffer and no position (a
        literal is in range) is negative; else, or when the store fails (out of range), the kernel call
        `fallback`, which copies or reports. The op's result is X either way."""
        e = self.e
        out = e.define(op.results[0])
        owned = _owned(x)
        negative = "".join(f"{p} < 0 or " for p in positions if not p.isdigit())
        e.emit("try:", op)
        e.emit(f"    if {negative}not ({owned}):", op)
        e.emit("        raise IndexError", op)
        e.emit(f"    {store}", op)
        e.emit(f"    {out} = {x}", op)
        e.emit("except Exception:", op)
        e.emit(f"    {out} = {fallback}", op)

    def _row_literal(self, op: InsertOp) -> MatrixLiteralOp | None:
        """`X[i, ] = [a, b](1, 2)` in place (a stack of segments pushed per iteration): an in-place insert into an
        f64 matrix of a 1 x k literal of f64 scalars made in the same block for this insert alone, at row i
        (`i:i+1`) and constant columns `c:c+k`. Its code stores the k values into the row with numpy (`_row_write`)
        instead of building the literal and calling the insert kernel (two calls, ~3 us, per push)."""
        lit = op.ins.owner
        t = op.arg.type
        if not (
            isinstance(lit, MatrixLiteralOp)
            and lit.parent is op.parent
            and _single_use(lit.res)
            and isinstance(t, MatrixType)
            and not t.is_sparse
            and vt_name(t) == "f64"
            and isinstance(lit.res.type, MatrixType)
            and vt_name(lit.res.type) == "f64"
            and all(not isinstance(v.type, MatrixType) and vt_name(v.type) == "f64" for v in lit.elems)
            and _int_typed(op.row_lower)
            and _plus_one(op.row_upper, op.row_lower)
        ):
            return None
        k = len(lit.elems)
        rows, cols, lo, hi = (v.owner for v in (lit.num_rows, lit.num_cols, op.col_lower, op.col_upper))
        consts = [c.python_value() if isinstance(c, ConstantOp) else None for c in (rows, cols, lo, hi)]
        if any(type(c) is not int for c in consts) or consts[:2] != [1, k] or not 0 <= consts[2] == consts[3] - k:
            return None
        spec, lit_spec = select_kernel(op), select_kernel(lit)
        if spec.fn is not insert_range_in_place or any(spec.arg_casts) or any(lit_spec.arg_casts):
            return None
        return lit

    def _row_write(self, op: InsertOp, spec: KernelSpec, lit: MatrixLiteralOp) -> None:
        """The code of a `_row_literal` insert: a numpy row store when the program owns X's buffer (else, or for
        a bad position, the literal and the kernel, which copy or report)."""
        e = self.e
        x, rl, rh, cl, ch = (e.ref(a) for a in (op.arg, op.row_lower, op.row_upper, op.col_lower, op.col_upper))
        elems = [e.ref(v) for v in lit.elems]
        lit_fn = select_kernel(lit)
        value = f"{e.bind(lit_fn.fn, lit_fn.name)}({', '.join(elems)}, {e.ref(lit.num_rows)}, {e.ref(lit.num_cols)})"
        fallback = f"{e.bind(spec.fn, spec.name)}({x}, {value}, {rl}, {rh}, {cl}, {ch})"
        self._owned_store(op, x, (rl,), f"{x}[{rl}, {cl}:{ch}] = ({', '.join(elems)},)", fallback)

    def _pipeline(self, op: VectorizedPipelineOp) -> None:
        """The body becomes a local function over row blocks; the executor splits, runs and combines. When the
        pipeline names a loaded native kernel, the executor gets the kernel, bound to the Python body as its
        fallback for blocks of other forms and for errors."""
        e = self.e
        name = e.fresh("pipeline")
        params = [e.define(a) for a in op.body.block.args]
        e.emit(f"def {name}({', '.join(params)}):", op)
        e.indent += 1
        self._block(op.body.block)
        e.indent -= 1
        outs = [e.define(r) for r in op.outs]
        inputs = "".join(e.ref(v) + ", " for v in op.inputs)
        sym = kernel_symbol(op)
        kernel = self.kernels.get(sym) if sym is not None else None
        ordered = ORDERED_ATTR in op.attributes  # fuse-sums, fuse-maps, fuse-filter-agg on the default path
        binder = None if kernel is None else kernel.bind_when_ready if ordered else kernel.bind
        body = name if binder is None else f"{e.bind(binder, 'native_' + kernel.name)}({name})"
        modes = f"{tuple(op.split_modes)!r}, {tuple(op.combine_modes)!r}, {_result_vts(op)!r}"
        serial = ordered or CODEGEN_ATTR in op.attributes  # one call over all rows (--codegen: its loops)
        call = f"{e.bind(run_pipeline, 'run_pipeline')}({body}, ({inputs}), {modes}{', serial=True' if serial else ''})"
        e.emit(f"{''.join(o + ', ' for o in outs)}= {call}" if outs else call, op)
        self._promised_forms(outs, op)

    def _promised_forms(self, outs: list[str], op: VectorizedPipelineOp | DistributedPipelineOp) -> None:
        for o, r in zip(outs, op.outs):  # combined blocks take the representation and type the IR promises
            if isinstance(r.type, MatrixType):
                conv = to_csr if r.type.is_sparse else as_dense
                self.e.emit(f"{o} = {self.e.bind(conv, conv.__name__)}({o})", op)

    def _distributed_pipeline(self, op: DistributedPipelineOp) -> None:
        """`--distributed`: the coordinator ships the pipeline's IR text and inputs to the MPI workers and combines
        their results (`runtime.distributed.coordinator.run_distributed`)."""
        from daphnec.runtime.distributed.coordinator import run_distributed

        e = self.e
        outs = [e.define(r) for r in op.outs]
        inputs = "".join(e.ref(v) + ", " for v in op.inputs)
        ir = e.bind(op.ir_text, "dist_ir")
        modes = f"{tuple(op.split_modes)!r}, {tuple(op.combine_modes)!r}, {_result_vts(op)!r}"
        call = f"{e.bind(run_distributed, 'run_distributed')}({ir}, ({inputs}), {modes})"
        e.emit(f"{''.join(o + ', ' for o in outs)}= {call}" if outs else call, op)
        self._promised_forms(outs, op)

    def _call(self, op: func.CallOp) -> None:
        e = self.e
        call = f"{py_function_name(op.callee.root_reference.data)}({', '.join(e.ref(a) for a in op.arguments)})"
        if not op.results:
            e.emit(call, op)
        elif len(op.results) == 1:
            e.emit(f"{e.define(op.results[0])} = {call}", op)
        else:
            e.emit(f"{', '.join(e.define(r) for r in op.results)} = {call}", op)

    def _if(self, op: scf.IfOp) -> None:
        e = self.e
        outs = [e.define(r) for r in op.results]
        e.emit(f"if {e.ref(op.cond)}:", op)
        self._branch(op.true_region.block, outs, op)
        if op.false_region.blocks and (op.false_region.block.ops or outs):
            e.emit("else:", op)
            self._branch(op.false_region.block, outs, op)

    def _branch(self, block: Block, outs: list[str], op: Operation) -> None:
        e = self.e
        e.indent += 1
        self._block(block)
        y = block.last_op
        if isinstance(y, scf.YieldOp) and outs:
            self._assign(outs, [e.ref(v) for v in y.arguments], y)
        e.emit("pass")
        e.indent -= 1

    def _for(self, op: scf.ForOp) -> None:
        if isinstance(op, ParForOp) and PARFOR_WRITES_ATTR in op.attributes:  # the `parfor` pass accepted it
            self._parfor(op)
            return
        e = self.e
        block = op.body.block
        iv = e.define(block.args[0])
        carried = [e.define(a) for a in block.args[1:]]
        self._assign(carried, [e.ref(v) for v in op.iter_args], op)
        e.emit(f"for {iv} in range({e.ref(op.lb)}, {e.ref(op.ub)}, {e.ref(op.step)}):", op)
        e.indent += 1
        self._block(block)
        y = block.last_op
        if isinstance(y, scf.YieldOp):
            self._assign(carried, [e.ref(v) for v in y.arguments], y)
        e.emit("pass")
        e.indent -= 1
        for r, name in zip(op.results, carried):
            e.names[r] = name

    def _parfor(self, op: ParForOp) -> None:
        """The body becomes a local function of the iteration number and the results' buffers, which it writes in
        place; the executor runs it for every iteration on the task scheduler (`runtime/parfor.py`). Under
        `--distributed` the loop's shipped IR and inputs go to the MPI workers instead."""
        e = self.e
        block = op.body.block
        inits = "".join(e.ref(v) + ", " for v in op.iter_args)
        bounds = f"{e.ref(op.lb)}, {e.ref(op.ub)}"
        shipped = op.attributes.get(PARFOR_SHIPPED_ATTR)
        if isinstance(shipped, StringAttr):
            inputs = "".join(e.ref(v) + ", " for v in shipped_inputs(op))
            ir = e.bind(shipped.data, "parfor_ir")
            call = f"{e.bind(run_parfor_distributed, 'run_parfor_distributed')}({ir}, {bounds}, ({inits}), ({inputs}))"
        else:
            name = e.fresh("parfor")
            e.emit(f"def {name}({', '.join(e.define(a) for a in block.args)}):", op)
            e.indent += 1
            self._block(block)
            e.emit("pass")
            e.indent -= 1
            call = f"{e.bind(run_parfor, 'run_parfor')}({name}, {bounds}, ({inits}))"
        outs = [e.define(r) for r in op.results]
        e.emit(f"{''.join(o + ', ' for o in outs)}= {call}" if outs else call, op)
        for o, r in zip(outs, op.results):  # the buffers are dense: the representation the IR promises
            if isinstance(r.type, MatrixType) and r.type.is_sparse:
                e.emit(f"{o} = {e.bind(to_csr, 'to_csr')}({o})", op)

    def _while(self, op: scf.WhileOp) -> None:
        e = self.e
        before, after = op.before_region.block, op.after_region.block
        carried = [e.define(a) for a in before.args]
        self._assign(carried, [e.ref(v) for v in op.arguments], op)
        e.emit("while True:", op)
        e.indent += 1
        self._block(before)
        cond = before.last_op
        assert isinstance(cond, scf.ConditionOp)
        e.emit(f"if not {e.ref(cond.condition)}:", cond)
        e.indent += 1
        e.emit("break")
        e.indent -= 1
        for a, v in zip(after.args, cond.args):
            e.names[a] = e.ref(v)
        finals = [e.ref(v) for v in cond.args]
        self._block(after)
        y = after.last_op
        if isinstance(y, scf.YieldOp):
            self._assign(carried, [e.ref(v) for v in y.arguments], y)
        e.indent -= 1
        for r, name in zip(op.results, finals):
            e.names[r] = name


_PURE_SCALAR = (ConstantOp, CastOp, EwBinaryOp, EwUnaryOp, CondOp, ExtractColOp, ExtractRowOp)
"""Ops that write no matrix in place (`_cell_read` may move a cell read across them; region ops, calls and
inserts may)."""

_TERMINATORS = (scf.YieldOp, scf.ConditionOp, func.ReturnOp, PipelineReturnOp)


def _last_uses(block: Block) -> dict[SSAValue, int | None]:
    """For each matrix result of the block's ops: the position of the last op of the block that reads it (itself
    or in a nested region), None when a terminator passes it on (it must stay)."""
    ops = list(block.ops)
    pos = {op: i for i, op in enumerate(ops)}
    last: dict[SSAValue, int | None] = {}
    for i, op in enumerate(ops):
        for r in op.results:
            if not isinstance(r.type, MatrixType):
                continue
            end: int | None = i
            for use in r.uses:
                top = use.operation
                while top is not None and top.parent is not block:
                    top = top.parent_op()
                if top is None or isinstance(top, _TERMINATORS):
                    end = None
                    break
                end = max(end, pos[top])
            last[r] = end
    return last


def _as_scalar_after(op: Operation) -> tuple[CastOp, str | None] | None:
    """The matrix-to-scalar cast (`as.scalar`, kernel `meta.as_scalar`) right after `op` that is the only reader of
    its one result, with the cast's target value type (None: the matrix's); None if there is none."""
    cast = op.next_op
    if not (
        isinstance(cast, CastOp)
        and cast.arg is op.results[0]
        and _single_use(op.results[0])
        and not isinstance(cast.res.type, MatrixType)
        and not is_noop_cast(cast)
    ):
        return None
    spec = select_kernel(cast)
    fn = spec.fn
    base = fn.func if isinstance(fn, functools.partial) else fn
    if base is not as_scalar or spec.arg_casts != (None,):
        return None
    return cast, fn.keywords.get("vt") if isinstance(fn, functools.partial) else None


def _f64_ufunc(op: DaphneOp, spec: KernelSpec) -> object | None:
    """The ufunc of the f64 fast path that `op`'s kernel names (`f64_ufunc`), when the host code may inline it
    (`_inline_ufunc`): one result, no operand cast, a dense matrix operand; else None."""
    ufunc = getattr(spec.fn, "f64_ufunc", None)
    if ufunc is None or len(op.results) != 1 or any(c is not None for c in spec.arg_casts):
        return None
    types = [v.type for v in op.operands]
    if not any(isinstance(t, MatrixType) for t in types) or any(
        isinstance(t, MatrixType) and t.is_sparse for t in types
    ):
        return None
    return ufunc


def _emit_ufunc_call(
    e: _Emitter, op: Operation, out: str, fn: str, args: list[str], dying: Iterable[str], refs: str, indent: str
) -> None:
    """`out = fn(*args)`, written into the first of the `dying` operands that nothing else references (its
    reference count, the array owning its memory): the element-wise kernel's own reuse of dead operands, inline."""
    branch = "if"
    for m in dying:
        e.emit(f"{indent}{branch} {refs}.getrefcount({m}) == {INLINE_DEAD_REFS} and {_owned(m)}:", op)
        e.emit(f"{indent}    {out} = {fn}({', '.join(args)}, out={m})", op)
        branch = "elif"
    if branch == "elif":
        e.emit(f"{indent}else:", op)
        e.emit(f"{indent}    {out} = {fn}({', '.join(args)})", op)
    else:
        e.emit(f"{indent}{out} = {fn}({', '.join(args)})", op)


def _is_f64_matrix(e: _Emitter, x: str) -> str:
    """The test that the value named x is a dense f64 matrix (the element-wise kernels' own fast-path test)."""
    return f"type({x}) is {e.bind(np.ndarray, 'ndarray')} and {x}.dtype is {e.bind(dtype_of('f64'), 'f64')}"


def _owned(x: str) -> str:
    """The test that the program owns the buffer of the dense matrix named x (`dead_operands.owns_buffer`, inline)."""
    return f"{x}.base is None and {x}.flags.writeable and {x}.flags.c_contiguous"


def _plus_one(hi: SSAValue, lo: SSAValue) -> bool:
    """`hi` is `lo + 1`: both the same constant plus one, or an ewAdd of `lo` and the constant 1."""
    h = hi.owner
    if isinstance(h, ConstantOp):
        low = lo.owner
        return (
            isinstance(low, ConstantOp) and type(h.python_value()) is int and h.python_value() == low.python_value() + 1
        )
    if isinstance(h, EwBinaryOp) and h.KIND == "add" and h.lhs is lo:
        one = h.rhs.owner
        return isinstance(one, ConstantOp) and type(one.python_value()) is int and one.python_value() == 1
    return False


def _int_typed(v: SSAValue) -> bool:
    """A scalar of an integer value type: a Python int at run time."""
    return not isinstance(v.type, MatrixType) and vt_name(v.type) in ("si64", "ui64", "index", "si32", "ui32")


def _single_use(v: SSAValue) -> bool:
    uses = iter(v.uses)
    return next(uses, None) is not None and next(uses, None) is None


def _result_vts(op: VectorizedPipelineOp | DistributedPipelineOp) -> tuple[str | None, ...]:
    """The value type of each scalar result of a pipeline (None for matrices), for wrapping combined sums."""
    return tuple(None if isinstance(r.type, MatrixType) else vt_name(r.type) for r in op.outs)


def generate_host(module: ModuleOp, kernels: Mapping[str, NativeKernel | PendingKernel] | None = None) -> HostProgram:
    """Host code of a module; pipelines run the `kernels` their `daphne.native_kernel` names (none: Python bodies)."""
    return HostCodegen(module, kernels or {}).generate()
