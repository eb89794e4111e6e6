"""Helpers of the distributed tests: run the real `daphnec` under the real `mpiexec` (mpich's hydra, shipped with
the `mpich` wheel into the venv's bin/). Nothing is mocked; an MPI test that cannot run fails."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
MPIEXEC = BIN / "mpiexec"
DATA = Path(__file__).parent / "data"


def daphnec(*args: str) -> list[str]:
    return [sys.executable, "-m", "daphnec.tools.daphnec", *args]


def env(**extra: str) -> dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = str(ROOT)
    e.update(extra)
    return e


def run_local(*args: str, timeout: float = 180, **extra_env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(daphnec(*args), capture_output=True, text=True, cwd=ROOT, env=env(**extra_env),
                          timeout=timeout)  # fmt: skip


def mpiexec_cmd(ranks: int, *args: str, mpiexec_flags: tuple[str, ...] = ()) -> list[str]:
    assert MPIEXEC.exists(), f"{MPIEXEC} is missing: the mpich wheel is a dependency of daphnec"
    return [str(MPIEXEC), *mpiexec_flags, "-n", str(ranks), *daphnec(*args)]


def run_mpi(ranks: int, *args: str, mpiexec_flags: tuple[str, ...] = (), timeout: float = 180,
            **extra_env: str) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """`mpiexec -n ranks daphnec args...` from the repository root."""
    cmd = mpiexec_cmd(ranks, *args, mpiexec_flags=mpiexec_flags)
    return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env(**extra_env), timeout=timeout)


def processes_running(marker: str) -> list[int]:
    """Pids of live processes whose command line contains `marker` (a unique script path)."""
    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            cmdline = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = next((ln for ln in (d / "status").read_text().splitlines() if ln.startswith("State:")), "")
        except OSError:
            continue
        if marker in cmdline and "zombie" not in state:
            pids.append(int(d.name))
    return pids


def rank_pid(marker: str, rank: int, timeout: float = 60) -> int:
    """The pid of the MPI process of `rank` running `marker` (hydra puts PMI_RANK into its environment). Under
    mpiexec each rank is a supervising parent and the MPI process, its child (runtime/distributed/launch.py):
    this is the child, the process a failure (the OOM killer, a crash) would hit."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ranked = {}
        for pid in processes_running(marker):
            try:
                environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
                ppid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if f"PMI_RANK={rank}".encode() in environ:
                ranked[pid] = ppid
        children = [pid for pid, ppid in ranked.items() if ppid in ranked]
        if children:
            return children[0]
        time.sleep(0.1)
    raise AssertionError(f"no MPI process of rank {rank} running {marker}")


def parent_pid(pid: int) -> int:
    """The parent of process `pid` (of a rank's MPI process: its supervisor; of a supervisor: hydra's proxy)."""
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


class Job:
    """An `mpiexec` job started in its own session, so a failed test can end everything it started. Its output goes
    to files (no reader threads, no pipe a stray process could keep open), so a test can wait for a line
    (`wait_for`) before it strikes."""

    def __init__(self, cmd: list[str], **extra_env: str):
        self._dir = tempfile.TemporaryDirectory(prefix="daphnec-job-")
        self._out = Path(self._dir.name) / "stdout"
        self._err = Path(self._dir.name) / "stderr"
        with open(self._out, "wb") as out, open(self._err, "wb") as err:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=err, cwd=ROOT, env=env(**extra_env),
                                         start_new_session=True)  # fmt: skip

    def stderr(self) -> str:
        return self._err.read_text(errors="replace")

    def wait_for(self, text: str, timeout: float = 120) -> None:
        """Until `text` appears on stderr (the job's own progress marks)."""
        deadline = time.monotonic() + timeout
        while text not in self.stderr():
            assert self.proc.poll() is None, self.stderr()
            assert time.monotonic() < deadline, f"no {text!r} on stderr within {timeout} s: " + self.stderr()
            time.sleep(0.02)

    def wait(self, timeout: float) -> tuple[int | None, str, str, float]:
        """(exit status or None on timeout, stdout, stderr, seconds waited)."""
        t0 = time.monotonic()
        try:
            self.proc.wait(timeout=timeout)
            code: int | None = self.proc.returncode
        except subprocess.TimeoutExpired:
            self.kill()
            self.proc.wait()
            code = None
        waited = time.monotonic() - t0
        return code, self._out.read_text(errors="replace"), self.stderr(), waited

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
