"""The `daphne` xDSL dialect and the context that parses daphnec IR (daphne + builtin + func + scf).

Importing the package is cheap (xDSL is imported by `make_context` and by the op modules, not here): light modules
such as `dialects.errors` are used by runs that never compile (`compiler.host.program_cache`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from xdsl.context import Context


def make_context() -> Context:
    """A context with every dialect daphnec IR uses, for parsing IR text (daphne-opt, MPI workers)."""
    from xdsl.context import Context
    from xdsl.dialects.builtin import Builtin
    from xdsl.dialects.func import Func
    from xdsl.dialects.scf import Scf

    from daphnec.dialects.daphne import Daphne

    ctx = Context()
    for d in (Builtin, Func, Scf, Daphne):
        ctx.load_dialect(d)
    return ctx
