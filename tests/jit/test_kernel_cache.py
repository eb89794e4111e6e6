"""The on-disk kernel cache, observed from real `daphnec` processes through `DAPHNEC_JIT_LOG`.

The first run compiles every kernel and stores its object code; a second run loads every kernel instead;
`--no-kernel-cache` neither reads nor writes; concurrent runs leave a consistent cache; a damaged entry is
recompiled instead of loaded.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parent / "scripts" / "five_pipelines.daph"


def daphnec(cache: Path, log: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, DAPHNEC_CACHE_DIR=str(cache), DAPHNEC_JIT_LOG=str(log))
    return subprocess.run(
        [sys.executable, "-m", "daphnec.tools.daphnec", "--vec", "--vec-min-cells=0", *args, str(SCRIPT)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def events(log: Path) -> list[tuple[str, str]]:
    if not log.exists():
        return []
    return [tuple(line.split()[:2]) for line in log.read_text().splitlines()]  # type: ignore[misc]


def entries(cache: Path) -> list[str]:
    """The kernel entries (the folder also holds the parser's tables, `frontend.parser`)."""
    return sorted(p.name for p in cache.glob("*.o")) if cache.exists() else []


@pytest.fixture(scope="module")
def plain_output() -> str:
    res = subprocess.run(
        [sys.executable, "-m", "daphnec.tools.daphnec", str(SCRIPT)], capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 0, res.stderr
    return res.stdout


def test_second_run_loads_every_kernel_from_the_cache(tmp_path: Path, plain_output: str) -> None:
    cache = tmp_path / "cache"
    first = daphnec(cache, tmp_path / "1.log")
    assert first.returncode == 0 and first.stderr == ""
    assert first.stdout == plain_output
    compiled = events(tmp_path / "1.log")
    assert len(compiled) >= 5 and {e for e, _ in compiled} == {"compiled"}
    assert len(entries(cache)) == len({k for _, k in compiled})
    second = daphnec(cache, tmp_path / "2.log")
    assert second.stdout == plain_output
    loaded = events(tmp_path / "2.log")
    assert {e for e, _ in loaded} == {"loaded"}
    assert sorted(k for _, k in loaded) == sorted(k for _, k in compiled)


def test_no_kernel_cache_neither_reads_nor_writes(tmp_path: Path, plain_output: str) -> None:
    cache = tmp_path / "cache"
    assert daphnec(cache, tmp_path / "1.log").returncode == 0
    before = entries(cache)
    off = daphnec(cache, tmp_path / "2.log", "--no-kernel-cache")
    assert off.returncode == 0 and off.stdout == plain_output
    assert {e for e, _ in events(tmp_path / "2.log")} == {"compiled"}
    fresh = tmp_path / "unused"
    assert daphnec(fresh, tmp_path / "3.log", "--no-kernel-cache").returncode == 0
    assert entries(fresh) == [] and entries(cache) == before


def test_concurrent_runs_leave_a_consistent_cache(tmp_path: Path, plain_output: str) -> None:
    cache = tmp_path / "cache"
    env = dict(os.environ, DAPHNEC_CACHE_DIR=str(cache))
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "daphnec.tools.daphnec", "--vec", "--vec-min-cells=0", str(SCRIPT)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(4)
    ]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0 and err == "" and out == plain_output
    names = entries(cache)
    assert names and all(n.endswith(".o") and not n.startswith(".tmp") for n in names)
    after = daphnec(cache, tmp_path / "after.log")
    assert after.stdout == plain_output
    assert {e for e, _ in events(tmp_path / "after.log")} == {"loaded"}


def test_a_damaged_entry_is_recompiled(tmp_path: Path, plain_output: str) -> None:
    cache = tmp_path / "cache"
    assert daphnec(cache, tmp_path / "1.log").returncode == 0
    victim = cache / entries(cache)[0]
    victim.write_bytes(victim.read_bytes()[:-40] + b"\0" * 40)
    res = daphnec(cache, tmp_path / "2.log")
    assert res.returncode == 0 and res.stdout == plain_output
    kinds = [e for e, _ in events(tmp_path / "2.log")]
    assert kinds.count("compiled") == 1 and kinds.count("loaded") == len(kinds) - 1
