"""Loading native code into the process: the one llvmlite MCJIT engine for the host CPU.

The compiler (`compiler.backend.jit`) emits object code with this loader's target machine and loads it here; a program
restored from the whole-program cache loads its kernels' object code here too, without the compiler, and the
runtime's own native loops (`runtime.kernels.native_folds`, `datagen_select`) are compiled and loaded here as
well, their object code cached in the cache folder like the kernels' (`Loader.build`). Object code is loaded once
per key (loading the same symbols twice would clash).

Object code comes from the on-disk kernel cache, so it is checked before LLVM sees it (`check_object`): an ELF
relocatable object for this machine that defines every symbol asked for and none that is already loaded (a
duplicate definition would abort the process inside LLVM); after loading, every symbol must have an address.
A failure raises `BadObjectCode` and the caller drops the cache entry and recompiles.

`DAPHNEC_JIT_LOG=<file>` appends one line per kernel (`compiled`, `loaded`, `fallback` or `error`, the kernel
name or reason, milliseconds), for tests and benchmarks.
"""

from __future__ import annotations

import hashlib
import os
import struct
import sys
import threading
from typing import Any

from daphnec.runtime import cache_files
from daphnec.runtime.vectorized.kernel import ARRAY_DATA_OFFSET


class BadObjectCode(ValueError):
    """Object code that must not be loaded (see the module docstring)."""


def _host_machine() -> bytes:
    """The ELF `e_machine` field of this process's own executable (what kernels must be built for)."""
    with open(sys.executable, "rb") as f:
        return f.read(20)[18:20]


def defined_symbols(obj: bytes) -> set[str]:
    """The global symbols an ELF64 relocatable object of this machine defines; BadObjectCode for anything else."""
    little = sys.byteorder == "little"
    if obj[:6] != b"\x7fELF\x02" + (b"\x01" if little else b"\x02") or obj[18:20] != _host_machine():
        raise BadObjectCode("not an ELF64 object for this machine")
    e = "<" if little else ">"
    try:
        shoff, shentsize, shnum = struct.unpack_from(e + "Q", obj, 40)[0], *struct.unpack_from(e + "HH", obj, 58)
        sections = [struct.unpack_from(e + "IIQQQQIIQQ", obj, shoff + i * shentsize) for i in range(shnum)]
        names: set[str] = set()
        for _, sh_type, _, _, off, size, link, _, _, entsize in sections:
            if sh_type != 2 or entsize != 24:  # SHT_SYMTAB of Elf64_Sym entries
                continue
            stroff = sections[link][4]
            for at in range(off, off + size, entsize):
                st_name, st_info, _, st_shndx = struct.unpack_from(e + "IBBH", obj, at)
                if st_info >> 4 in (1, 2) and st_shndx != 0:  # a GLOBAL or WEAK symbol defined here
                    end = obj.index(b"\0", stroff + st_name)
                    names.add(obj[stroff + st_name : end].decode())
    except (struct.error, IndexError, ValueError) as err:
        raise BadObjectCode(f"damaged ELF object ({err})") from None
    return names


class Loader:
    """The host's llvmlite target machine (CPU name and features, O3) and the MCJIT engine holding every kernel."""

    def __init__(self) -> None:
        import llvmlite
        import llvmlite.binding as llvm

        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        self.llvm: Any = llvm
        cpu, features = llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()
        llvm_version = ".".join(map(str, llvm.llvm_version_info))
        self.host = f"{cpu}|{features}|llvmlite {llvmlite.__version__}|LLVM {llvm_version}|data@{ARRAY_DATA_OFFSET}"
        """What object code must have been built for: CPU, LLVM and numpy's array layout (cache keys hold it)."""
        self.tm = llvm.Target.from_default_triple().create_target_machine(cpu=cpu, features=features, opt=3)
        self.ee = llvm.create_mcjit_compiler(llvm.parse_assembly(""), self.tm)
        self.lock = threading.Lock()
        self.loaded: dict[str, dict[str, int]] = {}
        self.objects: dict[str, bytes] = {}
        """The object code of every key loaded (a few KiB each): a program stored later may need it in a kernel
        cache folder it was never written to (`compiler.host.program_cache.store`)."""
        self.defined: set[str] = set()
        """Every global symbol of every object loaded so far."""

    def compile_ir(self, ir_text: str) -> bytes:
        """LLVM IR text -> optimised (O3) object code for the host (the JIT's kernels, the runtime's native
        folds)."""
        mod = self.llvm.parse_assembly(ir_text)
        mod.verify()
        pb = self.llvm.create_pass_builder(self.tm, self.llvm.PipelineTuningOptions(speed_level=3))
        pb.getModulePassManager().run(mod, pb)
        return self.tm.emit_object(mod)

    def build(self, key: str, ir_text: str, symbols: list[str]) -> dict[str, int]:
        """The addresses of `symbols` in the runtime's own native code `key` (LLVM IR text: `native_folds`,
        `datagen_select`), loaded on first use: from the object-code cache folder when an earlier run compiled
        it for this host (compiling costs ~60 ms, loading ~1), else compiled and stored there (two threads may
        both compile; one loads)."""
        with self.lock:
            known = key in self.loaded
        if known:
            return self.load(key, b"", symbols)
        entry = self._cache_entry(ir_text)
        obj = cache_files.read_object(entry, _ENTRY_MAGIC, _ENTRY_LIMIT)
        if obj is not None:
            try:
                return self.load(key, obj, symbols)
            except BadObjectCode:
                cache_files.drop_object(entry)
        obj = self.compile_ir(ir_text)
        addresses = self.load(key, obj, symbols)
        cache_files.write_object(entry, _ENTRY_MAGIC, obj, _ENTRY_LIMIT)
        return addresses

    def _cache_entry(self, ir_text: str) -> str:
        """The name of the cache entry holding the object code of `ir_text` for this host."""
        h = hashlib.sha256()
        for part in (ir_text, self.host, _source_digest()):
            h.update(part.encode())
            h.update(b"\0")
        return f"loop-{h.hexdigest()}.obj"

    def load(self, key: str, obj: bytes, symbols: list[str]) -> dict[str, int]:
        """Add the object code `key` to the engine (once) and return the addresses of `symbols` in it; raises
        BadObjectCode (before loading anything) for object code that fails `check_object`."""
        with self.lock:
            known = self.loaded.get(key)
            if known is None:
                self.check_object(obj, symbols)
                self.ee.add_object_file(self.llvm.ObjectFileRef.from_data(obj))
                self.defined |= defined_symbols(obj)
                self.objects[key] = obj
                known = self.loaded[key] = {}
            for sym in symbols:
                if sym not in known:
                    known[sym] = self.ee.get_function_address(sym)
                    if not known[sym]:
                        raise BadObjectCode(f"symbol {sym} has no address after loading")
            return {sym: known[sym] for sym in symbols}

    def check_object(self, obj: bytes, symbols: list[str]) -> None:
        defined = defined_symbols(obj)
        missing = [s for s in symbols if s not in defined]
        if missing:
            raise BadObjectCode(f"object code lacks the symbols {missing}")
        clash = defined & self.defined
        if clash:
            raise BadObjectCode(f"object code redefines loaded symbols {sorted(clash)[:3]}")


_ENTRY_MAGIC = b"daphnec-runtime-loop-1\n"
_ENTRY_LIMIT = 16 << 20
_SOURCE_DIGEST: list[str] = []


def _source_digest() -> str:
    """This file's source: it sets the target machine and the optimisation pipeline the cached code was built
    with."""
    if not _SOURCE_DIGEST:
        with open(__file__, "rb") as f:
            _SOURCE_DIGEST.append(hashlib.sha256(f.read()).hexdigest())
    return _SOURCE_DIGEST[0]


_LOADER: Loader | None = None
_INIT_LOCK = threading.Lock()


def loader() -> Loader:
    global _LOADER
    with _INIT_LOCK:
        if _LOADER is None:
            _LOADER = Loader()
    return _LOADER


_LOG_LOCK = threading.Lock()


def log(event: str, name: str, seconds: float) -> None:
    """One line of `DAPHNEC_JIT_LOG` (if set)."""
    path = os.environ.get("DAPHNEC_JIT_LOG")
    if path:
        with _LOG_LOCK, open(path, "a") as f:
            f.write(f"{event} {name} {seconds * 1000:.3f}\n")


def log_error(e: BaseException) -> None:
    """A kernel that failed to build (its pipeline keeps the Python body): one `error` line."""
    log("error", f"{type(e).__name__}:{e}".replace(" ", "_").replace("\n", "_")[:200], 0.0)
