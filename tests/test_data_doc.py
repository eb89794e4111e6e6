"""docs/data.md: its pandas example writes exactly the files it shows, and its script prints what it shows."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "data.md"


def _blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", DOC.read_text(), flags=re.S)


def test_the_pandas_example_writes_what_the_page_shows(tmp_path: Path) -> None:
    example = next(b for b in _blocks("python") if "from_pandas(df).write" in b)
    env = {**os.environ, "TMPDIR": str(tmp_path)}  # the example's tempfile.mkdtemp() folder lands here
    res = subprocess.run([sys.executable, "-c", example], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         env=env)  # fmt: skip
    assert res.returncode == 0, res.stderr
    (written,) = tmp_path.glob("*/people.csv")
    texts, jsons = _blocks("text"), _blocks("json")
    assert written.read_text() in texts
    assert (written.parent / "people.csv.meta").read_text() in [j.rstrip("\n") for j in jsons]
    script = next(b for b in _blocks("daphne") if "people.csv" in b)
    (written.parent / "read.daph").write_text(script)
    run = subprocess.run(
        [sys.executable, "-m", "daphnec.tools.daphnec", "read.daph"], cwd=written.parent, capture_output=True,
        text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert run.stdout in texts


def test_the_meta_example_reads(tmp_path: Path) -> None:
    texts, jsons = _blocks("text"), _blocks("json")
    (tmp_path / "m.csv").write_text(texts[0])
    (tmp_path / "m.csv.meta").write_text(jsons[0])
    (tmp_path / "m.daph").write_text('print(readMatrix("m.csv"));\n')
    run = subprocess.run(
        [sys.executable, "-m", "daphnec.tools.daphnec", "m.daph"], cwd=tmp_path, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert run.returncode == 0 and run.stdout == "DenseMatrix(2x3, double)\n1 2 3\n4 5 6\n", run.stderr


def test_the_documented_messages_are_the_readers(tmp_path: Path) -> None:
    from daphnec.runtime.errors import DaphneRuntimeError
    from daphnec.runtime.io import csv

    shown = next(b for b in _blocks("text") if "a header row?" in b).splitlines()
    (tmp_path / "x.csv").write_text("id\n1\n")
    try:
        csv.read_matrix(str(tmp_path / "x.csv"), 2, 1, "si64")
    except DaphneRuntimeError as e:
        got = str(e).replace(str(tmp_path / "x.csv"), "x.csv")
        assert got.startswith(shown[0].removesuffix(" ...)"))
    else:
        raise AssertionError("a header row must fail")
    (tmp_path / "x.csv").write_text("1,2\n3,\n")
    try:
        csv.read_matrix(str(tmp_path / "x.csv"), 2, 2, "f64")
    except DaphneRuntimeError as e:
        assert str(e).replace(str(tmp_path / "x.csv"), "x.csv").startswith(shown[1].removesuffix(" ...)"))
