"""Generate a synthetic undirected graph the size of SNAP's amazon0601-like `amazon` graph as a Matrix Market file.

    python -m daphnec.tools.gen_graph out.mtx [--vertices 403394] [--edges 3387388] [--seed 42]

The adjacency matrix is symmetric with no self loops and no repeated edges; `--edges` is the number of non-zeros of
the stored (symmetrised) matrix, i.e. twice the number of undirected edges, so the default graph has 1,693,694
undirected edges. Edges are drawn uniformly at random (an Erdos-Renyi G(n, m) graph) with numpy's PCG64 seeded by
`--seed`, so the output is reproducible. The file is `coordinate pattern symmetric` (the lower triangle, row-major,
1-based), next to a `.meta` (`valueType` f64: a pattern entry reads as 1.0, as in DAPHNE's MMFile) so that
`readMatrix("out.mtx")` knows the shape and value type at compile time. Both files are written atomically.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

AMAZON_VERTICES = 403_394
AMAZON_NONZEROS = 3_387_388


def lower_triangle_edges(n: int, m: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """`m` distinct undirected edges of an n-vertex graph without loops, as (row, col) with row > col, sorted
    row-major."""
    total = n * (n - 1) // 2
    if m > total:
        raise ValueError(f"a simple graph with {n} vertices has at most {total} undirected edges, {m} requested")
    rng = np.random.default_rng(seed)
    if m > total // 2:  # dense: choose among all pairs directly
        keys = np.sort(rng.choice(total, size=m, replace=False))
        row = ((1 + np.sqrt(1 + 8 * keys.astype(np.float64))) / 2).astype(np.int64)  # triangular-number inverse
        row -= (row * (row - 1) // 2 > keys).astype(np.int64)
        row += ((row + 1) * row // 2 <= keys).astype(np.int64)
        return row, keys - row * (row - 1) // 2
    keys = np.empty(0, dtype=np.int64)
    while len(keys) < m:  # rejection sampling of unordered pairs; ~m/total of the draws collide
        batch = int((m - len(keys)) * 1.1) + 64
        a, b = rng.integers(0, n, batch), rng.integers(0, n, batch)
        hi, lo = np.maximum(a, b), np.minimum(a, b)
        keys = np.unique(np.concatenate([keys, (hi * n + lo)[a != b]]))
    if len(keys) > m:
        keys = np.sort(rng.choice(keys, size=m, replace=False))
    return keys // n, keys % n


def write_graph(path: str, n: int, nnz: int, seed: int) -> int:
    """Write the graph and its `.meta`; returns the number of undirected edges."""
    import fast_matrix_market as fmm
    import scipy.sparse as sp

    from daphnec.runtime.io import atomic
    from daphnec.runtime.io.meta import dump_json

    if nnz % 2:
        raise ValueError(f"a symmetric matrix without self loops has an even number of non-zeros, not {nnz}")
    row, col = lower_triangle_edges(n, nnz // 2, seed)
    lower = sp.coo_array((np.ones(len(row)), (row, col)), shape=(n, n))
    comment = f" synthetic graph: {n} vertices, {nnz} stored non-zeros ({len(row)} undirected edges), seed {seed}"
    meta = dump_json({"numRows": n, "numCols": n, "numNonZeros": nnz, "valueType": "f64"})
    atomic.write_files(
        [
            (path, lambda f: fmm.mmwrite(f, lower, comment=comment, field="pattern", symmetry="symmetric")),
            (path + ".meta", lambda f: f.write(meta.encode())),
        ]
    )
    return len(row)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m daphnec.tools.gen_graph", description=__doc__.split("\n\n")[0])
    p.add_argument("out", help="output file (.mtx); a .meta is written next to it")
    p.add_argument("--vertices", type=int, default=AMAZON_VERTICES, help="number of vertices (rows = columns)")
    p.add_argument(
        "--edges",
        type=int,
        default=AMAZON_NONZEROS,
        help="non-zeros of the symmetric adjacency matrix (2 x undirected edges)",
    )
    p.add_argument("--seed", type=int, default=42, help="random seed")
    a = p.parse_args(argv)
    if not a.out.endswith(".mtx"):
        p.error("the output file name must end in .mtx")
    if a.vertices < 1 or a.edges < 0:
        p.error("--vertices must be positive and --edges non-negative")
    t0 = time.perf_counter()
    try:
        edges = write_graph(a.out, a.vertices, a.edges, a.seed)
    except (ValueError, OSError) as e:
        print(f"gen_graph: error: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # DaphneRuntimeError from the atomic writer (unwritable folder, ...)
        print(f"gen_graph: error: {e}", file=sys.stderr)
        return 1
    print(
        f"wrote {a.out}: {a.vertices} vertices, {2 * edges} non-zeros ({edges} undirected edges) "
        f"in {time.perf_counter() - t0:.2f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
