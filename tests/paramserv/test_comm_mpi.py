"""The communication strategies of paramserv over real MPI: `mpiexec -n N` for N = 2..5 (1..4 worker ranks), with
shared memory off so that every byte goes through a TCP socket and the kernel counts what each rank sent
(ps_comm_check.py). Checks, at every rank count:

- the deterministic strategies (BSP, SSP s=0, ALLREDUCE with every algorithm, hierarchical ALLREDUCE, LOCALSGD,
  GOSSIP, sharded and co-located BSP) give exactly the single-process (LOCAL) model;
- the asynchronous ones (ASP, ASP with a value bound, co-located SSP, EASGD) converge;
- a worker that fails ends the call with its error and location, whatever the strategy, and the ranks then serve
  the next call;
- the bytes each rank sent per step, measured, equal the cost formulas within 2 % (the headers)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from daphnec.runtime.paramserv import costs

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).parent
MPIEXEC = Path(sys.executable).parent / "mpiexec"
TCP = {"MPIR_CVAR_CH4_NETMOD": "ofi", "MPIR_CVAR_NOLOCAL": "1", "FI_PROVIDER": "tcp"}


def formulas(k: int, steps: int) -> dict[str, list[float]]:
    """Bytes per step and |w| that each rank (0 = the coordinator, then the worker ranks) sends in the byte runs
    (the cost model, runtime/paramserv/costs.py, for one epoch of `steps` clocks)."""
    out = {"BSP": costs.per_epoch("BSP", k, 1.0, steps), "GOSSIP RING": costs.per_epoch("GOSSIP", k, 1.0, steps)}
    for a in ("ALLGATHER", "RING", "TREE", "MASTER"):
        out[f"ALLREDUCE {a}"] = costs.per_epoch("ALLREDUCE", k, 1.0, steps, a)
    out["ALLREDUCE RING overlap"] = out["ALLREDUCE RING"]  # the ring, bucket by bucket
    out = {name: [b / steps for b in bs] for name, bs in out.items()}
    affine = 8 * (64 * 512 + 512)  # ps_comm_check.py: the affine layer; batches of 16 rows
    out["ALLREDUCE sfb"] = [b / affine for b in costs.sfb_per_step("RING", k, 16, [(64, 512), (1, 512)], 8, (0,))]
    out["ALLREDUCE sfb overlap"] = out["ALLREDUCE sfb"]  # the same buffer, factor by factor
    return out


@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_strategies_over_mpi(n: int) -> None:
    assert MPIEXEC.exists(), f"{MPIEXEC} is missing: the mpich wheel is a dependency of daphnec"
    env = dict(os.environ, PYTHONPATH=f"{ROOT}:{HERE}", **TCP)
    res = subprocess.run([str(MPIEXEC), "-n", str(n), sys.executable, str(HERE / "ps_comm_check.py")],
                         capture_output=True, text=True, cwd=ROOT, timeout=180, env=env)  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert "exception" not in out, out["exception"]["text"]
    k = n - 1
    expected = {"BSP", "SSP s=0", "ALLREDUCE ALLGATHER", "ALLREDUCE RING", "ALLREDUCE TREE", "ALLREDUCE MASTER",
                "ALLREDUCE threads=2", "LOCALSGD RING", "GOSSIP RING", "GOSSIP RANDOM", "BSP colocated",
                "ALLREDUCE sfb, LOCAL", "ALLREDUCE RING overlap",
                "ALLREDUCE TREE overlap"}  # fmt: skip
    if k >= 2:
        expected.add("BSP servers=2")
    errors = {"ALLREDUCE RING", "ALLREDUCE TREE threads=2", "ALLREDUCE RING overlap", "GOSSIP", "EASGD",
              "BSP colocated", "ASP colocated"}  # fmt: skip
    if k >= 2:
        errors.add("BSP servers=2")
    assert set(out["same"]) == expected | {f"after {e}" for e in errors}
    for e in errors:  # the last worker rank failed
        last = k - 1 if "servers" in e else k
        assert out["errors"][e] == f"last worker failed (on distributed worker rank {last})", out["errors"]
    assert all(d == 0.0 for d in out["same"].values()), out["same"]
    assert all(d <= 1e-12 for d in out["close"].values()), out["close"]  # sfb's stacked rebuild
    for name, (start, got, bsp) in out["loss"].items():
        assert got < (0.7 if name.startswith("EASGD") else 0.2) * start, (name, start, got, bsp)
    for name, want in formulas(k, 4).items():
        b = out["bytes"][name]
        wire = {int(r): v / b["model"] / b["steps"] for r, v in b["wire"].items()}
        assert sorted(wire) == list(range(n)), (name, wire)
        for r, w in enumerate(want):
            if w == 0.0:
                assert wire[r] < 0.01, (name, r, wire)
            else:
                assert math.isclose(wire[r], w, rel_tol=0.02), (name, r, wire[r], w)
