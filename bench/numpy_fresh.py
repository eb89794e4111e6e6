"""numpy's formulation of one `algorithms_bench.py` workload, run once in a fresh process: the treatment a daphnec
run gets (its own process: cold OpenBLAS buffers, caches and heap), unlike the bench's numpy rows (best of several
runs in the warm bench process).

    .venv/bin/python bench/algorithms_bench.py --only kmeans --configs plain --keep DIR   # writes the inputs
    for i in 1 2 3 4 5; do .venv/bin/python bench/numpy_fresh.py kmeans DIR; done          # ms, one line per run
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import algorithms_bench as ab  # noqa: E402


def inputs(name: str, folder: Path) -> dict[str, object]:
    """The workload's arrays, read back from the bench's kept folder (the graph as the bench reads it)."""
    from daphnec.runtime.kernels.io import read_matrix

    if name == "components":
        import fast_matrix_market as fmm
        import scipy.sparse as sp

        G = sp.csr_array(fmm.read_scipy(str(folder / "G.mtx")))
        G.data[:] = 1.0
        return {"G": G}
    names = [p.name.removesuffix(".dbdf") for p in folder.glob("*.dbdf") if ".out." not in p.name]
    params = ab.WORKLOADS[name].numpy.__code__.co_varnames[: ab.WORKLOADS[name].numpy.__code__.co_argcount]
    return {k: read_matrix(str(folder / f"{k}.dbdf"), vt="f64") for k in names if k in params}


def main() -> None:
    name, folder = sys.argv[1], Path(sys.argv[2])
    wl = ab.WORKLOADS[name]
    arrays = inputs(name, folder)
    t0 = time.perf_counter()
    wl.numpy(**arrays, **wl.args)
    print(f"{(time.perf_counter() - t0) * 1e3:.1f}")


if __name__ == "__main__":
    main()
