"""Native task kernels: lower a pipeline, compile it with llvmlite (O3, host CPU), cache it, wrap it for Python.

    compile_pipeline(op) -> NativeKernel | None        (None: the pipeline keeps its Python body)
    NativeKernel.bind(python_body) -> body(*row_blocks) -> tuple of results
    body.prepare(n, *inputs) -> (run(start, end) -> results | None, buffers) | None   (single-stage kernels)

The bound body has the executor's contract (`runtime.vectorized.pipeline.run_pipeline`): it receives one row
block per input and returns the block's results. It checks that the blocks have the forms the kernel was
compiled for (dtype, columns, dense or CSR, equal row counts, finite CSR broadcast factors) and calls the Python
body instead when they do not, or when the kernel reports an error (integer division by zero, a domain error, a
`^` exponent other than 2): the Python body then raises DAPHNE's message or computes numpy's result. The native
call goes through `ctypes.CFUNCTYPE`, which releases the GIL, so worker threads run kernels in parallel.

A pipeline with opaque ops (numpy math, matMul) runs its stage kernels in order, and between them the opaque
ops' runtime kernels (the ones its Python body calls) on the batch's materialised operands.

ABI of the Python-facing entry `@<kernel>_py` (an LLVM function added around each kernel of
`lower-pipeline-to-loops`): `(i64 rows, <per input>, <per opaque result>, <per output>) -> i64 status`, where a
dense matrix is passed as the numpy array object itself (the entry reads its data pointer from the
`PyArrayObject`, which costs nothing, instead of `arr.ctypes.data`, which costs microseconds per call), a CSR
matrix as its three arrays plus flags (bit 0: 64-bit indices; bit 1: every stored value is 1.0, checked once per
matrix, see `_all_ones`), and a scalar by value. The batch's rows are the
blocks' rows: the executor passes row blocks (zero-copy views), so the kernel always starts at row 0.

`body.prepare` (single-stage kernels without opaque ops) is the executor's fast path: it checks the whole
inputs once per pipeline run, allocates the row results once, and returns `run(start, end)`, which calls the
kernel on rows [start, end) with views made by slicing only (a dense input's rows, a CSR input's row pointers:
its data and index arrays are passed whole, the kernel reads the stored positions the row pointers give), so a
task costs a ctypes call and a few slices; each task writes its rows into the shared result buffers.

The generated code compares dtypes with `==`, not `is`: a program restored from the program cache holds
unpickled dtype objects, which equal numpy's but are other objects.

Compiled object code goes to the on-disk cache (`compiler.kernel_cache`); a later run loads it in about a
millisecond. For the host code generator (`native_kernel_for`), a kernel that is not cached yet is lowered and
compiled on one background thread while the script starts (`PendingKernel`, whose `bind` waits for it; LLVM
releases the GIL): the first statement runs ~0.4 s earlier on a cold cache. The driver waits for the thread at
the end of the run (`finish_background`), so the kernel cache ends up complete; `DAPHNEC_FOREGROUND_JIT=1`
compiles every kernel before the script starts. `DAPHNEC_JIT_LOG=<file>` appends one line per kernel
(`compiled`, `loaded` or `fallback`, the kernel name and milliseconds) for tests and benchmarks;
`DAPHNEC_NO_NATIVE=1` keeps every Python body (for comparisons).
"""

from __future__ import annotations

import ctypes
import os
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TextIO

import numpy as np
from xdsl.ir import Operation, SSAValue

from daphnec.compiler import kernel_cache
from daphnec.compiler.lowering.kernel_plan import InputSpec, KernelPlan, OutputSpec, Stage, try_plan
from daphnec.dialects.ops_pipeline import VectorizedPipelineOp
from daphnec.dialects.value_types import DTYPES

# ---------------------------------------------------------------------------------------------------------------------
# The LLVM engine (one per process)
# ---------------------------------------------------------------------------------------------------------------------


class _Engine:
    """llvmlite target machine (host CPU and features, O3) and one MCJIT engine holding every loaded kernel."""

    def __init__(self) -> None:
        import llvmlite
        import llvmlite.binding as llvm

        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        self.llvm = llvm
        self.cpu = llvm.get_host_cpu_name()
        self.features = llvm.get_host_cpu_features().flatten()
        self.version = f"llvmlite {llvmlite.__version__} LLVM {'.'.join(map(str, llvm.llvm_version_info))}"
        target = llvm.Target.from_default_triple()
        self.tm = target.create_target_machine(cpu=self.cpu, features=self.features, opt=3)
        self.ee = llvm.create_mcjit_compiler(llvm.parse_assembly(""), self.tm)
        self.lock = threading.Lock()

    def compile(self, ir_text: str) -> bytes:
        """LLVM IR text -> optimised (O3) object code for the host."""
        llvm = self.llvm
        mod = llvm.parse_assembly(ir_text)
        mod.verify()
        pb = llvm.create_pass_builder(self.tm, llvm.PipelineTuningOptions(speed_level=3))
        pb.getModulePassManager().run(mod, pb)
        return self.tm.emit_object(mod)

    def load(self, obj: bytes, symbols: list[str]) -> list[int]:
        """Add object code to the engine; the addresses of `symbols` in it."""
        with self.lock:
            self.ee.add_object_file(self.llvm.ObjectFileRef.from_data(obj))
            return [self.ee.get_function_address(sym) for sym in symbols]

    def optimised_ir(self, ir_text: str) -> str:
        llvm = self.llvm
        mod = llvm.parse_assembly(ir_text)
        pb = llvm.create_pass_builder(self.tm, llvm.PipelineTuningOptions(speed_level=3))
        pb.getModulePassManager().run(mod, pb)
        return str(mod)


_ENGINE: _Engine | None = None


def engine() -> _Engine:
    global _ENGINE
    if _ENGINE is None:
        _ENGINE = _Engine()
    return _ENGINE


# ---------------------------------------------------------------------------------------------------------------------
# Lowering to LLVM IR text
# ---------------------------------------------------------------------------------------------------------------------


def _array_data_offset() -> int:
    """Where `PyArrayObject.data` sits (right after PyObject_HEAD); probed, not assumed."""
    a = np.empty(1)
    for off in range(8, 65, 8):
        if ctypes.c_void_p.from_address(id(a) + off).value == a.ctypes.data:
            return off
    raise RuntimeError("cannot locate the data pointer of a numpy array")


DATA_OFFSET = _array_data_offset()


def lower_to_llvm_ir(op: VectorizedPipelineOp, plan: KernelPlan) -> str:
    """The pipeline's stage kernels as LLVM IR text: lower-pipeline-to-loops, convert-to-llvm, xDSL's translation
    to llvmlite, plus each kernel's Python-facing entry."""
    from xdsl.backend.llvm.convert import convert_module
    from xdsl.dialects.builtin import ModuleOp

    from daphnec.compiler.lowering.convert_to_llvm import convert_kernel
    from daphnec.compiler.lowering.lower_pipeline_to_loops import build_kernels

    module = ModuleOp(build_kernels(op, plan))
    for f in list(module.ops):
        convert_kernel(f)  # type: ignore[arg-type]
    eng = engine()
    ir_mod = convert_module(module, fallback_target_triple=eng.tm.triple, data_layout=str(eng.tm.target_data))
    for stage in plan.stages:
        _add_entry(ir_mod, plan, stage)
    return str(ir_mod)


def _add_entry(mod: object, plan: KernelPlan, stage: Stage) -> None:
    """`@<kernel>_py`: numpy array objects in, their data pointers passed on to the kernel."""
    from llvmlite import ir

    i64, ptr, f64 = ir.IntType(64), ir.PointerType(), ir.DoubleType()
    params: list[ir.Type] = [i64]
    for s in plan.inputs:
        params += {"scalar": [f64 if s.vt in ("f64", "f32") else i64], "csr": [ptr, ptr, ptr, i64]}.get(s.form, [ptr])
    params += [ptr] * (len(stage.opaque_in) + len(stage.sinks))
    impl = mod.get_global(stage.name)  # type: ignore[attr-defined]
    fn = ir.Function(mod, ir.FunctionType(i64, params), name=stage.name + "_py")
    b = ir.IRBuilder(fn.append_basic_block())

    def data(obj: ir.Value) -> ir.Value:
        at = b.gep(obj, [ir.Constant(i64, DATA_OFFSET)], inbounds=True, source_etype=ir.IntType(8))
        return b.load(at, typ=ptr)

    args = iter(fn.args)
    call = [next(args)]
    for s in plan.inputs:
        if s.form == "scalar":
            call.append(next(args))
        elif s.form == "csr":
            d, ind, ip, wide = (next(args) for _ in range(4))
            ind_p, ip_p = data(ind), data(ip)
            call += [data(d), ind_p, ind_p, ip_p, ip_p, wide]
        else:
            call.append(data(next(args)))
    call += [data(a) for a in args]
    b.ret(b.call(impl, call))


# ---------------------------------------------------------------------------------------------------------------------
# The Python-side wrapper
# ---------------------------------------------------------------------------------------------------------------------


def _ctypes_params(plan: KernelPlan, stage: Stage) -> list[object]:
    params: list[object] = [ctypes.c_int64]
    for s in plan.inputs:
        if s.form == "scalar":
            params.append(
                ctypes.c_double
                if s.vt in ("f64", "f32")
                else ctypes.c_uint64
                if s.vt in ("ui64", "index")
                else ctypes.c_int64
            )
        elif s.form == "csr":
            params += [ctypes.py_object] * 3 + [ctypes.c_int64]
        else:
            params.append(ctypes.py_object)
    return params + [ctypes.py_object] * (len(stage.opaque_in) + len(stage.sinks))


def _finite_check() -> Callable[[np.ndarray], bool]:
    """`np.isfinite(x).all()`, remembered for the last object (a broadcast vector is the same for every batch)."""
    last: list[object] = [None, False]

    def check(x: np.ndarray) -> bool:
        if x is not last[0]:
            last[0], last[1] = x, bool(np.isfinite(x).all())
        return last[1]  # type: ignore[return-value]

    return check


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
    if s.finite_check and s.vt in ("f64", "f32"):
        lines += [f"if not _fin{i}({a}):", _FALLBACK]
    return lines


def _all_ones(x: object) -> int:
    """2 if every stored value of a float CSR matrix is 1.0 (the kernel then reads no values), else 0.

    Computed once per matrix and kept on it (run-time values are never mutated); a row block made by the executor
    (`runtime.values.csr_rows`) asks the matrix it shares its arrays with, so a graph is scanned once, not once per
    block and iteration."""
    d = x.__dict__  # type: ignore[attr-defined]
    flag = d.get("_daphne_ones")
    if flag is None:
        base = d.get("_daphne_base")
        if base is not None:
            flag = _all_ones(base)
        else:
            data = x.data  # type: ignore[attr-defined]
            flag = 2 if data.size and bool((data == 1.0).all()) else 0
        d["_daphne_ones"] = flag
    return flag


def _input_args(plan: KernelPlan) -> list[str]:
    out = ["n"]
    for i, s in enumerate(plan.inputs):
        if s.form == "csr":
            ones = f" | _ones(a{i})" if s.vt in ("f64", "f32") else ""
            out += [f"a{i}.data, ind{i}, ptr{i}, (ind{i}.dtype == _i64){ones}"]
        else:
            out += [f"a{i}"]
    return out


def _alloc(name: str, o: OutputSpec, dt: str) -> str:
    shape = {"rows": f"(n, {o.cols})", "cols": f"({o.cols}, n)", "all": "1", "col": f"(1, {o.cols})"}[o.form]
    return f"{name} = _empty({shape}, {dt})"


def _result(j: int, o: OutputSpec) -> str:
    if o.form != "all":
        return f"o{j}"
    conv = "float" if o.vt in ("f64", "f32") else "bool" if o.vt == "bool" else "int"
    return f"{conv}(o{j}[0])"


class _Source:
    """Names of the values the generated wrapper handles: inputs a<i>, materialised operands m<i>, opaque results
    q<i>, outputs o<i>; Python objects it needs are bound as globals."""

    def __init__(self, op: VectorizedPipelineOp, plan: KernelPlan):
        self.plan = plan
        self.names: dict[SSAValue, str] = {a: f"a{i}" for i, a in enumerate(op.body.block.args)}
        self.ns: dict[str, object] = {}
        self.lines: list[str] = []

    def bind(self, obj: object, prefix: str) -> str:
        name = f"_{prefix}{len(self.ns)}"
        self.ns[name] = obj
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
        call = ", ".join(_input_args(self.plan) + [self.names[v] for v in st.opaque_in] + outs)
        fn = self.bind(st, "fn")  # the Stage is replaced by its ctypes function in _make_kernel
        self.lines += ["try:", f"    status = {fn}({call})", "except _ArgErr:", _FALLBACK, "if status:", _FALLBACK]

    def opaque(self, op: Operation) -> None:
        """Run an op's runtime kernel (the one the Python body calls) on the batch; any error: Python body."""
        from daphnec.compiler.kernel_select import select_kernel
        from daphnec.dialects.ops import ConstantOp

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


def wrapper_source(op: VectorizedPipelineOp, plan: KernelPlan) -> tuple[str, dict[str, object]]:
    """Python source of `factory(_py) -> (body(*row_blocks), prepare or None)`, specialised for the plan (no per-call
    loops), and the globals it binds (stage entries appear as their `Stage`, to be replaced by ctypes functions)."""
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
        lines += ["    " + x for x in _prepare_source(plan, src.bind(plan.stages[0], "fn"), src.bind)]
    else:
        lines.append("    prepare = None")
    return "\n".join(lines + ["    return body, prepare", ""]), src.ns


def _preallocated(o: OutputSpec) -> bool:
    """Results the executor allocates once for all rows, each task's kernel call writing its rows in place: row
    blocks (ROWS), and the 1 x n row of a column vector's transpose (COLS, contiguous per task)."""
    return o.form == "rows" or (o.form == "cols" and o.cols == 1)


def _prepare_source(plan: KernelPlan, fn: str, bind: Callable[[object, str], str]) -> list[str]:
    """`prepare(n, *inputs) -> (run, buffers) | None`, for single-stage kernels: the checks of `body` done once for
    the whole inputs, then `run(start, end)` calls the kernel on rows [start, end) with no per-task slicing of
    CSR matrices or checks (dense inputs and preallocated results are passed as row views, a CSR input as its
    whole value/index arrays and the task's slice of its row pointers: the kernel reads stored positions as
    they are). `run` returns the task's results (views into the buffers for preallocated ones), or None when
    the kernel asks for the Python body (the executor then runs `body` on row blocks)."""
    fb = "    return None"
    params = "".join(f", a{i}" for i in range(len(plan.inputs)))
    lines = [f"def prepare(n{params}):"]
    body: list[str] = []
    for i, s in enumerate(plan.inputs):
        for line in _input_checks(i, s, -1):
            body.append(fb if line == _FALLBACK else line)
        if s.form == "csr":
            body += [f"if not a{i}.has_canonical_format:", fb]
    body += ["if n == 0:", fb]
    args: list[str] = []
    for i, s in enumerate(plan.inputs):
        if s.form == "csr":
            ones = f" | _ones(a{i})" if s.vt in ("f64", "f32") else ""
            body.append(f"f{i} = (ind{i}.dtype == _i64){ones}")
            args.append(f"a{i}.data, ind{i}, ptr{i}[s:e + 1], f{i}")
        elif s.form == "dense":
            args.append(f"a{i}[s:e]")
        else:
            args.append(f"a{i}")
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
            shape = {"cols": f"({o.cols}, e - s)", "all": "1", "col": f"(1, {o.cols})"}[o.form]
            run.append(f"    o{j} = _empty({shape}, {dt})")
            bufs.append("None")
        outs.append(f"o{j}")
        results.append(_result(j, o))
    run += [
        "    try:",
        f"        status = {fn}(e - s, {', '.join(args + outs)})",
        "    except _ArgErr:",
        "        return None",
        "    if status:",
        "        return None",
        f"    return ({''.join(r + ', ' for r in results)})",
    ]
    body += run + [f"return run, ({''.join(b + ', ' for b in bufs)})"]
    return lines + ["    " + x for x in body]


@dataclass
class NativeKernel:
    """A compiled pipeline kernel: `bind(python_body)` gives the executor's body function."""

    plan: KernelPlan
    factory: Callable[[Callable[..., tuple[object, ...]]], tuple[Callable[..., tuple[object, ...]], object]]

    def bind(self, py_body: Callable[..., tuple[object, ...]]) -> Callable[..., tuple[object, ...]]:
        body, prepare = self.factory(py_body)
        body.pipeline_key = self.plan.name  # type: ignore[attr-defined] # the executor's ADAPTIVE scheduling key
        # A single fused loop keeps no intermediates: no batching needed (one call per task). Stages around opaque ops
        # materialise those ops' operands and results per call: they run per physical batch, like a Python body
        # (which also makes their BLAS/numpy calls see the same row blocks as the Python body's).
        body.whole_tasks = prepare is not None  # type: ignore[attr-defined]
        body.prepare = prepare  # type: ignore[attr-defined] # row-range calls on whole inputs (single-stage kernels)
        return body

    @property
    def name(self) -> str:
        return self.plan.name


def _make_kernel(op: VectorizedPipelineOp, plan: KernelPlan, addresses: dict[str, int]) -> NativeKernel:
    source, bound = wrapper_source(op, plan)
    ns: dict[str, object] = {
        "_nd": np.ndarray,
        "_empty": np.empty,
        "_ArgErr": ctypes.ArgumentError,
        "_ones": _all_ones,
        "_i32": np.dtype(np.int32),
        "_i64": np.dtype(np.int64),
    }
    for name, obj in bound.items():
        if isinstance(obj, Stage):
            obj = ctypes.CFUNCTYPE(ctypes.c_int64, *_ctypes_params(plan, obj))(addresses[obj.name])
        ns[name] = obj
    for i, s in enumerate(plan.inputs):
        if s.form != "scalar":
            ns[f"_dt{i}"] = DTYPES[s.vt]
        if s.finite_check:
            ns[f"_fin{i}"] = _finite_check()
    exec(compile(source, f"<kernel {plan.name}>", "exec"), ns)  # noqa: S102 - generated above
    return NativeKernel(plan, ns["factory"])  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------------------------------
# Compiling (with the caches)
# ---------------------------------------------------------------------------------------------------------------------

_LOADED: dict[str, NativeKernel] = {}
_LOG_LOCK = threading.Lock()


def _log_error(e: Exception) -> None:
    """A kernel that failed to build (its pipeline keeps the Python body): one `error` line in the JIT log."""
    _log("error", f"{type(e).__name__}:{e}".replace(" ", "_").replace("\n", "_")[:200], 0.0)


def _log(event: str, name: str, seconds: float) -> None:
    path = os.environ.get("DAPHNEC_JIT_LOG")
    if path:
        with _LOG_LOCK, open(path, "a") as f:
            f.write(f"{event} {name} {seconds * 1000:.3f}\n")


def compile_pipeline(op: VectorizedPipelineOp, background: bool = False) -> NativeKernel | PendingKernel | None:
    """The native kernel of a pipeline (loaded from the cache, or compiled), or None if it has no lowering.

    With `background`, a kernel that is not in the cache is lowered and compiled on the background compile thread
    and a `PendingKernel` stands in for it: the script starts while LLVM works (the first run of the pipeline waits
    for its kernel). Cached kernels load right away (a millisecond)."""
    t0 = time.perf_counter()
    plan, why = try_plan(op)
    if plan is None:
        _log("fallback", why.replace(" ", "_"), time.perf_counter() - t0)
        return None
    known = _LOADED.get(plan.name)
    if known is not None:
        return known
    eng = engine()
    key = kernel_cache.cache_key(plan.text, eng.cpu, eng.features, f"{eng.version} ndarray.data@{DATA_OFFSET}")
    obj = kernel_cache.load(key)
    if obj is not None:
        return _install(op, plan, obj, "loaded", t0)
    if not background:
        return _build(op, plan, key, t0)
    pending = PendingKernel(plan, _submit(lambda: _build(op, plan, key, time.perf_counter())))
    _LOADED[plan.name] = pending
    return pending


def _build(op: VectorizedPipelineOp, plan: KernelPlan, key: str, t0: float) -> NativeKernel:
    obj = engine().compile(lower_to_llvm_ir(op, plan))
    kernel_cache.store(key, obj)
    return _install(op, plan, obj, "compiled", t0)


def _install(op: VectorizedPipelineOp, plan: KernelPlan, obj: bytes, event: str, t0: float) -> NativeKernel:
    """Load object code into the engine and wrap it (`_make_kernel`); remember the kernel by its plan."""
    addresses = engine().load(obj, [st.name + "_py" for st in plan.stages])
    kernel = _make_kernel(op, plan, {st.name: a for st, a in zip(plan.stages, addresses)})
    _LOADED[plan.name] = kernel
    _log(event, plan.name, time.perf_counter() - t0)
    return kernel


class PendingKernel:
    """A native kernel still being compiled on the background compile thread. `bind` waits for it; if building
    it failed (a lowering bug, an LLVM error: logged), the pipeline keeps its Python body, as `native_kernel_for`
    does for kernels compiled in the foreground."""

    def __init__(self, plan: KernelPlan, future: Future[NativeKernel]):
        self.plan = plan
        self.future = future

    @property
    def name(self) -> str:
        return self.plan.name

    def kernel(self) -> NativeKernel | None:
        try:
            return self.future.result()
        except Exception as e:  # noqa: BLE001 - the Python body is always a correct fallback
            _log_error(e)
            return None

    def bind(self, py_body: Callable[..., tuple[object, ...]]) -> Callable[..., tuple[object, ...]]:
        k = self.kernel()
        return py_body if k is None else k.bind(py_body)


_QUEUE: queue.SimpleQueue[tuple[Callable[[], NativeKernel], Future[NativeKernel]]] | None = None
_PENDING: list[Future[NativeKernel]] = []


def _submit(build: Callable[[], NativeKernel]) -> Future[NativeKernel]:
    """Run `build` on the background compile thread (one thread: LLVM's target machine is shared, and the
    kernels' order is the program's). A daemon thread: a script that ends early does not wait for kernels it
    never used, unless `finish_background` is called (the driver does, so that the kernel cache is complete)."""
    global _QUEUE
    if _QUEUE is None:
        _QUEUE = queue.SimpleQueue()
        threading.Thread(target=_compile_thread, args=(_QUEUE,), name="daphnec-jit", daemon=True).start()
    fut: Future[NativeKernel] = Future()
    _PENDING.append(fut)
    _QUEUE.put((build, fut))
    return fut


def _compile_thread(q: queue.SimpleQueue[tuple[Callable[[], NativeKernel], Future[NativeKernel]]]) -> None:
    while True:
        build, fut = q.get()
        if not fut.set_running_or_notify_cancel():
            continue
        try:
            fut.set_result(build())
        except BaseException as e:  # noqa: BLE001 - handed to whoever waits for the kernel
            fut.set_exception(e)


def finish_background() -> None:
    """Wait until every kernel handed to the background compile thread is built (and in the kernel cache)."""
    while _PENDING:
        fut = _PENDING.pop()
        if not fut.done():
            try:
                fut.result()
            except Exception:  # noqa: BLE001, S110 - logged by PendingKernel.kernel when used; the body runs then
                pass


def native_kernel_for(op: VectorizedPipelineOp) -> NativeKernel | PendingKernel | None:
    """`compile_pipeline` for the host code generator: `DAPHNEC_NO_NATIVE=1` turns native kernels off, and a
    kernel that fails to build (a lowering bug, an LLVM error) is logged and the pipeline keeps its Python body
    rather than failing the whole compilation. Kernels not in the cache compile in the background
    (`DAPHNEC_FOREGROUND_JIT=1` compiles them before the script starts, as before)."""
    if os.environ.get("DAPHNEC_NO_NATIVE") == "1":
        return None
    try:
        return compile_pipeline(op, background=os.environ.get("DAPHNEC_FOREGROUND_JIT") != "1")
    except Exception as e:  # noqa: BLE001 - the Python body is always a correct fallback
        _log_error(e)
        return None


def explain_llvm(module: object, out: TextIO, optimised: bool = False) -> None:
    """`--explain=llvm`: the LLVM IR of every pipeline kernel in the module (after lowering, before O3)."""
    seen: set[str] = set()
    for op in module.walk():  # type: ignore[attr-defined]
        if not isinstance(op, VectorizedPipelineOp):
            continue
        plan, why = try_plan(op)
        if plan is None:
            out.write(f"; pipeline without native kernel (Python body): {why}\n")
            continue
        if plan.name in seen:
            continue
        seen.add(plan.name)
        ir_text = lower_to_llvm_ir(op, plan)
        out.write(engine().optimised_ir(ir_text) if optimised else ir_text)
        out.write("\n")
