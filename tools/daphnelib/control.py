"""Control flow and user-defined functions: `for_loop`, `while_loop`, `do_while_loop`, `cond`, `function`.

Each construct runs its Python callbacks once, when it is built, on *placeholder* nodes standing for the
loop-carried variables or the function's arguments (DaphneLib runs some callbacks only while generating code and
passes the outer nodes themselves). The construct is one `construct` node whose payload emits the DaphneDSL
statement (`codegen.py`); its results are `output` nodes, one per variable, returned as a tuple of handles.

Generated shape (DaphneLib's, with daphnec's variable names):

    V3=V0;  V4=V1;                     # the loop-carried variables, initialised from the inputs
    for (V5 in 1:10) { ...; V3=V8; V4=V9; }
    V6=<cond>; while (V6) { ...; V3=..; V6=<cond again>; }
    V6=<cond>; do { ...; V3=..; V6=<cond again>; } while (V6);
    if (<pred>) { ...; V3=..; } else { ...; V3=..; }
    def function_0(ARG_0, ARG_1) { ...; return F0, F1; }  ...  V7, V8=function_0(V1, V2);
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from daphnec.tools.daphnelib.dag import FRAME, MATRIX, SCALAR, Node, is_literal, literal_vt, next_serial
from daphnec.tools.daphnelib.operation_node import ContextLike, OperationNode, operand, wrap

if TYPE_CHECKING:
    from daphnec.tools.daphnelib.script import Builder, Scope


def placeholder(kind: str, vt: str | None = None) -> Node:
    return Node(kind, "placeholder", vt=vt)


def _kind_of(x: object) -> str:
    return x.kind if isinstance(x, Node) else SCALAR


def _placeholders_for(inits: Sequence[object]) -> list[Node]:
    return [placeholder(_kind_of(x), x.vt if isinstance(x, Node) else literal_vt(x)) for x in inits]


def values_of(ctx: ContextLike, values: Sequence[object], what: str) -> list[object]:
    out = []
    for v in values:
        x = operand(ctx, v)
        if not (isinstance(x, Node) or is_literal(x)):
            raise ValueError(f"Unsupported input node type {type(v)} for {what}")
        out.append(x)
    return out


def _results(ctx: ContextLike, produced: object, n: int, who: str) -> list[object]:
    """A callback's return value as n nodes or literals."""
    items = list(produced) if isinstance(produced, (tuple, list)) else [produced]
    if len(items) != n:
        raise ValueError(f"{who} returned {len(items)} value(s), but there are {n} input node(s)")
    return [operand(ctx, x) for x in items]


def _check_arity(callback: Callable[..., Any], n: int, message: str) -> None:
    try:
        params = inspect.signature(callback).parameters.values()
    except (TypeError, ValueError):
        return
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return
    if len([p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]) != n:
        raise ValueError(message)


def _handles(ctx: ContextLike, nodes: Sequence[Node]) -> list[Any]:
    return [wrap(ctx, n) for n in nodes]


class Loop:
    """Shared by the constructs over loop-carried variables: initialisation, body, and the final assignments."""

    def __init__(self, inits: list[object], placeholders: list[Node]):
        self.inits = inits
        self.placeholders = placeholders

    def start(self, b: Builder, scope: Scope, node: Node) -> list[str]:
        names = []
        for init, ph in zip(self.inits, self.placeholders):
            v = b.var()
            b.emit(scope, f"{v}={b.arg(scope, init)};", node)
            b.placeholders[ph] = v
            names.append(v)
        return names

    @staticmethod
    def assign(b: Builder, body: Scope, names: list[str], outs: Sequence[object], node: Node) -> None:
        """`names[i]=outs[i];` for all i at once (an output that is another variable's old value is saved first)."""
        values = [b.arg(body, o) for o in outs]
        for i, v in enumerate(values):
            if v in names and v != names[i]:
                tmp = b.var()
                b.emit(body, f"{tmp}={v};", node)
                values[i] = tmp
        for name, v in zip(names, values):
            if v != name:
                b.emit(body, f"{name}={v};", node)

    def nodes(self) -> list[Node]:
        return [x for x in self.inits if isinstance(x, Node)]


def outputs(ctx: ContextLike, payload: Any, like: Sequence[object], name: str, inputs: Sequence[object]) -> tuple:
    """The construct node and one output handle per result, of the kind and value type of `like`'s values."""
    construct = Node("none", "construct", name, tuple(x for x in inputs if isinstance(x, Node)), payload)
    nodes = [
        Node(_kind_of(x), "output", name, (construct,), i, vt=x.vt if isinstance(x, Node) else literal_vt(x))
        for i, x in enumerate(like)
    ]
    return tuple(_handles(ctx, nodes))


# --- for -----------------------------------------------------------------------------------------------------------


class ForLoop(Loop):
    def __init__(self, ctx: ContextLike, inits: list[object], callback: Callable[..., Any], bounds: tuple):
        _check_arity(
            callback, len(inits) + 1, f"{callback} does not have the same number of arguments as input nodes + 1"
        )
        self.barrier = next_serial()
        super().__init__(inits, _placeholders_for(inits))
        self.iteration = placeholder(SCALAR, "si64")
        args = [*_handles(ctx, self.placeholders), wrap(ctx, self.iteration)]
        self.results = _results(ctx, callback(*args), len(inits), "the for_loop callback")
        self.bounds = tuple(operand(ctx, x) for x in bounds)

    def emit(self, b: Builder, scope: Scope, node: Node) -> list[str]:
        start, end, step = (b.arg(scope, x) if x is not None else None for x in self.bounds)
        names = self.start(b, scope, node)
        i = b.var()
        b.placeholders[self.iteration] = i
        body = b.child(scope, self.barrier)
        self.assign(b, body, names, self.results, node)
        b.emit_blocks(scope, [f"for ({i} in {start}:{end}{f':{step}' if step is not None else ''})"], [body], node)
        return names

    def nodes(self) -> list[Node]:
        return [*super().nodes(), *(x for x in (*self.results, *self.bounds) if isinstance(x, Node))]


# --- while / do-while ----------------------------------------------------------------------------------------------


class WhileLoop(Loop):
    def __init__(self, ctx: ContextLike, inits: list[object], cond: Callable, callback: Callable, do: bool):
        super().__init__(inits, _placeholders_for(inits))
        handles = _handles(ctx, self.placeholders)
        self.cond_barrier = next_serial()
        self.cond = operand(ctx, cond(*handles))
        self.body_barrier = next_serial()
        self.results = _results(ctx, callback(*handles), len(inits), "the loop body callback")
        self.do = do

    def _condition(self, b: Builder, scope: Scope, into: Scope, var: str, node: Node) -> None:
        """`var=<condition>;` appended to `into`, its statements emitted in a scope of their own."""
        c = b.child(scope, self.cond_barrier)
        value = b.arg(c, self.cond)
        into.lines.extend(c.lines)
        b.emit(into, f"{var}={value};", node)

    def emit(self, b: Builder, scope: Scope, node: Node) -> list[str]:
        names = self.start(b, scope, node)
        c = b.var()
        self._condition(b, scope, scope, c, node)
        body = b.child(scope, self.body_barrier)
        self.assign(b, body, names, self.results, node)
        self._condition(b, body, body, c, node)
        if self.do:
            b.emit_blocks(scope, ["do"], [body], node, tail=f"}} while ({c});")
        else:
            b.emit_blocks(scope, [f"while ({c})"], [body], node)
        return names

    def nodes(self) -> list[Node]:
        return [*super().nodes(), *(x for x in (self.cond, *self.results) if isinstance(x, Node))]


# --- if / else -----------------------------------------------------------------------------------------------------


class Cond(Loop):
    def __init__(self, ctx: ContextLike, inits: list[object], pred: Callable, then_fn: Callable, else_fn: Any):
        super().__init__(inits, _placeholders_for(inits))
        self.pred = operand(ctx, pred())
        handles = _handles(ctx, self.placeholders)
        self.branches = []
        for fn in (then_fn, else_fn):
            if fn is None:
                continue
            barrier = next_serial()
            self.branches.append((barrier, _results(ctx, fn(*handles), len(inits), "the cond branch callback")))

    def emit(self, b: Builder, scope: Scope, node: Node) -> list[str]:
        pred = b.arg(scope, self.pred)
        names = self.start(b, scope, node)
        bodies = []
        for barrier, results in self.branches:
            body = b.child(scope, barrier)
            self.assign(b, body, names, results, node)
            bodies.append(body)
        b.emit_blocks(scope, [f"if ({pred})", "else"][: len(bodies)], bodies, node)
        return names

    def nodes(self) -> list[Node]:
        out = [*super().nodes(), *([self.pred] if isinstance(self.pred, Node) else [])]
        return out + [x for _, rs in self.branches for x in rs if isinstance(x, Node)]


# --- user-defined functions ----------------------------------------------------------------------------------------


def _param_kind(annotation: object) -> str:
    """DaphneLib's rule: a `Frame`/`Scalar` hint makes that kind, no hint or `Matrix` a matrix."""
    name = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", None)
    if annotation is inspect.Parameter.empty or name == "Matrix":
        return MATRIX
    if name in ("Frame", "Scalar"):
        return FRAME if name == "Frame" else SCALAR
    raise ValueError(f"unsupported type hint {annotation!r}: use Matrix, Frame or Scalar")


class Function:
    """A user-defined function: its body, built once on argument placeholders (DaphneLib's `MultiReturn`)."""

    def __init__(self, ctx: ContextLike, callback: Callable[..., Any]):
        params = list(inspect.signature(callback).parameters.values())
        self.barrier = next_serial()
        self.params = [placeholder(_param_kind(p.annotation)) for p in params]
        produced = callback(*_handles(ctx, self.params))
        items = list(produced) if isinstance(produced, (tuple, list)) else [produced]
        self.results = [operand(ctx, x) for x in items]
        self.name = getattr(callback, "__name__", "function")

    def define(self, b: Builder) -> str:
        """Emit the definition once per program; its DaphneDSL name."""
        name = b.functions.get(self)
        if name is not None:
            return name
        name = f"function_{len(b.functions)}"
        b.functions[self] = name
        from daphnec.tools.daphnelib.script import Scope

        body = Scope(None, self.barrier)  # a function sees no outer variables
        args = []
        for i, ph in enumerate(self.params):
            args.append(f"ARG_{i}")
            b.placeholders[ph] = args[-1]
        values = [b.arg(body, x) for x in self.results]
        b.emit(body, f"return {', '.join(values)};", None)
        b.emit_blocks(b.definitions, [f"def {name}({', '.join(args)})"], [body], None)
        return name

    def nodes(self) -> list[Node]:
        return [x for x in self.results if isinstance(x, Node)]


class Call:
    """One call of a user-defined function."""

    def __init__(self, function: Function, args: list[object]):
        self.function = function
        self.args = args

    def emit(self, b: Builder, scope: Scope, node: Node) -> list[str]:
        name = self.function.define(b)
        args = ", ".join(b.arg(scope, a) for a in self.args)
        outs = [b.var() for _ in self.function.results]
        b.emit(scope, f"{', '.join(outs)}={name}({args});", node)
        return outs

    def nodes(self) -> list[Node]:
        return [*(a for a in self.args if isinstance(a, Node)), *self.function.nodes()]


def call_function(ctx: ContextLike, function: Function, args: Sequence[object]) -> tuple:
    if len(args) != len(function.params):
        raise TypeError(f"{function.name}() takes {len(function.params)} argument(s) but {len(args)} were given")
    values = values_of(ctx, args, function.name)
    return outputs(ctx, Call(function, values), function.results, function.name, values)


__all__ = ["ForLoop", "WhileLoop", "Cond", "Function", "call_function", "outputs", "OperationNode"]
