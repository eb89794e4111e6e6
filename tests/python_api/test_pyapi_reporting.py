"""`timing` and `statistics` options of the Python API (issue 25): on a context or one `compute()`, they print what
`--timing` and `--statistics` print for a script, on stderr, for that computation."""

from __future__ import annotations

import json

import numpy as np

from daphnec import DaphneContext


def test_timing_prints_the_cli_json_line_per_compute(capfd) -> None:
    dc = DaphneContext(timing=True)
    X = dc.from_numpy(np.ones((20, 20)))
    assert (X @ X).sum().compute() == 8000.0
    first = json.loads(capfd.readouterr().err.strip())
    assert set(first) == {"startup_seconds", "parsing_seconds", "compilation_seconds", "execution_seconds",
                          "total_seconds"}  # fmt: skip
    assert first["parsing_seconds"] > 0 and first["compilation_seconds"] > 0
    assert abs(sum(v for k, v in first.items() if k != "total_seconds") - first["total_seconds"]) < 1e-4
    (X @ X).sum().compute()  # the same shape: from the cache, nothing parsed or compiled
    again = json.loads(capfd.readouterr().err.strip())
    assert again["parsing_seconds"] == 0 and again["execution_seconds"] > 0
    (X @ X).sum().compute(timing=False)
    assert capfd.readouterr().err == ""


def test_statistics_prints_daphnes_table_for_that_compute_only(capfd) -> None:
    dc = DaphneContext()
    X = dc.from_numpy(np.ones((30, 30)))
    Y = (X @ X + 1).sum()
    Y.compute()
    assert capfd.readouterr().err == ""
    Y.compute(statistics=True)
    err = capfd.readouterr().err.splitlines()
    assert err[0] == "DAPHNE operator execution runtime statistics."
    assert err[1].split()[:6] == ["#", "Operator", "Name", "Time(s)", "Count", "Avg(s)"]
    ops = {line.split()[1]: line.split()[-1] for line in err[2:]}
    assert "matmul" in ops and ops["matmul"].startswith("<daphnelib>:")
    Y.compute()  # the cached program is not left instrumented
    assert capfd.readouterr().err == ""
    DaphneContext(statistics=True).from_numpy(np.ones((2, 2))).sum().compute()
    assert "sum_all" in capfd.readouterr().err
