"""The lazy DAG behind the Python API: immutable nodes, what each emits in DaphneDSL, and their static types.

User-facing objects (`Matrix`, `Frame`, `Scalar`, ...) are *handles* holding one `Node`. Nodes never change once
built: `X[r, c] = v` makes the handle `X` point to a new insert node, so expressions built from `X` earlier keep
the old value (DaphneLib mutates the node in place and re-points its consumers, `operation_node.py`).

Every node records
- `serial`, a global creation counter: the code generator (`codegen.py`) emits nodes made *before* a control-flow
  callback ran outside the loop or branch, and the nodes the callback made inside it;
- `site`, the first Python frame outside this package that built it, for error messages;
- its static value type and shape where cheap rules know them (for `repr`; the compiler infers the real types).
"""

from __future__ import annotations

import itertools
import math
import os
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

from daphnec.dialects.value_types import VT_OF_DTYPE, VtRule, vt_from_args

MATRIX, FRAME, SCALAR, NONE = "matrix", "frame", "scalar", "none"
"""Node kinds: DaphneLib's output types (a NONE node is a statement with no value, such as print)."""

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_SERIAL = itertools.count()


def next_serial() -> int:
    """The serial number the next node will get (control-flow constructs mark where their callbacks began)."""
    return next(_SERIAL)


@dataclass(frozen=True)
class Site:
    """Where a node was built in the user's Python code."""

    filename: str
    lineno: int
    function: str

    def __str__(self) -> str:
        import linecache

        text = linecache.getline(self.filename, self.lineno).strip()
        where = f"{self.filename}:{self.lineno} in {self.function}"
        return f"{where}: {text}" if text else where


def call_site() -> Site | None:
    """The innermost frame of the caller outside the daphnelib package (and its `daphne` compatibility package)."""
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith(_PACKAGE_DIR):
        f = f.f_back  # type: ignore[assignment]
    if f is None:
        return None
    return Site(f.f_code.co_filename, f.f_lineno, f.f_code.co_name)


@dataclass(frozen=True)
class Span:
    """A range `lo:hi` inside an index (None = open end); the bounds are literals or nodes."""

    lo: Any
    hi: Any


class Node:
    """One operation of the lazy DAG (see the module docstring). `op` selects how `codegen.py` emits it."""

    __slots__ = ("kind", "op", "name", "args", "payload", "serial", "site", "vt", "shape", "generated")

    def __init__(
        self,
        kind: str,
        op: str,
        name: str = "",
        args: tuple[Any, ...] = (),
        payload: Any = None,
        vt: str | None = None,
        shape: tuple[int, int] = (-1, -1),
    ):
        self.kind = kind
        self.op = op
        self.name = name
        self.args = args
        self.payload = payload
        self.serial = next(_SERIAL)
        self.site = call_site()
        self.vt = vt
        self.shape = shape
        self.generated: tuple[str, Any] | None = None  # the program computing this node (codegen.generate)

    def inputs(self) -> list[Node]:
        """The nodes this node reads, in argument order (inside index spans too)."""
        out: list[Node] = []
        for a in self.args:
            if isinstance(a, Node):
                out.append(a)
            elif isinstance(a, Span):
                out.extend(x for x in (a.lo, a.hi) if isinstance(x, Node))
        return out


# --- Python values inside the DAG ----------------------------------------------------------------------------------

LITERAL_TYPES = (bool, int, float, str, np.bool_, np.integer, np.floating, np.str_)


def is_literal(x: object) -> bool:
    return isinstance(x, LITERAL_TYPES)


def literal_vt(x: object) -> str:
    """The value type of a Python or numpy scalar in a DaphneDSL program."""
    if isinstance(x, (bool, np.bool_)):
        return "bool"
    if isinstance(x, np.generic):
        return VT_OF_DTYPE.get(x.dtype, "f64")
    if isinstance(x, int):
        return "si64" if x < 2**63 else "ui64"
    return "f64" if isinstance(x, float) else "str"


def format_literal(x: object) -> str:
    """`x` as a DaphneDSL literal that reads back as the same value and value type."""
    if isinstance(x, (bool, np.bool_)):
        return "true" if x else "false"
    if isinstance(x, (str, np.str_)):
        return _string_literal(str(x))
    if isinstance(x, np.generic) and literal_vt(x) not in ("si64", "f64"):
        return f"as.{literal_vt(x)}({format_literal(x.item())})"
    if isinstance(x, (int, np.integer)):
        v = int(x)
        return f"({v})" if v < 0 else (f"{v}u" if v >= 2**63 else str(v))
    v = float(x)  # type: ignore[arg-type]
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "(-inf)"
    text = repr(v)
    mantissa, e, exponent = text.partition("e")
    if e:  # DaphneDSL exponents have no leading zeros (`1e-05` is `1e-5`)
        sign = "-" if exponent.startswith("-") else ""
        text = f"{mantissa}e{sign}{exponent.lstrip('+-').lstrip('0') or '0'}"
    return f"({text})" if v < 0 or text.startswith("-") else text


_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}


def _string_literal(s: str) -> str:
    return '"' + "".join(_ESCAPES.get(c, c) for c in s) + '"'


# --- static types (for `repr` and for choosing a handle's kind) ----------------------------------------------------


def vt_of(x: object) -> str | None:
    """The static value type of a node or literal (None if unknown)."""
    return x.vt if isinstance(x, Node) else literal_vt(x) if is_literal(x) else None


def shape_of(x: object) -> tuple[int, int]:
    return x.shape if isinstance(x, Node) and x.kind == MATRIX else (-1, -1)


def rule_vt(rule: VtRule, *xs: object) -> str | None:
    """The value type `rule` (the dialect's, e.g. an op kind's in dialects/op_kinds.py) gives the operands'."""
    return rule([vt_of(x) for x in xs])


def joint_vt(*xs: object) -> str | None:
    """DAPHNE's promotion: the most general of the operands' value types."""
    return rule_vt(vt_from_args, *xs)


def broadcast_shape(a: object, b: object) -> tuple[int, int]:
    """The shape of an element-wise binary result: the left matrix's, else the right's (DAPHNE broadcasts only
    the right operand)."""
    return shape_of(a) if isinstance(a, Node) and a.kind == MATRIX else shape_of(b)


def describe(node: Node) -> str:
    """`5x3 f64` for known parts, `?` for unknown ones."""
    parts = []
    if node.kind == MATRIX:
        r, c = node.shape
        parts.append(f"{r if r >= 0 else '?'}x{c if c >= 0 else '?'}")
    if node.kind in (MATRIX, SCALAR):
        parts.append(node.vt or "?")
    return " ".join(parts)
