"""Kernels of `receiveFromNumpy` and `saveDaphneLibResult`: the data exchange of one Python API run.

The Python API (`tools/daphnelib`) binds the input arrays of a run to numbered slots and collects what the program
saves, around one execution of a compiled program (`bound`). A script run by the `daphnec` command line has no
bound inputs, so `receiveFromNumpy` fails there with an execution error.

Inputs are handed over without copying: the bound array *is* the program's matrix. Kernels never write into their
operands (values are immutable, DaphneDSL's left indexing is copy-on-write), so the caller's array is not changed.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np

from daphnec.dialects.value_types import DTYPES, VT_OF_CODE
from daphnec.runtime.errors import DaphneRuntimeError


class _Binding:
    """The inputs and results of the run in progress (one at a time: the API serialises its runs)."""

    __slots__ = ("inputs", "results")

    def __init__(self, inputs: Sequence[object]):
        self.inputs = inputs
        self.results: list[object] = []


_CURRENT: _Binding | None = None


@contextmanager
def bound(inputs: Sequence[object]) -> Iterator[list[object]]:
    """Bind `inputs` to the slots 0, 1, ... for the duration of the block; yields the list of saved results."""
    global _CURRENT
    outer, _CURRENT = _CURRENT, _Binding(inputs)
    try:
        yield _CURRENT.results
    finally:
        _CURRENT = outer


def _vt(code: object) -> str:
    vt = VT_OF_CODE.get(code) if isinstance(code, int) else code  # type: ignore[assignment]
    if not isinstance(vt, str) or vt not in DTYPES:
        raise DaphneRuntimeError(f"receiveFromNumpy: invalid value type code: {code!r}")
    return vt


def receive(slot: int, rows: int, cols: int, code: object) -> object:
    """`receiveFromNumpy(slot, rows, cols, vt)`: the array bound to `slot`, checked against the compiled type."""
    binding = _CURRENT
    if binding is None or not 0 <= slot < len(binding.inputs):
        raise DaphneRuntimeError(
            f"receiveFromNumpy: no data is bound to input slot {slot} (only the Python API binds inputs)"
        )
    x = binding.inputs[slot]
    vt = _vt(code)
    if not isinstance(x, np.ndarray) or x.ndim != 2 or x.dtype != DTYPES[vt] or x.shape != (rows, cols):
        got = f"{type(x).__name__}{getattr(x, 'shape', '')} {getattr(x, 'dtype', '')}".strip()
        raise DaphneRuntimeError(f"receiveFromNumpy: slot {slot} holds {got}, expected a {rows}x{cols} {vt} matrix")
    return x


def save_result(x: object) -> None:
    """`saveDaphneLibResult(x)`: hand `x` to the Python caller (ignored outside the Python API)."""
    if _CURRENT is not None:
        _CURRENT.results.append(x)
