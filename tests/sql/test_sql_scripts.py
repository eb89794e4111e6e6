"""The SQL script corpus (tests/scripts/sql) under `--columnar`, plain and vectorized: the output must equal
`X.columnar.txt` where DAPHNE's columnar ops order rows differently (N:1 joins, groups in first-appearance order),
else `X.txt`. The plain and `--vec` runs of the same scripts are in tests/test_scripts.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_scripts import run_daphnec  # tests/test_scripts.py: the CLI in a fresh interpreter

SQL = Path(__file__).resolve().parents[1] / "scripts" / "sql"
CASES = sorted(SQL.glob("*.daph"))


def expected(script: Path) -> str:
    columnar = script.with_suffix(".columnar.txt")
    return (columnar if columnar.exists() else script.with_suffix(".txt")).read_text()


def test_columnar_outputs_differ_where_documented() -> None:
    assert {p.name for p in SQL.glob("*.columnar.txt")} == {"joins.columnar.txt", "group.columnar.txt"}


@pytest.mark.parametrize("flags", [("--columnar",), ("--vec", "--columnar")], ids=["columnar", "vec-columnar"])
@pytest.mark.parametrize("script", CASES, ids=[p.stem for p in CASES])
def test_sql_script_columnar(script: Path, flags: tuple[str, ...]) -> None:
    res = run_daphnec(*flags, str(script))
    assert res.stderr == ""
    assert res.returncode == 0
    assert res.stdout == expected(script)
