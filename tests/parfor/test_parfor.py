"""`parfor`: results bit-identical to the `for` loop under every partitioning scheme, the independence checks'
located errors, run-time errors in loop order, and real `mpiexec` runs (dynamic scheduling between ranks)."""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "distributed"))
from dist_helpers import run_local, run_mpi  # noqa: E402

from daphnec.dialects.errors import DaphneError  # noqa: E402
from daphnec.runtime.config import DaphneConfig  # noqa: E402
from daphnec.runtime.scheduling.partitioning import SCHEMES  # noqa: E402
from daphnec.tools.driver import compile_source, configure_runtime  # noqa: E402

# Every shape a valid parfor body takes: row and column results, several writes per iteration, writes inside `if`
# and an inner `for`, offsets and steps of the loop variable, a negative step, a local variable that shadows
# nothing, a user function called in the body, and a parfor nested in a parfor (run serially in its task).
PROGRAM = """
def rowStats(r: matrix<f64>) -> f64, f64 {
    return sum(r), max(r);
}
X = reshape(seq(1.0, 240.0, 1.0), 24, 10) / 7.0;
R = fill(0.0, 24, 2);
C = fill(-1.0, 3, 10);
E = fill(0, 13, 1);
N = fill(0.0, 24, 10);
parfor (i in 0:23) {
    s, m = rowStats(X[i, ]);
    R[i, 0] = s;
    if (s > 100.0)
        R[i, 1] = m;
    else
        R[i, 1] = -m;
}
parfor (j in 9:0) {
    c = X[, j];
    acc = 0.0;
    for (k in 0:23)
        acc = acc + as.scalar(c[k, 0]) * k;
    C[0, j] = acc;
    C[1, j] = mean(c);
    for (q in 0:0)
        C[2, j] = sum(c ^ 2.0);
}
parfor (i in 0:11) {
    E[i + 1, 0] = (2 * i) * (2 * i);
}
G = fill(0.0, 24, 1);
parfor (i in 1:23:2)
    G[i, 0] = i / 2.0;
parfor (i in 0:23) {
    row = fill(0.0, 1, 10);
    parfor (j in 0:9)
        row[0, j] = as.scalar(X[i, j]) * (i + 1) - j;
    N[i, ] = row;
}
print(R);
print(C);
print(E);
print(t(G));
print(sum(N));
print(N[5, ]);
"""


def _run(text: str, **config: object) -> str:
    cfg = DaphneConfig(**config)  # type: ignore[arg-type]
    configure_runtime(cfg)
    program = compile_source(text, "parfor.daph", cfg, {})
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        program.run()
    return out.getvalue()


@pytest.fixture(scope="module")
def serial_for() -> str:
    return _run(PROGRAM.replace("parfor (", "for ("))


@pytest.mark.parametrize("scheme", SCHEMES)
def test_parfor_equals_for_under_every_scheme(scheme: str, serial_for: str):
    assert _run(PROGRAM, numberOfThreads=2, taskPartitioningScheme=scheme) == serial_for


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_parfor_equals_for_at_any_thread_count(threads: int, serial_for: str):
    assert _run(PROGRAM, numberOfThreads=threads, taskPartitioningScheme="SS") == serial_for


def test_parfor_with_vectorized_pipelines_in_the_body(serial_for: str):
    assert _run(PROGRAM, numberOfThreads=2, use_vectorized_exec=True, vec_min_cells=0) == serial_for


CV = """
X = rand(3000, 40, -1.0, 1.0, 1.0, 42);
y = X @ rand(40, 1, -1.0, 1.0, 1.0, 7) + rand(3000, 1, -0.1, 0.1, 1.0, 3);
err = fill(0.0, 10, 1);
B = fill(0.0, 40, 10);
parfor (f in 0:9) {
    lo = f * 300;
    Xtr = rbind(X[0:lo, ], X[lo + 300:3000, ]);
    ytr = rbind(y[0:lo, ], y[lo + 300:3000, ]);
    beta = solve(t(Xtr) @ Xtr + diagMatrix(fill(0.001, 40, 1)), t(Xtr) @ ytr);
    r = X[lo:lo + 300, ] @ beta - y[lo:lo + 300, ];
    err[f, 0] = sum(r * r);
    B[, f] = beta;
}
writeMatrix(err, "OUT/err.dbdf");
writeMatrix(B, "OUT/beta.dbdf");
"""


@pytest.mark.parametrize("scheme", ["STATIC", "SS", "GSS"])
def test_products_and_solves_are_bit_identical_to_for(tmp_path: Path, scheme: str):
    # binary files: every bit of the cross-validation's errors and coefficients (BLAS products, LAPACK solves)
    (tmp_path / "for").mkdir()
    (tmp_path / "parfor").mkdir()
    _run(CV.replace("parfor (", "for (").replace("OUT", str(tmp_path / "for")))
    _run(CV.replace("OUT", str(tmp_path / "parfor")), numberOfThreads=2, taskPartitioningScheme=scheme)
    for name in ("err.dbdf", "beta.dbdf"):
        assert (tmp_path / "parfor" / name).read_bytes() == (tmp_path / "for" / name).read_bytes()


def test_expected_values():
    out = _run("R = fill(0, 1, 5);\nparfor (i in 0:4) R[0, i] = i * i;\nprint(R);\n", numberOfThreads=2)
    assert out == "DenseMatrix(1x5, int64_t)\n0 1 4 9 16\n"


def test_empty_range_keeps_the_value_before_the_loop():
    out = _run("R = fill(3, 2, 1);\nparfor (i in 0:-1:1) R[i, 0] = 9;\nprint(R);\n", numberOfThreads=2)
    assert out == "DenseMatrix(2x1, int64_t)\n3\n3\n"


def test_the_value_before_the_loop_is_not_changed():
    text = "A = fill(1.0, 4, 1);\nR = A;\nparfor (i in 0:3) R[i, 0] = i;\nprint(A);\nprint(R);\n"
    expected = "DenseMatrix(4x1, double)\n1\n1\n1\n1\nDenseMatrix(4x1, double)\n0\n1\n2\n3\n"
    assert _run(text, numberOfThreads=2) == expected


def test_run_time_error_is_the_first_failing_iteration():
    # iterations 3 and 7 both fail; the for loop reports iteration 3's error, so must the parfor, whatever
    # thread reaches 7 first
    text = "X = fill(1.0, 10, 2);\nR = fill(0.0, 10, 1);\nparfor (i in 0:9) {\n"
    text += "    w = (i == 3) ? 5 : ((i == 7) ? 9 : 1);\n    R[i, 0] = sum(X[, 0:w]);\n}\nprint(R);\n"
    for scheme in ("STATIC", "SS"):
        with pytest.raises(DaphneError) as e:
            _run(text, numberOfThreads=2, taskPartitioningScheme=scheme)
        assert e.value.loc is not None and e.value.loc.line == 5
        assert "5" in e.value.message and "9" not in e.value.message, e.value.message


# -- the independence checks: located compile errors naming the variable ---------------------------------------------

BAD = [
    (
        "s = 0.0;\nparfor (i in 1:10) {\n    s = s + i;\n}\nprint(s);\n",
        "3:9",
        "parfor iterations are not independent: 's' is defined before the loop and assigned in its body",
    ),
    (
        "R = fill(0.0, 10, 1);\nparfor (i in 1:9) {\n    R[i, 0] = R[i - 1, 0] + 1.0;\n}\nprint(R);\n",
        "3:15",
        "'R' is read in the body, while other iterations write it at the same time",
    ),
    (
        "R = fill(0.0, 10, 1);\nparfor (i in 1:9) {\n    R[0, 0] = i;\n}\nprint(R);\n",
        "3:5",
        "parfor iterations may write the same cells of 'R': each write must select one row or one column",
    ),
    (
        "R = fill(0.0, 10, 2);\nparfor (i in 0:8) {\n    R[i, 0] = i;\n    R[i + 1, 1] = i;\n}\nprint(R);\n",
        "4:5",
        "every write of one iteration must select the same row by the loop variable as the first one (line 3)",
    ),
    (
        "R = fill(0.0, 10, 1);\nparfor (i in 0:9) {\n    print(i);\n    R[i, 0] = i;\n}\nprint(R);\n",
        "3:5",
        "'print' in a parfor body: the iterations run in no fixed order",
    ),
    (
        "R = fill(0.0, 10, 1);\nparfor (i in 0:9) {\n    R = fill(1.0, 10, 1);\n}\nprint(R);\n",
        "3:9",
        "'R' is defined before the loop and assigned in its body",
    ),
    (
        "R = fill(0.0, 10, 1);\nparfor (i in 0:9) {\n    if (i > 3)\n        R = fill(1.0, 10, 1);\n"
        "    R[i, 0] = 2.0;\n}\nprint(R);\n",
        "4:13",
        "'R' is assigned a whole new value in the body",
    ),
    (
        "R = fill(0.0, 10, 1);\nparfor (i in 0:9) {\n    R[i * 0, 0] = 1.0;\n}\nprint(R);\n",
        "3:5",
        "may write the same cells of 'R'",
    ),
    (
        "R = fill(0.0, 10, 10);\nparfor (i in 0:9) {\n    parfor (j in 0:9)\n        R[i, j] = 1.0;\n}\nprint(R);\n",
        "3:5",
        "only the outermost parfor may write 'R'; make the inner loop a `for`",
    ),
    (
        "def f(x) { print(x); return x; }\nR = fill(0.0, 10, 1);\nparfor (i in 0:9) R[i, 0] = f(i);\nprint(R);\n",
        "1:12",
        "'print' in a function called in the parfor body of line 3",
    ),
]


@pytest.mark.parametrize("source, where, fragment", BAD, ids=[f"bad{i}" for i in range(len(BAD))])
def test_dependences_are_located_compile_errors(check_bad_input, source: str, where: str, fragment: str):
    check_bad_input(source, 2, where, fragment)


def test_parfor_is_a_keyword(check_bad_input):
    check_bad_input("parfor = 3;\n", 1, "1:8", "syntax error")


# -- MPI: the real mpiexec, dynamic scheduling between ranks ----------------------------------------------------------

MPI_PROGRAM = """
X = rand(300, 40, -1.0, 1.0, 1.0, 11);
S = fill(0.0, 3, 40);
T = fill(7, 40, 1);
off = 1;
parfor (j in 0:39) {
    c = X[, j];
    S[0, j] = mean(c);
    S[1, j] = max(c);
    S[2, j] = sum(c * c);
    T[j, 0] = j * 10 + off;
}
print(S);
print(T);
"""


@pytest.fixture(scope="module")
def mpi_script(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    path = tmp_path_factory.mktemp("parfor") / "cols.daph"
    path.write_text(MPI_PROGRAM)
    local = run_local(str(path))
    assert local.returncode == 0, local.stderr
    return path, local.stdout


@pytest.mark.parametrize("scheme", ["STATIC", "GSS", "SS"])
def test_mpi_parfor_equals_local(mpi_script: tuple[Path, str], tmp_path: Path, scheme: str):
    path, expected = mpi_script
    stats = tmp_path / "stats.json"
    r = run_mpi(3, "--distributed", f"--partitioning={scheme}", str(path), DAPHNEC_DIST_STATS=str(stats))
    assert r.returncode == 0, r.stderr
    assert r.stdout == expected
    s = json.loads(stats.read_text())
    assert s["calls"] == 1 and sorted(s["rows"]) == ["1", "2"] and sum(s["rows"].values()) == 40
    assert (s["tasks"] == 2) == (scheme == "STATIC")


def test_mpi_dynamic_scheduling_moves_iterations_off_a_slow_rank(mpi_script: tuple[Path, str], tmp_path: Path):
    path, expected = mpi_script
    stats = tmp_path / "stats.json"
    r = run_mpi(3, "--distributed", "--partitioning=SS", str(path), DAPHNEC_DIST_STATS=str(stats),
                DAPHNEC_DIST_SLOW_RANK="2:20")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert r.stdout == expected
    rows = json.loads(stats.read_text())["rows"]
    assert rows["1"] > rows["2"], rows


def test_mpi_run_time_error_is_located(tmp_path: Path):
    path = tmp_path / "bad.daph"
    path.write_text(
        "X = fill(1.0, 10, 2);\nR = fill(0.0, 10, 1);\nparfor (i in 0:9)\n    R[i, 0] = sum(X[, 0:i]);\nprint(R);\n"
    )
    r = run_mpi(3, "--distributed", str(path))
    assert r.returncode == 3
    assert f"{path}:4:" in r.stderr and "Traceback" not in r.stderr
