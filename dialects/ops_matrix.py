"""Operations of the `daphne` dialect for the matrix builtins (see dialects/ops.py for the conventions)."""

from __future__ import annotations

from xdsl.ir import Operation

OPS: list[type[Operation]] = []
"""The ops this module defines, registered in the dialect by dialects/daphne.py."""
