"""MPI mode, rank 0 (`daphnec --distributed --dist_backend=MPI` under `mpiexec`): the call's jobs go out, shard 0
is served here, the results come back.

Rank 0 runs the script; `paramserv(mode="MPI")` there takes the distributed runtime's coordinator
(`runtime.distributed.coordinator.ACTIVE`, which holds the communicators) and its call lock, so the liveness check
reports a dead rank as an error of this call. With no distributed runtime (plain `daphnec`, or one rank) a
warning is printed once and the call runs in LOCAL mode (with k * threads workers: the same result).

Roles (ranks 1..N-1 are in the serve loop of runtime/distributed/worker.py and get one PARAMSERV message per call;
their side is mpi_worker.py):

| setting | rank 0 | ranks 1..k | further ranks |
|---|---|---|---|
| server strategies, one server | serves the model | workers | idle |
| `servers=M` | serves shard 0 | workers | shards 1..M-1, one per rank |
| `servers=M, colocated=true` | collects | workers; the first M also serve one shard each | idle |
| ALLREDUCE, LOCALSGD, GOSSIP | collects | workers, talking among themselves (collectives.py) | idle |

k defaults to the worker ranks left after the dedicated servers; `threads=T` runs T workers on each worker rank.

Protocol (tags in runtime/distributed/protocol.py; control messages JSON on `ctrl`, buffers on `data`):
1. Rank 0 -> each rank of the call: PARAMSERV {IR key (+ the text the first time that rank sees it), upd/agg
   symbols, call id, the rank's roles (worker index, shard index), the worker ranks, the shards (rank and matrix
   range), P_i of every worker, options, descriptions of model, hyperparameters and the rank's partitions}, then
   PS_DATA with the buffers: only that rank's rows, computed on rank 0 exactly as in LOCAL mode (so both modes see
   the same batches). The rank compiles the IR while the data arrives (cached per key).
2. Server strategies: workers push to every shard and pull from every shard (mpi_server.py); rank 0 runs shard
   0's loop itself. Decentralised strategies: the workers reduce among themselves (collectives.py).
3. Every rank ends with one PS_DONE {per-worker statistics, shard statistics and final matrices (PS_FINAL),
   worker 0's final model in a decentralised call, the bytes the rank sent over TCP}. A failure is reported at
   once with PS_ERROR {message, DaphneDSL location}: rank 0 then sends PS_ABORT to every other rank of the call
   (shards answer every pull with STOP, collectives end), waits for every PS_DONE, and raises
   `<message> (on distributed worker rank N)` with that location (the pipeline protocol's `RemoteError`). The
   ranks are back in their serve loop, ready for the next call.

Nothing blocks in MPI: every wait polls and rank 0 checks the liveness verdict in its loops. Byte counts in the
statistics are real message sizes (JSON + buffers) counted by the ranks; over TCP the bytes each rank really sent
are measured too (netbytes.py).
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Callable
from typing import Any

from daphnec.runtime.distributed import serialization as ser
from daphnec.runtime.distributed.protocol import COORDINATOR, Tag, send_control, try_recv_control
from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.kernels.lists import DaphneList
from daphnec.runtime.paramserv.mpi_server import ShardLoop
from daphnec.runtime.paramserv.netbytes import tcp_bytes_sent
from daphnec.runtime.paramserv.options import PSOptions
from daphnec.runtime.paramserv.partition import Partition, partition, plans
from daphnec.runtime.paramserv.pulls import shard_order
from daphnec.runtime.paramserv.server import Server, make_shard, model_shards
from daphnec.runtime.paramserv.stats import CallStats, EpochLog, EpochStats, collect, new_call
from daphnec.runtime.paramserv.transport import Idle, mpi
from daphnec.runtime.paramserv.udf import as_list

LOCAL_FALLBACK_WARNING = ("paramserv: mode=MPI needs the distributed runtime with worker ranks (`mpiexec -n N "
                          "daphnec --distributed --dist_backend=MPI ...`, N >= 2); running LOCAL")  # fmt: skip
_warned = False

_IR_KEYS: dict[str, int] = {}
"""Shipped IR texts by key."""
_IR_SENT: set[tuple[int, int]] = set()
"""(rank, key) pairs whose text that rank has."""
_CALLS = [0]
"""Calls so far (the call id: aborts and tags of one call never touch another)."""
_GENERATION = [0]
"""The generation of the worker ranks' communicators: a new one after a call cut short (its collectives may be
pending on the old one)."""


def server_runtime() -> Any:
    """The coordinator of the distributed runtime with at least one worker rank, else None (after warning once)."""
    global _warned
    from daphnec.runtime.distributed import coordinator as coord

    c = coord.ACTIVE
    if isinstance(c, coord.Coordinator) and c.workers:
        return c
    if not _warned:
        _warned = True
        sys.stderr.write(LOCAL_FALLBACK_WARNING + "\n")
        sys.stderr.flush()
    return None


@dataclasses.dataclass
class Roles:
    """Who does what in one MPI call."""

    workers: list[int]
    """The worker ranks, in worker order."""
    threads: int
    shards: list[tuple[int, int, int]]
    """Server strategies: (rank, first matrix, end) of every shard, in shard order."""

    @property
    def ranks(self) -> list[int]:
        """Every rank of the call except 0, in message order."""
        extra = [r for r, _, _ in self.shards if r != COORDINATOR and r not in self.workers]
        return self.workers + extra


def plan_roles(c: Any, opts: PSOptions, model: DaphneList) -> tuple[PSOptions, Roles]:
    """The ranks of the call by role, k filled in; clear errors when there are too few ranks."""
    available = list(c.workers)
    dedicated = opts.shards - 1 if opts.has_server and not opts.colocated else 0
    k = opts.k if opts.k > 0 else len(available) - dedicated
    n = len(available)
    if k + dedicated > n or k < 1:
        if dedicated:
            raise DaphneRuntimeError(f"paramserv: k={max(k, 1)} workers and servers={opts.shards} need "
                                     f"{max(k, 1) + dedicated} MPI ranks besides rank 0 (server 1 is rank 0), "
                                     f"only {n} (mpiexec -n {n + 1})")  # fmt: skip
        raise DaphneRuntimeError(f"paramserv: k={k} workers but only {n} MPI worker ranks "
                                 f"(mpiexec -n {n + 1}: rank 0 is the server)")  # fmt: skip
    opts = dataclasses.replace(opts, k=k)
    workers = available[:k]
    shards: list[tuple[int, int, int]] = []
    if opts.has_server:
        ranges = model_shards(model, opts, k)
        if opts.colocated:
            hosts = workers[: len(ranges)]
        else:
            hosts = [COORDINATOR] + available[k : k + dedicated]
        shards = [(r, a, b) for r, (a, b) in zip(hosts, ranges)]
    return opts, Roles(workers, opts.threads, shards)


class _Rank0:
    """Rank 0's side of one call: jobs out, shard 0 served, results and failures collected."""

    def __init__(self, c: Any, roles: Roles, call: int):
        self.c = c
        self.comms = c.comms
        self.roles = roles
        self.call = call
        self.ranks = roles.ranks
        self.sending: list[tuple[Any, object]] = []
        self.finished: set[int] = set()
        self.failed: set[int] = set()
        self.errors: list[Exception] = []
        self.logs: list[list[EpochStats]] = []
        self.final: tuple | None = None
        self.shard_results: dict[int, tuple[dict[str, Any], tuple]] = {}
        self.epoch_seconds: list[float] = []
        self.wire: dict[int, int] = {}
        self.aborting = False
        self.backoff = Idle()

    def check(self) -> None:
        self.c._check()

    # -- jobs ------------------------------------------------------------------------------------------------------

    def send_jobs(self, shipped: tuple[str, ...], model: DaphneList, hp: DaphneList, parts: list[Partition],
                  pushes: list[int], opts: PSOptions) -> None:  # fmt: skip
        ir, upd_sym, agg_sym = shipped[:3]
        factors_sym = shipped[3] if len(shipped) > 3 else None
        key = _IR_KEYS.setdefault(ir, len(_IR_KEYS))
        roles, t = self.roles, self.roles.threads
        shard_of = {r: s for s, (r, _, _) in enumerate(roles.shards)}
        for rank in self.ranks:
            index = roles.workers.index(rank) if rank in roles.workers else None
            mine = [parts[index * t + j].materialized() for j in range(t)] if index is not None else []
            msg: dict[str, Any] = {"key": key, "upd": upd_sym, "agg": agg_sym, "factors": factors_sym,
                                   "call": self.call, "gen": _GENERATION[0], "index": index,
                                   "shard": shard_of.get(rank),
                                   "threads": t, "ranks": roles.workers, "shards": [list(s) for s in roles.shards],
                                   "pushes": pushes, "opts": opts.to_dict(),
                                   "model": [ser.describe(m) for m in model], "hp": [ser.describe(h) for h in hp],
                                   "parts": [[ser.describe(p.X), ser.describe(p.y)] for p in mine]}  # fmt: skip
            if (rank, key) not in _IR_SENT:
                msg["ir"] = ir
                _IR_SENT.add((rank, key))
            send_control(self.comms.ctrl, rank, Tag.PARAMSERV, msg)
            bufs = [b for m in model for b in ser.buffers(m)] + [b for h in hp for b in ser.buffers(h)]
            for p in mine:
                bufs += ser.buffers(p.X) + ser.buffers(p.y)
            for r in ser.isend(self.comms.data, bufs, rank, int(Tag.PS_DATA), self.c.chunk):
                self.sending.append((r, mine))

    # -- the message loop ------------------------------------------------------------------------------------------

    def poll_end(self) -> bool:
        """One look for PS_ERROR / PS_DONE of any rank of the call; True if one came. A message of an earlier call
        (its PS_ERROR may come after its PS_DONE) is dropped."""
        for tag in (Tag.PS_ERROR, Tag.PS_DONE):
            m = try_recv_control(self.comms.ctrl, mpi().ANY_SOURCE, int(tag))
            if m is None:
                continue
            rank, _, body = m
            if body.get("call") != self.call:
                return True
            if rank not in self.ranks:
                raise DaphneRuntimeError(f"paramserv: unexpected message {tag.name} from rank {rank}")
            if tag == Tag.PS_DONE:
                self.on_done(rank, body)
            if "message" in body or "error" in body:
                self.on_error(rank, body.get("error", body))
            return True
        return False

    def on_error(self, rank: int, body: dict[str, Any]) -> None:
        from daphnec.runtime.distributed.coordinator import RemoteError

        if rank not in self.failed:
            self.failed.add(rank)
            self.errors.append(RemoteError(rank, body["message"], body.get("loc")))
        self.abort()

    def abort(self) -> None:
        """A rank of the call failed: every other rank still in it stops (once)."""
        if self.aborting:
            return
        self.aborting = True
        _GENERATION[0] += 1
        for r in self.ranks:
            if r not in self.finished:
                send_control(self.comms.ctrl, r, Tag.PS_ABORT, {"call": self.call})

    def on_done(self, rank: int, body: dict[str, Any]) -> None:
        self.logs += [[EpochStats.from_dict(d) for d in log] for log in body.get("logs", [])]
        if "wire" in body:
            self.wire[rank] = int(body["wire"])
        if "epoch_seconds" in body and self.roles.workers.index(rank) == 0:
            self.epoch_seconds = body["epoch_seconds"]
        if "final" in body:
            self.final = self.receive(rank, body["final"])
        if "server" in body:
            s = next(i for i, (r, _, _) in enumerate(self.roles.shards) if r == rank)
            self.shard_results[s] = (body["server"], self.receive(rank, body["server"]["final"]))
        self.finished.add(rank)

    def receive(self, rank: int, descs: list[dict[str, Any]]) -> tuple:
        allocated = [ser.allocate(d) for d in descs]
        reqs = [r for bufs, _ in allocated for r in ser.irecv(self.comms.data, bufs, rank, int(Tag.PS_FINAL),
                                                               self.c.chunk)]  # fmt: skip
        self.wait(lambda: mpi().Request.Testall(reqs))
        return tuple(build() for _, build in allocated)

    def wait(self, done: Callable[[], bool]) -> None:
        b = Idle()
        while not done():
            self.progress_sends()
            self.check()
            b.idle(transfer=True)

    def progress_sends(self) -> None:
        if self.sending:
            self.sending = [(r, k) for r, k in self.sending if not r.Test()]

    def drain_sends(self) -> None:
        self.wait(lambda: not self.sending or mpi().Request.Testall([r for r, _ in self.sending]))
        self.sending = []

    def run(self, loop: ShardLoop | None) -> None:
        """Serve shard 0 (if it is here) and collect every rank's end."""
        while len(self.finished) < len(self.ranks) or (loop is not None and not loop.done):
            did = loop.step() if loop is not None else False
            if loop is not None and loop.error is not None and not self.aborting:
                self.errors.insert(0, loop.error)
                self.abort()
            did = self.poll_end() or did
            if did:
                self.backoff.reset()
                continue
            self.progress_sends()
            self.check()
            self.backoff.idle(transfer=bool(self.sending or (loop is not None and loop.inflight)))
        if loop is not None:
            loop.drain(self.check)


def run_server(c: Any, model: DaphneList, X: object, y: object, upd: Callable[..., object],
               agg: Callable[..., object], hp: DaphneList, opts: PSOptions,
               shipped: tuple[str, ...] | None) -> tuple[DaphneList, CallStats]:  # fmt: skip
    """Rank 0 of an MPI-mode call."""
    n = X.shape[0]  # type: ignore[attr-defined]
    opts, roles = plan_roles(c, opts, model)
    workers = opts.k * opts.threads
    opts.validate(n)
    if shipped is None:
        raise DaphneRuntimeError("paramserv: mode=MPI needs the IR of upd and agg to ship to the workers")
    with c.call_lock:
        c._check()
        _CALLS[0] += 1
        parts = partition(X, y, workers, opts.scheme, opts.effective_seed)
        pushes = [p.pushes for p in plans([p.rows for p in parts], opts.batchsize, opts.freq, opts.nbatches)]
        call = new_call(opts, "MPI", workers)
        r0 = _Rank0(c, roles, _CALLS[0])
        r0.send_jobs(shipped, model, hp, parts, pushes, opts)
        del parts
        r0.drain_sends()  # the workers need their data before anything else happens: then count the bytes
        t0 = time.perf_counter()  # the epochs' seconds (T) start once the data is shipped, as the workers' do
        wire0 = tcp_bytes_sent()
        server: Server | None = None
        loop = None
        log = EpochLog(opts.epochs)
        if roles.shards and roles.shards[0][0] == COORDINATOR:
            server = make_shard(opts, model, hp, agg, pushes, roles.shards[0][1:], log)
            a, b = roles.shards[0][1:]
            loop = ShardLoop(c.comms, c.chunk, server, roles.workers, lambda: r0.aborting,
                             shard_order(opts, len(model), a, b))  # fmt: skip
        r0.run(loop)
        wire = tcp_bytes_sent()
        if wire0 is not None and wire is not None:
            r0.wire[COORDINATOR] = wire - wire0
        r0.drain_sends()
        if r0.errors:
            raise _first_error(r0.errors)
        call.wire = dict(sorted(r0.wire.items()))
        if not roles.shards:
            collect(call, r0.logs, t0, [], opts.epochs)
            for e, sec in enumerate(r0.epoch_seconds[: len(call.epochs)]):
                call.epochs[e].seconds = sec
            assert r0.final is not None
            return as_list(r0.final, model.elem_kind), call
        return _sharded_result(call, r0, server, log, model, opts, t0)


def _sharded_result(call: CallStats, r0: _Rank0, server: Server | None, log: EpochLog, model: DaphneList,
                    opts: PSOptions, t0: float) -> tuple[DaphneList, CallStats]:  # fmt: skip
    """The model from the shards' final matrices; statistics of the workers and of shard 0."""
    parts: list[tuple] = []
    ends: list[list[float]] = []
    logs = list(r0.logs)
    for s in range(len(r0.roles.shards)):
        if s == 0 and server is not None:
            server.finish()
            parts.append(tuple(server.model))
            ends.append(list(server.epoch_ends))
            logs.append(log.epochs)
            continue
        body, final = r0.shard_results[s]
        parts.append(final)
        ends.append([t0 + e for e in body["ends"]])
        if s == 0:
            logs.append([EpochStats.from_dict(d) for d in body["stats"]])
    epoch_ends = [max(e[i] for e in ends) for i in range(opts.epochs)]
    models = server.epoch_models if server is not None and len(parts) == 1 else None
    collect(call, logs, t0, epoch_ends, opts.epochs, models)
    return DaphneList(tuple(m for p in parts for m in p), model.elem_kind), call


def _first_error(errors: list[Exception]) -> Exception:
    """An error of rank 0 itself (agg failed there) if any, else the error of the lowest rank."""
    from daphnec.runtime.distributed.coordinator import RemoteError

    local = [e for e in errors if not isinstance(e, RemoteError)]
    if local:
        return local[0]
    return min(errors, key=lambda e: e.rank)  # type: ignore[attr-defined]


def serve_job(worker: Any, msg: dict[str, Any]) -> None:
    """A worker rank's side of one call (mpi_worker.py; imported lazily: rank 0 never needs it)."""
    from daphnec.runtime.paramserv.mpi_worker import serve_job as serve

    serve(worker, msg)


__all__ = ["run_server", "server_runtime", "serve_job", "LOCAL_FALLBACK_WARNING"]
