"""The installed layout: one `daphnec` namespace whose subpackages are the repository's layer folders."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _setuptools() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]


def _package_name(folder: Path, package_dir: dict[str, str]) -> str:
    """The installed name of a package folder: under the longest `package-dir` mapping that contains it."""
    best = max(
        (name for name, d in package_dir.items() if folder.is_relative_to((REPO / d).resolve())),
        key=lambda name: len((REPO / package_dir[name]).resolve().parts),
    )
    rel = folder.relative_to((REPO / package_dir[best]).resolve())
    return ".".join((best, *rel.parts))


def test_every_package_folder_is_installed() -> None:
    setup = _setuptools()
    found = set()
    for init in REPO.rglob("__init__.py"):
        rel = init.parent.relative_to(REPO)
        if rel.parts and rel.parts[0] in (".venv", ".git", "tests", "bench", "examples", "build"):
            continue
        found.add(_package_name(init.parent.resolve(), setup["package-dir"]))
    assert found == set(setup["packages"])


def test_daphnelib_import_path_is_daphnec() -> None:
    """DaphneLib's `daphne` package (mapped from tools/daphnelib/daphne) serves daphnec's own classes."""
    res = _python(
        "from daphne.context.daphne_context import DaphneContext\n"
        "from daphne.context import Matrix, Frame, Scalar\n"
        "from daphne.operator.nodes.matrix import Matrix as M\n"
        "import daphnec\n"
        "assert daphnec.DaphneContext is DaphneContext and M is Matrix\n"
        "print('ok')",
        REPO.parent,
    )
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr


def test_import_daphnec_stays_cheap() -> None:
    """`import daphnec` loads no numpy (the Python API's names are loaded on first access)."""
    res = _python("import sys, daphnec; print('numpy' in sys.modules, sorted(dir(daphnec))[:1])", REPO.parent)
    assert res.returncode == 0 and res.stdout.startswith("False"), res.stderr


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


def test_every_file_of_the_shipped_dsl_library_is_package_data() -> None:
    """`import "nn/networks/lenet.daph"` resolves from an installation only if the wheel carries the file."""
    patterns = _setuptools()["package-data"]["daphnec.lib"]
    lib = REPO / "lib"
    files = {p.relative_to(lib) for p in lib.rglob("*.daph")}
    assert files and all(any(len(f.parts) == len(Path(p).parts) and f.match(p) for p in patterns) for f in files)
    assert Path("nn/networks/lenet.daph") in files


def test_the_license_file_the_metadata_names_exists() -> None:
    """pyproject.toml says Apache-2.0: the repository ships that license's text (setuptools includes LICENSE)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["license"] == {"text": "Apache-2.0"}
    text = (REPO / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in text
    assert "END OF TERMS AND CONDITIONS" in text


def test_python_dash_m_daphnec_runs_the_command_line() -> None:
    """`python -m daphnec` is the `daphnec` command: same output, same exit codes."""
    hello = REPO / "examples" / "hello.daph"
    via_m = subprocess.run([sys.executable, "-m", "daphnec", str(hello)], capture_output=True, text=True, timeout=300)
    assert via_m.returncode == 0, via_m.stderr
    assert via_m.stdout.startswith("Hello, DAPHNE!\nDenseMatrix(2x3, int64_t)\n1 2 3\n4 5 6\n21")
    version = subprocess.run([sys.executable, "-m", "daphnec", "--version"], capture_output=True, text=True, timeout=60)
    assert version.returncode == 0 and version.stdout.startswith("daphnec ")
    bad = subprocess.run([sys.executable, "-m", "daphnec"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and "Not enough positional command line arguments" in bad.stderr
