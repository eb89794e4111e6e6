"""The documentation stays true: what README.md, docs/*.md, bench/README.md and the examples' READMEs name
exists, and their code runs.

Each check reads the Markdown as written and recognises only unambiguous forms, so prose never trips it:
- **Repository paths** (also in the grammars' comments): a token whose first component is a top-level entry of the
  repository (`compiler/jit.py`, `docs/`, `tests/paramserv/test_engine_*.py`,
  `examples/paramserv_{linreg,logreg,mlp}.daph`), in prose, code spans, links and code blocks, must exist (a glob
  must match, braces are expanded; `<name>` placeholders and git-ignored output folders such as `bench/out/` are
  skipped). A code span `path: NAME` or `path::NAME` must define `NAME` at the top level of that file. A code span
  that is a bare `name.py` must be some file of the repository. A parenthesised list of backticked names right
  after a folder or package ("`runtime/distributed/` (`launch`, `worker`, ...)") names modules of it.
- **Modules**: a dotted name in a code span or block starting with `daphnec.` (or with a module of the `daphne`
  package, DaphneLib's import path) must be a module, or a module and attributes of it. A dotted name starting
  with a layer folder (`runtime.errors.X`) is an error: installed, the layers are only `daphnec.<layer>`.
- **Passes**: every pass named in docs/architecture.md's pass table (exactly the registered ones), every
  backticked kebab-case name (`fuse-sums`: the form pass names take), every backticked name next to the word
  "pass", and every `daphne-opt -p a,b` list must be a registered pass.
- **Options**: every `--option` that a code span or block of a doc (but bench/README.md) gives to `daphnec` (a lone
  `--x`, or one after the word `daphnec` in a command) is in the option table (runtime/options.py); README.md's
  option table lists every command-line option in the row of its `--help` group; every option given to a
  `bench/*.py` script is in that script's `--help`, and bench/README.md describes every script under bench/.
- **Code blocks** name their language; every ```python block runs as written (in a fresh process at the
  repository root that cannot import the layer folders as top-level modules, as an installed daphnec); every
  ```daphne block parses.
"""

from __future__ import annotations

import ast
import fnmatch
import json
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOC_FILES = (
    "README.md",
    *sorted(str(p.relative_to(REPO)) for p in (REPO / "docs").glob("*.md")),
    "bench/README.md",
    *sorted(str(p.relative_to(REPO)) for p in (REPO / "examples").rglob("*.md")),
)
GRAMMARS = ("frontend/grammar.lark", "frontend/sql/grammar.lark")
"""The grammars' comments cite the modules that consume them: their repository paths are checked too."""
LAYERS = ("frontend", "dialects", "compiler", "runtime", "tools")
OTHER_TOOLS = frozenset({"mlir-opt"})
"""Kebab-case names of other projects' tools the docs compare with (not passes)."""

# ---------------------------------------------------------------------------------------------------------------
# Reading the Markdown
# ---------------------------------------------------------------------------------------------------------------

_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)")
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^\s*```(\w*)\s*$")


@dataclass(frozen=True)
class Piece:
    """A code span or a code block of a doc, with where it starts."""

    doc: str
    line: int
    text: str
    lang: str = ""
    """The language of a fenced block (`python`, `sh`, `daphne`, ...); "" for a code span or an unnamed block."""

    def where(self) -> str:
        return f"{self.doc}:{self.line}"


@dataclass(frozen=True)
class Doc:
    name: str
    prose: str
    """The text without its fenced code blocks (each line of a block blanked, so line numbers stay)."""
    spans: tuple[Piece, ...]
    blocks: tuple[Piece, ...]

    def line_of(self, offset: int) -> int:
        return _line_of(self.prose, offset)

    def plain_prose(self) -> str:
        """The prose with its code spans blanked (offsets and line numbers kept)."""
        return _SPAN.sub(lambda m: " " * len(m.group(0)), self.prose)


@cache
def read_doc(name: str) -> Doc:
    lines = (REPO / name).read_text().split("\n")
    prose: list[str] = []
    blocks: list[Piece] = []
    fence: tuple[int, str, list[str]] | None = None
    for i, line in enumerate(lines, 1):
        m = _FENCE.match(line)
        if fence is None and m:
            fence = (i, m.group(1), [])
            prose.append("")
        elif fence is not None:
            if line.strip() == "```":
                blocks.append(Piece(name, fence[0] + 1, "\n".join(fence[2]), fence[1]))
                fence = None
            else:
                fence[2].append(line)
            prose.append("")
        else:
            prose.append(line)
    assert fence is None, f"{name}:{fence[0]}: unclosed code block"
    text = "\n".join(prose)
    spans = tuple(Piece(name, _line_of(text, m.start()), m.group(2).strip()) for m in _SPAN.finditer(text))
    return Doc(name, text, spans, tuple(blocks))


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def all_docs() -> list[Doc]:
    return [read_doc(name) for name in DOC_FILES]


# ---------------------------------------------------------------------------------------------------------------
# Repository paths
# ---------------------------------------------------------------------------------------------------------------

_PATH = re.compile(r"(?<![\w./~$<>-])((?:[\w.*<>-]|\{[\w.,-]*\})+(?:/(?:[\w.*<>-]|\{[\w.,-]*\})*)+)")
_SYMBOL = re.compile(r"^(\S+?\.py)\s*(?:::|:)\s*(\w+)(?:\(\))?$")


@cache
def _ignored() -> tuple[str, ...]:
    """.gitignore's patterns (without slashes at either end)."""
    lines = (REPO / ".gitignore").read_text().splitlines()
    return tuple(s.strip().strip("/") for s in lines if s.strip() and not s.startswith("#"))


def _is_ignored(rel: str) -> bool:
    """Whether a repository path is, or lies under, something git ignores (generated output, the venv)."""
    parts = rel.strip("/").split("/")
    for pat in _ignored():
        depth = pat.count("/") + 1
        if "/" in pat or "**" in pat:
            if any(fnmatch.fnmatch("/".join(parts[:n]), pat) for n in range(depth, len(parts) + 1)):
                return True
        elif any(fnmatch.fnmatch(p, pat) for p in parts):
            return True
    return False


@cache
def top_level() -> frozenset[str]:
    """The repository's own top-level entries (what a fresh clone has)."""
    return frozenset(p.name for p in REPO.iterdir() if p.name != ".git" and not _is_ignored(p.name))


def _expand_braces(text: str) -> list[str]:
    m = re.search(r"\{([^{}]*)\}", text)
    if not m:
        return [text]
    return [x for alt in m.group(1).split(",") for x in _expand_braces(text[: m.start()] + alt + text[m.end() :])]


def path_problem(token: str) -> str | None:
    """What is wrong with a repository path named in a doc, or None (also for tokens that are not such paths)."""
    token = token.rstrip(".,:;")
    if token.split("/")[0] not in top_level() or "<" in token or ">" in token or _is_ignored(token):
        return None
    for path in _expand_braces(token):
        if "*" in path:
            if not any(p for p in REPO.glob(path) if not _is_ignored(str(p.relative_to(REPO)))):
                return f"`{path}` matches no file"
        elif not (REPO / path).exists():
            return f"`{path}` does not exist"
        elif path.endswith("/") and not (REPO / path).is_dir():
            return f"`{path}` is not a folder"
    return None


def _top_level_names(path: Path) -> set[str]:
    """The names a Python file defines at its top level (functions, classes, assignments, imports)."""
    names: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


@cache
def _file_names() -> frozenset[str]:
    """The names of the repository's Python files (not the venv's)."""
    files = (p for top in top_level() if (REPO / top).is_dir() for p in (REPO / top).rglob("*.py"))
    return frozenset(p.name for p in files if not _is_ignored(str(p.relative_to(REPO))))


def repository_path_problems() -> Iterator[str]:
    for doc in (*all_docs(), *map(read_doc, GRAMMARS)):
        prose = doc.plain_prose()
        for m in _PATH.finditer(prose):
            if problem := path_problem(m.group(1)):
                yield f"{doc.name}:{doc.line_of(m.start())}: {problem}"
        for m in _LINK.finditer(prose if doc.name.endswith(".md") else ""):
            target = m.group(1).split("#")[0]
            if target and "://" not in target and not target.startswith("mailto:"):
                rel = (REPO / doc.name).parent.joinpath(target).resolve()
                if not rel.exists():
                    yield f"{doc.name}:{doc.line_of(m.start())}: link target `{target}` does not exist"
        for piece in (*doc.spans, *doc.blocks):
            for m in _PATH.finditer(piece.text):
                if problem := path_problem(m.group(1)):
                    yield f"{piece.where()}: {problem}"
        for span in doc.spans:
            if (m := _SYMBOL.match(span.text)) and path_problem(m.group(1)) is None:
                file = REPO / m.group(1)
                if file.is_file() and m.group(2) not in _top_level_names(file):
                    yield f"{span.where()}: `{m.group(1)}` defines no `{m.group(2)}`"
            elif re.fullmatch(r"\w+\.py", span.text) and span.text not in _file_names():
                yield f"{span.where()}: no file `{span.text}` in the repository"


def test_every_repository_path_exists() -> None:
    assert list(repository_path_problems()) == []


_NAME_LIST = re.compile(r"\((?:[a-z]+ )?(`\w+`(?:,\s*(?:`\w+`|\.\.\.))+)\)")


def module_list_problems() -> Iterator[str]:
    """A parenthesised list of backticked names whose sentence last named a folder or a package
    ("`runtime/distributed/` (`launch`, `coordinator`, ...)", "`daphnec.tools.daphnelib` (modules `context`, ...)")
    lists modules of it: each must be a module file or package there."""
    for doc in all_docs():
        for m in _NAME_LIST.finditer(doc.prose):
            start = max(doc.prose.rfind(c, 0, m.start()) for c in (". ", "|", "\n\n"))
            spans = re.findall(r"`([^`]+)`", doc.prose[start : m.start()])
            if not spans:
                continue
            if spans[-1].endswith("/") and spans[-1].split("/")[0] in top_level():
                folder = REPO / spans[-1]
            elif re.fullmatch(r"daphnec(?:\.\w+)+", spans[-1]):
                folder = REPO.joinpath(*spans[-1].split(".")[1:])
            else:
                continue
            for name in re.findall(r"`(\w+)`", m.group(1)):
                if not ((folder / f"{name}.py").is_file() or (folder / name / "__init__.py").is_file()):
                    yield f"{doc.name}:{doc.line_of(m.start())}: `{spans[-1]}` has no module `{name}`"


def test_every_module_listed_under_a_folder_exists() -> None:
    assert list(module_list_problems()) == []


# ---------------------------------------------------------------------------------------------------------------
# Modules
# ---------------------------------------------------------------------------------------------------------------

_DOTTED = re.compile(r"(?<![\w./-])([A-Za-z_]\w*(?:\.(?:[A-Za-z_]\w*|\{[\w,]+\}))+)")
DAPHNE_PACKAGE = REPO / "tools" / "daphnelib" / "daphne"


def _module_file(root: Path, parts: list[str]) -> int:
    """How many of `parts` name modules under the package folder `root` (the rest are attributes)."""
    folder, n = root, 0
    for part in parts:
        if (folder / part / "__init__.py").is_file():
            folder, n = folder / part, n + 1
        elif (folder / f"{part}.py").is_file():
            return n + 1
        else:
            break
    return n


def dotted_names() -> Iterator[tuple[Piece, str]]:
    """Every dotted Python name in a code span or block (braces expanded), with where it is."""
    for doc in all_docs():
        for piece in (*doc.spans, *doc.blocks):
            for m in _DOTTED.finditer(piece.text):
                for name in _expand_braces(m.group(1)):
                    yield piece, name


def module_references() -> list[tuple[str, str, str, list[str]]]:
    """(where, name, module, attributes) of every `daphnec.` / `daphne.<module>` name of the docs."""
    found = []
    for piece, name in dotted_names():
        parts = name.split(".")
        if parts[0] == "daphnec":
            n = _module_file(REPO, parts[1:])
            found.append((piece.where(), name, ".".join(parts[: n + 1]), parts[n + 1 :]))
        elif parts[0] == "daphne" and (n := _module_file(DAPHNE_PACKAGE, parts[1:])):
            found.append((piece.where(), name, ".".join(parts[: n + 1]), parts[n + 1 :]))
    return found


def test_no_layer_folder_is_named_as_a_top_level_module() -> None:
    wrong = [
        f"{piece.where()}: `{name}`: write `daphnec.{name}` (installed, `{name.split('.')[0]}` is not a module)"
        for piece, name in dotted_names()
        if name.split(".")[0] in LAYERS and _module_file(REPO, name.split(".")[:1])
    ]
    assert wrong == []


def test_every_daphnec_module_named_exists(tmp_path: Path) -> None:
    refs = module_references()
    assert len(refs) > 20, "the docs name daphnec's modules: the extraction found too few"
    # Import every module and look its attributes up in one fresh process outside the repository.
    checks = sorted({(module, tuple(attrs)) for _, _, module, attrs in refs})
    code = (
        "import importlib, json, sys\n"
        "bad = []\n"
        f"for module, attrs in {checks!r}:\n"
        "    try:\n"
        "        obj = importlib.import_module(module)\n"
        "        for a in attrs:\n"
        "            obj = getattr(obj, a)\n"
        "    except Exception as e:\n"
        "        bad.append([module, list(attrs), f'{type(e).__name__}: {e}'])\n"
        "print(json.dumps(bad))\n"
    )
    res = _python(["-c", code], cwd=tmp_path)
    assert res.returncode == 0, res.stderr

    bad = {(m, tuple(a)): err for m, a, err in json.loads(res.stdout.strip().splitlines()[-1])}
    assert [f"{where}: `{name}`: {bad[(m, tuple(a))]}" for where, name, m, a in refs if (m, tuple(a)) in bad] == []


# ---------------------------------------------------------------------------------------------------------------
# Passes
# ---------------------------------------------------------------------------------------------------------------

_KEBAB = re.compile(r"[a-z]+(?:-[a-z]+)+")
_NEXT_TO_PASS = re.compile(r"\bpass\s+`([a-z][\w-]*)`|`([a-z][\w-]*)`\s+pass\b")
_OPT_PASSES = re.compile(r"\bdaphne-opt\b[^\n`]*?\s-p\s+([\w,-]+)")


@cache
def registered_passes() -> frozenset[str]:
    from daphnec.compiler.passes import PASS_FACTORIES

    return frozenset(PASS_FACTORIES)


@cache
def _pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())


def _keys(table: object) -> Iterator[str]:
    if isinstance(table, dict):
        for k, v in table.items():
            yield k
            yield from _keys(v)


def _not_passes() -> frozenset[str]:
    """Kebab-case names that are not passes: the installed commands, pyproject keys, other projects' tools."""
    return frozenset(_pyproject()["project"]["scripts"]) | frozenset(_keys(_pyproject())) | OTHER_TOOLS


def pass_mentions() -> Iterator[tuple[str, str]]:
    for doc in all_docs():
        for span in doc.spans:
            if _KEBAB.fullmatch(span.text) and span.text not in _not_passes():
                yield span.where(), span.text
        for m in _NEXT_TO_PASS.finditer(doc.prose):
            yield f"{doc.name}:{doc.line_of(m.start())}", m.group(1) or m.group(2)
        for piece in (*doc.spans, *doc.blocks):
            for m in _OPT_PASSES.finditer(piece.text):
                yield from ((piece.where(), name) for name in m.group(1).split(",") if name)


def architecture_pass_table() -> list[str]:
    """The first column of docs/architecture.md's table whose header starts with `| pass |`."""
    names, inside = [], False
    for line in read_doc("docs/architecture.md").prose.split("\n"):
        if re.match(r"\|\s*pass\s*\|", line):
            inside = True
        elif inside and line.startswith("|"):
            cell = line.split("|")[1].strip()
            if not set(cell) <= set("-: "):
                names += re.findall(r"`([\w-]+)`", cell)
        elif inside:
            break
    return names


def test_every_pass_named_is_registered() -> None:
    mentions = list(pass_mentions())
    assert len(mentions) > 10, "the docs name passes: the extraction found too few"
    assert [f"{where}: `{name}` is not a registered pass" for where, name in mentions
            if name not in registered_passes()] == []  # fmt: skip


def test_architecture_lists_every_registered_pass() -> None:
    table = architecture_pass_table()
    assert sorted(table) == sorted(set(table)), "a pass is listed twice"
    assert set(table) == registered_passes(), (
        f"docs/architecture.md's pass table: missing {sorted(registered_passes() - set(table))}, "
        f"not registered {sorted(set(table) - registered_passes())}"
    )


# ---------------------------------------------------------------------------------------------------------------
# Command-line options
# ---------------------------------------------------------------------------------------------------------------

_OPTION = re.compile(r"(?<![\w-])--([A-Za-z][\w-]*\*?)")
_WORD = re.compile(r"(?<![\w/.-])(daphne-opt|daphnec|daphne|python\d*|pytest|pip|mpiexec|mpirun|lit|git)(?![\w-])|"
                   r"(?<![\w.-])(bench/\w+\.py)\b")  # fmt: skip


def option_uses(piece: Piece, default_owner: str | None) -> Iterator[tuple[str, str]]:
    """(owner, option) of every `--option` in a span or block: the owner is the command it follows on its line
    (`daphnec`, a `bench/x.py` script, another tool), else `default_owner` for a line that is not a command."""
    for line in piece.text.split("\n"):
        if piece.lang not in ("", "sh", "bash", "console", "text"):
            continue
        owner = default_owner if line.lstrip().startswith("--") else None
        events = sorted([(m.start(), "word", m.group(1) or m.group(2)) for m in _WORD.finditer(line)]
                        + [(m.start(), "opt", m.group(1)) for m in _OPTION.finditer(line)])  # fmt: skip
        for _, kind, value in events:
            if kind == "word":
                owner = value
            elif owner is not None:
                yield owner, value


@cache
def daphnec_options() -> dict[str, str]:
    """Command-line name (and alias) -> `--help` group of every option of the table."""
    from daphnec.runtime.options import OPTIONS

    return {name: o.group for o in OPTIONS if o.cli for name in (o.cli, *o.aliases)}


def _option_known(name: str, known: set[str] | dict[str, str]) -> bool:
    return any(k.startswith(name[:-1]) for k in known) if name.endswith("*") else name in known


def test_every_daphnec_option_named_exists() -> None:
    uses = [
        (piece.where(), opt)
        for name in DOC_FILES
        if name != "bench/README.md"
        for piece in (*read_doc(name).spans, *read_doc(name).blocks)
        for owner, opt in option_uses(piece, "daphnec")
        if owner == "daphnec"
    ]
    assert len(uses) > 50, "the docs name daphnec's options: the extraction found too few"
    assert [f"{w}: `--{o}` is not a daphnec option" for w, o in uses if not _option_known(o, daphnec_options())] == []


def test_readme_lists_every_option_in_its_group() -> None:
    """README.md's option table: one row per `--help` group, every option (not its aliases) in its group's row."""
    from daphnec.runtime.options import GROUPS, OPTIONS

    titles = {"general": "general", "compiler": "compiler", "sched": "scheduling", "dist": "distributed",
              "debug": "debugging"}  # fmt: skip
    assert set(titles) == {g for g, _ in GROUPS}
    rows = {}
    for line in read_doc("README.md").prose.split("\n"):
        cells = [c.strip() for c in line.split("|")]
        if len(cells) > 3 and cells[1] in titles.values():
            rows[cells[1]] = {m.group(1) for m in _OPTION.finditer(line)}
    missing = [
        f"`--{o.cli}` ({titles[o.group]})" for o in OPTIONS if o.cli and o.cli not in rows.get(titles[o.group], ())
    ]
    assert missing == [], "README.md's option table misses these options (or has them in another group's row)"


@cache
def bench_options(script: str) -> frozenset[str]:
    # A script run as a script imports its neighbours (bench/ on sys.path), as `python bench/x.py` does.
    res = subprocess.run([sys.executable, script, "--help"], cwd=REPO, capture_output=True, text=True, timeout=120)
    if res.returncode != 0:
        return frozenset()
    return frozenset(m.group(1) for m in _OPTION.finditer(res.stdout))


def test_every_bench_option_named_exists() -> None:
    uses = [
        (piece.where(), owner, opt)
        for doc in all_docs()
        for piece in (*doc.spans, *doc.blocks)
        for owner, opt in option_uses(piece, None)
        if owner.startswith("bench/")
    ]
    assert len(uses) > 10, "the docs give options to the benchmarks: the extraction found too few"
    assert [f"{w}: `{s} --{o}`: not an option of {s}" for w, s, o in uses if o not in bench_options(s)] == []


def test_bench_readme_describes_every_benchmark() -> None:
    text = (REPO / "bench" / "README.md").read_text()
    scripts = sorted(p.name for p in (REPO / "bench").glob("*.py"))
    assert [s for s in scripts if f"bench/{s}" not in text] == []


# ---------------------------------------------------------------------------------------------------------------
# Code blocks
# ---------------------------------------------------------------------------------------------------------------


def _python(args: list[str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """A fresh interpreter that does not put its working folder on sys.path (`-P`): at the repository root the
    layer folders would otherwise be importable as top-level modules, which an installed daphnec never sees."""
    return subprocess.run([sys.executable, "-P", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout)


def blocks(lang: str) -> list[Piece]:
    return [b for doc in all_docs() for b in doc.blocks if b.lang == lang]


@pytest.mark.parametrize("block", blocks("python"), ids=lambda b: b.where())
def test_python_block_runs(block: Piece, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DAPHNEC_CACHE_DIR", str(tmp_path / "cache"))
    res = _python(["-c", block.text], cwd=REPO)
    assert res.returncode == 0, f"{block.where()}: the block fails:\n{res.stderr[-3000:]}"


@pytest.mark.parametrize("block", blocks("daphne"), ids=lambda b: b.where())
def test_daphne_block_parses(block: Piece) -> None:
    from daphnec.frontend.parser import parse_source

    parse_source(block.text + "\n", block.where())


def test_every_code_block_names_its_language() -> None:
    """So that the checks above know what a block holds (`python`, `daphne`, `sh`, `text`, ...)."""
    assert [b.where() for doc in all_docs() for b in doc.blocks if not b.lang] == []
    assert len(blocks("python")) >= 3 and len(blocks("daphne")) >= 3
