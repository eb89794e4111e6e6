# lit configuration for daphnec's golden tests (`.daph` scripts and `.mlir` IR files), in the style of MLIR's.
#
# Run:  .venv/bin/lit -v tests/lit        (or `bash tests/run_all.sh`, which runs pytest and lit)
#
# Substitutions available in RUN lines:
#   %daphnec     the daphnec CLI of this checkout         %daphne-opt  the IR tool
#   FileCheck    the `filecheck` Python clone (also `filecheck`)
#   %python      the Python interpreter running lit        %root        the repository root
#   %examples    <root>/examples
#   not          lit's internal-shell builtin (`not cmd` succeeds iff cmd fails; `not --crash` too)
# lit runs each RUN line in the directory that holds the test; use %s, %S, %t, %T as usual.

import os
import shutil
import sys

import lit.formats

# `config` is injected by lit.
config.name = "daphnec"  # noqa: F821
config.test_format = lit.formats.ShTest(execute_external=False)  # noqa: F821  (internal shell: `not` builtin)
config.suffixes = [".daph", ".mlir"]  # noqa: F821
config.excludes = ["Output", "Inputs", "lit.cfg.py", "lit.site.cfg.py", "__pycache__"]  # noqa: F821

config.test_source_root = os.path.dirname(os.path.abspath(__file__))  # noqa: F821
# Keep every generated file (%t, lit's timing file) under tests/lit/Output (git-ignored).
config.test_exec_root = os.path.join(config.test_source_root, "Output")  # noqa: F821

repo_root = os.path.dirname(os.path.dirname(config.test_source_root))  # noqa: F821
bindir = os.path.dirname(sys.executable)  # the venv's bin/ when lit runs from .venv/bin/lit
python = sys.executable


def _tool(script: str, module: str) -> str:
    """The console script next to the running interpreter, else `python -m module` from this checkout."""
    exe = os.path.join(bindir, script)
    if os.path.isfile(exe) and os.access(exe, os.X_OK):
        return exe
    found = shutil.which(script)
    if found:
        return found
    return f"{python} -m {module}"


daphnec = _tool("daphnec", "daphnec.tools.daphnec")
daphne_opt = _tool("daphne-opt", "daphnec.tools.daphne_opt")
filecheck = _tool("filecheck", "filecheck")

# Order matters: longer names first, so that `%daphne-opt` is not read as `%daphne` + `-opt`.
config.substitutions.append(("%daphne-opt", daphne_opt))  # noqa: F821
config.substitutions.append(("%daphnec", daphnec))  # noqa: F821
config.substitutions.append(("%python", python))  # noqa: F821
config.substitutions.append(("%examples", os.path.join(repo_root, "examples")))  # noqa: F821
config.substitutions.append(("%root", repo_root))  # noqa: F821
# Tool names as bare words (not inside paths or longer names), like LLVM's ToolSubst.
config.substitutions.append((r"(?<![-\w/.%])FileCheck\b", filecheck))  # noqa: F821
config.substitutions.append((r"(?<![-\w/.%])filecheck\b", filecheck))  # noqa: F821

# Make the venv's tools visible to every RUN line (daphnec itself is installed into the venv).
path = config.environment.get("PATH", os.environ.get("PATH", ""))  # noqa: F821
config.environment["PATH"] = os.pathsep.join([bindir, path]) if path else bindir  # noqa: F821
# Deterministic output: no colour, no hash randomisation surprises in printed sets.
config.environment["PYTHONHASHSEED"] = "0"  # noqa: F821
config.environment["NO_COLOR"] = "1"  # noqa: F821
