"""No import cycles among daphnec's modules, counting imports inside functions too (a cycle hidden behind a local
import is still a cycle). The compiler's host-code group (host_codegen, pipeline, the passes, the kernel stages, the
JIT, the shipped-body compiler) must stay acyclic; `KNOWN` lists cycles still being removed elsewhere."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ("frontend", "dialects", "compiler", "runtime", "tools")

KNOWN = (
    {"daphnec.dialects", "daphnec.dialects.daphne"},
    {
        "daphnec.frontend.builtins",
        "daphnec.frontend.builtins_frame",
        "daphnec.frontend.builtins_io",
        "daphnec.frontend.builtins_matrix",
        "daphnec.frontend.ir_builder",
        "daphnec.frontend.paramserv",
    },
    {"daphnec.runtime.frame", "daphnec.runtime.kernels.lists", "daphnec.runtime.printing"},
    {"daphnec.runtime.paramserv", "daphnec.runtime.paramserv.mpi"},
    {"daphnec.compiler.kernel_select", "daphnec.compiler.select_frame", "daphnec.compiler.sparsity"},
)
"""Cycles of issue 11 that other changes remove (frontend builtins, runtime printing, paramserv, kernel selection)."""


def _modules() -> dict[str, Path]:
    mods = {}
    for layer in LAYERS:
        for path in (ROOT / layer).rglob("*.py"):
            if "Output" in path.parts:
                continue
            parts = path.relative_to(ROOT).with_suffix("").parts
            mods[".".join(("daphnec", *(parts[:-1] if parts[-1] == "__init__" else parts)))] = path
    return mods


def _graph(mods: dict[str, Path]) -> dict[str, set[str]]:
    def resolve(name: str) -> str | None:
        while name not in mods:
            if "." not in name:
                return None
            name = name.rsplit(".", 1)[0]
        return name

    graph: dict[str, set[str]] = {m: set() for m in mods}
    for m, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text())):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            for target in {resolve(n) for n in names if n.startswith("daphnec.")} - {None, m}:
                graph[m].add(target)  # type: ignore[arg-type]
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components with more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[set[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = set()
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.add(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(comp)
    return out


def test_no_new_import_cycles() -> None:
    cycles = _cycles(_graph(_modules()))
    assert [c for c in cycles if c not in KNOWN] == []


def test_the_host_code_group_is_acyclic() -> None:
    graph = _graph(_modules())
    group = {m for m in graph if m.startswith(("daphnec.compiler.", "daphnec.runtime.vectorized"))}
    group -= set().union(*KNOWN)
    assert {"daphnec.compiler.host_codegen", "daphnec.compiler.pipeline", "daphnec.compiler.native"} <= group
    assert [c for c in _cycles(graph) if c & group] == []
