"""Raw-buffer shipping of every value type between real MPI processes (dense matrices of every value type, str
matrices, CSR with 32- and 64-bit indices, empty matrices, -nan and -0): point to point, broadcast and row
blocks, cut into many small messages."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from dist_helpers import MPIEXEC, ROOT, env


def test_every_value_type_arrives_bit_for_bit() -> None:
    here = Path(__file__).parent
    res = subprocess.run([str(MPIEXEC), "-n", "3", sys.executable, str(here / "transport_check.py")],
                         capture_output=True, text=True, cwd=ROOT, timeout=120,
                         env=env(PYTHONPATH=f"{ROOT}:{here}"))  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert res.stdout == "ok\n", res.stdout + res.stderr
