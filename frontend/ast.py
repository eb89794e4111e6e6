"""The DaphneDSL abstract syntax tree produced by `frontend.parser` and consumed by the IR builder.

Conventions (so that consumers need no knowledge of the grammar):
- Every node is a frozen dataclass whose last field is `loc: Loc` (file, 1-based line, 1-based column).
  Nodes compare and hash by identity (`eq=False`): two `IntLit(1)` at different places are different nodes,
  so nodes can key dicts, e.g. node -> IR value (also, value equality costs start-up time for no use).
  A node's loc is the position of its **first token**, like ANTLR's `ctx->getStart()`: a binary operation, a
  ternary, an indexing or a call is located at the start of its left-most operand/name, a statement at its
  first token (`if`, `def`, the first assignment target, ...).
- Sequences are tuples (immutable, hashable); an omitted optional part is `None`.
- Dotted names (`ns.f`, `a.b`) are kept as one string joined with '.'.
- Literals carry no sign: `-5` is `Unary('-', IntLit(5))`. The single exception is `-9223372036854775808`,
  which is folded into `IntLit(-9223372036854775808, 'si64')` because its operand does not fit si64.
  Hence every `IntLit.value` lies in the range of its `vt`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from daphnec.dialects.errors import Loc

DataType = Literal["matrix", "frame", "scalar"]
IntVT = Literal["si64", "ui64", "index"]
FloatVT = Literal["f64", "f32"]


# ---------------------------------------------------------------------------------------------- types


@dataclass(frozen=True, eq=False)
class TypeSpec:
    """A type in a parameter/return annotation or a cast: `matrix<f64>`, `matrix`, `si64`.

    data_type is None for a bare value type (`si64`, meaning a scalar in a function signature, but "keep the
    data type" in a cast); value_type is None for a bare data type (`matrix`, `as.frame`).
    """

    data_type: DataType | None
    value_type: str | None
    loc: Loc


# ---------------------------------------------------------------------------------------------- expressions


@dataclass(frozen=True, eq=False)
class IntLit:
    """Integer literal; vt from the suffix: none or `l` -> si64, `u`/`ull` -> ui64, `z` -> index."""

    value: int
    vt: IntVT
    loc: Loc


@dataclass(frozen=True, eq=False)
class FloatLit:
    """Float literal; vt is f32 for an `f` suffix (value already rounded to float32), else f64.

    `nan`, `inf` and also `nanf`, `inff` are f64 (DAPHNE builds the latter two as f64 as well).
    """

    value: float
    vt: FloatVT
    loc: Loc


@dataclass(frozen=True, eq=False)
class BoolLit:
    """`true` or `false`."""

    value: bool
    loc: Loc


@dataclass(frozen=True, eq=False)
class StrLit:
    """String literal with its escape sequences already decoded."""

    value: str
    loc: Loc


@dataclass(frozen=True, eq=False)
class ScriptArg:
    """`$name`: the value of script argument `name`, substituted via `parser.parse_literal`."""

    name: str
    loc: Loc


@dataclass(frozen=True, eq=False)
class Ident:
    """A variable reference; name may be dotted (`alias.x` for an imported module's variable)."""

    name: str
    loc: Loc


@dataclass(frozen=True, eq=False)
class Call:
    """`name::kernel(args..., key=value...)`: builtin or user function call.

    name: possibly dotted callee (`alias.f`); kernel: the `::kernel` hint or None;
    args: positional arguments; kwargs: `(keyword, value)` pairs, all after the positional ones.
    """

    name: str
    args: tuple[Expr, ...]
    kwargs: tuple[tuple[str, Expr], ...]
    kernel: str | None
    loc: Loc


@dataclass(frozen=True, eq=False)
class Cast:
    """`as.T(expr)`: target is the TypeSpec T (`as.f32` has data_type None, `as.matrix` value_type None)."""

    target: TypeSpec
    expr: Expr
    loc: Loc


@dataclass(frozen=True, eq=False)
class Unary:
    """Prefix `-e` / `+e`; binds tighter than `^` and `@` but looser than indexing."""

    op: Literal["-", "+"]
    operand: Expr
    loc: Loc


@dataclass(frozen=True, eq=False)
class Binary:
    """`lhs op rhs` with op one of `@ ^ % * / + - == != < <= > >= && ||`.

    kernel is the `::kernel` hint of `*`, `/`, `+`, `-` (e.g. `a *::myMul b`), else None.
    """

    op: str
    lhs: Expr
    rhs: Expr
    kernel: str | None
    loc: Loc


@dataclass(frozen=True, eq=False)
class Ternary:
    """`cond ? then : else_` (elementwise when cond is a matrix)."""

    cond: Expr
    then: Expr
    else_: Expr
    loc: Loc


@dataclass(frozen=True, eq=False)
class Range:
    """`start:stop` inside indexing (stop exclusive); either bound may be None (`a:`, `:b`, `:`)."""

    start: Expr | None
    stop: Expr | None
    loc: Loc


@dataclass(frozen=True, eq=False)
class Index:
    """`obj[rows, cols]`; rows/cols are a position expression, a Range, or None when omitted (`X[, 2]`)."""

    obj: Expr
    rows: Range | Expr | None
    cols: Range | Expr | None
    loc: Loc


@dataclass(frozen=True, eq=False)
class ElementIndex:
    """`L[i]`: the i-th element (0-based) of a list. Not in DaphneDSL, which has no way to read a list element
    except `remove`; paramserv's update functions need one to take their model list apart."""

    obj: Expr
    index: Expr
    loc: Loc


@dataclass(frozen=True, eq=False)
class BitIndex:
    """`obj[[rows, cols]]`: filter rows/cols by 0/1 vectors; None where omitted."""

    obj: Expr
    rows: Expr | None
    cols: Expr | None
    loc: Loc


@dataclass(frozen=True, eq=False)
class MatrixLit:
    """`[e, ...]` optionally followed by a shape `(rows, cols)` in which either part may be omitted.

    has_shape tells `[1, 2]` (a column vector) apart from `[1, 2](,)` / `[1, 2](1,)`.
    """

    elems: tuple[Expr, ...]
    rows: Expr | None
    cols: Expr | None
    has_shape: bool
    loc: Loc


@dataclass(frozen=True, eq=False)
class FrameLitCols:
    """Column-major frame literal `{label: column, ...}`; labels[i] names cols[i]."""

    labels: tuple[Expr, ...]
    cols: tuple[Expr, ...]
    loc: Loc


@dataclass(frozen=True, eq=False)
class FrameLitRows:
    """Row-major frame literal `{[label, ...], [v, ...], ...}`: the label list, then one tuple per row."""

    labels: tuple[Expr, ...]
    rows: tuple[tuple[Expr, ...], ...]
    loc: Loc


Expr = (
    IntLit
    | FloatLit
    | BoolLit
    | StrLit
    | ScriptArg
    | Ident
    | Call
    | Cast
    | Unary
    | Binary
    | Ternary
    | Index
    | ElementIndex
    | BitIndex
    | MatrixLit
    | FrameLitCols
    | FrameLitRows
)


# ---------------------------------------------------------------------------------------------- statements


@dataclass(frozen=True, eq=False)
class Block:
    """`{ stmts }`: opens a scope."""

    stmts: tuple[Stmt, ...]
    loc: Loc


@dataclass(frozen=True, eq=False)
class ExprStmt:
    """`expr;` whose results are discarded."""

    expr: Expr
    loc: Loc


@dataclass(frozen=True, eq=False)
class AssignTarget:
    """One left-hand side: a (possibly dotted) variable name, optionally left-indexed (`X[1:3, 2] = ...`).

    index, when present, is an Index whose obj is `Ident(name)`.
    """

    name: str
    index: Index | None
    loc: Loc


@dataclass(frozen=True, eq=False)
class Assign:
    """`t1, t2, ... = value;` (several targets for multi-return calls)."""

    targets: tuple[AssignTarget, ...]
    value: Expr
    loc: Loc


@dataclass(frozen=True, eq=False)
class If:
    """`if (cond) then else else_`; else_ is None without an else branch."""

    cond: Expr
    then: Stmt
    else_: Stmt | None
    loc: Loc


@dataclass(frozen=True, eq=False)
class While:
    """`while (cond) body`."""

    cond: Expr
    body: Stmt
    loc: Loc


@dataclass(frozen=True, eq=False)
class DoWhile:
    """`do body while (cond);` (trailing `;` optional)."""

    body: Stmt
    cond: Expr
    loc: Loc


@dataclass(frozen=True, eq=False)
class For:
    """`for (var in start:stop[:step]) body`; bounds inclusive, step None when omitted."""

    var: str
    start: Expr
    stop: Expr
    step: Expr | None
    body: Stmt
    loc: Loc


@dataclass(frozen=True, eq=False)
class ParFor(For):
    """`parfor (var in start:stop[:step]) body`: a `for` whose iterations are independent and run in parallel
    (a subclass, so that every walk over loops treats it as the loop it is)."""


@dataclass(frozen=True, eq=False)
class Param:
    """A function parameter; type is None when untyped."""

    name: str
    type: TypeSpec | None
    loc: Loc


@dataclass(frozen=True, eq=False)
class FuncDef:
    """`def name(params) -> returns { body }`; returns is empty when no `->` is given."""

    name: str
    params: tuple[Param, ...]
    returns: tuple[TypeSpec, ...]
    body: Block
    loc: Loc


@dataclass(frozen=True, eq=False)
class Return:
    """`return;`, `return e;` or `return e1, e2;` (values may be empty)."""

    values: tuple[Expr, ...]
    loc: Loc


@dataclass(frozen=True, eq=False)
class Import:
    """`import "path";` or `import "path" as "alias";` (alias None when not given)."""

    path: str
    alias: str | None
    loc: Loc


Stmt = Block | ExprStmt | Assign | If | While | DoWhile | For | FuncDef | Return | Import


@dataclass(frozen=True, eq=False)
class Script:
    """A parsed file: its top-level statements; loc is the file's first position."""

    stmts: tuple[Stmt, ...]
    loc: Loc
