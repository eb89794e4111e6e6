"""Nothing lost on interruption, with real processes and real signals: a writer alternating two matrices of
different shapes into one file is killed (SIGTERM, SIGHUP, SIGKILL) at several points. Afterwards the file and its
`.meta` are one of the two complete pairs (or, after a SIGKILL between the two renames, the reader says that they
do not belong together), SIGTERM/SIGHUP leave no temporary file, and the next write to the folder sweeps what a
SIGKILLed writer left. The window between the two renames is also set up exactly, and a failing `.meta` rename
puts the old data back."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.io import atomic
from daphnec.runtime.kernels import io

ROOT = Path(__file__).resolve().parents[2]
SHAPES = {"A": (3000, 400), "B": (400, 3000)}

_WRITER = """
import sys
import numpy as np
from daphnec.runtime.kernels import io
path = sys.argv[1]
mats = {k: np.full(s, 1.5 if k == "A" else -2.25) for k, s in (("A", (3000, 400)), ("B", (400, 3000)))}
i = 0
while True:
    k = "AB"[i % 2]
    io.write(mats[k], path)
    print(k, flush=True)
    i += 1
"""


def _start_writer(path: Path, **env: str) -> subprocess.Popen[str]:
    p = subprocess.Popen([sys.executable, "-c", _WRITER, str(path)], stdout=subprocess.PIPE, text=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT), **env})  # fmt: skip
    assert p.stdout is not None
    assert p.stdout.readline().strip() == "A"  # one complete pair exists: later kills land inside writes
    return p


def _temps(folder: Path) -> list[str]:
    return sorted(n for n in os.listdir(folder) if n.endswith(".tmp"))


def _check_pair(path: Path) -> str:
    """'A' or 'B' when the pair is complete and consistent, 'mismatch' when the reader says they do not belong
    together (the only other outcome allowed)."""
    try:
        m = io.read_matrix(str(path), vt="f64")
    except DaphneRuntimeError as e:
        assert "and its .meta do not belong together" in str(e), e
        return "mismatch"
    k = "A" if m.shape == SHAPES["A"] else "B"
    assert m.shape == SHAPES[k] and np.all(m == (1.5 if k == "A" else -2.25))
    return k


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
@pytest.mark.parametrize("delay", [0.05, 0.2, 0.45])
def test_termination_cleans_up_like_sigint(tmp_path: Path, sig: int, delay: float) -> None:
    path = tmp_path / "x.csv"
    p = _start_writer(path)
    try:
        time.sleep(delay)
        p.send_signal(sig)
        assert p.wait(timeout=60) == -sig  # the process still ends by the signal
    finally:
        p.kill()  # a writer that lost the signal would loop forever
        p.wait()
    assert _temps(tmp_path) == []
    assert _check_pair(path) in ("A", "B")


def _kill_writer(folder: Path, delay: float, **env: str) -> None:
    """SIGKILL the alternating writer `delay` s into a write of folder/x.csv: the pair is intact (or detectably
    mismatched), and whatever temporary files are left are the killed writer's."""
    p = _start_writer(folder / "x.csv", **env)
    time.sleep(delay)
    p.kill()
    p.wait(timeout=60)
    assert _check_pair(folder / "x.csv") in ("A", "B", "mismatch")
    left = _temps(folder)
    assert all(f".daphnec-{os.uname().nodename}-{p.pid}-" in n for n in left), left


@pytest.mark.parametrize("delay", [0.05, 0.2, 0.45])
def test_sigkill_with_unnamed_temporaries(tmp_path: Path, delay: float) -> None:
    """The data goes to an unnamed file (O_TMPFILE) that the kernel frees with the killed process; a name exists
    only from linking it to the rename (the renames' window, where a kill rarely lands)."""
    _kill_writer(tmp_path, delay)


@pytest.mark.parametrize("delay", [0.05, 0.2, 0.45])
def test_sigkill_leftovers_are_swept_by_the_next_write(tmp_path: Path, delay: float) -> None:
    """On a file system without unnamed files the temporary files have names from the start."""
    _kill_writer(tmp_path, delay, DAPHNEC_NAMED_TEMPORARIES="1", DAPHNEC_CACHE_DIR=str(tmp_path / "cache"))
    other = tmp_path / ".y.csv.daphnec-elsewhere-1-abcdefgh.tmp"  # another host's: not ours to judge
    other.write_text("")
    res = subprocess.run([sys.executable, "-c", "import sys, numpy as np\nfrom daphnec.runtime.kernels import io\n"
                          "io.write(np.ones((2, 2)), sys.argv[1])", str(tmp_path / "z.csv")], cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)  # fmt: skip
    assert res.returncode == 0
    assert _temps(tmp_path) == [other.name]


def test_a_live_writers_temporary_files_are_left_alone(tmp_path: Path) -> None:
    mine = tmp_path / f".x.csv.daphnec-{os.uname().nodename}-{os.getpid()}-abcdefgh.tmp"
    mine.write_text("in progress")
    assert atomic.sweep(str(tmp_path)) == []
    assert mine.exists()


def test_kill_between_the_two_renames_is_detected_by_the_reader(tmp_path: Path) -> None:
    """The state a SIGKILL between the renames leaves: the new data file renamed into place, the old `.meta`."""
    (tmp_path / "new").mkdir()
    io.write(np.ones(SHAPES["A"]), str(tmp_path / "x.csv"))
    io.write(np.ones(SHAPES["B"]), str(tmp_path / "new" / "x.csv"))
    os.replace(tmp_path / "new" / "x.csv", tmp_path / "x.csv")  # the data rename; the .meta rename never came
    with pytest.raises(DaphneRuntimeError) as e:
        io.read_matrix(str(tmp_path / "x.csv"), vt="f64")
    assert str(e.value) == (f"'{tmp_path}/x.csv' and its .meta do not belong together: the data was written as a "
                            f"400x3000 f64 matrix, but '{tmp_path}/x.csv.meta' describes a 3000x400 f64 matrix "
                            "(was writing them interrupted? write both again)")  # fmt: skip


def test_a_data_file_changed_since_no_longer_vouches_for_a_meta(tmp_path: Path) -> None:
    """Appending rows and fixing the `.meta` by hand is legitimate: the recorded `.meta` no longer applies."""
    p = tmp_path / "x.csv"
    io.write(np.ones((2, 2)), str(p))
    with open(p, "a") as f:
        f.write("3.000000,4.000000\n")
    (tmp_path / "x.csv.meta").write_text('{"numCols":2,"numRows":3,"valueType":"f64"}')
    assert io.read_matrix(str(p), vt="f64").tolist() == [[1, 1], [1, 1], [3, 4]]


def test_a_failing_meta_rename_restores_the_old_data(tmp_path: Path) -> None:
    p = tmp_path / "x.csv"
    io.write(np.ones((2, 2)), str(p))
    old = p.read_bytes()
    os.unlink(tmp_path / "x.csv.meta")
    (tmp_path / "x.csv.meta").mkdir()  # the .meta cannot be replaced
    with pytest.raises(DaphneRuntimeError, match="cannot open file '.*x.csv.meta' for writing"):
        io.write(np.zeros((3, 3)), str(p))
    assert p.read_bytes() == old
    assert _temps(tmp_path) == []
    (tmp_path / "x.csv.meta").rmdir()
    io.write(np.zeros((3, 3)), str(tmp_path / "y.csv"))  # no old data: a failed pair leaves nothing
    (tmp_path / "z.csv.meta").mkdir()
    with pytest.raises(DaphneRuntimeError):
        io.write(np.zeros((3, 3)), str(tmp_path / "z.csv"))
    assert not (tmp_path / "z.csv").exists()


_SIGNAL_AT_RENAME = """
import os, signal, sys
import numpy as np
from daphnec.runtime.kernels import io
path, sig, at = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
io.write(np.full((3000, 400), 1.5), path)
real, calls = os.replace, []
def replace(src, dst):  # the real rename, then a real signal to this process right after the chosen one
    real(src, dst)
    calls.append(dst)
    if len(calls) == at:
        os.kill(os.getpid(), sig)
os.replace = replace
io.write(np.full((400, 3000), -2.25), path)
print("not reached", flush=True)
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=["SIGTERM", "SIGHUP", "SIGINT"])
@pytest.mark.parametrize("at", [1, 2], ids=["after-data-rename", "after-meta-rename"])
def test_a_signal_during_the_renames_waits_until_the_pair_is_complete(tmp_path: Path, sig: int, at: int) -> None:
    """The signal lands right after a rename returns (where Python runs handlers: the next bytecode). Raising
    there once left the new data beside the old `.meta`; now it is held back until both renames are done."""
    path = tmp_path / "x.csv"
    args = [sys.executable, "-c", _SIGNAL_AT_RENAME, str(path), str(int(sig)), str(at)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    res = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert res.returncode == -sig, res.stderr  # Python ends an uncaught KeyboardInterrupt by SIGINT, too
    assert "not reached" not in res.stdout
    assert _check_pair(path) == "B"
    assert _temps(tmp_path) == []


_BIG_WRITE = 'X = rand(2500, 2500, 0.0, 1.0, 1.0, 1);\nwriteMatrix(X, $out);\nprint("written");\n'


def _kill_daphnec_while_writing(tmp_path: Path, **env: str) -> tuple[Path, dict[str, str]]:
    """Start `daphnec` writing a 2500x2500 CSV into tmp_path/out, SIGKILL it once its temporary file holds at
    least 1 MB (seen through /proc/<pid>/fd: named or unnamed, it is a file in the output folder), and return the
    output folder and the environment the run had."""
    out = tmp_path / "out"
    out.mkdir()
    script = tmp_path / "write.daph"
    script.write_text(_BIG_WRITE)
    full = {**os.environ, "PYTHONPATH": str(ROOT), "DAPHNEC_CACHE_DIR": str(tmp_path / "cache"), **env}
    cmd = [sys.executable, "-m", "daphnec.tools.daphnec", str(script), f'out="{out}/m.csv"']
    p = subprocess.Popen(cmd, cwd=tmp_path, env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    writing = False
    while not writing and time.monotonic() < deadline and p.poll() is None:
        for fd in Path(f"/proc/{p.pid}/fd").glob("*"):
            try:
                target = os.readlink(fd)
                writing = target.startswith(f"{out}/") and os.stat(fd).st_size > 1 << 20
            except OSError:
                continue
            if writing:
                break
        time.sleep(0.005)
    assert writing, "the write was not seen in progress"
    p.kill()
    p.wait(timeout=60)
    return out, full


def test_sigkill_during_write_matrix_leaves_nothing(tmp_path: Path) -> None:
    out, _ = _kill_daphnec_while_writing(tmp_path)
    assert os.listdir(out) == []  # no hidden temporary, no half file, nothing to sweep


def test_named_temporaries_of_a_killed_daphnec_are_swept_when_the_next_daphnec_starts(tmp_path: Path) -> None:
    """Without unnamed files the killed write leaves a hidden file as large as written so far; the next daphnec
    sweeps it at start-up (its journal names the folder), though it writes nothing anywhere."""
    out, env = _kill_daphnec_while_writing(tmp_path, DAPHNEC_NAMED_TEMPORARIES="1")
    left = _temps(out)
    assert len(left) == 1 and os.path.getsize(out / left[0]) > 1 << 20
    assert len(os.listdir(tmp_path / "cache" / "writes")) == 1  # the killed writer's journal note
    (tmp_path / "hello.daph").write_text('print("hello");\n')
    res = subprocess.run([sys.executable, "-m", "daphnec.tools.daphnec", str(tmp_path / "hello.daph")], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert res.returncode == 0 and res.stdout == "hello\n" and res.stderr == ""
    assert os.listdir(out) == []
    assert os.listdir(tmp_path / "cache" / "writes") == []


def test_a_finished_writer_leaves_no_journal_note(tmp_path: Path) -> None:
    script = tmp_path / "w.daph"
    script.write_text(f'writeMatrix(fill(1.0, 3, 3), "{tmp_path}/m.csv");\n')
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DAPHNEC_CACHE_DIR": str(tmp_path / "cache"),
           "DAPHNEC_NAMED_TEMPORARIES": "1"}  # fmt: skip
    res = subprocess.run([sys.executable, "-m", "daphnec.tools.daphnec", str(script)], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert sorted(os.listdir(tmp_path)) == ["cache", "cache-programs", "m.csv", "m.csv.meta", "w.daph"]
    assert os.listdir(tmp_path / "cache" / "writes") == []
