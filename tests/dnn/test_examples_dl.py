"""examples/dl from a fresh checkout: the digits data script, then the LeNet-style network trained plainly (at 1
and 2 threads: the same bits), through paramserv with worker threads and with `mpiexec -n 3` MPI ranks (the same
model as the threads): every run prints 12 epochs of loss and training accuracy and reaches >= 97 % on the
held-back test images."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DL = ROOT / "examples" / "dl"
MPIEXEC = Path(sys.executable).parent / "mpiexec"
EPOCH = re.compile(r"^(\d+) +([\d.]+) +([\d.]+)$")


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("digits")
    res = subprocess.run(
        [sys.executable, str(DL / "prepare_digits.py"), str(folder)], capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 0, res.stderr
    assert f"{folder}/X_train.csv: 1437 x 64" in res.stdout and f"{folder}/y_test.csv: 360 x 1" in res.stdout
    return folder


def daphnec(*args: str, mpi: int = 0) -> str:
    cmd = [sys.executable, "-m", "daphnec.tools.daphnec", *args]
    if mpi:
        cmd = [str(MPIEXEC), "-n", str(mpi), *cmd]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert res.returncode == 0, res.stderr
    return res.stdout


def check_training(out: str) -> None:
    lines = out.splitlines()
    assert lines[0] == "epoch  loss      train accuracy"
    epochs = [EPOCH.match(x) for x in lines[1:-1]]
    assert all(epochs) and [int(m.group(1)) for m in epochs] == list(range(1, 13)), out
    assert float(epochs[-1].group(2)) < float(epochs[0].group(2))
    accuracy = float(lines[-1].removeprefix("test accuracy: "))
    assert accuracy >= 0.97, out


def test_plain_training_reaches_97_percent_with_the_same_bits_at_1_and_2_threads(data: Path) -> None:
    one = daphnec("--num-threads=1", str(DL / "train_digits.daph"), f'data="{data}"')
    check_training(one)
    assert daphnec("--num-threads=2", str(DL / "train_digits.daph"), f'data="{data}"') == one


def test_paramserv_threads_and_mpi_ranks_train_the_same_model(data: Path) -> None:
    script = str(DL / "train_digits_paramserv.daph")
    local = daphnec(script, f'data="{data}"', 'mode="LOCAL"')
    check_training(local)
    assert daphnec("--distributed", script, f'data="{data}"', 'mode="MPI"', mpi=3) == local


def test_prepare_digits_writes_parquet_too(tmp_path: Path) -> None:
    res = subprocess.run(
        [sys.executable, str(DL / "prepare_digits.py"), str(tmp_path), "--format", "parquet", "--test-fraction", "0.5"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    script = tmp_path / "read.daph"
    script.write_text(f'X = readMatrix("{tmp_path}/X_test.parquet");\nprint(nrow(X));\nprint(ncol(X));\n')
    assert daphnec(str(script)) == "899\n64\n"
