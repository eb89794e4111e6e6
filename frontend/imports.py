"""Where an `import` statement leads: DAPHNE's resolution of import paths (doc/DaphneDSL/Imports.md,
src/parser/daphnedsl/DaphneDSLVisitor.cpp `visitImportStatement`).

- `import "a.daph";` is looked up relative to the importing file's folder; if the user config's
  `daphnedsl_import_paths` has `default_dirs`, each of them is tried too (relative to the working directory), the
  last one holding the file wins, and a file found both beside the importer and in a default directory (two
  different files) is an ambiguous import. An absolute path is used as it is.
- A file import found neither beside the importer nor in a default directory is looked up in daphnec's own
  library (`daphnec.lib.LIBRARY_DIR`, the package's `lib/` folder: `import "nn/layers/conv2d.daph" as "conv2d";`
  works from any installation without configuration; a file of the same path beside the importer or in a default
  directory wins).
- `import "algorithms";` (no extension) names a library: a key of `daphnedsl_import_paths` whose (first) directory
  holds the files to import, each under the prefix `algorithms.<file stem>.`.
- The prefix of a file import is its alias, else the file's stem. A prefix already taken by an earlier import of
  the same file gets the name of the file's parent folder in front (`otherdir.a.`); with an explicit alias that is
  an error instead.
- A file cannot import itself, nor the same file twice. daphnec also reports an import cycle (DAPHNE recurses
  until its stack overflows).

All errors are ParseErrors (DAPHNE's parser exit code 1) with DAPHNE's wording.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from daphnec.dialects.errors import ParseError
from daphnec.frontend import ast
from daphnec.frontend.sources import SourceFiles
from daphnec.lib import LIBRARY_DIR

DEFAULT_DIRS = "default_dirs"
"""The key of `daphnedsl_import_paths` listing the folders searched for file imports."""


@dataclass(frozen=True)
class ImportTarget:
    """One file an import statement brings in, and the prefix its names get in the importing file."""

    path: str
    prefix: str


@dataclass
class ImportResolver:
    """Resolves import statements against the user config's `daphnedsl_import_paths`, reporting every file it
    probes and every folder it lists to `sources` (the program cache key depends on their answers)."""

    import_paths: Mapping[str, Sequence[str]]
    sources: SourceFiles

    def resolve(self, imp: ast.Import, importer: str, taken: set[str], done: list[str]) -> list[ImportTarget]:
        """The files `imp` (in the file `importer`) imports, with their prefixes.

        taken: the prefixes earlier imports of the same file used (a clash renames or fails);
        done: the files the same file imported already (importing one twice is an error).
        """
        has_ext = os.path.splitext(imp.path)[1] != ""
        path = self._locate(imp, importer, has_ext)
        library = None if has_ext or os.path.isabs(imp.path) else self.import_paths.get(imp.path)
        files = self._library_files(library[0] if library else "") if library else [path]
        if os.path.abspath(importer) == path:
            raise ParseError(f"You cannot import the file you are currently in: {path}", imp.loc)
        for f in files:
            if any(_same_file(f, d) for d in done):
                raise ParseError(f"You cannot import the same file twice: {f}", imp.loc)
            done.append(f)
        base = (imp.alias if imp.alias is not None else _stem(imp.path)) + "."
        targets = []
        for f in files:
            if not self.sources.is_file(f):
                raise ParseError(f"The import path doesn't exist: {f}", imp.loc)
            prefix = base + _stem(f) + "." if not has_ext else self._unclash(base, f, imp, taken)
            taken.add(prefix)
            targets.append(ImportTarget(f, prefix))
        return targets

    def _locate(self, imp: ast.Import, importer: str, has_ext: bool) -> str:
        """The file a (non-library) import names: beside the importer, or in one of the default directories."""
        if os.path.isabs(imp.path):
            return imp.path
        beside = os.path.join(os.path.dirname(os.path.abspath(importer)), imp.path)
        found = os.path.realpath(beside) if self.sources.is_file(beside) else beside
        if not has_ext:
            return found
        for d in self.import_paths.get(DEFAULT_DIRS, ()):
            candidate = os.path.join(d, imp.path)
            if not self.sources.is_file(candidate):
                continue
            if self.sources.is_file(beside) and os.path.realpath(candidate) != found:
                raise ParseError(
                    f"Ambiguous import: {imp.path}, found another file with the same name in default paths of "
                    f"UserConfig: {candidate}",
                    imp.loc,
                )
            found = os.path.abspath(candidate)
        if not self.sources.is_file(found):
            shipped = os.path.join(LIBRARY_DIR, imp.path)
            if self.sources.is_file(shipped):
                return os.path.realpath(shipped)
        return found

    def _library_files(self, folder: str) -> list[str]:
        """The files of a library folder, in name order (DAPHNE takes the directory's order, which is unspecified)."""
        try:
            names = self.sources.list_dir(folder)
        except OSError as e:
            raise ParseError(f"cannot read the import library folder '{folder}': {e.strerror}") from None
        return [os.path.abspath(os.path.join(folder, n)) for n in names]

    @staticmethod
    def _unclash(prefix: str, path: str, imp: ast.Import, taken: set[str]) -> str:
        if prefix not in taken:
            return prefix
        if imp.alias is not None:
            raise ParseError(f'Alias "{imp.alias}" results in a name clash with another prefix', imp.loc)
        return os.path.basename(os.path.dirname(path)) + "." + prefix


def _stem(path: str) -> str:
    return os.path.splitext(os.path.basename(path))[0]


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)
