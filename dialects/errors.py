"""Errors shared by every layer that sees a script: parse (exit 1), compile (exit 2), execution (exit 3).

They live in `dialects/` because both the frontend and the compiler build on the dialect; the runtime has its own
`DaphneRuntimeError`, which the compiler's host code turns into a `DaphneError` with code 3 and a location.
"""

from __future__ import annotations

from dataclasses import dataclass

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
