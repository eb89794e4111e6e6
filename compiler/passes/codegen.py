"""`codegen` (`--codegen`): DAPHNE's code generation pipeline (doc/Codegen.md) on daphnec's native lowering.

DAPHNE's `--codegen` lowers element-wise ops, aggregations, `map`, transposes and matrix products to loops
compiled to native code instead of calling their precompiled kernels. daphnec does the same with the lowering it
already has for vectorized pipelines (`lower-pipeline-to-loops`, `convert-to-llvm`, the JIT): this pass fuses
chains of those ops outside vectorized pipelines (the `vectorize` pass's rule, compiler/passes/vectorize.py) into
pipelines marked `daphne.codegen`, which the kernel stages compile to native kernels and the runtime runs as one
call on the calling thread, as DAPHNE's generated code runs. Matrix products stay outside these pipelines: the
kernel stages lower each dense one to its own native loop nest, shaped by the `--matmul-*` settings
(compiler/lowering/lower_matmul_to_loops.py). `map(X, f)` whose UDF is made of element-wise scalar ops becomes
those ops on X (then fused like the others); other UDFs keep the per-element call. Results are bit-identical to
the kernels' (the native lowering's contract); products differ from BLAS only by summation order (1e-12 relative
for f64, exact for integers).

With `--vec` the `vectorize` pass has fused these ops already; the ones it left (outside loops it could not fuse)
are fused here.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, UnitAttr
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from daphnec.compiler.ir_walk import function_blocks
from daphnec.compiler.passes.vectorize import vectorize_block
from daphnec.dialects.attr_names import CODEGEN_ATTR, KERNEL_HINT_ATTR
from daphnec.dialects.ops import CastOp, ConstantOp, EwBinaryOp, EwUnaryOp, MapOp
from daphnec.dialects.ops_pipeline import VectorizedPipelineOp
from daphnec.dialects.types import MatrixType, is_scalar, vt_name


@dataclass(frozen=True)
class CodegenPass(ModulePass):
    name = "codegen"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        udfs = {f.sym_name.data: f for f in op.ops if isinstance(f, func.FuncOp)}
        for m in [m for m in op.walk() if isinstance(m, MapOp)]:
            body = _elementwise_udf(udfs.get(m.func.data))
            if body is not None:
                _expand_map(m, body)
        before = {p for p in op.walk() if isinstance(p, VectorizedPipelineOp)}
        for block in function_blocks(op):
            vectorize_block(block)
        for p in op.walk():
            if isinstance(p, VectorizedPipelineOp) and p not in before:
                p.attributes[CODEGEN_ATTR] = UnitAttr()


# --- map: a UDF of element-wise scalar ops becomes those ops on the matrix --------------------------------------------


def _elementwise_udf(f: func.FuncOp | None) -> list[Operation] | None:
    """The ops of a unary UDF made only of constants, element-wise ops and value-type casts on scalars (ending in
    one `return`), which `map` can apply to the whole matrix at once; None for any other UDF."""
    if f is None or len(f.body.blocks) != 1 or len(f.body.block.args) != 1:
        return None
    body = list(f.body.block.ops)
    ret = body[-1] if body else None
    if not isinstance(ret, func.ReturnOp) or len(ret.operands) != 1:
        return None
    for o in body[:-1]:
        if KERNEL_HINT_ATTR in o.attributes or not all(is_scalar(r.type) for r in o.results):
            return None
        if isinstance(o, CastOp) and o.target_dt is not None:
            return None
        if not isinstance(o, (ConstantOp, EwBinaryOp, EwUnaryOp, CastOp)):
            return None
    return body


def _expand_map(m: MapOp, body: list[Operation]) -> None:
    """Replace `map(X, f)` by f's ops applied to X (scalars broadcast), typed like the map's result."""
    param = body[0].parent_block().args[0]  # type: ignore[union-attr]
    values: dict[SSAValue, SSAValue] = {param: m.arg}
    res_type = m.res.type
    assert isinstance(res_type, MatrixType)
    new_ops: list[Operation] = []
    for o in body[:-1]:
        c = o.clone(value_mapper=values)
        if any(isinstance(v.type, MatrixType) for v in c.operands):
            elem = o.results[0].type
            c.results[0]._type = MatrixType(elem, res_type.shape[0], res_type.shape[1])  # noqa: SLF001
        c.location = m.location
        new_ops.append(c)
        values[o.results[0]] = c.results[0]
    out = values.get(body[-1].operands[0])
    if out is None or not isinstance(out.type, MatrixType) or vt_name(out.type) != vt_name(res_type):
        for c in new_ops:
            c.erase(safe_erase=False)
        return
    Rewriter.insert_op(new_ops, InsertPoint.before(m))
    m.res.replace_all_uses_with(out)
    Rewriter.erase_op(m)
