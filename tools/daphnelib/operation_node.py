"""The base of the API's lazy values: `OperationNode` (DaphneLib's name), a handle on one node of the DAG.

`Matrix`, `Frame` and `Scalar` (matrix.py, frame.py, scalar.py) add their methods; a plain `OperationNode` is
what `print()`, `write()` and `registerView()` return: computing it runs the statement and returns None.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from daphnec.dialects.op_kinds import EW_BINARY
from daphnec.tools.daphnelib.dag import (
    MATRIX,
    NONE,
    SCALAR,
    Node,
    broadcast_shape,
    describe,
    format_literal,
    is_literal,
    rule_vt,
)
from daphnec.tools.daphnelib.errors import DaphneLibError


class ContextLike(Protocol):
    """What the lazy values use of their `DaphneContext` (context.py; a protocol keeps the import one-way)."""

    _views: dict[str, Node]

    def from_numpy(self, mat: np.ndarray) -> Any: ...

    def _compute(self, node: Node, transfer_type: str, **kwargs: Any) -> Any: ...


HANDLES: dict[str, type[OperationNode]] = {}
"""The handle class of each node kind: matrix.py, frame.py and scalar.py register theirs (context.py imports them
all, and every node is made through a context or a handle)."""


def wrap(ctx: ContextLike, node: Node) -> Any:
    """The handle for `node` (a Matrix, Frame, Scalar or plain OperationNode)."""
    return HANDLES[node.kind](ctx, node)


class OperationNode:
    """A lazily evaluated DAPHNE value or statement; `compute()` runs it."""

    __slots__ = ("_ctx", "_node")
    __array_ufunc__ = None  # numpy operands defer to our reflected operators (`a * X` is `X.__rmul__(a)`)
    __hash__ = object.__hash__  # subclasses overload `==` to build comparisons, as DaphneLib does

    def __init__(self, daphne_context: ContextLike, node: Node):
        self._ctx = daphne_context
        self._node = node

    @property
    def daphne_context(self) -> ContextLike:
        return self._ctx

    def compute(
        self,
        type: str = "shared memory",
        verbose: bool = False,
        asTensorFlow: bool = False,
        asPyTorch: bool = False,
        shape: Any = None,
        useIndexColumn: bool = False,
        progress: bool = False,
        **options: object,
    ) -> Any:
        """Run the computation; a numpy array (matrix), a pandas DataFrame (frame), a Python scalar, or None.

        `type` is "shared memory" (zero-copy) or "files" (DAPHNE's CSV files); `verbose` prints timings,
        `progress` prints the phases of long runs to stderr; any daphnec command-line option (`vec=True`,
        `num_threads=2`, `explain="kernels"`, ...) applies to this run on top of the context's options."""
        try:
            return self._ctx._compute(
                self._node,
                type,
                verbose=verbose,
                progress=progress,
                options=options,
                as_tensorflow=asTensorFlow,
                as_pytorch=asPyTorch,
                shape=shape,
                use_index_column=useIndexColumn,
            )
        except DaphneLibError as e:
            raise e.with_traceback(None) from e.__cause__  # the traceback ends here, not inside the compiler

    # -- building nodes ----------------------------------------------------------------------------------------------

    def _operand(self, x: object) -> Any:
        """A node or literal for an operand: handles give their node, numpy arrays become inputs."""
        return operand(self._ctx, x)

    def _make(self, kind: str, op: str, name: str, args: tuple[Any, ...], vt: str | None = None, shape=(-1, -1)):
        return wrap(self._ctx, Node(kind, op, name, args, vt=vt, shape=shape))

    def _call(self, kind: str, name: str, *args: object, vt: str | None = None, shape=(-1, -1)) -> Any:
        """`name(self, args...)` as a node of `kind`."""
        return self._make(kind, "call", name, (self._node, *(self._operand(a) for a in args)), vt, shape)

    def _binary(self, ew: str, other: object, reflected: bool = False) -> Any:
        """`self op other` (or reflected) for the element-wise kind `ew` (`add`: DaphneDSL's `+`): a matrix if
        either side is one (DAPHNE broadcasts the right one)."""
        o = self._operand(other)
        lhs, rhs = (o, self._node) if reflected else (self._node, o)
        kind = MATRIX if any(isinstance(x, Node) and x.kind == MATRIX for x in (lhs, rhs)) else SCALAR
        record = EW_BINARY[ew]
        vt = rule_vt(record.vt_rule, lhs, rhs)
        return self._make(kind, "binary", record.operator, (lhs, rhs), vt, broadcast_shape(lhs, rhs))

    def _sink(self, name: str, *args: object) -> OperationNode:
        """A statement without a value (`print(V);`)."""
        return self._make(NONE, "sink", name, (self._node, *(self._operand(a) for a in args)))

    # -- Python protocol ---------------------------------------------------------------------------------------------

    def __bool__(self) -> bool:
        raise TypeError(
            f"the truth value of a lazy DAPHNE {type(self).__name__} is unknown until it is computed: call compute(), "
            "or use DaphneContext.cond / while_loop for control flow on DAPHNE values"
        )

    def __iter__(self):
        raise TypeError(f"a lazy DAPHNE {type(self).__name__} is not iterable: compute() it first")

    def __repr__(self) -> str:
        info = describe(self._node)
        head = f"{type(self).__name__}({info})" if info else type(self).__name__
        return f"{head} lazy: {expression(self._node)}"


class Dimensions:
    """`nrow()`, `ncol()`, `ncell()` of matrices and frames (Scalars: `index` values)."""

    __slots__ = ()

    def nrow(self) -> Any:
        return self._call(SCALAR, "nrow", vt="index")  # type: ignore[attr-defined]

    def ncol(self) -> Any:
        return self._call(SCALAR, "ncol", vt="index")  # type: ignore[attr-defined]

    def ncell(self) -> Any:
        return self._call(SCALAR, "ncell", vt="index")  # type: ignore[attr-defined]


def operand(ctx: ContextLike, x: object) -> Any:
    """A node or literal for an operand (see `OperationNode._operand`)."""
    if isinstance(x, OperationNode):
        return x._node
    if is_literal(x) or x is None or isinstance(x, Node):
        return x
    if isinstance(x, np.ndarray):
        return ctx.from_numpy(x)._node
    raise TypeError(f"cannot use a {type(x).__name__} as an operand of a DAPHNE operation")


# --- repr ----------------------------------------------------------------------------------------------------------

_SOURCES = {"receive": "numpy", "file": "file", "placeholder": "arg"}


def expression(node: Node, depth: int = 3, limit: int = 160) -> str:
    """A short DaphneDSL-like rendering of the expression computing `node` (inputs shown by kind and type)."""
    text = _expr(node, depth)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _expr(x: object, depth: int) -> str:
    if not isinstance(x, Node):
        return format_literal(x) if is_literal(x) else "" if x is None else "…"
    if x.op in _SOURCES:
        return f"{_SOURCES[x.op]}[{describe(x)}]"
    if depth == 0:
        return f"<{x.kind}>"
    args = [_expr(a, depth - 1) for a in x.args]
    if x.op == "binary":
        return f"({args[0]} {x.name} {args[1]})"
    if x.op == "unary":
        return f"{x.name}{args[0]}"
    if x.op == "index":
        return f"{args[0]}[{args[1]}, {args[2]}]"
    if x.op in ("construct", "output"):
        return f"<{x.name or 'control flow'} output>"
    return f"{x.name}({', '.join(args)})"


HANDLES[NONE] = OperationNode
