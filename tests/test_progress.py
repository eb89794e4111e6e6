"""The command line's progress line (issue 25, tools/progress.py): on a terminal, a run longer than the threshold
shows `[daphnec] <seconds> s  running <file:line:col>` on stderr and erases it at the end; into a pipe, nothing.

The terminal is a real pseudo-terminal (`pty`) given to the process as stderr; `DAPHNEC_PROGRESS_AFTER` lowers the
5 s threshold so that the test's script need not run for 5 s."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

LONG = """s = 0;
for (i in 1:{n}) {{
    s = s + i % 7;
}}
print(s);
"""


def _script(tmp_path: Path, n: int) -> Path:
    path = tmp_path / "long.daph"
    path.write_text(LONG.format(n=n))
    return path


def _env(tmp_path: Path, after: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DAPHNEC_")}
    env.update(DAPHNEC_CACHE_DIR=str(tmp_path / "cache"), DAPHNEC_PROGRESS_AFTER=after)
    return env


def _run_with_terminal_stderr(cmd: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    """Run `cmd` with stderr on a pseudo-terminal and stdout on a pipe: (exit status, stdout, terminal bytes)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 500, 0, 0))  # wide: the line is cut to the width
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL, env=env, cwd=ROOT)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:  # EIO: the process closed its end
            break
        if not data:
            break
        chunks.append(data)
    out = proc.stdout.read().decode() if proc.stdout else ""
    code = proc.wait(timeout=300)
    os.close(master)
    return code, out, b"".join(chunks).decode(errors="replace")


def test_a_long_run_on_a_terminal_shows_where_it_is_and_erases_the_line(tmp_path: Path) -> None:
    # ~1-1.5 s of loop on a quiet machine: the line is drawn every 0.5 s, so at least one draw falls inside the loop
    # even when the first (0.05 s in) comes while the script is still being compiled and names no statement
    script = _script(tmp_path, 3000000)
    cmd = [sys.executable, "-m", "daphnec.tools.daphnec", str(script)]
    code, out, term = _run_with_terminal_stderr(cmd, _env(tmp_path, "0.05"))
    assert code == 0 and out == "8999997\n"
    assert "[daphnec] " in term and f"running {script}:3:" in term  # the loop body's statement
    assert term.endswith("\r\x1b[K")  # erased at the end: the terminal is left as it was
    assert "\n" not in term  # one line rewritten in place, never a scrolling log


def test_output_on_the_same_terminal_is_not_mixed_with_the_line(tmp_path: Path) -> None:
    """stdout and stderr on one terminal: the line is erased before the script prints."""
    script = tmp_path / "prints.daph"
    script.write_text("for (k in 1:3) {\n    s = 0;\n    for (i in 1:60000) { s = s + i % 7; }\n    print(s);\n}\n")
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "daphnec.tools.daphnec", str(script)],
        stdout=slave, stderr=slave, stdin=subprocess.DEVNULL, env=_env(tmp_path, "0.1"), cwd=ROOT,
    )  # fmt: skip
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    assert proc.wait(timeout=300) == 0
    os.close(master)
    term = b"".join(chunks).decode(errors="replace")
    shown = term.replace("\r\n", "\n")
    lines = [ln for ln in shown.split("\n") if ln]
    # every printed line, once the erase sequences are applied, is the script's output alone (a progress line
    # shown when the run ends is erased without a newline: the terminal's last line is then empty, not a line)
    visible = [ln.rsplit("\r\x1b[K", 1)[-1] for ln in lines]
    assert [v for v in visible if v and not v.startswith("[daphnec]")] == ["179997", "179997", "179997"]


def test_nothing_is_printed_into_a_pipe(tmp_path: Path) -> None:
    script = _script(tmp_path, 100000)
    res = subprocess.run(
        [sys.executable, "-m", "daphnec.tools.daphnec", str(script)],
        capture_output=True, text=True, env=_env(tmp_path, "0"), cwd=ROOT, timeout=300,
    )  # fmt: skip
    assert res.returncode == 0 and res.stdout == "300000\n" and res.stderr == ""
