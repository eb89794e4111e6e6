"""IR as text: MLIR's generic form, as DAPHNE's `--explain` prints it and as IR is shipped to MPI workers."""

from __future__ import annotations

from io import StringIO
from typing import TextIO

from xdsl.ir import Operation
from xdsl.printer import Printer


def print_module(module: Operation, out: TextIO, locations: bool = False) -> None:
    """Print IR in MLIR's generic form, as DAPHNE's --explain does."""
    Printer(out, print_generic_format=True, print_debuginfo=locations).print_op(module)
    out.write("\n")


def module_text(module: Operation, locations: bool = False) -> str:
    buf = StringIO()
    print_module(module, buf, locations)
    return buf.getvalue()
