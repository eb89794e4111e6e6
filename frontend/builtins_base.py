"""What every table of DaphneDSL builtins is made of: `Builtin` (parameters + IR builder) and the builder interface.

A builtin's IR builder gets the already built argument values and a `Builder`: the part of the IR builder
(frontend/ir_builder.py) that a builtin may use to create ops. The category tables (`builtins.py` for the language
core, `builtins_matrix.py`, `builtins_frame.py`, `builtins_io.py`) and the `paramserv` call (`paramserv.py`) depend
on this interface, not on the IR builder, which imports them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from xdsl.ir import Operation, SSAValue

from daphnec.dialects.errors import Loc, ParseError
from daphnec.frontend import ast


class Builder(Protocol):
    """The operations a builtin's IR builder may ask of the IR builder."""

    def op(self, cls: type, operands: Sequence[SSAValue], loc: Loc) -> SSAValue | None:
        """Create `cls` with inferred result types at the insertion point; its first result (if any)."""
        ...

    def insert(self, op: Operation, loc: Loc) -> Operation:
        """Place an op whose result types are already set."""
        ...

    def insert_inferred(self, op: Operation, loc: Loc) -> Operation:
        """Place an op built by its own constructor, inferring its result types."""
        ...

    def constant(self, v: object, loc: Loc, vt: str | None = None) -> SSAValue: ...

    def cast(self, v: SSAValue, vt: str | None, dt: str | None, loc: Loc) -> SSAValue: ...

    def as_bool(self, v: SSAValue, loc: Loc, role: str | None = None) -> SSAValue:
        """`v` as a bool scalar; `role` names the argument in the error for a matrix that is not 1 x 1."""
        ...

    def frame(self, cols: list[SSAValue], labels: list[SSAValue], loc: Loc) -> SSAValue: ...

    def expr(self, e: ast.Expr, allow_void: bool = False) -> SSAValue: ...

    def function_symbol(self, name: str) -> str | None: ...


Build = Callable[[Builder, list[SSAValue], Loc], SSAValue | list[SSAValue] | None]
"""A builtin's IR builder: (builder, argument values, location) -> its result value(s)."""

REQUIRED = object()
"""The default of a parameter without one."""


@dataclass(frozen=True)
class Typed:
    """A default argument with an explicit value type (DAPHNE's `seq` step is an si8 1, so it never promotes)."""

    value: object
    vt: str


@dataclass(frozen=True)
class Builtin:
    """A builtin's parameter list (name, default-or-REQUIRED) and its IR builder."""

    params: tuple[tuple[str, object], ...]
    build: Build
    variadic: bool = False

    def bind(
        self, name: str, args: list[SSAValue], kwargs: dict[str, SSAValue], b: Builder, loc: Loc
    ) -> list[SSAValue]:
        """Match positional and keyword arguments to parameters; fill defaults; check the arity."""
        if self.variadic:
            if kwargs:
                raise ParseError(f"built-in function '{name}' takes no keyword arguments", loc)
            return args
        names = [p for p, _ in self.params]
        if len(args) > len(names):
            raise ParseError(_arity_msg(name, self.params, len(args) + len(kwargs)), loc)
        bound: dict[str, SSAValue] = dict(zip(names, args))
        for k, v in kwargs.items():
            if k not in names:
                raise ParseError(
                    f"built-in function '{name}' has no parameter '{k}' (parameters: {', '.join(names)})", loc
                )
            if k in bound:
                raise ParseError(f"parameter '{k}' of built-in function '{name}' given twice", loc)
            bound[k] = v
        out = []
        for p, default in self.params:
            if p in bound:
                out.append(bound[p])
            elif default is None:
                continue
            elif default is REQUIRED:
                raise ParseError(_arity_msg(name, self.params, len(args) + len(kwargs)), loc)
            elif isinstance(default, Typed):
                out.append(b.constant(default.value, loc, default.vt))
            else:
                out.append(b.constant(default, loc))
        return out


def _arity_msg(name: str, params: Sequence[tuple[str, object]], given: int) -> str:
    req = sum(1 for _, d in params if d is REQUIRED)
    n = f"{req}" if req == len(params) else f"{req} to {len(params)}"
    sig = ", ".join(
        p if d is REQUIRED else f"{p}={getattr(d, 'value', d)!r}".replace("True", "true").replace("False", "false")
        for p, d in params
    )
    return f"built-in function '{name}' expects {n} argument(s) ({sig}), but got {given}"


def params(*names: str, **defaults: object) -> tuple[tuple[str, object], ...]:
    """A parameter list: `params("arg", "axis", axis=None)` (None: an optional parameter without a value)."""
    return tuple((n, defaults.get(n, REQUIRED)) for n in names)


def op_builder(cls: type) -> Build:
    """The builder of a builtin that is one op with the arguments as operands."""

    def build(b: Builder, args: list[SSAValue], loc: Loc) -> SSAValue | None:
        return b.op(cls, args, loc)

    build.op_class = cls  # type: ignore[attr-defined]  # for docs/builtins.md (tools/builtins_doc.py)
    return build


def all_results(first: SSAValue | None) -> list[SSAValue]:
    """All results of the op whose first result is `first` (builtins with several results, `a, b = f(...)`)."""
    assert first is not None
    return list(first.owner.results)  # type: ignore[union-attr]
