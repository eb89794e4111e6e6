"""How daphne ops fold to constants: the hook through which the compiler evaluates ops on constant operands.

Ops fold with xDSL's folding interface (`fold()` on the op, `HasFolderInterface`; the dialect materializes the
constants), in one of two ways:

- from their types or operands alone: `x * 1` is x, `nrow(X)` of a known shape is a constant, a cast to the
  value's own type is the value -- written out in the op's `fold()`;
- by evaluation, when every operand is a constant scalar: the result is what the op's runtime kernel computes on
  those values, so a folded program prints exactly what the unfolded one would (DAPHNE folds with the kernels'
  own scalar functions, `src/ir/daphneir/DaphneDialect.cpp`).

The dialect does not know the kernels (data flows frontend -> dialects <- compiler -> runtime), so the compiler
provides the evaluation while it canonicalizes: `with evaluating_with(fn): ...`. Without an evaluator, ops fold
from their types only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

from xdsl.ir import Operation

ConstantEvaluator = Callable[[Operation, Sequence[object]], Sequence[object] | None]
"""(op, Python values of its constant operands) -> the values of its results, or None if it is not evaluated."""

_EVALUATOR: ContextVar[ConstantEvaluator | None] = ContextVar("daphne_constant_evaluator", default=None)


@contextmanager
def evaluating_with(evaluate: ConstantEvaluator) -> Iterator[None]:
    """Fold ops on constant operands with `evaluate` inside the `with` block (in this thread)."""
    token = _EVALUATOR.set(evaluate)
    try:
        yield
    finally:
        _EVALUATOR.reset(token)


def evaluate(op: Operation, args: Sequence[object]) -> Sequence[object] | None:
    """The values of `op`'s results on constant operands `args`, by the evaluator in force (None without one)."""
    evaluator = _EVALUATOR.get()
    return evaluator(op, args) if evaluator is not None else None
