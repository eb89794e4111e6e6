"""The Python side of a native pipeline kernel: generated wrapper code around its loaded entry points.

    make_kernel(op, plan, object_key) -> runtime.vectorized.kernel.NativeKernel
    NativeKernel.bind(python_body) -> PipelineBody(body, prepare, ...)

The wrapper is Python source generated here and run by the runtime (`runtime.vectorized.kernel.wrapper_factory`,
with the runtime's helpers: `all_ones`, `finite_check`), like host code: the kernel object holds the source and
plain values, so a program restored from the whole-program cache rebuilds it without the compiler.

`body(*row_blocks)` has the executor's contract (`runtime.vectorized.pipeline.run_pipeline`): one row block per
input in, the block's results out. It checks that the blocks have the forms the kernel was compiled for (dtype,
columns, dense or CSR, equal row counts, finite CSR broadcast factors) and calls the Python body instead when they
do not, or when the kernel reports an error (integer division by zero, a domain error, a `^` exponent other than
2): the Python body then raises DAPHNE's message or computes numpy's result. The native call goes through
`ctypes.CFUNCTYPE`, which releases the GIL, so worker threads run kernels in parallel. The arguments of every
call follow the kernel's calling convention (`lowering.abi`): the blocks' rows, then per parameter its slots
(a dense matrix as the numpy array object itself, a CSR matrix as its three arrays plus flags, a scalar by value).

A pipeline with opaque ops (numpy math, matMul) runs its stage kernels in order, and between them the opaque
ops' runtime kernels (the ones its Python body calls) on the batch's materialised operands.

`prepare` (single-stage kernels without opaque ops) is the executor's fast path: it checks the whole inputs once
per pipeline run, allocates the row results once, and returns `run(start, end)`, which calls the kernel on rows
[start, end) with views made by slicing only (a dense input's rows, a CSR input's row pointers: its data and
index arrays are passed whole, the kernel reads the stored positions the row pointers give), so a task costs a
ctypes call and a few slices; each task writes its rows into the shared result buffers.

The generated code compares dtypes with `==`, not `is`: a program restored from the program cache holds
unpickled dtype objects, which equal numpy's but are other objects.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from xdsl.ir import Operation, SSAValue

from daphnec.compiler.lowering import abi
from daphnec.compiler.lowering.kernel_plan import InputSpec, KernelPlan, OutputSpec, Stage, stage_params
from daphnec.compiler.selection.table import select_kernel
from daphnec.dialects.ops import ConstantOp
from daphnec.dialects.ops_pipeline import VectorizedPipelineOp
from daphnec.dialects.value_types import DTYPES, FLOAT_VTS
from daphnec.runtime.vectorized.kernel import EntryPoint, NativeKernel, wrapper_factory

_FALLBACK = "    return _py(*args)"


def _input_checks(i: int, s: InputSpec, first: int) -> list[str]:
    a = f"a{i}"
    if s.form == "scalar":
        return []
    if s.form == "csr":
        lines = [
            f"if getattr({a}, 'format', None) != 'csr' or {a}.dtype != _dt{i} or {a}.shape[1] != {s.cols}:",
            _FALLBACK,
            f"ind{i}, ptr{i} = {a}.indices, {a}.indptr",
            f"if ind{i}.dtype != ptr{i}.dtype or (ind{i}.dtype != _i32 and ind{i}.dtype != _i64):",
            _FALLBACK,
        ]
    else:
        shape = {
            "rowvec": f"{a}.shape != (1, {s.cols})",
            "dense": f"{a}.shape[1:] != ({s.cols},)",
            "whole": f"{a}.ndim != 2 or {a}.shape[1] != {s.cols}",
        }[s.form]
        lines = [
            f"if {a}.__class__ is not _nd or {a}.dtype != _dt{i} or {shape} or not {a}.flags.c_contiguous:",
            _FALLBACK,
        ]
    if s.form in ("csr", "dense"):
        lines += [f"n = {a}.shape[0]"] if i == first else [f"if {a}.shape[0] != n:", _FALLBACK]
    if s.finite_check and s.vt in FLOAT_VTS:
        lines += [f"if not _fin{i}({a}):", _FALLBACK]
    return lines


def _csr_flags(i: int, s: InputSpec) -> str:
    """The flags slot of CSR input i (`abi.CSR_INDEX64` is bit 0: the comparison's 1)."""
    ones = f" | _ones(a{i})" if s.vt in FLOAT_VTS else ""
    return f"(ind{i}.dtype == _i64){ones}"


def _call_args(plan: KernelPlan, stage: Stage, part: Callable[[int, InputSpec, str], str], rest: list[str]) -> str:
    """The argument list of a stage kernel call, slot by slot (`abi.SLOTS`): the rows, `part(i, spec, slot)` for
    each slot of input i, then `rest` (the array slots of the opaque results and outputs)."""
    params = stage_params(plan, stage)
    n_inputs = len(plan.inputs)
    exprs = [part(-1, plan.inputs[0], "rows")]
    for i, (p, spec) in enumerate(zip(params[1 : 1 + n_inputs], plan.inputs)):
        exprs += [part(i, spec, slot.part) for slot in abi.SLOTS[p.kind]]
    assert all(abi.SLOTS[p.kind] == abi.SLOTS[abi.ArgKind.ARRAY] for p in params[1 + n_inputs :])
    return ", ".join(exprs + rest)


def _block_part(i: int, s: InputSpec, part: str) -> str:
    """A slot of input i in `body` (row blocks; `n`: their rows)."""
    if part == "rows":
        return "n"
    if part == "data":
        return f"a{i}.data"
    if part == "indices":
        return f"ind{i}"
    if part == "indptr":
        return f"ptr{i}"
    if part == "flags":
        return _csr_flags(i, s)
    return f"a{i}"  # an array or a scalar value


def _range_part(i: int, s: InputSpec, part: str) -> str:
    """A slot of input i in `prepare`'s `run(s, e)`: rows [s, e) of the whole inputs (a CSR matrix's values and
    column indices whole, its row pointers sliced; its flags computed once by `prepare`)."""
    if part == "rows":
        return "e - s"
    if part == "array" and s.form == "dense":
        return f"a{i}[s:e]"
    if part == "indptr":
        return f"ptr{i}[s:e + 1]"
    if part == "flags":
        return f"f{i}"
    return _block_part(i, s, part)


def _alloc(name: str, o: OutputSpec, dt: str) -> str:
    shape = {"rows": f"(n, {o.cols})", "cols": f"({o.cols}, n)", "all": "1", "col": f"(1, {o.cols})"}.get(o.form)
    return f"{name} = _empty({shape or _group_shape(o)}, {dt})"


def _group_shape(o: OutputSpec) -> str:
    """A `group` result: G x 1, G the value of the scalar input `size` (`daphne.groupedSum`)."""
    return f"(a{o.size}, 1)"


def _result(j: int, o: OutputSpec) -> str:
    if o.form != "all":
        return f"o{j}"
    conv = "float" if o.vt in FLOAT_VTS else "bool" if o.vt == "bool" else "int"
    return f"{conv}(o{j}[0])"


class _Source:
    """Names of the values the generated wrapper handles: inputs a<i>, materialised operands m<i>, opaque results
    q<i>, outputs o<i>; the Python objects it needs are its constants (`bind`) and each stage's entry point is a
    global of the wrapper (`entry`)."""

    def __init__(self, op: VectorizedPipelineOp, plan: KernelPlan):
        self.plan = plan
        self.names: dict[SSAValue, str] = {a: f"a{i}" for i, a in enumerate(op.body.block.args)}
        self.ns: dict[str, object] = {}
        self.entries: dict[str, Stage] = {}
        self.lines: list[str] = []

    def bind(self, obj: object, prefix: str) -> str:
        name = f"_{prefix}{len(self.ns)}"
        self.ns[name] = obj
        return name

    def entry(self, stage: Stage) -> str:
        """The global name of the stage's entry point (its ctypes function, bound by the runtime)."""
        name = f"_fn_{stage.name}"
        self.entries[name] = stage
        return name

    def stage(self, st: Stage, final: bool) -> None:
        outs = []
        for j, (v, o) in enumerate(st.sinks):
            if final and j >= len(st.sinks) - len(self.plan.outputs):
                name = f"o{j - (len(st.sinks) - len(self.plan.outputs))}"
            else:
                name = self.names[v] = f"m{len(self.names)}"
            self.lines.append(_alloc(name, o, self.bind(DTYPES[o.vt], "odt")))
            outs.append(name)
        call = _call_args(self.plan, st, _block_part, [self.names[v] for v in st.opaque_in] + outs)
        fn = self.entry(st)
        self.lines += ["try:", f"    status = {fn}({call})", "except _ArgErr:", _FALLBACK, "if status:", _FALLBACK]

    def opaque(self, op: Operation) -> None:
        """Run an op's runtime kernel (the one the Python body calls) on the batch; any error: Python body."""
        spec = select_kernel(op)
        args = []
        for v, conv in zip(op.operands, spec.arg_casts):
            ref = self.bind(v.owner.python_value(), "k") if isinstance(v.owner, ConstantOp) else self.names[v]
            args.append(f"{self.bind(conv, 'cast')}({ref})" if conv is not None else ref)
        q = self.names[op.results[0]] = f"q{len(self.names)}"
        k = self.plan.kinds[op.results[0]]
        dt = self.bind(DTYPES[k.vt], "qdt")
        call = f"{self.bind(spec.fn, 'op')}({', '.join(args)})"
        self.lines += [
            "try:",
            f"    {q} = {call}",
            "except Exception:",
            _FALLBACK,
            f"if {q}.__class__ is not _nd or {q}.dtype != {dt} or {q}.shape != (n, {k.cols}) "
            f"or not {q}.flags.c_contiguous:",
            _FALLBACK,
        ]


@dataclass(frozen=True)
class WrapperSource:
    """A pipeline kernel's generated wrapper: its source, the constants it reads and its stages' entry points by
    the global names the source calls them (`runtime.vectorized.kernel.wrapper_factory` runs it)."""

    source: str
    constants: dict[str, object]
    entries: dict[str, Stage]


def wrapper_source(op: VectorizedPipelineOp, plan: KernelPlan) -> WrapperSource:
    """Python source of `factory(_py) -> (body(*row_blocks), prepare or None)`, specialised for the plan (no per-call
    loops), with what it reads."""
    src = _Source(op, plan)
    params = ", ".join(f"a{i}" for i in range(len(plan.inputs)))
    first = next(i for i, s in enumerate(plan.inputs) if s.form in ("dense", "csr"))
    src.lines.append(f"args = ({params}{',' if len(plan.inputs) == 1 else ''})")
    for i, s in enumerate(plan.inputs):
        src.lines += _input_checks(i, s, first)
    src.lines += ["if n == 0:", _FALLBACK]
    levels = {st.level: st for st in plan.stages}
    for level in range(plan.stages[-1].level + 1):
        for o, lv in plan.opaque:
            if lv == level:
                src.opaque(o)
        if level in levels:
            src.stage(levels[level], levels[level] is plan.stages[-1])
    src.lines.append(f"return ({''.join(_result(j, o) + ', ' for j, o in enumerate(plan.outputs))})")
    lines = ["def factory(_py):", f"    def body({params}):"] + ["        " + x for x in src.lines]
    if len(plan.stages) == 1 and not plan.opaque:
        lines += ["    " + x for x in _prepare_source(plan, src.entry(plan.stages[0]), src.bind)]
    else:
        lines.append("    prepare = None")
    for i, s in enumerate(plan.inputs):
        if s.form != "scalar":
            src.ns[f"_dt{i}"] = DTYPES[s.vt]
    checks = [f"_fin{i} = _finite_check()" for i, s in enumerate(plan.inputs) if s.finite_check]
    return WrapperSource("\n".join(checks + lines + ["    return body, prepare", ""]), src.ns, src.entries)


def _preallocated(o: OutputSpec) -> bool:
    """Results the executor allocates once for all rows, each task's kernel call writing its rows in place: row
    blocks (ROWS), and the 1 x n row of a column vector's transpose (COLS, contiguous per task)."""
    return o.form == "rows" or (o.form == "cols" and o.cols == 1)


def _prepare_checks(plan: KernelPlan) -> list[str]:
    """`body`'s checks, done once on the whole inputs (a failure: no fast path), and the CSR inputs' flags."""
    fb = "    return None"
    body: list[str] = []
    for i, s in enumerate(plan.inputs):
        for line in _input_checks(i, s, -1):
            body.append(fb if line == _FALLBACK else line)
        if s.form == "csr":
            body += [f"if not a{i}.has_canonical_format:", fb]
    body += ["if n == 0:", fb]
    return body + [f"f{i} = {_csr_flags(i, s)}" for i, s in enumerate(plan.inputs) if s.form == "csr"]


def _prepare_source(plan: KernelPlan, fn: str, bind: Callable[[object, str], str]) -> list[str]:
    """`prepare(n, *inputs) -> (run, buffers) | None`, for single-stage kernels: the checks of `body` done once for
    the whole inputs, then `run(start, end)` calls the kernel on rows [start, end) with no per-task slicing of
    CSR matrices or checks (dense inputs and preallocated results are passed as row views, a CSR input as its
    whole value/index arrays and the task's slice of its row pointers: the kernel reads stored positions as
    they are). `run` returns the task's results (views into the buffers for preallocated ones), or None when
    the kernel asks for the Python body (the executor then runs `body` on row blocks)."""
    params = "".join(f", a{i}" for i in range(len(plan.inputs)))
    body = _prepare_checks(plan)
    run = ["def run(s, e):"]
    outs, results, bufs = [], [], []
    for j, o in enumerate(plan.outputs):
        dt = bind(DTYPES[o.vt], "odt")
        if _preallocated(o):
            shape = f"(n, {o.cols})" if o.form == "rows" else "(1, n)"
            body.append(f"B{j} = _empty({shape}, {dt})")
            run.append(f"    o{j} = B{j}[s:e]" if o.form == "rows" else f"    o{j} = B{j}[:, s:e]")
            bufs.append(f"B{j}")
        else:
            shape = {"cols": f"({o.cols}, e - s)", "all": "1", "col": f"(1, {o.cols})"}.get(o.form) or _group_shape(o)
            run.append(f"    o{j} = _empty({shape}, {dt})")
            bufs.append("None")
        outs.append(f"o{j}")
        results.append(_result(j, o))
    run += [
        "    try:",
        f"        status = {fn}({_call_args(plan, plan.stages[0], _range_part, outs)})",
        "    except _ArgErr:",
        "        return None",
        "    if status:",
        "        return None",
        f"    return ({''.join(r + ', ' for r in results)})",
    ]
    body += run + [f"return run, ({''.join(b + ', ' for b in bufs)})"]
    return [f"def prepare(n{params}):"] + ["    " + x for x in body]


def entry_points(plan: KernelPlan, wrapper: WrapperSource) -> tuple[EntryPoint, ...]:
    """The stages' Python-facing entries as the runtime loads them (their prototypes from the calling convention)."""
    out = []
    for name, stage in wrapper.entries.items():
        kinds = tuple(p.kind for p in stage_params(plan, stage))
        out.append(EntryPoint(name, stage.name + abi.ENTRY_SUFFIX, abi.STATUS.ctype, tuple(abi.ctypes_types(kinds))))
    return tuple(out)


def entry_symbols(plan: KernelPlan) -> list[str]:
    """The symbols of the plan's Python-facing entries, in stage order."""
    return [st.name + abi.ENTRY_SUFFIX for st in plan.stages]


def make_kernel(op: VectorizedPipelineOp, plan: KernelPlan, object_key: str) -> NativeKernel:
    """The runtime's kernel object for a pipeline whose object code `object_key` is loaded: the generated wrapper,
    run by the runtime (`wrapper_factory`) around the entries."""
    wrapper = wrapper_source(op, plan)
    make = functools.partial(wrapper_factory, plan.name, wrapper.source, wrapper.constants)
    return NativeKernel(plan.name, object_key, entry_points(plan, wrapper), make)
