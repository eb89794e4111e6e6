"""Run under `mpiexec -n N` (N = 2..5) with shared memory off (MPI over TCP, so that netbytes can measure what
every rank sent): rank 0 is a real `Coordinator`, ranks 1..N-1 real `Worker`s whose injected `compile_body` resolves
the shipped "IR" text to the numpy UDFs below. Rank 0 runs every communication strategy that fits N ranks in MPI
mode and compares it with single-process (LOCAL) runs of the same engine; it prints one JSON object:

- "same": {config: max |MPI - LOCAL|} for the deterministic strategies (must be exactly 0.0);
- "loss": {config: [start, final, BSP's final]} for the asynchronous ones;
- "bytes": {config: {"steps", "model", "wire": {rank: bytes}, "counted": {rank: bytes}}} for byte checks.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from types import SimpleNamespace

import numpy as np
import ps_linreg as lr
from mpi4py import MPI

from daphnec.runtime.distributed import coordinator as coord
from daphnec.runtime.distributed.protocol import make_comms
from daphnec.runtime.distributed.worker import Worker
from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.kernels.lists import create_list
from daphnec.runtime.paramserv import STATS, PSOptions, marks, paramserv

WIDE = (64, 512)
"""The byte checks' model: a 64 x 512 matrix and a 1 x 512 row (262,144 + 4,096 bytes), so that per-step headers
are well under 1 %."""


def wide_upd(model: tuple, hp: tuple, X: np.ndarray, y: np.ndarray) -> tuple:
    """A cheap gradient of the wide model that differs per batch."""
    s = float(X[:, 0].sum())
    return create_list(model[0] * 0.5 + s, model[1] * 0.25 - s)


def last_fails(model: tuple, hp: tuple, X: np.ndarray, y: np.ndarray) -> tuple:
    """Fails on a batch with a NaN label: the last worker's first batch (its partition holds the last rows), while
    the others wait for it or compute."""
    if np.isnan(y).any():
        raise DaphneRuntimeError("last worker failed")
    return lr.upd(model, hp, X, y)


def affine_upd(model: tuple, hp: tuple, X: np.ndarray, y: np.ndarray) -> tuple:
    """An affine layer's gradients: t(X) @ E (the sufficient factors X and E, with the batch as inner dimension)
    and the bias's column sums of E."""
    E = (X @ model[0] + model[1] - y) / X.shape[0]
    return create_list(X.T @ E, E.sum(axis=0, keepdims=True))


def affine_factors(model: tuple, hp: tuple, X: np.ndarray, y: np.ndarray) -> tuple:
    """`affine_upd` as the sufficient-factors pass writes it (factored = (0,)): X in place of t(X) @ E, E after."""
    E = (X @ model[0] + model[1] - y) / X.shape[0]
    return create_list(X, E.sum(axis=0, keepdims=True), E)


def affine_factors_marked(model: tuple, hp: tuple, X: np.ndarray, y: np.ndarray) -> tuple:
    """`affine_factors` as `wait-free-backprop` schedules it for `overlap=true`: the A factor (the batch) is marked
    final before anything is computed, E (the B factor, position 2) and the bias as soon as they are."""
    marks.gradient_ready(X, 0)
    E = (X @ model[0] + model[1] - y) / X.shape[0]
    marks.gradient_ready(E, 2)
    b = E.sum(axis=0, keepdims=True)
    marks.gradient_ready(b, 1)
    return create_list(X, b, E)


def weight_upd(model: tuple, hp: tuple, X: np.ndarray, y: np.ndarray) -> tuple:
    """An affine layer without a bias: its one gradient t(X) @ E, so with `sfb` every matrix of the model is
    factored and the overlap reducer has factor segments only, no bucket."""
    E = (X @ model[0] - y) / X.shape[0]
    return create_list(X.T @ E)


def weight_factors_marked(model: tuple, hp: tuple, X: np.ndarray, y: np.ndarray) -> tuple:
    """`weight_upd`'s factors variant as `wait-free-backprop` marks it: X (position 0) before anything is
    computed, E (position 1, after the model's one gradient) when it is final."""
    marks.gradient_ready(X, 0)
    E = (X @ model[0] - y) / X.shape[0]
    marks.gradient_ready(E, 1)
    return create_list(X, E)


def weight_agg(model: tuple, hp: tuple, grads: tuple) -> tuple:
    """`lr.agg` for the one-matrix model."""
    return (create_list(model[0] - hp[0][0, 0] * grads[0]),)


FUNCTIONS = {"upd": lr.upd, "agg": lr.agg, "wide_upd": wide_upd, "last_fails": last_fails,
             "affine_upd": affine_upd, "affine_factors": affine_factors,
             "affine_factors_marked": affine_factors_marked, "weight_upd": weight_upd, "weight_agg": weight_agg,
             "weight_factors_marked": weight_factors_marked}  # fmt: skip


def compile_body(text: str) -> SimpleNamespace:
    return SimpleNamespace(functions=FUNCTIONS)


def diff(a: tuple, b: tuple) -> float:
    return max(float(np.max(np.abs(np.asarray(x) - np.asarray(y)))) for x, y in zip(a, b))


def main() -> int:
    comms = make_comms(MPI.COMM_WORLD)
    if comms.rank != 0:
        return Worker(comms, compile_body, lambda cfg: None).serve()
    c = coord.Coordinator(comms)
    coord.ACTIVE = c
    c.start()
    n = comms.size
    k = n - 1
    out: dict[str, dict[str, object]] = {"same": {}, "loss": {}, "bytes": {}}
    X, y = lr.data(n=300)
    m0, hp = lr.model0(), lr.hyper()

    def run(mode: str, ws: int, upd: object = lr.upd, model: tuple = m0, features: object = X, labels: object = y,
            factors: object = affine_factors, agg: object = lr.agg, **kw: object) -> tuple:  # fmt: skip
        opts = {"utype": "BSP", "freq": "BATCH", "epochs": 2, "batchsize": 16, "hyperparams": hp, "k": ws}
        opts.update(kw)
        names = {f: n for n, f in FUNCTIONS.items()}  # the shipped "IR" text of each UDF (compile_body)
        name = names.get(upd, "upd")  # type: ignore[call-overload]
        sf = (factors.__name__, factors) if opts.get("sfb") else ("", None)  # type: ignore[attr-defined]
        return paramserv(model, features, labels, upd, agg, PSOptions(mode=mode, **opts),  # type: ignore[arg-type]
                         shipped=("t", name, names[agg], sf[0]), factors=sf[1])  # fmt: skip

    try:
        same: list[tuple[str, int, dict[str, object], dict[str, object]]] = [
            ("BSP", k, {}, {}),
            ("SSP s=0", k, {"utype": "SSP", "staleness": 0}, {}),
        ]
        for a in ("ALLGATHER", "RING", "TREE", "MASTER"):
            same.append((f"ALLREDUCE {a}", k, {"utype": "ALLREDUCE", "allreduce": a}, {}))
        for a in ("RING", "TREE"):  # buckets of 16 bytes: one per value of the 3 x 1 and 1 x 1 model; 289 rows
            # leave the last partitions a batch short: a rank without a batch replays the recorded bucket order
            uneven = {"features": X[:289], "labels": y[:289]}
            same.append((f"ALLREDUCE {a} overlap", k, {"utype": "ALLREDUCE", "allreduce": a, "overlap": True,
                                                       "bucket": 16, **uneven}, uneven))  # fmt: skip
        same.append(("ALLREDUCE threads=2", k, {"utype": "ALLREDUCE", "allreduce": "RING", "threads": 2},
                     {"k": 2 * k}))  # fmt: skip
        same.append(("LOCALSGD RING", k, {"utype": "LOCALSGD", "allreduce": "RING", "period": 3},
                     {"utype": "LOCALSGD", "period": 3}))  # fmt: skip
        same.append(("GOSSIP RING", k, {"utype": "GOSSIP"}, {"utype": "GOSSIP"}))
        same.append(("GOSSIP RANDOM", k, {"utype": "GOSSIP", "topology": "RANDOM"},
                     {"utype": "GOSSIP", "topology": "RANDOM"}))  # fmt: skip
        same.append(("BSP colocated", k, {"colocated": True}, {}))
        if k >= 2:
            same.append(("BSP servers=2", k - 1, {"servers": 2}, {}))
        for name, ws, mpi_kw, local_kw in same:
            ref = run("LOCAL", ws, **{**local_kw, "k": local_kw.get("k", ws)})
            got = run("MPI", ws, **mpi_kw)
            out["same"][name] = diff(got, ref)
        start = lr.mse(m0, X, y)
        bsp = lr.mse(run("LOCAL", k, epochs=3), X, y)
        asyncs = [("ASP", {"utype": "ASP"}), ("ASP delta_max", {"utype": "ASP", "delta_max": 0.05}),
                  ("SSP colocated", {"utype": "SSP", "staleness": 2, "colocated": True}),
                  ("EASGD", {"utype": "EASGD", "period": 2}),
                  ("EASGD colocated", {"utype": "EASGD", "colocated": True})]  # fmt: skip
        for name, kw in asyncs:
            got = run("MPI", k, epochs=3, **kw)
            out["loss"][name] = [start, lr.mse(got, X, y), bsp]
        # bytes: the wide model, 4 steps per epoch and worker (64 rows each)
        wide = create_list(np.ones(WIDE), np.ones((1, WIDE[1])))
        Xw = np.ones((64 * k, 8))
        byte_runs = [("BSP", {}), ("ALLREDUCE ALLGATHER", {"utype": "ALLREDUCE"})]
        byte_runs += [(f"ALLREDUCE {a}", {"utype": "ALLREDUCE", "allreduce": a}) for a in ("RING", "TREE", "MASTER")]
        byte_runs += [("BSP colocated", {"colocated": True}), ("GOSSIP RING", {"utype": "GOSSIP"})]
        byte_runs += [("ALLREDUCE RING overlap", {"utype": "ALLREDUCE", "overlap": True, "bucket": 65536})]
        for name, kw in byte_runs:
            run("MPI", k, upd=wide_upd, model=wide, features=Xw, labels=Xw[:, :1], epochs=1, batchsize=16, **kw)
            call = STATS.last
            out["bytes"][name] = {"steps": 4, "model": sum(int(m.nbytes) for m in wide),
                                  "wire": call.wire, "stats": dataclasses.asdict(call.total)}  # fmt: skip
        # sufficient factors (sfb): the affine layer's 64 x 512 weight gradient travels as X and E (16 x 64 and
        # 16 x 512 per batch), the bias by the ring; equal to LOCAL BSP (over MPI within 1e-12 relative: every rank
        # rebuilds the sum as one product of the stacked factors), and its bytes are costs.sfb_per_step's
        rng = np.random.default_rng(7)
        Xs, ys = rng.uniform(-1, 1, (64 * k, 64)), rng.uniform(-1, 1, (64 * k, 512))
        affine = create_list(np.zeros((64, 512)), np.zeros((1, 512)))
        sfb = {"utype": "ALLREDUCE", "allreduce": "RING", "sfb": True, "factored": (0,), "epochs": 1}
        bsp = run("LOCAL", k, upd=affine_upd, model=affine, features=Xs, labels=ys, epochs=1)
        out["same"]["ALLREDUCE sfb, LOCAL"] = diff(run("LOCAL", k, upd=affine_upd, model=affine, features=Xs,
                                                       labels=ys, **sfb), bsp)  # fmt: skip
        scale = max(float(np.max(np.abs(np.asarray(m)))) for m in bsp)
        out["close"] = {"ALLREDUCE sfb": diff(run("MPI", k, upd=affine_upd, model=affine, features=Xs, labels=ys,
                                                  **sfb), bsp) / scale}  # fmt: skip
        call = STATS.last
        out["bytes"]["ALLREDUCE sfb"] = {"steps": 4, "model": sum(int(m.nbytes) for m in affine), "wire": call.wire,
                                         "stats": dataclasses.asdict(call.total)}  # fmt: skip
        # with overlap=true each factor goes by its own all-gather as soon as it is marked final (X before the
        # step computes anything), the bias by the ring bucket by bucket: the same sums, the same bytes. On 48 k + 1
        # rows worker 0's last batch has 1 row (K < batchsize: padded) and the other workers have a batch fewer
        # (their ranks replay the recorded order with empty factors)
        marked = {**sfb, "overlap": True, "bucket": 1024, "factors": affine_factors_marked}
        short = {"features": Xs[: 48 * k + 1], "labels": ys[: 48 * k + 1]}
        bsp_short = run("LOCAL", k, upd=affine_upd, model=affine, epochs=1, **short)  # type: ignore[arg-type]
        got = run("MPI", k, upd=affine_upd, model=affine, **short, **marked)  # type: ignore[arg-type]
        out["close"]["ALLREDUCE sfb overlap"] = diff(got, bsp_short) / scale
        # a factors variant without marks: every factor is late, encoded into its segments when upd returns
        got = run("MPI", k, upd=affine_upd, model=affine, **short, **{**marked, "factors": affine_factors})  # type: ignore[arg-type]
        out["close"]["ALLREDUCE sfb overlap, unmarked"] = diff(got, bsp_short) / scale
        # every matrix factored (a weight without a bias): factor segments only, no bucket, the same sums
        weight = create_list(np.zeros((64, 512)))
        whole_w = {"upd": weight_upd, "agg": weight_agg, "model": weight, **short}
        bsp_w = run("LOCAL", k, epochs=1, **whole_w)  # type: ignore[arg-type]
        got_w = run("MPI", k, **whole_w, **{**marked, "factors": weight_factors_marked})  # type: ignore[arg-type]
        scale_w = max(float(np.max(np.abs(np.asarray(m)))) for m in bsp_w)
        out["close"]["ALLREDUCE sfb overlap, every matrix factored"] = diff(got_w, bsp_w) / scale_w
        run("MPI", k, upd=affine_upd, model=affine, features=Xs, labels=ys, **marked)
        call = STATS.last
        out["bytes"]["ALLREDUCE sfb overlap"] = {"steps": 4, "model": sum(int(m.nbytes) for m in affine),
                                                 "wire": call.wire, "stats": dataclasses.asdict(call.total)}
        # a worker fails: the call raises its error, every rank ends, and the next call runs normally
        out["errors"] = {}
        failing = [
            ("ALLREDUCE RING", {"utype": "ALLREDUCE", "allreduce": "RING"}),
            ("ALLREDUCE TREE threads=2", {"utype": "ALLREDUCE", "allreduce": "TREE", "threads": 2}),
            ("ALLREDUCE RING overlap", {"utype": "ALLREDUCE", "overlap": True, "bucket": 16}),
            ("GOSSIP", {"utype": "GOSSIP"}),
            ("EASGD", {"utype": "EASGD", "period": 1}),
            ("BSP colocated", {"colocated": True}),
            ("ASP colocated", {"utype": "ASP", "colocated": True}),
        ]
        if k >= 2:
            failing.append(("BSP servers=2", {"servers": 2}))
        for name, kw in failing:
            ws = k - 1 if "servers" in kw else k
            y_fail = y.copy()
            y_fail[(ws - 1) * len(y) // ws] = np.nan  # the first row of the last worker's partition
            try:
                run("MPI", ws, upd=last_fails, labels=y_fail, epochs=3, **kw)
                out["errors"][name] = "no error"
            except DaphneRuntimeError as e:
                out["errors"][name] = str(e)
            out["same"][f"after {name}"] = diff(run("MPI", k, utype="ALLREDUCE", allreduce="RING"), run("LOCAL", k))
    except Exception as e:  # noqa: BLE001 - reported to the test
        import traceback

        out["exception"] = {"text": traceback.format_exc() + str(e)}
    c.detach()
    coord.ACTIVE = None
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
