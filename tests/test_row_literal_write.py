"""The host code's row store of a matrix literal (`S[i, ] = [a, b](1, 2)` in place, compiler/host/generator.py:
`_row_literal`): the same output as the program without in-place updates (the literal and the copying insert
kernel), including a matrix another variable still holds (copy-on-write) and a row out of range (the kernel's
error)."""

from __future__ import annotations

import pytest
from test_in_place import run as run_with_ir  # tests/test_in_place.py: a program's output and IR, in place or not

from daphnec.dialects.errors import ExecutionError


def run(text: str, in_place: bool) -> str:
    """What the program prints (tests/test_in_place.py's runner, which also returns the IR)."""
    return run_with_ir(text, in_place)[0]


PUSHES = """
S = fill(0.0, 6, 2);
sp = 0;
for (i in 1:4) {
    S[sp, ] = [as.f64(i), 0.5 * i](1, 2);
    sp = sp + 1;
}
print(S);
"""

SHARED = """
S = fill(0.0, 3, 3);
T = S;
for (i in 0:2) {
    S[i, ] = [1.0, as.f64(i), -0.0](1, 3);
}
print(S);
print(T);
"""


@pytest.mark.parametrize("text", [PUSHES, SHARED])
def test_row_store_equals_the_kernels(text):
    assert run(text, in_place=True) == run(text, in_place=False)


def test_row_out_of_range_reports_like_the_kernel():
    text = "S = fill(0.0, 3, 2);\nfor (i in 0:3) { S[i, ] = [1.0, 2.0](1, 2); }\nprint(S);\n"
    messages = []
    for in_place in (True, False):
        with pytest.raises(ExecutionError) as e:
            run(text, in_place)
        messages.append(str(e.value))
    assert messages[0] == messages[1]
    assert "out of bounds" in messages[0]
