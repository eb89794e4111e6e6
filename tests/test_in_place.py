"""In-place left indexing (`compiler/passes/in_place_insert.py`, `runtime/kernels/indexing.py`): every value a
program can observe is the one the copying semantics gives.

- a property test: random programs over a few 3 x 3 matrices (aliases, views, updates of cells and rows, `for`
  loops, `if`s, a function updating its parameter, prints) print the same with the pass as without it
  (`use_in_place_updates` off, where every insert copies), and the pass marks at least one update of each;
- the kernel writes only into buffers the program owns: views, read-only arrays (the Python API's inputs) and
  CSR matrices are copied on the first write;
- the Python API's input array is never written;
- `--statistics` counts no result bytes for an in-place update.
"""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from daphnec.runtime.config import DaphneConfig
from daphnec.runtime.kernels.indexing import insert_range_in_place, owns_buffer
from daphnec.runtime.values import to_csr
from daphnec.tools.driver import compile_source, run_bound

NAMES = ("A", "B", "C")

PRELUDE = """def bump(X:matrix<f64>, v:f64) -> matrix<f64> {
    for (k in 0:2) {
        X[k, k] = as.scalar(X[k, k]) + v;
    }
    return X;
}
A = reshape(seq(1.0, 9.0, 1.0), 3, 3);
B = A;
C = fill(0.0, 3, 3);
"""

EPILOGUE = """mask = fill(0.0, 3, 1);
for (k in 0:2) {
    mask[k, 0] = as.scalar(A[k, k]);
}
print(mask);
print(A);
print(B);
print(C);
"""
"""Every generated program ends with a loop the pass always updates in place, then prints every matrix."""

names = st.sampled_from(NAMES)
cells = st.integers(min_value=0, max_value=2)
numbers = st.integers(min_value=-9, max_value=9).map(float)


def simple_statement() -> st.SearchStrategy[str]:
    return st.one_of(
        st.builds(lambda v, w: f"{v} = {w};", names, names),
        st.builds(lambda v, w: f"{v} = {w}[0:3, ];", names, names),  # a view of all rows
        st.builds(lambda v, w: f"{v} = t({w});", names, names),
        st.builds(lambda v, w, c: f"{v} = {w} + {c};", names, names, numbers),
        st.builds(lambda v, i, j, c: f"{v}[{i}, {j}] = {c};", names, cells, cells, numbers),
        st.builds(lambda v, i, c: f"{v}[{i}, ] = fill({c}, 1, 3);", names, cells, numbers),
        st.builds(lambda v, w, i: f"{v}[{i}, ] = {w}[2 - {i}, ];", names, names, cells),
        st.builds(lambda v, w, c: f"{v} = bump({w}, {c});", names, names, numbers),
        st.builds(lambda v: f"print({v});", names),
    )


def loop_statement() -> st.SearchStrategy[str]:
    body_update = st.one_of(
        st.builds(lambda v, j, c: f"{v}[k, {j}] = {c} + as.f64(k);", names, cells, numbers),
        st.builds(lambda v, w: f"{v}[k, ] = {w}[k, ] * 2.0;", names, names),
        st.builds(lambda v: f"if (k % 2 == 0) {{ {v}[k, k] = -1.0; }}", names),
    )
    body = st.lists(st.one_of(body_update, simple_statement()), min_size=1, max_size=4)
    return body.map(lambda stmts: "for (k in 0:2) {\n    " + "\n    ".join(stmts) + "\n}")


programs = st.lists(st.one_of(simple_statement(), loop_statement()), min_size=1, max_size=6).map(
    lambda stmts: PRELUDE + "\n".join(stmts) + "\n" + EPILOGUE
)


def run(text: str, in_place: bool) -> tuple[str, str]:
    """What the program prints, and its IR after the passes."""
    config = DaphneConfig()
    config.use_in_place_updates = in_place
    program = compile_source(text, "<in-place-test>", config, {})
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        program.run()
    return out.getvalue(), str(program.module) if program.module is not None else ""


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs)
def test_in_place_updates_print_what_copies_print(text: str) -> None:
    copied, ir_copied = run(text, in_place=False)
    updated, ir_updated = run(text, in_place=True)
    assert updated == copied, text
    assert "daphne.in_place" not in ir_copied
    assert "daphne.in_place" in ir_updated  # the epilogue's mask loop at least


@pytest.mark.parametrize("kind", ["row view", "transposed view", "read-only", "csr"])
def test_the_kernel_copies_a_buffer_the_program_does_not_own(kind: str) -> None:
    base = np.arange(12.0).reshape(4, 3)
    before = base.copy()
    X: object
    if kind == "row view":
        X = base[1:3]
    elif kind == "transposed view":
        X = base.T
    elif kind == "read-only":
        base.flags.writeable = False
        X = base
    else:
        X = to_csr(base)
    assert not owns_buffer(X)
    res = insert_range_in_place(X, 99.0, 0, 1, 0, 1)
    assert res is not X and owns_buffer(res)
    assert res[0, 0] == 99.0
    np.testing.assert_array_equal(base, before)
    again = insert_range_in_place(res, -1.0, 1, 2, 1, 2)  # the copy is the program's: written in place
    assert again is res and res[1, 1] == -1.0 and res[0, 0] == 99.0


def test_the_kernel_writes_an_owned_buffer_in_place() -> None:
    X = np.zeros((3, 2))
    assert insert_range_in_place(X, np.full((1, 2), 5.0), 1, 2, 0, 2) is X
    assert insert_range_in_place(X, 7, 2, 3, 1, 2) is X  # a cast scalar (si64 into f64)
    np.testing.assert_array_equal(X, [[0, 0], [5, 5], [0, 7]])
    S = np.zeros((2, 2), dtype=np.int64)
    assert insert_range_in_place(S, 2.9, 0, 1, 0, 1) is S  # f64 into si64 truncates, as insert does
    assert S[0, 0] == 2


def test_python_api_inputs_are_never_written() -> None:
    text = """X = receiveFromNumpy(0, 3, 2, "f64");
for (i in 0:2) {
    X[i, 0] = -1.0;
}
saveDaphneLibResult(X);
"""
    program = compile_source(text, "<in-place-api>", DaphneConfig(), {})
    assert "daphne.in_place" in str(program.module)
    data = np.arange(6.0).reshape(3, 2)
    out = run_bound(program, [data])[-1]
    np.testing.assert_array_equal(data, np.arange(6.0).reshape(3, 2))
    np.testing.assert_array_equal(np.asarray(out)[:, 0], [-1.0, -1.0, -1.0])


def _mask_statistics(tmp_path, zero: str, one: str) -> subprocess.CompletedProcess[str]:  # noqa: ANN001
    """`--statistics` of a loop setting every third of 100 cells of a 1000 x 1 mask (`zero`/`one`: its literals),
    which prints 100; the table is on stderr."""
    script = tmp_path / "mask.daph"
    script.write_text(f"keep = fill({zero}, 1000, 1);\nfor (c in 0:99) {{\n    keep[c * 3, 0] = {one};\n}}\n"
                      "print(sum(keep));\n")  # fmt: skip
    res = subprocess.run(
        [sys.executable, "-m", "daphnec.tools.daphnec", "--statistics", str(script)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert res.stdout == "100\n"
    return res


def test_statistics_count_no_bytes_for_in_place_updates(tmp_path) -> None:  # noqa: ANN001 - pytest fixture
    """`--statistics` adds the bytes of new results: an in-place update makes none (the first, copying write of
    a matrix the program does not own would). An si64 matrix keeps the kernel call (an f64 written into one cell
    is an inline store, no operator of the table: `test_statistics_omit_inline_cell_stores`)."""
    res = _mask_statistics(tmp_path, "0", "1")
    rows = [line.split() for line in res.stderr.splitlines() if "insert_in_place" in line]
    assert len(rows) == 1
    _, name, _, count, _, nbytes, where = rows[0]
    assert (name, count, nbytes) == ("insert_in_place", "100", "0")
    assert where.endswith("mask.daph:3:5")


def test_statistics_omit_inline_cell_stores(tmp_path) -> None:  # noqa: ANN001 - pytest fixture
    """The in-place store of a scalar f64 into one cell and the scalar ops around it are computed inline by the
    host code (compiler/host/generator.py): no kernel call, so `--statistics` lists none of them."""
    res = _mask_statistics(tmp_path, "0.0", "1.0")
    names = [line.split()[1] for line in res.stderr.splitlines()[2:]]
    assert sorted(names) == ["fill", "print", "sum_all"]
