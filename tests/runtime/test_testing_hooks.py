"""The test hooks (runtime/testing_hooks.py): their formats, and that no other daphnec module reads their variables."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from daphnec.runtime import testing_hooks as hooks

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ("frontend", "dialects", "compiler", "runtime", "tools")


def test_indexed_hooks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(hooks.DIST_SLOW_RANK, "2:4")
    assert hooks.dist_slow_rank() == (2, 4.0)
    monkeypatch.setenv(hooks.DIST_SLOW_RANK, "2:0.5")  # never faster than the others
    assert hooks.dist_slow_rank() == (2, 1.0)
    monkeypatch.setenv(hooks.DIST_SLOW_RANK, "two:4")
    assert hooks.dist_slow_rank() == (-1, 1.0)
    monkeypatch.delenv(hooks.DIST_SLOW_RANK)
    assert hooks.dist_slow_rank() == (-1, 1.0)


def test_seconds_and_file_hooks(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in (hooks.DIST_PING_INTERVAL, hooks.DIST_DEADLINE, hooks.DIST_STATS):
        monkeypatch.delenv(var, raising=False)
    assert (hooks.dist_ping_interval(0.25), hooks.dist_deadline(4.0), hooks.dist_stats_file()) == (0.25, 4.0, None)
    monkeypatch.setenv(hooks.DIST_PING_INTERVAL, "0.2")
    monkeypatch.setenv(hooks.DIST_DEADLINE, "soon")
    monkeypatch.setenv(hooks.DIST_STATS, "stats.json")
    assert (hooks.dist_ping_interval(0.25), hooks.dist_deadline(4.0), hooks.dist_stats_file()) == (
        0.2,
        4.0,
        "stats.json",
    )


def _string_constants(path: Path) -> set[str]:
    """Every string literal of a module except docstrings (documentation may name a hook)."""
    tree = ast.parse(path.read_text(), str(path))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return {
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings
    }


def test_only_the_hooks_module_reads_hook_variables() -> None:
    hook_module = ROOT / "runtime" / "testing_hooks.py"
    readers = {
        str(path.relative_to(ROOT)): sorted(set(hooks.HOOKS) & _string_constants(path))
        for layer in LAYERS
        for path in (ROOT / layer).rglob("*.py")
        if path != hook_module
    }
    assert {p: names for p, names in readers.items() if names} == {}
