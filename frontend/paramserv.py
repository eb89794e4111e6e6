"""`paramserv(model=M, features=X, labels=y, upd=gradients, agg=update, epochs=5, ...)` -> `daphne.paramserv`.

Named arguments only, in the spirit of SystemDS's `paramserv` (docs/paramserv.md lists them). `upd`, `agg` and the
optional `val` name user-defined functions, as `map`'s second argument does: a bare function name, or a string
literal holding one (SystemDS writes `upd="./fns.dml::gradients"`; here `upd="gradients"` or `upd=mod.gradients`
after an import).
Whole-number arguments become `si64` scalars, coefficients (`alpha`, `delta_max`) `f64`, flags (`colocated`)
`bool`; the rest is checked by the op's verifier and, for values known only
at run time, by the runtime (runtime/paramserv/options.py).
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from daphnec.dialects.errors import CompileError, ParseError
from daphnec.dialects.ops_paramserv import FUNCTION_ARGS, SCALAR_CASTS, VALUE_ARGS, ParamservOp
from daphnec.dialects.types import StringType
from daphnec.frontend import ast
from daphnec.frontend.builtins_base import Builder


def build_paramserv(b: Builder, e: ast.Call) -> SSAValue:
    if e.args:
        raise ParseError(
            "paramserv takes named arguments only: paramserv(model=..., features=..., labels=..., "
            "upd=..., agg=..., epochs=..., ...)",
            e.loc,
        )
    names: list[str] = []
    values: list[SSAValue] = []
    udfs: dict[str, str] = {}
    for name, value in e.kwargs:
        if name in names or name in udfs:
            raise ParseError(f"paramserv: argument '{name}' given twice", e.loc)
        if name in FUNCTION_ARGS:
            udfs[name] = _function(b, name, value)
        elif name in VALUE_ARGS:
            v = b.expr(value)
            names.append(name)
            vt = SCALAR_CASTS.get(name)
            if vt is not None and not isinstance(v.type, StringType):  # a string is the verifier's error to report
                v = b.cast(v, vt, "scalar", value.loc)
            values.append(v)
        else:
            known = ", ".join(sorted((*VALUE_ARGS, *FUNCTION_ARGS)))
            raise CompileError(f"paramserv: unknown argument '{name}' (expected one of {known})", e.loc)
    for role in ("upd", "agg"):  # the op needs both names; the value arguments are checked by its verifier
        if role not in udfs:
            raise CompileError(f"paramserv: missing argument '{role}'", e.loc)
    op = ParamservOp(values, names, udfs["upd"], udfs["agg"], udfs.get("val"))
    return b.insert_inferred(op, e.loc).results[0]


def _function(b: Builder, arg: str, value: ast.Expr) -> str:
    """The IR symbol of the user-defined function named by `upd=`/`agg=` (a bare or dotted name, or a string)."""
    if isinstance(value, ast.Ident):
        name = value.name
    elif isinstance(value, ast.StrLit):
        name = value.value.rpartition("::")[2]
    else:
        raise CompileError(f"paramserv: '{arg}' must name a user-defined function", value.loc)
    sym = b.function_symbol(name)
    if sym is None:
        raise CompileError(f"paramserv: '{name}' ({arg}) is not a user-defined function", value.loc)
    return sym
