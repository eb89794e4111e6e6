"""The SQL parser (frontend/sql/parser.py): DAPHNE's lexical rules, precedence, and label text (ANTLR getText:
the tokens of an item joined without whitespace, in the user's case)."""

from __future__ import annotations

import pytest

from daphnec.frontend.sql import ast
from daphnec.frontend.sql.parser import SqlError, decode_string, parse_query


def item(query: str, i: int = 0) -> ast.Expr:
    return parse_query(query).items[i].expr


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("t.a", "t.a"),
        ("sum(t.a)", "sum(t.a)"),
        ("SUM( t.a )", "SUM(t.a)"),
        ("1*2.5", "1*2.5"),
        ("1 * s.b", "1*s.b"),
        ("t.a BETWEEN 1 AND 3", "t.aBETWEEN1AND3"),
        ("t.a between 1 and 3", "t.abetween1and3"),
        ("'abc'", "'abc'"),
        ('"x y"', '"x y"'),
        ("( t.a + 1 ) * 2", "(t.a+1)*2"),
        ("t.a <> 2", "t.a<>2"),
        ("2*-3", "2*-3"),
        ("t . a", "t.a"),
    ],
)
def test_label_text(text: str, label: str) -> None:
    assert item(f"SELECT {text} FROM t").text == label


def test_literals() -> None:
    lits = parse_query("SELECT 7, -7, 1., .5, -0.25, 'a', \"b\" FROM t").items
    assert [(x.expr.value, x.expr.vt) for x in lits] == [  # type: ignore[union-attr]
        (7, "si64"), (-7, "si64"), (1.0, "f64"), (0.5, "f64"), (-0.25, "f64"), ("a", "str"), ("b", "str"),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("token", "value"),
    [
        ("'a\\tb'", "a\tb"),
        ("'it\\'s'", "it's"),
        ('"say \\"hi\\""', 'say "hi"'),
        ("'back\\\\slash'", "back\\slash"),
        ("'\\\\n'", "\\\n"),  # DAPHNE's replacement order: `\n` is replaced before `\\`
    ],
)
def test_string_escapes(token: str, value: str) -> None:
    assert decode_string(token) == value
    assert item(f"SELECT {token} FROM t").value == value  # type: ignore[union-attr]


def test_minus_belongs_to_the_number() -> None:
    e = item("SELECT t.a - 1 FROM t")
    assert isinstance(e, ast.Binary) and e.op == "-"
    with pytest.raises(SqlError, match="unexpected '-1'") as err:
        parse_query("SELECT t.a-1 FROM t")
    assert err.value.offset == 10


def test_keywords_are_case_insensitive_and_reserved() -> None:
    q = parse_query("sElEcT DISTINCT x.a aS y FrOm t As x WhErE x.a > 1 GrOuP bY x.a oRdEr By x.a DeSc")
    assert q.distinct == 7 and q.items[0].alias == "y" and q.tables[0].alias == "x" and not q.order_by[0].asc
    for kw in ("desc", "order", "left", "union", "minus", "only", "Group"):
        with pytest.raises(SqlError, match="reserved keyword"):
            parse_query(f"SELECT t.{kw} FROM t")


def test_identifiers_are_case_sensitive_and_not_keywords() -> None:
    e = item("SELECT T.Selection FROM T")
    assert isinstance(e, ast.Ident) and (e.qualifier, e.name) == ("T", "Selection")
    assert isinstance(item("SELECT t.limit FROM t"), ast.Ident)  # LIMIT, NOT, IN, ... are not keywords


def test_precedence() -> None:
    e = item("SELECT t.a + t.b * 2 > 3 FROM t")
    assert isinstance(e, ast.Binary) and e.op == ">" and e.lhs.op == "+" and e.lhs.rhs.op == "*"  # type: ignore[union-attr]
    w = parse_query("SELECT t.a FROM t WHERE t.a = 1 OR t.b = 2 AND t.c BETWEEN 1 AND 2 AND t.d").where
    assert isinstance(w, ast.Binary) and w.op == "OR"
    assert isinstance(w.rhs, ast.Binary) and w.rhs.op == "AND" and isinstance(w.rhs.lhs, ast.Binary)
    assert isinstance(w.rhs.lhs.rhs, ast.Between)  # type: ignore[union-attr]
    p = parse_query("SELECT t.a FROM t WHERE (t.a = 1 OR t.b = 2) AND (t.c)").where
    assert isinstance(p, ast.Binary) and p.op == "AND" and isinstance(p.lhs, ast.Paren)


def test_from_join_group_order() -> None:
    q = parse_query(
        "SELECT * FROM a, b AS x, c y JOIN d ON a.k = d.k AND a.j < d.j INNER JOIN e ON d.k <> e.k "
        "GROUP BY a.k, * HAVING sum(d.v) > 1 ORDER BY a.k, x.j DESC;"
    )
    assert [(t.name, t.alias) for t in q.tables] == [("a", None), ("b", "x"), ("c", "y")]
    assert [len(j.conds) for j in q.joins] == [2, 1]
    assert [c.op for c in q.joins[0].conds] == ["=", "<"]
    assert [k.text for k in q.group_by] == ["a.k", "*"]
    assert isinstance(q.having, ast.Binary) and [o.asc for o in q.order_by] == [True, False]


@pytest.mark.parametrize(
    ("query", "offset", "fragment"),
    [
        ("SELECT t.a FROM t LIMIT 3", 24, "LIMIT is not supported"),
        ("SELECT t.a FROM t WHERE t.a IN (1, 2)", 28, "IN is not supported"),
        ("SELECT t.a FROM t; SELECT t.a FROM t", 19, "exactly one SELECT"),
        ("SELECT t.a FROM t -- c", 18, "comments"),
        ("SELECT t.a @ 1 FROM t", 11, "token recognition error at: '@'"),
        ("SELECT 'open FROM t", 7, "token recognition error at: '''"),
        ("SELECT t.a FROM", 15, "unexpected end"),
        ("WITH x AS (SELECT t.a FROM t) SELECT x.a FROM x", 0, "WITH is not supported"),
        ("SELECT t.a FROM t NATURAL JOIN u", 18, "NATURAL is not supported"),
        ("SELECT t.a FROM t JOIN u USING (k)", 25, "USING is not supported"),
    ],
)
def test_syntax_errors(query: str, offset: int, fragment: str) -> None:
    with pytest.raises(SqlError) as err:
        parse_query(query)
    assert err.value.offset == offset and fragment in err.value.message, err.value.message
