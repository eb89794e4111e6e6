"""daphnec: DAPHNE's integrated data-analysis pipeline system as an MLIR-style compiler in Python.

The repository root is this package; its layer folders are the subpackages `daphnec.frontend` (DaphneDSL grammar,
AST, IR builder), `daphnec.dialects` (the `daphne` xDSL dialect), `daphnec.compiler` (passes, lowering, JIT),
`daphnec.runtime` (matrices, frames, kernels, schedulers) and `daphnec.tools` (the `daphnec` and `daphne-opt`
command lines, and DaphneLib, the Python API: `from daphnec import DaphneContext`). See docs/architecture.md and
docs/python-api.md.

Importing `daphnec` is cheap: nothing below it is imported until used (the Python API's names are loaded on first
access).
"""

from __future__ import annotations

import os as _os

__version__ = "0.1.0"

LIBRARY_DIR = _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "lib")
"""daphnec's own DaphneDSL library (`lib/nn/`: layers and optimizers), shipped with the package: an `import` that
finds its file nowhere else finds it here (`import "nn/layers/conv2d.daph" as "conv2d";`, frontend/imports.py)."""

_API = frozenset(
    {
        "DaphneContext",
        "Matrix",
        "Frame",
        "Scalar",
        "OperationNode",
        "DaphneLibError",
        "DaphneParseError",
        "DaphneCompileError",
        "DaphneExecutionError",
        "DaphneUsageError",
    }
)


def __getattr__(name: str) -> object:
    if name in _API:
        from daphnec.tools import daphnelib

        return getattr(daphnelib, name)
    raise AttributeError(f"module 'daphnec' has no attribute '{name}'")


def __dir__() -> list[str]:
    return sorted({*globals(), *_API})
