"""The files of a program and the functions each of them sees (DAPHNE's import semantics, doc/DaphneDSL/Imports.md).

Every file (the script and each file it imports, also imports inside imported files) is a `Module`: its parsed
statements, the user-defined functions visible in it, and what each of its import statements brought in. A
module sees its own functions under their bare names and those of the files it imports under the import's prefix
(`utils.f`); an imported file's own imports stay private to it (DAPHNE discards every name containing a dot when
it merges an imported file into the importer). A function name may have several definitions (overloads), kept in
definition order.

All modules are loaded before any IR is built, so functions may be called before their definition; each function
gets a unique IR symbol (`f`, `utils.f`, `f-2` for a second overload of `f`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from daphnec.dialects.errors import ParseError
from daphnec.frontend import ast
from daphnec.frontend.imports import ImportResolver, ImportTarget
from daphnec.frontend.parser import parse_file

if TYPE_CHECKING:
    from xdsl.dialects import func


@dataclass(eq=False)
class UserFunction:
    """One definition of a user-defined function, the module it belongs to, and its IR once declared."""

    node: ast.FuncDef
    sym: str
    module: Module
    op: func.FuncOp | None = None


@dataclass(eq=False)
class Module:
    """One source file of the program."""

    path: str
    script: ast.Script
    functions: dict[str, list[UserFunction]] = field(default_factory=dict)
    """The functions the file's code can call, by the name it calls them (overloads in definition order)."""
    imports: dict[ast.Import, list[tuple[ImportTarget, Module]]] = field(default_factory=dict)
    """The modules each top-level import statement brings in, with the prefix their names get here."""

    def own_functions(self) -> list[tuple[str, list[UserFunction]]]:
        """The functions defined in this file itself (what an importer sees, under its prefix)."""
        return [(n, fs) for n, fs in self.functions.items() if "." not in n]


class ModuleLoader:
    """Parses the script's imports recursively and registers every function definition."""

    def __init__(self, resolver: ImportResolver):
        self.resolver = resolver
        self.functions: list[UserFunction] = []
        """Every function of every module, in the order they were found."""
        self._syms: set[str] = set()

    def load(self, script: ast.Script, path: str) -> Module:
        """The module of the main script (and, reachable from it, every module it imports)."""
        return self._load(script, path, "", [path])

    def _load(self, script: ast.Script, path: str, sym_prefix: str, stack: list[str]) -> Module:
        m = Module(path, script)
        taken: set[str] = set()
        done: list[str] = []
        for s in script.stmts:
            if isinstance(s, ast.FuncDef):
                self._define(m, s, sym_prefix)
            elif isinstance(s, ast.Import):
                m.imports[s] = [
                    (t, self._load_import(m, t, s, sym_prefix, stack))
                    for t in self.resolver.resolve(s, path, taken, done)
                ]
        return m

    def _load_import(self, m: Module, t: ImportTarget, s: ast.Import, sym_prefix: str, stack: list[str]) -> Module:
        if t.path in stack:
            chain = " imports ".join([*stack[stack.index(t.path) :], t.path])
            raise ParseError(f"import cycle: {chain}", s.loc)
        child = self._load(parse_file(t.path, self.resolver.sources), t.path, sym_prefix + t.prefix, [*stack, t.path])
        for name, fs in child.own_functions():
            m.functions.setdefault(t.prefix + name, []).extend(fs)
        return child

    def _define(self, m: Module, s: ast.FuncDef, sym_prefix: str) -> None:
        seen: set[str] = set()
        for p in s.params:
            if p.name in seen:
                raise ParseError(f"Function argument name `{p.name}` is used twice.", p.loc)
            seen.add(p.name)
        for other in m.functions.get(s.name, []):
            if _param_types(other.node) == _param_types(s):
                raise ParseError(
                    f"function '{s.name}' is defined more than once with the same parameters (first at "
                    f"{other.node.loc}); overloads must differ in their number of parameters or their types",
                    s.loc,
                )
        base = sym_prefix + s.name
        sym, n = base, 1
        while sym in self._syms:
            n += 1
            sym = f"{base}-{n}"
        self._syms.add(sym)
        f = UserFunction(s, sym, m)
        m.functions.setdefault(s.name, []).append(f)
        self.functions.append(f)


def _param_types(f: ast.FuncDef) -> list[tuple[str | None, str | None] | None]:
    return [(p.type.data_type or "scalar", p.type.value_type) if p.type is not None else None for p in f.params]
