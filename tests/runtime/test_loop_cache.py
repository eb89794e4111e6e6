"""The runtime's own native loops (rand's selection, the ordered sums) are compiled once per host, not once per
process: the object code goes to the cache folder (`*.o`, as the kernels' does: atomic, checked,
`--no-kernel-cache` off) and later runs load it. Observed from real `daphnec` processes."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from daphnec.runtime.cache_files import read_entry

SCRIPT = """X = rand(200, 300, 0.0, 1.0, 0.5, 7);
print(sum(X, 0)[0:2, ]);
print(sum(X, 1)[, 0:2]);
"""


def _run(tmp: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    script = tmp / "loops.daph"
    script.write_text(SCRIPT)
    env = {**os.environ, "DAPHNEC_CACHE_DIR": str(tmp / "cache"), "DAPHNEC_NO_PROGRAM_CACHE": "1"}
    return subprocess.run([sys.executable, "-m", "daphnec.tools.daphnec", *flags, str(script)],
                          capture_output=True, text=True, env=env, timeout=120)  # fmt: skip


def _entries(tmp: Path) -> dict[str, tuple[int, int]]:
    return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in (tmp / "cache").glob("*.o")}


def _payload(entry: Path) -> bytes:
    return read_entry(entry, b"daphnec-object-1\n", 1 << 20)


def _expected(tmp: Path) -> str:
    res = _run(tmp, "--no-kernel-cache")
    assert res.returncode == 0 and res.stderr == "", res.stderr
    return res.stdout


def test_the_first_run_stores_the_loops_and_later_runs_load_them(tmp_path: Path) -> None:
    expected = _expected(tmp_path)
    assert _entries(tmp_path) == {}  # --no-kernel-cache: nothing written
    first = _run(tmp_path)
    assert (first.returncode, first.stdout, first.stderr) == (0, expected, "")
    stored = _entries(tmp_path)
    assert len(stored) == 2  # the selection loop and the folds
    again = _run(tmp_path)
    assert (again.returncode, again.stdout, again.stderr) == (0, expected, "")
    assert _entries(tmp_path) == stored  # loaded, not written again


@pytest.mark.parametrize("damage", ["garbage", "valid hash, broken object", "fifo"])
def test_a_bad_entry_is_replaced_by_fresh_code(tmp_path: Path, damage: str) -> None:
    expected = _expected(tmp_path)
    assert _run(tmp_path).returncode == 0
    victims = sorted((tmp_path / "cache").glob("*.o"))
    for v in victims:
        v.unlink()
        if damage == "fifo":
            os.mkfifo(v)  # never opened blocking, never read
        elif damage == "garbage":
            v.write_bytes(b"not code")
        else:  # passes the entry's checksum, fails the ELF checks: dropped, compiled again
            obj = b"\x7fELF\x02\x01\x01" + b"\0" * 100
            v.write_bytes(b"daphnec-object-1\n" + hashlib.sha256(obj).digest() + obj)
    res = _run(tmp_path)  # the timeout is the hang detector
    assert (res.returncode, res.stdout, res.stderr) == (0, expected, "")
    if damage != "fifo":  # damaged entries are rewritten with good code
        assert all(_payload(v)[:4] == b"\x7fELF" and len(_payload(v)) > 500 for v in victims)
        assert _run(tmp_path).stdout == expected
