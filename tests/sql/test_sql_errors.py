"""Bad SQL: DAPHNE's exit code (1 for a non-constant query or view name, 2 for syntax and translation errors and
labels known at compile time, 3 for problems only seen at run time) and the location of the offending SQL token
in the script (`bad.daph:LINE:COL`, through line breaks and escape sequences of the query literal). Most cases
run in-process; a few run the real CLI for the whole contract (one stderr line, no traceback)."""

from __future__ import annotations

from pathlib import Path

import pytest

from daphnec.dialects.errors import DaphneError
from daphnec.runtime.config import DaphneConfig
from daphnec.tools.driver import compile_script

VIEW = 't = createFrame([1, 2, 3], [0.5, 1.5, 2.5], ["x", "y", "z"], "a", "b", "s");\nregisterView("t", t);\n'


def q(query: str) -> str:
    """A script whose line 3 is `print(sql("<query>"));` (the query starts at column 12)."""
    return VIEW + f'print(sql("{query}"));\n'


# (name, script, exit code, "line:col", message fragment)
CASES: list[tuple[str, str, int, str, str]] = [
    # --- parse errors (exit 1): the builtins' constant-string rule ---
    (
        "query_not_constant",
        VIEW + 'r = "SELECT ";\nprint(sql(r + "t.a FROM t"));',
        1,
        "4:7",
        "SqlOp requires a SQL query",
    ),
    ("view_name_not_constant", VIEW + 'n = "v" + "w";\nregisterView(n, t);', 1, "4:1", "registerView requires a view"),
    ("sql_arity", VIEW + 'print(sql("SELECT t.a FROM t", 1));', 1, "3:7", "'sql' expects 1 argument(s)"),
    # --- syntax and lexer errors (exit 2), at the offending token ---
    ("minus_belongs_to_number", q("SELECT t.a-1 FROM t"), 2, "3:22", "unexpected '-1'"),
    ("limit", q("SELECT t.a FROM t LIMIT 2"), 2, "3:36", "LIMIT is not supported by DAPHNE's SQL"),
    ("reserved_keyword_column", q("SELECT t.desc FROM t"), 2, "3:21", "'desc' is a reserved keyword"),
    ("comment", q("SELECT t.a FROM t -- all"), 2, "3:30", "comments are not supported"),
    ("bad_character", q("SELECT t.a # 1 FROM t"), 2, "3:23", "token recognition error at: '#'"),
    ("two_statements", q("SELECT t.a FROM t; SELECT t.b FROM t"), 2, "3:31", "exactly one SELECT statement"),
    ("no_from", q("SELECT 1"), 2, "3:20", "unexpected end of the query"),
    ("left_join", q("SELECT t.a FROM t LEFT JOIN t ON t.a = t.a"), 2, "3:30", "LEFT is not supported"),
    ("keyword_as_table", q("SELECT t.a FROM order"), 2, "3:28", "'order' is a reserved keyword"),
    ("literal_in_on", q("SELECT t.a FROM t AS x JOIN t AS y ON x.a = 1"), 2, "3:56", "unexpected '1'"),
    ("or_in_on", q("SELECT * FROM t AS x JOIN t AS y ON x.a = y.a OR x.b = y.b"), 2, "3:58", "unexpected 'OR'"),
    ("having_without_group", q("SELECT t.a FROM t HAVING t.a > 1"), 2, "3:30", "unexpected 'HAVING'"),
    ("subquery", q("SELECT t.a FROM (SELECT t.a FROM t)"), 2, "3:28", "unexpected '('"),
    ("union", q("SELECT t.a FROM t UNION SELECT t.a FROM t"), 2, "3:30", "UNION is not supported"),
    ("clause_order", q("SELECT t.a FROM t ORDER BY t.a WHERE t.a > 1"), 2, "3:43", "unexpected 'WHERE'"),
    ("bad_escape", q("SELECT 'a\\\\x' FROM t"), 2, "3:19", "token recognition error"),
    # --- translation errors (exit 2) ---
    ("unknown_table", q("SELECT u.a FROM u"), 2, "3:28", "Frame u referenced before assignment"),
    ("unknown_qualifier", q("SELECT x.a FROM t"), 2, "3:19", "Unknown Frame: x use before declaration"),
    ("self_join_without_alias", q("SELECT t.a FROM t, t"), 2, "3:31", "t is marked as necessary for Prefix generation"),
    ("unknown_aggregate", q("SELECT median(t.a) FROM t"), 2, "3:19", "Error: median does not name an aggregation"),
    ("not_is_a_function", q("SELECT t.a FROM t WHERE NOT(t.a)"), 2, "3:36", "Error: not does not name an aggregation"),
    ("count_star", q("SELECT count(*) FROM t"), 2, "3:19", "Using the asterisk in aggregations is not allowed"),
    ("count_table_star", q("SELECT count(t.*) FROM t"), 2, "3:19", "Using the asterisk in aggregations"),
    ("bang_equal_in_where", q("SELECT t.a FROM t WHERE t.a != 1"), 2, "3:40", "use '<>'"),
    ("nested_aggregate", q("SELECT sum(max(t.a)) FROM t GROUP BY t.s"), 2, "3:23", "Nested Aggregation Functions"),
    ("ungrouped_column", q("SELECT t.b FROM t GROUP BY t.a"), 2, "3:19", '"t.b" Must be part of the Group Expression'),
    ("ungrouped_in_having", q("SELECT t.a FROM t GROUP BY t.a HAVING t.b > 1"), 2, "3:50", '"t.b" Must be part'),
    (
        "distinct_group_aggregate",
        q("SELECT DISTINCT t.a, sum(t.b) FROM t GROUP BY t.a"),
        2,
        "3:19",
        "DISTINCT with GROUP BY and Aggregation is not supported",
    ),
    ("frame_in_expression", q("SELECT t.* + 1 FROM t"), 2, "3:19", "cannot be used as a value"),
    (
        "missing_join_operator",
        q("SELECT * FROM t AS x JOIN t AS y ON x.a = y.a AND x.b y.b"),
        2,
        "3:62",
        "comparison operator",
    ),
    ("integer_out_of_range", q("SELECT 9223372036854775808 FROM t"), 2, "3:19", "out of range for si64"),
    # --- labels known at compile time (exit 2) ---
    ("unqualified_column", q("SELECT a FROM t"), 2, "3:19", "no column labeled 'a'"),
    ("unknown_column", q("SELECT t.zz FROM t"), 2, "3:19", "no column labeled 't.zz'"),
    (
        "join_left_column_unknown",
        q("SELECT * FROM t AS x JOIN t AS y ON y.a = x.a"),
        2,
        "3:33",
        "no column labeled 'y.a'",
    ),
    ("alias_hides_table_prefix", q("SELECT t.a FROM t AS x WHERE x.zz > 1"), 2, "3:41", "no column labeled 'x.zz'"),
    # --- run time (exit 3) ---
    ("order_by_unknown_column", q("SELECT t.a FROM t ORDER BY t.zz"), 3, "3:39", "column label not found: 't.zz'"),
    ("duplicate_labels", q("SELECT t.a, t.a FROM t"), 3, "3:24", "'t.a' occurs more than once"),
    ("mixed_row_counts", q("SELECT t.a, sum(t.b) FROM t"), 3, "3:24", "same number of rows"),
    ("avg_of_strings", q("SELECT t.a, avg(t.s) FROM t GROUP BY t.a"), 3, "3:49", "AVG aggregation is not supported"),
]


def outcome(tmp_path: Path, source: str) -> tuple[int, str]:
    script = tmp_path / "bad.daph"
    script.write_text(source)
    try:
        compile_script(str(script), {}, DaphneConfig(), {}).run()
    except DaphneError as e:
        return e.code, e.render()
    return 0, ""


@pytest.mark.parametrize(("name", "source", "code", "where", "fragment"), CASES, ids=[c[0] for c in CASES])
def test_sql_error(tmp_path: Path, name: str, source: str, code: int, where: str, fragment: str) -> None:
    got_code, rendered = outcome(tmp_path, source)
    assert got_code == code, rendered
    assert rendered.startswith(f"{tmp_path / 'bad.daph'}:{where}: error: "), rendered
    assert fragment in rendered, rendered


def test_location_through_escapes(tmp_path: Path) -> None:
    """`\\t` and `\\"` are two characters in the script but one in the query."""
    src = VIEW + 'x = "SELECT t.a,\\t\\"q\\", t.zz FROM t";\nprint(sql(x));\n'
    code, rendered = outcome(tmp_path, src)
    assert code == 2
    assert rendered.startswith(f"{tmp_path / 'bad.daph'}:3:26: error: "), rendered


def test_location_through_line_breaks(tmp_path: Path) -> None:
    src = VIEW + 'x = "SELECT t.a,\\t\\"q\\",\n     \'w\'\n   FROM t\n  WHERE t.zz > 1";\nprint(sql(x));\n'
    code, rendered = outcome(tmp_path, src)
    assert code == 2
    assert rendered.startswith(f"{tmp_path / 'bad.daph'}:6:9: error: "), rendered


def test_view_registered_in_a_branch(tmp_path: Path) -> None:
    """Views are bound at compile time: registering inside a branch binds the frame's SSA value, which a later
    query can use only if it is defined outside the branch."""
    branch = 'if (as.scalar(rand(1, 1, 0.0, 1.0, 1.0, -1)) >= 0.0) {\n  registerView("u", %s);\n}\n'
    query = 'print(sql("SELECT u.a FROM u"));\n'
    assert outcome(tmp_path, VIEW + branch % "t" + query) == (0, "")
    src = VIEW + branch % "t[0:2, ]" + query
    code, rendered = outcome(tmp_path, src)
    assert code == 2
    assert "view u was registered inside a block or function that does not enclose this query" in rendered


def test_view_registered_after_the_query(tmp_path: Path) -> None:
    src = VIEW + 'print(sql("SELECT u.a FROM u"));\nregisterView("u", t);\n'
    code, rendered = outcome(tmp_path, src)
    assert (code, "3:28" in rendered) == (2, True), rendered


@pytest.mark.parametrize(
    ("name", "code", "where", "fragment"),
    [
        ("query_not_constant", 1, "4:7", "SqlOp requires"),
        ("limit", 2, "3:36", "LIMIT"),
        ("duplicate_labels", 3, "3:24", "occurs"),
    ],
)
def test_sql_error_cli(check_bad_input, name: str, code: int, where: str, fragment: str) -> None:  # noqa: ANN001
    source = next(c[1] for c in CASES if c[0] == name)
    check_bad_input(source, code, where, fragment)
