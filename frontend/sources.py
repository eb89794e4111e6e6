"""The files the frontend read: the script, the scripts it imports, and the answers of the import search.

The frontend reads every source file through a `SourceFiles` and reports it there, with the SHA-256 of the very
bytes it parsed; the import search notes whether each candidate it tried is a file (an earlier candidate that
appears later changes which file an import means) and which files each library folder it listed held. The driver
hands this report, plus the `.meta` files the compiler read, to the whole-program cache
(compiler/host/program_cache.py), which recompiles when any of them changes.
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
from dataclasses import dataclass, field

from daphnec.dialects.errors import Loc, ParseError


@dataclass
class SourceFiles:
    """What the frontend read, in the order it read it."""

    read: dict[str, str] = field(default_factory=dict)
    """Path (as opened) -> SHA-256 of the bytes that were parsed."""
    probed: dict[str, bool] = field(default_factory=dict)
    """Path -> whether it was a regular file when the import search tried it."""
    listed: dict[str, list[str]] = field(default_factory=dict)
    """Library folder -> the names of the regular files in it when the import search listed it (sorted)."""

    def read_text(self, path: str) -> str:
        """The UTF-8 text of `path` as `open(path, encoding="utf-8-sig")` reads it (universal newlines, a leading
        BOM dropped), noting the digest of its bytes; raises OSError (also for a FIFO, device or folder: never
        blocks) or `ParseError` at the line and column of the first byte that is not UTF-8."""
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as f:
            mode = os.fstat(fd).st_mode
            if not stat.S_ISREG(mode):
                raise OSError(f"it is {file_kind(mode)}")
            data = f.read()
        self.read.setdefault(path, hashlib.sha256(data).hexdigest())
        return decode_source(data, path)

    def is_file(self, path: str) -> bool:
        """`os.path.isfile(path)`, noting the answer."""
        answer = os.path.isfile(path)
        self.probed.setdefault(path, answer)
        return answer

    def list_dir(self, folder: str) -> list[str]:
        """The sorted names of the regular files in `folder`, noting the answer; raises OSError."""
        names = sorted(e.name for e in os.scandir(folder) if e.is_file())
        self.listed.setdefault(folder, names)
        return names


def decode_source(data: bytes, path: str) -> str:
    """Script bytes -> text (UTF-8, a leading BOM dropped, universal newlines); a byte that is not UTF-8 is a
    `ParseError` at its line and column (columns count characters, as the parser's do)."""
    body = data[3:] if data.startswith(b"\xef\xbb\xbf") else data
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as e:
        before = body[: e.start]
        line_start = max(before.rfind(b"\n"), before.rfind(b"\r")) + 1
        line = before.count(b"\n") + before.replace(b"\r\n", b"\n").count(b"\r") + 1
        col = len(before[line_start:].decode("utf-8")) + 1
        raise ParseError(f"invalid UTF-8 byte 0x{body[e.start]:02x} in the script", Loc(path, line, col)) from None
    return io.TextIOWrapper(io.BytesIO(body), encoding="utf-8").read()


def file_kind(mode: int) -> str:
    """What a file that is not a regular file is, for messages ("a directory", "a FIFO", ...)."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    return "a device or socket, not a regular file"
