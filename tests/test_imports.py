"""Imports as DAPHNE resolves them (doc/DaphneDSL/Imports.md): library imports through the user config's
`daphnedsl_import_paths`, and the errors DAPHNE reports (importing oneself, a file twice, an ambiguous name, an
alias clash, a missing file, an import outside the main scope) plus daphnec's import-cycle error; each through
the real CLI on a file tree of its own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from bad_input import ROOT, assert_error


def _tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "daphnec.tools.daphnec", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "DAPHNEC_NO_PROGRAM_CACHE": "1"},
    )


def test_a_library_imports_every_file_of_its_folder(tmp_path: Path) -> None:
    """`import "algorithms";` names a key of `daphnedsl_import_paths`: each file of its folder is imported under
    `algorithms.<stem>.`; `default_dirs` are searched for file imports (paths relative to the working directory)."""
    _tree(
        tmp_path,
        {
            "algos/kmeans.daph": "def km(x) { return x + 100; }\nk = 7;\n",
            "algos/linreg.daph": "def lr(x) { return x * 2; }\n",
            "shared/util.daph": "def twice(x) { return 2 * x; }\n",
            "cfg.json": json.dumps({"daphnedsl_import_paths": {"default_dirs": ["shared"], "algorithms": ["algos"]}}),
            "s.daph": 'import "algorithms";\nimport "util.daph";\n'
            "print(algorithms.kmeans.km(1));\nprint(algorithms.linreg.lr(4));\nprint(algorithms.kmeans.k);\n"
            "print(util.twice(21));\n",
        },
    )
    res = _run(tmp_path, "--config=cfg.json", "s.daph")
    assert (res.returncode, res.stderr, res.stdout) == (0, "", "101\n8\n7\n42\n")


def test_an_alias_may_take_a_library_name(tmp_path: Path) -> None:
    """Imports.md: `import "sandbox/b.daphne" as "algorithms";` next to the library is allowed (the library's
    names carry the file stem as well)."""
    _tree(
        tmp_path,
        {
            "algos/kmeans.daph": "k = 7;\n",
            "sandbox/b.daph": "x = 1;\n",
            "cfg.json": json.dumps({"daphnedsl_import_paths": {"algorithms": ["algos"]}}),
            "s.daph": 'import "algorithms";\nimport "sandbox/b.daph" as "algorithms";\n'
            "print(algorithms.x);\nprint(algorithms.kmeans.k);\n",
        },
    )
    res = _run(tmp_path, "--config=cfg.json", "s.daph")
    assert (res.returncode, res.stderr, res.stdout) == (0, "", "1\n7\n")


ERRORS: list[tuple[str, dict[str, str], str, str]] = [
    ("self", {"s.daph": 'import "s.daph";\n'}, "1:1", "You cannot import the file you are currently in: "),
    (
        "twice",
        {"s.daph": 'import "m.daph";\nimport "m.daph" as "n";\n', "m.daph": "x = 1;\n"},
        "2:1",
        "You cannot import the same file twice: ",
    ),
    ("missing", {"s.daph": 'import "m.daph";\n'}, "1:1", "The import path doesn't exist: "),
    (
        "alias_clash",
        {"s.daph": 'import "a/m.daph";\nimport "b/m.daph" as "m";\n', "a/m.daph": "x = 1;\n", "b/m.daph": "x = 2;\n"},
        "2:1",
        'Alias "m" results in a name clash with another prefix',
    ),
    (
        "ambiguous",
        {"s.daph": 'import "m.daph";\n', "m.daph": "x = 1;\n", "lib/m.daph": "x = 2;\n"},
        "1:1",
        "Ambiguous import: m.daph, found another file with the same name in default paths of UserConfig: lib/m.daph",
    ),
    ("in_block", {"s.daph": 'if (true) {\n  import "m.daph";\n}\n', "m.daph": "x = 1;\n"}, "2:3", "main scope"),
    (
        "in_function",
        {"s.daph": 'def f() {\n  import "m.daph";\n  return 1;\n}\nprint(f());\n', "m.daph": "x = 1;\n"},
        "2:3",
        "Imports can only be done in the main scope",
    ),
    (
        "cycle",
        {"s.daph": 'import "a.daph";\n', "a.daph": 'import "b.daph";\n', "b.daph": 'import "a.daph";\n'},
        None,
        "import cycle: ",
    ),
    (
        "private_nested_import",
        {"s.daph": 'import "a.daph";\nprint(a.b.x);\n', "a.daph": 'import "b.daph";\n', "b.daph": "x = 1;\n"},
        "2:7",
        "variable 'a.b.x' is used before it is assigned",
    ),
    (
        "module_variable_in_function",
        {"s.daph": 'import "a.daph";\nprint(a.f());\n', "a.daph": "y = 1;\ndef f() { return y; }\n"},
        None,
        "variable 'y' is used before it is assigned",
    ),
]


@pytest.mark.parametrize(("name", "files", "where", "fragment"), ERRORS, ids=[e[0] for e in ERRORS])
def test_import_errors(tmp_path: Path, name: str, files: dict[str, str], where: str | None, fragment: str) -> None:
    _tree(tmp_path, {**files, "cfg.json": json.dumps({"daphnedsl_import_paths": {"default_dirs": ["lib"]}})})
    res = _run(tmp_path, "--config=cfg.json", "s.daph")
    if where is None:  # reported in the imported file
        assert res.returncode == 1 and fragment in res.stderr and "Traceback" not in res.stderr, res.stderr
    else:
        assert_error(res, "s.daph", 1, where, fragment)
