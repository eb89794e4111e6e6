"""DAPHNE's SQL subset: query text -> `frontend.sql.ast` (Lark LALR(1) over `grammar.lark`).

A Lark grammar rather than a general SQL parser (sqlglot): DAPHNE's lexer decides what a query means and how its
columns are labelled, and a standard SQL parser normalises exactly those details away. The grammar reproduces
them: every keyword is reserved and case-insensitive, `-1` is one token (`t.a-1` is a syntax error), `"x"` is a
string, and a column's label is the text of its tokens joined without whitespace. Rejected standard SQL is
explained by naming the unsupported construct (`LIMIT is not supported by DAPHNE's SQL`).

Errors are `SqlError(message, offset)`, the offset of the offending token in the query; the `sql` pass maps it
to `script.daph:LINE:COL`.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Sequence
from typing import Any

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken, VisitError

from daphnec.frontend.sql import ast
from daphnec.runtime.cache_files import lark_parser

_GRAMMAR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "grammar.lark")
_lark: Lark | None = None


class SqlError(Exception):
    """A problem with a query, at `offset` (a position in the query text)."""

    def __init__(self, message: str, offset: int):
        super().__init__(message)
        self.message = message
        self.offset = offset


class _KeepReserved:
    """A pass-through post-lexer: its `always_accept` keeps the keywords no rule uses (UNION, LEFT, ...) in the
    lexer, so that they stay reserved instead of lexing as identifiers. (The parser-table cache is keyed by the grammar
    text, not the post-lexer: the grammar says that it needs one.)"""

    always_accept = ("ALL", "UNIQUE", "UNION", "INTERSECT", "MINUS", "WITH", "ONLY", "USING", "CROSS", "NATURAL",
                     "FULL", "LEFT", "RIGHT", "OUTER")  # fmt: skip

    def process(self, stream: Any) -> Any:
        return stream


def _get_lark() -> Lark:
    global _lark
    if _lark is None:
        options = {"parser": "lalr", "lexer": "basic", "propagate_positions": True}
        _lark = lark_parser(_GRAMMAR, options, postlex=_KeepReserved())  # tables cached in daphnec's own folder
    return _lark


def parse_query(query: str) -> ast.Select:
    """Parse one query (`sql: query EOF`, an optional `;`)."""
    lark = _get_lark()
    try:
        tree = lark.parse(query)
    except UnexpectedInput as e:
        raise _syntax_error(query, e) from None
    tokens = list(lark.lex(query))
    try:
        return _ToAst(query, tokens).transform(tree)
    except VisitError as e:
        if isinstance(e.orig_exc, SqlError):
            raise e.orig_exc from None
        raise


# --- syntax errors -------------------------------------------------------------------------------------------------

_UNSUPPORTED = {
    "LIMIT", "OFFSET", "FETCH", "TOP", "IN", "LIKE", "IS", "NOT", "NULL", "CASE", "EXISTS", "EXCEPT", "UNION",
    "INTERSECT", "MINUS", "WITH", "LEFT", "RIGHT", "FULL", "CROSS", "NATURAL", "OUTER", "USING", "ALL", "UNIQUE",
    "ONLY", "OVER", "WINDOW", "VALUES", "INSERT", "UPDATE", "DELETE", "CREATE",
}  # fmt: skip
"""Words of standard SQL that DAPHNE's grammar has no rule for (named in the error message)."""

_RESERVED = {
    "SELECT", "FROM", "ALL", "DISTINCT", "UNIQUE", "HAVING", "UNION", "INTERSECT", "MINUS", "WITH", "AS", "ONLY",
    "INNER", "JOIN", "ON", "USING", "CROSS", "NATURAL", "FULL", "LEFT", "RIGHT", "OUTER", "WHERE", "GROUP", "BY",
    "ORDER", "ASC", "DESC", "AND", "OR", "BETWEEN",
}  # fmt: skip
"""DAPHNE's SQL keywords (SQLGrammar.g4): all reserved, even those no rule uses."""


_NAME_BEFORE = {"SELECT", "DISTINCT", "FROM", "JOIN", "AS", "ON", "BY", "AND", "OR", "WHERE", "HAVING", "("}
"""Tokens after which a reserved keyword was probably meant as a table or column name."""


def _syntax_error(query: str, e: UnexpectedInput) -> SqlError:
    if isinstance(e, UnexpectedCharacters):
        ch = query[e.pos_in_stream]
        hint = " (comments are not supported in DAPHNE's SQL)" if query.startswith("--", e.pos_in_stream) else ""
        return SqlError(f"SQL lexer error: token recognition error at: '{ch}'{hint}", e.pos_in_stream)
    if isinstance(e, UnexpectedEOF) or (isinstance(e, UnexpectedToken) and e.token.type == "$END"):
        return SqlError("SQL syntax error: unexpected end of the query", len(query.rstrip()))
    assert isinstance(e, UnexpectedToken)
    tok = e.token
    before = _previous_token(query, tok.start_pos)
    hint = " (comments are not supported in DAPHNE's SQL)" if query.startswith("--", tok.start_pos) else ""
    return SqlError(f"SQL syntax error: unexpected '{tok}'{hint or _hint(tok, before)}", tok.start_pos)


def _previous_token(query: str, pos: int) -> str:
    words = query[:pos].split()
    return words[-1] if words else ""


def _hint(tok: Token, before: str) -> str:
    """Why a token is unexpected, when it is a common construct of standard SQL."""
    name_expected = before.endswith((".", ",")) or before.upper() in _NAME_BEFORE
    if str(tok).upper() in _RESERVED and name_expected:
        return f" ('{tok}' is a reserved keyword of DAPHNE's SQL and cannot be used as a name)"
    for word in (str(tok), before):
        up = word.upper()
        if up in _UNSUPPORTED:
            return f" ({up} is not supported by DAPHNE's SQL)"
    if tok.type in ("INT", "FLOAT") and str(tok).startswith("-"):
        return f" (a minus sign directly before a number belongs to the number; write '- {str(tok)[1:]}')"
    if str(tok) == ";" or before.endswith(";"):
        return " (a query is exactly one SELECT statement)"
    return ""


# --- tree -> AST ---------------------------------------------------------------------------------------------------

_ESCAPES = (("\\b", "\b"), ("\\f", "\f"), ("\\n", "\n"), ("\\r", "\r"), ("\\t", "\t"), ('\\"', '"'), ("\\'", "'"))


def decode_string(token: str) -> str:
    """A string literal's value: the quotes stripped, then DAPHNE's replacements one after another in its order
    (`\\b \\f \\n \\r \\t \\" \\' \\\\`), so `\\\\n` becomes a backslash followed by a newline."""
    s = token[1:-1]
    for esc, ch in _ESCAPES:
        s = s.replace(esc, ch)
    return s.replace("\\\\", "\\")


def _int_value(tok: Token) -> int:
    v = int(tok)
    if not -(2**63) <= v < 2**63:
        raise SqlError(f"integer literal '{tok}' is out of range for si64", tok.start_pos)
    return v


def _tok(children: Sequence[Any], kind: str) -> Token | None:
    return next((c for c in children if isinstance(c, Token) and c.type == kind), None)


@v_args(meta=True)
class _ToAst(Transformer):
    """Builds AST nodes bottom-up; `text` of a node is its tokens joined without whitespace (ANTLR getText)."""

    def __init__(self, query: str, tokens: list[Token]):
        super().__init__()
        self.query = query
        self.tokens = tokens
        self.starts = [t.start_pos for t in tokens]

    def _text(self, meta: Any) -> str:
        lo = bisect.bisect_left(self.starts, meta.start_pos)
        hi = bisect.bisect_left(self.starts, meta.end_pos)
        return "".join(str(t) for t in self.tokens[lo:hi])

    def _node(self, meta: Any) -> tuple[int, str]:
        return meta.start_pos, self._text(meta)

    # -- expressions --

    def literal(self, meta: Any, ch: list[Token]) -> ast.Literal:
        tok = ch[0]
        if tok.type == "INT":
            return ast.Literal(*self._node(meta), _int_value(tok), "si64")
        if tok.type == "FLOAT":
            return ast.Literal(*self._node(meta), float(tok), "f64")
        return ast.Literal(*self._node(meta), decode_string(str(tok)), "str")

    def star(self, meta: Any, ch: list[Token]) -> ast.Star:
        return ast.Star(*self._node(meta))

    def ident(self, meta: Any, ch: list[Token]) -> ast.Ident:
        if len(ch) == 1:
            return ast.Ident(*self._node(meta), None, str(ch[0]))
        return ast.Ident(*self._node(meta), str(ch[0]), str(ch[1]))

    def key_ident(self, meta: Any, ch: list[Any]) -> ast.Ident:
        c = ch[0]
        return c if isinstance(c, ast.Ident) else ast.Ident(*self._node(meta), None, "*")

    def call(self, meta: Any, ch: list[Any]) -> ast.Call:
        return ast.Call(*self._node(meta), str(ch[0]), ch[1])

    def paren(self, meta: Any, ch: list[Any]) -> ast.Paren:
        return ast.Paren(*self._node(meta), ch[0])

    gparen = paren

    def _binary(self, meta: Any, ch: list[Any]) -> ast.Binary:
        lhs, op, rhs = ch
        return ast.Binary(
            *self._node(meta), str(op).upper() if op.type in ("AND", "OR") else str(op), lhs, rhs, op.start_pos
        )

    arith = cmp = and_ = or_ = _binary

    def between(self, meta: Any, ch: list[Any]) -> ast.Between:
        arg, _, lo, _, hi = ch
        return ast.Between(*self._node(meta), arg, lo, hi)

    # -- clauses --

    def sel_item(self, meta: Any, ch: list[Any]) -> ast.SelItem:
        alias = _tok(ch, "IDENT")
        return ast.SelItem(ch[0], str(alias) if alias is not None else None)

    def sel_list(self, meta: Any, ch: list[ast.SelItem]) -> tuple[ast.SelItem, ...]:
        return tuple(ch)

    def table_ref(self, meta: Any, ch: list[Token]) -> ast.TableRef:
        names = [c for c in ch if c.type == "IDENT"]
        return ast.TableRef(*self._node(meta), str(names[0]), str(names[1]) if len(names) > 1 else None)

    def from_expr(self, meta: Any, ch: list[ast.TableRef]) -> tuple[ast.TableRef, ...]:
        return tuple(ch)

    def join_cond(self, meta: Any, ch: list[Any]) -> ast.JoinCond:
        idents = [c for c in ch if isinstance(c, ast.Ident)]
        op = _tok(ch, "CMP_OP")
        return ast.JoinCond(idents[0], str(op) if op is not None else None, idents[1])

    def join(self, meta: Any, ch: list[Any]) -> ast.Join:
        table = next(c for c in ch if isinstance(c, ast.TableRef))
        idents = [c for c in ch if isinstance(c, ast.Ident)]
        first = ast.JoinCond(idents[0], str(_tok(ch, "CMP_OP")), idents[1])
        rest = tuple(c for c in ch if isinstance(c, ast.JoinCond))
        return ast.Join(*self._node(meta), table, (first, *rest))

    def where(self, meta: Any, ch: list[Any]) -> tuple[str, Any]:
        return ("where", ch[1])

    def having(self, meta: Any, ch: list[Any]) -> tuple[str, Any]:
        return ("having", ch[1])

    def group_by(self, meta: Any, ch: list[Any]) -> tuple[str, Any]:
        keys = tuple(c for c in ch if isinstance(c, ast.Ident))
        having = next((c[1] for c in ch if isinstance(c, tuple)), None)
        return ("group", (keys, having))

    def order_item(self, meta: Any, ch: list[Any]) -> ast.OrderItem:
        return ast.OrderItem(ch[0], _tok(ch, "DESC") is None)

    def order_by(self, meta: Any, ch: list[Any]) -> tuple[str, Any]:
        return ("order", tuple(c for c in ch if isinstance(c, ast.OrderItem)))

    def distinct(self, meta: Any, ch: list[Any]) -> tuple[str, int]:
        return ("distinct", meta.start_pos)

    def select(self, meta: Any, ch: list[Any]) -> ast.Select:
        parts = dict(c for c in ch if isinstance(c, tuple) and len(c) == 2 and isinstance(c[0], str))
        items = next(c for c in ch if isinstance(c, tuple) and c and isinstance(c[0], ast.SelItem))
        tables = next(c for c in ch if isinstance(c, tuple) and c and isinstance(c[0], ast.TableRef))
        keys, having = parts.get("group", ((), None))
        return ast.Select(
            *self._node(meta),
            distinct=parts.get("distinct", -1),
            items=items,
            tables=tables,
            joins=tuple(c for c in ch if isinstance(c, ast.Join)),
            where=parts.get("where"),
            group_by=keys,
            having=having,
            order_by=parts.get("order", ()),
        )

    def start(self, meta: Any, ch: list[Any]) -> ast.Select:
        return ch[0]
