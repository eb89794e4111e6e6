"""The `daphnec` process reuses the memory of freed large matrices (`runtime.memory.reuse_freed_memory`): a new
128 MB matrix after a freed one of the same size is not first-touched page by page again. Observed as the page
faults of a real process, with and without the policy."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

_PROBE = """
import resource, sys
import numpy as np
from daphnec.runtime.memory import reuse_freed_memory
if sys.argv[1] == "reuse":
    assert reuse_freed_memory()
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
a = np.ones(1 << 24)  # 128 MB, then freed
del a
before = faults()
b = np.ones(1 << 24)
print(faults() - before)
"""


def _faults(mode: str) -> int:
    res = subprocess.run([sys.executable, "-c", _PROBE, mode], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return int(res.stdout)


def test_a_freed_large_matrix_is_reused_without_new_page_faults() -> None:
    fresh, reused = _faults("default"), _faults("reuse")
    assert fresh >= 32  # at least one fault per 2 MiB huge page of the new mapping
    assert reused <= 8, (fresh, reused)


_LOOP = """X = rand(4096, 4096, 0.0, 1.0, 1, 1);
for (i in 1:$n) {
    Y = X * 2.0;
    print(as.scalar(Y[1, 1]));
}
"""


def _cli_faults(tmp_path: Path, n: int) -> int:
    script = tmp_path / "loop.daph"
    script.write_text(_LOOP)
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt
    env = {**os.environ, "DAPHNEC_CACHE_DIR": str(tmp_path / "cache")}
    res = subprocess.run([sys.executable, "-m", "daphnec.tools.daphnec", str(script), f"n={n}"],
                         capture_output=True, text=True, timeout=120, env=env)  # fmt: skip
    assert res.returncode == 0 and len(res.stdout.split()) == n, res.stderr
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt - before


def test_the_cli_reuses_a_loops_freed_results(tmp_path: Path) -> None:
    """Each iteration's 128 MB result replaces the last one: 10 more iterations fault (almost) no new pages.
    Both runs are measured with their compiled programs cached (compiling faults a varying number of pages)."""
    for n in (2, 12):
        _cli_faults(tmp_path, n)
    extra = min(_cli_faults(tmp_path, 12) for _ in range(2)) - max(_cli_faults(tmp_path, 2) for _ in range(2))
    assert extra < 10 * 32, extra  # fresh mappings: 64 faults per iteration with 2 MiB pages, 32768 without


_READ_PROBE = """
import resource, sys, threading
import numpy as np
from daphnec.runtime.io.csv import read_matrix
from daphnec.runtime.memory import reuse_freed_memory
if sys.argv[2] == "prefault":
    assert reuse_freed_memory()  # the daphnec CLI's policy, which the pre-fault needs
X = read_matrix(sys.argv[1], 20000, 50, "f64")
for t in threading.enumerate():
    if t.name == "daphne-prefault":
        t.join()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
Y = X - X.mean(axis=0)  # two fresh results of the input's size, as a script computes after reading
Z = Y * 2.0
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before, float(Z.sum()))
"""


def _read_faults(path: Path, mode: str) -> tuple[int, float]:
    res = subprocess.run([sys.executable, "-c", _READ_PROBE, str(path), mode], capture_output=True, text=True,
                         timeout=60)  # fmt: skip
    assert res.returncode == 0, res.stderr
    faults, total = res.stdout.split()
    return int(faults), float(total)


def test_reading_a_large_csv_prefaults_the_next_results(tmp_path: Path) -> None:
    """While a CSV input of 8 MB is parsed, the heap memory for it and two results of its size is faulted in, so
    the results computed after the read (fresh matrices) take no page faults of their own; the values are the
    same with and without."""
    import numpy as np

    path = tmp_path / "X.csv"
    np.savetxt(path, np.random.default_rng(1).random((20000, 50)), fmt="%f", delimiter=",")
    (fresh, want), (pre, got) = _read_faults(path, "default"), _read_faults(path, "prefault")
    assert got == want
    assert fresh >= 2 * 8, fresh  # two fresh 8 MB results: at least one fault per 2 MiB huge page
    assert pre <= 8, (fresh, pre)


def test_a_meta_file_claiming_too_many_rows_prefaults_only_what_the_csv_can_hold(tmp_path: Path) -> None:
    from daphnec.runtime.io.csv import _rows_the_file_can_hold

    path = tmp_path / "short.csv"
    path.write_text("1,2\n3,4\n")  # 8 bytes: at most 2 rows of 2 cells (each at least a character and a separator)
    assert _rows_the_file_can_hold(str(path), 10**9, 2) == 2
    assert _rows_the_file_can_hold(str(path), 1, 2) == 1
    assert _rows_the_file_can_hold(str(tmp_path / "missing.csv"), 7, 2) == 7  # the read reports it


def test_a_meta_file_claiming_too_many_rows_prefaults_only_what_the_parquet_file_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from daphnec.runtime.errors import DaphneRuntimeError
    from daphnec.runtime.io import parquet

    asked: list[tuple[int, int, int]] = []
    monkeypatch.setattr(parquet, "prefault_for_input", lambda *a: asked.append(a))
    path = tmp_path / "short.parquet"
    pq.write_table(pa.table({"col_0": [1.0, 2.0, 3.0]}), path)
    with pytest.raises(DaphneRuntimeError, match="holds 3x1 values"):
        parquet.read_matrix(str(path), 10**9, 1, "f64")
    assert parquet.read_matrix(str(path), 3, 1, "f64").ravel().tolist() == [1.0, 2.0, 3.0]
    assert asked == [(3, 1, 8), (3, 1, 8)]  # the footer's row count, whatever the compression
    (tmp_path / "junk.parquet").write_bytes(b"not parquet")
    with pytest.raises(DaphneRuntimeError, match="cannot read the Parquet file"):
        parquet.read_matrix(str(tmp_path / "junk.parquet"), 7, 1, "f64")
    assert len(asked) == 2
