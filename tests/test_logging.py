"""DAPHNE's `logging` user-config key (issue 25, runtime/logs.py): its loggers log the run, at their levels, to
stderr and to their files, under the global `log-level-limit`; the script's stdout is unchanged."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HELLO = ROOT / "examples" / "hello.daph"


def _run(tmp_path: Path, logging: list[dict[str, str]], *args: str) -> subprocess.CompletedProcess[str]:
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"logging": logging}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("DAPHNEC_")}
    env["DAPHNEC_CACHE_DIR"] = str(tmp_path / "cache")
    return subprocess.run(
        [sys.executable, "-m", "daphnec.tools.daphnec", f"--config={cfg}", *args, str(HELLO)],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300,
    )  # fmt: skip


def _logger(name: str, level: str, filename: str = "run.log", fmt: str = "[%n] %l: %v") -> dict[str, str]:
    return {"name": name, "filename": filename, "level": level, "format": fmt}


def test_loggers_log_the_run_to_stderr_and_their_file(tmp_path: Path) -> None:
    plain = subprocess.run([sys.executable, "-m", "daphnec.tools.daphnec", str(HELLO)], capture_output=True,
                           text=True, timeout=300)  # fmt: skip
    res = _run(tmp_path, [_logger("default", "info"), _logger("compiler", "debug", "", "%L %v")])
    assert res.returncode == 0 and res.stdout == plain.stdout
    log = (tmp_path / "run.log").read_text().splitlines()
    assert log[0] == f"[default] info: {HELLO}: parsed in " + log[0].rsplit(" in ", 1)[1]
    assert any(line.startswith(f"[default] info: {HELLO}: compiled in ") for line in log)
    assert log[-1].startswith("[default] info: executed in ")
    assert not any("pass" in line for line in log)  # the compiler logger has no file: stderr only
    assert "D pass canonicalize: " in res.stderr and "[default] info: executed in" in res.stderr
    again = _run(tmp_path, [_logger("default", "info"), _logger("compiler", "debug", "", "%L %v")])
    assert again.returncode == 0 and "program cache hit, loaded in" in again.stderr  # same script and config


def test_levels_and_the_limit_filter(tmp_path: Path) -> None:
    res = _run(tmp_path, [_logger("default", "warn"), _logger("compiler", "debug", "")])
    assert res.returncode == 0 and "info" not in res.stderr and "pass " in res.stderr
    limited = _run(tmp_path, [{"log-level-limit": "OFF"}, _logger("default", "info"), _logger("compiler", "debug")])
    assert limited.returncode == 0 and limited.stderr == ""
    assert not (tmp_path / "run.log").exists() or (tmp_path / "run.log").read_text() == ""
