"""Allocation checks: a result that cannot fit in this machine's memory fails before it is started, with a message
in DaphneDSL terms (`rand: a 100000x100000 f64 dense matrix needs 74.5 GiB, more than the 20.1 GiB of memory
available`), instead of numpy's MemoryError text (or the OOM killer) after minutes of work. Every builtin that
allocates from sizes the user gives (rand, fill, seq, sample, diagMatrix, readers trusting a `.meta`) or whose
result grows with its inputs' product (`@`, outerAdd and the other outer ops, oneHot, ctable, cartesian) asks
`check_alloc` first. The limit is the memory *available* now (Linux's MemAvailable, capped by the cgroup's free
budget), not the machine's total: numpy's lazily mapped zeros let a 22 GiB request pass on a 24 GiB machine with
12 GiB free, and the OOM killer then ends the run without a message. A MemoryError that still reaches the host
code (an allocation no check covers) is reported in the same words (`compiler/host/program.py`).
"""

from __future__ import annotations

import ctypes
import functools
import os
import threading

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


def available_bytes() -> int:
    """The memory a new allocation can get now without swapping: MemAvailable, and no more than the cgroup's limit
    minus its current usage (read on every call: it changes while the program runs)."""
    avail = machine_bytes()
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    avail = min(avail, int(line.split()[1]) * 1024)
                    break
    except (OSError, ValueError, IndexError):
        pass
    for limit_file, usage_file in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                                   ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                                    "/sys/fs/cgroup/memory/memory.usage_in_bytes")):  # fmt: skip
        try:
            with open(limit_file, encoding="ascii") as f, open(usage_file, encoding="ascii") as g:
                limit, usage = f.read().strip(), g.read().strip()
        except OSError:
            continue
        if limit.isdigit() and usage.isdigit():
            avail = min(avail, max(int(limit) - int(usage), 0))
    return avail


def item_bytes(vt: str) -> int:
    """Bytes per element of a `vt` matrix (strings: the object pointer, a lower bound)."""
    from daphnec.runtime.values import dtype_of

    return dtype_of(vt).itemsize


def check_alloc(op: str, rows: int, cols: int, vt: str, kind: str = "dense matrix", cells: int | None = None,
                index_bytes: int = 0) -> None:  # fmt: skip
    """Raise if a rows x cols `vt` result cannot fit in the memory available now: `cells` stored elements (default
    all), each with `index_bytes` more (a CSR matrix's column index). Small results skip the check (reading
    /proc/meminfo costs more than allocating them)."""
    need = (rows * cols if cells is None else cells) * (item_bytes(vt) + index_bytes)
    check_bytes(op, f"a {rows}x{cols} {vt} {kind}", need)


def check_bytes(op: str, what: str, need: int) -> None:
    """Raise if `need` bytes for `what` (a result of builtin `op`) do not fit in the memory available now."""
    if need < _CHECK_FROM:
        return
    have = available_bytes()
    if need > have:
        raise DaphneRuntimeError(too_big_message(op, what, need, have))


_CHECK_FROM = 64 << 20
"""Results below this size are not checked."""


def too_big_message(op: str | None, what: str, need: int, have: int) -> str:
    """The one wording of a result that does not fit (`check_alloc` and the host code's MemoryError handler)."""
    prefix = f"{op}: " if op else ""
    return f"{prefix}{what} needs {_gib(need)} GiB, more than the {_gib(have)} GiB of memory available"


def memory_error_message(e: MemoryError) -> str:
    """numpy's `MemoryError` (`Unable to allocate 74.5 GiB for an array with shape (100000, 100000) and data type
    float64`) in DaphneDSL terms; the error's own shape and dtype name the result."""
    shape, dtype = getattr(e, "shape", None), getattr(e, "dtype", None)
    if shape is None or dtype is None:
        return f"out of memory ({_gib(available_bytes())} GiB available)"
    import numpy as np

    from daphnec.runtime.values import vt_of

    try:
        vt = vt_of(np.empty(0, dtype=dtype))
    except DaphneRuntimeError:
        vt = str(dtype)
    cells = 1
    for n in shape:
        cells *= int(n)
    dims = "x".join(str(int(n)) for n in shape) if len(shape) == 2 else f"{cells}-element"
    return too_big_message(None, f"a {dims} {vt} result", cells * int(dtype.itemsize), available_bytes())


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
    global _heap_reused
    mallopt = ctypes.CDLL(None).mallopt
    _heap_reused = bool(mallopt(_M_MMAP_MAX, 0)) and bool(mallopt(_M_TRIM_THRESHOLD, KEEP_FREED_BYTES))
    return _heap_reused


_heap_reused = False
"""Whether `reuse_freed_memory` set this process's allocator policy (so freed heap memory stays mapped)."""

_MADV_HUGEPAGE = 14
_MADV_POPULATE_WRITE = 23  # Linux 5.14
PREFAULT_FROM = 4 << 20
"""Inputs smaller than this pre-fault nothing (their results' first touch costs less than starting a thread)."""
PREFAULT_INPUTS = 3
"""`prefault_for_input` pre-faults this many times an input's bytes: the input itself and two temporaries of its
size (a centred or scaled copy, an appended column), what the library-style scripts allocate after a read."""
_PREFAULT_SLACK = 4 << 20
"""Pre-faulted beyond those: the small objects allocated between the matrices shift the last one past the end, and
the 2 MiB region it then ends in, partly populated with small pages, faults page by page (280 faults for an 8 MB
result 33 KB too long)."""

_prefault_lock = threading.Lock()
_prefaulted = 0
"""Bytes pre-faulted so far in this process (all calls together stay within `KEEP_FREED_BYTES`)."""


@functools.cache
def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    return libc


def prefault_for_input(rows: int, cols: int, itemsize: int) -> threading.Thread | None:
    """Pre-fault heap memory for a `rows x cols` input being read and the first results computed from it.

    A fresh process pays a page fault per page (4 KiB, or 2 MiB where the kernel gives huge pages) the first time
    it writes a new large matrix: 6-48 ms for 24 MB on a busy VM, as long as the arithmetic producing it, where a
    numpy loop in a warm process reuses memory it already touched. Reading a text or Parquet input is slower than
    touching its bytes several times, so while the reader parses, a background thread faults in
    `PREFAULT_INPUTS` times the input's bytes at the top of the heap (malloc'd and freed here, in the thread whose
    arena the program's matrices come from, then `MADV_HUGEPAGE` and `MADV_POPULATE_WRITE`), and the input and the
    next results are carved from pages already there. A 50,000 x 50 CSV input, kernel time after the read (best
    of 6 interleaved runs): lmDS icpt=2 14.2 -> 10.4 ms, PCA 11.3 -> 9.1 ms, and no more 50-90 ms runs.

    Only in a process whose freed heap memory stays mapped (`reuse_freed_memory`), from the main thread, for
    inputs of at least `PREFAULT_FROM` bytes, within a quarter of the memory available and `KEEP_FREED_BYTES` in
    all. No value depends on it: the pages are the heap's own, written later anyway.
    Returns the thread started, or None."""
    global _prefaulted
    want = rows * cols * itemsize
    if not _heap_reused or want < PREFAULT_FROM or threading.current_thread() is not threading.main_thread():
        return None
    with _prefault_lock:
        n = min(PREFAULT_INPUTS * want + _PREFAULT_SLACK, KEEP_FREED_BYTES - _prefaulted, available_bytes() // 4)
        if n < PREFAULT_FROM:
            return None
        _prefaulted += n
    libc = _libc()
    p = libc.malloc(n)
    if not p:
        return None
    libc.free(p)  # back into the heap's top chunk, which keeps it mapped (trim threshold KEEP_FREED_BYTES)
    page = os.sysconf("SC_PAGE_SIZE")
    start = (p + page - 1) & ~(page - 1)
    length = (p + n - start) & ~(page - 1)

    def populate() -> None:
        libc.madvise(start, length, _MADV_HUGEPAGE)  # fewer, larger faults, as numpy asks for its arrays
        libc.madvise(start, length, _MADV_POPULATE_WRITE)  # fails harmlessly on kernels before 5.14

    t = threading.Thread(target=populate, name="daphne-prefault", daemon=True)
    t.start()
    return t
