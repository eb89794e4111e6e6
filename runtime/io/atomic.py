"""Atomic file replacement: write to a temporary file in the target's folder, then rename it into place.

A rename within one file system is atomic, so a reader (or a later run) sees either the old file or the complete
new one, never half a file, even if the writer is killed. Beyond that:

- **A data file and its `.meta` are one pair.** Both temporary files are written first, then the data file is
  renamed into place and the `.meta` last. The data file carries the `.meta` it was written with in an extended
  attribute (`user.daphnec.meta`; DAPHNE's own bytes stay untouched), so a reader finds a pair that a kill between
  the two renames left mismatched (`check_pair`). If the `.meta` rename fails, the old data file comes back (it
  was kept as a hard link until then).
- **Interruptions clean up.** SIGTERM and SIGHUP during a write raise like SIGINT does (KeyboardInterrupt), so the
  temporary files are removed; then the signal is delivered again with its default action (the process ends as
  it would have). All three raise only while data is being written; during the renames and the bookkeeping
  around them they wait until that step is over (`_Interrupts`).
- **A writer killed outright (SIGKILL, a crash) leaves nothing behind.** The data goes to an unnamed file in the
  target's folder (`O_TMPFILE`), which the kernel frees with the process; it gets a name only right before the
  renames (a link from `/proc/self/fd`). On file systems without unnamed files the temporary file has a name
  from the start. Named temporaries carry host and pid (`.<name>.daphnec-<host>-<pid>-<random>.tmp`); the first
  write of a process to a folder removes those of dead writers on this host that belong to this user, and
  nothing else (`sweep`). A process that creates named temporaries also notes their folders in a journal in
  daphnec's cache folder (`<cache>/writes/<host>-<pid>`), so that the next `daphnec` to start sweeps the folders
  of writers that died (`sweep_dead_writers`), even if nothing is ever written there again.
"""

from __future__ import annotations

import atexit
import errno
import json
import os
import re
import secrets
import signal
import socket
import stat
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import BinaryIO

from daphnec.runtime import cache_files, testing_hooks
from daphnec.runtime.errors import DaphneRuntimeError

Writer = Callable[[BinaryIO], None]

META_XATTR = "user.daphnec.meta"
"""Extended attribute of a written data file: the `.meta` text written with it."""

_TEMP = re.compile(r"^\..*\.daphnec-(?P<host>.+)-(?P<pid>\d+)-[a-z0-9_]+\.tmp$")
_TERMINATIONS = (signal.SIGTERM, signal.SIGHUP)


class Terminated(BaseException):
    """SIGTERM or SIGHUP arrived during a write (a BaseException, like KeyboardInterrupt: no `except Exception`
    may swallow it)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _open_error(path: str, e: OSError) -> DaphneRuntimeError:
    return DaphneRuntimeError(f"cannot open file '{path}' for writing: {e.strerror or e}")


def _prefix(path: str) -> str:
    return f".{os.path.basename(path)}.daphnec-{socket.gethostname()}-{os.getpid()}-"


class _Temp:
    """The temporary file of one target: unnamed (`O_TMPFILE`) until `name_it`, or named from the start where the
    file system has no unnamed files."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.folder = os.path.dirname(os.path.abspath(path))
        self.name: str | None = None
        self.file: BinaryIO | None = None

    def name_it(self) -> str:
        """The temporary file's path, linking the unnamed file into the folder first (right before the renames)."""
        if self.name is None:
            assert self.file is not None
            base = f"{_prefix(self.path)}{secrets.token_hex(4)}.tmp"
            try:  # linkat(..., AT_SYMLINK_FOLLOW), which os.link uses only when given a folder descriptor
                folder = os.open(self.folder, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
                try:
                    os.link(f"/proc/self/fd/{self.file.fileno()}", base, src_dir_fd=folder, dst_dir_fd=folder)
                finally:
                    os.close(folder)
            except OSError as e:
                raise _open_error(self.path, e) from None
            self.name = f"{self.folder}/{base}"
        return self.name


@contextmanager
def _temp_for(path: str) -> Iterator[_Temp]:
    """A temporary file next to `path` (removed again unless the caller renamed it)."""
    temp = _Temp(path)
    try:
        try:
            fd = _unnamed_file(temp.folder)
            if fd is None:
                _journal(temp.folder)
                fd, temp.name = tempfile.mkstemp(prefix=_prefix(path), suffix=".tmp", dir=temp.folder)
        except OSError as e:
            raise _open_error(path, e) from None
        os.fchmod(fd, 0o666 & ~_umask())  # the permissions a plain open() would have given
        with os.fdopen(fd, "wb") as f:
            temp.file = f
            yield temp
    finally:
        if temp.name is not None:
            _unlink(temp.name)


def _unnamed_file(folder: str) -> int | None:
    """An unnamed file in `folder` (`O_TMPFILE`), or None where the file system (or platform) has none."""
    flag = getattr(os, "O_TMPFILE", 0)
    if not flag or testing_hooks.named_temporaries() or not os.path.isdir("/proc/self/fd"):
        return None
    try:
        return os.open(folder, flag | os.O_WRONLY | os.O_CLOEXEC, 0o600)
    except OSError as e:
        if e.errno in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL):
            return None
        raise


_JOURNALED: set[str] = set()


def _journal_file() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


def _journal(folder: str) -> None:
    """Note that this process creates named temporaries in `folder` (see the module docstring); the note goes
    when the process ends normally. Nothing when daphnec's cache folder is refused: the next write to the folder
    still sweeps."""
    if folder in _JOURNALED:
        return
    journal = cache_files.write_journal()
    fd = cache_files.folder_descriptor(journal)
    if fd is None:
        return
    try:
        note = os.open(_journal_file(), os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                       dir_fd=fd)  # fmt: skip
        try:
            os.write(note, (folder + "\n").encode("utf-8", "surrogateescape"))
        finally:
            os.close(note)
    except OSError:
        return
    if not _JOURNALED:
        atexit.register(_forget_journal, journal)
    _JOURNALED.add(folder)


def _forget_journal(journal: object) -> None:
    fd = cache_files.folder_descriptor(journal)  # type: ignore[arg-type]
    if fd is not None:
        try:
            os.unlink(_journal_file(), dir_fd=fd)
        except OSError:
            pass


def sweep_dead_writers() -> list[str]:
    """At daphnec's start: sweep the folders in which writers on this host that have died left named temporaries
    (their journal notes), then drop those notes. Returns the files removed."""
    journal = cache_files.write_journal()
    if not os.path.isdir(journal):  # the common case: no process ever needed named temporaries
        return []
    fd = cache_files.folder_descriptor(journal)
    if fd is None:
        return []
    host, removed = socket.gethostname(), []
    try:
        notes = os.listdir(fd)
    except OSError:
        return []
    for note in notes:
        owner, _, pid = note.rpartition("-")
        if owner != host or not pid.isdigit() or _alive(int(pid)):
            continue
        try:
            opened = os.open(note, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=fd)
            with os.fdopen(opened, "rb") as f:
                if not stat.S_ISREG(os.fstat(f.fileno()).st_mode) or os.fstat(f.fileno()).st_uid != os.geteuid():
                    continue
                folders = set(f.read(1 << 20).decode("utf-8", "surrogateescape").splitlines())
            for folder in sorted(folders):
                if os.path.isabs(folder):
                    removed += sweep(folder)
            os.unlink(note, dir_fd=fd)
        except OSError:
            continue
    return removed


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep(folder: str) -> list[str]:
    """Remove the temporary files that dead writers (on this host, of this user) left in `folder`; returns them."""
    host, uid, removed = socket.gethostname(), os.getuid(), []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for e in entries:
        m = _TEMP.match(e.name)
        if m is None or m["host"] != host or _alive(int(m["pid"])):
            continue
        try:
            st = e.stat(follow_symlinks=False)
            if e.is_file(follow_symlinks=False) and st.st_uid == uid:
                os.unlink(e.path)
                removed.append(e.path)
        except OSError:
            continue
    return removed


class _Interrupts:
    """The signals of a write in progress (main thread only). They raise only while a writer runs (`_writing`),
    where the temporary files' clean-up undoes everything; anywhere else (creating temporaries, the renames and
    their bookkeeping, the clean-up) a signal is held back and raised once that step is over. A signal raised
    between `os.replace` and the line recording it could otherwise leave the new data beside the old `.meta`."""

    open = False
    pending: int | None = None


def _raise_for(signum: int) -> None:
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Terminated(signum)


def _handler(signum: int, frame: object) -> None:
    if _Interrupts.open:
        _raise_for(signum)
    _Interrupts.pending = _Interrupts.pending or signum


@contextmanager
def _writing() -> Iterator[None]:
    """The one stretch of a write where a signal raises at once (see `_Interrupts`; signals reach only the main
    thread, so another thread's write leaves the state alone)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _Interrupts.open = True
    try:
        if _Interrupts.pending is not None:
            _raise_for(_Interrupts.pending)
        yield
    finally:
        _Interrupts.open = False


@contextmanager
def _signals_held() -> Iterator[None]:
    """While writing, SIGINT/SIGTERM/SIGHUP are held back outside `_writing` and then raise (`KeyboardInterrupt`,
    `Terminated`). Only where they would otherwise end the write abruptly: a handler someone installed is left
    alone, and only the main thread can handle signals."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    installed = {}
    _Interrupts.pending = None  # before the handlers: a signal that arrives while they are installed is kept
    for sig in (signal.SIGINT, *_TERMINATIONS):
        if signal.getsignal(sig) == (signal.default_int_handler if sig == signal.SIGINT else signal.SIG_DFL):
            installed[sig] = signal.signal(sig, _handler)
    try:
        yield
    finally:
        for sig, old in installed.items():
            signal.signal(sig, old)
        pending, _Interrupts.pending = _Interrupts.pending, None
        if pending is not None:
            _raise_for(pending)


def write_files(files: list[tuple[str, Writer]], meta: str | None = None) -> None:
    """Write every `(path, writer)` pair to its own temporary file, then rename them into place in order. With
    `meta` (the text of the last file, the `.meta` of the others), each other file records it (`META_XATTR`) and
    the renames keep data and `.meta` a pair.

    If a writer fails, no target is touched and every temporary file is removed again. SIGTERM/SIGHUP clean up
    the same way and then end the process with the signal; a signal during the renames waits until both are done."""
    try:
        with _signals_held():
            _write_files(files, meta)
    except Terminated as t:
        signal.signal(t.signum, signal.SIG_DFL)
        os.kill(os.getpid(), t.signum)
        raise


_SWEPT: set[str] = set()
"""Folders this process has swept already (leftovers of writers that died before it started)."""


def _write_files(files: list[tuple[str, Writer]], meta: str | None) -> None:
    for folder in {os.path.dirname(os.path.abspath(p)) for p, _ in files} - _SWEPT:
        sweep(folder)
        _SWEPT.add(folder)
    with ExitStack() as stack:
        written = []
        for i, (path, writer) in enumerate(files):
            temp = stack.enter_context(_temp_for(path))
            assert temp.file is not None
            try:
                with _writing():
                    writer(temp.file)
                    temp.file.flush()
            except OSError as e:
                raise DaphneRuntimeError(f"cannot write file '{path}': {e.strerror or e}") from None
            if meta is not None and i < len(files) - 1:
                _tag(temp.file.fileno(), meta)
            written.append(temp)
        temps = [(temp.name_it(), temp.path) for temp in written]
        backups = [stack.enter_context(_backup(path)) for _, path in temps[:-1]]
        placed: list[str] = []
        try:
            for tmp, path in temps:
                _replace(tmp, path)
                placed.append(path)
        except BaseException:
            _restore(placed, backups)
            raise


def _restore(placed: list[str], backups: list[str | None]) -> None:
    """Put back what the renames in `placed` replaced (a file that did not exist before goes away again)."""
    for path, backup in zip(placed, backups):
        try:
            if backup is not None:
                os.replace(backup, path)
            else:
                os.unlink(path)
        except OSError:
            pass


def _replace(tmp: str, path: str) -> None:
    try:
        os.replace(tmp, path)
    except OSError as e:
        raise _open_error(path, e) from None


@contextmanager
def _backup(path: str) -> Iterator[str | None]:
    """A hard link to the current `path` until the whole pair is in place (None if there is nothing to keep)."""
    backup = f"{os.path.dirname(os.path.abspath(path))}/{_prefix(path)}{secrets.token_hex(4)}.tmp"
    try:
        os.link(path, backup, follow_symlinks=False)
    except OSError:
        yield None
        return
    try:
        yield backup
    finally:
        _unlink(backup)


def _tag(fd: int, meta: str) -> None:
    """Record `meta` on the data file (open as `fd`), with the file's size and modification time: a file changed
    since (edited, appended to) no longer vouches for a `.meta`."""
    st = os.fstat(fd)
    record = json.dumps({"meta": meta, "size": st.st_size, "mtime_ns": st.st_mtime_ns})
    try:
        os.setxattr(fd, META_XATTR, record.encode("utf-8"))
    except OSError:  # a file system without user attributes: the pair is only as safe as the renames
        pass


def written_meta(data_path: str) -> str | None:
    """The `.meta` text the data file was written with, if daphnec wrote it and nobody changed it since (None
    otherwise, also on file systems without user attributes)."""
    try:
        record = json.loads(os.getxattr(data_path, META_XATTR))
        st = os.stat(data_path)
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or (record.get("size"), record.get("mtime_ns")) != (st.st_size, st.st_mtime_ns):
        return None
    meta = record.get("meta")
    return meta if isinstance(meta, str) else None
