"""The frontend's nesting limit: how deep expressions and statements may nest in a DaphneDSL script.

The parser is LALR (iterative) and the AST is built bottom-up without recursion, but the IR builder, xDSL's
printer and verifier and several passes walk the program recursively. The driver compiles on a thread with a
large stack (`tools.driver.with_deep_stack`), which carries them through `MAX_NESTING_DEPTH` levels, e.g. a
10,000-term sum `1+1+...+1` (a chain of 9,999 nested additions) or 1,000 nested calls, unary minuses or blocks.
A deeper script is refused right after parsing with a located `nesting too deep` ParseError at its first node
beyond the limit, instead of a crash or an internal RecursionError.
"""

from __future__ import annotations

import dataclasses

from daphnec.dialects.errors import Loc, ParseError

MAX_NESTING_DEPTH = 12_000
"""Levels of AST nodes (expressions, statements, blocks) nested in one another, the script itself included."""


def check_nesting(root: object) -> None:
    """Raise ParseError at the first node nested deeper than MAX_NESTING_DEPTH (an iterative walk)."""
    stack: list[tuple[object, int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_NESTING_DEPTH:
            loc = getattr(node, "loc", None)
            raise ParseError(
                f"nesting too deep: more than {MAX_NESTING_DEPTH} levels of nested expressions and statements",
                loc if isinstance(loc, Loc) else None,
            )
        stack.extend((child, depth + 1) for child in _children(node))


def _children(node: object) -> list[object]:
    """The AST nodes directly inside `node` (fields that are nodes, or tuples of them, possibly nested)."""
    found: list[object] = []
    values = [getattr(node, f.name) for f in dataclasses.fields(node)] if dataclasses.is_dataclass(node) else []
    while values:
        v = values.pop()
        if isinstance(v, tuple):
            values.extend(v)
        elif dataclasses.is_dataclass(v) and not isinstance(v, Loc):
            found.append(v)
    return found
