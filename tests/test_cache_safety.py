"""Cache folders and entries as an attacker or a clumsy user leaves them (runtime/cache_files.py, the kernel and
program caches, the parser's tables), observed from real `daphnec` processes: private folders, refused foreign or
shared folders and odd `DAPHNEC_CACHE_DIR` values (one warning, correct output, no entries), FIFOs and endless
files as entries (no hang), object code with a valid hash but wrong contents (dropped and recompiled), program
entries naming forbidden functions (never called), and no parser pickle in the shared temp folder."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tests" / "jit" / "scripts" / "five_pipelines.daph"
WARNING = "daphnec: warning: not using the cache folder"


def run(
    cache: str | Path, tmp: Path, *args: str, cwd: Path | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    full = dict(os.environ, DAPHNEC_CACHE_DIR=str(cache), DAPHNEC_JIT_LOG=str(tmp / "jit.log"), TMPDIR=str(tmp))
    full["DAPHNEC_NO_SHIPPED_TABLES"] = "1"  # the parser's cache entries are written and read (they are attacked)
    full.pop("DAPHNEC_PROGRAM_CACHE_DIR", None)
    full.update(env)
    cmd = [sys.executable, "-m", "daphnec.tools.daphnec", "--vec", "--vec-min-cells=0", *args, str(SCRIPT)]
    return subprocess.run(cmd, capture_output=True, text=True, env=full, timeout=120, cwd=cwd or tmp)


@pytest.fixture(scope="module")
def expected() -> str:
    res = subprocess.run([sys.executable, "-m", "daphnec.tools.daphnec", str(SCRIPT)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return res.stdout


def jit_events(tmp: Path) -> list[str]:
    log = tmp / "jit.log"
    events = [line.split()[0] for line in log.read_text().splitlines()] if log.exists() else []
    log.unlink(missing_ok=True)
    return events


def programs(cache: Path) -> Path:
    return cache.parent / (cache.name + "-programs")


def test_folders_are_created_private_and_the_parser_cache_stays_out_of_the_temp_folder(
    tmp_path: Path, expected: str
) -> None:
    cache = tmp_path / "deep" / "cache"
    res = run(cache, tmp_path)
    assert res.returncode == 0 and res.stdout == expected and res.stderr == ""
    for folder in (cache, programs(cache)):
        assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    assert [p.name for p in cache.glob("parser-*.json")] != []
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".lark")]  # TMPDIR is tmp_path


@pytest.mark.parametrize("how", ["group-writable", "other-writable", "foreign"])
def test_an_untrusted_folder_is_refused_with_one_warning(tmp_path: Path, expected: str, how: str) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    if how == "foreign":
        if os.geteuid() == 0:
            os.chown(cache, 65534, 65534)
        else:
            cache = Path("/usr")  # owned by root, not by this user
    else:
        os.chmod(cache, 0o770 if how == "group-writable" else 0o707)
    before = sorted(os.listdir(cache))
    res = run(cache, tmp_path)
    assert res.returncode == 0 and res.stdout == expected
    assert res.stderr.count(WARNING) == 1 and f"'{cache}'" in res.stderr and res.stderr.count("\n") == 1
    assert sorted(os.listdir(cache)) == before and not programs(cache).exists()
    assert set(jit_events(tmp_path)) == {"compiled"}


@pytest.mark.parametrize("value", [".", "/", "relative/cache"])
def test_odd_cache_dir_values_are_refused_and_nothing_lands_in_the_working_directory(
    tmp_path: Path, expected: str, value: str
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    res = run(value, tmp_path, cwd=work)
    assert res.returncode == 0 and res.stdout == expected
    assert res.stderr.count(WARNING) == 1 and f"'{value}'" in res.stderr
    assert os.listdir(work) == []


def test_a_home_relative_cache_dir_is_expanded(tmp_path: Path, expected: str) -> None:
    res = run("~/c", tmp_path, HOME=str(tmp_path / "home"))
    assert res.returncode == 0 and res.stdout == expected and res.stderr == ""
    assert list((tmp_path / "home" / "c").glob("*.o")) and not (tmp_path / "~").exists()


@pytest.mark.parametrize("kind", ["fifo", "symlink to /dev/zero", "huge sparse file"])
def test_entries_that_are_no_small_regular_files_never_hang(tmp_path: Path, expected: str, kind: str) -> None:
    cache = tmp_path / "cache"
    assert run(cache, tmp_path).returncode == 0
    jit_events(tmp_path)
    victims = [*cache.glob("*.o"), *cache.glob("parser-*.json"), *programs(cache).glob("*.prog")]
    assert len(victims) >= 7
    for victim in victims:
        victim.unlink()
        if kind == "fifo":
            os.mkfifo(victim)
        elif kind == "symlink to /dev/zero":
            victim.symlink_to("/dev/zero")
        else:
            with open(victim, "wb") as f:
                f.truncate(1 << 40)  # 1 TiB of holes: above every bound
    res = run(cache, tmp_path)  # the timeout is the hang detector
    assert res.returncode == 0 and res.stdout == expected and res.stderr == ""
    assert set(jit_events(tmp_path)) == {"compiled"}


def _rewrite_entry(path: Path, magic: bytes, payload: bytes) -> None:
    """A cache entry whose stored hash matches `payload` (what an attacker or a bad disk could leave)."""
    path.write_bytes(magic + hashlib.sha256(payload).digest() + payload)


def test_object_code_with_a_valid_hash_but_wrong_contents_is_dropped_and_recompiled(
    tmp_path: Path, expected: str
) -> None:
    cache = tmp_path / "cache"
    assert run(cache, tmp_path, DAPHNEC_NO_PROGRAM_CACHE="1").returncode == 0
    jit_events(tmp_path)
    magic = b"daphnec-object-1\n"
    objects = sorted(cache.glob("*.o"))
    payloads = [p.read_bytes()[len(magic) + 32 :] for p in objects]
    _rewrite_entry(objects[0], magic, payloads[1])  # another kernel's (valid) object code
    _rewrite_entry(objects[1], magic, b"\x7fELF\x02\x01\x01" + b"\0" * 100)  # a truncated ELF file
    _rewrite_entry(objects[2], magic, payloads[2][:64])  # the right header, no sections
    res = run(cache, tmp_path, DAPHNEC_NO_PROGRAM_CACHE="1")
    assert res.returncode == 0 and res.stdout == expected and res.stderr == ""
    events = jit_events(tmp_path)
    assert events.count("dropped") == 3 and events.count("compiled") == 3 and events.count("loaded") >= 2
    assert [p.read_bytes()[len(magic) + 32 :] for p in objects] == payloads  # recompiled and stored again
    res = run(cache, tmp_path, DAPHNEC_NO_PROGRAM_CACHE="1")
    assert res.stdout == expected and set(jit_events(tmp_path)) == {"loaded"}


def test_a_program_entry_naming_a_forbidden_function_is_never_called(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pickle

    from daphnec.compiler.host import program_cache

    monkeypatch.setenv("DAPHNEC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("DAPHNEC_PROGRAM_CACHE_LOG", str(tmp_path / "log"))
    monkeypatch.delenv("DAPHNEC_PROGRAM_CACHE_DIR", raising=False)
    marker = tmp_path / "pwned"

    class Evil:
        def __init__(self, call: object, *args: object) -> None:
            self.call, self.args = call, args

        def __reduce__(self) -> tuple[object, tuple[object, ...]]:
            return self.call, self.args  # type: ignore[return-value]

    folder = program_cache.cache_dir()
    folder.mkdir(parents=True, mode=0o700)
    attacks = {
        "outer": Evil(os.system, f"touch {marker}"),
        "program": {"format": program_cache.FORMAT, "files": [], "probes": [], "kernels": [], "native": None,
                    "program": pickle.dumps(Evil(os.system, f"touch {marker}"))},
        "import": {"format": program_cache.FORMAT, "files": [], "probes": [], "kernels": [], "native": None,
                   "program": pickle.dumps(Evil(program_cache._import_module, "subprocess"))},
    }  # fmt: skip
    for key, entry in attacks.items():
        _rewrite_entry(folder / f"{key}.prog", (program_cache.FORMAT + "\n").encode(), pickle.dumps(entry))
        assert program_cache.load(key) is None
    assert not marker.exists()
    log = (tmp_path / "log").read_text().splitlines()
    assert len(log) == 3 and all(line.startswith("miss ") and "UnpicklingError" in line for line in log)
