"""On-disk cache of compiled task kernels (object code), so a second run loads instead of compiling.

Compiling a kernel costs tens of milliseconds (xDSL lowering plus LLVM at O3); loading its object code into the
engine costs about one. An entry is keyed by a hash of everything the code depends on: the pipeline's IR text,
the host CPU name and features, the llvmlite (LLVM) version, and the source of the lowering itself, so editing a
pass never loads stale code.

The folder is `$DAPHNEC_CACHE_DIR`, else `$XDG_CACHE_HOME/daphnec`, else `~/.cache/daphnec`. Writers never leave
a partial file behind: each entry is written to a temporary file in the same folder and moved into place with
`os.replace` (atomic on POSIX), so concurrent runs at worst compile the same kernel twice. Unreadable or
unwritable folders simply disable the cache for that run. `--no-kernel-cache` disables it.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
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
    """A hash of the compiler code that shapes a kernel (the lowering package and the JIT)."""
    global _SOURCE_HASH
    if _SOURCE_HASH is None:
        here = Path(__file__).parent
        files = sorted((here / "lowering").glob("*.py")) + [here / "jit.py"]
        h = hashlib.sha256()
        for f in files:
            h.update(f.name.encode())
            h.update(f.read_bytes())
        _SOURCE_HASH = h.hexdigest()
    return _SOURCE_HASH


def cache_key(ir_text: str, cpu: str, features: str, llvm_version: str) -> str:
    h = hashlib.sha256()
    for part in (ir_text, cpu, features, llvm_version, _lowering_source_hash()):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def load(key: str) -> bytes | None:
    """The cached object code for `key`, or None (also when the cache is off, unreadable or the entry damaged:
    an entry carries the SHA-256 of its object code, and loading broken code would crash the process)."""
    if not SETTINGS.enabled:
        return None
    try:
        raw = (cache_dir() / (key + _SUFFIX)).read_bytes()
    except OSError:
        return None
    head = len(_MAGIC) + 32
    if raw[: len(_MAGIC)] != _MAGIC or hashlib.sha256(raw[head:]).digest() != raw[len(_MAGIC) : head]:
        return None
    return raw[head:]


def store(key: str, obj: bytes) -> bool:
    """Write an entry atomically; False when the cache is off or the folder is not writable."""
    if not SETTINGS.enabled:
        return False
    folder = cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=_SUFFIX, dir=folder)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(_MAGIC + hashlib.sha256(obj).digest() + obj)
            os.replace(tmp, folder / (key + _SUFFIX))
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        return False
    return True
