"""`paramserv` options (`PSOptions`): the named arguments of the builtin, their defaults and their validation.

Defaults follow SystemDS's `paramserv` where it has the option (mode LOCAL, utype ASP, freq EPOCH, batchsize 64,
scheme DISJOINT_CONTIGUOUS, k = the number of cores); the options SystemDS lacks default to: staleness 1 (SSP),
backup_workers 1 (SBP), period 4 (LOCALSGD), nbatches 1 (NBATCHES), seed -1 (no seed given: a fixed default seed,
`DEFAULT_SEED`, so that runs are reproducible anyway), compression "" (none).

String options are upper-cased on input, so `utype="bsp"` works. `validate(nrows)` raises
`DaphneRuntimeError("paramserv: ...")` for anything the engine cannot run; the builtin reports it with the
script location (exit code 3).
"""

from __future__ import annotations

import numbers
import os
from dataclasses import dataclass, field, fields

import numpy as np

from daphnec.runtime.errors import DaphneRuntimeError

MODES = ("LOCAL", "MPI")
UTYPES = ("BSP", "ASP", "SSP", "SBP", "ALLREDUCE", "LOCALSGD", "GOSSIP", "EASGD")
FREQS = ("BATCH", "EPOCH", "NBATCHES")
SCHEMES = ("DISJOINT_CONTIGUOUS", "DISJOINT_ROUND_ROBIN", "DISJOINT_RANDOM", "OVERLAP_RESHUFFLE")

ALLREDUCES = ("ALLGATHER", "RING", "TREE", "MASTER")
"""The all-reduce algorithms (`allreduce=`) of ALLREDUCE and LOCALSGD (reduction.py, collectives.py)."""
TOPOLOGIES = ("RING", "RANDOM")
"""GOSSIP's neighbourhoods: a fixed ring, or a seeded random pairing at every step."""

SERVER_UTYPES = ("BSP", "ASP", "SSP", "SBP", "EASGD")
"""Strategies with a parameter server (EASGD's is the master model); ALLREDUCE, LOCALSGD and GOSSIP are
decentralised (model replicas on the workers)."""
SHARDABLE_UTYPES = ("BSP", "SSP", "ASP", "EASGD")
"""Server strategies whose model can be split over several servers (SBP's backup sets would differ per shard)."""
HIERARCHICAL_UTYPES = ("ALLREDUCE",)
"""Strategies whose workers' gradients a rank sums before they leave it (`threads` > 1: BAGUA's hierarchical
all-reduce)."""
LOCAL_STEP_UTYPES = ("LOCALSGD", "GOSSIP", "EASGD")
"""Strategies whose workers apply every batch to their own replica (they need freq=BATCH)."""

DEFAULT_BUCKET = 4 << 20
"""`overlap`'s bucket size in bytes (4 MiB: a few milliseconds of a 10 Gbit/s link, so that a message's start-up
cost is small next to its transfer, yet a 1024 x 1024 f64 gradient travels in two chunks)."""

DEFAULT_SEED = 0x5EED
"""The seed used when the script gives none (seed=-1): DISJOINT_RANDOM and OVERLAP_RESHUFFLE are reproducible."""


@dataclass(frozen=True)
class Compression:
    """A parsed `compression=` spec: kind "" (none), "topk" (with `fraction`) or "int8"."""

    kind: str = ""
    fraction: float = 1.0

    def __bool__(self) -> bool:
        return bool(self.kind)

    def spec(self) -> str:
        return f"topk:{self.fraction!r}" if self.kind == "topk" else self.kind


def parse_compression(spec: str) -> Compression:
    """`""`, `"int8"` or `"topk:<fraction>"` with 0 < fraction <= 1 (case-insensitive)."""
    s = spec.strip().lower()
    if s in ("", "none"):
        return Compression()
    if s == "int8":
        return Compression("int8")
    kind, sep, frac = s.partition(":")
    if kind == "topk" and sep:
        try:
            f = float(frac)
        except ValueError:
            f = -1.0
        if 0.0 < f <= 1.0:
            return Compression("topk", f)
        raise DaphneRuntimeError(f"paramserv: compression 'topk:{frac}': the fraction must be a number in (0, 1]")
    raise DaphneRuntimeError(f"paramserv: unknown compression '{spec}' (expected \"\", int8 or topk:<fraction>)")


@dataclass
class PSOptions:
    """The options of one `paramserv` call (see the module docstring for the defaults)."""

    mode: str = "LOCAL"
    utype: str = "ASP"
    freq: str = "EPOCH"
    nbatches: int = 1
    """Batches per push for freq=NBATCHES."""
    epochs: int = 1
    batchsize: int = 64
    k: int = 0
    """Workers; 0 (or negative): LOCAL the number of cores (at most the number of rows), MPI the worker ranks."""
    scheme: str = "DISJOINT_CONTIGUOUS"
    hyperparams: tuple = field(default_factory=tuple)
    staleness: int = 1
    """SSP: a worker may compute with a model up to this many clocks old (0 = BSP)."""
    backup_workers: int = 1
    """SBP: each step uses the first k - backup_workers gradients and drops the rest."""
    period: int = 4
    """LOCALSGD: replicas are averaged every `period` local steps (and at the end)."""
    seed: int = -1
    compression: str = ""
    allreduce: str = ""
    """ALLREDUCE/LOCALSGD: the algorithm (ALLGATHER, RING, TREE, MASTER); "" = ALLGATHER."""
    servers: int = 0
    """Server strategies: model shards, each on its own server rank; 0 = 1 (or k with `colocated`)."""
    colocated: bool = False
    """Server strategies: the shards live on the worker ranks (every worker also serves its share)."""
    topology: str = ""
    """GOSSIP: RING (default) or RANDOM."""
    alpha: float = -1.0
    """EASGD: the elastic coefficient in (0, 1]; -1 = 0.9 / k (the paper's beta = k * alpha = 0.9)."""
    delta_max: float = 0.0
    """ASP: the value bound (0 = none): a worker keeps its model while no element of the server's differs from it
    by Delta_max or more."""
    threads: int = 1
    """Workers per worker rank (MPI; LOCAL runs k * threads threads): a rank sums its threads' gradients first."""
    sfb: bool = False
    """Poseidon's hybrid communication: a gradient the compiler found to be t(A) @ B over the batch travels as its
    sufficient factors A and B wherever the cost model (costs.sfb_wins) says that is cheaper: ALLREDUCE broadcasts
    them to every worker; the server strategies push them to the server (shard), which rebuilds the product."""
    overlap: bool = False
    """MPI: communication beside computation. ALLREDUCE: each gradient's all-reduce starts where `upd` finalises it
    (the `wait-free-backprop` pass marks the places), on a communication thread beside the backward pass; buckets
    of `bucket` bytes. Server strategies: the next model is pulled matrix by matrix in the order the forward pass
    reads them while `upd` already runs (TicTac; the `pull-order` pass puts the waits into `upd`)."""
    bucket: int = 0
    """`overlap`: the size of a message (0 = DEFAULT_BUCKET): small matrices share a bucket, large ones are split."""
    factored: tuple = ()
    """Set by the compiler, not by scripts: the positions of `upd`'s gradients that its factors function
    (`sufficient-factors` pass) returns as factors, in order (the factors follow the gradients)."""
    pull_order: tuple | None = None
    """Set by the compiler, not by scripts: `upd` reads the model only through waits (`pull-order` pass), and the
    positions in the order of its first reads. None: `upd` reads the model directly (pulls cannot be ordered)."""
    per_matrix_agg: bool = False
    """Set by the compiler, not by scripts: `agg`'s output j depends only on model j, gradient j and the
    hyperparameters (the `pull-order` pass's check, per_matrix_agg.py, puts `per_matrix_agg` on the paramserv op).
    Then one server may update each matrix as soon as its sum is complete and stream it back (`streamed_pulls`)."""

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if f.type == "str" and isinstance(v, str) and f.name != "compression":
                setattr(self, f.name, v.strip().upper())
            elif f.type == "int" and isinstance(v, numbers.Integral):
                setattr(self, f.name, int(v))
            elif f.type == "int" and isinstance(v, numbers.Real) and float(v).is_integer():
                setattr(self, f.name, int(v))
            elif f.type == "float" and isinstance(v, numbers.Real) and not isinstance(v, bool):
                setattr(self, f.name, float(v))
            elif f.type == "bool" and isinstance(v, (bool, np.bool_, numbers.Integral)):
                setattr(self, f.name, bool(v))

    # -- derived -----------------------------------------------------------------------------------------------------

    @property
    def effective_seed(self) -> int:
        return DEFAULT_SEED if self.seed == -1 else self.seed

    @property
    def compressor(self) -> Compression:
        return parse_compression(self.compression)

    @property
    def has_server(self) -> bool:
        return self.utype in SERVER_UTYPES

    @property
    def algorithm(self) -> str:
        """The all-reduce algorithm (ALLGATHER unless `allreduce` names another; RING with `overlap`)."""
        return self.allreduce or ("RING" if self.overlap else "ALLGATHER")

    @property
    def push_rows(self) -> int:
        """The most rows one push's gradients are computed from (`sfb`: the rows of its stacked factors)."""
        return self.batchsize * (self.nbatches if self.freq == "NBATCHES" else 1)

    @property
    def ordered_pulls(self) -> bool:
        """The next model is pulled matrix by matrix while `upd` runs (pulls.py): `overlap` with parameter servers,
        for an `upd` the `pull-order` pass prepared."""
        return self.overlap and self.utype in SERVER_UTYPES and self.utype != "EASGD" and self.pull_order is not None

    @property
    def streamed_pulls(self) -> bool:
        """BSP with one server, ordered pulls and a per-matrix `agg`: the worker asks for the next model with its
        first early push, and the server updates each matrix once its sum is complete and sends it at once
        (mpi_server.ShardLoop, worker.MatrixPushes), so the big matrices' pulls travel under the rest of the
        backward pass."""
        return self.ordered_pulls and self.per_matrix_agg and self.utype == "BSP" and self.servers <= 1 \
            and not self.colocated and not self.sfb and not self.compression

    @property
    def neighbourhood(self) -> str:
        return self.topology or "RING"

    @property
    def shards(self) -> int:
        """The number of dedicated model shards (servers): `servers` or 1 (co-located shards: server.model_shards)."""
        return max(self.servers, 1)

    def elastic(self, k: int) -> float:
        """EASGD's alpha for k workers."""
        return 0.9 / k if self.alpha == -1.0 else self.alpha

    def workers(self, nrows: int) -> int:
        """The number of LOCAL worker threads: k * threads (k <= 0: one per core, at most one per row)."""
        if self.k > 0:
            return self.k * self.threads
        return max(1, min(os.cpu_count() or 1, nrows))

    # -- validation --------------------------------------------------------------------------------------------------

    def validate(self, nrows: int) -> None:
        """Raise `DaphneRuntimeError("paramserv: ...")` for options the engine cannot run on `nrows` rows."""
        for name, allowed in (("mode", MODES), ("utype", UTYPES), ("freq", FREQS), ("scheme", SCHEMES),
                              ("allreduce", ("", *ALLREDUCES)), ("topology", ("", *TOPOLOGIES))):  # fmt: skip
            v = getattr(self, name)
            if not isinstance(v, str) or v not in allowed:
                shown = ", ".join(a for a in allowed if a)
                raise DaphneRuntimeError(f"paramserv: unknown {name} '{v}' (expected one of {shown})")
        for name in ("nbatches", "epochs", "batchsize", "k", "staleness", "backup_workers", "period", "seed",
                     "servers", "threads", "bucket"):  # fmt: skip
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool):
                raise DaphneRuntimeError(f"paramserv: {name} must be an integer, got {v!r}")
        for name in ("alpha", "delta_max"):
            v = getattr(self, name)
            if not isinstance(v, float) or v != v:
                raise DaphneRuntimeError(f"paramserv: {name} must be a number, got {v!r}")
        for name in ("colocated", "sfb", "overlap"):
            if not isinstance(getattr(self, name), bool):
                raise DaphneRuntimeError(f"paramserv: {name} must be true or false, got {getattr(self, name)!r}")
        for name in ("epochs", "batchsize", "nbatches", "period", "threads"):
            if getattr(self, name) <= 0:
                raise DaphneRuntimeError(f"paramserv: {name} must be > 0, got {getattr(self, name)}")
        if nrows <= 0:
            raise DaphneRuntimeError("paramserv: the features have no rows")
        k = self.workers(nrows)
        if k > nrows:
            raise DaphneRuntimeError(f"paramserv: k={k} workers but only {nrows} rows")
        if self.staleness < 0:
            raise DaphneRuntimeError(f"paramserv: staleness must be >= 0, got {self.staleness}")
        if self.backup_workers < 0:
            raise DaphneRuntimeError(f"paramserv: backup_workers must be >= 0, got {self.backup_workers}")
        if self.utype == "SBP" and self.backup_workers >= k:
            raise DaphneRuntimeError(f"paramserv: backup_workers={self.backup_workers} must be smaller than the "
                                     f"number of workers (k={k})")  # fmt: skip
        if self.utype in LOCAL_STEP_UTYPES and self.freq != "BATCH":
            raise DaphneRuntimeError(f"paramserv: utype={self.utype} applies every batch to the worker's own model; "
                                     f"freq must be BATCH, got {self.freq}")  # fmt: skip
        self._validate_communication()
        if self.seed < -1:
            raise DaphneRuntimeError(f"paramserv: seed must be >= 0 (or -1 for the default), got {self.seed}")
        if not isinstance(self.compression, str):
            raise DaphneRuntimeError(f"paramserv: compression must be a string, got {self.compression!r}")
        parse_compression(self.compression)

    def _validate_communication(self) -> None:
        """The options of the communication architecture: each belongs to the strategies that use it."""
        u = self.utype
        if self.allreduce and u not in ("ALLREDUCE", "LOCALSGD"):
            raise DaphneRuntimeError(f"paramserv: allreduce={self.allreduce} applies to utype ALLREDUCE or LOCALSGD, "
                                     f"not {u}")  # fmt: skip
        if self.compression and self.algorithm in ("RING", "TREE"):
            raise DaphneRuntimeError(f"paramserv: compression needs allreduce=ALLGATHER or MASTER: allreduce="
                                     f"{self.algorithm} sends partial sums, which are not compressed")  # fmt: skip
        if self.servers < 0:
            raise DaphneRuntimeError(f"paramserv: servers must be >= 1 (or 0 for the default), got {self.servers}")
        if (self.servers > 1 or self.colocated) and u not in SHARDABLE_UTYPES:
            raise DaphneRuntimeError(f"paramserv: sharded servers ({'colocated' if self.colocated else 'servers='}"
                                     f"{'' if self.colocated else self.servers}) need utype "
                                     f"{', '.join(SHARDABLE_UTYPES)}, not {u}")  # fmt: skip
        if self.colocated and self.k > 0 and self.servers > self.k:
            raise DaphneRuntimeError(f"paramserv: colocated servers live on the worker ranks: servers={self.servers} "
                                     f"> k={self.k}")  # fmt: skip
        if self.topology and u != "GOSSIP":
            raise DaphneRuntimeError(f"paramserv: topology applies to utype GOSSIP, not {u}")
        if self.alpha != -1.0:
            if u != "EASGD":
                raise DaphneRuntimeError(f"paramserv: alpha applies to utype EASGD, not {u}")
            if not 0.0 < self.alpha <= 1.0:
                raise DaphneRuntimeError(f"paramserv: alpha must be in (0, 1], got {self.alpha}")
        if self.delta_max < 0.0:
            raise DaphneRuntimeError(f"paramserv: delta_max must be >= 0, got {self.delta_max}")
        if self.delta_max > 0.0 and u != "ASP":
            raise DaphneRuntimeError(f"paramserv: delta_max (value-bounded asynchrony) applies to utype ASP, not {u}")
        if self.threads > 1:
            if u not in HIERARCHICAL_UTYPES:
                raise DaphneRuntimeError(f"paramserv: threads={self.threads} (a rank sums its workers' gradients "
                                         f"first) needs utype {' or '.join(HIERARCHICAL_UTYPES)}, not {u}")  # fmt: skip
            if self.compression:
                raise DaphneRuntimeError("paramserv: threads > 1 sums gradients on the rank before sending; it "
                                         "cannot be combined with compression")  # fmt: skip
            if self.servers > 1 or self.colocated:
                raise DaphneRuntimeError("paramserv: threads > 1 cannot be combined with sharded servers")
        if self.sfb:
            if u != "ALLREDUCE" and (u not in SERVER_UTYPES or u == "EASGD"):
                raise DaphneRuntimeError(f"paramserv: sfb (sufficient factors instead of gradients) applies to utype "
                                         f"ALLREDUCE, BSP, SSP, ASP, SBP, not {u}")  # fmt: skip
            if self.freq == "EPOCH":
                raise DaphneRuntimeError("paramserv: sfb with freq=EPOCH would send the factors of the whole "
                                         "partition (rows x (M + N) values), more than the M x N gradient itself for "
                                         "any partition of more than M N / (M + N) rows; use freq=BATCH or "
                                         "NBATCHES")  # fmt: skip
            if self.compression or self.threads > 1:
                raise DaphneRuntimeError("paramserv: sfb cannot be combined with compression or threads > 1")
        if self.overlap and u != "ALLREDUCE":
            if u not in SERVER_UTYPES or u == "EASGD":
                raise DaphneRuntimeError(f"paramserv: overlap (all-reduce beside the backward pass, or pulls beside "
                                         f"the forward pass) applies to utype ALLREDUCE, BSP, SSP, ASP, SBP, "
                                         f"not {u}")  # fmt: skip
            if self.bucket:
                raise DaphneRuntimeError(f"paramserv: bucket sizes the all-reduce's messages; utype {u} pulls "
                                         "one message per matrix")  # fmt: skip
        elif self.overlap:
            if self.algorithm not in ("RING", "TREE"):
                raise DaphneRuntimeError(f"paramserv: overlap reduces buckets of partial sums; it needs allreduce=RING "
                                         f"or TREE, not {self.algorithm}")  # fmt: skip
            if self.compression or self.threads > 1:
                raise DaphneRuntimeError("paramserv: overlap cannot be combined with compression or threads > 1")
        if self.bucket < 0:
            raise DaphneRuntimeError(f"paramserv: bucket must be >= 1 byte (or 0 for the default), got {self.bucket}")

    def to_dict(self) -> dict[str, object]:
        """The options as JSON (without the hyperparameters, which travel as matrices)."""
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "hyperparams"}
        d["factored"] = list(self.factored)
        d["pull_order"] = list(self.pull_order) if self.pull_order is not None else None
        return d

    @classmethod
    def from_dict(cls, d: dict[str, object], hyperparams: tuple = ()) -> PSOptions:
        order = d.get("pull_order")
        d = {**d, "factored": tuple(d.get("factored", ())),  # type: ignore[arg-type]
             "pull_order": tuple(order) if order is not None else None}  # type: ignore[arg-type]  # fmt: skip
        return cls(hyperparams=hyperparams, **d)  # type: ignore[arg-type]
