#!/usr/bin/env bash
# Set up .venv at the repo root (if missing), install daphnec into it with the test and bench extras (the bench
# extra: matplotlib for bench/'s charts), and run every test:
# pytest (tests/) and lit (tests/lit). Fails if either fails; pytest collecting no test (exit 5) is a failure.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PYTHON="${PYTHON:-python3}"
VENV=.venv

if [ ! -x "$VENV/bin/python" ]; then
    if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
        echo "run_all.sh: $PYTHON is older than Python 3.11; set PYTHON=/path/to/python3.11" >&2
        exit 1
    fi
    echo "run_all.sh: creating $VENV"
    "$PYTHON" -m venv "$VENV"
fi

# Re-install only when pyproject.toml changed since the last install (an editable install sees code changes).
stamp="$VENV/.daphnec-installed"
want="$("$VENV/bin/python" -c 'import hashlib,sys; print(hashlib.sha256(open("pyproject.toml","rb").read()).hexdigest())')"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ] || [ ! -x "$VENV/bin/daphnec" ]; then
    echo "run_all.sh: installing daphnec into $VENV"
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check -e '.[test,bench]'
    echo "$want" > "$stamp"
fi

# Byte code of daphnec's own modules, next to them (an editable install compiles nothing, and where
# PYTHONDONTWRITEBYTECODE is set, as on this project's machines, every daphnec process the tests start would
# otherwise compile ~120 modules from source again: ~0.13 s of CPU each). Only changed files are recompiled.
"$VENV/bin/python" -m compileall -q -j 0 __init__.py __main__.py compiler dialects frontend lib runtime tools >/dev/null

status=0

# Both cores: each test file runs whole on one worker (`loadfile`), so a file's module fixtures and the order of its
# tests are as in a serial run. PYTEST_WORKERS=0 runs serially.
# The tests that compare with JAX (XLA compiles in-process) run in a pytest process of their own: XLA once aborted
# its compile inside a worker that had run hundreds of daphnec tests before (llvmlite's LLVM, OpenBLAS and the
# scheduler's threads in the same process), and a crashed xdist worker can leave the whole run waiting.
JAX_TESTS=(tests/dnn/test_dnn_kernels.py tests/dnn/test_nn_library.py)
echo "run_all.sh: pytest"
"$VENV/bin/python" -m pytest -q -n "${PYTEST_WORKERS:-2}" --dist loadfile "${JAX_TESTS[@]/#/--ignore=}" || status=$?
echo "run_all.sh: pytest (JAX peers)"
"$VENV/bin/python" -m pytest -q -p no:xdist "${JAX_TESTS[@]}" || { rc=$?; [ "$status" -ne 0 ] || status=$rc; }

# `-print -quit` rather than `| grep -q .`: under pipefail, grep's early exit makes find die of SIGPIPE, which
# would read as "no lit tests" and skip them.
if [ -n "$(find tests/lit \( -name Output -prune \) -o \( -type f \( -name '*.daph' -o -name '*.mlir' \) -print -quit \))" ]; then
    echo "run_all.sh: lit"
    "$VENV/bin/lit" -sv tests/lit || { rc=$?; [ "$status" -ne 0 ] || status=$rc; }
else
    echo "run_all.sh: no lit tests in tests/lit"
fi

if [ "$status" -ne 0 ]; then
    echo "run_all.sh: FAILED (exit $status)" >&2
fi
exit "$status"
