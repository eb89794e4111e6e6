"""The mutation fuzzer (`tests/fuzz_scripts.py`) with a fixed seed and a short budget: every mutant of the example
and test scripts ends with exit code 0-3, no traceback, no hang, and a failing one says so in DAPHNE's format."""

from __future__ import annotations

from pathlib import Path

from fuzz_scripts import fuzz


def test_mutated_scripts_keep_the_error_contract(tmp_path: Path) -> None:
    figures = fuzz(seed=14, count=16, folder=tmp_path, jobs=2, timeout=120)
    assert figures.tried == 16 and not figures.hangs, figures.summary()
    assert not figures.tracebacks and not figures.bad_codes, figures.summary()
    assert not figures.off_format and not figures.unlocated and not figures.internal, "\n".join(
        [*figures.off_format, *figures.unlocated, *figures.internal]
    )
