"""Distributed training over a real (emulated) network: paramserv's communication strategies on real MPI ranks.

    .venv/bin/python bench/dist_train_bench.py [--ranks 3,4,5] [--rates 1gbit,10gbit] [--models fc,lenet]
        [--strategies NAME,...] [--repeat 1] [--baseline DIR | --no-baseline] [--no-systemds] [--rows 2048]
        [--json FILE]

Every run is `../shared/tools/netem --rate R -- mpiexec -n N daphnec --distributed --dist_backend=MPI
--statistics <script>`: the ranks talk over TCP on a loopback link shaped to R (1 Gbit/s ~ 117 MB/s, 10 Gbit/s ~
600 MB/s here, the CPU's limit), as the nodes of a cluster sharing one link would. netem needs root (a network
namespace); without it the bench says so and runs on shared memory (rate "shm"). The script trains one epoch after
a short warm-up call (the workers compile the shipped functions once), and prints the paramserv call's seconds,
the loss and the accuracy on the training rows.

Per run the table shows: seconds per epoch; the bytes the busiest worker rank sent per step, measured on its
sockets by the kernel (runtime/paramserv/netbytes.py), next to the cost formula (runtime/paramserv/costs.py);
final loss and accuracy; a worker's compute seconds C and communication seconds N (means over the workers) and
the overlap coefficient alpha = (N + C - T) / min(N, C) (0 = no overlap, 1 = perfect; below 0 when the epoch has
time in neither, e.g. the server's sum and `agg` while the link is idle, or a barrier) from the run's own N and C,
and "alpha0" from the N and C of the same strategy without overlap in the same table (CARAMEL's reading: the
communication and computation times measured apart, so that an overlapped run's slower compute and its waits
counted as communication do not raise it; empty when that run is not in the table). T is the epochs' seconds from
the `--statistics` table (the epoch rows: from after the data is shipped to the workers until worker 0's last
update; the seconds per epoch, the script's clock around the call, also hold shipping the data and the model to
the workers and the model back, 0.5 s of the FC MLP's call at 1 Gbit/s); "T vs AR" is today's ALLREDUCE's T over
this run's; "link" the MB/s all ranks together sent during the epochs (the sum of the ranks' TCP bytes over T;
netem's shaped link carries ~118 MB/s at 1 Gbit/s, so a value near it means the epoch is bound by the link's
bytes, whatever overlaps). N is, for the parameter-server
strategies, the time a worker's pushes and pulls are on the wire (the union of their intervals over the shards:
runtime/paramserv/stats.py `Flights`), for ALLREDUCE with `overlap=true` the communication thread's busy time.
`--timeline FILE` writes every worker's per-step intervals (compute, and push/pull per matrix; for ALLREDUCE the
reduction's levels and steps, stats.py `Flights`) to FILE (the test hook DAPHNEC_PS_TIMELINE), to see what
serialises; `--baseline-all` adds, for every selected `overlap` strategy,
the same strategy without overlap. The model beyond this machine is bench/dist_train_model.py. The "today"
rows run the code of `--baseline` (default: `git archive main` into a temporary folder) in the same session, so
the ratios compare like with like on this shared, noisy machine.

Models (`--models`; each a set of DaphneDSL functions, so that a network can be added by one entry in MODELS):
- fc: the FC-heavy MLP of issue 22, 784-1024-1024-10 (1.86 M f64 parameters), batch 64, 2,048 rows of synthetic
  digit-sized data (examples/paramserv/models.daph: classes_data, fc_*).
- lenet: daphnec's shipped LeNet (nn/networks/lenet.daph: 5x5 convs of 32 and 64 filters, 512 hidden units, 1.66 M
  f64 parameters, 96 % of them in the first affine layer) on 28 x 28 synthetic images, batch 64; upd/agg from the
  nn layers in examples/paramserv/lenet.daph. Far more compute per byte than fc: alpha is its interesting number.

SystemDS (`--no-systemds` to skip): its paramserv on the same MLP in LOCAL mode with k = 2 (its distributed mode
needs Spark), as a peer for the per-epoch time; ../shared/peers/systemds provides the jar (never its code).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
SHARED = next((p / "shared" for p in (ROOT.parent, ROOT.parent.parent) if (p / "shared").is_dir()), ROOT.parent)
"""../shared next to the main checkout (a worktree sits one level deeper)."""
NETEM = SHARED / "tools" / "netem"
PEER = SHARED / "peers" / "systemds"


@dataclasses.dataclass(frozen=True)
class Model:
    """A network to train: DaphneDSL expressions over the imported module `m`."""

    name: str
    module: Path
    data: str
    """Statement(s) defining X and y for `rows` rows."""
    init: str
    upd: str
    agg: str
    loss: str
    accuracy: str
    lr: float
    """The step size on the mean gradient of a step: strategies that sum k gradients get lr / k (SystemDS's BSP
    sums), those that step on one worker's gradient get lr."""
    shapes: tuple[tuple[int, int], ...]
    """The model's matrices (for the byte formulas)."""
    factored: tuple[int, ...] = ()
    """The gradients the sufficient-factors pass finds as t(A) @ B over the batch (for sfb's byte formula)."""


MODELS = {
    "fc": Model(
        "fc",
        ROOT / "examples" / "paramserv" / "models.daph",
        "X, y = m.classes_data({rows}, 784, 10);",
        "m.fc_init(784, 1024, 1024, 10)",
        "m.fc_gradients",
        "m.sgd",
        "m.fc_loss(trained, X, y)",
        "m.fc_accuracy(trained, X, y)",
        0.4,
        ((784, 1024), (1, 1024), (1024, 1024), (1, 1024), (1024, 10), (1, 10)),
        (0, 2, 4),
    ),  # fmt: skip
    "lenet": Model(
        "lenet",
        ROOT / "examples" / "paramserv" / "lenet.daph",
        "X, y = m.lenet_data({rows});",
        "m.lenet_init()",
        "m.lenet_gradients",
        "m.lenet_sgd",
        "m.lenet_loss(trained, X, y)",
        "m.lenet_accuracy(trained, X, y)",
        0.05,
        ((32, 25), (32, 1), (64, 800), (64, 1), (3136, 512), (1, 512), (512, 10), (1, 10)),
        (4, 6),
    ),
}


@dataclasses.dataclass(frozen=True)
class Strategy:
    name: str
    options: dict[str, object]
    today: bool = False
    """Also run with the baseline code (today's BSP and ALLREDUCE)."""

    def args(self) -> str:
        out = []
        for k, v in self.options.items():
            out.append(f'{k}="{v}"' if isinstance(v, str) else f"{k}={str(v).lower()}")
        return ", ".join(out)


STRATEGIES = [
    Strategy("BSP", {"utype": "BSP"}, today=True),
    Strategy("BSP servers=2", {"utype": "BSP", "servers": 2}),
    Strategy("BSP colocated", {"utype": "BSP", "colocated": True}),
    Strategy("BSP overlap", {"utype": "BSP", "overlap": True}),
    Strategy("BSP servers=2 overlap", {"utype": "BSP", "servers": 2, "overlap": True}),
    Strategy("BSP colocated overlap", {"utype": "BSP", "colocated": True, "overlap": True}),
    Strategy("ALLREDUCE ALLGATHER", {"utype": "ALLREDUCE"}, today=True),
    Strategy("ALLREDUCE RING", {"utype": "ALLREDUCE", "allreduce": "RING"}),
    Strategy("ALLREDUCE TREE", {"utype": "ALLREDUCE", "allreduce": "TREE"}),
    Strategy("ALLREDUCE MASTER", {"utype": "ALLREDUCE", "allreduce": "MASTER"}),
    Strategy("ALLREDUCE RING sfb", {"utype": "ALLREDUCE", "allreduce": "RING", "sfb": True}),
    Strategy("ALLREDUCE RING overlap", {"utype": "ALLREDUCE", "allreduce": "RING", "overlap": True}),
    Strategy("ALLREDUCE RING sfb overlap", {"utype": "ALLREDUCE", "allreduce": "RING", "sfb": True, "overlap": True}),
    Strategy("BSP sfb", {"utype": "BSP", "sfb": True}),
    Strategy("BSP sfb overlap", {"utype": "BSP", "sfb": True, "overlap": True}),
    Strategy("GOSSIP RING", {"utype": "GOSSIP"}),
    Strategy("EASGD period=4", {"utype": "EASGD", "period": 4}),
]


def script(model: Model, rows: int, strategy: Strategy, batch: int, k: int, mode: str = "MPI") -> str:
    """Warm-up (64 rows per worker rank, so every worker compiles the functions), then one timed epoch."""
    local = strategy.options["utype"] in ("GOSSIP", "EASGD", "LOCALSGD")
    lr = model.lr if local else model.lr / k
    workers = f", k={k}" if mode == "LOCAL" else ""
    common = (f"upd={model.upd}, agg={model.agg}, hyperparams=createList(as.matrix({lr!r})), freq=\"BATCH\", "
              f"mode=\"{mode}\"{workers}, epochs=1, batchsize={batch}")  # fmt: skip
    opts = strategy.args()
    return f"""import "{model.module}" as "m";
{model.data.format(rows=rows)}
model = {model.init};
Xw = X[0:256, ];
yw = y[0:256, ];
warm = paramserv(model=model, features=Xw, labels=yw, {common}, {opts});
t0 = now();
trained = paramserv(model=model, features=X, labels=y, {common}, {opts});
t1 = now();
print("SECONDS " + ((t1 - t0) / 1e9));
print("LOSS " + {model.loss});
print("ACCURACY " + {model.accuracy});
"""


@dataclasses.dataclass
class Run:
    model: str
    rate: str
    ranks: int
    strategy: str
    code: str
    """"new" or "today"."""
    seconds: float = math.nan
    loss: float = math.nan
    accuracy: float = math.nan
    k: int = 0
    steps: int = 0
    wire: dict[int, int] = dataclasses.field(default_factory=dict)
    formula: list[float] = dataclasses.field(default_factory=list)
    alpha: float = math.nan
    epoch: float = math.nan
    """T: the epoch's seconds in the statistics table (after the data is shipped)."""
    compute: float = math.nan
    """Seconds a worker computed (upd, agg), the mean over the workers."""
    comm: float = math.nan
    """Seconds a worker communicated (push to answer, collectives), the mean over the workers."""
    error: str = ""

    @property
    def worker_bytes(self) -> float:
        """The most bytes a worker rank sent per step (measured)."""
        ws = [b for r, b in self.wire.items() if 1 <= r <= self.k]
        return max(ws) / self.steps if ws and max(ws) > 0 and self.steps else math.nan

    @property
    def worker_formula(self) -> float:
        return max(self.formula[1 : self.k + 1]) if self.formula else math.nan


def netem_works() -> str:
    """ "" if netem can shape a link here, else why not."""
    if not NETEM.exists():
        return f"{NETEM} is missing"
    if os.geteuid() != 0:
        return "netem needs root (a network namespace)"
    res = subprocess.run([str(NETEM), "--rate", "1gbit", "--", "true"], capture_output=True, text=True, check=False)
    return "" if res.returncode == 0 else f"netem failed: {res.stderr.strip()[-200:]}"


def parse_stats(err: str) -> tuple[dict[int, int], float, float, int, float]:
    """From the last `--statistics` table: TCP bytes per rank, compute and communication seconds (summed over the
    workers), updates, the seconds of the epochs (T: the sum of the epoch rows; the "total" row's seconds are the
    whole call's, which also hold shipping the data and the model to the workers and the result back)."""
    wire: dict[int, int] = {}
    for line in err.splitlines():
        if line.strip().startswith("sent over TCP"):
            wire = {int(r): round(float(mb) * 1e6) for r, mb in re.findall(r"rank (\d+) ([\d.]+)", line)}
    calls = err.split("paramserv call ")
    rows = [ln.split() for ln in calls[-1].splitlines()[2:]] if len(calls) > 1 else []
    totals = [r for r in rows if r[:1] == ["total"]]
    if not totals:
        return wire, math.nan, math.nan, 0, math.nan
    t = totals[-1]
    epochs = sum(float(r[1]) for r in rows[: rows.index(t)] if r[:1] and r[0].isdigit())
    return (wire, float(t[10]) if len(t) > 11 else math.nan, float(t[11]) if len(t) > 11 else math.nan, int(t[2]),
            epochs)  # fmt: skip


def shard_bytes(model: Model, options: dict[str, object], k: int) -> list[float]:
    from daphnec.runtime.paramserv.options import PSOptions
    from daphnec.runtime.paramserv.server import model_shards

    class _M:
        def __init__(self, shape: tuple[int, int]):
            self.nbytes = shape[0] * shape[1] * 8

    opts = PSOptions(**{k_: v for k_, v in options.items()})  # type: ignore[arg-type]
    mats = [_M(s) for s in model.shapes]
    return [float(sum(m.nbytes for m in mats[a:b])) for a, b in model_shards(mats, opts, k)]


def formula(model: Model, strategy: Strategy, k: int, steps: int, batch: int, rows: int = 0) -> list[float]:
    """Bytes per step (averaged over the epoch, edges included) each rank sends by the cost model."""
    from daphnec.runtime.paramserv import costs

    o = strategy.options
    w = float(sum(a * b for a, b in model.shapes) * 8)
    utype = str(o["utype"])
    if o.get("sfb") and utype != "ALLREDUCE":  # the workers push factors to the server(s), which pull whole
        assert not o.get("colocated"), "the bench's formula for sfb with servers covers dedicated servers"
        chosen = [j for j in model.factored if costs.sfb_wins("PS", k, batch, model.shapes[j], 8)]
        largest = math.ceil(rows / k) if rows else steps * batch  # the busiest worker's partition
        sizes = [min(batch, largest - b) for b in range(0, largest, batch)]  # its batches: the last may be short
        saved = sum(model.shapes[j][0] * model.shapes[j][1] * 8 - costs.factor_bytes(K, model.shapes[j], 8)
                    for j in chosen for K in sizes) / len(sizes)  # fmt: skip
        plain = costs.per_epoch(utype, k, w, steps, shards=shard_bytes(model, o, k) if int(o.get("servers", 1)) > 1
                                else ())  # fmt: skip
        return [b / steps - (saved if 1 <= r <= k else 0.0) for r, b in enumerate(plain)]
    if o.get("sfb"):  # Poseidon's choice per matrix, as the workers make it
        algorithm = str(o.get("allreduce", "ALLGATHER"))
        chosen = [j for j in model.factored if costs.sfb_wins(algorithm, k, batch, model.shapes[j], 8)]
        return costs.sfb_per_step(algorithm, k, batch, model.shapes, 8, chosen)
    sharded = utype in ("BSP", "SSP", "ASP", "EASGD") and (int(o.get("servers", 1)) > 1 or bool(o.get("colocated")))
    epoch = costs.per_epoch(utype, k, w, steps, str(o.get("allreduce", "ALLGATHER")),
                            shard_bytes(model, o, k) if sharded else (), bool(o.get("colocated")),
                            int(o.get("period", 1)), str(o.get("topology", "RING")))  # fmt: skip
    return [b / steps for b in epoch]


def steps_per_epoch(rows: int, k: int, batch: int) -> int:
    """Clocks of an epoch: the batches of the largest partition (ceil(rows / k) rows)."""
    return math.ceil(math.ceil(rows / k) / batch)


def run_one(tmp: Path, model: Model, rows: int, batch: int, rate: str, ranks: int, strategy: Strategy,
            baseline: Path | None, timeout: float, timeline: Path | None = None) -> Run:  # fmt: skip
    code = "today" if baseline is not None else "new"
    run = Run(model.name, rate, ranks, strategy.name, code)
    k = ranks - 1 - (int(strategy.options.get("servers", 1)) - 1 if not strategy.options.get("colocated") else 0)
    if rate == "local":  # one process, k = 2 threads: next to SystemDS's LOCAL paramserv
        k = 2
    run.k = k
    run.steps = steps_per_epoch(rows, k, batch)
    run.formula = formula(model, strategy, k, run.steps, batch, rows) if rate != "local" else []
    path = tmp / f"{model.name}_{ranks}_{re.sub(r'[^A-Za-z0-9]+', '_', strategy.name)}_{code}_{rate}.daph"
    path.write_text(script(model, rows, strategy, batch, k, "LOCAL" if rate == "local" else "MPI"))
    cmd = [str(BIN / "python"), "-m", "daphnec.tools.daphnec", "--statistics", str(path)]
    if rate != "local":
        cmd = [str(BIN / "mpiexec"), "-n", str(ranks), *cmd[:3], "--distributed", "--dist_backend=MPI", *cmd[3:]]
    if rate not in ("shm", "local"):
        cmd = [str(NETEM), "--rate", rate, "--", *cmd]
    env = dict(os.environ)
    trace = path.with_suffix(".timeline")
    trace.unlink(missing_ok=True)
    if timeline is not None:
        env["DAPHNEC_PS_TIMELINE"] = str(trace)
    if baseline is not None:
        env["PYTHONPATH"] = str(baseline)
        env["DAPHNEC_CACHE_DIR"] = str(tmp / "cache-today")
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp, env=env, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        run.error = f"timed out after {timeout:.0f} s"
        return run
    if res.returncode != 0:
        run.error = (res.stderr.strip().splitlines() or ["?"])[-1][:200]
        log = path.with_suffix(".stderr")
        log.write_text(res.stderr)
        sys.stderr.write(f"{path.name} failed (exit {res.returncode}); its stderr ends:\n"
                         + "\n".join(res.stderr.strip().splitlines()[-15:]) + "\n")  # fmt: skip
        return run
    vals = dict(re.findall(r"^(SECONDS|LOSS|ACCURACY) (\S+)$", res.stdout, re.M))
    run.seconds, run.loss, run.accuracy = (float(vals.get(x, "nan")) for x in ("SECONDS", "LOSS", "ACCURACY"))
    run.wire, compute, comm, _, run.epoch = parse_stats(res.stderr)
    if compute > 0 and comm > 0 and run.epoch > 0:
        c, n = compute / k, comm / k
        run.compute, run.comm = c, n
        run.alpha = (n + c - run.epoch) / min(n, c)
    if timeline is not None and trace.exists():
        with timeline.open("a", encoding="utf-8") as f:
            f.write(f"# {model.name} {rate} n={ranks} {strategy.name} ({code}): worker kind matrix start end\n")
            f.write(trace.read_text())
    return run


def baseline_tree(tmp: Path) -> Path:
    """The code of `main` as a package folder (PYTHONPATH=<returned>)."""
    dst = tmp / "baseline"
    (dst / "daphnec").mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "main"], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dst / "daphnec")], input=archive, check=True)
    return dst


# -- SystemDS ------------------------------------------------------------------------------------------------------

SYSTEMDS_FNS = """
gradients = function(list[unknown] model, list[unknown] hyperparams, matrix[double] features,
                     matrix[double] labels) return (list[unknown] gradients) {
  H1 = max(features %*% as.matrix(model[1]) + as.matrix(model[2]), 0)
  H2 = max(H1 %*% as.matrix(model[3]) + as.matrix(model[4]), 0)
  Z = H2 %*% as.matrix(model[5]) + as.matrix(model[6])
  E = exp(Z - rowMaxs(Z))
  dZ = (E / rowSums(E) - labels) / nrow(features)
  dH2 = (dZ %*% t(as.matrix(model[5]))) * (H2 > 0)
  dH1 = (dH2 %*% t(as.matrix(model[3]))) * (H1 > 0)
  gradients = list(t(features) %*% dH1, colSums(dH1), t(H1) %*% dH2, colSums(dH2), t(H2) %*% dZ, colSums(dZ))
}

aggregation = function(list[unknown] model, list[unknown] hyperparams, list[unknown] gradients)
    return (list[unknown] model_result) {
  lr = as.double(as.scalar(hyperparams["lr"]))
  model_result = list(as.matrix(model[1]) - lr * as.matrix(gradients[1]),
    as.matrix(model[2]) - lr * as.matrix(gradients[2]), as.matrix(model[3]) - lr * as.matrix(gradients[3]),
    as.matrix(model[4]) - lr * as.matrix(gradients[4]), as.matrix(model[5]) - lr * as.matrix(gradients[5]),
    as.matrix(model[6]) - lr * as.matrix(gradients[6]))
}

evaluate = function(list[unknown] model, matrix[double] X, matrix[double] y) return (double l, double acc) {
  H1 = max(X %*% as.matrix(model[1]) + as.matrix(model[2]), 0)
  H2 = max(H1 %*% as.matrix(model[3]) + as.matrix(model[4]), 0)
  Z = H2 %*% as.matrix(model[5]) + as.matrix(model[6])
  E = exp(Z - rowMaxs(Z))
  P = E / rowSums(E)
  l = -mean(rowSums(y * log(max(P, 1e-300))))
  acc = mean(rowSums((P == rowMaxs(P)) * y))
}
"""

SYSTEMDS_MAIN = """
source("./fc_fns.dml") as fc
N = ifdef($N, 2048)
k = ifdef($k, 2)
X = rand(rows=N, cols=784, min=0, max=1, seed=11)
S = (X - 0.5) %*% rand(rows=784, cols=10, min=-1, max=1, seed=12)
y = (S == rowMaxs(S))
model = list(rand(rows=784, cols=1024, min=-1, max=1, seed=13) * sqrt(6 / 1808), matrix(0, 1, 1024),
  rand(rows=1024, cols=1024, min=-1, max=1, seed=14) * sqrt(6 / 2048), matrix(0, 1, 1024),
  rand(rows=1024, cols=10, min=-1, max=1, seed=15) * sqrt(6 / 1034), matrix(0, 1, 10))
hp = list(lr=0.2)
while(FALSE){}
t0 = time()
trained = paramserv(model=model, features=X, labels=y, upd="./fc_fns.dml::gradients",
  agg="./fc_fns.dml::aggregation", mode="LOCAL", utype="BSP", freq="BATCH", epochs=1, batchsize=64, k=k,
  scheme="DISJOINT_CONTIGUOUS", hyperparams=hp)
while(FALSE){}
t1 = time()
[l, acc] = fc::evaluate(trained, X, y)
print("SECONDS " + (t1 - t0) / 1e9)
print("LOSS " + l)
print("ACCURACY " + acc)
"""


def systemds(tmp: Path, rows: int, k: int) -> Run:
    """SystemDS's paramserv (LOCAL, k threads) on the FC MLP, run from the peer's jar."""
    run = Run("fc", "local", 1, f"SystemDS BSP LOCAL k={k}", "peer", k=k, steps=steps_per_epoch(rows, k, 64))
    sp = PEER / "venv" / "lib" / "python3.11" / "site-packages" / "systemds"
    if not (sp / "SystemDS.jar").exists() or shutil.which("java") is None:
        run.error = f"no SystemDS jar under {sp} (run its setup.sh) or no java"
        return run
    d = tmp / "systemds"
    d.mkdir(exist_ok=True)
    (d / "fc_fns.dml").write_text(SYSTEMDS_FNS)
    (d / "fc_ps.dml").write_text(SYSTEMDS_MAIN)
    cmd = ["java", "--add-modules=jdk.incubator.vector", "-Xmx8g",
           f"-Dlog4j.configuration=file:{sp}/conf/log4j.properties", "-cp", f"{sp}/SystemDS.jar:{sp}/lib/*",
           "org.apache.sysds.api.DMLScript", "-f", "fc_ps.dml", "-exec", "singlenode",
           "-config", str(PEER / "sysds-config.xml"), "-nvargs", f"N={rows}", f"k={k}"]  # fmt: skip
    res = subprocess.run(cmd, cwd=d, capture_output=True, text=True, check=False, timeout=1800)
    vals = dict(re.findall(r"^(SECONDS|LOSS|ACCURACY) (\S+)$", res.stdout, re.M))
    if res.returncode != 0 or "SECONDS" not in vals:
        run.error = (res.stderr.strip() or res.stdout.strip())[-200:]
        return run
    run.seconds, run.loss, run.accuracy = (float(vals[x]) for x in ("SECONDS", "LOSS", "ACCURACY"))
    return run


# -- report --------------------------------------------------------------------------------------------------------


def report(runs: list[Run]) -> str:
    lines = []
    today = {(r.model, r.rate, r.ranks, r.strategy): r for r in runs if r.code == "today"}
    apart = {(r.model, r.rate, r.ranks, r.strategy, r.code): r for r in runs}
    head = (f"{'model':<6} {'rate':<7} {'n':>2} {'strategy':<22} {'k':>2} {'s/epoch':>8} {'vs BSP':>7} "
            f"{'vs AR':>6} {'MB/step':>8} {'formula':>8} {'diff':>6} {'loss':>7} {'acc':>6} {'T s':>6} {'C s':>6} "
            f"{'N s':>6} {'alpha':>6} {'alpha0':>6} {'T vs AR':>7} {'link':>5}")  # fmt: skip
    lines.append(head)
    for r in runs:
        if r.code == "peer":
            lines.append(f"{r.model:<6} {r.rate:<7} {'-':>2} {r.strategy:<22} {r.k:>2} {r.seconds:>8.2f} {'':>7} "
                         f"{'':>6} {'':>8} {'':>8} {'':>6} {r.loss:>7.4f} {r.accuracy:>6.3f}"
                         + (f"  {r.error}" if r.error else ""))  # fmt: skip
            continue
        alone = apart.get((r.model, r.rate, r.ranks, r.strategy.replace(" overlap", ""), r.code))
        alpha0 = ""
        if alone is not None and alone is not r and min(alone.comm, alone.compute) > 0 and r.epoch > 0:
            alpha0 = f"{(alone.comm + alone.compute - r.epoch) / min(alone.comm, alone.compute):.2f}"
        bsp = today.get((r.model, r.rate, r.ranks, "BSP"))
        ar = today.get((r.model, r.rate, r.ranks, "ALLREDUCE ALLGATHER"))
        vs_bsp = f"{bsp.seconds / r.seconds:.2f}x" if bsp and r.seconds > 0 else ""
        vs_ar = f"{ar.seconds / r.seconds:.2f}x" if ar and r.seconds > 0 else ""
        t_ar = f"{ar.epoch / r.epoch:.3f}x" if ar and r.epoch > 0 else ""
        link = f"{sum(r.wire.values()) / r.epoch / 1e6:.0f}" if r.wire and r.epoch > 0 else ""
        mb, fm = r.worker_bytes / 1e6, r.worker_formula / 1e6
        diff = f"{(mb / fm - 1) * 100:+.1f}%" if fm > 0 and not math.isnan(mb) else ""
        shown = f"{mb:>8.2f}" if not math.isnan(mb) else f"{'-':>8}"
        name = r.strategy + (" (today)" if r.code == "today" else "")
        lines.append(f"{r.model:<6} {r.rate:<7} {r.ranks:>2} {name:<22} {r.k:>2} {r.seconds:>8.2f} {vs_bsp:>7} "
                     f"{vs_ar:>6} {shown} {fm:>8.2f} {diff:>6} {r.loss:>7.4f} {r.accuracy:>6.3f} {r.epoch:>6.2f} "
                     f"{r.compute:>6.2f} {r.comm:>6.2f} {r.alpha:>6.2f} {alpha0:>6} {t_ar:>7} {link:>5}"
                     + (f"  {r.error}" if r.error else ""))  # fmt: skip
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ranks", default="3,4,5")
    ap.add_argument("--rates", default="1gbit,10gbit")
    ap.add_argument("--models", default="fc", help=f"comma-separated names from MODELS ({', '.join(MODELS)})")
    ap.add_argument("--strategies", default="", help="comma-separated names from STRATEGIES (default: all)")
    ap.add_argument("--rows", type=int, default=2048)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--baseline", type=Path, default=None, help="a folder holding today's code as daphnec/")
    ap.add_argument("--no-baseline", action="store_true")
    ap.add_argument("--no-systemds", action="store_true")
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument("--repeat", type=int, default=1, help="runs per cell (interleaved); the fastest is reported")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument(
        "--timeline",
        type=Path,
        default=None,
        help="append every run's per-step intervals (compute, push/pull per matrix) to this file",
    )
    ap.add_argument(
        "--baseline-all", action="store_true", help="also run every selected overlap strategy without overlap"
    )
    ap.add_argument("--today-all", action="store_true",
                    help="run every selected strategy with today's code too (not only BSP and ALLREDUCE), so that "
                         "a change of an overlap strategy is compared in the same run")  # fmt: skip
    args = ap.parse_args()
    rates = args.rates.split(",")
    why = netem_works()
    if why:
        print(f"netem is not available ({why}): running on shared memory, where bytes cannot be measured")
        rates = ["shm"]
    models = [MODELS[m] for m in args.models.split(",") if m in MODELS]
    unknown = [m for m in args.models.split(",") if m not in MODELS]
    if unknown:
        ap.error(f"unknown model(s) {', '.join(unknown)}; known: {', '.join(MODELS)}")
    wanted = set(args.strategies.split(",")) if args.strategies else None
    unknown = sorted((wanted or set()) - {s.name for s in STRATEGIES})
    if unknown:
        ap.error(f"unknown strategies {', '.join(unknown)}; known: {', '.join(s.name for s in STRATEGIES)}")
    if args.baseline_all and wanted is not None:
        wanted |= {s.name.replace(" overlap", "") for s in STRATEGIES if s.name in wanted}
        wanted &= {s.name for s in STRATEGIES}
    strategies = [s for s in STRATEGIES if wanted is None or s.name in wanted]
    if args.timeline is not None:
        args.timeline.unlink(missing_ok=True)
    runs: list[Run] = []
    with tempfile.TemporaryDirectory(prefix="dtbench") as t:
        tmp = Path(t)
        baseline = None
        if not args.no_baseline:
            baseline = args.baseline or baseline_tree(tmp)
        if not args.no_systemds:
            r = systemds(tmp, args.rows, 2)
            runs.append(r)
            print(report([r]).splitlines()[-1], flush=True)
            for model in models:  # daphnec's LOCAL paramserv next to it
                r = run_one(tmp, model, args.rows, args.batch, "local", 1, STRATEGIES[0], None, args.timeout)
                r.strategy = "daphnec BSP LOCAL k=2"
                runs.append(r)
                print(report([r]).splitlines()[-1], flush=True)
        cells = [(model, rate, n, s, base) for model in models for rate in rates
                 for n in (int(x) for x in args.ranks.split(",")) for s in strategies
                 for base in [None] + ([baseline] if (s.today or args.today_all) and baseline is not None else [])
                 if not ("servers" in s.options and n - 2 < 1)]  # fmt: skip
        best: dict[int, Run] = {}
        for rep in range(args.repeat):  # interleaved repetitions: a burst of load hits every cell alike
            for i, (model, rate, n, s, base) in enumerate(cells):
                t0 = time.perf_counter()
                r = run_one(tmp, model, args.rows, args.batch, rate, n, s, base, args.timeout, args.timeline)
                if i not in best or (r.seconds < best[i].seconds or math.isnan(best[i].seconds)):
                    best[i] = r
                line = report([r]).splitlines()[-1]
                print(f"{line}   [{time.perf_counter() - t0:.0f} s, repetition {rep + 1}]", flush=True)
        runs += [best[i] for i in range(len(cells))]
    print()
    print(report(runs))
    if args.json:
        args.json.write_text(json.dumps([dataclasses.asdict(r) for r in runs], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
