"""The Python API's exceptions: one hierarchy for every failure of a generated DaphneDSL program.

    DaphneLibError (RuntimeError)          a program failed; DaphneLib raises RuntimeError("Error in DaphneDSL ...")
      DaphneParseError                     DAPHNE exit status 1: the generated program does not parse or build
      DaphneCompileError                   exit status 2: a compiler pass rejected it (types, shapes, ...)
      DaphneExecutionError                 exit status 3: a kernel failed while it ran
    DaphneUsageError (DaphneLibError, ValueError)   bad API use found before anything runs (options, nested values)

A program error carries `location` (file `<daphnelib>`, line and column in the generated program), `program_line`
(that line), `node_site` (the Python call that built the node the line computes) and `program` (the whole text).
`str()` shows all of them, so a notebook shows where the failing operation came from, never a traceback from
inside the compiler (`DaphneContext(debug=True)` keeps the internal traceback as `__cause__`).
"""

from __future__ import annotations

from typing import Any


class DaphneLibError(RuntimeError):
    """A generated DaphneDSL program failed (see the module docstring)."""

    exit_code = 0

    def __init__(
        self,
        message: str,
        location: Any = None,
        program: str = "",
        program_line: str = "",
        node_site: Any = None,
    ):
        self.message = message
        self.location = location
        self.program = program
        self.program_line = program_line
        self.node_site = node_site
        super().__init__(self._text())

    def _text(self) -> str:
        where = f"{self.location}: " if self.location is not None else ""
        parts = [f"Error in DaphneDSL script: {where}error: {self.message}"]
        if self.program_line:
            parts.append(f"  in the generated program: {self.program_line}")
        if self.node_site is not None:
            parts.append(f"  the failing operation was built at {self.node_site}")
        return "\n".join(parts)


class DaphneParseError(DaphneLibError):
    """The generated program does not parse or cannot be turned into IR (DAPHNE's exit status 1)."""

    exit_code = 1


class DaphneCompileError(DaphneLibError):
    """A compiler pass rejected the program, e.g. a type or shape error (DAPHNE's exit status 2)."""

    exit_code = 2


class DaphneExecutionError(DaphneLibError):
    """A kernel failed while the program ran (DAPHNE's exit status 3)."""

    exit_code = 3


class DaphneUsageError(DaphneLibError, ValueError):
    """A wrong use of the API found before anything runs (an unknown option, a body value used outside)."""

    def _text(self) -> str:
        return self.message


BY_EXIT_CODE: dict[int, type[DaphneLibError]] = {1: DaphneParseError, 2: DaphneCompileError, 3: DaphneExecutionError}
