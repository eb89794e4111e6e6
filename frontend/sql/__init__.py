"""DaphneDSL's SQL frontend: a query string -> relational ops of the `daphne` dialect.

DAPHNE parses a `sql(query)` in its compiler's RewriteSqlOpPass with the SQL parser of its frontend
(src/parser/sql/). Here the frontend owns the parser (`parser.py`, a Lark grammar of DAPHNE's subset), the syntax
tree (`ast.py`), the map from query offsets back to the script (`source_map.py`) and the translation to ops
(`translate.py`); importing this package registers `lower_query` on the dialect's `daphne.sql`
(`dialects.ops_relational.register_query_lowering`), and the compiler's `sql` pass calls it when it has bound the
views. So data flows frontend -> dialects <- compiler, as for the rest of the language.
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from daphnec.dialects.errors import CompileError
from daphnec.dialects.locations import loc_of
from daphnec.dialects.ops import constant_value
from daphnec.dialects.ops_relational import SqlOp, register_query_lowering
from daphnec.frontend.sql.parser import SqlError, parse_query
from daphnec.frontend.sql.source_map import QueryLocator
from daphnec.frontend.sql.translate import translate


def lower_query(op: SqlOp, visible: dict[str, SSAValue], hidden: set[str]) -> SSAValue:
    """The relational ops of `op`'s query, built before `op`; errors point into the query string in the script."""
    query = constant_value(op.query)
    if not isinstance(query, str):
        raise CompileError("SqlOp requires a SQL query as a constant string", loc_of(op))
    locator = QueryLocator(query, loc_of(op.query.owner), loc_of(op))  # type: ignore[arg-type]
    try:
        tree = parse_query(query)
    except SqlError as e:
        raise CompileError(e.message, locator.loc(e.offset)) from None
    return translate(op, visible, hidden, locator, tree)


register_query_lowering(lower_query)
