"""Which vectorized pipelines lower to a native kernel, and the inputs, outputs and stages of that kernel.

The plan classifies every value of a pipeline body by its *form*:

- `scalar`: loop invariant (constants, scalar inputs);
- `rowvec`: a 1 x C matrix broadcast over the rows of the batch (a NONE input, or a ROWS input whose static type
  has one row), read at column c;
- `dense`:  n x C, one row per row of the batch, read at (r, c);
- `sparse`: the values of a CSR input's stored cells after zero-preserving ops (`G * t(c)`, `-G`, `G * 2`), read at
  stored position k; only aggregations consume them;
- `sink`:   results that only leave the pipeline (full and column aggregations, transposes);
- `whole`:  a NONE matrix input of several rows (a matMul's right operand), read only by opaque ops.

Ops whose results numpy computes with its own SIMD routines (exp ln sin cos tan sinh cosh tanh asin acos atan,
`log`, `^` with a matrix exponent) and `@` (BLAS) are *opaque*: they run their runtime kernel on the batch
between native *stages*. Stage k computes (fused) the dense operands of the opaque ops of level k+1 into
buffers; the last stage computes the results. An opaque op's level is one more than its operands'.

Everything the analysis cannot prove is rejected with a reason, and the pipeline keeps its Python body: static
column counts are required, and a value's runtime form (CSR or dense, row counts, dtypes) is checked by the
wrapper (`compiler.backend.wrapper`) before every call, which also falls back to the Python body whenever they
differ. The kernel's parameters follow from the plan by the calling convention in `abi`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from io import StringIO
from typing import Any

from xdsl.dialects.builtin import ArrayAttr, StringAttr, SymbolRefAttr
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.printer import Printer

from daphnec.compiler.ir_walk import preorder
from daphnec.compiler.lowering import abi, ew_kinds
from daphnec.dialects import ops
from daphnec.dialects.attr_names import NATIVE_FALLBACK_ATTR, NATIVE_KERNEL_ATTR, OPAQUE_ATTR
from daphnec.dialects.op_kinds import AGGREGATIONS, EW_UNARY
from daphnec.dialects.ops_matrix import MatMulOp
from daphnec.dialects.ops_pipeline import (
    PipelineReturnOp,
    VectorizedPipelineOp,
)
from daphnec.dialects.ops_relational import GroupedSumOp
from daphnec.dialects.types import MatrixType, is_matrix, vt_name
from daphnec.dialects.value_types import FLOAT_VTS, NUMERIC_VTS, Combine, Split

#: Value types of scalars a native kernel takes; matrix elements are these but `index` (index matrices keep the
#: Python body).
SCALAR_VTS = NUMERIC_VTS
MATRIX_VTS = NUMERIC_VTS - {"index"}

#: Element-wise kinds with a native lowering (`ew_kinds`); `log` and `pow` with a matrix exponent are opaque.
BINARY_KINDS = frozenset(ew_kinds.BINARY)
UNARY_KINDS = frozenset(ew_kinds.UNARY)
#: Unary kinds run by their runtime kernel between native stages: the libm functions without a native lowering
#: (numpy's SIMD routines, whose results differ from libm's in the last bit).
OPAQUE_UNARY_KINDS = frozenset(k for k, r in EW_UNARY.items() if r.libm is not None and k not in UNARY_KINDS)
#: Aggregations whose per-block results combine (full and column aggregations of a batch; row aggregations also
#: take `mean`).
AGG_KINDS = frozenset(k for k, r in AGGREGATIONS.items() if r.combine is not None)


class Unsupported(Exception):
    """The pipeline has no native lowering; the message says why (printed by `daphne-opt` as an attribute)."""


@dataclass(frozen=True)
class Kind:
    """The form of one body value (see the module docstring), its static column count and value type."""

    form: str
    cols: int
    vt: str
    src: int = -1
    """For `sparse`: the input whose CSR pattern the value has."""


@dataclass(frozen=True)
class InputSpec:
    """One pipeline input as the kernel reads it: `dense` rows, a `rowvec`, a `whole` matrix, `csr` or a
    `scalar` (how each is passed: `input_kind`)."""

    form: str
    vt: str
    cols: int
    finite_check: bool = False
    """A broadcast factor of a CSR product: `0 * x` must be zero for the result to stay CSR, i.e. x finite."""


@dataclass(frozen=True)
class OutputSpec:
    """One pipeline result: `rows` (n x C block), `cols` (C x n block of a transpose), `all` (a full aggregate of
    the batch, one cell), `col` (1 x C column aggregates of the batch) or `group` (G x 1 per-group sums)."""

    form: str
    vt: str
    cols: int
    agg: str = ""
    size: int = -1
    """For `group` (per-group sums of the batch, `daphne.groupedSum`): the input holding the number of groups."""


@dataclass(frozen=True)
class Stage:
    """One native kernel of a pipeline: it reads the inputs and the results of the opaque ops run so far
    (`opaque_in`) and writes `sinks` (dense operands of the next opaque ops, or the pipeline's results)."""

    name: str
    level: int
    """The stage runs after the opaque ops of this level (0: first)."""
    opaque_in: tuple[SSAValue, ...]
    sinks: tuple[tuple[SSAValue, OutputSpec], ...]


@dataclass
class KernelPlan:
    """Everything the loop generator and the Python wrapper need to know about one pipeline."""

    name: str
    text: str
    inputs: tuple[InputSpec, ...]
    outputs: tuple[OutputSpec, ...]
    kinds: dict[SSAValue, Kind] = field(repr=False)
    flat: bool
    """True when every value is dense with the same column count and no op needs (row, column) coordinates:
    the kernel is then one loop over n * C cells."""
    stages: tuple[Stage, ...] = ()
    opaque: tuple[tuple[Operation, int], ...] = ()
    """The opaque ops with their level (they run after stage level - 1), in execution order."""


def input_kind(spec: InputSpec) -> abi.ArgKind:
    """How an input is passed to the kernel (`abi`)."""
    if spec.form == "csr":
        return abi.ArgKind.CSR
    if spec.form != "scalar":
        return abi.ArgKind.ARRAY
    if spec.vt in FLOAT_VTS:
        return abi.ArgKind.F64
    return abi.ArgKind.U64 if spec.vt in ("ui64", "index") else abi.ArgKind.I64


def stage_params(plan: KernelPlan, stage: Stage) -> tuple[abi.Param, ...]:
    """A stage kernel's parameters: rows, the pipeline's inputs, the results of the opaque ops run before it, its
    outputs (the next opaque ops' dense operands, or the pipeline's results)."""
    params = [abi.Param(abi.ArgKind.ROWS, "index")]
    params += [abi.Param(input_kind(s), s.vt) for s in plan.inputs]
    params += [abi.Param(abi.ArgKind.ARRAY, plan.kinds[v].vt) for v in stage.opaque_in]
    params += [abi.Param(abi.ArgKind.ARRAY, o.vt) for _, o in stage.sinks]
    return tuple(params)


class _PlanPrinter(Printer):
    """Prints ops without the attributes the lowering itself writes on a pipeline."""

    def print_op_attributes(self, attributes: Mapping[str, Attribute], **kwargs: Any) -> bool:
        kept = {k: v for k, v in attributes.items() if k not in abi.LOWERING_ATTRS}
        return super().print_op_attributes(kept, **kwargs)


def pipeline_text(op: VectorizedPipelineOp) -> str:
    """The pipeline op in MLIR's generic form without locations (and without the lowering's own attributes):
    what identifies its kernel. Outer operand types are part of it, so equal texts have equal plans."""
    buf = StringIO()
    _PlanPrinter(buf, print_generic_format=True).print_op(op)
    return buf.getvalue()


def annotate(op: VectorizedPipelineOp, plan: KernelPlan | None, why: str = "") -> None:
    """Name the pipeline's kernel module on it (`daphne.native_kernel`, and `daphne.opaque` for the ops run between
    its stages), or say why it keeps its Python body (`daphne.native`)."""
    for name in abi.LOWERING_ATTRS:
        op.attributes.pop(name, None)
    if plan is None:
        op.attributes[NATIVE_FALLBACK_ATTR] = StringAttr(f"fallback: {why}")
        return
    op.attributes[NATIVE_KERNEL_ATTR] = SymbolRefAttr(plan.name)
    if plan.opaque:
        op.attributes[OPAQUE_ATTR] = ArrayAttr([StringAttr(o.name) for o, _ in plan.opaque])


def kernel_name(text: str) -> str:
    return "vp_" + hashlib.sha256(text.encode()).hexdigest()[:16]


def try_plan(op: VectorizedPipelineOp) -> tuple[KernelPlan | None, str]:
    """The plan of a pipeline, or None and the reason it keeps its Python body."""
    try:
        return plan_pipeline(op), ""
    except Unsupported as e:
        return None, str(e)


PipelinePlans = Mapping[VectorizedPipelineOp, KernelPlan | None]
"""Each pipeline's plan (None: it keeps its Python body)."""


def plan_pipelines(module: Operation) -> dict[VectorizedPipelineOp, KernelPlan | None]:
    """Plan every pipeline of the module, naming its kernel module on it or saying why it has none (`annotate`).
    Here, not beside the lowering, because planning needs no lowering dialect: a run whose kernels are all in the
    kernel cache never imports xDSL's llvm, arith, vector and math dialects (~0.1-0.2 s of start-up)."""
    plans: dict[VectorizedPipelineOp, KernelPlan | None] = {}
    for pipe in [p for p in preorder(module) if isinstance(p, VectorizedPipelineOp)]:
        plan, why = try_plan(pipe)
        annotate(pipe, plan, why)
        plans[pipe] = plan
    return plans


def plan_pipeline(op: VectorizedPipelineOp) -> KernelPlan:
    """Classify the body; raises `Unsupported` when any op, type or shape has no native lowering."""
    text = pipeline_text(op)
    a = _Analysis(op)
    inputs = a.classify_inputs()
    for inner in op.body.block.ops:
        a.visit(inner)
    outputs = a.outputs()
    inputs = tuple(InputSpec(s.form, s.vt, s.cols, i in a.finite) for i, s in enumerate(inputs))
    name = kernel_name(text)
    stages, opaque = a.stages(name, outputs)
    return KernelPlan(name, text, inputs, outputs, a.kinds, a.is_flat(), stages, opaque)


class _Analysis:
    def __init__(self, op: VectorizedPipelineOp):
        self.op = op
        self.kinds: dict[SSAValue, Kind] = {}
        self.finite: set[int] = set()
        self.sink_kinds: dict[SSAValue, tuple[str, str]] = {}
        self.group_size: dict[SSAValue, int] = {}
        self.needs_coords = False
        self.level: dict[SSAValue, int] = {}
        self.opaque: list[Operation] = []

    # -- inputs --------------------------------------------------------------------------------------------------

    def classify_inputs(self) -> tuple[InputSpec, ...]:
        op = self.op
        args = op.body.block.args
        outer = [v.type for v in op.inputs]
        row_mats = [t for t, s in zip(outer, op.split_modes) if s == Split.ROWS and is_matrix(t)]
        # one-row ROWS inputs are row vectors broadcast over the batch, unless every input has one row (then n = 1)
        all_single = bool(row_mats) and all(t.rows.data == 1 and not t.is_sparse for t in row_mats)
        specs = []
        for i, (arg, t, split) in enumerate(zip(args, outer, op.split_modes)):
            spec = self._input(i, t, split, all_single)
            self.kinds[arg] = Kind(_FORM_OF_INPUT[spec.form], spec.cols, spec.vt, i if spec.form == "csr" else -1)
            specs.append(spec)
        if not any(s.form in ("dense", "csr") for s in specs):
            raise Unsupported("no input is split by rows")
        return tuple(specs)

    def _input(self, i: int, t: object, split: int, all_single: bool) -> InputSpec:
        if not is_matrix(t):
            vt = vt_name(t)  # type: ignore[arg-type]
            if vt not in SCALAR_VTS:
                raise Unsupported(f"input {i} has value type {vt}")
            return InputSpec("scalar", vt, 1)
        assert isinstance(t, MatrixType)
        vt, (rows, cols) = vt_name(t), t.shape
        if vt not in MATRIX_VTS:
            raise Unsupported(f"input {i} is a matrix of value type {vt}")
        if cols <= 0:
            raise Unsupported(f"input {i} has {'an unknown number of' if cols < 0 else 'no'} columns")
        if t.is_sparse:
            if split != Split.ROWS:
                raise Unsupported(f"CSR input {i} is not split by rows")
            return InputSpec("csr", vt, cols)
        if split == Split.ROWS and not (rows == 1 and not all_single):
            return InputSpec("dense", vt, cols)
        if rows != 1:
            return InputSpec("whole", vt, cols)  # e.g. a matMul's right operand: rejected where it is used
        return InputSpec("rowvec", vt, cols)

    # -- body ops ------------------------------------------------------------------------------------------------

    def kind(self, v: SSAValue) -> Kind:
        k = self.kinds.get(v)
        if k is None:
            raise Unsupported(f"a value of type {v.type} has no native form")
        if k.form == "sink":
            raise Unsupported("an aggregate or transpose is used inside the pipeline")
        if k.form == "whole":
            raise Unsupported("a whole matrix input (not split by rows, not a row vector) is read element-wise")
        return k

    def visit(self, op: object) -> None:
        if isinstance(op, PipelineReturnOp):
            return
        if isinstance(op, ops.ConstantOp):
            vt = vt_name(op.res.type)
            if vt not in SCALAR_VTS:
                raise Unsupported(f"constant of value type {vt}")
            self.kinds[op.res] = Kind("scalar", 1, vt)
            return
        base = max((self.level.get(v, 0) for v in op.operands), default=0)  # type: ignore[attr-defined]
        if _is_opaque(op):
            self.kinds[op.results[0]] = self._opaque(op)  # type: ignore[attr-defined]
            self.level[op.results[0]] = base + 1  # type: ignore[attr-defined]
            return
        self._native(op)
        self.level[op.results[0]] = base  # type: ignore[attr-defined]

    def _native(self, op: object) -> None:
        handler = _HANDLERS.get(type(op))
        if handler is None:
            for base, h in _BASE_HANDLERS:
                if isinstance(op, base):
                    handler = h
                    break
        if handler is None:
            raise Unsupported(f"'{op.name}' has no native lowering")  # type: ignore[attr-defined]
        res = op.results[0]  # type: ignore[attr-defined]
        vt = vt_name(res.type)
        if vt not in MATRIX_VTS:
            raise Unsupported(f"'{op.name}' produces value type {vt}")  # type: ignore[attr-defined]
        kind = handler(self, op, vt)
        if kind.form in ("dense", "rowvec") and _csr_typed(res):
            raise Unsupported(f"'{op.name}' produces a CSR matrix")  # type: ignore[attr-defined]
        if kind.form == "sparse" and not all(_csr_typed(v) for v in op.operands if self.kinds[v].form == "sparse"):  # type: ignore[attr-defined]
            raise Unsupported(f"'{op.name}' reads a densified CSR matrix")  # type: ignore[attr-defined]
        self.kinds[res] = kind

    def _opaque(self, op: Operation) -> Kind:
        """An op run by its runtime kernel on the batch: dense operands (materialised by the stage before it, or
        inputs), scalars, or whole/row-vector inputs; a dense result of static width."""
        t = op.results[0].type
        vt = vt_name(t)
        if not is_matrix(t) or vt not in MATRIX_VTS or t.cols.data <= 0 or t.is_sparse:  # type: ignore[attr-defined]
            raise Unsupported(f"'{op.name}' produces no dense numeric matrix of known width")
        for v in op.operands:
            k = self.kinds.get(v)
            if k is None or k.form in ("sparse", "sink"):
                raise Unsupported(f"'{op.name}' reads a {k.form if k else 'non-numeric'} value")
            if k.form in ("rowvec", "whole") and v.owner is not self.op.body.block:
                raise Unsupported(f"'{op.name}' reads a computed row vector")
        first = self.kinds[op.operands[0]]
        if isinstance(op, MatMulOp) and first.form != "dense":
            raise Unsupported("'daphne.matMul' with a left operand that is not split by rows")
        if not isinstance(op, MatMulOp) and "dense" not in {self.kinds[v].form for v in op.operands}:
            raise Unsupported(f"'{op.name}' on no matrix split by rows")
        self.needs_coords = self.needs_coords or isinstance(op, MatMulOp)
        self.opaque.append(op)
        return Kind("dense", t.cols.data, vt)  # type: ignore[attr-defined]

    def stages(self, name: str, outputs: tuple[OutputSpec, ...]) -> tuple[tuple[Stage, ...], tuple]:
        """Cut the body at its opaque ops (see the module docstring)."""
        if not self.opaque:
            return (Stage(name, 0, (), tuple(zip(self._returned(), outputs))),), ()
        if all(
            isinstance(o, ops.ConstantOp) or o in self.opaque
            for o in self.op.body.block.ops
            if not isinstance(o, PipelineReturnOp)
        ):
            raise Unsupported("every op is run by its runtime kernel: nothing to compile")
        final = max(self.level.values())
        materialise: dict[SSAValue, int] = {}
        for o in self.opaque:
            for v in o.operands:
                k = self.kinds[v]
                is_input = v.owner is self.op.body.block or v.owner in self.opaque
                if k.form == "dense" and not is_input:
                    materialise.setdefault(v, self.level.get(v, 0))
        results = [(o, self.level[o.results[0]]) for o in self.opaque]
        results.sort(key=lambda p: p[1])
        stages = []
        for s in range(final + 1):
            sinks = [
                (v, OutputSpec("rows", self.kinds[v].vt, self.kinds[v].cols))
                for v, lv in materialise.items()
                if lv == s
            ]
            if s == final:
                sinks += list(zip(self._returned(), outputs))
            avail = tuple(o.results[0] for o, lv in results if lv <= s)
            if sinks:  # a stage with nothing to write is skipped (its opaque ops read inputs only)
                stages.append(Stage(f"{name}_s{s}", s, avail, tuple(sinks)))
        return tuple(stages), tuple(results)

    def _returned(self) -> list[SSAValue]:
        ret = self.op.body.block.last_op
        assert isinstance(ret, PipelineReturnOp)
        return list(ret.operands)

    def binary(self, op: ops.EwBinaryOp, vt: str) -> Kind:
        if op.KIND not in BINARY_KINDS:
            raise Unsupported(f"'{op.name}' has no native lowering")
        lk, rk = self.kind(op.lhs), self.kind(op.rhs)
        if op.KIND == "pow" and rk.form != "scalar":
            raise Unsupported("'daphne.ewPow' with a matrix exponent has no native lowering")
        if "scalar" == lk.form == rk.form:
            raise Unsupported(f"'{op.name}' on two scalars")
        if lk.form == "sparse" or rk.form == "sparse":
            return self._sparse_binary(op, lk, rk, vt)
        if lk.form == "scalar":
            return Kind(rk.form, rk.cols, vt)
        if rk.form == "scalar":
            return Kind(lk.form, lk.cols, vt)
        if lk.form == "rowvec" and rk.form == "dense":
            raise Unsupported(f"'{op.name}': a row vector cannot be broadcast on the left")
        if rk.cols not in (lk.cols, 1):
            raise Unsupported(f"'{op.name}': shape mismatch ({lk.cols} vs {rk.cols} columns)")
        if rk.form == "rowvec" or rk.cols != lk.cols:
            self.needs_coords = True
        return Kind(lk.form, lk.cols, vt)

    def _sparse_binary(self, op: ops.EwBinaryOp, lk: Kind, rk: Kind, vt: str) -> Kind:
        sp, other = (lk, rk) if lk.form == "sparse" else (rk, lk)
        ok = op.KIND == "mul" and (other.form == "scalar" or self._broadcast_input(op.rhs, rk, sp))
        ok = ok or (op.KIND == "div" and lk is sp and rk.form == "scalar")
        if not ok:
            raise Unsupported(f"'{op.name}' on a CSR matrix does not keep its pattern natively")
        return Kind("sparse", sp.cols, vt, sp.src)

    def _broadcast_input(self, v: SSAValue, k: Kind, sp: Kind) -> bool:
        """`G * t(c)`: a row-vector *input* (checked for finiteness once per object by the wrapper)."""
        if k.form != "rowvec" or k.cols not in (sp.cols, 1) or v.owner is not self.op.body.block:
            return False
        self.finite.add(self.op.body.block.args.index(v))  # type: ignore[arg-type]
        return True

    def unary(self, op: ops.EwUnaryOp, vt: str) -> Kind:
        if op.KIND not in UNARY_KINDS:
            raise Unsupported(f"'{op.name}' has no native lowering")
        k = self.kind(op.arg)
        if k.form == "scalar":
            raise Unsupported(f"'{op.name}' on a scalar")
        if k.form == "sparse" and not EW_UNARY[op.KIND].zero_preserving:
            raise Unsupported(f"'{op.name}' on a CSR matrix does not keep its pattern")
        return Kind(k.form, k.cols, vt, k.src)

    def cast(self, op: ops.CastOp, vt: str) -> Kind:
        k = self.kind(op.arg)
        if is_matrix(op.arg.type) != is_matrix(op.res.type):
            raise Unsupported("a cast between a matrix and a scalar")
        return Kind(k.form, k.cols, vt, k.src)

    def agg(self, op: ops.AggOp, vt: str) -> Kind:
        k = self.kind(op.arg)
        if k.form not in ("dense", "sparse"):
            raise Unsupported(f"'{op.name}' of a {k.form}")
        if op.AXIS == "row" and op.KIND in (*AGG_KINDS, "mean"):
            self.needs_coords = True
            return Kind("dense", 1, vt)
        if op.AXIS == "all" and op.KIND in AGG_KINDS:
            self.sink_kinds[op.res] = ("all", op.KIND)
            return Kind("sink", k.cols, vt)
        if op.AXIS == "col" and op.KIND in AGG_KINDS and k.form == "dense":
            self.needs_coords = True
            self.sink_kinds[op.res] = ("col", op.KIND)
            return Kind("sink", k.cols, vt)
        raise Unsupported(f"'{op.name}' has no native lowering")

    def transpose(self, op: ops.TransposeOp, vt: str) -> Kind:
        k = self.kind(op.arg)
        if k.form != "dense":
            raise Unsupported(f"'daphne.transpose' of a {k.form}")
        self.needs_coords = True
        self.sink_kinds[op.res] = ("cols", "")
        return Kind("sink", k.cols, vt)

    def cond(self, op: ops.CondOp, vt: str) -> Kind:
        """`c ? a : b` element-wise (a fused filter's selection, `fuse-filter-agg`): a dense condition, values
        dense of its width or scalars."""
        if not is_matrix(op.cond.type):
            raise Unsupported("'daphne.cond' with a scalar condition")
        ck = self.kind(op.cond)
        if ck.form != "dense":
            raise Unsupported(f"'daphne.cond' with a {ck.form} condition")
        for v in (op.then_val, op.else_val):
            k = self.kind(v)
            if k.form not in ("dense", "scalar") or (k.form == "dense" and k.cols != ck.cols):
                raise Unsupported("'daphne.cond' with a broadcast or sparse value")
        return Kind("dense", ck.cols, vt)

    def grouped_sum(self, op: GroupedSumOp, vt: str) -> Kind:
        """Per-group sums of the batch into a G x 1 output (`fuse-filter-agg`): dense 1-column ids and values, the
        number of groups a scalar input (the output's size)."""
        ik, xk = self.kind(op.ids), self.kind(op.values)
        if ik.form != "dense" or ik.cols != 1 or ik.vt not in ("si64", "ui64") or xk.form != "dense" or xk.cols != 1:
            raise Unsupported("'daphne.groupedSum' needs dense 1-column integer ids and values")
        if op.ngroups.owner is not self.op.body.block or self.kind(op.ngroups).form != "scalar":
            raise Unsupported("'daphne.groupedSum': the number of groups is not a scalar input")
        self.sink_kinds[op.res] = ("group", "sum")
        self.group_size[op.res] = self.op.body.block.args.index(op.ngroups)  # type: ignore[arg-type]
        return Kind("sink", 1, vt)

    def extract_col(self, op: ops.ExtractColOp, vt: str) -> Kind:
        k = self.kind(op.source)
        sel = ops.constant_value(op.selection)
        if k.form != "dense" or type(sel) is not int:
            raise Unsupported("'daphne.extractCol' needs a dense source and a constant integer position")
        j = sel + k.cols if sel < 0 else sel
        if not 0 <= j < k.cols:
            raise Unsupported("'daphne.extractCol': the position is out of bounds")
        self.needs_coords = True
        return Kind("dense", 1, vt)

    # -- results -------------------------------------------------------------------------------------------------

    def outputs(self) -> tuple[OutputSpec, ...]:
        ret = self.op.body.block.last_op
        assert isinstance(ret, PipelineReturnOp)
        specs = []
        for v, mode in zip(ret.operands, self.op.combine_modes):
            k = self.kinds[v]
            sink = self.sink_kinds.get(v)
            if mode == Combine.ROWS and k.form == "dense":
                specs.append(OutputSpec("rows", k.vt, k.cols))
            elif mode == Combine.COLS and sink is not None and sink[0] == "cols":
                specs.append(OutputSpec("cols", k.vt, k.cols))
            elif sink is not None and sink[0] == "group" and mode == Combine.ADD:
                specs.append(OutputSpec("group", k.vt, 1, "sum", self.group_size[v]))
            elif sink is not None and sink[0] in ("all", "col") and AGGREGATIONS[sink[1]].combine == mode:
                specs.append(OutputSpec(sink[0], k.vt, k.cols if sink[0] == "col" else 1, sink[1]))
            else:
                raise Unsupported(f"a {k.form} result cannot be combined natively")
        return tuple(specs)

    def is_flat(self) -> bool:
        dense = [k for k in self.kinds.values() if k.form in ("dense", "sink")]
        forms = {k.form for k in self.kinds.values()}
        return (
            not self.needs_coords
            and "sparse" not in forms
            and "rowvec" not in forms
            and len({k.cols for k in dense}) == 1
        )


def _is_opaque(op: object) -> bool:
    """Ops run by their runtime kernel between native stages (numpy's SIMD libm, BLAS)."""
    if isinstance(op, ops.EwUnaryOp):
        return op.KIND in OPAQUE_UNARY_KINDS
    if isinstance(op, ops.EwBinaryOp):
        return op.KIND == "log" or (op.KIND == "pow" and is_matrix(op.rhs.type))
    return isinstance(op, MatMulOp)


def _csr_typed(v: SSAValue) -> bool:
    return isinstance(v.type, MatrixType) and v.type.is_sparse


_FORM_OF_INPUT = {"dense": "dense", "rowvec": "rowvec", "csr": "sparse", "scalar": "scalar", "whole": "whole"}

_HANDLERS = {
    ops.CastOp: _Analysis.cast,
    ops.TransposeOp: _Analysis.transpose,
    ops.ExtractColOp: _Analysis.extract_col,
    ops.CondOp: _Analysis.cond,
    GroupedSumOp: _Analysis.grouped_sum,
}
_BASE_HANDLERS = (
    (ops.EwBinaryOp, _Analysis.binary),
    (ops.EwUnaryOp, _Analysis.unary),
    (ops.AggOp, _Analysis.agg),
)
