"""Allocation checks: a result that cannot fit in this machine's memory fails before it is started, with a message
in DaphneDSL terms (`rand: a 100000x100000 f64 dense matrix needs 74.5 GiB, more than this machine's 23.5 GiB`),
instead of numpy's MemoryError text (or the OOM killer) after minutes of work. Every builtin that allocates from
sizes the user gives (rand, fill, seq, sample, diagMatrix, readers trusting a `.meta`) asks `check_alloc` first.
"""

from __future__ import annotations

import ctypes
import functools
import os

from daphnec.runtime.errors import DaphneRuntimeError

_GIB = 1 << 30


@functools.cache
def machine_bytes() -> int:
    """The memory this process may use at most: the physical memory, or the cgroup's limit if that is lower."""
    total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    for limit_file in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(limit_file, encoding="ascii") as f:
                text = f.read().strip()
        except OSError:
            continue
        if text.isdigit():
            total = min(total, int(text))
    return total


def item_bytes(vt: str) -> int:
    """Bytes per element of a `vt` matrix (strings: the object pointer, a lower bound)."""
    from daphnec.runtime.values import dtype_of

    return dtype_of(vt).itemsize


def check_alloc(op: str, rows: int, cols: int, vt: str, kind: str = "dense matrix", cells: int | None = None,
                index_bytes: int = 0) -> None:  # fmt: skip
    """Raise if a rows x cols `vt` result cannot fit in this machine: `cells` stored elements (default all), each
    with `index_bytes` more (a CSR matrix's column index)."""
    need = (rows * cols if cells is None else cells) * (item_bytes(vt) + index_bytes)
    have = machine_bytes()
    if need > have:
        raise DaphneRuntimeError(f"{op}: a {rows}x{cols} {vt} {kind} needs {_gib(need)} GiB, more than this "
                                 f"machine's {_gib(have)} GiB")  # fmt: skip


def _gib(n: int) -> str:
    return f"{n / _GIB:.1f}"


_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4
KEEP_FREED_BYTES = 1 << 30
"""Freed memory at the top of the heap beyond this much goes back to the system (glibc's trim threshold)."""


def reuse_freed_memory() -> bool:
    """Let the process reuse the memory of freed large matrices instead of mapping fresh pages for every new one.

    glibc serves blocks above 32 MiB with a fresh `mmap` and unmaps them on `free`, so every large result (a
    pipeline's output, a temporary of the plain path) is first-touched page by page, which costs about as much
    as writing it (a 268 MB map: 27.9 -> 20.0 ms with a reused buffer). The `daphnec` process (not a program
    that imports daphnec as a library: its allocator policy is its own) takes large blocks from the heap and
    keeps up to `KEEP_FREED_BYTES` of freed memory for the next ones. False where the C library is not glibc."""
    try:
        gnu = os.confstr("CS_GNU_LIBC_VERSION")
    except (ValueError, OSError):
        gnu = None
    if not gnu:
        return False
    mallopt = ctypes.CDLL(None).mallopt
    return bool(mallopt(_M_MMAP_MAX, 0)) and bool(mallopt(_M_TRIM_THRESHOLD, KEEP_FREED_BYTES))
