"""The cache folder race, attacked for real: while `daphnec` runs again and again, a second process swaps the
program-cache folder by `rename` for one holding a forged entry whose host code would create a marker file. The
attacker's code must never run, and every run must print the right output (runtime/cache_files.py opens the
folder once, checks that very descriptor, and reads every entry relative to it).

- `other user`: the red team's setup. The cache folders sit in a folder that everybody may write (0777, no
  sticky bit); the attacker runs as a second user (uid 65534) and renames the victim's folder away. daphnec must
  refuse such a folder outright (its parent may be written by others).
- `between check and use`: the parent is private, and a process of the same user swaps in a folder owned by the
  second user. This is the window between the check and the reads: only a check of the very descriptor that is
  then read from closes it.

Run as a script (`python tests/test_cache_race.py [runs]`) it prints the runs and the attacker's successes of
both scenarios, for comparing daphnec versions.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

OTHER_UID = 65534
"""The second user (nobody): the attacker of the first scenario, the owner of the forged folder in both."""
SCRIPT = "x = 3;\nprint(x * 2);\n"
FORMAT = "daphnec-program-3"


def _swap_folders(exchange: Any, real: Path, evil: Path, stop: Path) -> None:
    """The attacker's loop: exchange the victim's folder and the forged one (`renameat2(RENAME_EXCHANGE)`, one
    atomic step: the path always names one of them), as fast as the kernel goes."""
    at_cwd, rename_exchange = -100, 2
    a, b = os.fsencode(real), os.fsencode(evil)
    n = 0
    while n % 1024 or not stop.exists():
        n += 1
        exchange(at_cwd, a, at_cwd, b, rename_exchange)


def _attacker(uid: int | None, *folders: Path) -> int:
    """A second process running `_swap_folders` (as user `uid` if given); its pid."""
    import ctypes

    exchange = ctypes.CDLL(None, use_errno=True).renameat2  # loaded first: the second user cannot read /root
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            if uid is not None:
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
            _swap_folders(exchange, *folders)
            code = 0
        finally:
            os._exit(code)
    return pid


def _forged_entry(marker: Path) -> bytes:
    """A program-cache entry with a valid hash whose host code creates `marker` (exec'd on a hit)."""
    source = f"open({str(marker)!r}, 'w').close()\ndef f_main():\n    pass\n"
    program = pickle.dumps((source, {}, [None, None, None], "f_main"), protocol=5)
    payload = pickle.dumps({"format": FORMAT, "files": [], "probes": [], "listings": [], "kernels": [],
                            "native": None, "program": program}, protocol=5)  # fmt: skip
    return (FORMAT + "\n").encode() + hashlib.sha256(payload).digest() + payload


def _daphnec(script: Path, cache: Path, log: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, DAPHNEC_CACHE_DIR=str(cache), DAPHNEC_PROGRAM_CACHE_LOG=str(log))
    env.pop("DAPHNEC_PROGRAM_CACHE_DIR", None)
    env.pop("DAPHNEC_NO_PROGRAM_CACHE", None)
    cmd = [sys.executable, "-m", "daphnec.tools.daphnec", str(script)]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120, cwd=script.parent)


def race(scenario: str, runs: int) -> tuple[int, int, list[str]]:
    """Run daphnec `runs` times while the attacker swaps folders; (runs, attacker successes, wrong outputs)."""
    assert os.geteuid() == 0, "the cache race tests act as a second user: run them as root (as CI does)"
    base = Path(tempfile.mkdtemp(prefix="daphnec-race-", dir="/tmp"))
    try:
        shared = base / "shared"
        shared.mkdir(mode=0o700)
        if scenario == "other user":
            os.chmod(base, 0o755)
            os.chmod(shared, 0o777)  # everybody may write it, no sticky bit
        script, marker, log = base / "s.daph", base / "pwned", base / "log"
        script.write_text(SCRIPT)
        cache = shared / "cache"
        real = shared / "cache-programs"  # the program-cache folder daphnec derives from the kernel cache's
        # a first run in a private folder: the entry's key (the cache folders are not part of it)
        first = _daphnec(script, base / "private" / "cache", log)
        assert first.returncode == 0 and first.stdout == "6\n", first.stderr
        real.mkdir(mode=0o700)
        evil, stop = shared / "evil", base / "stop"
        evil.mkdir(mode=0o700)
        key = next(line.split()[1] for line in log.read_text().splitlines() if line.split()[0] in ("stored", "miss"))
        (evil / f"{key}.prog").write_bytes(_forged_entry(marker))
        os.chown(evil, OTHER_UID, OTHER_UID)
        os.chown(evil / f"{key}.prog", OTHER_UID, OTHER_UID)
        attacker = _attacker(OTHER_UID if scenario == "other user" else None, real, evil, stop)
        wins, wrong = 0, []
        try:
            time.sleep(0.3)
            assert os.waitpid(attacker, os.WNOHANG) == (0, 0), "the attacker could not start"
            for _ in range(runs):
                res = _daphnec(script, cache, log)
                if res.stdout != "6\n" or res.returncode != 0:
                    wrong.append(res.stdout + res.stderr)
                if marker.exists():
                    wins += 1
                    marker.unlink()
        finally:
            stop.touch()
            time.sleep(0.1)
            os.kill(attacker, signal.SIGKILL)
            os.waitpid(attacker, 0)
        return runs, wins, wrong
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("scenario", ["other user", "between check and use"])
def test_the_attackers_code_never_runs_while_folders_are_swapped(scenario: str) -> None:
    runs, wins, wrong = race(scenario, 25)
    print(f"\n{scenario}: {runs} runs, attacker's code ran in {wins}")
    assert wins == 0
    assert wrong == [], wrong[:3]


def test_a_folder_below_a_folder_others_may_write_is_refused(tmp_path: Path) -> None:
    """The red team's folder layout, without a race: refused with one warning naming the parent."""
    base = Path(tempfile.mkdtemp(prefix="daphnec-shared-", dir="/tmp"))
    try:
        os.chmod(base, 0o777)
        (tmp_path / "s.daph").write_text(SCRIPT)
        res = _daphnec(tmp_path / "s.daph", base / "cache", tmp_path / "log")
        assert res.returncode == 0 and res.stdout == "6\n"
        assert res.stderr == (
            f"daphnec: warning: not using the cache folder '{base / 'cache'}': its parent folder '{base}' may be "
            "written by other users (group/others write permission without the sticky bit); this run does not use "
            "it\n"
        )
        assert sorted(os.listdir(base)) == []  # nothing created below it
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 70
    for name in ("other user", "between check and use"):
        total, won, bad = race(name, n)
        print(f"{name}: {total} runs, the attacker's code ran in {won}, wrong output in {len(bad)}", flush=True)
