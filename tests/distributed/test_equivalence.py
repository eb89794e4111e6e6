"""Distributed runs print exactly what local runs print (DAPHNE's distributed tests compare against the local run).

Real `mpiexec -n 2/3/4 daphnec --distributed ...`, stdout compared byte for byte, stderr empty (workers print
nothing), exit 0. Every `mpiexec` run costs a few seconds of process start-up on two cores, so instead of the full
cross product (34 scripts x 14 schemes x 3 rank counts) the tests pick a representative set:

- scripts: every script test in which `--vec` makes pipelines (found by compiling each one), under STATIC and
  under one dynamic scheme, the dynamic schemes and rank counts rotating over the scripts;
- examples: every example with pipelines under STATIC and one dynamic scheme; connected components, the loop the
  distributed runtime is for, under STATIC and four dynamic schemes (GSS, TSS, FAC2, AUTO).
A manual check also ran all pipeline scripts under STATIC, SS and TSS with 3-4 ranks (docs/distributed.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from dist_helpers import ROOT, run_local, run_mpi

SCRIPTS = ROOT / "tests" / "scripts"
DYNAMIC = ["GSS", "TSS", "FAC2", "SS", "AUTO", "PSS", "TFSS", "MFSC", "FISS", "PLS"]
RANKS = [2, 3, 4]


def _has_pipelines(script: Path) -> bool:
    """Whether `--vec` makes pipelines in a script (only those ship anything to the workers)."""
    import contextlib
    import os

    from daphnec.compiler.pipeline import PassManager
    from daphnec.dialects import make_context
    from daphnec.dialects.ops_pipeline import VectorizedPipelineOp
    from daphnec.runtime.config import DaphneConfig
    from daphnec.tools.driver import parse_to_ir

    sargs = script.with_suffix(".scriptargs")
    args = dict(w.split("=", 1) for w in sargs.read_text().split()) if sargs.exists() else {}
    old = os.getcwd()
    os.chdir(ROOT)
    try:
        with contextlib.suppress(Exception):
            module = parse_to_ir(str(script), args, DaphneConfig())
            PassManager(make_context(), options=frozenset({"vec"})).run_stages(module)
            return any(isinstance(op, VectorizedPipelineOp) for op in module.walk())
    finally:
        os.chdir(old)
    return False


# Every script test with pipelines, under STATIC and under one dynamic scheme (rotating over schemes and ranks).
CHOSEN = [
    str(p.relative_to(SCRIPTS).with_suffix(""))
    for p in sorted(SCRIPTS.rglob("*.daph"))
    if p.with_suffix(".txt").exists() and _has_pipelines(p)
]
CASES = []
for i, name in enumerate(CHOSEN):
    CASES.append((name, "STATIC", 3))
    CASES.append((name, DYNAMIC[i % len(DYNAMIC)], RANKS[i % len(RANKS)]))


def test_every_pipeline_script_is_covered() -> None:
    assert len(CHOSEN) >= 15


def _script_args(script: Path) -> tuple[list[str], list[str]]:
    flags = script.with_suffix(".args")
    sargs = script.with_suffix(".scriptargs")
    return (flags.read_text().split() if flags.exists() else []), (sargs.read_text().split() if sargs.exists() else [])


@pytest.mark.parametrize(("name", "scheme", "ranks"), CASES, ids=[f"{n}-{s}-{r}" for n, s, r in CASES])
def test_script_prints_what_the_local_run_prints(name: str, scheme: str, ranks: int) -> None:
    script = SCRIPTS / f"{name}.daph"
    flags, sargs = _script_args(script)
    res = run_mpi(ranks, "--distributed", "--dist_backend=MPI", "--vec", "--num-threads=2", f"--partitioning={scheme}",
                  *flags, str(script.relative_to(ROOT)), *sargs)  # fmt: skip
    assert res.stderr == ""
    assert res.returncode == 0
    assert res.stdout == script.with_suffix(".txt").read_text()


EXAMPLES = {
    "components.daph": ['f="examples/data/small_graph.mtx"'],
    "kmeans.daph": [],
    "linear_regression.daph": [],
    "pagerank.daph": [],
    "matrix_addition.daph": [],
}
EXAMPLE_CASES = [("components.daph", s, 4) for s in ("STATIC", "GSS", "TSS", "FAC2", "AUTO")]
EXAMPLE_CASES += [(ex, s, r) for ex, (s, r) in zip(list(EXAMPLES)[1:], [("STATIC", 2), ("GSS", 3), ("STATIC", 3),
                                                                        ("PSS", 4)])]  # fmt: skip
EXAMPLE_CASES += [(ex, "TFSS", 3) for ex in ("kmeans.daph", "linear_regression.daph")]
EXAMPLE_CASES += [("pagerank.daph", "MSTATIC", 2), ("matrix_addition.daph", "STATIC", 4)]


@pytest.fixture(scope="module")
def local_outputs() -> dict[str, str]:
    """Each example's local `--vec` output, computed once."""
    outs = {}
    for ex, args in EXAMPLES.items():
        res = run_local("--vec", f"examples/{ex}", *args)
        assert res.returncode == 0, res.stderr
        outs[ex] = res.stdout
    return outs


@pytest.mark.parametrize(("example", "scheme", "ranks"), EXAMPLE_CASES,
                         ids=[f"{e}-{s}-{r}" for e, s, r in EXAMPLE_CASES])  # fmt: skip
def test_example_prints_what_the_local_run_prints(example: str, scheme: str, ranks: int,
                                                  local_outputs: dict[str, str]) -> None:  # fmt: skip
    res = run_mpi(ranks, "--distributed", "--dist_backend=MPI", "--vec", "--num-threads=2", f"--partitioning={scheme}",
                  f"examples/{example}", *EXAMPLES[example])  # fmt: skip
    assert res.stderr == ""
    assert res.returncode == 0
    assert res.stdout == local_outputs[example]
