"""daphnec from Python, notebook style: run it top to bottom, or cell by cell (`# %%` cells, as VS Code, Spyder
and Jupytext read them).

    python examples/python/notebook.py [--plot regression.png]

Cells: shift-and-scale (DaphneLib's introductory example, zero-copy in and out), k-means with a DaphneDSL loop,
and SQL + linear regression on a pandas frame; `--plot` draws the regression's fit with matplotlib (an optional
extra: `pip install daphnec[bench]`).
"""

# %% Setup: the API is daphnec's; DaphneLib's import path works too
#   (`from daphne.context.daphne_context import DaphneContext`).
import argparse

import numpy as np
import pandas as pd

from daphnec import DaphneContext

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--plot", metavar="PNG", help="save a plot of the regression's fit (needs matplotlib)")
args = parser.parse_args()

dc = DaphneContext(vec=True)  # any daphnec command-line option: vec, num_threads, explain, ...
rng = np.random.default_rng(42)

# %% Shift and scale: every column to mean 0 and standard deviation 1.
#   DAPHNE's axis semantics: axis=1 aggregates each *column* (numpy's axis=0).
a = rng.random((100_000, 10))
X = dc.from_numpy(a)  # no copy: DAPHNE reads the array itself
Y = (X - X.mean(axis=1)) / X.stddev(axis=1)
print(repr(Y))
scaled = Y.compute()
print("shift-and-scale matches numpy:", np.allclose(scaled, (a - a.mean(axis=0)) / a.std(axis=0)))

# %% k-means: a DaphneDSL for-loop built from a Python callback (it runs once, on placeholders).
k, n = 3, 300
points = np.vstack([rng.normal(c, 0.4, size=(n, 2)) for c in ((0.0, 0.0), (4.0, 4.0), (8.0, 0.0))])
P = dc.from_numpy(points)
C0 = dc.from_numpy(points[[0, n, 2 * n]])  # one start point from each blob
labels = dc.seq(0, k - 1).t()  # 1 x k: 0, 1, ..., k-1


def step(C, i):  # noqa: ANN001, ANN201 - lazy DAPHNE matrices
    """One Lloyd iteration: assign each point to its nearest centroid, move each centroid to its points' mean."""
    D = (P * P).sum(axis=0).outerAdd((C * C).sum(axis=0).t()) - 2 * (P @ C.t())  # n x k squared distances
    A = D.idxMin(axis=0).outerEq(labels).asType(vtype="f64")  # n x k one-hot assignment
    return (A.t() @ P) / A.sum(axis=1).t()  # k x 2 means


(centroids,) = dc.for_loop([C0], step, 1, 10)
print("k-means centroids:")
print(np.round(centroids.compute(), 2))

# %% SQL + regression on a pandas frame: select rows with SQL, fit price ~ area + rooms by the normal equations.
m = 500
houses = pd.DataFrame(
    {
        "area": rng.uniform(30, 200, m),
        "rooms": rng.integers(1, 7, m).astype(np.float64),
        "city": rng.choice(["north", "south"], m),
    }
)
houses["price"] = 1500 * houses["area"] + 20_000 * houses["rooms"] + rng.normal(0, 10_000, m)
dc.from_pandas(houses).registerView("h")
sold = dc.sql("SELECT h.area, h.rooms, h.price FROM h WHERE h.city = 'north';")
M = sold.toMatrix()  # f64
Xr = dc.fill(1.0, M.nrow(), 1).cbind(M[:, 0:2])  # intercept, area, rooms
yr = M[:, 2]
w = (Xr.t() @ Xr).solve(Xr.t() @ yr)
weights = w.compute().ravel()
print("regression weights (intercept, area, rooms):", np.round(weights, 1))

# %% Plot the fit (optional).
if args.plot:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    north = houses[houses["city"] == "north"]
    fitted = weights[0] + weights[1] * north["area"] + weights[2] * north["rooms"]
    fig, ax = plt.subplots(figsize=(5, 4))
    ax.scatter(north["price"], fitted, s=6)
    ax.set_xlabel("price")
    ax.set_ylabel("fitted price")
    ax.set_title("SQL + regression in DAPHNE")
    fig.savefig(args.plot, dpi=100, bbox_inches="tight")
    print("plot saved to", args.plot)
