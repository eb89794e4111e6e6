"""`paramserv(...)` from DaphneDSL through the real CLI: compiled UDFs, every strategy, LOCAL threads and MPI ranks.

The models are examples/paramserv/models.daph; each test writes a small driver script that imports it and writes
the trained model with `write(..., "x.dbdf")` (exact binary), which the test reads back with the runtime's reader.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from daphnec.runtime.io import dbdf
from daphnec.runtime.kernels.datagen import rand

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "examples" / "paramserv" / "models.daph"
sys.path.insert(0, str(ROOT / "tests" / "distributed"))
from dist_helpers import run_mpi  # noqa: E402

LINREG = 'upd=m.linreg_gradients, agg=m.sgd, hyperparams=createList(as.matrix({lr})), freq="BATCH"'
MLP = 'upd=m.mlp_gradients, agg=m.sgd, hyperparams=createList(as.matrix({lr})), freq="BATCH"'


def driver(tmp: Path, name: str, body: str) -> Path:
    path = tmp / f"{name}.daph"
    path.write_text(f'import "{MODELS}" as "m";\n{body}\n')
    return path


def daphnec(script: Path, *flags: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run(
        [sys.executable, "-m", "daphnec.tools.daphnec", *flags, str(script)],
        capture_output=True, text=True, timeout=300, cwd=script.parent,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
    )  # fmt: skip


def ok(res: subprocess.CompletedProcess[str]) -> list[str]:
    assert res.returncode == 0, res.stderr
    return res.stdout.splitlines()


def read(path: Path) -> np.ndarray:
    _, rows, cols, vt = dbdf.read_header(str(path))
    return dbdf.read(str(path), rows, cols, vt, False)


def train_linreg(out: Path, args: str, n: int = 400, d: int = 5, lr: float = 0.05) -> str:
    """DaphneDSL: train linear regression with `args`, write out/w.dbdf and out/b.dbdf, print the final MSE."""
    return (
        f"X, y = m.regression_data({n}, {d});\n"
        f"M = paramserv(model=m.linreg_init({d}), features=X, labels=y, {LINREG.format(lr=lr)}, {args});\n"
        f'write(M[0], "{out}/w.dbdf");\nwrite(M[1], "{out}/b.dbdf");\nprint(m.linreg_mse(M, X, y));'
    )


def regression_data(n: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    """models.daph's `regression_data`, with the runtime's bit-exact rand."""
    X = rand(n, d, -1.0, 1.0, 1.0, 1, "f64")
    w = rand(d, 1, -1.0, 1.0, 1.0, 2, "f64")
    return X, X @ w + 0.17320508075688773 * rand(n, 1, -1.0, 1.0, 1.0, 3, "f64")


def sequential_bsp(X: np.ndarray, y: np.ndarray, k: int, bs: int, epochs: int, lr: float) -> tuple[np.ndarray, float]:
    """Mini-batch SGD over the batches BSP visits: at step s, worker i's s-th batch of its contiguous block; the k
    gradients are summed in worker order and applied once (SystemDS's BSP)."""
    n, d = X.shape
    w, b = np.zeros((d, 1)), 0.0
    blocks = [(i * n // k, (i + 1) * n // k) for i in range(k)]
    steps = max(-(-(hi - lo) // bs) for lo, hi in blocks)
    for _ in range(epochs):
        for s in range(steps):
            gw, gb = np.zeros((d, 1)), 0.0
            for lo, hi in blocks:
                a = lo + s * bs
                if a >= hi:
                    continue
                Xb, yb = X[a : min(a + bs, hi)], y[a : min(a + bs, hi)]
                g = 2.0 / len(Xb) * (Xb @ w + b - yb)
                gw, gb = gw + Xb.T @ g, gb + g.sum()
            w, b = w - lr * gw, b - lr * gb
    return w, b


def test_bsp_equals_sequential_sgd(tmp_path: Path) -> None:
    script = driver(tmp_path, "bsp", train_linreg(tmp_path, 'utype="BSP", k=3, epochs=2, batchsize=16'))
    ok(daphnec(script))
    X, y = regression_data(400, 5)
    w, b = sequential_bsp(X, y, k=3, bs=16, epochs=2, lr=0.05)
    np.testing.assert_allclose(read(tmp_path / "w.dbdf"), w, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(read(tmp_path / "b.dbdf"), [[b]], rtol=1e-9, atol=1e-12)


def test_ssp_with_staleness_zero_is_bsp(tmp_path: Path) -> None:
    args = "k=2, epochs=2, batchsize=20"
    ok(daphnec(driver(tmp_path, "bsp", train_linreg(tmp_path, f'utype="BSP", {args}'))))
    bsp = read(tmp_path / "w.dbdf")
    ok(daphnec(driver(tmp_path, "ssp", train_linreg(tmp_path, f'utype="SSP", staleness=0, {args}'))))
    np.testing.assert_array_equal(read(tmp_path / "w.dbdf"), bsp)


STRATEGIES = ['utype="ASP"', 'utype="SSP", staleness=2', 'utype="SBP", backup_workers=1',
              'utype="ALLREDUCE"', 'utype="LOCALSGD", period=4']  # fmt: skip
"""Compared with BSP: ALLREDUCE computes exactly what BSP computes, LOCALSGD (model averaging: a step moves by the
mean, not the sum, of the k gradients) must at least have learned (below half the initial loss), SSP (clocks
applied as BSP applies them, on models at most 2 versions old) must reach BSP's final loss within 2 %. ASP and SBP
depend on which worker's gradient arrives first, i.e. on timing (`bracket`)."""


def check_against_bsp(losses: list[float], initial: float, bracket: tuple[float, float] | None = None) -> None:
    """`losses`: BSP's, then one per STRATEGIES entry. ASP and SBP within 2 % of BSP, or inside `bracket`."""
    bsp = losses[0]
    lo, hi = bracket or (bsp, bsp)
    for utype, loss in zip(STRATEGIES[:3], losses[1:4]):
        if "SSP" in utype:
            assert abs(loss - bsp) <= 0.02 * bsp, (utype, loss, bsp)
        else:
            assert 0.98 * min(lo, bsp) <= loss <= 1.02 * max(hi, bsp), (utype, loss, bsp, bracket)
    assert losses[4] == pytest.approx(bsp, rel=1e-6)
    assert losses[5] < initial / 2


def final_losses(tmp: Path, name: str, model: str, init: str, loss: str, data: str, common: str,
                 extra: tuple[tuple[str, str, str], ...] = ()) -> list[float]:  # fmt: skip
    """One script trains with BSP and then with every other strategy on `X, y = data` (`common` arguments), then
    once per `extra` entry (features, labels, arguments); returns the initial loss and the final losses in that
    order, all measured on X, y."""
    lines = [f"X, y = {data};", f"print({loss}({init}, X, y));"]
    runs = [("X", "y", f"{utype}, {common}") for utype in ['utype="BSP"', *STRATEGIES]] + list(extra)
    for features, labels, args in runs:
        lines.append(f"M = paramserv(model={init}, features={features}, labels={labels}, {model}, {args});")
        lines.append(f"print({loss}(M, X, y));")
    return [float(x) for x in ok(daphnec(driver(tmp, name, "\n".join(lines))))]


def test_strategies_reach_bsp_loss_linear(tmp_path: Path) -> None:
    """A convex objective: every order of the gradients ends at the noise floor (with one worker slowed by the
    DAPHNEC_PS_SLOW_WORKER hook, each in turn, SBP and ASP stayed within 0.6 % of BSP), so 2 % holds whatever the
    timing."""
    losses = final_losses(tmp_path, "lin", LINREG.format(lr=0.02), "m.linreg_init(10)", "m.linreg_mse",
                          "m.regression_data(3000, 10)", "k=3, epochs=8, batchsize=32")  # fmt: skip
    initial, bsp = losses[0], losses[1]
    assert bsp < 0.0105  # the noise floor is 0.01
    check_against_bsp(losses[1:], initial)


def test_strategies_reach_bsp_loss_mlp(tmp_path: Path) -> None:
    """examples/paramserv_mlp.daph's workload (the SystemDS peer's: 20000 x 100, 100-64-1, 5 epochs, batch 64).

    With k=2 and one backup worker, SBP applies whichever gradient arrives first at each step and drops the other;
    on a busy machine one worker can win (almost) every step, and then SBP is SGD over that worker's partition
    alone, for the same number of steps: exactly the model `k=1, epochs=10` trains on that half (checked with the
    other worker slowed: 0.127452 both). That model is up to 8 % worse than BSP on this non-convex objective; ASP
    skews the same way, less (up to 4 %). So ASP and SBP must land between BSP and the two one-partition models,
    whatever the timing (a 2 % bound around BSP failed on a loaded machine)."""
    one = 'utype="BSP", k=1, epochs=10, batchsize=64'
    halves = (("X[0:10000, ]", "y[0:10000, ]", one), ("X[10000:20000, ]", "y[10000:20000, ]", one))
    losses = final_losses(tmp_path, "mlp", MLP.format(lr=0.01), "m.mlp_init(100, 64)", "m.mlp_mse",
                          "m.regression_data(20000, 100)", "k=2, epochs=5, batchsize=64", halves)  # fmt: skip
    initial, bsp, partition_alone = losses[0], losses[1], losses[7:]
    assert bsp < 0.13  # below the SystemDS peer's final MSE on the same workload
    check_against_bsp(losses[1:7], initial, (min(partition_alone), max(partition_alone)))


@pytest.mark.parametrize(
    ("args", "code", "fragment"),
    [
        ('utype="FOO", epochs=1', 3, "unknown utype 'FOO'"),
        ('scheme="NOPE", epochs=1', 3, "unknown scheme 'NOPE'"),
        ("epochs=1, batchsize=0", 3, "batchsize must be > 0"),
        ("epochs=1, k=500", 3, "k=500"),
        ("epochs=1, color=3", 2, "unknown argument 'color'"),
    ],
)
def test_bad_arguments(tmp_path: Path, args: str, code: int, fragment: str) -> None:
    body = ("X, y = m.regression_data(100, 3);\n"
            f"M = paramserv(model=m.linreg_init(3), features=X, labels=y, {LINREG.format(lr=0.1)}, {args});\n"
            "print(M[0]);")  # fmt: skip
    res = daphnec(driver(tmp_path, "bad", body))
    assert res.returncode == code, res.stderr
    assert "Traceback" not in res.stderr
    assert ": error: " in res.stderr and fragment in res.stderr, res.stderr


@pytest.mark.parametrize(
    ("udfs", "fragment"),
    [
        ("upd=nothing, agg=m.sgd", "'nothing' (upd) is not a user-defined function"),
        ("upd=m.linreg_mse, agg=m.sgd", "must take 4 arguments (model, hyperparams, features, labels)"),
        ("upd=m.linreg_gradients, agg=m.linreg_gradients", "must take 3 arguments (model, hyperparams, gradients)"),
        ("agg=m.sgd", "missing argument 'upd'"),
        ("upd=wrong_result, agg=m.sgd", "(upd) must return a list of matrices, it returns"),
    ],
)
def test_bad_functions(tmp_path: Path, udfs: str, fragment: str) -> None:
    body = ("X, y = m.regression_data(100, 3);\n"
            "def wrong_result(model, hyperparams, features, labels) { return sum(features); }\n"
            f"M = paramserv(model=m.linreg_init(3), features=X, labels=y, {udfs}, epochs=1);\n"
            "print(M[0]);")  # fmt: skip
    res = daphnec(driver(tmp_path, "bad", body))
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and ": error: " in lines[0] and fragment in lines[0], res.stderr


def test_mpi_mode_matches_local(tmp_path: Path) -> None:
    """`mode="MPI"` under 3 real ranks (server on rank 0, two workers) reaches exactly LOCAL's BSP model."""
    args = "k=2, epochs=2, batchsize=16"
    ok(daphnec(driver(tmp_path, "local", train_linreg(tmp_path, f'utype="BSP", {args}'))))
    local = read(tmp_path / "w.dbdf")
    script = driver(tmp_path, "mpi", train_linreg(tmp_path, f'utype="BSP", mode="MPI", {args}'))
    res = run_mpi(3, "--distributed", "--dist_backend=MPI", str(script), timeout=240)
    assert res.returncode == 0, res.stderr
    np.testing.assert_allclose(read(tmp_path / "w.dbdf"), local, rtol=1e-9, atol=1e-12)


def test_statistics_show_epochs_and_validation_loss(tmp_path: Path) -> None:
    """`--statistics`: one table per call on stderr; with `val=` a validation loss per epoch that goes down."""
    body = ("X, y = m.regression_data(2000, 10);\nXv, yv = m.regression_data(500, 10);\n"
            "def val_mse(model, hyperparams, features, labels) { return m.linreg_mse(model, features, labels); }\n"
            f"M = paramserv(model=m.linreg_init(10), features=X, labels=y, {LINREG.format(lr=0.02)}, utype=\"SSP\", "
            "staleness=1, k=2, epochs=3, batchsize=32, val=val_mse, val_features=Xv, val_labels=yv);\n"
            "print(m.linreg_mse(M, Xv, yv));")  # fmt: skip
    res = daphnec(driver(tmp_path, "stats", body), "--statistics")
    final = float(ok(res)[0])
    lines = res.stderr.splitlines()
    assert lines[0].startswith("paramserv call 1: mode=LOCAL utype=SSP freq=BATCH k=2, ")
    assert lines[1].split() == ["epoch", "seconds", "updates", "pushes", "dropped", "max", "stale", "push", "raw",
                                "MB", "push", "sent", "MB", "pulled", "MB", "wait", "s", "compute", "s", "comm", "s",
                                "val", "loss"]  # fmt: skip
    rows = [ln.split() for ln in lines[2:5]]
    assert [r[0] for r in rows] == ["1", "2", "3"] and lines[5].split()[0] == "total"
    assert all(int(r[3]) == 64 for r in rows)  # 2 workers x ceil(1000 / 32) pushes per epoch
    assert all(int(r[5]) <= 1 for r in rows)  # SSP's staleness bound
    val = [float(r[-1]) for r in rows]
    assert val[0] > val[1] > val[2] and val[2] == pytest.approx(final, rel=1e-5)


def test_validation_function_needs_validation_data(tmp_path: Path) -> None:
    body = ("X, y = m.regression_data(100, 3);\n"
            f"M = paramserv(model=m.linreg_init(3), features=X, labels=y, {LINREG.format(lr=0.1)}, val=m.sgd);\n"
            "print(M[0]);")  # fmt: skip
    res = daphnec(driver(tmp_path, "bad", body))
    assert res.returncode == 2 and "val needs val_features and val_labels" in res.stderr, res.stderr
