"""The MPI fault matrix, run in full: every cell (victim x signal x phase) of `mpiexec -n 3 daphnec --distributed
--vec`, repeated, with the exit status, the seconds from the fault to the end of mpiexec, whether stderr has a
daphnec message naming a rank, and the processes left behind. tests/distributed/test_faults.py runs a few cells of
it in the test suite; this script runs them all (about 24 cells x N runs: minutes).

    .venv/bin/python tests/distributed/fault_matrix.py [--runs N] [--cells worker:KILL:shutdown,...] [--json F]

Victims: `worker` (rank 2's MPI process), `coordinator` (rank 0's), `proxy` (hydra_pmi_proxy, the parent of every
rank on this node), `mpiexec`. Signals: SIGKILL, SIGSTOP (a stopped process is never continued: it hangs).
Phases: `startup` (0 to 1.2 s after the victim rank's process exists: imports, MPI_Init, the coordinator's
compile), `midrun` (1 s into a long loop of pipelines), `shutdown` (0 to 150 ms after the script's last statement
has printed: DETACH, MPI_Finalize, the interpreter's exit). Run i of a cell strikes at the i-th of evenly spread
offsets within its phase.

A run passes when the job ends within 10 s of the fault (mpiexec has exited and no process of the job is left:
ranks, their supervisors, the proxy) with a non-zero status, stderr names a rank in a daphnec message (`rank N`),
and there is no traceback. Two cells differ by nature:
- `mpiexec:KILL`: whoever would print a message is gone; the run passes when no process is left within 10 s.
- `mpiexec:STOP`: stopping mpiexec is what job control does (Ctrl-Z), so it must *not* end the job: the run
  (a short script in every phase) passes when every rank is still there 5 s later and, once mpiexec is
  continued, the job completes normally (status 0, its whole output) with nothing left behind.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from dist_helpers import DATA, Job, mpiexec_cmd, processes_running, rank_pid, run_local  # noqa: E402

FAST = {"DAPHNEC_DIST_DEADLINE": "2", "DAPHNEC_DIST_PING_INTERVAL": "0.2"}
VICTIMS = ("worker", "coordinator", "proxy", "mpiexec")
SIGNALS = {"KILL": signal.SIGKILL, "STOP": signal.SIGSTOP}
PHASES = ("startup", "midrun", "shutdown")
SHUTDOWN_SCRIPT = """# Pipelines for about a second, then the end of the script (the fault matrix strikes at shutdown).
print("started", true, true);
X = rand(2000, 10, 0.0, 1.0, 1.0, 7);
s = 0.0;
for (i in 1:300) {
    s = s + sum(X * 2.0 + as.f64(i));
}
print(s);
print("ending", true, true);
"""
EXPECTED: list[str] = []
"""What SHUTDOWN_SCRIPT prints on stdout (run locally once by `main`)."""
RANK_MESSAGE = re.compile(r"daphnec: .*rank \d|error: distributed worker rank \d")


def _ppid(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _alive(pid: int) -> bool:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return fields[0] not in "ZXx"


def _victim(job: Job, marker: str, victim: str) -> int:
    if victim == "mpiexec":
        rank_pid(marker, 0)  # the job exists
        return job.proc.pid
    if victim == "proxy":
        supervisor = _ppid(rank_pid(marker, 0))
        proxy = _ppid(supervisor) if supervisor else None
        assert proxy is not None, "no proxy"
        return proxy
    return rank_pid(marker, 2 if victim == "worker" else 0)


def run_cell(victim: str, sig_name: str, phase: str, offset: float, work: Path,
             timeout: float = 30) -> dict[str, object]:  # fmt: skip
    """One run of one cell; returns what happened."""
    suspend = (victim, sig_name) == ("mpiexec", "STOP")
    short = phase == "shutdown" or suspend
    name = "shutdown_loop.daph" if short else "long_loop.daph"
    script = work / f"{victim}-{sig_name}-{phase}-{time.monotonic_ns()}-{name}"
    script.write_text(SHUTDOWN_SCRIPT if short else (DATA / name).read_text())
    marker = str(script)
    job = Job(mpiexec_cmd(3, "--distributed", "--vec", marker), **FAST)
    job_pids: set[int] = {job.proc.pid}
    struck = None
    try:
        if phase == "startup":
            pid = _victim(job, marker, victim)
            time.sleep(offset)
        elif phase == "midrun":
            job.wait_for("started")
            pid = _victim(job, marker, victim)
            time.sleep(0.3 if suspend else 1.0)
        else:
            pid = _victim(job, marker, victim)
            proxy = _ppid(_ppid(rank_pid(marker, 0)) or 0)
            job.wait_for("ending")
            time.sleep(offset)
        job_pids |= set(processes_running(marker))
        sup = _ppid(rank_pid(marker, 0, timeout=0.5)) if processes_running(marker) else None
        if sup and _ppid(sup):
            job_pids.add(_ppid(sup))  # type: ignore[arg-type]
        if phase == "shutdown" and proxy:
            job_pids.add(proxy)
        try:
            os.kill(pid, SIGNALS[sig_name])
            struck = time.monotonic()
        except ProcessLookupError:
            pass
        if suspend:
            time.sleep(5)
            os.kill(job.proc.pid, signal.SIGCONT)
            struck = time.monotonic()  # the job is measured from when it may go on
        code, out, err, waited = job.wait(timeout=timeout)
        deadline = time.monotonic() + 10
        while any(_alive(p) for p in job_pids | set(processes_running(marker))) and time.monotonic() < deadline:
            time.sleep(0.05)
        waited = time.monotonic() - struck if struck is not None else waited
        left = sorted(p for p in job_pids | set(processes_running(marker)) if _alive(p))
    finally:
        for p in job_pids | set(processes_running(marker)):
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        job.kill()
    ok_exit = code is not None and code != 0
    named = bool(RANK_MESSAGE.search(err))
    if suspend:
        ok = code == 0 and "ending" in err and out == EXPECTED[0] and not left and waited <= 10
    elif victim == "mpiexec":
        ok = not left and waited <= 10
    else:
        ok = ok_exit and waited <= 10 and named and not left and "Traceback" not in err
    return {
        "victim": victim, "signal": sig_name, "phase": phase, "offset": round(offset, 3),
        "struck": struck is not None, "exit": code, "seconds": round(waited, 2), "left": len(left),
        "named": named, "traceback": "Traceback" in err,
        "ok": (struck is None and code == 0) or ok,
        "stderr": err[-600:],
        "stdout": out[-200:],
    }  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--cells", default="", help="victim:SIGNAL:phase,... (default: all)")
    ap.add_argument("--timeout", type=float, default=30, help="seconds after which a job counts as hung")
    ap.add_argument("--json", default="", help="write every run's record to this file")
    args = ap.parse_args()
    cells = [(v, s, p) for v in VICTIMS for s in SIGNALS for p in PHASES]
    if args.cells:
        cells = [tuple(c.split(":")) for c in args.cells.split(",")]  # type: ignore[misc]
    records = []
    print(f"{'cell':34} {'runs':>4} {'ok':>3} {'exit codes':24} {'max s':>6} {'left':>4} {'named':>5}")
    with tempfile.TemporaryDirectory(prefix="daphnec-faults-") as tmp:
        (Path(tmp) / "expected.daph").write_text(SHUTDOWN_SCRIPT)
        EXPECTED.append(run_local(str(Path(tmp) / "expected.daph")).stdout)
        for victim, sig_name, phase in cells:
            span = 1.2 if phase == "startup" else 0.15
            rows = []
            for i in range(args.runs):
                offset = span * i / max(1, args.runs - 1) if phase != "midrun" else 0.0
                r = run_cell(victim, sig_name, phase, offset, Path(tmp), args.timeout)
                rows.append(r)
                records.append(r)
                if not r["ok"]:
                    print(f"  FAIL {victim}:{sig_name}:{phase} offset {offset:.2f}: exit {r['exit']} "
                          f"{r['seconds']} s left {r['left']} named {r['named']}\n    "
                          + str(r["stderr"]).strip().replace("\n", "\n    "), flush=True)  # fmt: skip
            codes: dict[object, int] = {}
            for r in rows:
                codes[r["exit"]] = codes.get(r["exit"], 0) + 1
            code_text = " ".join(f"{c}x{n}" for c, n in sorted(codes.items(), key=str))
            print(f"{victim + ':' + sig_name + ':' + phase:34} {len(rows):>4} {sum(r['ok'] for r in rows):>3} "
                  f"{code_text:24} {max(r['seconds'] for r in rows):>6.2f} {sum(r['left'] for r in rows):>4} "
                  f"{sum(r['named'] for r in rows):>5}", flush=True)  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=1))
    return 0 if all(r["ok"] for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
