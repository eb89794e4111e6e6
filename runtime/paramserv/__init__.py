"""The `paramserv` engine: parameter-server training of a model list with DaphneDSL update/aggregation functions.

    paramserv(model, features, labels, upd, agg, options, val_features=None, val_labels=None, shipped=None)
        -> DaphneList  (the trained model)

Pure runtime (the compiler side is the lead's `paramserv` builtin). Modules, one concept each:

| module | concept |
|---|---|
| options.py | `PSOptions`: the named arguments, defaults, validation |
| partition.py | the data partitioning schemes and the batch/clock plan |
| udf.py | calling `upd`/`agg`, checking their results |
| reduction.py | the one summation order (a binomial tree over the workers) and the schedules that follow it |
| topology.py | GOSSIP's neighbourhoods |
| server.py | the server strategies BSP, SSP, ASP, SBP, EASGD's master, shards (transport-agnostic) |
| worker.py | the worker loops (server strategies, ALLREDUCE, LOCALSGD, GOSSIP, EASGD), the sharded endpoint |
| local.py | LOCAL mode: worker threads, the locked server hubs, the barrier reducer and mixer |
| mpi.py | MPI mode, rank 0: jobs out, serving shard 0, results in |
| mpi_worker.py | MPI mode, the other ranks: worker loops, dedicated and co-located server shards |
| collectives.py | MPI mode: the all-reduce algorithms and gossip exchanges among worker ranks, byte by byte |
| netbytes.py | the bytes a rank really sent over TCP |
| compression.py | top-k / int8 gradient compression with error feedback |
| stats.py | per-call, per-epoch statistics and their report |

`val_features`/`val_labels` with `val` give a per-epoch validation loss in the statistics.
See docs/paramserv.md for the semantics.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

import numpy as np

from daphnec.runtime import statistics
from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.kernels.lists import DaphneList, element_kind
from daphnec.runtime.paramserv import mpi
from daphnec.runtime.paramserv import stats as _stats
from daphnec.runtime.paramserv.local import AbortGroup, LocalHub, LocalMixer, LocalReducer, run_threads
from daphnec.runtime.paramserv.options import PSOptions
from daphnec.runtime.paramserv.partition import Partition, partition, plans
from daphnec.runtime.paramserv.server import make_shard, model_shards
from daphnec.runtime.paramserv.stats import STATS, CallStats, EpochLog, collect, new_call
from daphnec.runtime.paramserv.udf import as_list
from daphnec.runtime.paramserv.worker import (
    Endpoint,
    Job,
    ShardedEndpoint,
    run_allreduce_worker,
    run_easgd_worker,
    run_gossip_worker,
    run_localsgd_worker,
    run_server_worker,
)
from daphnec.runtime.values import is_csr

__all__ = ["paramserv", "PSOptions", "STATS"]


def paramserv(model: tuple, features: object, labels: object, upd: Callable[..., object],
              agg: Callable[..., object], options: PSOptions, val_features: object = None,
              val_labels: object = None, shipped: tuple[str, ...] | None = None,
              val: Callable[..., object] | None = None, factors: Callable[..., object] | None = None
              ) -> DaphneList:  # fmt: skip
    """Train `model` (a list of matrices) with `upd`/`agg` on (features, labels); see the module docstring.
    `val(model, hyperparams, val_features, val_labels) -> loss`, if given, is evaluated on the model at the end
    of every epoch after the run (the "val loss" column of the statistics; it does not slow training down).
    `factors` (with `options.factored`): upd's sufficient-factor variant, used with `sfb=true`."""
    t0 = time.perf_counter()
    model_list = check_inputs(model, features, labels, val_features, val_labels)
    if val is not None and val_features is None:
        raise DaphneRuntimeError("paramserv: val needs val_features and val_labels")
    hp = hyperparams_list(options.hyperparams)
    result, call = None, None
    if options.mode == "MPI":
        runtime = mpi.server_runtime()
        if runtime is not None:
            result, call = mpi.run_server(runtime, model_list, features, labels, upd, agg, hp, options, shipped)
    if result is None:
        options.validate(features.shape[0])  # type: ignore[attr-defined]
        result, call = run_local(model_list, features, labels, (upd, factors), agg, hp, options)
    assert call is not None
    call.seconds = time.perf_counter() - t0
    if val is not None:
        validate_epochs(call, result, val, hp, val_features, val_labels)
    return _finish(result, call, model_list)


def validate_epochs(call: CallStats, final: DaphneList, val: Callable[..., object], hp: DaphneList,
                    X: object, y: object) -> None:  # fmt: skip
    """The validation loss of each epoch's final model (the last epoch's is the result's)."""
    models = list(call.epoch_models[: len(call.epochs)])
    if len(models) < len(call.epochs):
        models += [None] * (len(call.epochs) - len(models))
    models[-1] = final
    for e, m in zip(call.epochs, models):
        if m is not None:
            e.val_loss = _scalar(val(m, hp, X, y))


def _scalar(v: object) -> float:
    """A loss as a float: a scalar, or a 1x1 matrix (a 1-tuple of either, as generated code may return it)."""
    if isinstance(v, tuple) and len(v) == 1:
        v = v[0]
    a = np.asarray(v, dtype=np.float64)
    if a.size != 1:
        raise DaphneRuntimeError(f"paramserv: val must return one number (the loss), got a {a.shape} matrix")
    return float(a.reshape(()))


def _finish(result: DaphneList, call: CallStats, model: DaphneList) -> DaphneList:
    STATS.add(call)
    if statistics.PARAMSERV_TABLES:
        sys.stderr.write(_stats.format_call(len(STATS.calls), call) + "\n")
        sys.stderr.flush()
    return DaphneList(tuple(result), model.elem_kind)


def _is_matrix(x: object) -> bool:
    return isinstance(x, np.ndarray) or is_csr(x)


def check_inputs(model: tuple, features: object, labels: object, val_features: object = None,
                 val_labels: object = None) -> DaphneList:  # fmt: skip
    """The model as a DaphneList; clear errors for inputs the engine cannot train on."""
    if not isinstance(model, (tuple, list)) or not model:
        raise DaphneRuntimeError("paramserv: model must be a non-empty list of matrices")
    for j, m in enumerate(model):
        if not _is_matrix(m):
            raise DaphneRuntimeError(f"paramserv: model element {j} is not a matrix")
    for name, x in (("features", features), ("labels", labels)):
        if not _is_matrix(x):
            raise DaphneRuntimeError(f"paramserv: {name} must be a matrix, got {type(x).__name__}")
    if features.shape[0] != labels.shape[0]:  # type: ignore[attr-defined]
        raise DaphneRuntimeError(f"paramserv: features has {features.shape[0]} rows but labels has "  # type: ignore[attr-defined]
                                 f"{labels.shape[0]}")  # type: ignore[attr-defined]  # fmt: skip
    if (val_features is None) != (val_labels is None):
        raise DaphneRuntimeError("paramserv: val_features and val_labels must be given together")
    if val_features is not None and val_features.shape[0] != val_labels.shape[0]:  # type: ignore[attr-defined]
        raise DaphneRuntimeError("paramserv: val_features and val_labels differ in their number of rows")
    if isinstance(model, DaphneList):
        return model
    return DaphneList(tuple(model), element_kind(model[0]))


def hyperparams_list(hp: object) -> DaphneList:
    return hp if isinstance(hp, DaphneList) else as_list(tuple(hp or ()))  # type: ignore[arg-type]


Udfs = tuple[Callable[..., object], Callable[..., object] | None]
"""`upd` and its sufficient-factor variant (None without one)."""


def make_jobs(model: DaphneList, parts: list[Partition], udfs: Udfs,
              agg: Callable[..., object], hp: DaphneList, opts: PSOptions) -> list[Job]:  # fmt: skip
    """One job per worker; `udfs` = (upd, its factors function or None)."""
    ps = plans([p.rows for p in parts], opts.batchsize, opts.freq, opts.nbatches)
    pushes = [p.pushes for p in ps]
    upd, factors = udfs
    factors = factors if opts.sfb else None
    return [Job(i, model, hp, upd, agg, parts[i], ps[i], pushes, opts, factors=factors) for i in range(len(parts))]


def run_local(model: DaphneList, X: object, y: object, udfs: Udfs,
              agg: Callable[..., object], hp: DaphneList, opts: PSOptions) -> tuple[DaphneList, CallStats]:  # fmt: skip
    """LOCAL mode: k (* threads) worker threads (local.py); `udfs` = (upd, its factors function or None)."""
    n = X.shape[0]  # type: ignore[attr-defined]
    k = opts.workers(n)
    parts = partition(X, y, k, opts.scheme, opts.effective_seed)
    jobs = make_jobs(model, parts, udfs, agg, hp, opts)
    call = new_call(opts, "LOCAL", k)
    t0 = time.perf_counter()
    if opts.has_server:
        return _run_local_servers(model, hp, agg, opts, jobs, call, t0)
    reducer = LocalReducer(k)
    for j in jobs:
        j.aborted = reducer.aborted
    if opts.utype == "GOSSIP":
        mixer = LocalMixer(reducer, opts.neighbourhood, opts.effective_seed)
        results = run_threads(k, lambda i: run_gossip_worker(jobs[i], mixer, reducer), reducer.abort)
    else:
        loop = run_allreduce_worker if opts.utype == "ALLREDUCE" else run_localsgd_worker
        results = run_threads(k, lambda i: loop(jobs[i], reducer), reducer.abort)
    collect(call, [j.log.epochs for j in jobs], t0, jobs[0].epoch_ends, opts.epochs, jobs[0].epoch_models)
    return results[0], call  # type: ignore[return-value]


def _run_local_servers(model: DaphneList, hp: DaphneList, agg: Callable[..., object], opts: PSOptions,
                       jobs: list[Job], call: CallStats, t0: float) -> tuple[DaphneList, CallStats]:  # fmt: skip
    """Server strategies in LOCAL mode: one hub per shard, shared by the worker threads."""
    k = len(jobs)
    ranges = model_shards(model, opts, k)
    logs = [EpochLog(opts.epochs) for _ in ranges]
    servers = [make_shard(opts, model, hp, agg, jobs[0].pushes, r, log) for r, log in zip(ranges, logs)]
    group = AbortGroup()
    hubs = [LocalHub(s, group) for s in servers]
    for j in jobs:
        j.aborted = group.aborted
    loop = run_easgd_worker if opts.utype == "EASGD" else run_server_worker

    def endpoint() -> Endpoint:
        return hubs[0] if len(hubs) == 1 else ShardedEndpoint(hubs, ranges, model)  # type: ignore[return-value]

    try:
        run_threads(k, lambda i: loop(jobs[i], endpoint()), group.abort)
    finally:
        for s in servers:
            s.finish()
    ends = [max(s.epoch_ends[e] for s in servers) for e in range(opts.epochs)]
    models = [joined(model, [s.epoch_models[e] for s in servers]) for e in range(opts.epochs)]
    collect(call, [logs[0].epochs] + [j.log.epochs for j in jobs], t0, ends, opts.epochs, models)
    return joined(model, [s.model for s in servers]), call


def joined(model: DaphneList, parts: list[DaphneList]) -> DaphneList:
    """The model from its shards' matrices (in shard order)."""
    return DaphneList(tuple(m for p in parts for m in p), model.elem_kind)
