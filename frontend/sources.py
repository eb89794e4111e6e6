"""The files the frontend read: the script, the scripts it imports, and the answers of the import search.

The frontend reads every source file through a `SourceFiles` and reports it there, with the SHA-256 of the very
bytes it parsed; the import search notes whether each candidate it tried is a file (an earlier candidate that
appears later changes which file an import means) and which files each library folder it listed held. The driver
hands this report, plus the `.meta` files the compiler read, to the whole-program cache (compiler/program_cache.py),
which recompiles when any of them changes.
"""

from __future__ import annotations

import hashlib
import io
import os
from dataclasses import dataclass, field


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
        """The UTF-8 text of `path` as `open(path, encoding="utf-8")` reads it (universal newlines), noting the
        digest of its bytes; raises OSError or UnicodeDecodeError."""
        with open(path, "rb") as f:
            data = f.read()
        self.read.setdefault(path, hashlib.sha256(data).hexdigest())
        return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8").read()

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
