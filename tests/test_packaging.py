"""The installed layout: one `daphnec` namespace whose subpackages are the repository's layer folders."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _declared_packages() -> set[str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    return set(project["tool"]["setuptools"]["packages"])


def test_every_package_folder_is_installed() -> None:
    found = {"daphnec"}
    for init in REPO.rglob("__init__.py"):
        rel = init.parent.relative_to(REPO)
        if rel.parts and rel.parts[0] in (".venv", ".git", "tests", "bench", "examples", "build"):
            continue
        if rel.parts:
            found.add(".".join(("daphnec", *rel.parts)))
    assert found == _declared_packages()


def _python(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_layers_import_only_under_daphnec(tmp_path: Path) -> None:
    # Outside the repository, the layer folders are not top-level modules: nothing collides with other packages.
    for name in ("runtime", "compiler", "tools", "frontend", "dialects"):
        res = _python(f"import {name}", tmp_path)
        assert res.returncode != 0 and "ModuleNotFoundError" in res.stderr, name
    res = _python(
        "import daphnec.runtime, daphnec.compiler, daphnec.tools.daphnec; print(daphnec.__version__)", tmp_path
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip()
