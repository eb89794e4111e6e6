"""`Matrix`: a lazy DAPHNE matrix (DaphneLib's `daphne.operator.nodes.matrix.Matrix`).

Methods map to DaphneDSL builtins of the same name (doc/DaphneLib/APIRef.md). Semantics are DAPHNE's where
scripts depend on them: `axis=0` aggregates each row (an n x 1 result) and `axis=1` each column (1 x m), the
opposite of numpy. Where DaphneLib has plain bugs, this class behaves correctly (docs/python-api.md lists them):
reflected operators exist (`2 * X`), `cumSum`/`idxMin`/... return matrices, not scalars, and indexing accepts nodes,
single keys (`X[rows]`, `X[rows, ]`) and rejects slice steps instead of ignoring them.
"""

from __future__ import annotations

from typing import Any

from daphnec.dialects.op_kinds import AGGREGATIONS, CUM_AGGREGATIONS, EW_BINARY, AggKind, EwBinaryKind
from daphnec.tools.daphnelib.dag import FRAME, MATRIX, SCALAR, Node, Span, joint_vt, rule_vt, shape_of
from daphnec.tools.daphnelib.operation_node import HANDLES, Dimensions, OperationNode
from daphnec.tools.daphnelib.scalar import _floor_div, add_operators


class Matrix(Dimensions, OperationNode):
    """A lazy DAPHNE matrix; `compute()` returns a 2-D numpy array (zero-copy)."""

    __slots__ = ()

    # -- operators ---------------------------------------------------------------------------------------------------

    def __matmul__(self, other: object) -> Matrix:
        o = self._operand(other)
        shape = (self._node.shape[0], shape_of(o)[1])
        return self._make(MATRIX, "binary", "@", (self._node, o), joint_vt(self._node, o), shape)

    def __rmatmul__(self, other: object) -> Matrix:
        o = self._operand(other)
        return self._make(MATRIX, "binary", "@", (o, self._node), joint_vt(self._node, o))

    def __neg__(self) -> Matrix:
        return self._make(MATRIX, "unary", "-", (self._node,), self._node.vt, self._node.shape)

    def __abs__(self) -> Matrix:
        return self.abs()  # type: ignore[attr-defined,no-any-return]

    def __floordiv__(self, other: object) -> Matrix:
        return _floor_div(self, other, reflected=False)  # type: ignore[no-any-return]

    def __rfloordiv__(self, other: object) -> Matrix:
        return _floor_div(self, other, reflected=True)  # type: ignore[no-any-return]

    # -- indexing ----------------------------------------------------------------------------------------------------

    def _index_part(self, k: object) -> object:
        if isinstance(k, slice):
            if k.step not in (None, 1):
                raise TypeError("DAPHNE indexing has no step: use a position matrix (e.g. dc.seq(...)) instead")
            if k.start is None and k.stop is None:
                return None
            return Span(self._operand(k.start), self._operand(k.stop))
        if k is None or k is Ellipsis:
            return None
        return self._operand(k)

    def _key(self, key: object) -> tuple[object, object]:
        """`X[r, c]`, `X[r, ]` (rows only, DaphneDSL's form) or `X[r]` (rows only, numpy's)."""
        if not isinstance(key, tuple):
            key = (key, None)
        if len(key) == 1:
            key = (key[0], None)
        if len(key) != 2:
            raise TypeError("you must specify exactly two dimensions")
        return self._index_part(key[0]), self._index_part(key[1])

    def __getitem__(self, key: object) -> Matrix:
        rows, cols = self._key(key)
        return self._make(MATRIX, "index", "", (self._node, rows, cols), self._node.vt)

    def __setitem__(self, key: object, value: object) -> None:
        """Left indexing: `X` now holds a copy of its old value with the region replaced (copy-on-write)."""
        rows, cols = self._key(key)
        old = self._node
        self._node = Node(MATRIX, "insert", "", (old, self._operand(value), rows, cols), vt=old.vt, shape=old.shape)

    # -- aggregation -------------------------------------------------------------------------------------------------

    def _aggregate(self, record: AggKind, axis: int | None) -> Any:
        name = record.builtin
        vt = rule_vt(record.vt_rule, self._node)
        if axis is None:
            return self._call(SCALAR, name, vt=vt)
        if axis not in (0, 1):
            raise ValueError(f"{name}: axis must be 0 (per row), 1 (per column) or None, got {axis!r}")
        rows, cols = self._node.shape
        return self._call(MATRIX, name, axis, vt=vt, shape=(rows, 1) if axis == 0 else (1, cols))

    def idxMin(self, axis: int) -> Matrix:
        """Positions of the minima per row (`axis=0`) or per column (`axis=1`)."""
        return self._idx("idxMin", axis)

    def idxMax(self, axis: int) -> Matrix:
        """Positions of the maxima per row (`axis=0`) or per column (`axis=1`)."""
        return self._idx("idxMax", axis)

    def _idx(self, name: str, axis: int | None) -> Matrix:
        if axis is None:
            raise RuntimeError(f"parameter axis must be provided for {name}")
        rows, cols = self._node.shape
        return self._call(MATRIX, name, axis, vt="index", shape=(rows, 1) if axis == 0 else (1, cols))

    # -- reorganisation ----------------------------------------------------------------------------------------------

    def t(self) -> Matrix:
        rows, cols = self._node.shape
        return self._call(MATRIX, "t", vt=self._node.vt, shape=(cols, rows))  # type: ignore[no-any-return]

    def reshape(self, numRows: Any, numCols: Any) -> Matrix:
        shape = (numRows, numCols) if all(isinstance(d, int) for d in (numRows, numCols)) else (-1, -1)
        return self._call(MATRIX, "reshape", numRows, numCols, vt=self._node.vt, shape=shape)  # type: ignore[no-any-return]

    def cbind(self, other: object) -> Matrix:
        (r, c1), (_, c2) = self._node.shape, shape_of(self._operand(other))
        shape = (r, c1 + c2 if c1 >= 0 and c2 >= 0 else -1)
        return self._call(MATRIX, "cbind", other, vt=joint_vt(self._node, self._operand(other)), shape=shape)  # type: ignore[no-any-return]

    def rbind(self, other: object) -> Matrix:
        (r1, c), (r2, _) = self._node.shape, shape_of(self._operand(other))
        shape = (r1 + r2 if r1 >= 0 and r2 >= 0 else -1, c)
        return self._call(MATRIX, "rbind", other, vt=joint_vt(self._node, self._operand(other)), shape=shape)  # type: ignore[no-any-return]

    def reverse(self) -> Matrix:
        return self._same("reverse")

    def lowerTri(self, diag: bool, values: bool) -> Matrix:
        return self._same("lowerTri", diag, values)

    def upperTri(self, diag: bool, values: bool) -> Matrix:
        return self._same("upperTri", diag, values)

    def replace(self, pattern: object, replacement: object) -> Matrix:
        return self._same("replace", pattern, replacement)

    def order(self, colIdxs: list[Any], ascs: list[bool], returnIndexes: bool) -> Matrix:
        """Rows sorted by the columns `colIdxs` (ascending where `ascs`); their positions if `returnIndexes`."""
        if len(colIdxs) != len(ascs):
            raise RuntimeError("order: the lists given for parameters colIdxs and ascs must have the same length")
        return self._call(
            MATRIX, "order", *colIdxs, *ascs, returnIndexes, vt="index" if returnIndexes else self._node.vt
        )  # type: ignore[no-any-return]

    def diagVector(self) -> Matrix:
        return self._call(MATRIX, "diagVector", vt=self._node.vt, shape=(self._node.shape[0], 1))  # type: ignore[no-any-return]

    def solve(self, other: object) -> Matrix:
        return self._call(MATRIX, "solve", other, vt=self._node.vt, shape=shape_of(self._operand(other)))  # type: ignore[no-any-return]

    def _same(self, name: str, *args: object) -> Matrix:
        return self._call(MATRIX, name, *args, vt=self._node.vt, shape=self._node.shape)  # type: ignore[no-any-return]

    # -- preprocessing -----------------------------------------------------------------------------------------------

    def oneHot(self, info: object) -> Matrix:
        return self._call(MATRIX, "oneHot", info, vt=self._node.vt)  # type: ignore[no-any-return]

    def bin(self, numBins: object, Min: object = None, Max: object = None) -> Matrix:
        if (Min is None) != (Max is None):
            raise RuntimeError("bin: both min and max should be set, or both should be None")
        args = (numBins,) if Min is None else (numBins, Min, Max)
        return self._same("bin", *args)

    # -- conversions and conditionals ---------------------------------------------------------------------------------

    def asType(self, dtype: str | None = None, vtype: str | None = None) -> Any:
        """`as.<dtype>`, `as.<vtype>` or `as.<dtype><<vtype>>` (dtype: matrix, frame or scalar)."""
        return cast(self, dtype, vtype)

    def ifElse(self, thenVal: object, elseVal: object) -> Matrix:
        """Element-wise `self ? thenVal : elseVal`."""
        t, e = self._operand(thenVal), self._operand(elseVal)
        return self._make(MATRIX, "ternary", "", (self._node, t, e), joint_vt(t, e), self._node.shape)

    # -- numpy habits --------------------------------------------------------------------------------------------------

    def _static_type(self) -> tuple[int, int, str | None]:
        """Rows, columns (-1: unknown) and value type: the API's own rules, else the compiler's inference (the
        program is compiled, not run; cached like compute())."""
        (rows, cols), vt = self._node.shape, self._node.vt
        if rows < 0 or cols < 0 or vt is None:
            from daphnec.tools.daphnelib import session

            inferred = session.inferred_matrix_type(self._node, self._ctx._settings_for({}))  # type: ignore[attr-defined]
            if inferred is not None:
                rows, cols = (a if a >= 0 else b for a, b in zip((rows, cols), inferred[:2]))
                vt = vt or inferred[2]
        return rows, cols, vt

    @property
    def shape(self) -> tuple[int | None, int | None]:
        """`(rows, cols)` as far as they are known before running (None for a dimension only the run decides, such
        as the rows of a filter); `compute().shape` is always complete."""
        rows, cols, _ = self._static_type()
        return (rows if rows >= 0 else None, cols if cols >= 0 else None)

    @property
    def ndim(self) -> int:
        """Always 2: DAPHNE's matrices are 2-D (a numpy vector becomes an n x 1 matrix)."""
        return 2

    @property
    def dtype(self) -> Any:
        """The numpy dtype of the result if its value type is known before running, else None."""
        from daphnec.dialects.value_types import DTYPES

        vt = self._static_type()[2]
        return DTYPES.get(vt) if vt is not None else None

    def __len__(self) -> int:
        """The number of rows (numpy's `len`); computed with `nrow()` if only the run knows it."""
        rows = self.shape[0]
        return rows if rows is not None else int(self.nrow().compute())

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        """`np.asarray(X)`, `np.mean(X)`, ...: computes the matrix (numpy's functions then work on the result)."""
        import numpy as np

        a = self.compute()
        return np.asarray(a, dtype=dtype) if dtype is not None else a

    def _repr_html_(self) -> str:
        """A notebook cell's view of the lazy matrix: its type as far as known and the expression (not computed)."""
        import html

        rows, cols = (d if d is not None else "?" for d in self.shape)
        vt = self._static_type()[2] or "?"
        text = html.escape(repr(self).split(" lazy: ", 1)[-1])
        return (
            f"<div><b>DAPHNE Matrix</b> {rows} x {cols} <code>{vt}</code> (lazy: <code>compute()</code> runs it)"
            f"<br><code>{text}</code></div>"
        )

    # -- input/output -------------------------------------------------------------------------------------------------

    def print(self) -> OperationNode:
        """`print(X);` when computed (DAPHNE's format, to stdout)."""
        return self._sink("print")

    def write(self, file: str) -> OperationNode:
        """`writeMatrix(X, file);` when computed."""
        return self._sink("writeMatrix", file)


def cast(self: OperationNode, dtype: str | None, vtype: str | None) -> Any:
    """DaphneLib's `asType`: the cast's data type decides the handle (a value-type cast keeps the receiver's)."""
    if dtype is None and vtype is None:
        raise RuntimeError("you must specify the target data type and/or value type")
    if dtype is not None and dtype not in (MATRIX, FRAME, SCALAR):
        raise RuntimeError(f"invalid data type: '{dtype}', use 'matrix', 'frame', or 'scalar'")
    name = f"as.{dtype or vtype}" if dtype is None or vtype is None else f"as.{dtype}<{vtype}>"
    kind = dtype or self._node.kind
    shape = self._node.shape if kind == MATRIX else (-1, -1)
    return self._call(kind, name, vt=vtype or (self._node.vt if kind != FRAME else None), shape=shape)


_NUMPY_CALL = object()
"""The default of the keywords numpy's functions pass to a method (`np.mean(X)` calls `X.mean(axis=None,
dtype=None, out=None)`): a call that gives them comes from numpy and gets numpy's semantics."""

_NUMPY_NAMES = {"sum": "sum", "mean": "mean", "aggMin": "min", "aggMax": "max", "stddev": "std", "var": "var"}


def _aggregation(record: AggKind) -> Any:
    name = record.builtin

    def method(
        self: Matrix, axis: int | None = None, dtype: Any = _NUMPY_CALL, out: Any = _NUMPY_CALL, **kw: Any
    ) -> Any:
        if dtype is not _NUMPY_CALL or out is not _NUMPY_CALL or kw:  # called by numpy (np.mean(X), ...)
            import numpy as np

            fn = getattr(np, _NUMPY_NAMES.get(name, name))
            numpy_kw = {k: v for k, v in (("dtype", dtype), ("out", out)) if v is not _NUMPY_CALL}
            return fn(np.asarray(self), axis=axis, **numpy_kw, **kw)
        return self._aggregate(record, axis)

    method.__name__ = name
    method.__doc__ = f"`{name}` of all cells (a Scalar), of each row (`axis=0`) or of each column (`axis=1`)."
    return method


def _outer(record: EwBinaryKind) -> Any:
    name = record.outer_mnemonic

    def method(self: Matrix, other: object) -> Matrix:
        o = self._operand(other)
        shape = (self._node.shape[0], shape_of(o)[1])
        vt = rule_vt(record.vt_rule, self._node, o)
        return self._call(MATRIX, name, other, vt=vt, shape=shape)  # type: ignore[no-any-return]

    method.__name__ = name
    method.__doc__ = f"`{name}(self, other)`: the outer operation of a column and a row vector."
    return method


def _cumulative(name: str) -> Any:
    def method(self: Matrix) -> Matrix:
        return self._same(name)

    method.__name__ = name
    method.__doc__ = f"`{name}`: the cumulative aggregation down each column."
    return method


add_operators(Matrix)
for _agg in AGGREGATIONS.values():  # sum, aggMin, ... (dialects/op_kinds.py)
    setattr(Matrix, _agg.builtin, _aggregation(_agg))
for _ew in EW_BINARY.values():  # outerAdd, ...
    if _ew.outer:
        setattr(Matrix, _ew.outer_mnemonic, _outer(_ew))
for _cum in CUM_AGGREGATIONS.values():  # cumSum, ...
    setattr(Matrix, _cum.builtin, _cumulative(_cum.builtin))
HANDLES[MATRIX] = Matrix
