"""Integer-valued matrices: which float values hold only integers, and how large they can be.

A float sum depends on the order of its additions, and DAPHNE's sum is a left fold in element order (AggAll), which
numpy reproduces only with a `cumsum` (a prefix-sum temporary: ~15x its pairwise `sum` on 20k cells). But when every
cell is an integer and every partial sum stays within the float's exact integers (|x| <= 2^53 for f64, 2^24 for
f32), every addition is exact, so ANY order gives the same bits -- `sum(mask)` may add pairwise. This analysis
proves the first half at compile time: `int_bound(v)` is a bound B on |cell| when every cell of `v` is certainly a
finite integer, else None; the kernel checks the second half (cells * B <= 2^53) at run time when the shape is not
known (`runtime/kernels/agg.py: exact_sum_kernel`).

Sources: integer and integral float constants (and `fill` of them), comparisons and logical ops (0/1 whatever the
operands, NaN included), `isNan` (0/1), casts from integer value types (their range) or between floats (when the
bound is exact in the target). Propagation: `*` multiplies bounds, `+ -` add them, `min max` take the larger,
unary minus and `abs` keep it, a full `sum` of a matrix of known shape multiplies by its cells; every bound must stay
exact in f32/f64 (<= 2^53), else nothing is claimed. Control flow: an `scf.if` result takes the larger of its
branches; a loop-carried value is assumed to hold its initial value's bound and accepted if the body keeps it
(induction); a function parameter takes the larger bound over every call of the function, when calls are its only
uses (a function used otherwise, e.g. as a UDF, or recursive, claims nothing).
"""

from __future__ import annotations

from xdsl.dialects import func, scf
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, ModuleOp, SymbolRefAttr
from xdsl.ir import Attribute, Block, BlockArgument, Operation, OpResult, SSAValue

from daphnec.dialects import ops
from daphnec.dialects.op_kinds import COMPARISON_KINDS, LOGICAL_KINDS
from daphnec.dialects.types import MatrixType, is_matrix, vt_name
from daphnec.dialects.value_types import INT_RANGES

EXACT_F64 = 1 << 53
"""The largest magnitude up to which every integer is an f64 (and every sum of two such integers is exact)."""
EXACT_F32 = 1 << 24
EXACT: dict[str, int] = {"f64": EXACT_F64, "f32": EXACT_F32}

_MAX_STEPS = 20_000
"""Values visited per query before giving up (a deep chain of loops re-visits bodies while assuming)."""


def exact_cells(bound: int, vt: str) -> int | None:
    """How many cells of |value| <= `bound` a sum in float type `vt` adds exactly in any order (None: unlimited,
    every cell is 0)."""
    if bound == 0:
        return None
    return EXACT[vt] // bound


class IntegerValued:
    """`int_bound` queries over one module (its call graph is collected once)."""

    def __init__(self, module: ModuleOp) -> None:
        self._funcs: dict[str, func.FuncOp] = {}
        self._calls: dict[str, list[func.CallOp]] = {}
        self._other_uses: set[str] = set()
        for op in module.walk():
            if isinstance(op, func.FuncOp):
                self._funcs[op.sym_name.data] = op
            elif isinstance(op, func.CallOp):
                self._calls.setdefault(op.callee.root_reference.data, []).append(op)
            else:
                for a in (*op.properties.values(), *op.attributes.values()):
                    if isinstance(a, SymbolRefAttr):
                        self._other_uses.add(a.root_reference.data)
        self._cache: dict[SSAValue, int | None] = {}
        self._assumed: dict[SSAValue, int | None] = {}
        self._steps = 0

    def int_bound(self, v: SSAValue) -> int | None:
        """A bound on |cell| of `v` if every cell is certainly a finite integer, else None."""
        self._steps = 0
        return self._bound(v)

    # --- the recursion ----------------------------------------------------------------------------------------------

    def _bound(self, v: SSAValue) -> int | None:
        if v in self._assumed:
            return self._assumed[v]
        if v in self._cache:
            return self._cache[v]
        self._steps += 1
        if self._steps > _MAX_STEPS:
            return None
        b = self._arg_bound(v) if isinstance(v, BlockArgument) else self._result_bound(v)
        typed = _type_bound(v.type)
        if typed is not None:  # an integer value type: its range bounds any (wrapped) value
            b = typed if b is None else min(b, typed)
        if b is not None and b > EXACT.get(vt_name(v.type) or "", EXACT_F64):
            b = None  # not every value up to the bound is exact in this float type (or in any)
        if not self._assumed:  # a result computed under an assumption is not cached (the assumption may fail)
            self._cache[v] = b
        return b

    def _assume(self, arg: SSAValue, init: SSAValue, body_value: SSAValue) -> int | None:
        """Induction over a loop or recursion: `arg` starts as `init` and becomes `body_value`."""
        start = self._bound(init)
        if start is None:
            return None
        self._assumed[arg] = start
        try:
            step = self._bound(body_value)
        finally:
            del self._assumed[arg]
        return start if step is not None and step <= start else None

    def _arg_bound(self, v: BlockArgument) -> int | None:
        block: Block = v.block
        parent = block.parent_op()
        if isinstance(parent, scf.ForOp):
            if v.index == 0:
                return None  # the induction variable is an index (sums take matrices)
            i = v.index - 1
            yield_op = block.last_op
            if not isinstance(yield_op, scf.YieldOp):
                return None
            return self._assume(v, parent.iter_args[i], yield_op.operands[i])
        if isinstance(parent, func.FuncOp):
            name = parent.sym_name.data
            calls = self._calls.get(name, [])
            if not calls or name in self._other_uses or not _is_entry_block(parent, block):
                return None
            self._assumed[v] = None  # a recursive call claims nothing for this parameter
            try:
                bounds = [self._bound(c.operands[v.index]) for c in calls]
            finally:
                del self._assumed[v]
            return None if any(b is None for b in bounds) else max(bounds)  # type: ignore[type-var]
        return None

    def _result_bound(self, v: SSAValue) -> int | None:
        if not isinstance(v, OpResult):
            return None
        op = v.op
        if isinstance(op, scf.ForOp):  # the initial value or the last iteration's: the loop-carried bound
            return self._bound(op.body.blocks[0].args[v.index + 1])
        if isinstance(op, scf.IfOp):
            return _max_all([self._bound(_yielded(r, v.index)) for r in (op.true_region, op.false_region)])
        if isinstance(op, ops.ConstantOp):
            return _constant_bound(op.value)
        if isinstance(op, ops.FillOp):
            return self._bound(op.arg)
        if isinstance(op, ops.CastOp):
            return self._cast_bound(op)
        if isinstance(op, ops.EwBinaryOp):
            return self._binary_bound(op)
        if isinstance(op, ops.EwUnaryOp):
            if op.KIND == "isNan":
                return 1
            return self._bound(op.arg) if op.KIND in ("minus", "abs") else None
        if isinstance(op, ops.AggOp) and op.KIND == "sum" and op.AXIS == "all":
            t = op.arg.type
            if not isinstance(t, MatrixType) or any(d < 0 for d in t.shape):
                return None
            b = self._bound(op.arg)
            return None if b is None else b * t.shape[0] * t.shape[1]
        return _type_bound(v.type)

    def _binary_bound(self, op: ops.EwBinaryOp) -> int | None:
        if op.KIND in COMPARISON_KINDS or op.KIND in LOGICAL_KINDS:
            return 1
        if op.KIND not in ("add", "sub", "mul", "min", "max"):
            return _type_bound(op.res.type)
        a = self._bound(op.lhs)
        b = self._bound(op.rhs) if a is not None else None
        if a is None or b is None:
            return _type_bound(op.res.type)
        if op.KIND == "mul":
            return a * b
        return a + b if op.KIND in ("add", "sub") else max(a, b)

    def _cast_bound(self, op: ops.CastOp) -> int | None:
        src, dst = vt_name(op.arg.type), vt_name(op.res.type)
        if src in INT_RANGES or src == "bool":
            b = _type_bound(op.arg.type)
        elif src in EXACT:
            b = self._bound(op.arg)
        else:
            return None
        if b is None:
            return None
        if dst in EXACT:
            return b if b <= EXACT[dst] else None
        return b if dst in INT_RANGES or dst == "bool" else None


def _is_entry_block(f: func.FuncOp, block: Block) -> bool:
    return f.body.blocks and f.body.blocks[0] is block  # type: ignore[return-value]


def _yielded(region, index: int) -> SSAValue | None:
    if not region.blocks:
        return None
    last = region.blocks[-1].last_op
    return last.operands[index] if isinstance(last, scf.YieldOp) else None


def _max_all(bounds: list[int | None]) -> int | None:
    return None if any(b is None for b in bounds) else max(bounds)  # type: ignore[type-var]


def _constant_bound(value: Attribute) -> int | None:
    if isinstance(value, IntegerAttr):
        return abs(int(value.value.data))
    if isinstance(value, FloatAttr):
        x = float(value.value.data)
        return int(abs(x)) if x == x and abs(x) != float("inf") and x == int(x) else None
    return None


def _type_bound(t: Attribute) -> int | None:
    """Values of an integer value type (scalars or matrices) are integers within its range."""
    vt = vt_name(t)
    if vt == "bool":
        return 1
    if vt in INT_RANGES:
        lo, hi = INT_RANGES[vt]
        return max(-lo, hi)
    return None


def exact_sum_cells(analysis: IntegerValued, op: Operation) -> int | None:
    """For a full `sum` of a float matrix: the most cells it may add in any order with the sequential fold's bits
    (0: none, the operand is not known to be integer-valued; -1: any number, every cell is 0)."""
    if not (isinstance(op, ops.AggOp) and op.KIND == "sum" and op.AXIS == "all" and is_matrix(op.arg.type)):
        return 0
    vt = vt_name(op.arg.type)
    if vt not in EXACT or vt_name(op.res.type) != vt:
        return 0
    b = analysis.int_bound(op.arg)
    if b is None:
        return 0
    cells = exact_cells(b, vt)
    return -1 if cells is None else cells
