"""`select-kernels`: kernel hints and kernel extensions (DAPHNE's doc/Extensions.md), at the `phy_op_selection`
explain slot.

A kernel hint (`sum::name(X)`, `print::name(x)`, `a +::name b`) names the kernel an op must call, by DAPHNE's naming
scheme (compiler/selection/naming.py) or by an extension kernel's `kernelFuncName`: a known name is recorded as the op's
`kernel` attribute, an unknown one is DAPHNE's error "no kernel found for operation `sumAll` with hinted name `x`".
Without a hint, an extension kernel registered with a priority above 0 (`--kernel-ext catalog.json:1`) whose types
match the op's replaces the built-in kernel (the highest priority wins; among equals the first registered).
An extension kernel is recorded with its backend and library (`kernel_backend`, `kernel_lib`), which is all
`compiler.selection.table` needs to call it. Ops with a chosen kernel are neither folded nor fused into vectorized
pipelines: the named kernel runs.

A full `sum` of a float matrix whose cells are provably integers (`compiler/analysis/integer_valued.py`: masks,
comparisons, their products, ...) without a chosen kernel is marked `daphne.exact_sum_cells` = how many cells it
may add in any order and keep every bit of DAPHNE's sequential fold (2^53 over the cells' bound for f64): its
kernel then adds pairwise, at numpy's speed (`agg.exact_sum_kernel`). Any other full f64 sum whose value the
program only compares (`compiler/analysis/order_only.py`: PageRank's convergence test) is marked
`daphne.only_compared`: its kernel adds pairwise with an error bound and folds in order only for a comparison within
that bound (`agg.compared_sum_kernel`). Both rules keep every bit of the program's results, so they are always on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, UnitAttr
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from daphnec.compiler.analysis.integer_valued import IntegerValued, exact_sum_cells
from daphnec.compiler.analysis.order_only import only_compared
from daphnec.compiler.ir_walk import preorder
from daphnec.compiler.selection.naming import kernel_name, mnemonic, op_types
from daphnec.dialects.attr_names import (
    COMPARED_SUM_ATTR,
    EXACT_SUM_ATTR,
    KERNEL_BACKEND_ATTR,
    KERNEL_CHOICE_ATTR,
    KERNEL_HINT_ATTR,
    KERNEL_LIB_ATTR,
)
from daphnec.dialects.errors import CompileError
from daphnec.dialects.locations import loc_of
from daphnec.dialects.ops import DaphneOp, SumAllOp
from daphnec.dialects.types import is_matrix, vt_name
from daphnec.runtime.kernel_catalog import BACKENDS_RUN, KernelInfo
from daphnec.runtime.kernels.extensions import unsupported_types


@dataclass(frozen=True)
class SelectKernelsPass(ModulePass):
    name = "select-kernels"

    catalog: tuple[KernelInfo, ...] = ()
    """The extension kernels registered with `--kernel-ext`, in registration order."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        by_op: dict[str, list[KernelInfo]] = {}
        for k in self.catalog:
            by_op.setdefault(k.op, []).append(k)
        for o in preorder(op):  # linear in the nesting depth (compiler/ir_walk.py)
            if not isinstance(o, DaphneOp):
                continue
            hint = o.attributes.get(KERNEL_HINT_ATTR)
            kernels = by_op.get(mnemonic(o), [])
            if isinstance(hint, StringAttr):
                _honour_hint(o, hint.data, kernels)
            else:
                chosen = _by_priority(o, kernels)
                if chosen is not None:
                    _use(o, chosen)
        _mark_exact_sums(op)


def _mark_exact_sums(module: ModuleOp) -> None:
    """`daphne.exact_sum_cells` on every full float sum of integer cells that runs its built-in kernel, else
    `daphne.only_compared` on a full f64 sum whose value is only compared."""
    analysis: IntegerValued | None = None
    for o in preorder(module):
        if not isinstance(o, SumAllOp) or KERNEL_CHOICE_ATTR in o.attributes:
            continue
        analysis = analysis or IntegerValued(module)
        cells = exact_sum_cells(analysis, o)
        if cells:
            o.attributes[EXACT_SUM_ATTR] = IntegerAttr(cells, 64)
        elif is_matrix(o.arg.type) and vt_name(o.arg.type) == vt_name(o.res.type) == "f64" and only_compared(o.res):
            o.attributes[COMPARED_SUM_ATTR] = UnitAttr()


def _signature(types: tuple[tuple[str, ...], tuple[str, ...]]) -> str:
    res, args = types
    return f"({', '.join(args)}) -> ({', '.join(res)})"


def _honour_hint(op: Operation, hint: str, kernels: Sequence[KernelInfo]) -> None:
    mnem, builtin = mnemonic(op), kernel_name(op)
    if hint == builtin:
        op.attributes[KERNEL_CHOICE_ATTR] = StringAttr(builtin)
        return
    named = [k for k in kernels if k.name == hint]
    if not named:
        if hint.startswith(f"_{mnem}__"):
            msg = f"the kernel `{hint}` does not match the types of this `{mnem}`, whose kernel is `{builtin}`"
        else:
            msg = f"no kernel found for operation `{mnem}` with hinted name `{hint}`"
        raise CompileError(msg, loc_of(op))
    types = op_types(op, brackets=True)
    fitting = [k for k in named if (k.res_types, k.arg_types) == types]
    if not fitting:
        k = named[0]
        raise CompileError(
            f"the kernel `{hint}` takes {_signature((k.res_types, k.arg_types))}, but this `{mnem}` has "
            f"{_signature(types)}",
            loc_of(op),
        )
    k = fitting[0]
    if k.backend not in BACKENDS_RUN:
        raise CompileError(f"the kernel `{hint}` is for backend {k.backend}, which daphnec does not run", loc_of(op))
    bad = unsupported_types(k.backend, (*k.res_types, *k.arg_types))
    if bad:
        raise CompileError(f"the kernel `{hint}`: a C kernel cannot exchange values of type {bad[0]}", loc_of(op))
    _use(op, k)


def _by_priority(op: Operation, kernels: Sequence[KernelInfo]) -> KernelInfo | None:
    if not kernels:
        return None
    types = op_types(op, brackets=True)
    best: KernelInfo | None = None
    for k in kernels:
        if k.priority <= 0 or k.backend not in BACKENDS_RUN or (k.res_types, k.arg_types) != types:
            continue
        if unsupported_types(k.backend, (*k.res_types, *k.arg_types)):
            continue
        if best is None or k.priority > best.priority:
            best = k
    return best


def _use(op: Operation, k: KernelInfo) -> None:
    op.attributes[KERNEL_CHOICE_ATTR] = StringAttr(k.name)
    op.attributes[KERNEL_BACKEND_ATTR] = StringAttr(k.backend)
    op.attributes[KERNEL_LIB_ATTR] = StringAttr(k.lib)
