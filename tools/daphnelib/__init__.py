"""DaphneLib, DAPHNE's Python API, in-process: lazy matrices, frames and scalars computed by daphnec.

    from daphnec import DaphneContext          # the same objects as `daphne.context.daphne_context`
    dc = DaphneContext()
    X = dc.from_numpy(a)                       # zero-copy
    Y = ((X - X.mean(axis=1)) / X.stddev(axis=1)).compute()

Modules: `context` (DaphneContext), `matrix`/`frame`/`scalar`/`operation_node` (the lazy values), `control` (loops,
branches, functions), `dag` (the DAG), `codegen` (DAG -> DaphneDSL), `session` (compile cache, run), `transfer`
(numpy/pandas/files), `options` (command-line options as keywords), `errors`. The folder `daphne/` is installed as
the top-level package `daphne`, DaphneLib's import path. See docs/python-api.md.
"""

from __future__ import annotations

# Re-exported names (`X as X`); `daphnec/__init__.py` lists the same ones for its lazy attributes.
from daphnec.tools.daphnelib.context import DaphneContext as DaphneContext
from daphnec.tools.daphnelib.errors import DaphneCompileError as DaphneCompileError
from daphnec.tools.daphnelib.errors import DaphneExecutionError as DaphneExecutionError
from daphnec.tools.daphnelib.errors import DaphneLibError as DaphneLibError
from daphnec.tools.daphnelib.errors import DaphneParseError as DaphneParseError
from daphnec.tools.daphnelib.errors import DaphneUsageError as DaphneUsageError
from daphnec.tools.daphnelib.frame import Frame as Frame
from daphnec.tools.daphnelib.matrix import Matrix as Matrix
from daphnec.tools.daphnelib.operation_node import OperationNode as OperationNode
from daphnec.tools.daphnelib.scalar import Scalar as Scalar
