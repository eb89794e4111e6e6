"""DAPHNE's frame: typed columns plus unique string labels (`runtime.frame.Frame`, see docs/architecture.md).

Each column is a 1-D numpy array whose dtype gives the column's value type (str columns use dtype=object holding
`str`), so a column converts to an n x 1 matrix without copying. Default labels are `col_0`, `col_1`, ... like
DAPHNE's `Frame::getDefaultLabel`. Frames are values: no kernel mutates one in place, so sub-frames may share
column arrays with their source (as DAPHNE's zero-copy column views do).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.values import CPP_NAMES, vt_of


def default_label(pos: int) -> str:
    """The label DAPHNE gives the column at position `pos` when none is specified."""
    return f"col_{pos}"


def check_unique_labels(labels: Sequence[str], who: str = "frame") -> None:
    """DAPHNE's `Frame::initLabels2Idxs` check (every frame constructor runs it)."""
    seen: set[str] = set()
    for lbl in labels:
        if lbl in seen:
            raise DaphneRuntimeError(
                f"{who}: a frame's column labels must be unique, but '{lbl}' occurs more than once"
            )
        seen.add(lbl)


class Frame:
    """Columns (1-D arrays of equal length) with unique string labels."""

    __slots__ = ("_rows", "columns", "labels")

    def __init__(
        self,
        columns: Sequence[np.ndarray],
        labels: Sequence[str] | None = None,
        who: str = "createFrame",
        rows: int = 0,
    ):
        """`rows`: the row count of a frame without columns (an empty column selection keeps its rows)."""
        cols = [self._as_column(c, who) for c in columns]
        if cols and any(len(c) != len(cols[0]) for c in cols):
            lens = ", ".join(str(len(c)) for c in cols)
            raise DaphneRuntimeError(f"{who}: all columns must have the same number of rows, got {lens}")
        if labels is None:
            labels = [default_label(i) for i in range(len(cols))]
        labels = [str(lbl) for lbl in labels]
        if len(labels) != len(cols):
            raise DaphneRuntimeError(
                f"{who}: the number of labels ({len(labels)}) must match the number of columns ({len(cols)})"
            )
        check_unique_labels(labels, who)
        self.columns: list[np.ndarray] = cols
        self.labels: list[str] = labels
        self._rows = len(cols[0]) if cols else rows

    @staticmethod
    def _as_column(c: np.ndarray, who: str) -> np.ndarray:
        """Accept a 1-D array or an n x 1 matrix; store it 1-D and contiguous."""
        if getattr(c, "format", None) == "csr":  # a CSR column matrix (runtime.values.is_csr)
            c = c.toarray()
        c = np.asarray(c)
        if c.ndim == 2:
            if c.shape[1] != 1:
                raise DaphneRuntimeError(
                    f"{who}: each column must be a single-column matrix, got {c.shape[0]}x{c.shape[1]}"
                )
            c = c[:, 0]
        elif c.ndim != 1:
            raise DaphneRuntimeError(f"{who}: columns must be 1-D or n x 1")
        return np.ascontiguousarray(c)

    @classmethod
    def from_matrix_columns(cls, mats: Sequence[np.ndarray], labels: Sequence[str] | None = None) -> Frame:
        """Build a frame from n x 1 matrices (DaphneDSL `createFrame`)."""
        return cls(mats, labels)

    @property
    def nrow(self) -> int:
        """Number of rows (a frame without columns keeps the row count it was selected from)."""
        return self._rows

    @property
    def ncol(self) -> int:
        """Number of columns."""
        return len(self.columns)

    @property
    def shape(self) -> tuple[int, int]:
        """(rows, columns), like a matrix's shape."""
        return (self.nrow, self.ncol)

    @property
    def schema(self) -> list[str]:
        """Value type of each column."""
        return [vt_of(c) for c in self.columns]

    def column_index(self, label: str) -> int:
        """Position of the column with this label (DAPHNE's `getColumnIdx`)."""
        try:
            return self.labels.index(label)
        except ValueError:
            raise DaphneRuntimeError(
                f"frame has no column with label '{label}' (labels: {', '.join(self.labels)})"
            ) from None

    def column(self, key: int | str) -> np.ndarray:
        """One column as an n x 1 matrix (a view; run-time values are never mutated in place)."""
        idx = self.column_index(key) if isinstance(key, str) else key
        return self.columns[idx].reshape(-1, 1)

    def take_rows(self, rows: slice | np.ndarray) -> Frame:
        """The rows selected by a slice or an int64 position array (copies for position arrays)."""
        n = len(range(self.nrow)[rows]) if isinstance(rows, slice) else len(rows)
        return Frame([c[rows] for c in self.columns], self.labels, who="frame", rows=n)

    def take_columns(self, positions: Sequence[int]) -> Frame:
        """The columns at the given positions, in that order, with their labels (none: the rows remain)."""
        cols = [self.columns[i] for i in positions]
        return Frame(cols, [self.labels[i] for i in positions], who="frame", rows=self.nrow)

    def with_labels(self, labels: Sequence[str]) -> Frame:
        """The same columns (shared, not copied) under new labels."""
        return Frame(self.columns, labels, who="setColLabels")

    def header(self) -> str:
        """`Frame(RxC, [label:cpptype, ...])`: the first line DaphneDSL `print` writes (runtime.printing)."""
        schema = ", ".join(f"{lbl}:{CPP_NAMES[vt_of(c)]}" for lbl, c in zip(self.labels, self.columns, strict=True))
        return f"Frame({self.nrow}x{self.ncol}, [{schema}])"

    def __repr__(self) -> str:
        """The header only: the values are printed by `runtime.printing.format_frame`."""
        return self.header()
