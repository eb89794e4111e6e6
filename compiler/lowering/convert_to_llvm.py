"""`convert-to-llvm`: task kernels (func/scf/cf/arith/math/memref) become `llvm.func`s in xDSL's llvm dialect.

xDSL has no arith/func/cf/memref -> llvm conversions, so these are the project's, one pattern per dialect:

- `scf.for`/`scf.if` first become blocks and branches (xDSL's own scf->cf patterns);
- `index` is i64 and `memref<?xT>` an opaque `!llvm.ptr`; a load/store is an *inbounds* GEP plus load/store (the
  ptrtoint/inttoptr arithmetic of xDSL's memref->ptr path keeps LLVM from vectorising), and buffer parameters
  are `noalias`;
- `arith.fptosi`/`fptoui`/`uitofp` need LLVM casts xDSL's llvm dialect lacks: they are defined here
  (`llvm.fptosi`, ...) and registered with xDSL's llvmlite translator;
- fast-math flags of float arithmetic carry over (the reassociable sums of full aggregations);
- `vector.load`/`store`/`broadcast` (the vector groups of native matrix products) become LLVM vector loads and
  stores of neighbouring cells and a splat shuffle; arithmetic on vectors converts like scalar arithmetic.

Only functions marked `daphne.task_kernel` are converted; the host program around them is left alone. Each
kernel is followed by its Python-facing entry `@<kernel>_py` (`entry_function`, from the kernel's `daphne.abi`).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.backend.llvm import convert_op as _xdsl_convert_op
from xdsl.context import Context
from xdsl.dialects import arith, cf, func, llvm, math, memref, vector
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    UnitAttr,
    VectorType,
    f64,
    i8,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.irdl import irdl_op_definition
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.transforms.convert_scf_to_cf import ForLowering, IfLowering

from daphnec.compiler.lowering import abi
from daphnec.dialects.attr_names import ABI_ATTR, TASK_KERNEL_ATTR
from daphnec.runtime.native_code import ARRAY_DATA_OFFSET


@irdl_op_definition
class FPToSIOp(llvm.GenericCastOp):
    name = "llvm.fptosi"


@irdl_op_definition
class FPToUIOp(llvm.GenericCastOp):
    name = "llvm.fptoui"


@irdl_op_definition
class UIToFPOp(llvm.GenericCastOp):
    name = "llvm.uitofp"


# xDSL's translator maps cast ops to llvmlite's cast instruction by name; teach it the three above.
_xdsl_convert_op._CAST_OP_NAMES.update({FPToSIOp: "fptosi", FPToUIOp: "fptoui", UIToFPOp: "uitofp"})


def convert_type(t: Attribute) -> Attribute:
    if isinstance(t, IndexType):
        return i64
    if isinstance(t, MemRefType):
        return llvm.LLVMPointerType()
    return t


_INT_BINARY: dict[type[Operation], type[Operation]] = {
    arith.AddiOp: llvm.AddOp,
    arith.SubiOp: llvm.SubOp,
    arith.MuliOp: llvm.MulOp,
    arith.DivSIOp: llvm.SDivOp,
    arith.DivUIOp: llvm.UDivOp,
    arith.RemSIOp: llvm.SRemOp,
    arith.RemUIOp: llvm.URemOp,
    arith.AndIOp: llvm.AndOp,
    arith.OrIOp: llvm.OrOp,
    arith.XOrIOp: llvm.XOrOp,
}
_FLOAT_BINARY: dict[type[Operation], type[Operation]] = {
    arith.AddfOp: llvm.FAddOp,
    arith.SubfOp: llvm.FSubOp,
    arith.MulfOp: llvm.FMulOp,
    arith.DivfOp: llvm.FDivOp,
}
_CASTS: dict[type[Operation], type[Operation]] = {
    arith.ExtSIOp: llvm.SExtOp,
    arith.ExtUIOp: llvm.ZExtOp,
    arith.TruncIOp: llvm.TruncOp,
    arith.SIToFPOp: llvm.SIToFPOp,
    arith.UIToFPOp: UIToFPOp,
    arith.FPToSIOp: FPToSIOp,
    arith.FPToUIOp: FPToUIOp,
    arith.ExtFOp: llvm.FPExtOp,
    arith.TruncFOp: llvm.FPTruncOp,
}


_CANCELLING = (arith.AddfOp, arith.SubfOp, arith.NegfOp, llvm.FAddOp, llvm.FSubOp, llvm.FNegOp)
"""Ops whose result a reassociating sum could merge into its own chain (and cancel, losing NaNs and infinities)."""


def _cancelling(v: SSAValue) -> bool:
    """An element from a cancelling op, also behind the select of a fused filter (`c ? x - y : 0`)."""
    owner = v.owner
    if isinstance(owner, (arith.SelectOp, llvm.SelectOp)):
        return any(isinstance(x.owner, _CANCELLING) for x in owner.operands[1:])
    return isinstance(owner, _CANCELLING)


class ArithToLLVM(RewritePattern):
    """arith -> llvm, one op for one op (index constants and casts become i64)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        t = type(op)
        if t in _INT_BINARY:
            rewriter.replace(op, _INT_BINARY[t](op.operands[0], op.operands[1]))
        elif t in _FLOAT_BINARY:
            lhs, rhs = op.operands
            fastmath = _fastmath(op)
            if fastmath is not None and isinstance(op, arith.AddfOp) and _cancelling(rhs):
                # A reassociable sum step (a full aggregation, vectorised by LLVM) may only regroup the sum's own
                # additions: an element computed by an addition or subtraction is fenced, so `acc + (x - x)`
                # cannot become `(acc + x) - x`, which loses the NaN of inf - inf (results must not depend on --vec).
                fence = llvm.CallIntrinsicOp("llvm.arithmetic.fence", [rhs], [rhs.type])
                rewriter.insert(fence, InsertPoint.before(op))
                rhs = fence.results[0]
            rewriter.replace(op, _FLOAT_BINARY[t](lhs, rhs, fastmath))
        elif t in _CASTS:
            rewriter.replace(op, _CASTS[t](op.operands[0], convert_type(op.results[0].type)))
        elif isinstance(op, arith.ConstantOp):
            rewriter.replace(op, _constant(op))
        elif isinstance(op, arith.NegfOp):
            rewriter.replace(op, llvm.FNegOp(op.operand))
        elif isinstance(op, arith.CmpiOp):
            rewriter.replace(op, llvm.ICmpOp(op.lhs, op.rhs, IntegerAttr(op.predicate.value.data, 64)))
        elif isinstance(op, arith.CmpfOp):
            rewriter.replace(op, llvm.FCmpOp(op.lhs, op.rhs, IntegerAttr(op.predicate.value.data, 64)))
        elif isinstance(op, arith.SelectOp):
            rewriter.replace(op, llvm.SelectOp(op.cond, op.lhs, op.rhs))
        elif isinstance(op, arith.IndexCastOp):
            self._index_cast(op, rewriter)

    @staticmethod
    def _index_cast(op: arith.IndexCastOp, rewriter: PatternRewriter) -> None:
        src, dst = convert_type(op.input.type), convert_type(op.result.type)
        if src == dst:
            rewriter.replace(op, [], [op.input])
        elif src.width.data < dst.width.data:  # type: ignore[attr-defined]
            rewriter.replace(op, llvm.SExtOp(op.input, dst))
        else:
            rewriter.replace(op, llvm.TruncOp(op.input, dst))


def _fastmath(op: Operation) -> llvm.FastMathAttr | None:
    flags = getattr(op, "fastmath", None)
    if flags is None or not flags.data:
        return None
    return llvm.FastMathAttr([llvm.FastMathFlag(f) for f in sorted(flags.data)])


def _constant(op: arith.ConstantOp) -> llvm.ConstantOp:
    v, t = op.value, convert_type(op.result.type)
    if isinstance(v, IntegerAttr) and isinstance(v.type, IndexType):
        v = IntegerAttr(v.value.data, i64)
    assert isinstance(v, (IntegerAttr, FloatAttr))
    return llvm.ConstantOp(v, t)


class MathToLLVM(RewritePattern):
    """math -> llvm intrinsics (`llvm.trunc` is called by name: xDSL has no op for it)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, math.AbsFOp):
            rewriter.replace(op, llvm.FAbsOp(op.operand, op.result.type))
        elif isinstance(op, math.FloorOp):
            rewriter.replace(op, llvm.FFloorOp(op.operand))
        elif isinstance(op, math.CeilOp):
            rewriter.replace(op, llvm.FCeilOp(op.operand))
        elif isinstance(op, math.SqrtOp):
            rewriter.replace(op, llvm.FSqrtOp(op.operand))
        elif isinstance(op, math.CopySignOp):
            rewriter.replace(op, llvm.FCopySignOp(op.lhs, op.rhs))
        elif isinstance(op, math.TruncOp):
            t = op.result.type
            rewriter.replace(op, llvm.CallIntrinsicOp(f"llvm.trunc.f{t.bitwidth}", [op.operand], [t]))  # type: ignore[attr-defined]


class MemRefToLLVM(RewritePattern):
    """1-D `memref.load`/`store` -> inbounds GEP + load/store (vectorisable addressing)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, memref.LoadOp):
            gep = llvm.GEPOp.from_mixed_indices(op.memref, [op.indices[0]], op.res.type, inbounds=True)
            rewriter.replace(op, [gep, llvm.LoadOp(gep, op.res.type)])
        elif isinstance(op, memref.StoreOp):
            gep = llvm.GEPOp.from_mixed_indices(op.memref, [op.indices[0]], op.value.type, inbounds=True)
            rewriter.replace(op, [gep, llvm.StoreOp(op.value, gep)])


class VectorToLLVM(RewritePattern):
    """1-D `vector.load`/`store` of neighbouring cells -> inbounds GEP + a vector load/store aligned like one
    element (numpy's buffers are not vector-aligned); `vector.broadcast` -> insertelement + shufflevector."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, vector.LoadOp):
            vt = op.result.type
            gep = llvm.GEPOp.from_mixed_indices(op.base, [op.indices[0]], vt.element_type, inbounds=True)  # type: ignore[attr-defined]
            rewriter.replace(op, [gep, llvm.LoadOp(gep, vt, alignment=_bytes(vt))])
        elif isinstance(op, vector.StoreOp):
            vt = op.vector.type
            gep = llvm.GEPOp.from_mixed_indices(op.base, [op.indices[0]], vt.element_type, inbounds=True)  # type: ignore[attr-defined]
            rewriter.replace(op, [gep, llvm.StoreOp(op.vector, gep, alignment=_bytes(vt))])
        elif isinstance(op, vector.BroadcastOp):
            vt = op.vector.type
            assert isinstance(vt, VectorType)
            undef = llvm.UndefOp(vt)
            zero = llvm.ConstantOp(IntegerAttr(0, i32), i32)
            one = llvm.InsertElementOp(undef, op.source, zero)
            lanes = DenseArrayBase.from_list(i32, [0] * vt.get_shape()[0])
            rewriter.replace(op, [undef, zero, one, llvm.ShuffleVectorOp(one, one, lanes, vt)])


def _bytes(vt: Attribute) -> int:
    """The size of one element of a vector type."""
    el = vt.element_type  # type: ignore[attr-defined]
    return max(1, (el.bitwidth if hasattr(el, "bitwidth") else el.width.data) // 8)


class CfToLLVM(RewritePattern):
    """cf and func.return -> llvm branches and return."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, cf.BranchOp):
            rewriter.replace(op, llvm.BrOp(op.successor, *op.arguments))
        elif isinstance(op, cf.ConditionalBranchOp):
            rewriter.replace(
                op, llvm.CondBrOp(op.cond, op.then_block, op.then_arguments, op.else_block, op.else_arguments)
            )
        elif isinstance(op, func.ReturnOp):
            rewriter.replace(op, llvm.ReturnOp(op.arguments[0] if op.arguments else None))


def _convert_block_args(f: func.FuncOp) -> None:
    for block in f.body.blocks:
        for arg in block.args:
            t = convert_type(arg.type)
            if t != arg.type:
                Rewriter.replace_value_with_new_type(arg, t)


def _to_llvm_func(f: func.FuncOp) -> llvm.FuncOp:
    """The function op itself: external linkage, `noalias` buffers, body moved over."""
    ins = [convert_type(t) for t in f.function_type.inputs]
    outs = [convert_type(t) for t in f.function_type.outputs]
    attrs = ArrayAttr(
        [
            DictionaryAttr({"llvm.noalias": UnitAttr()} if isinstance(t, MemRefType) else {})
            for t in f.function_type.inputs
        ]
    )
    body = f.detach_region(f.body)
    return llvm.FuncOp(
        f.sym_name,
        llvm.LLVMFunctionType(ins, outs[0] if outs else None),
        linkage=llvm.LinkageAttr("external"),
        body=body,
        other_props={"arg_attrs": attrs},
    )


def convert_kernel(f: func.FuncOp) -> llvm.FuncOp:
    """Convert one task-kernel function in place (it must sit in a module) and return the llvm.func."""
    PatternRewriteWalker(GreedyRewritePatternApplier([IfLowering(), ForLowering()])).rewrite_region(f.body)
    _convert_block_args(f)
    patterns = GreedyRewritePatternApplier([ArithToLLVM(), MathToLLVM(), MemRefToLLVM(), VectorToLLVM(), CfToLLVM()])
    PatternRewriteWalker(patterns, apply_recursively=False).rewrite_region(f.body)
    new = _to_llvm_func(f)
    new.attributes[ABI_ATTR] = f.attributes[ABI_ATTR]
    Rewriter.replace_op(f, new)
    return new


_ENTRY_TYPES: dict[str, Attribute] = {"ptr": llvm.LLVMPointerType(), "i64": i64, "f64": f64}


def entry_function(kernel: llvm.FuncOp) -> llvm.FuncOp:
    """`@<kernel>_py`, the entry Python calls (`abi`): numpy array objects in, their data pointers (read from the
    `PyArrayObject`) passed on to the kernel with the other values."""
    kinds = abi.decode(kernel.attributes[ABI_ATTR])
    types = [_ENTRY_TYPES[t] for t in abi.entry_types(kinds)]
    block = Block(arg_types=types)
    data: dict[int, SSAValue] = {}
    args: list[SSAValue] = []
    for pos, is_array in abi.forwarded(kinds):
        if is_array and pos not in data:
            at = llvm.GEPOp.from_mixed_indices(block.args[pos], [ARRAY_DATA_OFFSET], i8, inbounds=True)
            load = llvm.LoadOp(at, llvm.LLVMPointerType())
            block.add_ops([at, load])
            data[pos] = load.results[0]
        args.append(data[pos] if is_array else block.args[pos])
    call = llvm.CallOp(kernel.sym_name.data, *args, return_type=i64)
    block.add_ops([call, llvm.ReturnOp(call.returned)])
    entry = llvm.FuncOp(
        kernel.sym_name.data + abi.ENTRY_SUFFIX,
        llvm.LLVMFunctionType(types, i64),
        linkage=llvm.LinkageAttr("external"),
        body=Region(block),
    )
    entry.attributes[ABI_ATTR] = kernel.attributes[ABI_ATTR]
    return entry


@dataclass(frozen=True)
class ConvertToLLVMPass(ModulePass):
    """Every task kernel (in any kernel module of the module) becomes an `llvm.func`, followed by its entry."""

    name = "convert-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for f in [f for f in op.walk() if isinstance(f, func.FuncOp) and TASK_KERNEL_ATTR in f.attributes]:
            kernel = convert_kernel(f)
            kernel.parent_block().insert_op_after(entry_function(kernel), kernel)  # type: ignore[union-attr]


__all__ = ["ConvertToLLVMPass", "convert_kernel", "entry_function", "FPToSIOp", "FPToUIOp", "UIToFPOp"]
