"""Build `daphne.vectorizedPipeline` ops by hand and run them three ways, for the native-kernel tests:

- `reference`: the non-fused path, every body op's runtime kernel on the whole inputs (what `daphnec` without
  `--vec` computes);
- `run_python`: the executor (`run_pipeline`) with the Python body (what `--vec` computed before native kernels);
- `run_native`: the executor with the compiled kernel bound to the Python body; `calls.fallbacks` counts the
  batches the kernel handed back to the Python body.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, ModuleOp
from xdsl.ir import Attribute, Block, Region, SSAValue

from daphnec.compiler.analysis.inference import Inference, set_type
from daphnec.compiler.backend.native import compile_kernels
from daphnec.compiler.lowering.abi import kernel_symbol
from daphnec.compiler.pipeline import PassManager
from daphnec.compiler.selection.table import select_kernel
from daphnec.dialects import make_context, ops, ops_matrix
from daphnec.dialects.ops_pipeline import PipelineReturnOp, VectorizedPipelineOp
from daphnec.dialects.types import UNKNOWN, MatrixType, value_type
from daphnec.runtime.values import DTYPES
from daphnec.runtime.vectorized import pipeline as executor
from daphnec.runtime.vectorized.kernel import NativeKernel, PendingKernel

NUMERIC_VTS = ("f64", "f32", "si64", "si32", "si8", "ui64", "ui32", "ui8", "bool")
NP: dict[str, type] = {vt: DTYPES[vt].type for vt in NUMERIC_VTS}
"""numpy scalar type per numeric value type (the runtime's own table)."""


@pytest.fixture(autouse=True)
def no_disk_cache():  # noqa: ANN201 - a fixture
    """Compile every kernel (no on-disk kernel cache) in the modules that import this fixture."""
    from daphnec.runtime import cache_files

    cache_files.OBJECT_CODE.enabled = False
    yield
    cache_files.OBJECT_CODE.enabled = True


ROWS, NONE = 1, 0
C_ROWS, C_COLS, C_ADD, C_MIN, C_MAX = 1, 2, 3, 4, 5


def mat(vt: str, rows: int, cols: int, sparse: bool = False) -> MatrixType:
    return MatrixType(value_type(vt), rows, cols, "sparse" if sparse else "dense")


class Body:
    """Appends daphne ops to a pipeline body; result types come from the dialect's own inference."""

    def __init__(self, block: Block):
        self.block = block
        self.csr_typed: list[SSAValue] = []

    def _add(self, op: ops.DaphneOp) -> SSAValue:
        self.block.add_op(op)
        return op.results[0]

    def const(self, value: object, vt: str) -> SSAValue:
        return self._add(ops.ConstantOp.of(value, vt))  # type: ignore[arg-type]

    def binary(self, kind: str, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._add(ops.EW_BINARY_OPS[kind](a, b))

    def unary(self, kind: str, a: SSAValue) -> SSAValue:
        return self._add(ops.EW_UNARY_OPS[kind](a))

    def agg(self, kind: str, axis: str, a: SSAValue) -> SSAValue:
        return self._add(ops.AGG_OPS[(kind, axis)](a))

    def transpose(self, a: SSAValue) -> SSAValue:
        return self._add(ops.TransposeOp(a))

    def extract_col(self, a: SSAValue, j: int) -> SSAValue:
        return self._add(ops.ExtractColOp.create(operands=[a, self.const(j, "si64")], result_types=[UNKNOWN]))

    def matmul(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self._add(ops_matrix.MatMulOp(a, b))

    def cast(self, a: SSAValue, vt: str) -> SSAValue:
        return self._add(ops.CastOp(a, vt))

    def as_csr_typed(self, v: SSAValue) -> SSAValue:
        """Type `v` `rep[sparse]` after inference (as `select-matrix-repr` would), so its runtime object is CSR."""
        self.csr_typed.append(v)
        return v


@dataclass
class Pipeline:
    module: ModuleOp
    op: VectorizedPipelineOp
    splits: tuple[int, ...]
    combines: tuple[int, ...]


BodyFn = Callable[[Body, list[SSAValue]], list[tuple[SSAValue, int]]]


def build(inputs: Sequence[tuple[Attribute, int]], body_fn: BodyFn) -> Pipeline:
    """A function `@t(inputs...)` holding one pipeline; `body_fn` returns (value, combine) pairs."""
    outer_types = [t for t, _ in inputs]
    splits = [s for _, s in inputs]
    body_types = [
        MatrixType(t.element_type, -1, t.cols.data, t.representation.data)
        if isinstance(t, MatrixType) and s == ROWS
        else t
        for t, s in inputs
    ]
    block = Block(arg_types=body_types)
    body = Body(block)
    results = body_fn(body, list(block.args))
    Inference(ModuleOp([]), specialize=False).infer_block(block)
    for v in body.csr_typed:
        t = v.type
        assert isinstance(t, MatrixType)
        set_type(v, MatrixType(t.element_type, t.rows.data, t.cols.data, "sparse", t.sparsity.data))
    block.add_op(PipelineReturnOp(*(v for v, _ in results)))
    for op in reversed(list(block.ops)):  # like `dce` before vectorization: bodies hold no dead ops
        if not isinstance(op, PipelineReturnOp) and all(not r.uses for r in op.results):
            op.detach()
            op.erase()
    combines = [c for _, c in results]
    fblock = Block(arg_types=outer_types)
    pipe = VectorizedPipelineOp(list(fblock.args), splits, [v.type for v, _ in results], combines, block)
    fblock.add_op(pipe)
    fblock.add_op(func.ReturnOp())
    f = func.FuncOp("t", FunctionType.from_lists(outer_types, []), Region(fblock))
    module = ModuleOp([f])
    module.verify()
    return Pipeline(module, pipe, tuple(splits), tuple(combines))


def _vts(p: Pipeline) -> tuple[str | None, ...]:
    """The scalar results' value types, as the host code passes them to the executor."""
    from daphnec.dialects.types import vt_name

    return tuple(None if isinstance(r.type, MatrixType) else vt_name(r.type) for r in p.op.outs)


def interpret(block: Block, args: Sequence[object]) -> tuple[object, ...]:
    """Run a body op by op with the runtime kernels, like the generated host code does."""
    env: dict[SSAValue, object] = dict(zip(block.args, args))
    for op in block.ops:
        if isinstance(op, PipelineReturnOp):
            return tuple(env[v] for v in op.operands)
        if isinstance(op, ops.ConstantOp):
            env[op.res] = op.python_value()
            continue
        spec = select_kernel(op)
        vals = [c(env[v]) if c is not None else env[v] for v, c in zip(op.operands, spec.arg_casts)]
        env[op.results[0]] = spec.fn(*vals)
    raise AssertionError("the body has no daphne.return")


def reference(p: Pipeline, inputs: Sequence[object]) -> tuple[object, ...]:
    return interpret(p.op.body.block, inputs)


def _configure(batch_bytes: int, threads: int) -> None:
    """Batch size and worker threads of the executor (one thread and a huge batch: one body call). Small inputs
    are scheduled too, and native kernels are called per physical batch like Python bodies, so that both see the
    same row blocks (column sums then agree bit for bit)."""
    from daphnec.runtime.scheduling.config import SchedulerConfig

    executor.SETTINGS.phy_batch_size = batch_bytes
    executor.SETTINGS.min_parallel_bytes = 0
    executor.SETTINGS.native_batch_bytes = 0
    executor.SETTINGS.scheduler = SchedulerConfig(num_threads=threads)


def run_python(p: Pipeline, inputs: Sequence[object], batch_bytes: int, threads: int = 1) -> tuple[object, ...]:
    _configure(batch_bytes, threads)
    return executor.run_pipeline(lambda *a: interpret(p.op.body.block, a), inputs, p.splits, p.combines, _vts(p))


@dataclass
class Calls:
    fallbacks: int = 0
    batches: list[int] = field(default_factory=list)


def native_kernel(p: Pipeline) -> NativeKernel | PendingKernel | None:
    """The pipeline's kernel, built as `daphnec --vec` builds it: the kernel stages, the JIT, the symbol."""
    kernels = compile_kernels(p.module, PassManager(make_context(), options=frozenset({"vec", "native"})))
    sym = kernel_symbol(p.op)
    return kernels.get(sym) if sym is not None else None


def run_native(
    p: Pipeline, inputs: Sequence[object], batch_bytes: int, calls: Calls | None = None, threads: int = 1
) -> tuple[object, ...]:
    kernel = native_kernel(p)
    assert kernel is not None, "the pipeline has no native kernel"
    calls = calls if calls is not None else Calls()

    def py_body(*blocks: object) -> tuple[object, ...]:
        calls.fallbacks += 1
        return interpret(p.op.body.block, blocks)

    _configure(batch_bytes, threads)
    return executor.run_pipeline(kernel.bind(py_body), inputs, p.splits, p.combines, _vts(p))


# ---------------------------------------------------------------------------------------------------------------------
# Comparisons
# ---------------------------------------------------------------------------------------------------------------------


def _bits(x: object, any_nan: bool) -> object:
    from daphnec.runtime.values import as_dense

    a = np.asarray(as_dense(x))
    if a.dtype.kind == "f":
        if any_nan:
            a = np.where(np.isnan(a), a.dtype.type("nan"), a)
        return a.view(np.uint64 if a.dtype.itemsize == 8 else np.uint32)
    return a


def same_bits(a: object, b: object, any_nan: bool = False) -> bool:
    """Equal value, type and bits (NaN payloads and signed zeros included).

    With `any_nan`, every NaN equals every NaN: when two NaNs of different signs meet in one operation, x86 keeps
    the first operand's, and LLVM (whose IR leaves NaN payloads unspecified) may commute the operands."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
            return False
        return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(_bits(a, any_nan), _bits(b, any_nan))
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        if any_nan and a != a and b != b:
            return True
        return np.float64(a).view(np.uint64) == np.float64(b).view(np.uint64)
    return a == b


def close_sum(a: object, b: object, magnitude: float, rel: float = 1e-12) -> bool:
    """A reassociated float sum: NaN-ness and infinities agree, finite values within rel * sum(|x|)."""
    if isinstance(a, np.ndarray):
        return a.shape == b.shape and all(close_sum(x, y, magnitude, rel) for x, y in zip(a.ravel(), b.ravel()))  # type: ignore[union-attr]
    fa, fb = float(a), float(b)  # type: ignore[arg-type]
    if np.isnan(fa) or np.isnan(fb):
        return bool(np.isnan(fa) and np.isnan(fb))
    if np.isinf(fa) or np.isinf(fb):
        return fa == fb
    return abs(fa - fb) <= rel * max(magnitude, 1e-300) + 1e-300
