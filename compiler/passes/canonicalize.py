"""`canonicalize`: the ops' folds and canonicalization patterns to a fixpoint (DAPHNE's Fold.cpp/Canonicalize.cpp).

The simplifications live on the ops (`fold()` and `HasCanonicalizationPatternsTrait`, see dialects/ops.py and
dialects/folding.py); this pass is xDSL's greedy driver over them, with three differences from xDSL's own
`canonicalize`: ops on constant operands are evaluated with the runtime kernel that would run them
(`compiler.selection.table.evaluate_constant`), so a folded result is bit-identical to the unfolded one; dead ops
stay (removing them is `dce`'s job, so each pass's effect shows separately in `--explain` and daphne-opt); and
only daphne ops are rewritten (scf's own patterns, such as hoisting constants out of loops or inlining loops of
one iteration, are not part of it), except ops with a kernel hint, whose hinted kernel must run. The one control-flow
rewrite is an `if` on a constant condition replaced by the branch it takes (`InlineConstantIf`): inter-procedural
constant propagation (`specialize`) makes such conditions out of a library function's options.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.folder import Folder
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import GreedyRewritePatternApplier, PatternRewriter, RewritePattern
from xdsl.rewriter import InsertPoint
from xdsl.traits import ConstantLike, HasFolder
from xdsl.transforms.canonicalize import CanonicalizationRewritePattern

from daphnec.compiler.ir_walk import LinearRewriteWalker
from daphnec.compiler.selection.table import evaluate_constant
from daphnec.dialects.attr_names import KERNEL_HINT_ATTR, MERGE_CAST_ATTR
from daphnec.dialects.folding import evaluating_with
from daphnec.dialects.ops import CastOp, DaphneOp, constant_value
from daphnec.dialects.types import is_matrix


@dataclass(frozen=True)
class FoldAtLocation(RewritePattern):
    """xDSL's folding (the op's `fold()`, constants materialized by the op's dialect); the constants it creates
    keep the folded op's source location, so errors and `--explain` still point into the script."""

    ctx: Context

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, DaphneOp) or not op.has_trait(HasFolder) or op.has_trait(ConstantLike):
            return
        if KERNEL_HINT_ATTR in op.attributes:
            return  # the hinted kernel must run (compiler/passes/select_kernels.py)
        folded = Folder(self.ctx).try_fold(op)
        if folded is None:
            return
        values, new_ops = folded
        for new in new_ops:
            new.location = op.location
        rewriter.replace(op, new_ops, values)


class InlineConstantIf(RewritePattern):
    """`if (c) {A} else {B}` with a constant `c`: the ops of the branch taken, in place of the `if`, and the `if`'s
    results are what that branch yields. Why: a function specialized for a constant option (`icpt == 2`) would
    otherwise keep both branches and merge their values, so the passes after it (fusion, in-place updates, kernel
    selection) saw neither path's ops as the ones that run; the values are bit-identical (nothing is re-evaluated)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, scf.IfOp):
            return
        cond = constant_value(op.cond)
        if not isinstance(cond, bool):
            return
        yields = [r.block.last_op for r in op.regions if r.blocks]
        if any(_scalar_to_matrix_merge(v) for y in yields for v in y.operands):
            return  # a scalar on one path and a matrix on the other: inference reports it (DAPHNE does, taken or not)
        region = op.true_region if cond else op.false_region
        if not region.blocks:  # an `if` without `else` whose condition is false: nothing runs
            rewriter.erase_op(op)
            return
        block = region.block
        yield_op = block.last_op
        assert isinstance(yield_op, scf.YieldOp)
        values = list(yield_op.arguments)
        for inner in list(block.ops):
            if inner is yield_op:
                break
            inner.detach()
            rewriter.insert(inner, InsertPoint.before(op))
        rewriter.replace(op, [], values)


def _scalar_to_matrix_merge(v: SSAValue) -> bool:
    """`v` is the frontend's cast of a scalar to the matrix type that the other path of a branch gives."""
    owner = v.owner
    return isinstance(owner, CastOp) and MERGE_CAST_ATTR in owner.attributes and not is_matrix(owner.arg.type)


class DaphneCanonicalization(CanonicalizationRewritePattern):
    """The canonicalization patterns a daphne op declares (`HasCanonicalizationPatternsTrait`)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if isinstance(op, DaphneOp) and KERNEL_HINT_ATTR not in op.attributes:
            super().match_and_rewrite(op, rewriter)


def has_folds(module: ModuleOp) -> bool:
    """Whether some daphne op of `module` would fold (`FoldAtLocation`): from its types or operands (`x * 1.0`,
    `nrow(X)` of a known shape, a cast to the value's own type), or by evaluation on constant operands, which this
    check only notes (no kernel runs). One walk calling each folding op's `fold()`: the pipeline asks it before the
    clean-up after the late rewrites on the default path (compiler/pipeline.py), whose full `canonicalize` and `dce`
    cost ~10 ms of a ~0.5 s compile of lmDS even when nothing folds. Canonicalization patterns and constant `if`s
    are not looked for: the earlier `canonicalize` runs took them, and the late rewrites make constants, not those."""
    evaluated: list[Operation] = []

    def note(op: Operation, args: object) -> None:
        evaluated.append(op)

    with evaluating_with(note):
        for o in module.walk():
            if not isinstance(o, DaphneOp) or not o.has_trait(HasFolder) or o.has_trait(ConstantLike):
                continue
            if KERNEL_HINT_ATTR in o.attributes:
                continue
            try:
                if o.fold() is not None or evaluated:  # type: ignore[attr-defined]
                    return True
            except Exception:  # noqa: BLE001 - a fold that raises (a compile error on constants): let the pass report it
                return True
    return False


@dataclass(frozen=True)
class CanonicalizePass(ModulePass):
    name = "canonicalize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        patterns = GreedyRewritePatternApplier(
            [FoldAtLocation(ctx), DaphneCanonicalization(), InlineConstantIf()],
            dce_enabled=False,
        )
        with evaluating_with(evaluate_constant):
            LinearRewriteWalker(patterns).rewrite_module(op)  # xDSL's walker, linear on deep nesting
