"""Strategies under a straggler (the DAPHNEC_PS_SLOW_WORKER test hook, real threads): SSP's staleness bound holds
and staleness happens; ASP and SBP do not wait for the slow worker, BSP does; SBP drops the late gradients."""

from __future__ import annotations

import time

import numpy as np
import ps_linreg as lr
import pytest

from daphnec.runtime.paramserv import STATS, PSOptions, paramserv

X, Y = lr.data(n=640)


def timed(utype: str, **kw: object) -> tuple[float, object]:
    opts = PSOptions(utype=utype, freq="BATCH", epochs=1, batchsize=32, k=2, hyperparams=lr.hyper(0.1), **kw)  # type: ignore[arg-type]
    t0 = time.perf_counter()
    model = paramserv(lr.model0(), X, Y, lr.upd, lr.agg, opts)
    return time.perf_counter() - t0, model


def test_ssp_staleness_is_bounded_and_happens(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DAPHNEC_PS_SLOW_WORKER", "1:0.004")
    for s in (1, 2):
        timed("SSP", staleness=s)
        call = STATS.last
        assert call is not None
        assert 0 < call.max_staleness <= s
        assert call.total.updates == 10  # 320 rows per worker, 10 clocks, each applied once
    timed("BSP")
    assert STATS.last.max_staleness == 0  # type: ignore[union-attr]


def test_asp_and_sbp_do_not_wait_for_a_straggler(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DAPHNEC_PS_SLOW_WORKER", "1:0.03")
    bsp, _ = timed("BSP")  # 10 steps, each waiting for worker 1: >= 0.3 s
    bsp_wait = STATS.last.total.wait_seconds  # type: ignore[union-attr]
    asp, asp_model = timed("ASP")
    assert STATS.last.total.updates == 20  # type: ignore[union-attr]  # the budget: as many gradients as BSP sums
    sbp, sbp_model = timed("SBP", backup_workers=1)
    sbp_call = STATS.last
    assert bsp >= 0.3
    assert asp < 0.5 * bsp and sbp < 0.5 * bsp, (bsp, asp, sbp)
    assert bsp_wait > 0.2  # worker 0 waited at every step
    assert sbp_call is not None and sbp_call.total.updates == 20 and sbp_call.total.dropped >= 1  # 1 gradient a step
    start = lr.mse(lr.model0(), X, Y)
    for m in (asp_model, sbp_model):
        assert lr.mse(m, X, Y) < 0.5 * start  # type: ignore[arg-type]


def test_slow_hook_format(monkeypatch: pytest.MonkeyPatch) -> None:
    from daphnec.runtime.testing_hooks import ps_slow_worker

    monkeypatch.setenv("DAPHNEC_PS_SLOW_WORKER", "2:0.5")
    assert ps_slow_worker() == (2, 0.5)
    monkeypatch.setenv("DAPHNEC_PS_SLOW_WORKER", "garbage")
    assert ps_slow_worker() == (-1, 0.0)
    monkeypatch.delenv("DAPHNEC_PS_SLOW_WORKER")
    assert ps_slow_worker() == (-1, 0.0)
    assert np.isfinite(timed("ASP")[0])
