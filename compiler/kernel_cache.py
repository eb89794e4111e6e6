"""On-disk cache of compiled task kernels (object code), so a second run loads instead of compiling.

Compiling a kernel costs tens of milliseconds (xDSL lowering plus LLVM at O3); loading its object code into the
engine costs about one. An entry is keyed by a hash of everything the code depends on: the pipeline's IR text
(before lowering), the host (CPU name and features, llvmlite and LLVM versions, numpy's array layout: the
runtime loader's `host`), and the source of the lowering itself, so editing a pass never loads stale code.

The folder is `$DAPHNEC_CACHE_DIR`, else `$XDG_CACHE_HOME/daphnec`, else `~/.cache/daphnec`. Writers never leave
a partial file behind: each entry is written to a temporary file in the same folder and moved into place with
`os.replace` (atomic on POSIX), so concurrent runs at worst compile the same kernel twice. Unreadable or
unwritable folders simply disable the cache for that run. `--no-kernel-cache` disables it.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

_SUFFIX = ".o"
_MAGIC = b"daphnec-kernel-1\n"


@dataclass
class CacheSettings:
    enabled: bool = True


SETTINGS = CacheSettings()


def configure(enabled: bool) -> None:
    """Set once per run by the driver (`--no-kernel-cache` turns the cache off)."""
    SETTINGS.enabled = enabled


def cache_dir() -> Path:
    env = os.environ.get("DAPHNEC_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "daphnec"


_SOURCE_HASH: str | None = None


def _lowering_source_hash() -> str:
    """A hash of the code that shapes a kernel: the lowering passes, the pass pipeline that runs them, the JIT and
    the runtime's loader (its target machine)."""
    global _SOURCE_HASH
    if _SOURCE_HASH is None:
        here = Path(__file__).parent
        files = sorted((here / "lowering").glob("*.py")) + [here / "pipeline.py", here / "jit.py"]
        files.append(here.parent / "runtime" / "vectorized" / "loader.py")
        h = hashlib.sha256()
        for f in files:
            h.update(f.name.encode())
            h.update(f.read_bytes())
        _SOURCE_HASH = h.hexdigest()
    return _SOURCE_HASH


def cache_key(ir_text: str, host: str) -> str:
    h = hashlib.sha256()
    for part in (ir_text, host, _lowering_source_hash()):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def load(key: str) -> bytes | None:
    """The cached object code for `key`, or None (also when the cache is off, unreadable or the entry damaged:
    an entry carries the SHA-256 of its object code, and loading broken code would crash the process)."""
    if not SETTINGS.enabled:
        return None
    try:
        return read_entry(cache_dir() / (key + _SUFFIX), _MAGIC)
    except (OSError, ValueError):
        return None


def store(key: str, obj: bytes) -> bool:
    """Write an entry atomically; False when the cache is off or the folder is not writable."""
    if not SETTINGS.enabled:
        return False
    try:
        write_entry(cache_dir() / (key + _SUFFIX), _MAGIC, obj)
    except OSError:
        return False
    return True


# -- the entry format, shared with the whole-program cache (compiler/program_cache.py) --------------------------------


def read_entry(path: Path, magic: bytes) -> bytes:
    """The payload of a cache entry (`magic`, the payload's SHA-256, the payload). Raises OSError when it cannot
    be read and ValueError when it is damaged or of another format (using broken entries could crash the run)."""
    raw = path.read_bytes()
    head = len(magic) + 32
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
