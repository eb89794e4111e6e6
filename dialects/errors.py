"""Errors shared by every layer that sees a script: parse (exit 1), compile (exit 2), execution (exit 3).

They live in `dialects/` because both the frontend and the compiler build on the dialect; the runtime has its own
`DaphneRuntimeError`, which the compiler's host code turns into a `DaphneError` with code 3 and a location.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

PARSER_ERROR = 1
PASS_ERROR = 2
EXECUTION_ERROR = 3


@dataclass(frozen=True)
class Loc:
    """A position in a DaphneDSL source file (1-based line and column)."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


class DaphneError(Exception):
    """A user-facing error: printed as `file:line:col: error: message` and mapped to DAPHNE's exit code."""

    def __init__(self, message: str, loc: Loc | None = None, code: int = PASS_ERROR):
        if not isinstance(self, ScriptStopped):  # `stop`'s text is the user's own
            message = name_ops_in_dsl_terms(message)  # every message, whoever raised it, names ops as a script does
            message = _REPEATED_PREFIX.sub(
                r"\1", message
            )  # a layer that adds the builtin's name to a message that has it
        super().__init__(message)
        self.message = message
        self.loc = loc
        self.code = code

    def render(self) -> str:
        prefix = f"{self.loc}: " if self.loc is not None else ""
        return f"{prefix}error: {self.message}"


class ParseError(DaphneError):
    """Syntax errors and errors found while building IR from the AST (DAPHNE's PARSER_ERROR)."""

    def __init__(self, message: str, loc: Loc | None = None):
        super().__init__(message, loc, PARSER_ERROR)


class CompileError(DaphneError):
    """Errors found by a compiler pass, e.g. type errors (DAPHNE's PASS_ERROR)."""

    def __init__(self, message: str, loc: Loc | None = None):
        super().__init__(message, loc, PASS_ERROR)


class ExecutionError(DaphneError):
    """A run-time failure located at the IR operation that raised it (DAPHNE's EXECUTION_ERROR)."""

    def __init__(self, message: str, loc: Loc | None = None):
        super().__init__(message, loc, EXECUTION_ERROR)


class ScriptStopped(ExecutionError):
    """`stop(message)`: DAPHNE's Stop kernel throws "system stopped: <message>" (src/runtime/local/kernels/Stop.h)
    and its logger writes that to standard output; the exit code is 3 and nothing goes to stderr."""


# --- messages in DaphneDSL terms -------------------------------------------------------------------------------------

_OPERATORS = {"ewMinus": "-", "matMul": "@", "cond": "?:", "ewConcat": "+"}
"""Operators of ops without an element-wise binary kind's record (those name their operator, dialects/op_kinds.py)."""
_BUILTINS = {
    "numRows": "nrow", "numCols": "ncol", "numCells": "ncell", "transpose": "t", "randMatrix": "rand",
    "colBind": "cbind", "rowBind": "rbind", "eigenCal": "eigen", "tri": "lowerTri/upperTri", "idxminRow": "idxMin",
    "idxminCol": "idxMin", "idxmaxRow": "idxMax", "idxmaxCol": "idxMax", "Convolution_Forward": "conv2d",
    "NN_Avg_Forward": "avg_pool2d", "NN_Max_Forward": "max_pool2d", "BatchNorm_Forward": "batch_norm2d",
    "NN_Relu_Forward": "relu", "NN_Affine_Forward": "affine", "conv2DBackwardFilter": "conv2d_backward_filter",
    "conv2DBackwardData": "conv2d_backward_data", "avgPoolBackward": "avg_pool2d_backward",
    "maxPoolBackward": "max_pool2d_backward", "batchNorm2DBackward": "batch_norm2d_backward",
    "matrixLiteral": "matrix literal", "createFrame": "frame literal",
    "sliceRow": "indexing", "sliceCol": "indexing", "extractRow": "indexing", "extractCol": "indexing",
    "filterRow": "indexing", "filterCol": "indexing", "insert": "left indexing", "listGet": "list indexing",
    "read": "readMatrix/readFrame", "write": "writeMatrix/writeFrame", "cast": "cast", "constant": "literal",
    "generic_call": "function call", "forRange": "for",
}  # fmt: skip
_OP_NAME = re.compile(r"(?<![\w.!\"])daphne\.([A-Za-z_]+)\b(?![\w.\"])")
"""An op named in a message (`daphne.matMul: ...`, `operation 'daphne.ewAbs'`); not a type (`!daphne.Matrix`) nor a
quoted IR name (`"daphne.cast"`) nor an attribute (`daphne.native_kernel`, lower case with an underscore)."""
_UNKNOWN_TYPE = re.compile(r"!daphne\.Unknown\b")
_BARE_EW_OP = re.compile(r"(?<![\w.!\"`])(ew[A-Z][A-Za-z]*)(?=: )")
"""A kernel's message that names its element-wise op without the dialect (`ewAbs: operation is not supported`)."""
_REPEATED_PREFIX = re.compile(r"^([\w.`@/-]+: )(?:\1)+")
"""`readMatrix: readMatrix: ...`: the builtin named twice, by the kernel and by the layer that located its error."""
_UNKNOWN_SIZE = re.compile(r"(?<![\w-])-1(?=x)|(?<=\dx)-1\b|(?<=\?x)-1\b")


@cache
def _dsl_names() -> dict[str, str]:
    """Op mnemonic -> how a DaphneDSL script spells it, where that is not the mnemonic itself. Built on first use:
    the kind records import numpy, which the command line must not load before it needs to."""
    from daphnec.dialects.op_kinds import AGG_AXES, AGGREGATIONS, CUM_AGGREGATIONS, EW_BINARY

    names = {m: f"`{o}`" for m, o in _OPERATORS.items()}
    names.update({r.mnemonic: f"`{r.operator}`" for r in EW_BINARY.values() if r.operator is not None})
    names.update({r.mnemonic(axis): r.builtin for r in AGGREGATIONS.values() for axis in AGG_AXES})
    names.update({r.mnemonic: r.builtin for r in CUM_AGGREGATIONS.values()})
    return {**names, **_BUILTINS}


def dsl_name(mnemonic: str) -> str:
    """How a DaphneDSL script spells the op `daphne.<mnemonic>` (`@` for matMul, `nrow` for numRows)."""
    name = _dsl_names().get(mnemonic)
    if name is not None:
        return name
    if mnemonic.startswith("ew") and mnemonic[2:3].isupper():
        return mnemonic[2].lower() + mnemonic[3:]
    return mnemonic  # most builtins are spelled like their op (reshape, solve, oneHot, ...)


def _dsl_op(m: re.Match[str]) -> str:
    mnemonic = m.group(1)
    if "_" in mnemonic and mnemonic.islower():  # an attribute name (`daphne.native_kernel`), not an op
        return m.group(0)
    return dsl_name(mnemonic)


def name_ops_in_dsl_terms(message: str) -> str:
    """`message` with every IR op (`daphne.ewAbs`) named as a DaphneDSL script spells it (`abs`) and the unknown
    type named in words: the one place that keeps the compiler's names out of what users read, whichever pass or
    kernel wrote the message."""
    if "ew" in message:
        message = _BARE_EW_OP.sub(lambda m: dsl_name(m.group(1)), message)
    if "daphne." not in message:
        return message
    return _ir_types_in_dsl_terms(_UNKNOWN_TYPE.sub("an unknown type", _OP_NAME.sub(_dsl_op, message)))


_IR_TYPE = re.compile(r"!daphne\.(Matrix|Frame|List|String|Column)\b")
_DSL_DATA_TYPE = {"Matrix": "matrix", "Frame": "frame", "List": "list", "String": "str", "Column": "column"}
_MATRIX_VT = re.compile(r"(?<=x)(f64|f32|si64|si32|si8|ui64|ui32|ui8|i1|index)\b")


def _ir_types_in_dsl_terms(message: str) -> str:
    """IR types (`!daphne.Matrix<3x1xf64>`, `!daphne.Frame<2x[si64], ["a"]>`) as a script writes them
    (`matrix<f64>`, `frame`); the type's parameters are skipped with their nested brackets."""
    out, pos = [], 0
    for m in _IR_TYPE.finditer(message):
        if m.start() < pos:
            continue  # inside a type already replaced
        out.append(message[pos : m.start()])
        end, params = m.end(), ""
        if end < len(message) and message[end] == "<":
            depth, i = 0, end
            while i < len(message):
                depth += {"<": 1, ">": -1}.get(message[i], 0)
                i += 1
                if depth == 0:
                    break
            params, end = message[m.end() + 1 : i - 1], i
        name = _DSL_DATA_TYPE[m.group(1)]
        vt = _MATRIX_VT.search(params) if m.group(1) == "Matrix" else None
        out.append(f"{name}<{'bool' if vt.group(1) == 'i1' else vt.group(1)}>" if vt else name)
        pos = end
    out.append(message[pos:])
    return "".join(out)


def in_dsl_terms(message: str) -> str:
    """A verifier's message as a DaphneDSL user reads it: ops named as the script spells them, unknown sizes `?`."""
    return _UNKNOWN_SIZE.sub("?", name_ops_in_dsl_terms(message))
