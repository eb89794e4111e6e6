"""Native code in this process: the host's target machine, LLVM IR to object code, the object-code cache and the
one llvmlite MCJIT engine every native function is loaded into.

    key = object_key(text, *shaped_by)                    what identifies a piece of object code on this host
    addresses, event = obtain(key, symbols, compile)      loaded once: from the cache folder, or compiled and stored

Everything native goes through here: the compiler's pipeline and product kernels (`compiler.backend`, which emits
LLVM IR for `engine().tm` and compiles it with `engine().compile_ir`), the runtime's own native loops
(`runtime.kernels.native_folds`, `datagen_select`: `ir_functions`), and a program restored from the
whole-program cache, which loads its kernels' object code here without the compiler. It lives in the runtime
because those last two run without the compiler; llvmlite is imported only when the first native function is
needed.

**Keys.** One scheme for all object code: the SHA-256 of the text that identifies it (the LLVM IR of a runtime
loop; a pipeline's IR before lowering), the host (`Engine.host`: CPU name and features, llvmlite and LLVM versions,
numpy's array layout), this file (the target machine and the optimisation pipeline) and whatever else shapes the
code (`shaped_by`: the compiler passes a digest of its lowering's sources, so editing a pass never loads stale
code). The entry is `<key>.o` in the cache folder (`runtime.cache_files`: private folder, atomic writes, a size
bound, a checksum; `--no-kernel-cache` turns it off).

**Checks.** Object code comes from the cache folder, so it is checked before LLVM sees it (`Engine.check_object`):
an ELF relocatable object for this machine that defines every symbol asked for and none that is already loaded (a
duplicate definition would abort the process inside LLVM); after loading, every symbol must have an address. A
failure raises `BadObjectCode`, and the entry is dropped (the next build compiles it again).
Object code is loaded once per key (loading the same symbols twice would clash).

`DAPHNEC_JIT_LOG=<file>` appends one line per compiler-made kernel (`compiled`, `loaded`, `fallback` or `error`,
the kernel name or reason, milliseconds of the work itself, and for background builds `waited=<ms>` spent queued
before it), for tests and benchmarks.
"""

from __future__ import annotations

import ctypes
import os
import re
import struct
import sys
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import numpy as np

from daphnec.runtime import cache_files


class BadObjectCode(ValueError):
    """Object code that must not be loaded (see the module docstring)."""


def _array_data_offset() -> int:
    """Where `PyArrayObject.data` sits (right after PyObject_HEAD); probed, not assumed."""
    a = np.empty(1)
    for off in range(8, 65, 8):
        if ctypes.c_void_p.from_address(id(a) + off).value == a.ctypes.data:
            return off
    raise RuntimeError("cannot locate the data pointer of a numpy array")


ARRAY_DATA_OFFSET = _array_data_offset()
"""Kernel entry points read a numpy array's data pointer from the array object at this offset (reading it there
costs nothing; `arr.ctypes.data` costs microseconds per call). Part of the host string: object code depends on it."""


def _host_machine() -> bytes:
    """The ELF `e_machine` field of this process's own executable (what object code must be built for)."""
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


class Engine:
    """The host's llvmlite target machine (CPU name and features, O3) and the MCJIT engine holding all native
    code of the process."""

    def __init__(self) -> None:
        import llvmlite
        import llvmlite.binding as llvm

        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        self.llvm: Any = llvm
        cpu, features = llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()
        llvm_version = ".".join(map(str, llvm.llvm_version_info))
        self.host = f"{cpu}|{features}|llvmlite {llvmlite.__version__}|LLVM {llvm_version}|data@{ARRAY_DATA_OFFSET}"
        """What object code must have been built for: CPU, LLVM and numpy's array layout (keys hold it)."""
        self.tm = llvm.Target.from_default_triple().create_target_machine(cpu=cpu, features=features, opt=3)
        self.ee = llvm.create_mcjit_compiler(llvm.parse_assembly(""), self.tm)
        self.lock = threading.Lock()
        self.compile_lock = threading.Lock()
        """One compile at a time: llvmlite parses every module into LLVM's one global context, which is not
        thread-safe (the JIT thread, the warm-up and a background build of the runtime's loops may compile at once;
        two at once failed LLVM's ConstantFP assertion)."""
        self.loaded: dict[str, dict[str, int]] = {}
        """Key -> the addresses of the symbols asked for so far."""
        self.objects: dict[str, bytes] = {}
        """The object code of every key loaded (a few KiB each): a program stored later may need it in a cache
        folder it was never written to (`store_loaded`)."""
        self.defined: set[str] = set()
        """Every global symbol of every object loaded so far."""

    def compile_ir(self, ir_text: str) -> bytes:
        """LLVM IR text -> optimised (O3) object code for the host."""
        with self.compile_lock:
            mod = self.llvm.parse_assembly(ir_text)
            mod.verify()
            pb = self.llvm.create_pass_builder(self.tm, self.llvm.PipelineTuningOptions(speed_level=3))
            pb.getModulePassManager().run(mod, pb)
            return self.tm.emit_object(mod)

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


_ENGINE: Engine | None = None
_INIT_LOCK = threading.Lock()


def engine() -> Engine:
    """The process's engine, set up on first use (imports llvmlite and loads LLVM: ~50-150 ms)."""
    global _ENGINE
    with _INIT_LOCK:
        if _ENGINE is None:
            _ENGINE = Engine()
    return _ENGINE


# ---------------------------------------------------------------------------------------------------------------------
# Keys and the cache folder
# ---------------------------------------------------------------------------------------------------------------------

_MAGIC = b"daphnec-object-1\n"
_SUFFIX = ".o"
_SOURCE_DIGEST: list[str] = []


def _source_digest() -> str:
    """This file's source: it sets the target machine and the optimisation pipeline of all object code."""
    if not _SOURCE_DIGEST:
        import hashlib  # here: kernels import this module for `BuiltOnce`, a cached run never hashes (OpenSSL)

        with open(__file__, "rb") as f:
            _SOURCE_DIGEST.append(hashlib.sha256(f.read()).hexdigest())
    return _SOURCE_DIGEST[0]


def object_key(text: str, *shaped_by: str) -> str:
    """The key of the object code identified by `text` on this host (see the module docstring)."""
    import hashlib

    h = hashlib.sha256()
    for part in (text, engine().host, _source_digest(), *shaped_by):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def cached(key: str) -> bytes | None:
    """The object code the cache folder holds for `key`, or None (`runtime.cache_files.read_object`)."""
    return cache_files.read_object(key + _SUFFIX, _MAGIC)


def store(key: str, obj: bytes) -> bool:
    """Write the entry of `key` (atomically); False when the cache is off or the folder not writable."""
    return cache_files.write_object(key + _SUFFIX, _MAGIC, obj)


def drop(key: str) -> None:
    """Remove an entry whose object code failed the checks, so that the next build compiles it again."""
    cache_files.drop_object(key + _SUFFIX)


def obtain(key: str, symbols: list[str], compile_object: Callable[[], bytes]) -> tuple[dict[str, int], str]:
    """The addresses of `symbols` in the object code `key`, and how it got here: `known` (this process loaded it
    already), `loaded` (from the cache folder) or `compiled` (by `compile_object()`, then stored). Two threads may
    both compile the same key; one loads."""
    eng = engine()
    with eng.lock:
        known = key in eng.loaded
    if known:
        return eng.load(key, b"", symbols), "known"
    obj = cached(key)
    if obj is not None:
        try:
            return eng.load(key, obj, symbols), "loaded"
        except BadObjectCode as e:  # a valid checksum but the wrong code: drop it, compile again
            log("dropped", str(e).replace(" ", "_")[:200], 0.0)
            drop(key)
    obj = compile_object()
    store(key, obj)
    return eng.load(key, obj, symbols), "compiled"


def ir_functions(ir_text: str, symbols: list[str]) -> dict[str, int]:
    """The addresses of `symbols` in the LLVM IR module `ir_text` (the runtime's own native loops): compiled once
    per host (~60 ms), later loaded from the cache folder (~1 ms)."""
    return obtain(object_key(ir_text), symbols, lambda: engine().compile_ir(ir_text))[0]


CSR_INDEX_TYPES = {"int32": "i32", "int64": "i64"}
"""The LLVM type of a CSR matrix's index arrays (scipy's int32 or int64) by numpy dtype name: the runtime's CSR
loops are built for each."""


def csr_loop_ir(template: str, it: str, **fields: str) -> str:
    """A CSR loop's LLVM IR for index type `it`: `template` formatted with `it` (and `fields`), its `sext {it} ...
    to i64` widenings made `add i64 %x, 0` for i64 indices (LLVM rejects a sign extension to the same width)."""
    text = template.format(it=it, **fields)
    return re.sub(r"sext i64 (%\w+) to i64", r"add i64 \1, 0", text) if it == "i64" else text


T = TypeVar("T")
_UNBUILT: Any = object()


class BuiltOnce(Generic[T]):
    """What a runtime module builds or looks up once per process (`build()`: native loops from `ir_functions`
    wrapped by ctypes, or OpenBLAS's thread-count functions, which may be None), on first use or from the warm-up
    thread (runtime/scheduling/warmup.py), whichever comes first: a double-checked lock, so that the hot path
    costs one attribute read and two threads never build twice."""

    def __init__(self, build: Callable[[], T]) -> None:
        self._build = build
        self._value: T = _UNBUILT
        self._lock = threading.Lock()
        self._started = False

    def get(self) -> T:
        """The built value (built now by this thread if no thread did yet; others wait for it)."""
        value = self._value
        if value is _UNBUILT:
            with self._lock:
                value = self._value
                if value is _UNBUILT:
                    value = self._value = self._build()
        return value

    @property
    def built(self) -> bool:
        """Whether `get()` would return at once (a kernel may choose another path while it would not)."""
        return self._value is not _UNBUILT

    def build_in_background(self) -> None:
        """Start the build on a thread, once, unless built: a kernel takes its numpy path (the same bits) until
        `built`, instead of waiting for a build on its first call (LLVM's compile runs outside the GIL). Not a
        daemon: the interpreter waits for it at exit (LLVM still compiling while the process tears down crashes it),
        and the object code reaches the cache folder for the next run."""
        if self._started or self._value is not _UNBUILT:
            return
        self._started = True  # two racing callers start two threads at worst; `get()`'s lock builds once
        threading.Thread(target=self._build_quietly, name="daphne-native-build").start()

    def _build_quietly(self) -> None:
        try:
            self.get()
        except Exception:  # noqa: BLE001, S110 - only an optimisation: the first call that needs it reports it
            pass


def addresses(key: str) -> dict[str, int]:
    """The addresses of the symbols loaded so far from the object code `key`."""
    return engine().loaded[key]


def store_loaded(key: str) -> bool:
    """Make sure the cache folder holds the object code `key` this process loaded (it may have been loaded while
    another folder was configured, or with the cache off); False if it cannot."""
    if cache_files.OBJECT_CODE.enabled and cache_files.has_entry(cache_files.cache_root() / (key + _SUFFIX)):
        return True
    obj = engine().objects.get(key)
    return obj is not None and store(key, obj)


# ---------------------------------------------------------------------------------------------------------------------
# DAPHNEC_JIT_LOG
# ---------------------------------------------------------------------------------------------------------------------

_LOG_LOCK = threading.Lock()


def log(event: str, name: str, seconds: float, waited: float | None = None) -> None:
    """One line of `DAPHNEC_JIT_LOG` (if set): the work's own milliseconds, then (`waited=`) how long the request
    waited before the work began (a background build queues behind other kernels and the compiling thread)."""
    path = os.environ.get("DAPHNEC_JIT_LOG")
    if path:
        extra = f" waited={waited * 1000:.3f}" if waited is not None else ""
        with _LOG_LOCK, open(path, "a") as f:
            f.write(f"{event} {name} {seconds * 1000:.3f}{extra}\n")
    logs = sys.modules.get("daphnec.runtime.logs")  # DAPHNE's loggers, if the user config set them up
    if logs is not None and logs.enabled():
        logs.log("runtime", "error" if event == "error" else "debug", f"native kernel {name}: {event} in "
                 f"{seconds * 1000:.1f} ms")  # fmt: skip


def log_error(e: BaseException) -> None:
    """A kernel that failed to build (its pipeline keeps the Python body): one `error` line."""
    log("error", f"{type(e).__name__}:{e}".replace(" ", "_").replace("\n", "_")[:200], 0.0)
