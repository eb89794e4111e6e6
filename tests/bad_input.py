"""The bad-input harness: running the real CLI on a bad script and checking DAPHNE's error contract.

A module of its own (not conftest.py, whose module name a folder's own conftest.py would shadow); the suite's
root conftest puts tests/ on sys.path, so test modules import it as `bad_input`."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_bad_script(
    tmp_path: Path, source: str, files: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Write `source` (and data `files`) into tmp_path and run `daphnec bad.daph` in a fresh interpreter."""
    for name, text in (files or {}).items():
        (tmp_path / name).write_bytes(text.encode("latin-1"))
    (tmp_path / "bad.daph").write_text(source)
    script = "bad.daph" if cwd == tmp_path else str(tmp_path / "bad.daph")
    return subprocess.run(
        [sys.executable, "-m", "daphnec.tools.daphnec", script],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd or ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )


def assert_error(
    res: subprocess.CompletedProcess[str], script: str, code: int, where: str | None, fragment: str
) -> None:
    """Exit code `code`, one stderr line `script:line:col: error: ...` containing `fragment`, no traceback."""
    err = res.stderr
    assert res.returncode == code, err
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    prefix = re.escape(script) + (":" + re.escape(where) if where else r"(:\d+:\d+)?")
    assert re.match(prefix + r": error: ", lines[0]), lines[0]
    assert fragment in lines[0], lines[0]
