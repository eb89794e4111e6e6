"""Inputs that used to reach Python's limits instead of a result or a located error (issue 14), run through the real
CLI: deep expressions and nesting up to the frontend's limit (`frontend/nesting.py`), a located `nesting too deep`
error beyond it, host code nested deeper than Python allows (outlined by `compiler/host/generator.py`), script
bytes that are not UTF-8, a BOM, a FIFO or a folder as the script, and `daphne-opt`'s command-line errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from bad_input import assert_error, run_bad_script

from daphnec.frontend.nesting import MAX_NESTING_DEPTH


def daphnec(script: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "daphnec.tools.daphnec", "--no-kernel-cache", *args, str(script)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def nested_ifs(n: int) -> str:
    return "x = 1;\n" + "if (x > 0) {\n" * n + "x = x + 1;\n" + "}\n" * n + "print(x);\n"


DEEP = {
    "10000-term sum": ("x = " + "+".join(["1"] * 10_000) + ";\nprint(x);\n", "10000"),
    "1000 nested calls": ("x = " + "abs(" * 1000 + "-1" + ")" * 1000 + ";\nprint(x);\n", "1"),
    "1000 unary minuses": ("x = " + "-" * 1000 + "1;\nprint(x);\n", "1"),
    "1000 nested blocks": ("x = 1;\n" + "{\n" * 1000 + "x = x + 1;\n" + "}\n" * 1000 + "print(x);\n", "2"),
    "300 chained functions": (
        "".join(f"def g{i}(x) {{ return g{i + 1}(x) + 1; }}\n" for i in range(300)) + "def g300(x) { return x; }\n"
        "print(g0(1));\n",
        "301",
    ),
    "100 nested loops": (
        "s = 0;\n"
        + "".join(f"for (i{k} in 1:1) {{\n" for k in range(100))
        + "s = s + 1;\n"  # noqa: ISC003
        + "}\n" * 100
        + "print(s);\n",
        "1",
    ),
    "200 nested ifs": (nested_ifs(200), "2"),
    "40 nested whiles": (
        "s = 0;\n"
        + "".join(f"i{k} = 0;\nwhile (i{k} < 1) {{\ni{k} = i{k} + 1;\n" for k in range(40))
        + "s = s + 1;\n"
        + "}\n" * 40
        + "print(s);\n",
        "1",
    ),
}


@pytest.mark.parametrize("name", list(DEEP))
def test_deep_programs_compile_and_run(tmp_path: Path, name: str) -> None:
    source, expected = DEEP[name]
    (tmp_path / "deep.daph").write_text(source)
    res = daphnec(tmp_path / "deep.daph")
    assert res.returncode == 0 and res.stderr == "" and res.stdout == expected + "\n", res.stderr[-2000:]


def test_nesting_beyond_the_limit_is_a_located_error(tmp_path: Path) -> None:
    n = MAX_NESTING_DEPTH  # the script and the assignment take two levels: the unary at depth limit+1 is refused
    assert_error(
        run_bad_script(tmp_path, "x = " + "-" * n + "1;\nprint(x);\n"),
        str(tmp_path / "bad.daph"),
        1,
        f"1:{4 + n - 1}",
        f"nesting too deep: more than {MAX_NESTING_DEPTH} levels",
    )


@pytest.mark.parametrize(
    ("data", "where", "byte"),
    [
        (b'x = 1;\ny = "a\xff";\n', "2:7", "0xff"),
        (b'x = 1;\r\nprint("\xc3\xa9");  y = "\xc3";\n', "2:19", "0xc3"),  # columns count characters
        (b"\xef\xbb\xbf\xe9 = 1;\n", "1:1", "0xe9"),  # after a BOM
    ],
)
def test_bytes_that_are_not_utf8_are_located(tmp_path: Path, data: bytes, where: str, byte: str) -> None:
    script = tmp_path / "bad.daph"
    script.write_bytes(data)
    assert_error(daphnec(script), str(script), 1, where, f"invalid UTF-8 byte {byte}")


def test_a_utf8_bom_is_accepted(tmp_path: Path) -> None:
    script = tmp_path / "bom.daph"
    script.write_bytes(b'\xef\xbb\xbfprint("\xc3\xa9");\n')
    res = daphnec(script)
    assert res.returncode == 0 and res.stdout == "é\n" and res.stderr == ""


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_a_fifo_or_folder_as_the_script_is_refused(tmp_path: Path, kind: str) -> None:
    script = tmp_path / "s.daph"
    if kind == "fifo":
        os.mkfifo(script)
    else:
        script.mkdir()
    res = daphnec(script)  # the timeout catches a hang on the FIFO
    reason = "it is a FIFO" if kind == "fifo" else "Is a directory"
    assert res.returncode == 1 and res.stderr == f"error: could not open file '{script}' for parsing: {reason}\n"


def daphne_opt(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "daphnec.tools.daphne_opt", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


HELLO = str(Path(__file__).resolve().parents[1] / "examples" / "hello.daph")


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["/nonexistent/x.daph"], 1, "daphne-opt: error: could not open file '/nonexistent/x.daph': No such file"),
        ([HELLO, "-p", "no-such-pass"], 1, "daphne-opt: error: Unrecognized passes: ['no-such-pass'] (see --list-"),
        ([HELLO, "-t", "llvm"], 2, "error: the llvm target translates llvm-dialect IR"),
    ],
)
def test_daphne_opt_reports_bad_input_without_a_traceback(args: list[str], code: int, message: str) -> None:
    res = daphne_opt(*args)
    assert res.returncode == code and res.stderr.startswith(message) and "Traceback" not in res.stderr
    assert res.stderr.count("\n") == 1


def test_daphne_opt_reports_a_fifo_and_bad_bytes(tmp_path: Path) -> None:
    fifo = tmp_path / "f.daph"
    os.mkfifo(fifo)
    res = daphne_opt(str(fifo))
    assert res.returncode == 1 and res.stderr == f"error: could not open file '{fifo}': it is a FIFO\n"
    bad = tmp_path / "b.daph"
    bad.write_bytes(b"x = 1;\n\xff\n")
    res = daphne_opt(str(bad))
    assert res.returncode == 1 and res.stderr == f"{bad}:2:1: error: invalid UTF-8 byte 0xff in the script\n"
