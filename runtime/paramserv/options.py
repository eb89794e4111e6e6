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

from daphnec.runtime.errors import DaphneRuntimeError

MODES = ("LOCAL", "MPI")
UTYPES = ("BSP", "ASP", "SSP", "SBP", "ALLREDUCE", "LOCALSGD")
FREQS = ("BATCH", "EPOCH", "NBATCHES")
SCHEMES = ("DISJOINT_CONTIGUOUS", "DISJOINT_ROUND_ROBIN", "DISJOINT_RANDOM", "OVERLAP_RESHUFFLE")

SERVER_UTYPES = ("BSP", "ASP", "SSP", "SBP")
"""Strategies with a parameter server; ALLREDUCE and LOCALSGD are decentralised (model replicas on the workers)."""

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

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if f.type == "str" and isinstance(v, str) and f.name != "compression":
                setattr(self, f.name, v.strip().upper())
            elif f.type == "int" and isinstance(v, numbers.Integral):
                setattr(self, f.name, int(v))
            elif f.type == "int" and isinstance(v, numbers.Real) and float(v).is_integer():
                setattr(self, f.name, int(v))

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

    def workers(self, nrows: int) -> int:
        """The number of workers for LOCAL mode (k <= 0: one per core, at most one per row)."""
        if self.k > 0:
            return self.k
        return max(1, min(os.cpu_count() or 1, nrows))

    # -- validation --------------------------------------------------------------------------------------------------

    def validate(self, nrows: int) -> None:
        """Raise `DaphneRuntimeError("paramserv: ...")` for options the engine cannot run on `nrows` rows."""
        for name, allowed in (("mode", MODES), ("utype", UTYPES), ("freq", FREQS), ("scheme", SCHEMES)):
            v = getattr(self, name)
            if not isinstance(v, str) or v not in allowed:
                raise DaphneRuntimeError(f"paramserv: unknown {name} '{v}' (expected one of {', '.join(allowed)})")
        for name in ("nbatches", "epochs", "batchsize", "k", "staleness", "backup_workers", "period", "seed"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool):
                raise DaphneRuntimeError(f"paramserv: {name} must be an integer, got {v!r}")
        for name in ("epochs", "batchsize", "nbatches", "period"):
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
        if self.utype == "LOCALSGD" and self.freq != "BATCH":
            raise DaphneRuntimeError(f"paramserv: utype=LOCALSGD applies every batch locally and averages every "
                                     f"`period` batches; freq must be BATCH, got {self.freq}")  # fmt: skip
        if self.seed < -1:
            raise DaphneRuntimeError(f"paramserv: seed must be >= 0 (or -1 for the default), got {self.seed}")
        if not isinstance(self.compression, str):
            raise DaphneRuntimeError(f"paramserv: compression must be a string, got {self.compression!r}")
        parse_compression(self.compression)

    def to_dict(self) -> dict[str, object]:
        """The options as JSON (without the hyperparameters, which travel as matrices)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "hyperparams"}

    @classmethod
    def from_dict(cls, d: dict[str, object], hyperparams: tuple = ()) -> PSOptions:
        return cls(hyperparams=hyperparams, **d)  # type: ignore[arg-type]
