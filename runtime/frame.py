"""A minimal DAPHNE frame: typed columns plus labels (extended by later work; keep it small).

Each column is a 1-D numpy array whose dtype gives the column's value type (str columns use dtype=object), so a
column converts to an n x 1 matrix without copying. Default labels are `col_0`, `col_1`, ... like DAPHNE's.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from runtime.errors import DaphneRuntimeError
from runtime.values import vt_of


class Frame:
    """Columns (1-D arrays of equal length) with unique string labels."""

    __slots__ = ("columns", "labels")

    def __init__(self, columns: Sequence[np.ndarray], labels: Sequence[str] | None = None) -> None:
        cols = [self._as_column(c) for c in columns]
        if cols and any(len(c) != len(cols[0]) for c in cols):
            lens = ", ".join(str(len(c)) for c in cols)
            raise DaphneRuntimeError(f"createFrame: all columns must have the same number of rows, got {lens}")
        if labels is None:
            labels = [f"col_{i}" for i in range(len(cols))]
        labels = [str(lbl) for lbl in labels]
        if len(labels) != len(cols):
            raise DaphneRuntimeError(
                f"createFrame: the number of labels ({len(labels)}) must match the number of columns ({len(cols)})")
        if len(set(labels)) != len(labels):
            raise DaphneRuntimeError(f"createFrame: column labels must be unique, got {labels}")
        self.columns: list[np.ndarray] = cols
        self.labels: list[str] = labels

    @staticmethod
    def _as_column(c: np.ndarray) -> np.ndarray:
        """Accept a 1-D array or an n x 1 matrix; store it 1-D."""
        c = np.asarray(c)
        if c.ndim == 2:
            if c.shape[1] != 1:
                raise DaphneRuntimeError(
                    f"createFrame: each column must be a single-column matrix, got {c.shape[0]}x{c.shape[1]}")
            c = c[:, 0]
        elif c.ndim != 1:
            raise DaphneRuntimeError("createFrame: columns must be 1-D or n x 1")
        return np.ascontiguousarray(c)

    @classmethod
    def from_matrix_columns(cls, mats: Sequence[np.ndarray], labels: Sequence[str] | None = None) -> Frame:
        """Build a frame from n x 1 matrices (DaphneDSL `createFrame`)."""
        return cls(mats, labels)

    @property
    def nrow(self) -> int:
        """Number of rows (0 for a frame without columns)."""
        return len(self.columns[0]) if self.columns else 0

    @property
    def ncol(self) -> int:
        """Number of columns."""
        return len(self.columns)

    @property
    def schema(self) -> list[str]:
        """Value type of each column."""
        return [vt_of(c) for c in self.columns]

    def column_index(self, label: str) -> int:
        """Position of the column with this label."""
        try:
            return self.labels.index(label)
        except ValueError:
            raise DaphneRuntimeError(f"frame has no column with label '{label}' (labels: {self.labels})") from None

    def column(self, key: int | str) -> np.ndarray:
        """One column as an n x 1 matrix (a view; run-time values are never mutated in place)."""
        idx = self.column_index(key) if isinstance(key, str) else key
        return self.columns[idx].reshape(-1, 1)

    def __repr__(self) -> str:
        from runtime.printing import format_obj
        return format_obj(self)
