"""Positions inside a query string mapped back to the DaphneDSL script: `script.daph:LINE:COL` of a SQL token.

The query reaches the `sql` pass as the value of a string constant whose location is its literal's opening
quote. Reading the literal again from the script gives the source position of every character of the decoded
string, across line breaks and escape sequences (`\\n` in the script is two characters, one in the query). When
the literal cannot be read back (the query came from a script argument, or the IR from a file), positions are
counted in the decoded text from the literal's location instead.
"""

from __future__ import annotations

from functools import cache

from daphnec.dialects.errors import Loc


@cache
def _lines(path: str) -> tuple[str, ...] | None:
    try:
        with open(path, encoding="utf-8") as f:
            return tuple(f.read().splitlines(keepends=True))
    except (OSError, UnicodeDecodeError):
        return None


_DSL_ESCAPES = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", '"': '"', "\\": "\\"}


def _literal_positions(text: str, start: int, line: int, col: int) -> tuple[str, list[tuple[int, int]]] | None:
    """Decode the DaphneDSL string literal whose opening quote is at text[start] (at line:col); the decoded
    value and the source line:col of each of its characters, plus one entry for the closing quote."""
    if start >= len(text) or text[start] != '"':
        return None
    out: list[str] = []
    where: list[tuple[int, int]] = []
    i, ln, cl = start + 1, line, col + 1
    while i < len(text) and text[i] != '"':
        where.append((ln, cl))
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            out.append(_DSL_ESCAPES.get(text[i + 1], text[i + 1]))
            i, cl = i + 2, cl + 2
            continue
        out.append(ch)
        i += 1
        ln, cl = (ln + 1, 1) if ch == "\n" else (ln, cl + 1)
    where.append((ln, cl))
    return "".join(out), where


class QueryLocator:
    """Maps an offset in `query` to the script location of that character."""

    def __init__(self, query: str, literal: Loc | None, fallback: Loc | None):
        self.query = query
        self.literal = literal
        self.fallback = fallback
        self.positions = self._read_back(query, literal)

    @staticmethod
    def _read_back(query: str, literal: Loc | None) -> list[tuple[int, int]] | None:
        lines = _lines(literal.file) if literal is not None else None
        if lines is None or not 1 <= literal.line <= len(lines):  # type: ignore[union-attr]
            return None
        text = "".join(lines[literal.line - 1 :])  # type: ignore[union-attr]
        decoded = _literal_positions(text, literal.col - 1, literal.line, literal.col)  # type: ignore[union-attr]
        if decoded is None or decoded[0] != query:
            return None
        return decoded[1]

    def loc(self, offset: int) -> Loc | None:
        """The script location of the query character at `offset` (the end of the query for offset = len)."""
        if self.literal is None:
            return self.fallback
        offset = max(0, min(offset, len(self.query)))
        if self.positions is not None:
            line, col = self.positions[offset]
            return Loc(self.literal.file, line, col)
        before = self.query[:offset]
        nl = before.count("\n")
        col = offset - before.rfind("\n") if nl else self.literal.col + 1 + offset
        return Loc(self.literal.file, self.literal.line + nl, col)
