"""docs/builtins.md is generated from the builtin tables (tools/builtins_doc.py) and must be up to date."""

from __future__ import annotations

import subprocess
import sys

from daphnec.frontend.builtins import all_builtins
from daphnec.tools import builtins_doc


def test_the_committed_builtins_reference_is_up_to_date() -> None:
    assert builtins_doc.DOC.read_text() == builtins_doc.render(), (
        "docs/builtins.md is out of date: run `python -m daphnec.tools.builtins_doc`"
    )


def test_every_builtin_is_listed_with_a_description() -> None:
    text = builtins_doc.render()
    rows = [ln for ln in text.splitlines() if ln.startswith("| `")]
    assert len(rows) == len(all_builtins())
    assert all(not ln.endswith("|  |") for ln in rows), [ln for ln in rows if ln.endswith("|  |")]
    for name in all_builtins():
        assert f"| `{name}(" in text
    assert "| `sum(arg, axis = ?)` |" in text and "| `seq(from, to, inc = 1)` |" in text


def test_no_description_names_a_builtin_that_does_not_exist() -> None:
    assert sorted(set(builtins_doc.DESCRIPTIONS) - set(all_builtins())) == []


def test_the_check_mode_fails_on_a_stale_file(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    stale = tmp_path / "builtins.md"
    stale.write_text("# old\n")
    monkeypatch.setattr(builtins_doc, "DOC", stale)
    assert builtins_doc.main(["--check"]) == 1
    assert builtins_doc.main([]) == 0 and builtins_doc.main(["--check"]) == 0
    res = subprocess.run([sys.executable, "-m", "daphnec.tools.builtins_doc", "--check"], capture_output=True)
    assert res.returncode == 0, res.stderr
