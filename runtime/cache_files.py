"""daphnec's on-disk cache folders and their entry format, shared by every cache: object code
(the compiler's native kernels and the runtime's own native loops alike, `runtime.native_code`), whole programs
(`compiler.host.program_cache`) and the parser's tables (`frontend.parser`).

**Folder.** `cache_root()` is `$DAPHNEC_CACHE_DIR` (`~` expanded), else `$XDG_CACHE_HOME/daphnec`, else
`~/.cache/daphnec`.

**Parser tables.** `lark_parser` keeps the analysed grammar of a Lark LALR parser (DaphneDSL's, SQL's) as a
JSON entry here, never Lark's own `cache=True`: that is a pickle at a predictable path in the shared temp folder,
which any local user could plant. DaphneDSL's tables also ship with the sources (`grammar.tables.json`, JSON
too), so that even a first run with empty caches does not build them.

**Trust.** Entries are code or steer code (object code, pickled Python code objects, parser tables), so a cache
folder is used only if this user alone can write it (`trusted_folder`): it is created `0700`; a folder owned by
another user or writable by group/others, a relative path (which would put entries in the working directory),
the file-system root or the home folder itself is refused with one warning on stderr and the run goes on
without the caches. Entries are opened only if they are regular files (never following a symlink, never blocking
on a FIFO) no larger than their cache's bound, and carry the SHA-256 of their payload against damage.
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass
class ObjectCodeCache:
    enabled: bool = True


OBJECT_CODE = ObjectCodeCache()
"""Whether object code is cached on disk: the JIT's kernels and the runtime's own native loops alike
(`--no-kernel-cache` turns it off for both: `tools.driver.configure_object_cache`)."""

MAX_OBJECT_BYTES = 64 << 20
"""The largest object-code entry read or written (a kernel's or loop module's code is a few KiB)."""


def read_object(name: str, magic: bytes, limit: int = MAX_OBJECT_BYTES) -> bytes | None:
    """The object code cached as `name` in the cache folder, or None: the cache is off, the folder refused, the
    entry missing, larger than `limit` or damaged (an entry carries the SHA-256 of its code: loading broken code
    would crash)."""
    if not OBJECT_CODE.enabled or not trusted_folder(cache_root()):
        return None
    try:
        return read_entry(cache_root() / name, magic, limit)
    except (OSError, ValueError):
        return None


def write_object(name: str, magic: bytes, obj: bytes, limit: int = MAX_OBJECT_BYTES) -> bool:
    """Cache object code as `name` (atomically); False when the cache is off, the code larger than `limit` or the
    folder not writable."""
    if not OBJECT_CODE.enabled or len(obj) > limit or not trusted_folder(cache_root()):
        return False
    try:
        write_entry(cache_root() / name, magic, obj)
    except OSError:
        return False
    return True


def drop_object(name: str) -> None:
    """Remove an entry whose code failed the object-code checks (`runtime.native_code`), so that the next run
    compiles it again."""
    try:
        (cache_root() / name).unlink()
    except OSError:
        pass


def cache_root() -> Path:
    """daphnec's cache folder as configured (not yet checked: see `trusted_folder`)."""
    env = os.environ.get("DAPHNEC_CACHE_DIR")
    if env:
        return Path(os.path.expanduser(env))
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(os.path.expanduser(base)) / "daphnec"


_TRUSTED: dict[Path, bool] = {}
_WARNED: list[str] = []


def trusted_folder(folder: Path) -> bool:
    """Whether cache entries may be read from and written to `folder` (created `0700` if missing); the first
    refusal of a run prints one warning (see the module docstring), later ones are silent."""
    known = _TRUSTED.get(folder)
    if known is None:
        why = _distrust(folder)
        known = _TRUSTED[folder] = why is None
        if why is not None and not _WARNED:
            _WARNED.append(why)
            print(
                f"daphnec: warning: not using the cache folder '{folder}': {why}; this run does not use it",
                file=sys.stderr,
            )
    return known


def _distrust(folder: Path) -> str | None:
    """Why `folder` cannot hold cache entries, None if it can."""
    if not folder.is_absolute():
        return "it is not an absolute path (entries would land in the working directory)"
    if folder == Path(folder.anchor) or folder == Path(os.path.expanduser("~")):
        return "it is the file-system root or the home folder, not a folder of its own"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = os.stat(folder)
    except OSError as e:
        return f"it cannot be created ({e.strerror})"
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a folder"
    if st.st_uid != os.geteuid():
        return "it is owned by another user"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return "other users may write to it (group/others write permission)"
    return None


def read_entry(path: Path, magic: bytes, limit: int) -> bytes:
    """The payload of a cache entry (`magic`, the payload's SHA-256, the payload). Raises OSError when it cannot
    be read or is no regular file (a symlink, FIFO or device is never followed or read) and ValueError when it is
    larger than `limit`, damaged or of another format (using broken entries could crash the run)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"cache entry {path} is not a regular file")
        head = len(magic) + 32
        if st.st_size > limit + head:
            raise ValueError(f"cache entry {path} is larger than {limit} bytes")
        raw = f.read(limit + head + 1)
    if len(raw) > limit + head:
        raise ValueError(f"cache entry {path} is larger than {limit} bytes")
    if raw[: len(magic)] != magic or hashlib.sha256(raw[head:]).digest() != raw[len(magic) : head]:
        raise ValueError(f"damaged cache entry {path}")
    return raw[head:]


def write_entry(path: Path, magic: bytes, payload: bytes) -> None:
    """Write a cache entry atomically (a temporary file in the same folder, renamed into place), so concurrent
    runs never see half an entry; raises OSError when the folder is not writable."""
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=path.suffix, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(magic + hashlib.sha256(payload).digest() + payload)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


_PARSER_MAGIC = b"daphnec-parser-1\n"
_PARSER_LIMIT = 16 << 20


def lark_parser(grammar_path: str, options: dict[str, Any], **load_options: Any) -> Any:
    """A Lark parser of the grammar file with `options` (plain data), its tables loaded from the tables shipped next
    to the grammar (`shipped_tables_path`) or from this cache folder when an intact entry for this grammar, these
    options and this Lark version exists, else built and stored; `load_options` are the objects it is given either
    way (`lexer_callbacks`, `postlex`). The key covers the grammar, the options and Lark's version."""
    import json

    import lark

    with open(grammar_path, "rb") as f:
        grammar = f.read()
    digest = hashlib.sha256(grammar + repr((sorted(options.items()), lark.__version__)).encode()).hexdigest()
    entry = _shipped_tables(grammar_path, _grammar_digest(grammar, options), lark.__version__)
    if entry is not None:
        try:
            return lark.Lark._load_from_dict(entry["data"], entry["memo"], **load_options)
        except Exception:  # noqa: BLE001, S110 - damaged shipped tables: the cache folder's or a fresh build
            pass
    folder = cache_root()
    path = folder / f"parser-{digest}.json"
    if trusted_folder(folder):
        try:
            entry = _json_decode(json.loads(read_entry(path, _PARSER_MAGIC, _PARSER_LIMIT)))
            return lark.Lark._load_from_dict(entry["data"], entry["memo"], **load_options)
        except Exception:  # noqa: BLE001, S110 - a missing or damaged entry: build the tables from the grammar
            pass
    parser = lark.Lark(grammar.decode(), **options, **load_options)
    if trusted_folder(folder):
        try:
            write_entry(path, _PARSER_MAGIC, json.dumps(_json_encode(_lark_tables(parser, load_options))).encode())
        except (OSError, TypeError, ValueError):
            pass
    return parser


def _lark_tables(parser: Any, load_options: dict[str, Any]) -> dict[str, Any]:
    """A parser's analysed grammar as plain data (`Lark._load_from_dict`'s arguments)."""
    from lark.grammar import Rule
    from lark.lexer import TerminalDef

    data, memo = parser.memo_serialize([TerminalDef, Rule])
    data["options"] = {k: v for k, v in data["options"].items() if k not in load_options}  # given on load
    return {"data": data, "memo": memo}


def shipped_tables_path(grammar_path: str) -> Path:
    """Where the tables of a grammar shipped with daphnec live: next to it (`grammar.lark` ->
    `grammar.tables.json`). Building DaphneDSL's tables costs ~0.2-0.4 s, the first run's largest single cost
    before its first statement; loading them ~10 ms. They are part of the sources (no cache folder, no trust
    question), written by `write_shipped_tables`, and used only if they match the grammar, the options and the
    installed Lark version; otherwise the cache folder's entry or a fresh build serves as before."""
    return Path(grammar_path).with_suffix(".tables.json")


def _grammar_digest(grammar: bytes, options: dict[str, Any]) -> str:
    return hashlib.sha256(grammar + repr(sorted(options.items())).encode()).hexdigest()


def _shipped_tables(grammar_path: str, grammar_digest: str, lark_version: str) -> dict[str, Any] | None:
    """The shipped tables of this grammar if they exist and match it, its options and the installed Lark."""
    import json

    from daphnec.runtime.testing_hooks import no_shipped_tables

    if no_shipped_tables():
        return None
    try:
        with open(shipped_tables_path(grammar_path), "rb") as f:
            entry = json.loads(f.read(_PARSER_LIMIT + 1))
    except (OSError, ValueError):
        return None
    if not isinstance(entry, dict) or entry.get("grammar") != grammar_digest or entry.get("lark") != lark_version:
        return None
    tables = _json_decode(entry.get("tables"))
    return tables if isinstance(tables, dict) else None


def write_shipped_tables(grammar_path: str, options: dict[str, Any], **load_options: Any) -> Path:
    """Build a grammar's tables and write them next to it (`shipped_tables_path`); run again after changing the
    grammar or its options (tests/test_parser.py checks that DaphneDSL's match)."""
    import json

    import lark

    with open(grammar_path, "rb") as f:
        grammar = f.read()
    parser = lark.Lark(grammar.decode(), **options, **load_options)
    entry = {
        "grammar": _grammar_digest(grammar, options),
        "lark": lark.__version__,
        "tables": _json_encode(_lark_tables(parser, load_options)),
    }
    path = shipped_tables_path(grammar_path)
    path.write_text(json.dumps(entry, separators=(",", ":")) + "\n")
    return path


def shipped_tables_current(grammar_path: str, options: dict[str, Any]) -> bool:
    """Whether the tables shipped next to a grammar were built from this grammar with these options."""
    import json

    with open(grammar_path, "rb") as f:
        digest = _grammar_digest(f.read(), options)
    try:
        return json.loads(shipped_tables_path(grammar_path).read_bytes()).get("grammar") == digest
    except (OSError, ValueError):
        return False


def _json_encode(value: Any) -> Any:
    """Plain data -> JSON values; dicts with keys other than strings become `{"\\u0000items": [[k, v], ...]}`."""
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value):
            return {k: _json_encode(v) for k, v in value.items()}
        return {"\0items": [[_json_encode(k), _json_encode(v)] for k, v in value.items()]}
    if isinstance(value, (list, tuple)):
        return [_json_encode(v) for v in value]
    return value


def _json_decode(value: Any) -> Any:
    if isinstance(value, dict):
        if "\0items" in value:
            return {_json_decode(k): _json_decode(v) for k, v in value["\0items"]}
        return {k: _json_decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_decode(v) for v in value]
    return value
