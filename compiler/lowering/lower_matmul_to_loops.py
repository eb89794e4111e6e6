"""`lower-matmul-to-loops` (`--codegen`): dense matrix products become native loop nests (DAPHNE's MatMulOp lowering,
doc/Codegen.md).

Every `daphne.matMul` outside vectorized pipelines whose operands and result are dense matrices of one numeric
value type (f64, f32, si64, si32, ui64, ui32, si8, ui8), without a kernel hint, gets a kernel module
`@mm_<hash>` holding one task kernel (`matmul_loops`: sizes are run-time values, `transa`/`transb` are read in
place), and the op names it (`daphne.native_kernel`); host code then calls the kernel instead of BLAS. Other
products keep their runtime kernel and say why (`daphne.native = "fallback: ..."`): CSR operands, mixed value types
(BLAS casts them first), bool (OR of ANDs), kernel hints. Inside a vectorized pipeline a product stays an opaque op.

The loop nest follows DAPHNE's `matmul_*` settings (runtime/options.py, `--matmul-*`):

- `vec_size_bits` (0: off): the vector width, `max(1, bits / element bits)` cells of a row as one
  `vector<width x T>` value;
- `unroll_factor`: the innermost step covers that many vectors;
- `tile` / `fixed_tile_sizes` (`MC,NC,KC[,MR[,NR]]`; fewer values keep the automatic rest): cache tiles of MC
  rows, NC columns and KC steps of the inner dimension, register blocks of MR rows x NR columns (NR rounded down
  to whole vectors; automatic: 64, 256, 256, `unroll_jam_factor` rows but at most `num_vec_registers /
  unroll_factor`, and `unroll_factor` vectors);
- `invert_loops` (without tiling): the i-k-j order instead of i-j-k.

The kernel's name hashes its value type, transposes and schedule (not the sizes), so products of any size with
equal settings share one compiled kernel.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr, SymbolRefAttr
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from daphnec.compiler.ir_walk import preorder
from daphnec.compiler.lowering import abi
from daphnec.compiler.lowering.matmul_loops import MatMulKernel, Schedule, build_matmul
from daphnec.dialects.attr_names import KERNEL_CHOICE_ATTR, NATIVE_FALLBACK_ATTR, NATIVE_KERNEL_ATTR
from daphnec.dialects.ops_matrix import MatMulOp
from daphnec.dialects.ops_pipeline import VectorizedPipelineOp
from daphnec.dialects.types import MatrixType, vt_name
from daphnec.dialects.value_types import ARITHMETIC_VTS, VALUE_TYPES

VERSION = "mm1"
"""Part of every kernel's name (the kernel cache also keys object code by the lowering's own source)."""
AUTO_TILES = (64, 256, 256)
"""MC, NC, KC when tiling without fixed sizes: a 256 x 256 f64 panel of B is 512 KiB (half an L2 of the machines
daphnec is measured on), a 64 x 256 panel of A 128 KiB."""
MAX_CELLS = 256
"""At most this many cells of C per register block (rows x vectors x width: 32 AVX-512 registers of f64): bounds
the unrolled code of large settings (beyond the machine's registers the accumulators spill anyway)."""
MAX_WIDTH = 64
"""At most this many cells per vector (`--matmul-vec-size-bits` up to 4096 over bytes)."""


@dataclass(frozen=True)
class MatMulSettings:
    """DAPHNE's `matmul_*` settings (values validated by runtime/options.py)."""

    vec_size_bits: int = 0
    tile: bool = False
    fixed_tile_sizes: tuple[int, ...] = ()
    unroll_factor: int = 1
    unroll_jam_factor: int = 4
    num_vec_registers: int = 16
    invert_loops: bool = False


def settings_from_config(config: object) -> MatMulSettings:
    """The settings a user config holds (fixed sizes only when `matmul_use_fixed_tile_sizes`, as in DAPHNE)."""
    use_fixed = bool(getattr(config, "matmul_use_fixed_tile_sizes", False))
    return MatMulSettings(
        vec_size_bits=int(getattr(config, "matmul_vec_size_bits", 0)),
        tile=bool(getattr(config, "matmul_tile", False)) or use_fixed,
        fixed_tile_sizes=tuple(getattr(config, "matmul_fixed_tile_sizes", ())) if use_fixed else (),
        unroll_factor=int(getattr(config, "matmul_unroll_factor", 1)),
        unroll_jam_factor=int(getattr(config, "matmul_unroll_jam_factor", 4)),
        num_vec_registers=int(getattr(config, "matmul_num_vec_registers", 16)),
        invert_loops=bool(getattr(config, "matmul_invert_loops", False)),
    )


def schedule_for(s: MatMulSettings, vt: str) -> Schedule:
    """The loop nest the settings ask for, for elements of `vt` (register blocks capped at `MAX_CELLS`)."""
    width = max(1, min(s.vec_size_bits // VALUE_TYPES[vt].bits, MAX_WIDTH)) if s.vec_size_bits > 0 else 1
    vectors = max(1, min(s.unroll_factor, MAX_CELLS // width))
    if not s.tile:
        return Schedule("ikj" if s.invert_loops else "ijk", width, vectors)
    jam = max(1, min(s.unroll_jam_factor, s.num_vec_registers // vectors))
    mc, nc, kc, mr, nr = (*s.fixed_tile_sizes, *(*AUTO_TILES, jam, width * vectors)[len(s.fixed_tile_sizes) :])[:5]
    width = min(width, nc, nr)  # a register block lies inside its cache tile
    vectors = max(1, min(nr // width, MAX_CELLS // width))
    jam = max(1, min(mr, mc, MAX_CELLS // (vectors * width)))
    return Schedule("tiled", width, vectors, jam, (mc, nc, kc))


def why_not(op: MatMulOp) -> str | None:
    """Why the product keeps its runtime kernel, or None when it lowers."""
    if KERNEL_CHOICE_ATTR in op.attributes:
        return "a kernel hint or extension names its kernel"
    types = (op.lhs.type, op.rhs.type, op.res.type)
    if not all(isinstance(t, MatrixType) for t in types):
        return "an operand is not a matrix"
    if any(t.is_sparse for t in types):  # type: ignore[attr-defined]
        return "a CSR operand or result"
    vts = {vt_name(t) for t in types}  # type: ignore[arg-type]
    if len(vts) != 1:
        return "mixed value types"
    vt = next(iter(vts))
    if vt not in ARITHMETIC_VTS:
        return f"value type {vt}"
    return None


def plan_matmul(op: MatMulOp, settings: MatMulSettings) -> tuple[MatMulKernel | None, str]:
    """The kernel of a product, or None and why it keeps its runtime kernel."""
    why = why_not(op)
    if why is not None:
        return None, why
    vt = vt_name(op.res.type)  # type: ignore[arg-type]
    assert vt is not None
    sched = schedule_for(settings, vt)
    ta, tb = op.transa is not None, op.transb is not None
    text = f"{VERSION} {vt} transa={ta} transb={tb} {sched}"
    name = "mm_" + hashlib.sha256(text.encode()).hexdigest()[:16]
    return MatMulKernel(name, vt, ta, tb, sched), ""


def kernel_text(k: MatMulKernel) -> str:
    """What identifies a kernel's object code (the kernel cache's key)."""
    return f"{VERSION} {k.name} {k.vt} transa={k.transa} transb={k.transb} {k.schedule}"


def in_pipeline(op: Operation) -> bool:
    p = op.parent_op()
    while p is not None:
        if isinstance(p, VectorizedPipelineOp):
            return True
        p = p.parent_op()
    return False


def annotate_matmul(op: MatMulOp, kernel: MatMulKernel | None, why: str) -> None:
    for name in abi.LOWERING_ATTRS:
        op.attributes.pop(name, None)
    if kernel is None:
        op.attributes[NATIVE_FALLBACK_ATTR] = StringAttr(f"fallback: {why}")
    else:
        op.attributes[NATIVE_KERNEL_ATTR] = SymbolRefAttr(kernel.name)


def kernel_module(kernel: MatMulKernel) -> ModuleOp:
    """`builtin.module @mm_<hash>` with the product's task kernel: what the JIT compiles into one object."""
    return ModuleOp([build_matmul(kernel)], sym_name=StringAttr(kernel.name))


ProductPlans = Mapping[MatMulOp, MatMulKernel | None]
"""Each product's kernel (None: it keeps its runtime kernel)."""


def plan_products(module: ModuleOp, settings: MatMulSettings) -> dict[MatMulOp, MatMulKernel | None]:
    """Plan every product outside pipelines, naming its kernel module on it or saying why it has none."""
    plans: dict[MatMulOp, MatMulKernel | None] = {}
    for mm in [o for o in preorder(module) if isinstance(o, MatMulOp) and not in_pipeline(o)]:
        kernel, why = plan_matmul(mm, settings)
        annotate_matmul(mm, kernel, why)
        plans[mm] = kernel
    return plans


def add_kernel_modules(module: ModuleOp, plans: ProductPlans) -> None:
    """Add the kernel module of every distinct planned product kernel to the module."""
    known = {m.sym_name.data for m in module.ops if isinstance(m, ModuleOp) and m.sym_name is not None}
    for kernel in plans.values():
        if kernel is not None and kernel.name not in known:
            module.body.block.add_op(kernel_module(kernel))
            known.add(kernel.name)


@dataclass(frozen=True)
class LowerMatMulToLoopsPass(ModulePass):
    """Adds one kernel module per distinct product kernel and names it on the product (`daphne.native_kernel`)."""

    name = "lower-matmul-to-loops"

    vec_size_bits: int = 0
    tile: bool = False
    fixed_tile_sizes: tuple[int, ...] = field(default=())
    unroll_factor: int = 1
    unroll_jam_factor: int = 4
    num_vec_registers: int = 16
    invert_loops: bool = False

    def settings(self) -> MatMulSettings:
        return MatMulSettings(
            self.vec_size_bits,
            self.tile or bool(self.fixed_tile_sizes),
            tuple(self.fixed_tile_sizes),
            self.unroll_factor,
            self.unroll_jam_factor,
            self.num_vec_registers,
            self.invert_loops,
        )

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        add_kernel_modules(op, self.plans(op))

    def plans(self, op: ModuleOp) -> ProductPlans:
        """The products' kernels: planned here (`daphne-opt`), or given by the native backend, which plans every
        product once (`compiler.backend.native`)."""
        return plan_products(op, self.settings())
