"""From the lazy DAG to a DaphneDSL program: one statement per node, inputs as typed slots, the result saved.

Like DaphneLib (`script_building/script.py`), a node becomes `V<k>=<expression>;` after its inputs, in depth-first
order from the computed node, so the same DAG shape always gives the same text. Unlike DaphneLib, the text never
holds data or addresses: a numpy input is `receiveFromNumpy(<slot>, rows, cols, "vt")` and its array is bound to
the slot when the compiled program runs (`runtime/kernels/daphnelib.py`). The text is therefore the key under which
the session caches the compiled program (`session.py`).

Control flow. A loop, a branch or a user-defined function runs its Python callback once, when it is built, on
*placeholder* nodes standing for the loop-carried variables (or arguments). Nodes the callback made are emitted
inside the construct; nodes made before it (captured by closures) are emitted outside, before it, and read there:
each emission scope has a *barrier*, the serial number where its callback began (`dag.Node.serial`). Function
bodies are self-contained (DaphneDSL functions see no outer variables): captured nodes are recomputed inside.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from daphnec.dialects.op_kinds import EW_BINARY
from daphnec.dialects.value_types import DTYPES
from daphnec.tools.daphnelib.dag import FRAME, MATRIX, NONE, Node, Span, format_literal, is_literal, literal_vt

_NUMBERS = (int, float, np.integer, np.floating)
_EW_FUNCTIONS = frozenset(r.function for r in EW_BINARY.values() if r.function and r.operands != "str")
"""The element-wise binary builtins (`pow`, `min`, ...): their number arguments become input slots."""

PROGRAM_NAME = "<daphnelib>"
"""The file name of generated programs in error locations."""


@dataclass
class Line:
    text: str
    node: Node | None
    indent: int = 0


class Scope:
    """Statements being emitted into one block, and the names its nodes got there."""

    def __init__(self, parent: Scope | None, barrier: int):
        self.parent = parent
        self.barrier = barrier
        self.names: dict[Node, str] = {}
        self.lines: list[Line] = []

    def lookup(self, node: Node) -> str | None:
        s: Scope | None = self
        while s is not None:
            name = s.names.get(node)
            if name is not None:
                return name
            s = s.parent
        return None

    def target(self, node: Node) -> Scope:
        """Where `node` belongs: the innermost enclosing scope whose callback had begun when it was built."""
        s = self
        while s.parent is not None and node.serial < s.barrier:
            s = s.parent
        return s


@dataclass
class Generated:
    """A generated program and what running it needs."""

    text: str
    inputs: list[object]
    """The arrays bound to slots 0, 1, ... (read-only views of the caller's arrays)."""
    signature: tuple[object, ...]
    """What the text does not show but the compiled program depends on: the types of inputs passed as files."""
    line_nodes: list[Node | None]
    """The node that produced each line of `text` (for error messages)."""
    result_file: str | None = None


@dataclass
class Builder:
    """Generates one program (one `compute()`); `transfer` is "shared memory" or "files"."""

    transfer: str = "shared memory"
    tmpdir: Callable[[], str] = str
    """The folder for file transfers (created when first needed)."""
    counter: int = 0
    inputs: list[object] = field(default_factory=list)
    signature: list[object] = field(default_factory=list)
    placeholders: dict[Node, str] = field(default_factory=dict)
    outputs: dict[Node, list[str]] = field(default_factory=dict)
    functions: dict[Any, str] = field(default_factory=dict)
    definitions: Scope = field(default_factory=lambda: Scope(None, -1))
    """The user-defined functions the program calls (emitted before the main program)."""
    top: Scope = field(default_factory=lambda: Scope(None, -1))

    # -- names and scopes -------------------------------------------------------------------------------------------

    def var(self) -> str:
        name = f"V{self.counter}"
        self.counter += 1
        return name

    def name(self, scope: Scope, node: Node) -> str:
        """The variable holding `node`'s value in `scope`, emitting it (and its inputs) where it belongs first."""
        if node.op == "placeholder":
            name = self.placeholders.get(node)
            if name is None:
                raise_outside_use(node)
            return name  # type: ignore[return-value]
        target = scope.target(node)
        found = target.lookup(node)
        if found is None:
            self._emit_with_inputs(target, node)
            found = target.names[node]
        return found

    def _emit_with_inputs(self, scope: Scope, root: Node) -> None:
        """Depth-first, inputs in argument order, without recursion along chains of nodes in the same scope."""
        stack: list[tuple[Node, bool]] = [(root, False)]
        names = scope.names
        while stack:
            node, expanded = stack.pop()
            if node in names:
                continue
            if expanded:
                self._emit(scope, node)
                continue
            stack.append((node, True))
            for i in reversed(node.inputs()):
                if i.op == "placeholder" or i in names:
                    continue
                t = scope.target(i)
                if t is scope:
                    stack.append((i, False))
                elif t.lookup(i) is None:
                    self._emit_with_inputs(t, i)  # an outer scope: bounded by the nesting depth

    def child(self, scope: Scope, barrier: int) -> Scope:
        return Scope(scope, barrier)

    def emit(self, scope: Scope, text: str, node: Node | None) -> None:
        scope.lines.append(Line(text, node))

    def emit_blocks(
        self, scope: Scope, heads: list[str], bodies: list[Scope], node: Node | None, tail: str = "}"
    ) -> None:
        """`head0 {` body0 `} head1 {` body1 ... `tail`, the bodies' lines indented (loops, if/else, functions)."""
        for k, (head, body) in enumerate(zip(heads, bodies)):
            scope.lines.append(Line(f"}} {head} {{" if k else f"{head} {{", node))
            scope.lines.extend(Line(ln.text, ln.node, ln.indent + 1) for ln in body.lines)
        scope.lines.append(Line(tail, node))

    # -- arguments --------------------------------------------------------------------------------------------------

    def arg(self, scope: Scope, a: object) -> str:
        if isinstance(a, Node):
            return self.name(scope, a)
        if isinstance(a, Span):
            lo, hi = (self.arg(scope, x) if x is not None else "" for x in (a.lo, a.hi))
            return f"{lo}:{hi}"
        if a is None:
            return ""
        if is_literal(a):
            return format_literal(a)
        raise TypeError(f"a DAPHNE operation cannot take a {type(a).__name__} argument ({a!r})")

    def args(self, scope: Scope, args: tuple[Any, ...]) -> str:
        return ", ".join(self.arg(scope, a) for a in args)

    def operand(self, scope: Scope, a: object) -> str:
        """An operand of an element-wise operation: a Python number becomes an input slot, not a literal, so that
        `(Z + i) @ Z` for another `i` is the same program text (one compile for a loop over `i`, docs/python-api.md
        "Python numbers"). Booleans and strings stay literals (they choose code paths rather than values)."""
        if not isinstance(a, _NUMBERS) or isinstance(a, (bool, np.bool_)):
            return self.arg(scope, a)
        vt = literal_vt(a)
        slot = len(self.inputs)
        self.inputs.append(np.full((1, 1), a, dtype=DTYPES[vt]))
        return f'as.scalar(receiveFromNumpy({slot}, 1, 1, "{vt}"))'

    # -- statements -------------------------------------------------------------------------------------------------

    def _emit(self, scope: Scope, node: Node) -> None:
        op = node.op
        if op in _ASSIGNING:
            v = self.var()
            self.emit(scope, f"{v}={_ASSIGNING[op](self, scope, node)};", node)
            scope.names[node] = v
        elif op == "sink":
            self.emit(scope, f"{node.name}({self.args(scope, node.args)});", node)
            scope.names[node] = ""
        elif op == "insert":
            x, value, rows, cols = node.args
            v = self.var()
            self.emit(scope, f"{v}={self.name(scope, x)};", node)
            self.emit(scope, f"{v}[{self.arg(scope, rows)}, {self.arg(scope, cols)}]={self.arg(scope, value)};", node)
            scope.names[node] = v
        elif op == "construct":  # control flow and function calls: `payload.emit` returns the output variables
            self.outputs[node] = node.payload.emit(self, scope, node)
            scope.names[node] = ""
        elif op == "output":
            scope.names[node] = self.outputs[node.args[0]][node.payload]
        else:  # pragma: no cover - a node kind without emitter is a programming error
            raise AssertionError(f"no DaphneDSL emitter for node op '{op}'")

    def _receive(self, scope: Scope, node: Node) -> str:
        slot = len(self.inputs)
        self.inputs.append(node.payload)
        rows, cols = node.payload.shape
        return f'receiveFromNumpy({slot}, {rows}, {cols}, "{node.vt}")'

    def _read_file(self, scope: Scope, node: Node) -> str:
        from daphnec.tools.daphnelib.transfer import write_input_file

        path = os.path.join(self.tmpdir(), f"in{len(self.signature)}.csv")
        self.signature.append(write_input_file(node.payload, path))
        return f"{'readFrame' if node.kind == FRAME else 'readMatrix'}({format_literal(path)})"

    def _call(self, scope: Scope, node: Node) -> str:
        if node.name in ("readMatrix", "readFrame") and isinstance(node.args[0], str):
            self.signature.append(_meta_of(node.args[0]))  # its type is compiled in from the file's .meta
        if node.name in _EW_FUNCTIONS:  # `pow(X, 2)`, `min(X, lo)`: the numbers are operands, as of `X ^ 2`
            return f"{node.name}({', '.join(self.operand(scope, a) for a in node.args)})"
        return f"{node.name}({self.args(scope, node.args)})"

    def _index(self, scope: Scope, node: Node) -> str:
        x, rows, cols = node.args
        return f"{self.name(scope, x)}[{self.arg(scope, rows)}, {self.arg(scope, cols)}]"

    def _sql(self, scope: Scope, node: Node) -> str:
        """The views registered so far, right before the query (DAPHNE resolves both at compile time)."""
        query, names = node.payload
        for name, view in zip(names, node.args):
            self.emit(scope, f"registerView({format_literal(name)}, {self.name(scope, view)});", node)
        return f"sql({format_literal(query)})"

    # -- the whole program ------------------------------------------------------------------------------------------

    def build(self, root: Node) -> Generated:
        scope = self.top
        result_file = None
        if root.kind == NONE:
            self.name(scope, root)
        else:
            v = self.name(scope, root)
            if self.transfer == "files" and root.kind in (MATRIX, FRAME):
                result_file = os.path.join(self.tmpdir(), "result.csv")
                writer = "writeFrame" if root.kind == FRAME else "writeMatrix"
                self.emit(scope, f"{writer}({v}, {format_literal(result_file)});", None)
            else:
                self.emit(scope, f"saveDaphneLibResult({v});", None)
        lines = self.definitions.lines + scope.lines
        text = "".join("    " * ln.indent + ln.text + "\n" for ln in lines)
        return Generated(text, self.inputs, tuple(self.signature), [ln.node for ln in lines], result_file)


_ASSIGNING = {
    "call": Builder._call,
    "binary": lambda b, s, n: f"{b.operand(s, n.args[0])} {n.name} {b.operand(s, n.args[1])}",
    "unary": lambda b, s, n: f"{n.name}{b.arg(s, n.args[0])}",
    "ternary": lambda b, s, n: f"{b.arg(s, n.args[0])} ? {b.operand(s, n.args[1])} : {b.operand(s, n.args[2])}",
    "index": Builder._index,
    "receive": Builder._receive,
    "file": Builder._read_file,
    "sql": Builder._sql,
}
"""Emitters of the nodes that become `V<k>=<expression>;`."""


def _meta_of(path: str) -> tuple[str, str | None]:
    """A data file's `.meta` text (None if unreadable): a compiled reader is only valid while it is unchanged."""
    try:
        with open(path + ".meta", encoding="utf-8") as f:
            return (path, f.read())
    except OSError:
        return (path, None)


def raise_outside_use(node: Node) -> None:
    from daphnec.tools.daphnelib.errors import DaphneUsageError

    raise DaphneUsageError(
        "a value built inside a loop, branch or function body depends on that body's variables and cannot be "
        f"used outside it (built at {node.site})"
    )


def generate(root: Node, transfer: str = "shared memory", tmpdir: Callable[[], str] = str) -> Generated:
    """The program computing `root` (see the module docstring). A shared-memory program without file inputs is
    kept on the node: the DAG below it never changes, so computing the same node again reuses the text."""
    memo = root.generated
    if memo is not None and memo[0] == transfer:
        return memo[1]  # type: ignore[no-any-return]
    gen = Builder(transfer=transfer, tmpdir=tmpdir).build(root)
    if transfer == "shared memory" and not gen.signature:
        root.generated = (transfer, gen)
    return gen
