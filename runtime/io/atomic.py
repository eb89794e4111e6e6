"""Atomic file replacement: write to a temporary file in the target's folder, then rename it into place.

A rename within one file system is atomic, so a reader (or a later run) sees either the old file or the complete
new one, never half a file, even if the writer is killed. A data file and its `.meta` are prepared side by side and
renamed one right after the other, data first.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import BinaryIO

from daphnec.runtime.errors import DaphneRuntimeError

Writer = Callable[[BinaryIO], None]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _open_error(path: str, e: OSError) -> DaphneRuntimeError:
    return DaphneRuntimeError(f"cannot open file '{path}' for writing: {e.strerror or e}")


@contextmanager
def _temp_for(path: str) -> Iterator[tuple[str, BinaryIO]]:
    """A temporary file next to `path` (removed again unless the caller renamed it)."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=folder)
    except OSError as e:
        raise _open_error(path, e) from None
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # the permissions a plain open() would have given
        with os.fdopen(fd, "wb") as f:
            yield tmp, f
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_files(files: list[tuple[str, Writer]]) -> None:
    """Write every `(path, writer)` pair to its own temporary file, then rename them into place in order.

    If a writer fails, no target is touched and every temporary file is removed again.
    """
    with ExitStack() as stack:
        temps = []
        for path, writer in files:
            tmp, f = stack.enter_context(_temp_for(path))
            try:
                writer(f)
                f.flush()
            except OSError as e:
                raise DaphneRuntimeError(f"cannot write file '{path}': {e.strerror or e}") from None
            temps.append((tmp, path))
        for tmp, path in temps:
            try:
                os.replace(tmp, path)
            except OSError as e:
                raise _open_error(path, e) from None
