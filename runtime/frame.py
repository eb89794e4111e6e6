"""DAPHNE's frame: typed columns plus unique string labels (`runtime.frame.Frame`, see docs/architecture.md).

Each column is a 1-D numpy array whose dtype gives the column's value type (str columns use dtype=object holding
`str`), so a column converts to an n x 1 matrix without copying. Relational kernels may leave columns in a lazy
form (runtime/columns.py: dictionary-encoded strings, gathers not done yet); `columns` gives arrays. Default labels
are `col_0`, `col_1`, ... like DAPHNE's `Frame::getDefaultLabel`. Frames are values: no kernel mutates one in
place, so sub-frames may share column arrays with their source (as DAPHNE's zero-copy column views do).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from daphnec.runtime import columns as lazy
from daphnec.runtime.columns import Column, Rows
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

    __slots__ = ("_cols", "_rows", "labels")

    def __init__(
        self,
        columns: Sequence[Column],
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
        self._cols: list[Column] = cols
        self.labels: list[str] = labels
        self._rows = len(cols[0]) if cols else rows

    @staticmethod
    def _as_column(c: Column, who: str) -> Column:
        """Accept a 1-D array, an n x 1 matrix or a lazy column; store arrays 1-D and contiguous."""
        if isinstance(c, (lazy.DictColumn, lazy.GatherColumn)):
            return c
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
    def columns(self) -> list[np.ndarray]:
        """The columns as arrays (lazy columns are computed now, once)."""
        return [self.column_at(i) for i in range(len(self._cols))]

    @property
    def raw_columns(self) -> list[Column]:
        """The columns as they are held, lazy ones included (for kernels that pass them on or know them)."""
        return list(self._cols)

    def column_at(self, i: int) -> np.ndarray:
        """Column `i` as an array (computed now if lazy, and kept)."""
        c = self._cols[i]
        if not isinstance(c, np.ndarray):
            c = self._cols[i] = lazy.materialize(c)
        return c

    @property
    def nrow(self) -> int:
        """Number of rows (a frame without columns keeps the row count it was selected from)."""
        return self._rows

    @property
    def ncol(self) -> int:
        """Number of columns."""
        return len(self._cols)

    @property
    def shape(self) -> tuple[int, int]:
        """(rows, columns), like a matrix's shape."""
        return (self.nrow, self.ncol)

    @property
    def schema(self) -> list[str]:
        """Value type of each column."""
        return [_vt(c) for c in self._cols]

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
        return self.column_at(idx).reshape(-1, 1)

    def take_rows(self, rows: Rows) -> Frame:
        """The rows selected by a slice or an int64 position array (gathered lazily, see runtime/columns.py)."""
        n = len(range(self.nrow)[rows]) if isinstance(rows, slice) else len(rows)
        return Frame(lazy.take_rows(self._cols, rows), self.labels, who="frame", rows=n)

    def take_columns(self, positions: Sequence[int]) -> Frame:
        """The columns at the given positions, in that order, with their labels (none: the rows remain)."""
        cols = [self._cols[i] for i in positions]
        return Frame(cols, [self.labels[i] for i in positions], who="frame", rows=self.nrow)

    def with_labels(self, labels: Sequence[str]) -> Frame:
        """The same columns (shared, not copied) under new labels."""
        return Frame(self._cols, labels, who="setColLabels", rows=self.nrow)

    def header(self) -> str:
        """`Frame(RxC, [label:cpptype, ...])`: the first line DaphneDSL `print` writes (runtime.printing)."""
        schema = ", ".join(f"{lbl}:{CPP_NAMES[vt]}" for lbl, vt in zip(self.labels, self.schema, strict=True))
        return f"Frame({self.nrow}x{self.ncol}, [{schema}])"

    def __repr__(self) -> str:
        """The header only: the values are printed by `runtime.printing.format_frame`."""
        return self.header()


def _vt(c: Column) -> str:
    """The value type of a column, lazy or not, without computing it."""
    return vt_of(c) if isinstance(c, np.ndarray) else vt_of(np.empty(0, dtype=c.dtype))
