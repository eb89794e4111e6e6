"""Element-wise kernels writing their result into an operand the program never reads again.

numpy itself does this for `a * b + c` in Python expressions (temporary elision): a temporary whose only
reference is the interpreter's stack is overwritten instead of allocating a new array. Host code holds every
temporary in a local variable, so numpy never sees one; for large temporaries the fresh allocation costs more than
the operation (memory the allocator returned to the OS is mapped and first-touched again: RDP's distance vector of
a 50k-point segment, 7 temporaries, 0.35-0.6 ms against numpy's 0.07 ms).

The host code generator passes `dead` (bit 0: the left operand, bit 1: the right one) to kernels marked
`reuses_dead_operands` when an operand's variable is deleted right after the call (`_dead_names`, the same
liveness as its `del`s). That alone is not enough: the same array may be held under another name, by a view of it (its
`base`), a list, a cache, or a caller further up. So the kernel also checks the array's reference count: exactly
`DEAD_REFS` means nothing but the dying variable and the kernel's own parameter hold it, so no one can observe
the overwrite. Anything else (a view, an input, a read-only buffer, the statistics wrapper's extra frame)
allocates as before (`owns_buffer`). Results are the same bits: the ufunc computes the same values into other memory.
"""

from __future__ import annotations

from sys import getrefcount

import numpy as np


def _count_in_callee(x: object) -> int:
    return getrefcount(x)


def _held_by_one_local() -> int:
    x = object()
    return _count_in_callee(x)


DEAD_REFS = _held_by_one_local()
"""`sys.getrefcount(x)` inside a kernel (a Python function) when the caller's local variable is the only other
holder (3 on CPython 3.11: that variable, the parameter, getrefcount's argument), measured on this interpreter
rather than assumed, so that an interpreter that counts calls differently cannot make a live array look dead."""


def _held_by_this_local() -> int:
    x = object()
    return getrefcount(x)


INLINE_DEAD_REFS = _held_by_this_local()
"""`sys.getrefcount(x)` in the frame whose local variable x is the only holder (2 on CPython 3.11: the variable and
getrefcount's argument): the count the host code's inlined element-wise fast path (compiler/host/generator.py,
`_inline_ufunc`) tests before it writes into a dying operand, measured like `DEAD_REFS`. That code calls this
module's `getrefcount` (it binds the module: `--statistics` wraps every callable a program binds, and a wrapper's
frame would hold one more reference)."""


def owns_buffer(X: object) -> bool:
    """Whether X is a dense matrix whose memory is X's alone: not a view of another array (slices, transposes,
    reshapes; a parfor's private buffer is never one), not read-only (the Python API's inputs) and not memory
    another object provides (an Arrow buffer read from a file). What every in-place write checks: the kernels
    here and the in-place insert (runtime/kernels/indexing.py; compiler/host/generator.py emits the same test
    inline). CSR matrices are never written in place: a CSR insert densifies."""
    return isinstance(X, np.ndarray) and X.base is None and X.flags.writeable and X.flags.c_contiguous
