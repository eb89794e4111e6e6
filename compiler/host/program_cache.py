"""The whole-program cache: it stores the generated host program (`compiler.host.program.HostProgram`) so that a
second run can skip compiling.

A run of `daphnec` spends most of its start-up importing xDSL, parsing and running the pass pipeline; a second run
of the same script with the same inputs produces the very same host program. This cache stores that program (its
Python source, the objects its globals refer to, the source location of every line) and, on a hit, rebuilds it
without importing the frontend, the dialect, the compiler or xDSL: only the runtime modules the program calls (and
llvmlite when it has native kernels, whose object code is loaded from the kernel cache, `runtime.native_code`).

**Key** (`lookup_key`): a SHA-256 over this format's version, the Python version, daphnec's own sources (path,
size and mtime of every `.py`/`.lark` file of the five packages: the rule Python itself uses to invalidate `.pyc`
files), the installed versions of the libraries the compiler or the program use (the `__init__.py` each import
would load), the working directory, the script path as given, the script arguments, every user-config field that
can affect compilation (all of them except the scheduler's run-time knobs and `--timing`/`--debug`/...), and every
`DAPHNEC_*` environment variable except the cache folders and logs.

**Inputs read while compiling** (`Inputs`) are checked on every hit: the driver reports them (the frontend's
report of the scripts it parsed and of the import search, plus the `.meta` file of every read the compiler typed),
and every such file must still have the same SHA-256 (or still be absent), and every import-search candidate must
still be a file or not as before.

**Value**: `<key>.prog` = magic + SHA-256 of the payload + payload; the payload is a pickle of plain data
(dependencies, the native kernels' kernel-cache keys and symbols, the CPU/LLVM they were built for) and, inside it,
a second pickle of the program. The program holds nothing the compiler made but its host source: kernel selectors
return runtime functions or `functools.partial`s of them, and a native kernel is its generated wrapper's source,
plain values and the runtime function that runs them (`runtime.vectorized.kernel.NativeKernel`). Functions and
classes of light modules (`runtime`, numpy, ...) are stored by reference; closures the runtime's kernel factories
make (`ew_binary.matrix_kernel(...)`, specialised at compile time) by value: their code object, their captured
values and the name of their runtime module, whose namespace they get back. Anything of the compiler, the dialect
or xDSL makes the program uncacheable (it then simply compiles every time).
Loading never unpickles arbitrary classes: the outer payload may name no class or function at all, the program only
those `_Unpickler` allows (daphnec's runtime, numpy's array and scalar types, this module's rebuilders, ...; never
`os`, `subprocess`, `eval`, `getattr`, ...). Code objects and generated source are code by design, so the folder
itself must be trusted: like the kernel cache's, it is created `0700` and refused (one warning, no caching) when
another user could write it (`runtime.cache_files.trusted_folder`); entries are regular files below `MAX_ENTRY_BYTES`.

**Folder**: `$DAPHNEC_PROGRAM_CACHE_DIR`, else the kernel cache folder's name plus `-programs` next to it
(`~/.cache/daphnec-programs` by default, `$DAPHNEC_CACHE_DIR-programs` with `$DAPHNEC_CACHE_DIR`). Entries are
written to a temporary file and renamed into place (concurrent runs at worst both write the same entry); an entry
that is damaged, stale or fails to load is ignored and the script is compiled. `--no-kernel-cache` disables this
cache as well; `DAPHNEC_NO_PROGRAM_CACHE=1` disables only this one. `--explain`, `--distributed` and in-process
callers of `tools.driver.compile_script` never use it. Compile errors are never cached (nothing is stored unless
compilation succeeds). `DAPHNEC_PROGRAM_CACHE_LOG=<file>` appends `hit`/`miss`/`stored`/`uncacheable` lines.

This module imports only the standard library and light daphnec modules at import time (it must stay cheap: it
runs before anything else).
"""

from __future__ import annotations

import io
import os
import pickle
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from daphnec.compiler.host.program import HostProgram
from daphnec.runtime import testing_hooks  # the progress line's threshold does not change the program
from daphnec.runtime.cache_files import cache_root, read_entry, sha256, trusted_folder, write_entry

FORMAT = "daphnec-program-3"
_MAGIC = (FORMAT + "\n").encode()
_SUFFIX = ".prog"
MAX_ENTRY_BYTES = 256 << 20
"""The largest program entry read or written (a program with its constants; most are a few KiB)."""
_ROOT = Path(__file__).resolve().parents[2]
_PACKAGES = ("frontend", "dialects", "compiler", "runtime", "tools")
_LIBRARIES = ("numpy", "scipy", "llvmlite", "xdsl", "lark", "pyarrow", "fast_matrix_market", "numba")

# User-config fields that only the runtime reads (the driver hands them over in `configure_runtime` on every run,
# hit or not): changing them must not cost a compilation.
_RUNTIME_ONLY = frozenset(
    {
        "taskPartitioningScheme",
        "queueSetupScheme",
        "victimSelection",
        "numberOfThreads",
        "minimumTaskSize",
        "phyBatchSize",
        "pinWorkers",
        "hyperthreadingEnabled",
        "prePartitionRows",
        "debugMultiThreading",
        "timing",
        "statistics",
        "debug",
        "no_kernel_cache",
        "enable_profiling",
    }
)
_ENV_IGNORED = frozenset({testing_hooks.PROGRESS_AFTER}) | frozenset(
    {
        "DAPHNEC_CACHE_DIR",
        "DAPHNEC_PROGRAM_CACHE_DIR",
        "DAPHNEC_JIT_LOG",
        "DAPHNEC_PROGRAM_CACHE_LOG",
        "DAPHNEC_NO_PROGRAM_CACHE",
    }
)


# ---------------------------------------------------------------------------------------------------------------------
# Folder, key, log
# ---------------------------------------------------------------------------------------------------------------------


def cache_dir() -> Path:
    """The program cache folder as configured (checked by `trusted_folder` before any use)."""
    env = os.environ.get("DAPHNEC_PROGRAM_CACHE_DIR")
    if env:
        return Path(os.path.expanduser(env))
    kernels = cache_root()
    return kernels.parent / (kernels.name + "-programs")


def _trusted() -> bool:
    """Whether the folder may be used: the kernel cache folder it derives from must be one too (so an odd
    `DAPHNEC_CACHE_DIR` such as `.` or `/` is refused under its own name)."""
    if not os.environ.get("DAPHNEC_PROGRAM_CACHE_DIR") and not trusted_folder(cache_root()):
        return False
    return trusted_folder(cache_dir())


def skip_reason(config: Any) -> str | None:
    """Why a run must compile (None: the cache may be used)."""
    if getattr(config, "no_kernel_cache", False):
        return "--no-kernel-cache"
    if os.environ.get("DAPHNEC_NO_PROGRAM_CACHE") == "1":
        return "DAPHNEC_NO_PROGRAM_CACHE"
    if getattr(config, "explain", None):
        return "--explain"
    if getattr(config, "use_distributed", False):
        return "--distributed"
    if getattr(config, "kernel_ext", ""):
        return "--kernel-ext"  # extension kernels are loaded from their libraries on every run
    return None


def log(event: str, detail: str) -> None:
    path = os.environ.get("DAPHNEC_PROGRAM_CACHE_LOG")
    if path:
        try:
            with open(path, "a") as f:
                f.write(f"{event} {detail}\n")
        except OSError:
            pass


_CODE_SIGNATURE: str | None = None


def code_signature() -> str:
    """daphnec's own sources and the libraries' installed versions (stat-based, like Python's `.pyc` check)."""
    global _CODE_SIGNATURE
    if _CODE_SIGNATURE is None:
        parts: list[str] = []
        folders = [str(_ROOT / pkg) for pkg in reversed(_PACKAGES)]
        while folders:  # os.scandir, not os.walk: ~300 files on every cached run's start-up
            folder = folders.pop()
            try:
                with os.scandir(folder) as it:
                    entries = sorted(it, key=lambda e: e.name)
            except OSError:
                parts.append(f"{folder}:?")
                continue
            for e in reversed(entries):
                if e.is_dir(follow_symlinks=False) and e.name != "__pycache__":
                    folders.append(e.path)
            for e in entries:
                if e.name.endswith((".py", ".lark")):
                    st = e.stat()
                    parts.append(f"{e.path}:{st.st_size}:{st.st_mtime_ns}")
        from importlib.util import find_spec

        for lib in _LIBRARIES:
            try:
                spec = find_spec(lib)
                origin = spec.origin if spec is not None else None
                st = os.stat(origin) if origin else None
                parts.append(f"{lib}:{origin}:{st.st_size}:{st.st_mtime_ns}" if st else f"{lib}:-")
            except (ImportError, ValueError, OSError):
                parts.append(f"{lib}:?")
        _CODE_SIGNATURE = sha256("\n".join(parts).encode()).hexdigest()
    return _CODE_SIGNATURE


def lookup_key(script: str, script_args: dict[str, str], config: Any) -> str:
    """The cache key of a run: everything except the contents of the files the compiler reads (see `Inputs`)."""
    cfg = config.to_dict() if hasattr(config, "to_dict") else dict(vars(config))
    cfg_items = sorted((k, v) for k, v in cfg.items() if k not in _RUNTIME_ONLY)
    env = sorted((k, v) for k, v in os.environ.items() if k.startswith("DAPHNEC_") and k not in _ENV_IGNORED)
    h = sha256()
    for part in (
        FORMAT,
        sys.version,
        sys.executable,
        code_signature(),
        os.getcwd(),
        script,
        repr(sorted(script_args.items())),
        repr(cfg_items),
        repr(env),
    ):
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()


# ---------------------------------------------------------------------------------------------------------------------
# The inputs a compilation read
# ---------------------------------------------------------------------------------------------------------------------


@dataclass
class Inputs:
    """The files a compiled program depends on, as the driver reports them: the scripts the frontend parsed (with
    the digest of the bytes it parsed), the import search's answers, and the `.meta` files the compiler read."""

    files: dict[str, str | None] = field(default_factory=dict)
    """Path -> SHA-256 of its contents when compiled (None: not a readable regular file then)."""
    probes: dict[str, bool] = field(default_factory=dict)
    """Path -> whether it was a regular file when compiled."""
    listings: dict[str, list[str]] = field(default_factory=dict)
    """Folder (an imported library) -> the sorted names of its regular files when compiled."""


def file_digest(path: str) -> str | None:
    """SHA-256 of a regular file's contents, None if it is not a readable regular file (never reads a FIFO)."""
    import stat

    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        with open(path, "rb") as f:
            return sha256(f.read()).hexdigest()
    except (OSError, ValueError):
        return None


def _inputs_hold(
    files: list[tuple[str, str | None]], probes: list[tuple[str, bool]], listings: list[tuple[str, list[str]]]
) -> str | None:
    """None if every recorded input is unchanged, else what changed."""
    for path, digest in files:
        if file_digest(path) != digest:
            return f"changed:{path}"
    for path, answer in probes:
        if os.path.isfile(path) != answer:
            return f"isfile:{path}"
    for folder, names in listings:
        try:
            now = sorted(e.name for e in os.scandir(folder) if e.is_file())
        except OSError:
            now = None
        if now != names:
            return f"listing:{folder}"
    return None


# ---------------------------------------------------------------------------------------------------------------------
# Pickling the program
# ---------------------------------------------------------------------------------------------------------------------

# Top-level packages whose import pulls in xDSL or the compiler: nothing may be stored by reference to them.
_HEAVY = frozenset({"daphnec.compiler", "daphnec.dialects", "daphnec.frontend", "daphnec.tools", "xdsl", "lark"})
_LIGHT = frozenset({"daphnec.compiler.host.program_cache", "daphnec.dialects.errors"})


def _heavy(module: str | None) -> bool:
    if not module:
        return True
    if module in _LIGHT:
        return False
    parts = module.split(".")
    return parts[0] in _HEAVY or ".".join(parts[:2]) in _HEAVY


def _lookup(module: str, qualname: str) -> object:
    obj: object = sys.modules.get(module)
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
    return obj


class _Uncacheable(Exception):
    pass


def _make_pickler(buf: io.BytesIO) -> Any:
    import marshal
    import types

    import numpy as np

    from daphnec.runtime.vectorized.kernel import NativeKernel, PendingKernel

    class Pickler(pickle.Pickler):
        def __init__(self) -> None:
            super().__init__(buf, protocol=5)
            self.kernels: dict[str, tuple[str, list[str]]] = {}  # kernel-cache key -> (kernel name, symbols)

        def reducer_override(self, obj: Any) -> Any:
            if isinstance(obj, types.FunctionType):
                if not _heavy(obj.__module__) and _lookup(obj.__module__, obj.__qualname__) is obj:
                    return NotImplemented  # by reference
                return self._closure(obj)
            if isinstance(obj, type):
                if _heavy(obj.__module__):
                    raise _Uncacheable(f"class {obj.__module__}.{obj.__qualname__}")
                return NotImplemented
            if isinstance(obj, types.ModuleType):
                if _heavy(obj.__name__):
                    raise _Uncacheable(f"module {obj.__name__}")
                return _import_module, (obj.__name__,)
            if isinstance(obj, types.MethodType) and isinstance(obj.__self__, PendingKernel):
                kernel = obj.__self__.kernel()  # compiled in the background: the program is stored after its run
                if kernel is None:
                    raise _Uncacheable(f"native kernel {obj.__self__.name} failed to build")
                return _kernel_bind, (kernel,)
            if isinstance(obj, NativeKernel):  # its object code is loaded before the program (`_load_kernels`)
                self.kernels.setdefault(obj.object_key, (obj.name, [e.symbol for e in obj.entries]))
                return obj.__reduce__()
            if isinstance(obj, np.dtype) and np.dtype(obj.str) is obj:
                # a builtin dtype by name: unpickled, numpy's own reduce gives a copy, and the kernels' fast paths
                # test `X.dtype is dt` (ew_binary: a cached RDP took the general path in every f64 kernel call)
                return np.dtype, (obj.str,)
            cls = type(obj)
            if cls.__module__ == "builtins" or isinstance(obj, types.BuiltinFunctionType):
                return NotImplemented
            if _heavy(cls.__module__):
                raise _Uncacheable(f"instance of {cls.__module__}.{cls.__qualname__}")
            module = sys.modules.get(cls.__module__)
            for name, value in vars(module).items() if module is not None else ():
                if value is obj:  # a module-level singleton (a settings object, ...) stays shared
                    return _module_attr, (cls.__module__, name)
            return NotImplemented

        def _closure(self, fn: types.FunctionType) -> Any:
            """A function a runtime kernel factory made: its code, its defining module (whose namespace it gets
            back) and its captured values. Nothing else is stored by value."""
            module = fn.__module__
            if _heavy(module) or module not in sys.modules or fn.__globals__ is not vars(sys.modules[module]):
                raise _Uncacheable(f"function {module}.{fn.__qualname__}")
            cells = None
            if fn.__closure__ is not None:
                cells = []
                for c in fn.__closure__:
                    try:
                        cells.append((True, c.cell_contents))
                    except ValueError:
                        cells.append((False, None))
            state = (cells, fn.__defaults__, fn.__kwdefaults__, dict(fn.__dict__) or None)
            n_cells = 0 if fn.__closure__ is None else len(fn.__closure__)
            args = (marshal.dumps(fn.__code__), fn.__name__, fn.__qualname__, module, n_cells)
            return _make_function, args, state, None, None, _set_function_state

    return Pickler()


def _import_module(name: str) -> Any:
    import importlib

    if not _allowed_module(name):
        raise pickle.UnpicklingError(f"a cache entry may not import {name}")

    return importlib.import_module(name)


def _module_attr(module: str, name: str) -> object:
    return getattr(_import_module(module), name)


def _make_function(code: bytes, name: str, qualname: str, module: str, n_cells: int) -> Any:
    import marshal
    import types

    closure = tuple(types.CellType() for _ in range(n_cells)) if n_cells else None
    fn = types.FunctionType(marshal.loads(code), vars(_import_module(module)), name, None, closure)
    fn.__qualname__ = qualname
    return fn


def _set_function_state(fn: Any, state: tuple[Any, ...]) -> None:
    cells, defaults, kwdefaults, attrs = state
    for cell, (filled, value) in zip(fn.__closure__ or (), cells or ()):
        if filled:
            cell.cell_contents = value
    fn.__defaults__ = defaults
    fn.__kwdefaults__ = kwdefaults
    if attrs:
        fn.__dict__.update(attrs)


def _kernel_bind(kernel: Any) -> Any:
    return kernel.bind


# ---------------------------------------------------------------------------------------------------------------------
# Store and load
# ---------------------------------------------------------------------------------------------------------------------


def store(key: str, inputs: Inputs, host: HostProgram) -> bool:
    """Write the entry for `key` (atomically); False if the program cannot be cached or the folder is unwritable."""

    buf = io.BytesIO()
    pickler = _make_pickler(buf)
    try:
        pickler.dump((host.source, host.globals, host.line_locs, host.entry))
    except Exception as e:  # noqa: BLE001 - anything that does not pickle makes the program uncacheable
        log("uncacheable", f"{key} {type(e).__name__}:{e}".replace("\n", " ")[:300])
        return False
    kernels = [(k, name, syms) for k, (name, syms) in pickler.kernels.items()]
    if not _kernels_cached(kernels):
        log("uncacheable", f"{key} a kernel's object code is not in the kernel cache")
        return False
    native = _native_host() if kernels else None
    payload = pickle.dumps(
        {
            "format": FORMAT,
            "files": list(inputs.files.items()),
            "probes": list(inputs.probes.items()),
            "listings": list(inputs.listings.items()),
            "kernels": kernels,
            "native": native,
            "program": buf.getvalue(),
        },
        protocol=5,
    )
    if len(payload) > MAX_ENTRY_BYTES or not _trusted():
        log("unwritable", f"{key} too large or untrusted folder")
        return False
    try:
        write_entry(cache_dir() / (key + _SUFFIX), _MAGIC, payload)
    except OSError as e:
        log("unwritable", f"{key} {e}")
        return False
    log("stored", key)
    return True


def _kernels_cached(kernels: list[tuple[str, str, list[str]]]) -> bool:
    """Every kernel's object code is in the kernel cache, where `load` reads it. A kernel this process loaded
    before (with another cache folder, or with the cache off) was never written to the current folder: it is
    written now from the engine's copy (`runtime.native_code.store_loaded`)."""
    if not kernels:
        return True
    from daphnec.runtime import native_code

    return all(native_code.store_loaded(key) for key, _, _ in kernels)


def load(key: str) -> HostProgram | None:
    """The cached program for `key` if its entry is intact and every input it recorded is unchanged, else None."""
    if not _trusted():
        return None
    try:
        payload = read_entry(cache_dir() / (key + _SUFFIX), _MAGIC, MAX_ENTRY_BYTES)
    except OSError:
        log("miss", f"{key} absent")
        return None
    except ValueError:
        log("miss", f"{key} damaged")
        return None
    try:
        entry = _Unpickler(payload, plain=True).load()  # plain data only: imports nothing
        why = _inputs_hold(entry["files"], entry["probes"], entry.get("listings", []))
        if why is not None:
            log("miss", f"{key} {why}")
            return None
        loaded = _load_kernels(entry["kernels"], entry["native"])
        if loaded is None:
            log("miss", f"{key} kernels")
            return None
        source, glob, line_locs, entry_fn = _Unpickler(entry["program"], plain=False).load()
    except Exception as e:  # noqa: BLE001 - a stale or damaged entry is a miss, never an error
        log("miss", f"{key} {type(e).__name__}:{e}".replace("\n", " ")[:300])
        return None
    if loaded:  # the native code module (and llvmlite) only for programs with native kernels
        from daphnec.runtime.native_code import log as jit_log

        for name, seconds in loaded:
            jit_log("loaded", name, seconds)
    log("hit", key)
    return HostProgram(source, glob, line_locs, entry_fn)


# What a program entry may name (`_Unpickler.find_class`): module -> names (None: any name of the module).
_REBUILDERS = ("_import_module", "_module_attr", "_make_function", "_set_function_state", "_kernel_bind")
_ALLOWED: dict[str, frozenset[str] | None] = {
    __name__: frozenset(_REBUILDERS),
    "daphnec.dialects.errors": None,
    "functools": frozenset({"partial"}),
    "math": None,
    "builtins": frozenset(
        {"bool", "int", "float", "complex", "str", "bytes", "bytearray", "list", "tuple", "dict", "set", "frozenset"}
        | {"slice", "range", "print", "len", "min", "max", "abs", "round", "ValueError", "TypeError", "Exception"}
    ),
    "numpy": None,
    "numpy.core.multiarray": frozenset({"_reconstruct", "scalar"}),
    "numpy._core.multiarray": frozenset({"_reconstruct", "scalar"}),
    "numpy.core.numeric": frozenset({"_frombuffer"}),
    "numpy._core.numeric": frozenset({"_frombuffer"}),
    "ctypes": None,
}
_NUMPY_FUNCTIONS = frozenset({"empty", "zeros", "ones", "array", "asarray"})


_OPERATORS = frozenset(
    f"__{op}__" for op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "neg", "pos", "abs", "invert")
)


def _safe_getattr(obj: object, name: str) -> object:
    """`getattr` as pickle uses it for bound methods, limited to what programs hold: public methods of daphnec's
    runtime objects and the operators of builtin/numpy types (never `__globals__`, `__subclasses__`, ...)."""
    cls = obj if isinstance(obj, type) else type(obj)
    runtime = cls.__module__.startswith("daphnec.runtime.") and not isinstance(obj, type)
    if (runtime and not name.startswith("_")) or (
        isinstance(obj, type) and cls.__module__ in ("builtins", "numpy") and name in _OPERATORS
    ):
        return getattr(obj, name)
    raise pickle.UnpicklingError(f"a cache entry may not read {cls.__qualname__}.{name}")


def _allowed_module(name: str) -> bool:
    """Modules a program entry may import (`_import_module`): daphnec's runtime, numpy, math."""
    return name in ("numpy", "math") or name.startswith("daphnec.runtime.")


def _allowed(module: str, name: str) -> bool:
    """Whether a program entry may name `module.name` (before importing it): daphnec's runtime and the names above."""
    if module == "daphnec.runtime" or module.startswith("daphnec.runtime."):
        return "." not in name
    names = _ALLOWED.get(module, frozenset())
    return "." not in name and (names is None or name in names)


class _Unpickler(pickle.Unpickler):
    """Loads a cache payload: a `plain` payload may name no class or function, a program only what `_allowed`
    says (of numpy and ctypes only their types and a few array constructors, never a loader like `numpy.load`)."""

    def __init__(self, data: bytes, plain: bool) -> None:
        super().__init__(io.BytesIO(data))
        self.plain = plain

    def find_class(self, module: str, name: str) -> Any:
        if not self.plain and (module, name) == ("builtins", "getattr"):
            return _safe_getattr
        if not self.plain and _allowed(module, name):
            value = super().find_class(module, name)
            if module not in ("numpy", "ctypes") or isinstance(value, type) or name in _NUMPY_FUNCTIONS:
                return value
        raise pickle.UnpicklingError(f"a cache entry may not name {module}.{name}")


def _native_host() -> str:
    """What the native kernels' object code was built for (CPU, LLVM, numpy's array layout)."""
    from daphnec.runtime import native_code

    return native_code.engine().host


def _load_kernels(kernels: list[tuple[str, str, list[str]]], native: str | None) -> list[tuple[str, float]] | None:
    """Load every kernel's object code from the kernel cache (`runtime.native_code`); None if any is missing or
    built for another host. Returns (kernel name, seconds) for `DAPHNEC_JIT_LOG`."""
    if not kernels:
        return []
    from daphnec.runtime import native_code

    t0 = time.perf_counter()
    if _native_host() != native:
        return None
    objects = [native_code.cached(key) for key, _, _ in kernels]
    if any(obj is None for obj in objects):
        return None
    done = []
    setup = time.perf_counter() - t0  # the engine's set-up is charged to the first kernel, as the backend does
    for (key, name, symbols), obj in zip(kernels, objects):
        t1 = time.perf_counter()
        try:
            native_code.engine().load(key, obj, symbols)  # type: ignore[arg-type]
        except native_code.BadObjectCode:  # dropped: the compilation this miss causes rebuilds the kernel
            native_code.drop(key)
            return None
        done.append((name, time.perf_counter() - t1 + setup))
        setup = 0.0
    return done
