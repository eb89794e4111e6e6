"""Tests of the DaphneDSL frontend parser (grammar.lark + parser.py -> frontend.ast)."""

from __future__ import annotations

import dataclasses
import logging
import math
import struct

import pytest
from lark import Lark

from daphnec.dialects.errors import Loc, ParseError
from daphnec.frontend import ast
from daphnec.frontend.parser import _GRAMMAR_PATH, parse_file, parse_literal, parse_source

# ---------------------------------------------------------------------------------------------- helpers


def sx(node: object) -> str:
    """A compact s-expression of an AST node, so that tree shapes can be asserted in one line."""
    if node is None:
        return "_"
    if isinstance(node, tuple):
        return " ".join(sx(n) for n in node)
    match node:
        case ast.IntLit(value=v, vt=vt):
            return f"{v}{ {'si64': '', 'ui64': 'u', 'index': 'z'}[vt] }"
        case ast.FloatLit(value=v, vt=vt):
            return f"{v!r}{'f' if vt == 'f32' else ''}"
        case ast.BoolLit(value=v):
            return "true" if v else "false"
        case ast.StrLit(value=v):
            return repr(v)
        case ast.Ident(name=n):
            return n
        case ast.ScriptArg(name=n):
            return f"${n}"
        case ast.Unary(op=op, operand=x):
            return f"({op} {sx(x)})"
        case ast.Binary(op=op, lhs=l, rhs=r, kernel=k):
            return f"({op}{'::' + k if k else ''} {sx(l)} {sx(r)})"
        case ast.Ternary(cond=c, then=t, else_=e):
            return f"(? {sx(c)} {sx(t)} {sx(e)})"
        case ast.Range(start=a, stop=b):
            return f"{sx(a)}:{sx(b)}"
        case ast.Index(obj=o, rows=r, cols=c):
            return f"(idx {sx(o)} {sx(r)} {sx(c)})"
        case ast.BitIndex(obj=o, rows=r, cols=c):
            return f"(bits {sx(o)} {sx(r)} {sx(c)})"
        case ast.ElementIndex(obj=o, index=i):
            return f"(elem {sx(o)} {sx(i)})"
        case ast.Call(name=n, args=a, kwargs=kw, kernel=k):
            parts = [sx(x) for x in a] + [f"{key}={sx(v)}" for key, v in kw]
            return f"({n}{'::' + k if k else ''}{''.join(' ' + p for p in parts)})"
        case ast.Cast(target=t, expr=e):
            return f"(as.{t.data_type or ''}<{t.value_type or ''}> {sx(e)})"
        case ast.MatrixLit(elems=e, rows=r, cols=c, has_shape=s):
            return f"[{sx(e)}]" + (f"({sx(r)},{sx(c)})" if s else "")
        case ast.FrameLitCols(labels=ls, cols=cs):
            return "{" + ", ".join(f"{sx(lab)}: {sx(c)}" for lab, c in zip(ls, cs, strict=True)) + "}"
        case ast.FrameLitRows(labels=ls, rows=rs):
            return "{" + ", ".join(f"[{sx(r)}]" for r in (ls, *rs)) + "}"
    raise AssertionError(f"no s-expression for {node!r}")


def expr(src: str) -> ast.Expr:
    """Parse `src` as the right-hand side of an assignment."""
    stmt = parse_source(f"x = {src};", "t.daph").stmts[0]
    assert isinstance(stmt, ast.Assign)
    return stmt.value


def stmts(src: str) -> tuple[ast.Stmt, ...]:
    return parse_source(src, "t.daph").stmts


def parse_error(src: str) -> ParseError:
    with pytest.raises(ParseError) as info:
        parse_source(src, "t.daph")
    return info.value


def walk(node: object):
    """Every AST node below (and including) node."""
    if isinstance(node, tuple):
        for n in node:
            yield from walk(n)
    elif dataclasses.is_dataclass(node) and not isinstance(node, Loc):
        yield node
        for f in dataclasses.fields(node):
            yield from walk(getattr(node, f.name))


SAMPLE = """\
# A sample covering most of the language (about 50 lines).
import "lib/utils.daph";
import "lib/other.daph" as "o";

/* typed and untyped functions */
def square(x) { return x * x; }
def addMul(a: si64, b: matrix<f64>, c,) -> matrix<f64>, si64 {
    return a + b *::myMul c, a;
}
def noRet() -> si64 { return 1; };

X = rand(3, 4, 0.0, 1.0, 1, 42);
Y = [1, 2, 3, 4](2, );
Z = [1.5, -2e3, 3_000.5f](, 1);
F = {"a": [1, 2], "b": seq(from=0, to=1, inc=1)};
G = {["x", "y"], [1, 2.0], [3, 4.0]};
s = "tab\\there \\"quoted\\"";
n = $numRows;
big = -9223372036854775808;
u = 18446744073709551615u;
sz = 10z;
f = nan + inf - nanf * inff;
a, B[1:2, ] = addMul(1, X, 2);
X[0, :] = X[1, ] + 1;
X[, 2] = as.matrix<f64>(fill(7, 3, 1));
v = X[[sum(X, 0) > 0.5, ]][:2, 1:];
w = X[ [0, 2], ] @ t(X) ^ 2 % 3;
c = sum(X) > 1 && n != 2 || false_ == 0 ? 1 : 0;
for (i in 1:10:2) {
    print(i);
}
for (j in 10:1) print(j);
i = 0;
while (i < 3) i = i + 1;
do {
    i = i - 1;
} while (i > 0)
if (i == 0) {
    print("zero");
} else if (i < 0)
    print("neg");
else {
    print("pos");
};
k = o.square(3) + square::fast(2) + as.si64(2.7) + as.scalar<f64>(X[0, 0]);
m = -2 ^ 2 + +3;
{
    inner = 1; // a block scope
}
print(k, m);
"""


# ---------------------------------------------------------------------------------------------- grammar


def test_grammar_is_lalr_without_conflicts():
    """Lark resolves shift/reduce conflicts silently; building in debug mode logs them, so none may appear but the
    one DAPHNE's grammar has on purpose: `{};` at the start of a statement is an empty block and its optional `;`
    (shift), not the expression statement of an empty frame `{}` (reduce), as ANTLR tries the block first."""
    messages: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            messages.append(record.getMessage())

    logger = logging.getLogger("lark")
    handler, old_level = Collect(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        with open(_GRAMMAR_PATH) as f:
            Lark(
                f.read(),
                parser="lalr",
                lexer="basic",
                start=["script", "arg_literal"],
                debug=True,
                maybe_placeholders=True,
            )
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
    conflicts = [(m, messages[i + 1].strip()) for i, m in enumerate(messages) if "conflict" in m.lower()]
    assert conflicts == [
        ("Shift/Reduce conflict for terminal SEMICOLON: (resolving as shift)", "* <atom : LBRACE RBRACE>")
    ]


def test_sample_script_builds_only_ast_nodes():
    script = parse_source(SAMPLE, "sample.daph")
    assert len(script.stmts) == 32
    for node in walk(script):
        assert type(node).__module__ == "daphnec.frontend.ast"
        assert isinstance(node.loc, Loc) and node.loc.file == "sample.daph"
        for f in dataclasses.fields(node):
            value = getattr(node, f.name)
            assert not isinstance(value, list)
            if isinstance(value, str):
                assert type(value) is str  # no lark Token leaks into the AST


def test_every_node_class_is_documented_and_ends_with_loc():
    classes = [c for c in vars(ast).values() if isinstance(c, type) and c.__module__ == "daphnec.frontend.ast"]
    assert len(classes) == 33
    for cls in classes:
        assert cls.__doc__
        assert dataclasses.fields(cls)[-1].name == "loc"


def test_long_operator_chain_does_not_hit_the_recursion_limit():
    e = expr(" + ".join(["1"] * 5000))
    assert isinstance(e, ast.Binary) and e.op == "+"


# ---------------------------------------------------------------------------------------------- precedence


@pytest.mark.parametrize(
    "src, tree",
    [
        ("-2^2", "(^ (- 2) 2)"),
        ("2^3^2", "(^ (^ 2 3) 2)"),
        ("2^-1", "(^ 2 (- 1))"),
        ("a+b*c", "(+ a (* b c))"),
        ("(a+b)*c", "(* (+ a b) c)"),
        ("a-b-c", "(- (- a b) c)"),
        ("a/b/c", "(/ (/ a b) c)"),
        ("a*b/c", "(/ (* a b) c)"),
        ("a%b*c", "(* (% a b) c)"),
        ("a*b%c", "(* a (% b c))"),
        ("a^b%c", "(% (^ a b) c)"),
        ("A@B^2", "(^ (@ A B) 2)"),
        ("2^A@B", "(^ 2 (@ A B))"),
        ("-A@B", "(@ (- A) B)"),
        ("A@B@C", "(@ (@ A B) C)"),
        ("a==b&&c||d", "(|| (&& (== a b) c) d)"),
        ("a||b&&c", "(|| a (&& b c))"),
        ("a<b==c", "(== (< a b) c)"),
        ("a<=b+1", "(<= a (+ b 1))"),
        ("a>=b!=c>d", "(> (!= (>= a b) c) d)"),
        ("a ? b : c", "(? a b c)"),
        ("a ? b : c ? d : e", "(? (? a b c) d e)"),
        ("a ? b ? c : d : e", "(? a (? b c d) e)"),
        ("c ? a + 1 : b || d", "(? c (+ a 1) (|| b d))"),
        ("-X[1, 2]", "(- (idx X 1 2))"),
        ("1 - -1", "(- 1 (- 1))"),
        ("+a - +b", "(- (+ a) (+ b))"),
        ("--a", "(- (- a))"),
    ],
)
def test_precedence_and_associativity(src: str, tree: str):
    assert sx(expr(src)) == tree


# ---------------------------------------------------------------------------------------------- literals


@pytest.mark.parametrize(
    "src, value, vt",
    [
        ("0", 0, "si64"),
        ("123", 123, "si64"),
        ("123l", 123, "si64"),
        ("5u", 5, "ui64"),
        ("5ull", 5, "ui64"),
        ("7z", 7, "index"),
        ("1_000_000", 1000000, "si64"),
        ("1'000'000", 1000000, "si64"),
        ("9223372036854775807", 2**63 - 1, "si64"),
        ("18446744073709551615u", 2**64 - 1, "ui64"),
        ("18446744073709551615z", 2**64 - 1, "index"),
    ],
)
def test_integer_literals(src: str, value: int, vt: str):
    lit = expr(src)
    assert isinstance(lit, ast.IntLit) and (lit.value, lit.vt) == (value, vt)


@pytest.mark.parametrize(
    "src, value, vt",
    [
        ("1.5", 1.5, "f64"),
        ("0.25", 0.25, "f64"),
        ("1e3", 1000.0, "f64"),
        ("1.5e-3", 0.0015, "f64"),
        ("2E+2", 200.0, "f64"),
        ("0e0", 0.0, "f64"),
        ("1_000.000_5", 1000.0005, "f64"),
        ("1.5f", 1.5, "f32"),
        ("1e2f", 100.0, "f32"),
        ("0.1f", struct.unpack("f", struct.pack("f", 0.1))[0], "f32"),
        ("inf", math.inf, "f64"),
        ("inff", math.inf, "f64"),
    ],
)
def test_float_literals(src: str, value: float, vt: str):
    lit = expr(src)
    assert isinstance(lit, ast.FloatLit) and (lit.value, lit.vt) == (value, vt)


@pytest.mark.parametrize("src", ["nan", "nanf"])
def test_nan_literals_are_f64(src: str):
    lit = expr(src)
    assert isinstance(lit, ast.FloatLit) and math.isnan(lit.value) and lit.vt == "f64"


def test_literals_have_no_sign():
    assert sx(expr("-inf")) == "(- inf)"
    assert sx(expr("-5u")) == "(- 5u)"


def test_min_si64_is_folded_under_unary_minus():
    lit = expr("-9223372036854775808")
    assert isinstance(lit, ast.IntLit) and (lit.value, lit.vt) == (-(2**63), "si64")
    assert lit.loc == Loc("t.daph", 1, 5)
    assert sx(expr("-9223372036854775808 + 1")) == "(+ -9223372036854775808 1)"


def test_bool_and_string_literals():
    assert sx(expr("true && false")) == "(&& true false)"
    lit = expr(r'"a\tb\n\"q\"\\ \b\f\r"')
    assert isinstance(lit, ast.StrLit) and lit.value == 'a\tb\n"q"\\ \b\f\r'
    assert expr('"# not // a /* comment"').value == "# not // a /* comment"
    assert expr('""').value == ""


def test_keywords_are_not_identifiers_but_prefixes_are():
    assert sx(expr("matrix_1 + iffy + inf2 + nanx + true_")) == "(+ (+ (+ (+ matrix_1 iffy) inf2) nanx) true_)"


def test_script_arguments():
    assert sx(expr("$n + $alpha")) == "(+ $n $alpha)"


# ---------------------------------------------------------------------------------------------- matrices and frames


@pytest.mark.parametrize(
    "src, tree",
    [
        ("[1, 2, 3]", "[1 2 3]"),
        ("[]", "[]"),
        ("[1, 2, 3, 4](2, )", "[1 2 3 4](2,_)"),
        ("[1, 2, 3, 4](, 2)", "[1 2 3 4](_,2)"),
        ("[1, 2, 3, 4](2, 2)", "[1 2 3 4](2,2)"),
        ("[1, 2](,)", "[1 2](_,_)"),
        ("[1, sqrt(3), -x](n, 1)", "[1 (sqrt 3) (- x)](n,1)"),
        ("[true, 10, 5.5]", "[true 10 5.5]"),
    ],
)
def test_matrix_literals(src: str, tree: str):
    assert sx(expr(src)) == tree


def test_frame_literal_column_form():
    frame = expr('{"a": [1, 2], "b": [3.0, 4.0]}')
    assert isinstance(frame, ast.FrameLitCols)
    assert sx(frame) == "{'a': [1 2], 'b': [3.0 4.0]}"


def test_frame_literal_row_form():
    frame = expr('{["a", "b"], [1, 2.0], [3, 4.0]}')
    assert isinstance(frame, ast.FrameLitRows)
    assert sx(frame) == "{['a' 'b'], [1 2.0], [3 4.0]}"
    assert sx(expr('{["a"]}')) == "{['a']}"


def test_frame_literal_as_expression_statement_and_block_with_matrix_statement():
    frame, block = stmts('{["a"], [1]}; { [1, 2]; }')
    assert isinstance(frame, ast.ExprStmt) and isinstance(frame.expr, ast.FrameLitRows)
    assert isinstance(block, ast.Block) and sx(block.stmts[0].expr) == "[1 2]"


# ---------------------------------------------------------------------------------------------- indexing


@pytest.mark.parametrize(
    "src, tree",
    [
        ("X[1, 2]", "(idx X 1 2)"),
        ("X[1:3, ]", "(idx X 1:3 _)"),
        ("X[, 2:]", "(idx X _ 2:_)"),
        ("X[:, :3]", "(idx X _:_ _:3)"),
        ("X[, ]", "(idx X _ _)"),
        ('F[, "revenue"]', "(idx F _ 'revenue')"),
        ("X[ [5, 1], ]", "(idx X [5 1] _)"),
        ("X[a ? 1 : 2 : n, ]", "(idx X (? a 1 2):n _)"),
        ("X[i, (j + 2*sum(Y)):]", "(idx X i (+ j (* 2 (sum Y))):_)"),
        ("X[[b, ]]", "(bits X b _)"),
        ("X[[, c]]", "(bits X _ c)"),
        ("X[[b, c]]", "(bits X b c)"),
        ("X[[ [0, 1], ]]", "(bits X [0 1] _)"),
        ("X[[b, ]][1, 2]", "(idx (bits X b _) 1 2)"),
        ("X[1, ][[b, ]]", "(bits (idx X 1 _) b _)"),
        ("X[1, ][, 2]", "(idx (idx X 1 _) _ 2)"),
        ("f(x)[1, 2]", "(idx (f x) 1 2)"),
        ("(X + 1)[1, 2]", "(idx (+ X 1) 1 2)"),
        ("[1, 2][0, ]", "(idx [1 2] 0 _)"),
        ("L[0]", "(elem L 0)"),
        ("L[i + 1][2, ]", "(idx (elem L (+ i 1)) 2 _)"),
        ("f(x)[0]", "(elem (f x) 0)"),
    ],
)
def test_right_indexing(src: str, tree: str):
    assert sx(expr(src)) == tree


def test_left_indexing():
    (assign,) = stmts("X[1:3, 2] = M;")
    assert isinstance(assign, ast.Assign)
    (target,) = assign.targets
    assert target.name == "X" and sx(target.index) == "(idx X 1:3 2)" and sx(assign.value) == "M"
    assert sx(stmts("X[, 2] = M;")[0].targets[0].index) == "(idx X _ 2)"
    assert sx(stmts("X[1, ] = M;")[0].targets[0].index) == "(idx X 1 _)"
    assert sx(stmts("X[, ] = M;")[0].targets[0].index) == "(idx X _ _)"


def test_multi_assignment_with_dotted_and_indexed_targets():
    (assign,) = stmts("a, B[1, :], c.d = f(x);")
    assert [(t.name, sx(t.index)) for t in assign.targets] == [("a", "_"), ("B", "(idx B 1 _:_)"), ("c.d", "_")]
    assert sx(assign.value) == "(f x)"


# ---------------------------------------------------------------------------------------------- casts, calls, kernels


@pytest.mark.parametrize(
    "src, data_type, value_type",
    [
        ("as.matrix(x)", "matrix", None),
        ("as.frame(x)", "frame", None),
        ("as.scalar(x)", "scalar", None),
        ("as.f32(x)", None, "f32"),
        ("as.ui8(x)", None, "ui8"),
        ("as.matrix<f64>(x)", "matrix", "f64"),
        ("as.scalar<si64>(x)", "scalar", "si64"),
    ],
)
def test_casts(src: str, data_type: str | None, value_type: str | None):
    cast = expr(src)
    assert isinstance(cast, ast.Cast) and sx(cast.expr) == "x"
    assert (cast.target.data_type, cast.target.value_type) == (data_type, value_type)


def test_calls_with_keyword_arguments():
    call = expr("seq(from=0, to=6, inc=2)")
    assert isinstance(call, ast.Call) and call.args == () and [k for k, _ in call.kwargs] == ["from", "to", "inc"]
    assert sx(expr("f()")) == "(f)"
    assert sx(expr("rand(2, 3, min=0.0, max=1.0)")) == "(rand 2 3 min=0.0 max=1.0)"
    assert sx(expr("lib.sub.f(x, y)")) == "(lib.sub.f x y)"
    assert sx(expr("a.b + 1")) == "(+ a.b 1)"


def test_kernel_hints():
    assert sx(expr("sum::myKernel(X)")) == "(sum::myKernel X)"
    assert sx(expr("ns.f::k(X)")) == "(ns.f::k X)"
    assert sx(expr("a *::myMul b + c")) == "(+ (*::myMul a b) c)"
    assert sx(expr("a /::d b -::s c")) == "(-::s (/::d a b) c)"
    assert sx(expr("a +::k b")) == "(+::k a b)"


# ---------------------------------------------------------------------------------------------- statements


def test_functions_typed_untyped_and_multi_return():
    f, g, h = stmts(
        "def f(a, b) { return a + b; }\n"
        "def g(a: si64, b: matrix<f64>, c: matrix, d,) -> matrix<f64>, si64 { return b, a; }\n"
        "def h() { return; };\n"
    )
    assert isinstance(f, ast.FuncDef) and [p.name for p in f.params] == ["a", "b"] and f.returns == ()
    assert all(p.type is None for p in f.params)
    types = [(p.name, p.type and (p.type.data_type, p.type.value_type)) for p in g.params]
    assert types == [("a", (None, "si64")), ("b", ("matrix", "f64")), ("c", ("matrix", None)), ("d", None)]
    assert [(t.data_type, t.value_type) for t in g.returns] == [("matrix", "f64"), (None, "si64")]
    assert sx(g.body.stmts[0].values) == "b a"
    assert h.params == () and isinstance(h.body.stmts[0], ast.Return) and h.body.stmts[0].values == ()


def test_return_forms():
    body = stmts("def f() { return; return x; return x, y + 1; }")[0].body.stmts
    assert [sx(r.values) for r in body] == ["", "x", "x (+ y 1)"]


def test_for_loops_with_and_without_step():
    with_step, without, negative = stmts("for (i in 1:10:2) x; for (j in a:b) { } for(k in 10:1:-3) y;")
    assert isinstance(with_step, ast.For) and (with_step.var, sx(with_step.step)) == ("i", "2")
    assert (sx(with_step.start), sx(with_step.stop)) == ("1", "10")
    assert without.var == "j" and without.step is None and isinstance(without.body, ast.Block)
    assert sx(negative.step) == "(- 3)"


def test_while_and_do_while_with_and_without_semicolon():
    w, d1, d2, d3 = stmts("while (i < 3) i = i + 1; do { x; } while (c); do x; while (c) do { } while (d)")
    assert isinstance(w, ast.While) and sx(w.cond) == "(< i 3)"
    assert isinstance(d1, ast.DoWhile) and isinstance(d1.body, ast.Block) and sx(d1.cond) == "c"
    assert isinstance(d2, ast.DoWhile) and isinstance(d2.body, ast.ExprStmt)
    assert isinstance(d3, ast.DoWhile) and sx(d3.cond) == "d"


def test_if_else_and_dangling_else_binds_to_nearest_if():
    (outer,) = stmts("if (a) if (b) x = 1; else x = 2;")
    assert isinstance(outer, ast.If) and outer.else_ is None
    assert isinstance(outer.then, ast.If) and isinstance(outer.then.else_, ast.Assign)
    (chain,) = stmts("if (a) x; else if (b) y; else z;")
    assert isinstance(chain.else_, ast.If) and isinstance(chain.else_.else_, ast.ExprStmt)


def test_blocks_with_optional_semicolon_and_nesting():
    block, after = stmts("{ a = 1; { b = 2; }; }; c = 3;")
    assert isinstance(block, ast.Block) and isinstance(block.stmts[1], ast.Block)
    assert isinstance(after, ast.Assign)
    assert stmts("{}")[0].stmts == ()


def test_imports():
    plain, aliased = stmts('import "lib/a.daph"; import "b.daphne" as "bee";')
    assert isinstance(plain, ast.Import) and (plain.path, plain.alias) == ("lib/a.daph", None)
    assert (aliased.path, aliased.alias) == ("b.daphne", "bee")


def test_comments_of_all_kinds():
    src = "# hash\nx = 1; // slashes\n/* block\n spanning */ y = 2 /* inline */ + 3;\nz = a // b\n;"
    x, y, z = stmts(src)
    assert sx(y.value) == "(+ 2 3)" and sx(z.value) == "a"
    assert stmts("/**/ /***/ /* a * b / c */") == ()


def test_empty_script_and_expression_statement():
    assert stmts("") == () and stmts("  \n# only a comment\n") == ()
    (s,) = stmts("print(1);")
    assert isinstance(s, ast.ExprStmt) and sx(s.expr) == "(print 1)"


# ---------------------------------------------------------------------------------------------- locations


def test_locations_of_nodes():
    src = "x = 1;\n  if (x > 0) {\n    y = f(x) + -2 * z[1, 2];\n  }\ndef g(a: si64) { return a; }\n"
    assign, if_, func = stmts(src)
    assert assign.loc == Loc("t.daph", 1, 1) and assign.value.loc == Loc("t.daph", 1, 5)
    assert if_.loc == Loc("t.daph", 2, 3) and if_.cond.loc == Loc("t.daph", 2, 7)
    assert if_.then.loc == Loc("t.daph", 2, 14)
    inner = if_.then.stmts[0]
    assert inner.loc == Loc("t.daph", 3, 5) and inner.targets[0].loc == Loc("t.daph", 3, 5)
    add = inner.value
    assert add.loc == Loc("t.daph", 3, 9)  # binary ops are located at their left operand
    assert add.lhs.loc == Loc("t.daph", 3, 9)  # the call
    mul = add.rhs
    assert mul.loc == Loc("t.daph", 3, 16) and mul.lhs.loc == Loc("t.daph", 3, 16)  # the unary minus
    assert mul.rhs.loc == Loc("t.daph", 3, 21) and mul.rhs.rows.loc == Loc("t.daph", 3, 23)
    assert func.loc == Loc("t.daph", 5, 1) and func.params[0].loc == Loc("t.daph", 5, 7)
    assert func.params[0].type.loc == Loc("t.daph", 5, 10)
    assert func.body.stmts[0].loc == Loc("t.daph", 5, 18)


def test_location_of_parenthesized_lhs_is_the_parenthesis():
    e = expr("(a + b) * c")
    assert e.loc == Loc("t.daph", 1, 5) and e.lhs.loc == Loc("t.daph", 1, 6)


def test_script_location_and_file_name():
    script = parse_source("x = 1;", "dir/s.daph")
    assert script.loc == Loc("dir/s.daph", 1, 1) and script.stmts[0].loc.file == "dir/s.daph"


# ------------------------------------------------------------------------------------- parse_literal / parse_file


@pytest.mark.parametrize(
    "src, tree",
    [
        ("10", "10"),
        ("-10", "(- 10)"),
        ("1.5", "1.5"),
        ("-1.2e5f", "(- 120000.0f)"),
        ('"x y"', "'x y'"),
        ('"\\"q\\""', "'\"q\"'"),
        ("true", "true"),
        ("5u", "5u"),
        (" 7 ", "7"),
        ("-9223372036854775808", "-9223372036854775808"),
    ],
)
def test_parse_literal_accepts(src: str, tree: str):
    assert sx(parse_literal(src, "<args>")) == tree


@pytest.mark.parametrize("src", ["10+10", "sin(1)", "--1", "", "x", "[1, 2]", "1 2", "$a", "(1)"])
def test_parse_literal_rejects(src: str):
    with pytest.raises(ParseError, match="expected a single literal"):
        parse_literal(src, "<args>")


def test_parse_literal_reports_lexical_problems_specifically():
    with pytest.raises(ParseError, match="a digit is required after '.'"):
        parse_literal("1.", "<args>")
    with pytest.raises(ParseError, match="out of range for si64"):
        parse_literal("9223372036854775808", "<args>")


def test_parse_file(tmp_path):
    path = tmp_path / "s.daph"
    path.write_text("print(1);\n", encoding="utf-8")
    script = parse_file(str(path))
    assert script.stmts[0].loc == Loc(str(path), 1, 1)
    with pytest.raises(ParseError, match="cannot read script file"):
        parse_file(str(tmp_path / "missing.daph"))


# ---------------------------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "src, line, col, message",
    [
        ("x = (1 + );", 1, 10, "syntax error: unexpected ')', expected an expression"),
        ("x = 1 2;", 1, 7, "syntax error: unexpected number '2', expected ';' or an operator"),
        ("x = ;", 1, 5, "syntax error: unexpected ';', expected an expression"),
        ("print(1", 1, 8, "syntax error: unexpected end of file, expected ')', ',' or an operator"),
        ("x = 1\n", 2, 1, "syntax error: unexpected end of file, expected ';' or an operator"),
        ("\n\n   y = ;", 3, 8, "syntax error: unexpected ';', expected an expression"),
        ("if (x) else y;", 1, 8, "syntax error: unexpected 'else', expected a statement"),
        ("def f( { }", 1, 8, "syntax error: unexpected '{', expected ')' or an identifier"),
        ("def if() { }", 1, 5, "syntax error: unexpected 'if', expected an identifier"),
        ("x = matrix;", 1, 5, "syntax error: unexpected 'matrix', expected an expression"),
        ("x = as.foo(1);", 1, 8, "syntax error: unexpected identifier 'foo', expected a type"),
        ("def f(a: matrix<matrix>) {}", 1, 17, "syntax error: unexpected 'matrix', expected a value type"),
        ("for (i in 1) x;", 1, 12, "syntax error: unexpected ')', expected ':'"),
        ("x = 1 ! 2;", 1, 7, "syntax error: unexpected character '!'"),
        ("x = {,};", 1, 6, "syntax error: unexpected ',', expected '}' or an expression"),
        (
            "X[, [1, 2]];",
            1,
            10,
            "syntax error: unexpected ']]', expected ',' or ']' "
            "(write '] ]' to close a matrix literal and an indexing)",
        ),
        ("X[[1, 2], 1];", 1, 8, "syntax error: unexpected ']', expected ']]'"),
        ('x = "abc', 1, 5, "unterminated string literal"),
        ('x = "abc\\";', 1, 5, "unterminated string literal"),
        ("x = 1;\n  /* never closed", 2, 3, "unterminated block comment"),
        ('x = "a\\qb";', 1, 7, "invalid escape sequence '\\q' in string literal"),
        ('x = "a\n b\\x";', 2, 3, "invalid escape sequence '\\x' in string literal"),
        ("x = 1.;", 1, 5, "invalid numeric literal '1.': a digit is required after '.'"),
        ("x = 1.e5;", 1, 5, "invalid numeric literal '1.e5': a digit is required after '.'"),
        ("x = .5;", 1, 5, "invalid numeric literal '.5': a digit is required before '.'"),
        ("x = 1__0;", 1, 5, "invalid numeric literal '1__0': a digit separator must stand between two digits"),
        ("x = 1_;", 1, 5, "invalid numeric literal '1_': a digit separator must stand between two digits"),
        ("x = 01;", 1, 5, "invalid numeric literal '01': leading zeros are not allowed"),
        (
            "x = 1e05;",
            1,
            5,
            "invalid numeric literal '1e05': malformed exponent (no separators or leading zeros allowed)",
        ),
        ("x = 12abc;", 1, 5, "invalid numeric literal '12abc'"),
        ("x = 9223372036854775808;", 1, 5, "integer literal '9223372036854775808' is out of range for si64"),
        ("x = 1 - 9223372036854775808;", 1, 9, "integer literal '9223372036854775808' is out of range for si64"),
        ("x = 18446744073709551616u;", 1, 5, "integer literal '18446744073709551616u' is out of range for ui64"),
        ("x = 1e400;", 1, 5, "float literal '1e400' is out of range for f64"),
        ("x = 1e39f;", 1, 5, "float literal '1e39f' is out of range for f32"),
        ("f(a=1, 2);", 1, 8, "positional argument follows keyword argument"),
        ("X[1, 2][3, 4] = 1;", 1, 1, "left indexing allows only one index per assignment target"),
        ("f(x) = 1;", 1, 6, "syntax error: unexpected '=', expected ';' or an operator"),
    ],
)
def test_syntax_errors(src: str, line: int, col: int, message: str):
    error = parse_error(src)
    assert (error.message, error.loc) == (message, Loc("t.daph", line, col))
    assert error.code == 1


def test_error_rendering():
    assert parse_error("x = ;").render() == "t.daph:1:5: error: syntax error: unexpected ';', expected an expression"


# ---------------------------------------------------------------------------------------------- shipped tables


def test_shipped_tables_match_the_grammar() -> None:
    """grammar.tables.json (the LALR tables a first run loads instead of building them) was built from this grammar
    with these options; after changing either, rebuild it with `daphnec.frontend.parser.write_tables()`."""
    from daphnec.frontend.parser import _LARK_OPTIONS
    from daphnec.runtime.cache_files import shipped_tables_current

    assert shipped_tables_current(_GRAMMAR_PATH, _LARK_OPTIONS), "run daphnec.frontend.parser.write_tables()"


def test_shipped_tables_parse_like_a_freshly_built_parser(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """The parser loaded from the shipped tables and one built from the grammar give the same AST."""
    from daphnec.frontend import parser as p

    text = 'x = [1, 2.5f, 3]; /* c */ if (x[0, 0] > 1) { print("a" + 1); } else { y = t(x) @ x; }\n'
    monkeypatch.setattr(p, "_lark", None)
    shipped = repr(parse_source(text, "a.daph"))  # AST nodes compare by identity: their reprs show every field
    monkeypatch.setenv("DAPHNEC_NO_SHIPPED_TABLES", "1")
    monkeypatch.setenv("DAPHNEC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(p, "_lark", None)
    assert repr(parse_source(text, "a.daph")) == shipped  # the whole AST, source locations included
    assert list((tmp_path / "cache").glob("parser-*.json"))  # built, not loaded


def test_damaged_shipped_tables_fall_back_to_building(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """Shipped tables that match the grammar's digest but do not load (a bad edit, a bad checkout) are ignored:
    the parser is built from the grammar (and stored in the cache folder) instead."""
    import json

    from daphnec.frontend import parser as p
    from daphnec.runtime import cache_files

    shipped = json.loads(cache_files.shipped_tables_path(_GRAMMAR_PATH).read_text())
    shipped["tables"] = {"data": {}, "memo": {}}
    bad = tmp_path / "bad.tables.json"
    bad.write_text(json.dumps(shipped))
    monkeypatch.setattr(cache_files, "shipped_tables_path", lambda _grammar: bad)
    monkeypatch.setenv("DAPHNEC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(p, "_lark", None)
    assert sx(parse_source("x = 1 + 2;", "a.daph").stmts[0].value) == "(+ 1 2)"
    assert list((tmp_path / "cache").glob("parser-*.json"))
