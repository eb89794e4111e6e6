"""Helpers of the Python API tests: running a hand-written DaphneDSL program in this process, comparing results.

A module of its own, not conftest.py: test modules import it by name, and `conftest` names the suite's root
conftest (tests/conftest.py), which other test folders import."""

from __future__ import annotations

import numpy as np

from daphnec.runtime.config import DaphneConfig
from daphnec.runtime.frame import Frame


def run_dsl(text: str, inputs: list[object] | None = None, config: DaphneConfig | None = None) -> object:
    """Compile and run DaphneDSL `text` in this process (as the CLI would); what it saved with
    `saveDaphneLibResult` (the last value), binding `inputs` to `receiveFromNumpy` slots."""
    from daphnec.tools.driver import compile_source, run_bound

    program = compile_source(text, "<test>", config or DaphneConfig(), {})
    results = run_bound(program, list(inputs or []))
    return results[-1] if results else None


def assert_same(api: object, dsl: object) -> None:
    """The API's result equals the runtime value of the DaphneDSL program: values, value type, labels (exact)."""
    if isinstance(dsl, Frame):
        import pandas as pd

        assert isinstance(api, pd.DataFrame)
        assert list(api.columns) == dsl.labels
        for label, col in zip(dsl.labels, dsl.columns):
            got = api[label].to_numpy()
            if col.dtype == object:
                assert got.tolist() == col.tolist()
            else:
                assert got.dtype == col.dtype and np.array_equal(got, col, equal_nan=True), label
    elif isinstance(dsl, np.ndarray):
        assert isinstance(api, np.ndarray), type(api)
        assert api.dtype == dsl.dtype and api.shape == dsl.shape
        if dsl.dtype == object:
            assert api.tolist() == dsl.tolist()
        else:
            assert np.array_equal(api, dsl, equal_nan=True)
    else:
        assert type(api) is type(dsl), (api, dsl)
        assert api == dsl or (api != api and dsl != dsl)
