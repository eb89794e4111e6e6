"""Units of the paramserv engine: option validation messages, partitioning schemes, compression with error
feedback, UDF result checks, and failures in worker threads (re-raised, no hang)."""

from __future__ import annotations

import threading
import time

import numpy as np
import ps_linreg as lr
import pytest

from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.kernels.lists import create_list
from daphnec.runtime.paramserv import PSOptions, paramserv
from daphnec.runtime.paramserv.compression import Compressor
from daphnec.runtime.paramserv.options import Compression, parse_compression
from daphnec.runtime.paramserv.partition import partition, plans
from daphnec.runtime.values import to_csr

X, Y = lr.data(n=40)


@pytest.mark.parametrize(("kw", "fragment"), [
    ({"utype": "FOO"},
     "paramserv: unknown utype 'FOO' (expected one of BSP, ASP, SSP, SBP, ALLREDUCE, LOCALSGD, GOSSIP, EASGD)"),
    ({"scheme": "bogus"}, "paramserv: unknown scheme 'BOGUS' (expected one of DISJOINT_CONTIGUOUS"),
    ({"freq": "x"}, "paramserv: unknown freq 'X'"),
    ({"mode": "spark"}, "paramserv: unknown mode 'SPARK' (expected one of LOCAL, MPI)"),
    ({"batchsize": 0}, "paramserv: batchsize must be > 0, got 0"),
    ({"epochs": -1}, "paramserv: epochs must be > 0, got -1"),
    ({"k": 50}, "paramserv: k=50 workers but only 40 rows"),
    ({"utype": "SSP", "staleness": -1}, "paramserv: staleness must be >= 0, got -1"),
    ({"utype": "SBP", "k": 2, "backup_workers": 2}, "paramserv: backup_workers=2 must be smaller than the number"),
    ({"compression": "zip"}, "paramserv: unknown compression 'zip'"),
    ({"compression": "topk:1.5"}, "the fraction must be a number in (0, 1]"),
    ({"utype": "LOCALSGD", "freq": "EPOCH"}, "freq must be BATCH"),
    ({"k": "two"}, "paramserv: k must be an integer"),
])  # fmt: skip
def test_validation_messages(kw: dict[str, object], fragment: str) -> None:
    with pytest.raises(DaphneRuntimeError) as e:
        paramserv(lr.model0(), X, Y, lr.upd, lr.agg, PSOptions(hyperparams=lr.hyper(), **kw))  # type: ignore[arg-type]
    assert fragment in str(e.value)


def test_options_normalised() -> None:
    o = PSOptions(utype="bsp", freq=" epoch ", scheme="disjoint_random", mode="local", k=np.int64(3), epochs=2.0)  # type: ignore[arg-type]
    assert (o.utype, o.freq, o.scheme, o.mode, o.k, o.epochs) == ("BSP", "EPOCH", "DISJOINT_RANDOM", "LOCAL", 3, 2)
    o.validate(10)
    assert parse_compression("TopK:0.1") == Compression("topk", 0.1) and parse_compression("") == Compression()


def test_bad_inputs() -> None:
    opts = PSOptions(utype="BSP", k=2, hyperparams=lr.hyper())
    with pytest.raises(DaphneRuntimeError, match="features has 40 rows but labels has 39"):
        paramserv(lr.model0(), X, Y[:39], lr.upd, lr.agg, opts)
    with pytest.raises(DaphneRuntimeError, match="model must be a non-empty list"):
        paramserv((), X, Y, lr.upd, lr.agg, opts)


def test_partition_schemes() -> None:
    Xi = np.arange(10, dtype=np.float64).reshape(10, 1)
    rows = lambda parts: [p.batch(0, p.rows)[0].ravel().tolist() for p in parts]  # noqa: E731
    assert rows(partition(Xi, Xi, 3, "DISJOINT_CONTIGUOUS", 1)) == [[0, 1, 2], [3, 4, 5], [6, 7, 8, 9]]
    assert rows(partition(Xi, Xi, 3, "DISJOINT_ROUND_ROBIN", 1)) == [[0, 3, 6, 9], [1, 4, 7], [2, 5, 8]]
    rnd = rows(partition(Xi, Xi, 3, "DISJOINT_RANDOM", 1))
    assert sorted(sum(rnd, [])) == list(range(10)) and [len(r) for r in rnd] == [3, 3, 4]
    assert rnd == rows(partition(Xi, Xi, 3, "DISJOINT_RANDOM", 1)) != rows(partition(Xi, Xi, 3, "DISJOINT_RANDOM", 2))
    ovl = rows(partition(Xi, Xi, 2, "OVERLAP_RESHUFFLE", 1))
    assert all(sorted(r) == list(range(10)) for r in ovl) and ovl[0] != ovl[1]
    contiguous = partition(Xi, Xi, 2, "DISJOINT_CONTIGUOUS", 1)
    assert np.shares_memory(contiguous[1].batch(0, 2)[0], Xi)  # contiguous batches are views
    sparse = partition(to_csr(Xi), Xi, 3, "DISJOINT_ROUND_ROBIN", 1)
    assert [p.batch(0, p.rows)[0].toarray().ravel().tolist() for p in sparse] == rows(
        partition(Xi, Xi, 3, "DISJOINT_ROUND_ROBIN", 1)
    )
    p = plans([10, 7], 3, "NBATCHES", 2)
    assert [q.batches for q in p] == [4, 3] and [q.pushes for q in p] == [2, 2]
    assert p[0].push_batches(1) == [(6, 9), (9, 10)]


@pytest.mark.parametrize("spec", ["topk:0.1", "int8"])
def test_compression_error_feedback(spec: str) -> None:
    rng = np.random.default_rng(0)
    comp = Compressor(parse_compression(spec))
    sent_sum, raw_sum = np.zeros((20, 5)), np.zeros((20, 5))
    for _ in range(30):
        g = rng.standard_normal((20, 5))
        payloads, decoded, raw, sent = comp.compress((g,))
        sent_sum += decoded[0]
        raw_sum += g
        assert raw == 800 and sent == (10 * 12 if spec.startswith("topk") else 108)
    residual = comp.residual[0]
    assert residual is not None
    assert np.allclose(sent_sum + residual, raw_sum)  # nothing is lost, only delayed
    if spec == "int8":
        assert payloads[0] is not None and payloads[0].buffers[0].dtype == np.int8  # type: ignore[union-attr]
        assert np.max(np.abs(residual)) < 0.05
    topk = Compressor(parse_compression("topk:0.001")).compress((np.array([[1.0, -5.0, 2.0]]),))
    assert topk[1][0].tolist() == [[0.0, -5.0, 0.0]]  # at least one element: the largest magnitude


def test_udf_results_are_checked() -> None:
    opts = PSOptions(utype="BSP", k=2, hyperparams=lr.hyper())

    def upd_one(model: tuple, hp: tuple, X_: np.ndarray, y_: np.ndarray) -> tuple:
        return create_list(np.zeros((8, 1)))

    def upd_shape(model: tuple, hp: tuple, X_: np.ndarray, y_: np.ndarray) -> tuple:
        return create_list(np.zeros((8, 2)), np.zeros((1, 1)))

    with pytest.raises(DaphneRuntimeError, match="upd returned 1 matrices for a model of 2"):
        paramserv(lr.model0(), X, Y, upd_one, lr.agg, opts)
    with pytest.raises(DaphneRuntimeError, match="upd returned a 8x2 matrix at position 0 for the 8x1 model matrix"):
        paramserv(lr.model0(), X, Y, upd_shape, lr.agg, opts)
    with pytest.raises(DaphneRuntimeError, match="agg must return a list of matrices"):
        paramserv(lr.model0(), X, Y, lr.upd, lambda m, h, g: 3.0, opts)


@pytest.mark.parametrize("utype", ["BSP", "ASP", "SSP", "SBP", "ALLREDUCE", "LOCALSGD"])
def test_worker_failure_is_raised_without_hang(utype: str) -> None:
    calls = [0]
    lock = threading.Lock()

    def flaky(model: tuple, hp: tuple, X_: np.ndarray, y_: np.ndarray) -> tuple:
        with lock:
            calls[0] += 1
            n = calls[0]
        if n == 5:
            raise ValueError("upd failed on purpose")
        return lr.upd(model, hp, X_, y_)

    opts = PSOptions(utype=utype, freq="BATCH", k=3, epochs=3, batchsize=2, hyperparams=lr.hyper())
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match="upd failed on purpose"):
        paramserv(lr.model0(), X, Y, flaky, lr.agg, opts)
    assert time.perf_counter() - t0 < 5
    # every paramserv worker thread has ended (other threads, such as the JIT's compile thread or the
    # scheduler's pool started by earlier tests in this process, are not the engine's)
    assert not [t for t in threading.enumerate() if t.name.startswith("daphnec-paramserv-")]


def test_mpi_mode_without_distributed_runtime_runs_local(capsys: pytest.CaptureFixture[str]) -> None:
    import daphnec.runtime.paramserv.mpi as ps_mpi

    ps_mpi._warned = False
    kw = {"utype": "BSP", "k": 2, "hyperparams": lr.hyper()}
    got = paramserv(lr.model0(), X, Y, lr.upd, lr.agg, PSOptions(mode="MPI", **kw))  # type: ignore[arg-type]
    paramserv(lr.model0(), X, Y, lr.upd, lr.agg, PSOptions(mode="MPI", **kw))  # type: ignore[arg-type]
    want = paramserv(lr.model0(), X, Y, lr.upd, lr.agg, PSOptions(**kw))  # type: ignore[arg-type]
    assert all(np.array_equal(a, b) for a, b in zip(got, want))
    assert capsys.readouterr().err.count("paramserv: mode=MPI needs") == 1
