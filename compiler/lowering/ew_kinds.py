"""The element-wise kinds with a native lowering: one entry per kind.

The kernel plan (`kernel_plan`) reads which kinds lower, the loop generator (`elementwise`) how: an entry names, for
float and for integer operands, either an MLIR op (`arith.addf`: one op on the operands, cast to the operation's
type) or one of `elementwise`'s emitters (`trunc_div`: an op sequence reproducing the runtime kernel's semantics,
see there). An element-wise op whose semantics is one MLIR op lowers with one line here, besides its dialect op
and runtime kernel. Kinds missing here keep their Python body, or run between native stages when numpy computes
them (`kernel_plan.OPAQUE_UNARY_KINDS`).

This module imports nothing: the plan runs while the script starts, the loop generator on the compile thread.
"""

from __future__ import annotations

BINARY: dict[str, tuple[str, str]] = {
    # kind: (float operands, integer operands); bool operands compute as si64, except the emitters that take
    # any type (`elementwise.ANY_TYPE`: compare, min, max, logical)
    "add": ("arith.addf", "arith.addi"),
    "sub": ("arith.subf", "arith.subi"),
    "mul": ("arith.mulf", "arith.muli"),
    "div": ("arith.divf", "trunc_div"),
    "pow": ("square", "int_square"),
    "mod": ("frem", "int_mod"),
    "bitwiseAnd": ("", "arith.andi"),  # integer operands only (its value-type rule, dialects/op_kinds.py)
    "min": ("min", "min"),
    "max": ("max", "max"),
    "and": ("logical", "logical"),
    "or": ("logical", "logical"),
    "xor": ("logical", "logical"),
    "eq": ("compare", "compare"),
    "neq": ("compare", "compare"),
    "lt": ("compare", "compare"),
    "le": ("compare", "compare"),
    "gt": ("compare", "compare"),
    "ge": ("compare", "compare"),
}

UNARY: dict[str, tuple[str, str | None]] = {
    # kind: (float input, integer input or None: computed in the float result type, the input cast first)
    "minus": ("arith.negf", "neg"),
    "abs": ("math.absf", "int_abs"),
    "sign": ("sign", "int_sign"),
    "sqrt": ("sqrt", None),
    "round": ("round", "through_f64"),
    "floor": ("math.floor", "through_f64"),
    "ceil": ("math.ceil", "through_f64"),
    "isNan": ("isnan", "zero"),
}
