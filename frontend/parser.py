"""DaphneDSL parser: source text -> `frontend.ast` nodes.

The grammar (`grammar.lark`) is parsed by Lark's LALR(1) parser with its basic lexer; the parse tree is then
turned into AST nodes by `_AstBuilder`, which also validates and decodes literals. The Lark object is built once
per process, lazily, from its analysed grammar (the LALR tables) shipped next to the grammar (`grammar.tables.json`,
rebuilt by `write_tables`), else kept in daphnec's own cache folder as JSON (`runtime.cache_files.lark_parser`),
so that no process, not even the first with empty caches, pays for the table construction.

All problems are reported as `dialects.errors.ParseError` with a 1-based `Loc`.
"""

from __future__ import annotations

import math
import os
import re
import struct
from typing import Any, NamedTuple

from lark import Lark, Token, Transformer_NonRecursive, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken, VisitError
from lark.tree import Meta

from daphnec.dialects.errors import Loc, ParseError
from daphnec.dialects.value_types import VALUE_TYPE_NAMES
from daphnec.frontend import ast
from daphnec.frontend.nesting import check_nesting
from daphnec.frontend.sources import SourceFiles
from daphnec.runtime.cache_files import lark_parser, write_shipped_tables

_GRAMMAR_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "grammar.lark")
_lark: Lark | None = None

_SI64_MAX = 2**63 - 1
_UI64_MAX = 2**64 - 1


# ---------------------------------------------------------------------------------------------- public API


def parse_file(path: str, sources: SourceFiles | None = None) -> ast.Script:
    """Parse the script stored at `path` (UTF-8), reporting the read to `sources`; unreadable files are reported
    as ParseError too."""
    try:
        text = (sources if sources is not None else SourceFiles()).read_text(path)
    except OSError as e:
        raise ParseError(f"cannot read script file '{path}': {e.strerror or e}") from None
    return parse_source(text, path)


def parse_source(text: str, filename: str) -> ast.Script:
    """Parse a whole script; `filename` only labels the locations."""
    return _parse(text, filename, "script")


def parse_literal(text: str, filename: str) -> ast.Expr:
    """Parse the value of a `name=value` script argument, which must be ONE literal.

    A leading `-` becomes unary minus (so `-3` gives `Unary('-', IntLit(3))`); anything else that is not a
    single literal (`10+10`, `sin(1)`, `--1`) is rejected.
    """
    return _parse(text, filename, "arg_literal")


# ---------------------------------------------------------------------------------------------- driver


class _LexicalError(Exception):
    """Raised from lexer callbacks, which do not know the file name; `_parse` adds it."""

    def __init__(self, message: str, line: int, column: int):
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column


def _check_block_comment(tok: Token) -> Token:
    """BLOCK_COMMENT also matches an unclosed `/*` up to the end of file, so that it can be reported here."""
    if len(tok) < 4 or not tok.endswith("*/"):
        raise _LexicalError("unterminated block comment", tok.line, tok.column)
    return tok


_LARK_OPTIONS: dict[str, Any] = {
    "parser": "lalr",
    "lexer": "basic",
    "start": ["script", "arg_literal"],
    "propagate_positions": True,
    "maybe_placeholders": True,
}


def _get_lark() -> Lark:
    """Build (or load from daphnec's parser-table cache, `runtime.cache_files.lark_parser`) the parser once per
    process."""
    global _lark
    if _lark is None:
        _lark = lark_parser(_GRAMMAR_PATH, _LARK_OPTIONS, lexer_callbacks={"BLOCK_COMMENT": _check_block_comment})
    return _lark


def write_tables() -> str:
    """Rebuild the parser tables shipped next to the grammar (`grammar.tables.json`); run after changing
    grammar.lark or `_LARK_OPTIONS`: `python -c "from daphnec.frontend.parser import write_tables; write_tables()"`.
    They spare the first run with empty caches the table construction (`runtime.cache_files.shipped_tables_path`)."""
    return str(
        write_shipped_tables(_GRAMMAR_PATH, _LARK_OPTIONS, lexer_callbacks={"BLOCK_COMMENT": _check_block_comment})
    )


def _parse(text: str, filename: str, start: str) -> Any:
    """Parse `text` from rule `start` and build the AST, mapping every failure to ParseError."""
    try:
        tree = _get_lark().parse(text, start=start)
    except UnexpectedInput as e:
        raise _syntax_error(e, text, filename, start) from None
    except _LexicalError as e:
        raise ParseError(e.message, Loc(filename, e.line, e.column)) from None
    node = _AstBuilder(filename).build(tree)
    check_nesting(node)
    return node


# ---------------------------------------------------------------------------------------------- syntax errors

# Readable names of the regex terminals; string terminals are shown quoted.
_REGEX_TERMINALS = {"ID": "an identifier", "NUMBER": "a number", "STRING": "a string"}
_EXPR_START = {
    "ID",
    "NUMBER",
    "STRING",
    "true",
    "false",
    "nan",
    "nanf",
    "inf",
    "inff",
    "$",
    "(",
    "[",
    "{",
    "+",
    "-",
    "as",
    "::",
}
_STMT_START = _EXPR_START | {"if", "while", "do", "for", "parfor", "def", "return", "import"}
_OPERATORS = {"@", "^", "%", "*", "/", "+", "-", "==", "!=", "<", "<=", ">", ">=", "&&", "||", "?", "[", "[["}
_VALUE_TYPES = set(VALUE_TYPE_NAMES) - {"index"}  # DaphneDSL spells every value type but the size type
_TYPES = _VALUE_TYPES | {"matrix", "frame", "scalar"}
_MAX_LISTED = 6


def _terminal_text(name: str) -> str:
    """The source text of a string terminal (`(` for LPAR), else the name (regex terminals, `$END`)."""
    if name in _REGEX_TERMINALS or name == "$END":
        return name
    pattern = _get_lark().get_terminal(name).pattern
    return pattern.value if pattern.type == "str" else name


def _describe_expected(names: set[str]) -> str:
    """Summarise LALR's expected-terminal set: `';', ')' or an operator` rather than forty terminal names."""
    texts = {_terminal_text(n) for n in names} - {"$END"}
    groups = []
    if {"ID", "NUMBER", "if", "while"} <= texts:
        texts -= _STMT_START
        groups.append("a statement")
    if {"ID", "NUMBER", "STRING"} <= texts:
        texts -= _EXPR_START
        groups.append("an expression")
    if {"*", "&&"} <= texts:
        texts -= _OPERATORS
        groups.append("an operator")
    if _VALUE_TYPES <= texts:
        groups.append("a type" if "matrix" in texts else "a value type")
        texts -= _TYPES
    items = sorted(_REGEX_TERMINALS.get(t, f"'{t}'") for t in texts) + groups
    if "$END" in names:
        items.append("end of file")
    if len(items) > _MAX_LISTED:
        items = items[:_MAX_LISTED] + ["..."]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


def _describe_token(tok: Token) -> str:
    """How the offending token is named in a message."""
    if tok.type == "ID":
        return f"identifier '{tok}'"
    if tok.type == "NUMBER":
        return f"number '{tok}'"
    if tok.type == "STRING":  # a string spanning lines shows its first line: messages stay on one line
        return f"string {tok}" if "\n" not in tok else f"string {tok.split(chr(10), 1)[0]}..."
    return f"'{tok}'"


def _end_loc(text: str, filename: str) -> Loc:
    """The position just after the last character, where an unexpected end of file is reported."""
    line = text.count("\n") + 1
    return Loc(filename, line, len(text) - (text.rfind("\n") + 1) + 1)


def _syntax_error(e: UnexpectedInput, text: str, filename: str, start: str) -> ParseError:
    """Turn Lark's exception into a one-line ParseError."""
    if isinstance(e, UnexpectedCharacters):
        char = text[e.pos_in_stream]
        message = "unterminated string literal" if char == '"' else f"syntax error: unexpected character {char!r}"
        return ParseError(message, Loc(filename, e.line, e.column))
    if start == "arg_literal":
        message = f"invalid script argument value '{text}': expected a single literal"
        return ParseError(message, Loc(filename, e.line, e.column))
    if isinstance(e, UnexpectedToken) and e.token.type != "$END":
        what, loc = _describe_token(e.token), Loc(filename, e.token.line, e.token.column)
    else:
        what, loc = "end of file", _end_loc(text, filename)
    expected = set(getattr(e, "accepts", None) or getattr(e, "expected", None) or ())
    suffix = f", expected {_describe_expected(expected)}" if expected else ""
    if what == "']]'" and "]" in {_terminal_text(n) for n in expected}:
        suffix += " (write '] ]' to close a matrix literal and an indexing)"
    return ParseError(f"syntax error: unexpected {what}{suffix}", loc)


# ---------------------------------------------------------------------------------------------- literals

_INT_PART = r"(0|[1-9](?:[_']?[0-9])*)"  # digit separators `_` / `'` only between digits
_INT_RE = re.compile(_INT_PART + r"(ull|u|l|z)?")
_FLOAT_RE = re.compile(_INT_PART + r"(\.[0-9](?:[_']?[0-9])*)?([eE][+-]?(?:0|[1-9][0-9]*))?(f)?")
_INT_VT: dict[str | None, ast.IntVT] = {None: "si64", "l": "si64", "u": "ui64", "ull": "ui64", "z": "index"}
_ESCAPES = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", '"': '"', "\\": "\\"}


def _number_problem(text: str) -> str:
    """Explain why `text` is not a valid numeric literal (it already failed both literal regexes)."""
    reason = ""
    if text.startswith("."):
        reason = ": a digit is required before '.'"
    elif re.search(r"\.(?![0-9])", text):
        reason = ": a digit is required after '.'"
    elif re.search(r"(?<![0-9])[_']|[_'](?![0-9])", text):
        reason = ": a digit separator must stand between two digits"
    elif re.match(r"0[0-9_']", text):
        reason = ": leading zeros are not allowed"
    elif re.search(r"[eE]", text) and not re.search(r"[eE][+-]?(?:0|[1-9][0-9]*)f?$", text):
        reason = ": malformed exponent (no separators or leading zeros allowed)"
    return f"invalid numeric literal '{text}'{reason}"


def _to_f32(value: float) -> float:
    """Round to the nearest float32, as an `f`-suffixed literal is stored; raises OverflowError if too large."""
    return struct.unpack("f", struct.pack("f", value))[0]


class _Element(NamedTuple):
    """`[i]` (one position, no comma): a list element."""

    index: ast.Expr


class _KwArg(NamedTuple):
    """A `name=value` call argument, before `_AstBuilder.call` splits arguments."""

    name: str
    value: ast.Expr
    loc: Loc


# ---------------------------------------------------------------------------------------------- AST builder

_meta = v_args(meta=True)


class _AstBuilder(Transformer_NonRecursive):
    """Builds AST nodes bottom-up (non-recursively, so long operator chains cannot hit the recursion limit).

    Methods named after rules/aliases of grammar.lark receive (meta, children); methods named after terminals
    receive the token. A node's loc is meta's start, i.e. its first token (also for a parenthesized lhs).
    """

    def __init__(self, filename: str):
        super().__init__()
        self.filename = filename
        # IntLit(2**63) nodes that are legal only as the operand of unary minus (`-9223372036854775808`).
        self._unnegated_min: list[ast.IntLit] = []

    def build(self, tree: Any) -> Any:
        """Transform the parse tree, unwrapping ParseErrors that Lark wraps in VisitError."""
        try:
            result = self.transform(tree)
        except VisitError as e:
            raise e.orig_exc from None
        if self._unnegated_min:
            lit = self._unnegated_min[0]
            raise ParseError(f"integer literal '{lit.value}' is out of range for si64", lit.loc)
        return result

    def _loc(self, meta: Meta) -> Loc:
        return Loc(self.filename, meta.line, meta.column)

    def _tok_loc(self, tok: Token) -> Loc:
        return Loc(self.filename, tok.line, tok.column)

    def _error(self, message: str, line: int, column: int) -> ParseError:
        return ParseError(message, Loc(self.filename, line, column))

    # ------------------------------------------------------------------ terminals → literals

    def NUMBER(self, tok: Token) -> ast.IntLit | ast.FloatLit:
        m = _INT_RE.fullmatch(tok)
        if m:
            return self._int_literal(tok, m)
        m = _FLOAT_RE.fullmatch(tok)
        if m and (m.group(2) or m.group(3)):  # a fraction or an exponent is required
            return self._float_literal(tok, m.group(4) is not None)
        raise self._error(_number_problem(str(tok)), tok.line, tok.column)

    def _int_literal(self, tok: Token, m: re.Match[str]) -> ast.IntLit:
        value = int(re.sub("[_']", "", m.group(1)))
        vt = _INT_VT[m.group(2)]
        lit = ast.IntLit(value, vt, self._tok_loc(tok))
        if vt == "si64" and value == _SI64_MAX + 1:
            self._unnegated_min.append(lit)
        elif value > (_SI64_MAX if vt == "si64" else _UI64_MAX):
            raise self._error(f"integer literal '{tok}' is out of range for {vt}", tok.line, tok.column)
        return lit

    def _float_literal(self, tok: Token, is_f32: bool) -> ast.FloatLit:
        value = float(re.sub("[_'f]", "", tok))
        try:
            value = _to_f32(value) if is_f32 else value
        except OverflowError:
            value = math.inf
        if math.isinf(value):
            raise self._error(
                f"float literal '{tok}' is out of range for {'f32' if is_f32 else 'f64'}", tok.line, tok.column
            )
        return ast.FloatLit(value, "f32" if is_f32 else "f64", self._tok_loc(tok))

    def STRING(self, tok: Token) -> ast.StrLit:
        body = tok[1:-1]
        if "\\" in body:
            body = re.sub(r"\\(.)", lambda m: self._unescape(tok, m), body, flags=re.S)
        return ast.StrLit(body, self._tok_loc(tok))

    def _unescape(self, tok: Token, m: re.Match[str]) -> str:
        if m.group(1) in _ESCAPES:
            return _ESCAPES[m.group(1)]
        offset = m.start() + 1  # +1 for the opening quote
        before = tok[:offset]
        newlines = before.count("\n")
        column = offset - before.rfind("\n") if newlines else tok.column + offset
        raise self._error(f"invalid escape sequence '\\{m.group(1)}' in string literal", tok.line + newlines, column)

    def TRUE(self, tok: Token) -> ast.BoolLit:
        return ast.BoolLit(True, self._tok_loc(tok))

    def FALSE(self, tok: Token) -> ast.BoolLit:
        return ast.BoolLit(False, self._tok_loc(tok))

    def NAN(self, tok: Token) -> ast.FloatLit:
        return ast.FloatLit(math.nan, "f64", self._tok_loc(tok))

    def INF(self, tok: Token) -> ast.FloatLit:
        return ast.FloatLit(math.inf, "f64", self._tok_loc(tok))

    NANF = NAN  # DAPHNE builds `nanf`/`inff` as f64 constants too
    INFF = INF

    # ------------------------------------------------------------------ statements

    @_meta
    def script(self, meta: Meta, stmts: list[ast.Stmt]) -> ast.Script:
        return ast.Script(tuple(stmts), Loc(self.filename, 1, 1))

    @_meta
    def arg_literal(self, meta: Meta, children: list[Any]) -> ast.Expr:
        minus, lit = children
        return lit if minus is None else self._negate(lit, self._tok_loc(minus))

    @_meta
    def block(self, meta: Meta, stmts: list[ast.Stmt]) -> ast.Block:
        return ast.Block(tuple(stmts), self._loc(meta))

    @_meta
    def expr_stmt(self, meta: Meta, children: list[ast.Expr]) -> ast.ExprStmt:
        return ast.ExprStmt(children[0], self._loc(meta))

    @_meta
    def assign(self, meta: Meta, children: list[ast.Expr]) -> ast.Assign:
        *targets, value = children
        return ast.Assign(tuple(self._target(t) for t in targets), value, self._loc(meta))

    def _target(self, node: ast.Expr) -> ast.AssignTarget:
        """The grammar only lets names with indexing through; allow at most one indexing, as DAPHNE does."""
        if isinstance(node, ast.Ident):
            return ast.AssignTarget(node.name, None, node.loc)
        if isinstance(node, ast.ElementIndex):
            raise ParseError("a list element cannot be assigned (lists are values; use append/remove)", node.loc)
        assert isinstance(node, ast.Index)
        if not isinstance(node.obj, ast.Ident):
            raise ParseError("left indexing allows only one index per assignment target", node.loc)
        return ast.AssignTarget(node.obj.name, node, node.loc)

    @_meta
    def if_stmt(self, meta: Meta, children: list[Any]) -> ast.If:
        cond, then, *else_ = children
        return ast.If(cond, then, else_[0] if else_ else None, self._loc(meta))

    @_meta
    def while_stmt(self, meta: Meta, children: list[Any]) -> ast.While:
        cond, body = children
        return ast.While(cond, body, self._loc(meta))

    @_meta
    def do_while(self, meta: Meta, children: list[Any]) -> ast.DoWhile:
        body, cond = children
        return ast.DoWhile(body, cond, self._loc(meta))

    @_meta
    def for_stmt(self, meta: Meta, children: list[Any]) -> ast.For:
        var, start, stop, step, body = children
        return ast.For(str(var), start, stop, step, body, self._loc(meta))

    @_meta
    def parfor_stmt(self, meta: Meta, children: list[Any]) -> ast.ParFor:
        var, start, stop, step, body = children
        return ast.ParFor(str(var), start, stop, step, body, self._loc(meta))

    @_meta
    def func_def(self, meta: Meta, children: list[Any]) -> ast.FuncDef:
        name, params, returns, body = children
        return ast.FuncDef(str(name), params or (), returns or (), body, self._loc(meta))

    @_meta
    def params(self, meta: Meta, params: list[ast.Param]) -> tuple[ast.Param, ...]:
        return tuple(params)

    @_meta
    def param(self, meta: Meta, children: list[Any]) -> ast.Param:
        name, type_ = children
        return ast.Param(str(name), type_, self._loc(meta))

    @_meta
    def ret_types(self, meta: Meta, types: list[ast.TypeSpec]) -> tuple[ast.TypeSpec, ...]:
        return tuple(types)

    @_meta
    def data_type_spec(self, meta: Meta, children: list[Any]) -> ast.TypeSpec:
        data_type, value_type = children
        return ast.TypeSpec(data_type, value_type, self._loc(meta))

    @_meta
    def value_type_spec(self, meta: Meta, children: list[str]) -> ast.TypeSpec:
        return ast.TypeSpec(None, children[0], self._loc(meta))

    @_meta
    def data_type(self, meta: Meta, children: list[Token]) -> str:
        return str(children[0])

    value_type = data_type

    @_meta
    def return_stmt(self, meta: Meta, children: list[Any]) -> ast.Return:
        return ast.Return(children[0] or (), self._loc(meta))

    @_meta
    def import_stmt(self, meta: Meta, children: list[Any]) -> ast.Import:
        path, alias = children
        return ast.Import(path.value, alias.value if alias else None, self._loc(meta))

    # ------------------------------------------------------------------ operators

    @_meta
    def ternary(self, meta: Meta, children: list[ast.Expr]) -> ast.Ternary:
        cond, then, else_ = children
        return ast.Ternary(cond, then, else_, self._loc(meta))

    @_meta
    def binop(self, meta: Meta, children: list[Any]) -> ast.Binary:
        lhs, op, *kernel, rhs = children  # kernel: [ID or None] for `+ - * /`, [] for the others
        hint = str(kernel[0]) if kernel and kernel[0] is not None else None
        return ast.Binary(str(op), lhs, rhs, hint, self._loc(meta))

    @_meta
    def unary(self, meta: Meta, children: list[Any]) -> ast.Expr:
        op, operand = children
        if op == "-":
            return self._negate(operand, self._loc(meta))
        return ast.Unary("+", operand, self._loc(meta))

    def _negate(self, operand: ast.Expr, loc: Loc) -> ast.Expr:
        """`-x`, folding `-9223372036854775808` (whose operand alone overflows si64) into one literal."""
        for i, pending in enumerate(self._unnegated_min):
            if pending is operand:
                del self._unnegated_min[i]
                return ast.IntLit(-(_SI64_MAX + 1), "si64", loc)
        return ast.Unary("-", operand, loc)

    # ------------------------------------------------------------------ primaries and postfix

    @_meta
    def name_ref(self, meta: Meta, ids: list[Token]) -> str:
        return ".".join(ids)

    @_meta
    def ident(self, meta: Meta, children: list[str]) -> ast.Ident:
        return ast.Ident(children[0], self._loc(meta))

    @_meta
    def script_arg(self, meta: Meta, children: list[Token]) -> ast.ScriptArg:
        return ast.ScriptArg(str(children[0]), self._loc(meta))

    @_meta
    def index(self, meta: Meta, children: list[Any]) -> ast.Index | ast.ElementIndex:
        obj, sel = children
        if isinstance(sel, _Element):
            return ast.ElementIndex(obj, sel.index, self._loc(meta))
        rows, cols = sel
        return ast.Index(obj, rows, cols, self._loc(meta))

    @_meta
    def element_index(self, meta: Meta, children: list[Any]) -> _Element:
        return _Element(children[0])

    @_meta
    def indexing(self, meta: Meta, children: list[Any]) -> tuple[Any, Any]:
        rows, cols = children
        return rows, cols

    @_meta
    def range(self, meta: Meta, children: list[Any]) -> ast.Range:
        start, stop = children
        return ast.Range(start, stop, self._loc(meta))

    @_meta
    def bit_index(self, meta: Meta, children: list[Any]) -> ast.BitIndex:
        obj, rows, cols = children
        return ast.BitIndex(obj, rows, cols, self._loc(meta))

    @_meta
    def call(self, meta: Meta, children: list[Any]) -> ast.Call:
        name, kernel, args = children
        positional: list[ast.Expr] = []
        keywords: list[tuple[str, ast.Expr]] = []
        for arg in args or ():
            if isinstance(arg, _KwArg):
                keywords.append((arg.name, arg.value))
            elif keywords:
                raise ParseError("positional argument follows keyword argument", arg.loc)
            else:
                positional.append(arg)
        hint = str(kernel) if kernel is not None else None
        return ast.Call(name, tuple(positional), tuple(keywords), hint, self._loc(meta))

    @_meta
    def call_args(self, meta: Meta, args: list[Any]) -> list[Any]:
        return args

    @_meta
    def kwarg(self, meta: Meta, children: list[Any]) -> _KwArg:
        name, value = children
        return _KwArg(str(name), value, self._loc(meta))

    @_meta
    def cast(self, meta: Meta, children: list[Any]) -> ast.Cast:
        target, expr = children
        return ast.Cast(target, expr, self._loc(meta))

    @_meta
    def exprs(self, meta: Meta, exprs: list[ast.Expr]) -> tuple[ast.Expr, ...]:
        return tuple(exprs)

    @_meta
    def matrix_lit(self, meta: Meta, children: list[Any]) -> ast.MatrixLit:
        elems, shape = children
        rows, cols = shape if shape is not None else (None, None)
        return ast.MatrixLit(elems or (), rows, cols, shape is not None, self._loc(meta))

    @_meta
    def shape(self, meta: Meta, children: list[Any]) -> tuple[Any, Any]:
        rows, cols = children
        return rows, cols

    @_meta
    def frame_cols(self, meta: Meta, pairs: list[tuple[ast.Expr, ast.Expr]]) -> ast.FrameLitCols:
        labels, cols = zip(*pairs, strict=True)
        return ast.FrameLitCols(tuple(labels), tuple(cols), self._loc(meta))

    @_meta
    def frame_empty(self, meta: Meta, children: list[Any]) -> ast.FrameLitCols:
        return ast.FrameLitCols((), (), self._loc(meta))

    @_meta
    def frame_col(self, meta: Meta, children: list[ast.Expr]) -> tuple[ast.Expr, ast.Expr]:
        label, col = children
        return label, col

    @_meta
    def frame_rows(self, meta: Meta, children: list[Any]) -> ast.FrameLitRows:
        labels, *rows = children
        return ast.FrameLitRows(labels or (), tuple(rows), self._loc(meta))

    @_meta
    def row_mat(self, meta: Meta, children: list[Any]) -> tuple[ast.Expr, ...]:
        return children[0] or ()
