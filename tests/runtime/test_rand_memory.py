"""`rand` at scale: DAPHNE's bit-exact values (fingerprints of results larger than the kernel's block, taken from
the previous, whole-array implementation), a peak memory of at most 1.5x the result (measured with tracemalloc in
a fresh process) and allocations that cannot fit refused up front in DaphneDSL terms."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.kernels import datagen, datagen_csr
from daphnec.runtime.memory import available_bytes, check_alloc, machine_bytes

ROOT = Path(__file__).resolve().parents[2]

FINGERPRINTS = [  # sha256 (first 16 hex digits) of the result's bytes, from the previous implementation
    ((1100, 1000, 0.0, 1.0, 1.0, 1, "f64"), "b3ec9f3a3a496695"),
    ((1100, 1000, 0.0, 1.0, 0.5, 1, "f64"), "0b0b717aecdf6cd3"),
    ((1000, 700, -2.0, 3.0, 0.3, 5, "f64"), "0cd03693932f4753"),
    ((900, 800, 0.0, 1.0, 0.95, 11, "f32"), "2256a06f0edf6dd4"),
    ((600, 1000, 0, 1, 0.8, 2, "si64"), "1b1d984f9b3bbd10"),
    ((1000, 500, -7, 7, 0.05, 3, "si32"), "c97695972e377512"),
    ((800, 800, 0, 255, 0.6, 9, "ui8"), "1529802022545301"),
]


@pytest.mark.parametrize(("args", "digest"), FINGERPRINTS, ids=[f"{a[6]}-sp{a[4]}" for a, _ in FINGERPRINTS])
def test_values_stay_bit_exact_across_blocks(args: tuple, digest: str) -> None:
    assert datagen.rand(*args).size > datagen.BLOCK  # several blocks of values and of selection draws
    assert hashlib.sha256(datagen.rand(*args).tobytes()).hexdigest()[:16] == digest


_PEAK = """
import json, sys, tracemalloc
from daphnec.runtime.kernels.datagen import rand
rand(10, 10, 0.0, 1.0, float(sys.argv[1]), 1, sys.argv[2])  # imports and the compiled selection loop
tracemalloc.start()
X = rand(3000, 3000, 0.0, 1.0, float(sys.argv[1]), 1, sys.argv[2])
print(json.dumps([tracemalloc.get_traced_memory()[1], X.nbytes]))
"""


@pytest.mark.parametrize(("sparsity", "vt"), [(1.0, "f64"), (0.5, "f64"), (0.3, "f64"), (1.0, "f32"), (0.7, "f32")])
def test_peak_memory_is_at_most_1_5x_the_result(sparsity: float, vt: str) -> None:
    res = subprocess.run([sys.executable, "-c", _PEAK, str(sparsity), vt], capture_output=True, text=True,
                         cwd=ROOT, timeout=300)  # fmt: skip
    assert res.returncode == 0, res.stderr
    peak, result = json.loads(res.stdout)
    assert peak <= 1.5 * result, f"peak {peak / 2**20:.1f} MiB for a {result / 2**20:.1f} MiB result"


def test_allocation_that_cannot_fit_is_refused_in_daphnedsl_terms() -> None:
    rows = int((machine_bytes() // 8) ** 0.5) + 10
    with pytest.raises(DaphneRuntimeError) as e:
        datagen.rand(rows, rows, 0.0, 1.0, 1.0, 1, "f64")
    need = rows * rows * 8 / 2**30
    assert re.fullmatch(rf"rand: a {rows}x{rows} f64 dense matrix needs {need:.1f} GiB, more than the [\d.]+ GiB of "
                        r"memory available", str(e.value))  # fmt: skip
    for call in (lambda: datagen.fill(1.0, rows, rows, "f64"), lambda: datagen.seq(1, rows * rows, 1, "si64"),
                 lambda: datagen.sample(rows * rows, rows * rows, False, 1, "si64"),
                 lambda: datagen_csr.rand(rows, rows, 0.0, 1.0, 0.9, 1, "f64"),
                 lambda: datagen_csr.fill(2.0, rows, rows, "f64")):  # fmt: skip
        with pytest.raises(DaphneRuntimeError, match=r"^\w+: a \d+x\d+ \w+ (dense|CSR) matrix needs [\d.]+ GiB, more"):
            call()
    check_alloc("rand", 1000, 1000, "f64")  # fits: no error
    assert datagen_csr.fill(0.0, rows, rows, "f64").nnz == 0  # an empty CSR matrix needs no values


def test_the_limit_is_the_memory_available_not_the_machine_total() -> None:
    """A request between the free and the total memory is refused (numpy's lazily mapped zeros would pass it and
    the OOM killer would end the run later without a message)."""
    assert 0 < available_bytes() <= machine_bytes()
    rows = int((available_bytes() * 1.05 / 8) ** 0.5) + 1  # just above what is free now
    if rows * rows * 8 >= machine_bytes():
        pytest.skip("this machine has (almost) all of its memory free")
    with pytest.raises(DaphneRuntimeError, match="GiB of memory available"):
        check_alloc("fill", rows, rows, "f64")


def test_cli_reports_the_allocation_with_its_location(tmp_path: Path) -> None:
    script = tmp_path / "big.daph"
    script.write_text("x = 1;\nX = rand(1000000, 1000000, 0.0, 1.0, 1.0, 1);\nprint(sum(X));\n")
    res = subprocess.run([sys.executable, "-m", "daphnec.tools.daphnec", str(script)], capture_output=True,
                         text=True, cwd=ROOT, timeout=120)  # fmt: skip
    assert res.returncode == 3
    assert res.stderr.startswith(f"{script}:2:5: error: rand: a 1000000x1000000 f64 dense matrix needs 7450.6 GiB, ")
    assert "Traceback" not in res.stderr and res.stdout == ""


@given(
    n=st.integers(1, 2000),
    data=st.data(),
)
@settings(max_examples=60, deadline=None)
def test_native_knuth_selection_matches_the_loop_it_compiles(n: int, data: st.DataObject) -> None:
    """The native selection loop (runtime/kernels/datagen_select.py) decides exactly as RandMatrix.h's loop, also
    when a block of draws runs out before `limit` positions are chosen (the state carries over to the next block)."""
    from daphnec.runtime.kernels.datagen_select import select

    limit = data.draw(st.integers(0, n))
    i0 = data.draw(st.integers(0, n - 1))
    chosen0 = data.draw(st.integers(0, limit))
    draws = np.array(data.draw(st.lists(st.integers(0, n - 1), max_size=n - i0)), dtype=np.uint64)
    want, i, chosen = [], i0, chosen0
    for d in draws.tolist():
        if chosen >= limit:
            break
        if d % (n - i) < limit - chosen:
            want.append(i)
            chosen += 1
        i += 1
    positions = np.empty(len(draws), dtype=np.int64)
    got_i, got_chosen, k = select(draws, i0, n, chosen0, limit, positions)
    assert (got_i, got_chosen) == (i, chosen)
    assert positions[:k].tolist() == want
