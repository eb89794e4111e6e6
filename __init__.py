"""daphnec: DAPHNE's integrated data-analysis pipeline system as an MLIR-style compiler in Python.

The repository root is this package; its layer folders are the subpackages `daphnec.frontend` (DaphneDSL grammar,
AST, IR builder), `daphnec.dialects` (the `daphne` xDSL dialect), `daphnec.compiler` (passes, lowering, JIT),
`daphnec.runtime` (matrices, frames, kernels, schedulers) and `daphnec.tools` (the `daphnec` and `daphne-opt`
command lines). See docs/architecture.md.

Importing `daphnec` is cheap: nothing below it is imported until used.
"""

__version__ = "0.1.0"
