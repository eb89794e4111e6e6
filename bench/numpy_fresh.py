"""numpy's formulation of one `algorithms_bench.py` workload, run once in a fresh process: the treatment a daphnec
run gets (its own process: cold OpenBLAS buffers, caches and heap), unlike the bench's numpy rows (best of several
runs in the warm bench process).

    .venv/bin/python bench/algorithms_bench.py --only kmeans --configs plain --keep DIR   # writes the inputs
    for i in 1 2 3 4 5; do .venv/bin/python bench/numpy_fresh.py kmeans DIR; done          # ms, one line per run

`--script NAME key=value ...` does the same for a library-style script of `--suite scripts` (`bench/script_steps.py`),
with the arguments its peer process gets (input files and scalars); the CSV inputs are read as the bench reads them
for its in-process numpy row (daphnec's reader), so both rows compute on the same values. The scripts suite runs it
once per round for its `fresh/x` column.
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
        from script_steps import read_graph

        return {"G": read_graph(str(folder / "G.mtx"))}
    names = [p.name.removesuffix(".dbdf") for p in folder.glob("*.dbdf") if ".out." not in p.name]
    params = ab.WORKLOADS[name].numpy.__code__.co_varnames[: ab.WORKLOADS[name].numpy.__code__.co_argcount]
    return {k: read_matrix(str(folder / f"{k}.dbdf"), vt="f64") for k in names if k in params}


def main() -> None:
    if sys.argv[1] == "--script":
        from script_steps import SCRIPTS, script_arguments

        from daphnec.runtime.kernels.io import read_matrix

        # CSV inputs read as the bench reads them for its in-process numpy row (daphnec's reader): the same values
        fn = SCRIPTS[sys.argv[2]].numpy
        kwargs = script_arguments(sys.argv[3:], read_csv=lambda path: read_matrix(path, vt="f64"))
    else:
        wl = ab.WORKLOADS[sys.argv[1]]
        fn, kwargs = wl.numpy, {**inputs(sys.argv[1], Path(sys.argv[2])), **wl.args}
    t0 = time.perf_counter()
    fn(**kwargs)
    print(f"{(time.perf_counter() - t0) * 1e3:.1f}")


if __name__ == "__main__":
    main()
