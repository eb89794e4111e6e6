"""The SQL examples run through the real CLI; their results are recomputed with numpy and DuckDB on the same data
(the tutorial's salaries are regenerated with the runtime's bit-exact `rand`)."""

from __future__ import annotations

import numpy as np
import pytest
from test_examples import run_example  # tests/test_examples.py: the CLI on examples/, stdout lines

from daphnec.runtime.kernels.datagen import rand

AGE = [20, 30, 23, 65, 70, 42, 34, 55, 76, 32, 53, 40, 42, 69, 63, 26, 70, 36, 21, 23]
DATA = ('houses="examples/data/sql_houses.csv"', 'districts="examples/data/sql_districts.csv"')


def rows(lines: list[str]) -> list[list[float]]:
    return [[float(x) for x in ln.split()] for ln in lines]


@pytest.mark.parametrize("flags", [(), ("--columnar",)])
def test_tutorial_where(flags: tuple[str, ...]) -> None:
    out = run_example("sql_tutorial_where.daph", flags=flags)
    salary = rand(20, 1, 250.0, 500.0, 1.0, 7, "f64").ravel()
    keep = np.flatnonzero(salary > 450.0)
    head = out.index(next(ln for ln in out if ln.startswith(f"Frame({len(keep)}x3")))
    assert out[head] == f"Frame({len(keep)}x3, [employee_id:int64_t, salary:double, age:int64_t])"
    got = np.array(rows(out[head + 1 :]))
    np.testing.assert_array_equal(got[:, 0], keep + 1)
    np.testing.assert_allclose(got[:, 1], salary[keep], rtol=1e-5)
    np.testing.assert_array_equal(got[:, 2], np.array(AGE)[keep])


def test_tutorial_group() -> None:
    out = run_example("sql_tutorial_group.daph")
    salary = rand(20, 1, 250.0, 500.0, 1.0, 7, "f64").ravel()
    ages = sorted(set(AGE))
    assert out[0] == f"Frame({len(ages)}x2, [age:int64_t, salary:double])"
    expect = [[a, salary[np.array(AGE) == a].mean()] for a in ages]
    np.testing.assert_allclose(np.array(rows(out[1:])), np.array(expect), rtol=1e-5)


@pytest.mark.parametrize("flags", [(), ("--vec",), ("--columnar",)])
def test_sql_pipeline(flags: tuple[str, ...]) -> None:
    duckdb = pytest.importorskip("duckdb")
    out = run_example("sql_pipeline.daph", *DATA, flags=flags)
    con = duckdb.connect()
    con.execute(
        "CREATE VIEW h AS SELECT * FROM read_csv('examples/data/sql_houses.csv', header=false, "
        "columns={'id': 'BIGINT', 'district': 'VARCHAR', 'area': 'DOUBLE', 'rooms': 'BIGINT', 'age': 'BIGINT', "
        "'price': 'DOUBLE'})"
    )
    con.execute(
        "CREATE VIEW d AS SELECT * FROM read_csv('examples/data/sql_districts.csv', header=false, "
        "columns={'district': 'VARCHAR', 'region': 'VARCHAR', 'tax': 'DOUBLE'})"
    )
    summary = con.execute(
        "SELECT d.region, count(*), avg(h.price), max(h.area) FROM h JOIN d ON h.district = d.district "
        "GROUP BY d.region ORDER BY d.region"
    ).fetchall()
    assert out[1] == f"Frame({len(summary)}x4, [d.region:std::string, n:int64_t, avg_price:double, largest:double])"
    for line, (region, n, avg, largest) in zip(out[2 : 2 + len(summary)], summary):
        name, *nums = line.split()
        assert name == region
        np.testing.assert_allclose([float(x) for x in nums], [n, avg, largest], rtol=1e-5)
    data = np.array(
        con.execute(
            "SELECT h.area, h.rooms, h.age, d.tax, h.price FROM h JOIN d ON h.district = d.district "
            "WHERE d.region = 'city' AND h.age BETWEEN 0 AND 80"
        ).fetchall()
    )
    assert int(out[out.index("training rows:") + 1]) == len(data)
    X = np.hstack([data[:, :4], np.ones((len(data), 1))])
    w = np.linalg.solve(X.T @ X, X.T @ data[:, 4])
    at = out.index("weights (area, rooms, age, tax, intercept):")
    np.testing.assert_allclose(rows([out[at + 2]])[0], w, rtol=1e-4)
    rmse = np.sqrt(np.mean((X @ w - data[:, 4]) ** 2))
    np.testing.assert_allclose(float(out[-1]), rmse, rtol=1e-5)
