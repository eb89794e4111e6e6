"""Kernels in Python for daphnec's kernel extensions (see README.md): called with numpy matrices and Python
scalars, returning the result in the types the catalog declares."""

import numpy as np


def myRowMax(X: np.ndarray) -> np.ndarray:
    """The maximum of each row of a matrix of f64 values, as an n x 1 matrix (`aggMax(X, 0)`)."""
    print("hello from myRowMax()")
    return X.max(axis=1, keepdims=True)


def mySumPy(X: np.ndarray) -> float:
    """The sum of a matrix of f64 values, adding row by row."""
    return float(np.sum(X.sum(axis=1)))
