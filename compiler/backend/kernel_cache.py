"""On-disk cache of compiled task kernels (object code), so a second run loads instead of compiling.

Compiling a kernel costs tens of milliseconds (xDSL lowering plus LLVM at O3); loading its object code into the
engine costs about one. An entry is keyed by a hash of everything the code depends on: the pipeline's IR text
(before lowering), the host (CPU name and features, llvmlite and LLVM versions, numpy's array layout: the
runtime loader's `host`), and the source of the lowering itself, so editing a pass never loads stale code.

The folder is `runtime.cache_files.cache_root()` (`$DAPHNEC_CACHE_DIR`, default `~/.cache/daphnec`). Writers
never leave a partial file behind: each entry is written to a temporary file in the same folder and moved into
place with `os.replace` (atomic on POSIX), so concurrent runs at worst compile the same kernel twice. Unreadable or
unwritable folders simply disable the cache for that run. `--no-kernel-cache` disables it.

Entries are code, so the folder must be one only this user can write, and entries are opened only if they are
regular files below `runtime.cache_files.MAX_OBJECT_BYTES`; loaded object code is checked again by the loader
(`runtime.vectorized.loader`: an ELF object of this host defining the kernel's symbols and no loaded ones), and an
entry that fails is dropped and recompiled.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from daphnec.runtime import cache_files
from daphnec.runtime.cache_files import trusted_folder

_SUFFIX = ".o"
_MAGIC = b"daphnec-kernel-1\n"


SETTINGS = cache_files.OBJECT_CODE
"""One switch for every object-code cache (the runtime's own loops read it too)."""


def configure(enabled: bool) -> None:
    """Set once per run by the driver (`--no-kernel-cache` turns the cache off)."""
    SETTINGS.enabled = enabled


def cache_dir() -> Path:
    """The kernel cache folder as configured (checked by `trusted_folder` before any use)."""
    return cache_files.cache_root()


_SOURCE_HASH: str | None = None


def _lowering_source_hash() -> str:
    """A hash of the code that shapes a kernel: the lowering passes, the pass pipeline that runs them, the JIT and
    the runtime's loader (its target machine)."""
    global _SOURCE_HASH
    if _SOURCE_HASH is None:
        compiler = Path(__file__).parents[1]
        files = sorted((compiler / "lowering").glob("*.py"))
        files += [compiler / "pipeline.py", compiler / "backend" / "jit.py"]
        files.append(compiler.parent / "runtime" / "vectorized" / "loader.py")
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
    """The cached object code for `key`, or None (`runtime.cache_files.read_object`)."""
    return cache_files.read_object(key + _SUFFIX, _MAGIC)


def contains(key: str) -> bool:
    """Whether the cache holds an entry for `key` (not read or checked: `load` does that)."""
    return SETTINGS.enabled and trusted_folder(cache_dir()) and (cache_dir() / (key + _SUFFIX)).is_file()


def drop(key: str) -> None:
    """Remove an entry whose object code failed the loader's checks, so the next run recompiles it."""
    cache_files.drop_object(key + _SUFFIX)


def store(key: str, obj: bytes) -> bool:
    """Write an entry atomically; False when the cache is off or the folder is not writable."""
    return cache_files.write_object(key + _SUFFIX, _MAGIC, obj)
