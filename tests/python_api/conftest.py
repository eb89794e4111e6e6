"""Fixtures of the Python API tests (helpers: api_harness.py)."""

from __future__ import annotations

import pytest


@pytest.fixture
def dc():  # noqa: ANN201 - a DaphneContext
    from daphnec import DaphneContext

    return DaphneContext()
