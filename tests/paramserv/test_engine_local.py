"""The paramserv engine in LOCAL mode (real threads): BSP against a hand-written sequential loop, the strategies
that must equal BSP (SSP with s=0, ALLREDUCE), convergence of the others, update frequencies, schemes, dtypes,
CSR features, compression and the statistics."""

from __future__ import annotations

import numpy as np
import ps_linreg as lr
import pytest

from daphnec.runtime import statistics
from daphnec.runtime.kernels.lists import DaphneList, create_list
from daphnec.runtime.paramserv import STATS, PSOptions, paramserv
from daphnec.runtime.paramserv import stats as ps_stats
from daphnec.runtime.values import to_csr

X, Y = lr.data(n=610)  # 610 rows: partitions of different sizes, so workers drop out of an epoch's last steps
LR = 0.02


def train(X_: object = X, y_: object = Y, model: tuple | None = None, **kw: object) -> DaphneList:
    opts = {"utype": "BSP", "freq": "BATCH", "epochs": 2, "batchsize": 32, "k": 3, "hyperparams": lr.hyper(LR)}
    opts.update(kw)
    return paramserv(model or lr.model0(), X_, y_, lr.upd, lr.agg, PSOptions(**opts))  # type: ignore[arg-type]


def diff(a: tuple, b: tuple) -> float:
    return max(float(np.max(np.abs(np.asarray(x) - np.asarray(y)))) for x, y in zip(a, b))


@pytest.mark.parametrize("scheme", ["DISJOINT_CONTIGUOUS", "DISJOINT_ROUND_ROBIN", "DISJOINT_RANDOM",
                                    "OVERLAP_RESHUFFLE"])  # fmt: skip
@pytest.mark.parametrize("k", [1, 3, 4])
def test_bsp_equals_sequential_sgd(scheme: str, k: int) -> None:
    got = train(scheme=scheme, k=k, seed=11, batchsize=48)
    want = lr.sequential_bsp(X, Y, k, 2, 48, scheme, 11, LR)
    assert diff(got, want) < 1e-9
    assert isinstance(got, DaphneList) and got.elem_kind == ("DenseMatrix", "f64")


def test_bsp_is_deterministic_and_seeded() -> None:
    a = train(scheme="DISJOINT_RANDOM", seed=5)
    b = train(scheme="DISJOINT_RANDOM", seed=5)
    c = train(scheme="DISJOINT_RANDOM", seed=6)
    d = train(scheme="DISJOINT_RANDOM")  # seed=-1: the fixed default seed
    e = train(scheme="DISJOINT_RANDOM")
    assert diff(a, b) == 0.0 and diff(d, e) == 0.0
    assert diff(a, c) > 0.0


def test_ssp_with_zero_staleness_is_bsp() -> None:
    for freq in ("BATCH", "NBATCHES"):
        assert diff(train(utype="SSP", staleness=0, freq=freq, nbatches=2), train(freq=freq, nbatches=2)) == 0.0


@pytest.mark.parametrize("freq", ["BATCH", "NBATCHES", "EPOCH"])
def test_allreduce_equals_bsp(freq: str) -> None:
    assert diff(train(utype="ALLREDUCE", freq=freq, nbatches=3), train(freq=freq, nbatches=3)) < 1e-9


def reference_nbatches(nb: int) -> tuple:
    """One worker, freq=NBATCHES: local updates after each batch of a group, the group's summed gradient pushed."""
    W, b = np.zeros((X.shape[1], 1)), np.zeros((1, 1))
    batches = [(a, min(a + 32, X.shape[0])) for a in range(0, X.shape[0], 32)]
    for _ in range(2):
        for g0 in range(0, len(batches), nb):
            lw, lb = W, b
            acc = None
            for a, e in batches[g0 : g0 + nb]:
                g = lr.upd((lw, lb), None, X[a:e], Y[a:e])  # type: ignore[arg-type]
                acc = (g[0], g[1]) if acc is None else (acc[0] + g[0], acc[1] + g[1])
                lw, lb = lw - LR * g[0], lb - LR * g[1]
            assert acc is not None
            W, b = W - LR * acc[0], b - LR * acc[1]
    return W, b


def test_nbatches_and_epoch_frequency() -> None:
    assert diff(train(k=1, freq="NBATCHES", nbatches=4), reference_nbatches(4)) < 1e-9
    assert diff(train(k=1, freq="EPOCH"), reference_nbatches(10**6)) < 1e-9


@pytest.mark.parametrize("utype", ["ASP", "SSP", "SBP", "LOCALSGD"])
def test_other_strategies_converge(utype: str) -> None:
    start = lr.mse(lr.model0(), X, Y)
    bsp = lr.mse(train(epochs=4, hyperparams=lr.hyper(0.1)), X, Y)  # at the noise floor (1e-4)
    got = lr.mse(train(utype=utype, epochs=4, staleness=2, backup_workers=1, period=2, hyperparams=lr.hyper(0.1)),
                 X, Y)  # fmt: skip
    assert got < 0.01 * start
    if utype != "LOCALSGD":  # model averaging takes smaller steps than BSP's summed gradients
        assert got < 5 * bsp


def test_csr_features_and_dtypes() -> None:
    assert diff(train(to_csr(X), scheme="DISJOINT_ROUND_ROBIN"), train(scheme="DISJOINT_ROUND_ROBIN")) < 1e-12
    assert diff(train(to_csr(X), scheme="OVERLAP_RESHUFFLE"), train(scheme="OVERLAP_RESHUFFLE")) < 1e-12
    m32 = create_list(np.zeros((X.shape[1], 1), dtype=np.float32), np.zeros((1, 1), dtype=np.float32))
    hp32 = create_list(np.array([[LR]], dtype=np.float32))
    got = train(X.astype(np.float32), Y.astype(np.float32), model=m32, utype="ASP", hyperparams=hp32)
    assert got.elem_kind == ("DenseMatrix", "f32") and all(m.dtype == np.float32 for m in got)


@pytest.mark.parametrize("spec", ["topk:0.25", "int8"])
def test_compression_trains_and_counts_bytes(spec: str) -> None:
    got = train(compression=spec, epochs=4)
    assert lr.mse(got, X, Y) < 0.05 * lr.mse(lr.model0(), X, Y)
    total = STATS.last.total  # type: ignore[union-attr]
    assert 0 < total.push_sent < total.push_raw
    assert diff(train(utype="ALLREDUCE", compression=spec), train(compression=spec)) < 1e-9


def test_statistics_and_report(capsys: pytest.CaptureFixture[str]) -> None:
    statistics.PARAMSERV_TABLES = True
    try:
        train(epochs=3)
    finally:
        statistics.PARAMSERV_TABLES = False
    err = capsys.readouterr().err
    call = STATS.last
    assert call is not None and len(call.epochs) == 3
    steps = -(-(610 // 3 + 1) // 32)  # the largest partition's batches per epoch
    assert [e.updates for e in call.epochs] == [steps] * 3
    assert call.total.pushes == 3 * sum(-(-r // 32) for r in (203, 203, 204))
    assert call.total.push_raw == call.total.push_sent == call.total.pushes * 9 * 8
    assert all(e.seconds > 0 for e in call.epochs)
    assert "utype=BSP" in err and "max stale" in err and "total" in err
    assert "paramserv call" in ps_stats.report()
