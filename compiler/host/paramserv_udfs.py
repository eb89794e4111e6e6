"""The functions paramserv runs on its workers, and their IR text for MPI workers.

`paramserv(..., upd=f, agg=g)` calls f and g (and whatever they call) once per batch on each worker. In MPI mode
the workers get them like distributed pipelines get their bodies: as IR text with source locations
(`udf_module_text`), compiled on the worker by `compiler.host.shipped.compile_shipped_body`, whose result
exposes every function by symbol. Pipelines inside these functions stay local (`distribute` skips them): a batch
is small, and the worker is the distributed part already.
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from daphnec.compiler.printing import module_text
from daphnec.dialects.calls import reachable_functions
from daphnec.dialects.ops import constant_value
from daphnec.dialects.ops_paramserv import ParamservOp


def _functions(module: Operation) -> dict[str, func.FuncOp]:
    return {op.sym_name.data: op for op in module.walk() if isinstance(op, func.FuncOp)}


def paramserv_functions(module: Operation) -> set[str]:
    """Symbols of every function some paramserv call runs on its workers."""
    roots = [s for op in module.walk() if isinstance(op, ParamservOp) for _, s in op.udfs]
    return {f.sym_name.data for f in reachable_functions(_functions(module), roots)}


def shipped_udfs(module: Operation, op: ParamservOp) -> tuple[str, str, str, str] | None:
    """What the kernel hands MPI workers: (IR text of the UDFs, upd symbol, agg symbol, symbol of upd's factors
    variant or ""); None when the call is LOCAL for sure (`mode` omitted or the constant "LOCAL"), so that local
    runs never print IR."""
    mode = op.arg("mode")
    if mode is None or str(constant_value(mode)).upper() == "LOCAL":
        return None
    factors = op.factors.data if op.factors is not None else ""
    return udf_module_text(module, op), op.upd.data, op.agg.data, factors


def udf_module_text(module: Operation, op: ParamservOp) -> str:
    """`module { upd, agg, upd's factors variant and their callees }` as generic IR text with locations (parses
    back exactly)."""
    roots = [op.upd.data, op.agg.data] + ([op.factors.data] if op.factors is not None else [])
    fns = reachable_functions(_functions(module), roots)
    shipped = ModuleOp([f.clone() for f in fns])
    shipped.verify()
    return module_text(shipped, locations=True)
