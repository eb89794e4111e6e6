"""The syntax tree of a DAPHNE SQL query (`frontend/sql/grammar.lark`).

Every node records `pos`, the offset of its first token in the query (errors and IR locations point there), and
`text`, ANTLR's `getText()` of it: the token texts joined without whitespace, in the case the user typed. DAPHNE
labels unnamed result columns with that text (`SUM( t.a )` -> `SUM(t.a)`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Node:
    pos: int
    text: str


@dataclass(frozen=True)
class Literal(Node):
    """An integer (si64), decimal (f64) or string literal (its escapes already decoded)."""

    value: int | float | str
    vt: str


@dataclass(frozen=True)
class Star(Node):
    """`*` as a select item: the current frame's columns."""


@dataclass(frozen=True)
class Ident(Node):
    """`col`, `t.col` or `t.*` (`name` is `*`); in GROUP BY, ORDER BY and ON also a bare `*`."""

    qualifier: str | None
    name: str


@dataclass(frozen=True)
class Call(Node):
    """`func(arg)`: an aggregation (count, sum, min, max, avg; case-insensitive)."""

    func: str
    arg: Expr


@dataclass(frozen=True)
class Paren(Node):
    inner: Expr


@dataclass(frozen=True)
class Binary(Node):
    """`lhs op rhs`: arithmetic (`* / + -`), a comparison (`= <> != < <= > >=`), `AND` or `OR`."""

    op: str
    lhs: Expr
    rhs: Expr
    op_pos: int


@dataclass(frozen=True)
class Between(Node):
    """`arg BETWEEN lo AND hi` (symmetric and inclusive)."""

    arg: Expr
    lo: Expr
    hi: Expr


Expr = Literal | Star | Ident | Call | Paren | Binary | Between


@dataclass(frozen=True)
class SelItem:
    expr: Expr
    alias: str | None


@dataclass(frozen=True)
class TableRef(Node):
    name: str
    alias: str | None


@dataclass(frozen=True)
class JoinCond:
    """`lhs op rhs` in ON: `lhs` names a column of the frame joined so far, `rhs` one of the joined table; the
    grammar allows the operator to be missing after the first condition."""

    lhs: Ident
    op: str | None
    rhs: Ident


@dataclass(frozen=True)
class Join(Node):
    table: TableRef
    conds: tuple[JoinCond, ...]


@dataclass(frozen=True)
class OrderItem:
    key: Ident
    asc: bool


@dataclass(frozen=True)
class Select(Node):
    distinct: int
    """The position of DISTINCT, -1 without it."""
    items: tuple[SelItem, ...]
    tables: tuple[TableRef, ...]
    joins: tuple[Join, ...]
    where: Expr | None
    group_by: tuple[Ident, ...]
    having: Expr | None
    order_by: tuple[OrderItem, ...]
