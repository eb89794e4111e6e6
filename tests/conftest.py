"""Suite-wide fixtures: the bad-input checker (helpers in bad_input.py) and restoring the engine's settings."""

from __future__ import annotations

from pathlib import Path

import pytest
from bad_input import assert_error, run_bad_script


@pytest.fixture
def check_bad_input(tmp_path: Path):  # noqa: ANN201 - a checker function
    """`check_bad_input(source, code, where, fragment)`: run a bad script and check the error contract."""

    def check(source: str, code: int, where: str | None, fragment: str) -> None:
        assert_error(run_bad_script(tmp_path, source), str(tmp_path / "bad.daph"), code, where, fragment)

    return check


@pytest.fixture(autouse=True)
def _restore_engine_settings():  # noqa: ANN202 - a fixture
    """In-process tests tune the vectorized engine's global knobs (batch sizes, threads, the small-pipeline
    threshold); restore them after every test so that no test sees another's settings."""
    from daphnec.runtime.vectorized.settings import SETTINGS

    saved = dict(vars(SETTINGS))
    yield
    vars(SETTINGS).update(saved)
