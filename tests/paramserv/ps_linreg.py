"""Shared numpy UDFs and data of the paramserv engine tests (linear regression, plain Python functions standing in
for compiled DaphneDSL functions), and the sequential reference loop."""

from __future__ import annotations

import time

import numpy as np

from daphnec.runtime.kernels.lists import create_list
from daphnec.runtime.paramserv.partition import partition, plans


def data(n: int = 600, d: int = 8, seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    w = rng.standard_normal((d, 1))
    return X, X @ w + 0.5 + 0.01 * rng.standard_normal((n, 1))


def model0(d: int = 8) -> tuple:
    return create_list(np.zeros((d, 1)), np.zeros((1, 1)))


def hyper(lr: float = 0.02) -> tuple:
    return create_list(np.array([[lr]]))


def upd(model: tuple, hp: tuple, X: np.ndarray, y: np.ndarray) -> tuple:
    W, b = model
    err = X @ W + b - y
    return create_list(np.asarray(X.T @ err) / X.shape[0], np.sum(err, axis=0, keepdims=True) / X.shape[0])


def agg(model: tuple, hp: tuple, grads: tuple) -> tuple:
    lr = hp[0][0, 0]
    return (create_list(model[0] - lr * grads[0], model[1] - lr * grads[1]),)  # a 1-tuple wrapping the list


def slow_upd(model: tuple, hp: tuple, X: np.ndarray, y: np.ndarray) -> tuple:
    time.sleep(0.0005)
    return upd(model, hp, X, y)


def bad_upd(model: tuple, hp: tuple, X: np.ndarray, y: np.ndarray) -> tuple:
    if X.shape[0] and X[0, 0] > -100:
        raise ValueError("bad_upd exploded")
    return upd(model, hp, X, y)


def mse(model: tuple, X: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean((X @ model[0] + model[1] - y) ** 2))


def sequential_bsp(X: np.ndarray, y: np.ndarray, k: int, epochs: int, batchsize: int, scheme: str, seed: int,
                   lr: float) -> tuple:  # fmt: skip
    """Hand-written BSP: at each step, the k workers' gradients on the same model, summed in worker order, then one
    update; workers without a batch at a step skip it."""
    parts = partition(X, y, k, scheme, seed)
    ps = plans([p.rows for p in parts], batchsize, "BATCH", 1)
    W, b = np.zeros((X.shape[1], 1)), np.zeros((1, 1))
    steps = max(p.batches for p in ps)
    for _ in range(epochs):
        for s in range(steps):
            gs = []
            for part, plan in zip(parts, ps):
                if s < plan.batches:
                    a, e = s * batchsize, min((s + 1) * batchsize, plan.rows)
                    Xb, yb = part.batch(a, e)
                    gs.append(upd((W, b), None, Xb, yb))  # type: ignore[arg-type]
            gW, gb = gs[0][0], gs[0][1]
            for g in gs[1:]:
                gW, gb = gW + g[0], gb + g[1]
            W, b = W - lr * gW, b - lr * gb
    return W, b
