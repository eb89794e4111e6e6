"""Loading native kernels' object code into the process: one llvmlite MCJIT engine for the host CPU.

The compiler (`compiler.jit`) emits object code with this loader's target machine and loads it here; a program
restored from the whole-program cache loads its kernels' object code here too, without the compiler. Object code
is loaded once per key (loading the same symbols twice would clash).

`DAPHNEC_JIT_LOG=<file>` appends one line per kernel (`compiled`, `loaded`, `fallback` or `error`, the kernel
name or reason, milliseconds), for tests and benchmarks.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from daphnec.runtime.vectorized.kernel import ARRAY_DATA_OFFSET


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

    def load(self, key: str, obj: bytes, symbols: list[str]) -> dict[str, int]:
        """Add the object code `key` to the engine (once) and return the addresses of `symbols` in it."""
        with self.lock:
            known = self.loaded.get(key)
            if known is None:
                self.ee.add_object_file(self.llvm.ObjectFileRef.from_data(obj))
                known = self.loaded[key] = {}
            for sym in symbols:
                if sym not in known:
                    known[sym] = self.ee.get_function_address(sym)
            return {sym: known[sym] for sym in symbols}


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
