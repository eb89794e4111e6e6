"""`Frame`: a lazy DAPHNE frame (DaphneLib's `daphne.operator.nodes.frame.Frame`).

`registerView(name)` returns the statement DaphneLib returns, and also records the view in the context: a later
`dc.sql(query)` registers every view recorded so far right before its query, in the same program (DaphneLib emits
the view and the query in separate programs, so its SQL never finds the view; docs/python-api.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from daphnec.tools.daphnelib.dag import FRAME, MATRIX, NONE
from daphnec.tools.daphnelib.matrix import Matrix
from daphnec.tools.daphnelib.operation_node import HANDLES, Dimensions, OperationNode


class Frame(Dimensions, OperationNode):
    """A lazy DAPHNE frame; `compute()` returns a pandas DataFrame (numeric columns zero-copy)."""

    __slots__ = ()

    def _frame(self, name: str, *args: object) -> Frame:
        return self._call(FRAME, name, *args)  # type: ignore[no-any-return]

    def rbind(self, other: Frame) -> Frame:
        """The rows of `other` appended (same schema and labels)."""
        return self._frame("rbind", other)

    def cbind(self, other: Frame) -> Frame:
        """The columns of `other` appended."""
        return self._frame("cbind", other)

    def cartesian(self, other: Frame) -> Frame:
        """The cartesian product (left-major)."""
        return self._frame("cartesian", other)

    def innerJoin(self, right_frame: Frame, left_on: str, right_on: str) -> Frame:
        """The equi-join of `left_on` (a column of this frame) with `right_on` (a column of `right_frame`)."""
        return self._frame("innerJoin", right_frame, left_on, right_on)

    def setColLabels(self, labels: Sequence[str]) -> Frame:
        """The same columns under new labels (one per column)."""
        return self._frame("setColLabels", *labels)

    def setColLabelsPrefix(self, prefix: str) -> Frame:
        """Every label prefixed by `prefix.` (DAPHNE's rule for labels that already have a prefix)."""
        return self._frame("setColLabelsPrefix", prefix)

    def order(self, colIdxs: list[Any], ascs: list[bool], returnIndexes: bool) -> Any:
        """Rows sorted by the columns `colIdxs`; with `returnIndexes`, the positions (a Matrix) instead."""
        if len(colIdxs) != len(ascs):
            raise RuntimeError("order: the lists given for parameters colIdxs and ascs must have the same length")
        kind = MATRIX if returnIndexes else FRAME
        return self._call(kind, "order", *colIdxs, *ascs, returnIndexes, vt="index" if returnIndexes else None)

    def toMatrix(self, value_type: str = "f64", *, vt: str | None = None) -> Matrix:
        """`as.matrix<value_type>(F)` (DaphneLib's source names the parameter `vt`; both are accepted)."""
        v = vt or value_type
        return self._call(MATRIX, f"as.matrix<{v}>", vt=v, shape=self._node.shape)  # type: ignore[no-any-return]

    def registerView(self, table_name: str) -> OperationNode:
        """Register this frame as the SQL view `table_name` for later `dc.sql(...)` queries of the context."""
        self._ctx._views[table_name] = self._node
        return self._make(NONE, "sink", "registerView", (table_name, self._node))  # type: ignore[no-any-return]

    def print(self) -> OperationNode:
        """`print(F);` when computed."""
        return self._sink("print")

    def write(self, file: str) -> OperationNode:
        """`writeFrame(F, file);` when computed."""
        return self._sink("writeFrame", file)


HANDLES[FRAME] = Frame
