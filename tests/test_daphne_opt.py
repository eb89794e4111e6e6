"""daphne-opt's command line (issue 25): script arguments after the script, `--list-passes`, an unknown pass
pointing to it, and `-t host` of a SQL script without adding the `sql` pass by hand."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from daphnec.compiler.passes import PASS_FACTORIES

ROOT = Path(__file__).resolve().parents[1]
SQL = ROOT / "examples" / "sql_pipeline.daph"
SQL_ARGS = ('houses="examples/data/sql_houses.csv"', 'districts="examples/data/sql_districts.csv"')


def opt(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "daphnec.tools.daphne_opt", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=300)  # fmt: skip


def test_script_arguments_after_the_script(tmp_path: Path) -> None:
    script = tmp_path / "s.daph"
    script.write_text("X = fill(1.0, $k, 2);\nprint(X);\n")
    res = opt(str(script), "k=3")
    assert res.returncode == 0, res.stderr
    assert "daphne.fill" in res.stdout and "3 : si64" in res.stdout
    missing = opt(str(script))
    assert missing.returncode == 1 and "script argument 'k' is used but not given" in missing.stderr
    bad = opt(str(script), "k=3", "k=4")
    assert bad.returncode == 1 and "daphne-opt: error:" in bad.stderr and "k" in bad.stderr


def test_list_passes_lists_every_pass_and_an_unknown_pass_points_to_it() -> None:
    res = opt("--list-passes")
    assert res.returncode == 0 and res.stdout.startswith("Passes (-p name[,name...]):\n")
    listed = [line.split()[0] for line in res.stdout.splitlines()[1:]]
    assert listed == sorted(PASS_FACTORIES)
    assert all(len(line.split()) > 1 for line in res.stdout.splitlines()[1:])  # each with a description
    bogus = opt(str(ROOT / "examples" / "hello.daph"), "-p", "bogus")
    assert bogus.returncode == 1 and "Unrecognized passes: ['bogus'] (see --list-passes)" in bogus.stderr


def test_host_target_of_a_sql_script_runs_the_sql_pass() -> None:
    res = opt(str(SQL), "-p", "specialize", "-t", "host", *SQL_ARGS)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("def f_main():") and "_inner_join_" in res.stdout and "_sql_" not in res.stdout
