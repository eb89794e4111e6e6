"""Kernel hints (`sum::name(X)`, DAPHNE's naming scheme) and kernel extensions (`--kernel-ext catalog.json[:prio]`):
C functions in shared libraries (ctypes) and Python functions, selected by hint or priority; the runnable example in
examples/extensions/ is built with the C compiler and run through the real CLI."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "extensions"


def daphnec(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "daphnec.tools.daphnec", *args], capture_output=True, text=True, timeout=180, cwd=cwd
    )


def script(tmp_path: Path, text: str, name: str = "s.daph") -> str:
    (tmp_path / name).write_text(text)
    return str(tmp_path / name)


# --- kernel hints on built-in kernels ------------------------------------------------------------------------------


def test_hint_naming_the_builtin_kernel_is_honoured_and_explained(tmp_path: Path) -> None:
    s = script(
        tmp_path,
        "X = [1, 2, 3];\nprint(sum::_sumAll__int64_t__DenseMatrix_int64_t(X));\n"
        'print::_print__char__bool__bool("x");\nY = as.f32([1.5, 2.5]);\nprint(Y *::_ewMul__DenseMatrix_float'
        "__DenseMatrix_float__float 2.0f);\n",
    )
    res = daphnec("--explain=phy_op_selection", s)
    assert res.returncode == 0, res.stderr
    assert res.stdout == "6\nx\nDenseMatrix(2x1, float)\n3\n5\n"
    kernel = 'kernel = "_sumAll__int64_t__DenseMatrix_int64_t"'
    assert res.stderr.startswith("IR after selecting physical operators:\n") and kernel in res.stderr
    assert '"daphne.print"' in res.stderr and 'kernel = "_print__char__bool__bool"' in res.stderr


def test_hinted_ops_are_not_folded_nor_fused(tmp_path: Path) -> None:
    s = script(tmp_path, "x = 2 +::_ewAdd__int64_t__int64_t__int64_t 3;\nprint(x);\nX = rand(100, 3, 0.0, 1.0, 1, 1);"
               "\nprint(sum::_sumAll__double__DenseMatrix_double(X + 1.0) > 300.0);\n")  # fmt: skip
    res = daphnec("--vec", "--vec-min-cells=0", "--explain=vectorized", s)
    assert res.returncode == 0 and res.stdout == "5\n1\n", res.stderr
    assert '"daphne.ewAdd"' in res.stderr and 'kernel = "_ewAdd__int64_t__int64_t__int64_t"' in res.stderr
    after = res.stderr.split("daphne.vectorizedPipeline", 1)[-1]
    assert 'kernel = "_sumAll__double__DenseMatrix_double"' in after  # the hinted sum stays outside the pipeline


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("X = [1, 2, 3];\nprint(sum::mySum(X));", "2:7: error: no kernel found for operation `sumAll` with hinted "
         "name `mySum`"),
        ("X = [1, 2, 3];\nprint(sum::_sumAll__double__DenseMatrix_double(X));", "2:7: error: the kernel "
         "`_sumAll__double__DenseMatrix_double` does not match the types of this `sumAll`, whose kernel is "
         "`_sumAll__int64_t__DenseMatrix_int64_t`"),
        ("print::myPrint(1);", "1:1: error: no kernel found for operation `print` with hinted name `myPrint`"),
    ],
)  # fmt: skip
def test_unknown_kernel_names_are_compile_errors(tmp_path: Path, source: str, message: str) -> None:
    s = script(tmp_path, source + "\n")
    res = daphnec(s)
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr == f"{s}:{message}\n"


# --- --kernel-ext: catalogs and priorities -----------------------------------------------------------------------


def test_kernel_ext_priority_and_catalog_errors_are_parse_errors(tmp_path: Path) -> None:
    s = script(tmp_path, "print(1);\n")
    (tmp_path / "empty.json").write_text("[]")
    (tmp_path / "bad.json").write_text("{")
    (tmp_path / "nolib.json").write_text(json.dumps([{
        "opMnemonic": "sumAll", "kernelFuncName": "f", "resTypes": ["double"], "argTypes": ["DenseMatrix<double>"],
        "backend": "CPP", "libPath": "nolib.so"}]))  # fmt: skip
    cat = str(tmp_path / "empty.json")
    cases = {
        f"{cat}:abc": f"error: --kernel-ext: the priority 'abc' of '{cat}:abc' is not an integer",
        f"{cat}:1.5": f"error: --kernel-ext: the priority '1.5' of '{cat}:1.5' is not an integer",
        f"{cat}:2147483648": f"error: --kernel-ext: the priority 2147483648 of '{cat}:2147483648' is out of range",
        str(tmp_path / "none.json"): f"error: kernel catalog '{tmp_path / 'none.json'}': No such file or directory",
        str(tmp_path / "nolib.json"): f"error: kernel catalog '{tmp_path / 'nolib.json'}', kernel 0 (f): library "
        "'nolib.so' not found",
    }
    for arg, message in cases.items():
        res = daphnec(f"--kernel-ext={arg}", s)
        assert (res.returncode, res.stdout, res.stderr) == (1, "", message + "\n"), arg
    res = daphnec("--kernel-ext", str(tmp_path / "bad.json"), s)
    assert res.returncode == 1 and "is not valid JSON" in res.stderr
    for ok in (f"{cat}:-3", f"{cat}:+7", cat):
        res = daphnec("--kernel-ext", ok, s)
        assert (res.returncode, res.stdout, res.stderr) == (0, "1\n", ""), ok


def _python_catalog(tmp_path: Path) -> Path:
    (tmp_path / "k.py").write_text(
        "import numpy as np\n"
        "def twice(X):\n    return 2 * X\n"
        "def total(X):\n    print('total ran')\n    return X.sum()\n"
        "def broken(X):\n    raise ValueError('no luck')\n"
    )
    entries = [
        {"opMnemonic": "ewAbs", "kernelFuncName": "twice", "resTypes": ["DenseMatrix<int64_t>"],
         "argTypes": ["DenseMatrix<int64_t>"], "backend": "Python", "libPath": "k.py"},
        {"opMnemonic": "sumAll", "kernelFuncName": "total", "resTypes": ["int64_t"],
         "argTypes": ["DenseMatrix<int64_t>"], "backend": "Python", "libPath": "k.py"},
        {"opMnemonic": "sumAll", "kernelFuncName": "broken", "resTypes": ["double"],
         "argTypes": ["DenseMatrix<double>"], "backend": "Python", "libPath": "k.py"},
    ]  # fmt: skip
    (tmp_path / "cat.json").write_text(json.dumps(entries))
    return tmp_path / "cat.json"


def test_python_kernels_by_hint_and_by_priority(tmp_path: Path) -> None:
    cat = _python_catalog(tmp_path)
    s = script(tmp_path, "X = [1, -2, 3];\nprint(abs::twice(X));\nprint(sum(X));\nprint(abs(X));\n")
    res = daphnec("--kernel-ext", str(cat), s)
    assert res.returncode == 0, res.stderr
    assert res.stdout == "DenseMatrix(3x1, int64_t)\n2\n-4\n6\n2\nDenseMatrix(3x1, int64_t)\n1\n2\n3\n"
    res = daphnec("--kernel-ext", f"{cat}:1", s)  # priority 1: both extension kernels replace the built-in ones
    assert res.returncode == 0, res.stderr
    assert res.stdout == "DenseMatrix(3x1, int64_t)\n2\n-4\n6\ntotal ran\n2\nDenseMatrix(3x1, int64_t)\n2\n-4\n6\n"
    res = daphnec("--kernel-ext", f"{cat}:1", "--explain=phy_op_selection", s)
    assert 'kernel = "total", kernel_backend = "Python", kernel_lib = "' in res.stderr


def test_extension_kernel_errors(tmp_path: Path) -> None:
    cat = str(_python_catalog(tmp_path))
    res = daphnec("--kernel-ext", cat, script(tmp_path, "X = [1.0, 2.0];\nprint(sum::broken(X));\n"))
    assert (res.returncode, res.stdout) == (3, "")
    assert res.stderr.endswith("s.daph:2:7: error: kernel 'broken': ValueError: no luck\n")
    res = daphnec("--kernel-ext", cat, script(tmp_path, "X = [1, 2];\nprint(sum::broken(X));\n"))
    assert res.returncode == 2
    assert res.stderr.endswith("s.daph:2:7: error: the kernel `broken` takes (DenseMatrix<double>) -> (double), but "
                               "this `sumAll` has (DenseMatrix<int64_t>) -> (int64_t)\n")  # fmt: skip


# --- the runnable example: C kernels built with the C compiler ---------------------------------------------------


@pytest.fixture(scope="module")
def built_example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("make") is None or shutil.which("cc") is None:
        pytest.fail("the extension example needs make and a C compiler")
    folder = tmp_path_factory.mktemp("ext") / "extensions"
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    subprocess.run(["make", "-s", "-C", str(folder)], check=True, timeout=120)
    return folder


HINTS_OUT = """hello from mySumSeq()
55
hello from mySumUnrolled()
55
55
DenseMatrix(2x3, double)
1.5 -1.5 3.5
4.5 5.5 -5.5
hello from myRowMax()
DenseMatrix(2x1, double)
3
5
5
"""


@pytest.mark.parametrize("flags", [(), ("--vec", "--vec-min-cells=0")])
def test_example_kernels_by_hint(built_example: Path, flags: tuple[str, ...]) -> None:
    res = daphnec(*flags, "--kernel-ext", str(built_example / "myKernels.json"), str(built_example / "demoHints.daph"))
    assert (res.returncode, res.stderr) == (0, "")
    assert res.stdout == HINTS_OUT


def test_example_kernels_by_priority(built_example: Path) -> None:
    demo = str(built_example / "demo.daph")
    builtin = daphnec("--kernel-ext", str(built_example / "myKernels.json"), demo)
    assert (builtin.returncode, builtin.stderr) == (0, "")
    assert builtin.stdout == "1\nDenseMatrix(2x3, double)\n1.5 -1.5 3.5\n4.5 5.5 -5.5\nDenseMatrix(2x1, double)\n3\n5\n"
    ext = daphnec("--kernel-ext", str(built_example / "myKernels.json") + ":1", demo)
    assert (ext.returncode, ext.stderr) == (0, "")
    assert ext.stdout == "hello from mySumSeq()\n" + builtin.stdout.replace("DenseMatrix(2x1", "hello from myRowMax()\n"
                                                                           "DenseMatrix(2x1")  # fmt: skip
