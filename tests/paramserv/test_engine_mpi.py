"""The paramserv engine in MPI mode with real `mpiexec -n 3` (mpich's hydra from the venv): rank 0 a real
`Coordinator` and the paramserv server, ranks 1-2 real `Worker`s in their serve loop (ps_mpi_check.py). Worker 1
is slowed by the DAPHNEC_PS_SLOW_WORKER hook (2 ms per batch), so SSP really runs ahead."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).parent
MPIEXEC = Path(sys.executable).parent / "mpiexec"


def test_mpi_mode_matches_local_mode() -> None:
    assert MPIEXEC.exists(), f"{MPIEXEC} is missing: the mpich wheel is a dependency of daphnec"
    env = dict(os.environ, PYTHONPATH=f"{ROOT}:{HERE}", DAPHNEC_PS_SLOW_WORKER="1:0.002")
    res = subprocess.run([str(MPIEXEC), "-n", "3", sys.executable, str(HERE / "ps_mpi_check.py")],
                         capture_output=True, text=True, cwd=ROOT, timeout=120, env=env)  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert "exception" not in out, out["exception"]
    assert out["bsp_k_default"] == 2  # k defaults to the worker ranks
    for key in (
        "bsp_vs_local",
        "bsp_vs_sequential",
        "allreduce_vs_bsp",
        "nbatches_vs_local",
        "topk_vs_local",
        "int8_allreduce_vs_local",
        "localsgd_vs_local",
        "csr_vs_dense",
        "after_errors_vs_bsp",
    ):
        assert out[key] < 1e-9, (key, out[key])
    bsp = out["bsp_stats"]
    assert bsp["updates"] == 20 and bsp["pushes"] == 40 and bsp["max_staleness"] == 0
    assert bsp["push_raw"] == bsp["push_sent"] > 40 * 72  # real message sizes: gradients + control messages
    raw, sent = out["topk_bytes"]
    assert sent < raw
    for ut in ("ASP", "SSP", "SBP"):
        start, got, ref = out[f"{ut}_mse"]
        assert got < 0.5 * start, (ut, out[f"{ut}_mse"])
    assert out["ASP_stats"]["updates"] == 60
    assert 0 < out["SSP_stats"]["max_staleness"] <= 2
    assert out["SBP_stats"]["updates"] == 60  # k - b = 1 gradient per step: 60 steps
    assert out["error_BSP"] == "bad_upd exploded (on distributed worker rank 1)"
    assert out["error_ALLREDUCE"] == "bad_upd exploded (on distributed worker rank 1)"
    for ut in ("BSP", "SSP", "ASP", "ALLREDUCE", "LOCALSGD"):  # rank 1 is stopped while it waits
        assert out[f"error_rank2_{ut}"] == "rank 2 failed (on distributed worker rank 2)"
    assert "k=3 workers but only 2 MPI worker ranks" in out["error_k"]
