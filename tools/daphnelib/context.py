"""`DaphneContext`: where lazy DAPHNE values come from, control flow, and the options of their computation.

    from daphnec import DaphneContext            # or: from daphne.context.daphne_context import DaphneContext
    dc = DaphneContext(vec=True, num_threads=2)   # any daphnec command-line option (options.py)
    X = dc.from_numpy(a)
    ((X - X.mean(axis=1)) / X.stddev(axis=1)).compute()

The methods are DaphneLib's (doc/DaphneLib/APIRef.md) with its signatures; docs/python-api.md lists where they
behave differently (bugs of DaphneLib that are fixed here).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from daphnec.dialects.op_kinds import EW_BINARY
from daphnec.tools.daphnelib import control, session, transfer
from daphnec.tools.daphnelib.dag import FRAME, MATRIX, NONE, SCALAR, Node, joint_vt, rule_vt
from daphnec.tools.daphnelib.frame import Frame
from daphnec.tools.daphnelib.matrix import Matrix
from daphnec.tools.daphnelib.operation_node import OperationNode, operand, wrap
from daphnec.tools.daphnelib.scalar import Scalar

__all__ = ["DaphneContext", "Matrix", "Frame", "Scalar", "OperationNode"]


class DaphneContext:
    """The entry point of the Python API; keyword arguments are daphnec's command-line options."""

    def __init__(self, **options: object):
        self._options = dict(options)
        self._settings = session.make_settings(self._options)  # validates the options now
        self._merged: dict[str, session.Settings] = {}
        self._views: dict[str, Node] = {}
        self._functions: list[control.Function] = []

    def __repr__(self) -> str:
        opts = ", ".join(f"{k}={v!r}" for k, v in self._options.items())
        return f"DaphneContext({opts})"

    # -- reading files ---------------------------------------------------------------------------------------------

    def readMatrix(self, file: str) -> Matrix:
        """A matrix from a file with a `.meta` (CSV, Matrix Market, DAPHNE binary), read when computed."""
        return self._new(MATRIX, "call", "readMatrix", (file,))

    def readFrame(self, file: str) -> Frame:
        """A frame from a CSV file with a `.meta`, read when computed."""
        return self._new(FRAME, "call", "readFrame", (file,))

    # -- data from Python ------------------------------------------------------------------------------------------

    def from_numpy(
        self, mat: np.ndarray, shared_memory: bool = True, verbose: bool = False, return_shape: bool = False
    ):
        """A matrix over a numpy array: zero-copy with `shared_memory` (1-D arrays become n x 1, n-D arrays
        (shape[0], -1)); through a CSV file otherwise. `return_shape` also returns the original shape."""
        t0 = time.perf_counter()
        a, shape = transfer.as_matrix_array(mat)
        vt = transfer.check_dtype(a)
        if shared_memory:
            node = Node(MATRIX, "receive", payload=transfer.read_only_view(a), vt=vt, shape=a.shape)
        else:
            node = Node(MATRIX, "file", payload=a, vt=vt, shape=a.shape)
        if verbose:
            print(f"from_numpy(): total Python-side execution time: {time.perf_counter() - t0:.10f} seconds")
        m = wrap(self, node)
        return (m, shape) if return_shape else m

    def from_python(self, mat: list, shared_memory: bool = True, verbose: bool = False, return_shape: bool = False):
        """A matrix from a (nested) Python list (ints become si64, floats f64), as `from_numpy(np.array(mat))`."""
        a = np.array(mat)
        m = self.from_numpy(a.reshape(len(a), -1) if a.ndim else a, shared_memory, verbose)
        return (m, a.shape) if return_shape else m

    def from_pandas(
        self,
        df: Any,
        shared_memory: bool = True,
        verbose: bool = False,
        keepIndex: bool = False,
        categorical: str = "codes",
    ) -> Frame:
        """A frame over a pandas DataFrame (or Series), column by column (numeric columns zero-copy).

        `keepIndex` adds the index as a first column (the caller's frame is not modified); categorical columns
        become their integer codes (DaphneLib) or, with `categorical="values"`, their values."""
        if categorical not in ("codes", "values"):
            raise ValueError(f"categorical must be 'codes' or 'values', got {categorical!r}")
        t0 = time.perf_counter()
        columns, labels = transfer.pandas_columns(df, keepIndex, categorical)
        if shared_memory:
            cols = [self.from_numpy(c)._node for c in columns]
            f = self._new(FRAME, "call", "createFrame", (*cols, *labels))
        else:
            from daphnec.runtime.frame import Frame as RuntimeFrame

            f = self._new(FRAME, "file", payload=RuntimeFrame(columns, labels))
        if verbose:
            print(f"from_pandas(): total Python-side execution time: {time.perf_counter() - t0:.10f} seconds")
        return f

    def from_tensorflow(
        self, tensor: Any, shared_memory: bool = True, verbose: bool = False, return_shape: bool = False
    ):
        """A matrix over a TensorFlow tensor (via `tensor.numpy()`; n-D tensors become (shape[0], -1))."""
        import tensorflow  # noqa: F401 - DaphneLib raises the ImportError when TensorFlow is missing

        m = self.from_numpy(tensor.numpy(), shared_memory, verbose)
        return (m, tensor.shape) if return_shape else m

    def from_pytorch(self, tensor: Any, shared_memory: bool = True, verbose: bool = False, return_shape: bool = False):
        """A matrix over a PyTorch tensor (zero-copy for CPU tensors; n-D tensors become (shape[0], -1))."""
        import torch  # noqa: F401 - DaphneLib raises the ImportError when PyTorch is missing

        m = self.from_numpy(tensor.detach().cpu().numpy(), shared_memory, verbose)
        return (m, tensor.size()) if return_shape else m

    # -- generating data --------------------------------------------------------------------------------------------

    def fill(self, arg: Any, rows: Any, cols: Any) -> Matrix:
        """A rows x cols matrix of `arg`."""
        shape = (rows, cols) if isinstance(rows, int) and isinstance(cols, int) else (-1, -1)
        return self._new(MATRIX, "call", "fill", (arg, rows, cols), vt=joint_vt(operand(self, arg)), shape=shape)

    def seq(self, start: Any, end: Any, inc: Any = 1) -> Matrix:
        """The column vector start, start+inc, ..., up to end (inclusive)."""
        return self._new(
            MATRIX, "call", "seq", (start, end, inc), vt=joint_vt(*(operand(self, x) for x in (start, end, inc)))
        )

    def rand(
        self,
        rows: Any,
        cols: Any,
        min: Any = None,
        max: Any = None,
        sparsity: Any = 1.0,
        seed: Any = 0,
    ) -> Matrix:
        """A rows x cols matrix of uniform random values in [min, max] (default [0, 1]) with the fraction
        `sparsity` of non-zeros (default 1: dense); `seed=-1` draws a new seed each run."""
        for what, v in (("rows", rows), ("cols", cols)):
            if isinstance(v, int) and v < 0:
                raise ValueError(
                    f"In rand statement, can only assign {what} a long (integer) value >= 0 -- attempted to assign "
                    f"value: {v}"
                )
        if (min is None) != (max is None):
            raise ValueError("rand: give both min and max, or neither (then the values are in [0, 1])")
        if min is None:
            min, max = 0.0, 1.0
        shape = (rows, cols) if isinstance(rows, int) and isinstance(cols, int) else (-1, -1)
        args = (rows, cols, min, max, sparsity, seed)
        return self._new(MATRIX, "call", "rand", args, vt=joint_vt(operand(self, min), operand(self, max)), shape=shape)

    def createFrame(self, columns: list[Any], labels: list[str] | None = None) -> Frame:
        """A frame of column matrices (n x 1 each), with labels or DAPHNE's defaults `col_0`, ..."""
        labels = list(labels or [])
        if labels and len(columns) != len(labels):
            raise RuntimeError(
                "createFrame: specifying labels is optional, but if labels are given, then their number must match "
                "that of the given columns"
            )
        return self._new(FRAME, "call", "createFrame", (*(operand(self, c) for c in columns), *labels))

    def diagMatrix(self, arg: Matrix) -> Matrix:
        """The square matrix with the column `arg` on its diagonal."""
        n = operand(self, arg)
        return self._new(MATRIX, "call", "diagMatrix", (n,), vt=n.vt, shape=(n.shape[0], n.shape[0]))

    def sample(self, range: Any, size: Any, withReplacement: bool, seed: Any = -1) -> Matrix:
        """`size` values from [0, range) as a column, with or without replacement."""
        shape = (size, 1) if isinstance(size, int) else (-1, 1)
        return self._new(
            MATRIX,
            "call",
            "sample",
            (range, size, withReplacement, seed),
            vt=joint_vt(operand(self, range)),
            shape=shape,
        )

    # -- relational -------------------------------------------------------------------------------------------------

    def sql(self, query: str) -> Frame:
        """The result of a SQL query over the frames registered with `Frame.registerView` so far."""
        names = tuple(self._views)
        return self._new(FRAME, "sql", "sql", tuple(self._views[n] for n in names), payload=(query, names))

    # -- logical operators ------------------------------------------------------------------------------------------

    def logical_and(self, left_operand: Any, right_operand: Any) -> Scalar:
        """`a && b`."""
        return self._logical("and", left_operand, right_operand)

    def logical_or(self, left_operand: Any, right_operand: Any) -> Scalar:
        """`a || b`."""
        return self._logical("or", left_operand, right_operand)

    def _logical(self, ew: str, a: Any, b: Any) -> Any:
        x, y = operand(self, a), operand(self, b)
        kind = MATRIX if MATRIX in (getattr(x, "kind", None), getattr(y, "kind", None)) else SCALAR
        record = EW_BINARY[ew]
        return self._new(kind, "binary", record.operator, (x, y), vt=rule_vt(record.vt_rule, x, y))

    # -- control flow -----------------------------------------------------------------------------------------------

    def for_loop(self, input_nodes: Iterable[Any], callback: Callable, start: Any, end: Any, step: Any = None) -> tuple:
        """`for (i in start:end[:step])` (inclusive) over the loop-carried `input_nodes`; `callback(*vars, i)`
        returns their new values. Returns their final values."""
        inits = control.values_of(self, list(input_nodes), "for_loop")
        loop = control.ForLoop(self, inits, callback, (start, end, step))
        return control.outputs(self, loop, inits, "for_loop", inits)

    def while_loop(self, input_nodes: Iterable[Any], cond: Callable, callback: Callable) -> tuple:
        """`while (cond(*vars)) vars = callback(*vars)`; returns the final values."""
        return self._while(input_nodes, cond, callback, do=False)

    def do_while_loop(self, input_nodes: Iterable[Any], cond: Callable, callback: Callable) -> tuple:
        """`do vars = callback(*vars) while (cond(*vars))`; returns the final values."""
        return self._while(input_nodes, cond, callback, do=True)

    def _while(self, input_nodes: Iterable[Any], cond: Callable, callback: Callable, do: bool) -> tuple:
        what = "do_while_loop" if do else "while_loop"
        inits = control.values_of(self, list(input_nodes), what)
        loop = control.WhileLoop(self, inits, cond, callback, do)
        return control.outputs(self, loop, inits, what, inits)

    def cond(
        self, input_nodes: Iterable[Any], pred: Callable, then_fn: Callable, else_fn: Callable | None = None
    ) -> tuple:
        """`if (pred()) vars = then_fn(*vars) else vars = else_fn(*vars)`; returns the values after it."""
        inits = control.values_of(self, list(input_nodes), "cond")
        c = control.Cond(self, inits, pred, then_fn, else_fn)
        return control.outputs(self, c, inits, "cond", inits)

    def function(self, callback: Callable) -> Callable[..., tuple]:
        """A user-defined DaphneDSL function (also a decorator, `@dc.function`): the callback runs once, now, on
        placeholder arguments (hint `Frame`/`Scalar` for those kinds, else Matrix). Calling the result returns a
        tuple of its outputs."""
        fn = control.Function(self, callback)
        self._functions.append(fn)

        def call(*args: Any) -> tuple:
            return control.call_function(self, fn, args)

        call.__name__ = fn.name
        call.__doc__ = getattr(callback, "__doc__", None)
        return call

    # -- internals --------------------------------------------------------------------------------------------------

    def _new(self, kind: str, op: str, name: str = "", args: tuple = (), payload: Any = None, vt=None, shape=(-1, -1)):
        args = tuple(operand(self, a) for a in args)
        return wrap(self, Node(kind, op, name, args, payload, vt, shape))

    def _settings_for(self, options: dict[str, object]) -> session.Settings:
        if not options:
            return self._settings
        key = repr(sorted(options.items()))
        s = self._merged.get(key)
        if s is None:
            s = self._merged[key] = session.make_settings({**self._options, **options})
        return s

    def _compute(
        self,
        node: Node,
        transfer_type: str,
        *,
        verbose: bool,
        progress: bool,
        options: dict[str, object],
        as_tensorflow: bool,
        as_pytorch: bool,
        shape: Any,
        use_index_column: bool,
    ) -> Any:
        t0 = time.perf_counter()
        raw, _ = session.compute(node, self._settings_for(options), transfer_type, verbose, progress)
        result = _to_python(node.kind, raw, as_tensorflow, as_pytorch, shape, use_index_column)
        if verbose:
            print(f"compute(): total Python-side execution time: {time.perf_counter() - t0:.10f} seconds")
        return result


def _to_python(kind: str, raw: Any, as_tensorflow: bool, as_pytorch: bool, shape: Any, use_index_column: bool) -> Any:
    """A runtime result as numpy / pandas / a Python scalar (or a tensor on request)."""
    if kind == NONE:
        return None
    if kind == FRAME:
        return transfer.to_pandas(raw, use_index_column)
    if kind == SCALAR:
        return raw.item() if isinstance(raw, np.generic) else raw
    a = raw.toarray() if hasattr(raw, "toarray") else session.writable(raw)
    if as_tensorflow:
        import tensorflow as tf

        t = tf.convert_to_tensor(a)
        return tf.reshape(t, shape) if shape is not None else t
    if as_pytorch:
        import torch

        t = torch.from_numpy(a)
        return torch.reshape(t, shape) if shape is not None else t
    return a
