"""MPI mode: the server on rank 0, the workers on ranks 1..k (`daphnec --distributed --dist_backend=MPI` under
`mpiexec`).

Rank 0 runs the script; `paramserv(mode="MPI")` there takes the distributed runtime's coordinator
(`runtime.distributed.coordinator.ACTIVE`, which holds the communicators) and its call lock, so the liveness check
reports a dead worker as an error of this call. k defaults to the number of worker ranks; k larger than that is an
error; with no distributed runtime (plain `daphnec`, or one rank) a warning is printed once and the call runs in
LOCAL mode. Worker ranks are in their serve loop (runtime/distributed/worker.py) and get one PARAMSERV message
per call.

Protocol (tags in runtime/distributed/protocol.py; control messages are JSON on the `ctrl` communicator, matrices
raw buffers on `data`, runtime/distributed/serialization.py):

1. Rank 0 -> worker rank: PARAMSERV {IR key (+ the IR text the first time this rank sees it), upd/agg symbols,
   worker index, the worker ranks, P_i of every worker, options, descriptions of model, hyperparameters and the
   worker's partition rows}, then the buffers (PS_DATA): only that worker's rows, gathered once on rank 0 (the
   partition is computed on rank 0 exactly as in LOCAL mode, so both modes see the same batches). The worker
   compiles the IR with its injected `compile_body` (cached per key) while the data arrives, and takes
   `functions[upd]` and `functions[agg]`.
2. Server strategies (BSP, SSP, ASP, SBP): the worker runs the same loop as a LOCAL thread (worker.py) with a
   `RemoteEndpoint`: PS_PUSH {clock, model version used, next clock, gradient descriptions} + the gradient buffers
   (PS_GRAD; compressed payloads when compression is on: top-k values + int32 indices, or int8 codes with the
   scale in the JSON). Rank 0 runs the same `Server` object (server.py) in a message loop: a push is applied when
   its buffers have arrived, and the pull it carries is answered once `try_pull` allows: PS_MODEL {version, or
   "same" when the worker already has that version, or "stop"} + the model buffers (PS_WEIGHTS).
3. ALLREDUCE / LOCALSGD: no server. The k worker ranks form a sub-communicator (MPI_Comm_create_group, cached) and
   each reduction is one `Iallgather` of fixed-size byte buffers (an int64 flag + the payload): every rank decodes
   the k contributions and sums (or averages) them in worker order itself. Not `MPI_Allreduce`: its summation
   order differs between ranks and algorithms, and the replicas must stay bit-identical (and equal to BSP's
   model, which sums in worker order). The flag marks a worker without a batch at this clock (0) or a failed
   worker (-1: every rank stops at that reduction).
4. Every worker ends with PS_DONE {its per-epoch statistics}; worker 0 of a decentralised run adds the final model
   (PS_FINAL). A worker whose UDF raises sends PS_ERROR {message, DaphneDSL location}; rank 0 stops the others
   (STOP answers) and raises `<message> (on distributed worker rank N)` with that location once all have ended.

Nothing blocks in MPI: every wait polls (`protocol.wait_until` / `Backoff`) and rank 0 checks the liveness
verdict in its loops. Byte counts in the statistics are real message sizes (JSON + buffers), counted by the
workers.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from daphnec.runtime.distributed import serialization as ser
from daphnec.runtime.distributed.protocol import COORDINATOR, Backoff, Tag, send_control, try_recv_control
from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.kernels.lists import DaphneList
from daphnec.runtime.paramserv import compression as comp
from daphnec.runtime.paramserv.options import PSOptions
from daphnec.runtime.paramserv.partition import Partition, partition, plans
from daphnec.runtime.paramserv.server import STOP, Pulled, make_server
from daphnec.runtime.paramserv.stats import CallStats, EpochLog, EpochStats, collect, new_call
from daphnec.runtime.paramserv.udf import as_list, mean_in_order, sum_in_order
from daphnec.runtime.paramserv.worker import (
    Aborted,
    Contribution,
    Job,
    run_allreduce_worker,
    run_localsgd_worker,
    run_server_worker,
)
from daphnec.runtime.values import as_dense

LOCAL_FALLBACK_WARNING = ("paramserv: mode=MPI needs the distributed runtime with worker ranks (`mpiexec -n N "
                          "daphnec --distributed --dist_backend=MPI ...`, N >= 2); running LOCAL")  # fmt: skip
_warned = False

_IR_KEYS: dict[str, int] = {}
"""Rank 0: shipped IR texts by key."""
_IR_SENT: set[tuple[int, int]] = set()
"""Rank 0: (rank, key) pairs whose text that rank has."""
_COMPILED: dict[int, object] = {}
"""Worker: compiled IR by key (or the exception compiling it raised)."""
_GROUPS: dict[tuple[int, ...], Any] = {}
"""Worker: sub-communicators of worker ranks (ALLREDUCE / LOCALSGD)."""


class _Idle(Backoff):
    """How paramserv's ranks wait: a very short spin, then sleeps of 20 µs doubling up to 200 µs. A paramserv step
    is short (a batch), so messages come often; but rank 0 and the workers usually share cores with each other
    (and the workers compute), so spinning long (the pipeline protocol's `Backoff` spins 0.5-5 ms) takes the core
    from a computing worker: on 2 cores with 3 ranks that doubled the time per step."""

    SPIN = 5e-5
    CAP = 2e-4

    def idle(self, transfer: bool = False) -> None:
        if time.perf_counter() - self.since < self.SPIN:
            return
        time.sleep(self.pause)
        self.pause = min(self.pause * 2, self.CAP)


def _pack(bufs: list[np.ndarray]) -> np.ndarray:
    """The buffers of a push or a model as one byte buffer: one message per step instead of one per matrix (each
    large message costs a rendezvous of both ranks; the copy is cheap next to that)."""
    views = [ser._bytes(b) for b in bufs]
    return views[0] if len(views) == 1 else np.concatenate(views)


class _Packed:
    """The receiving side of `_pack`: one receive, then the bytes are copied into the given buffers."""

    def __init__(self, comm: Any, bufs: list[np.ndarray], source: int, tag: Tag, chunk: int):
        self.views = [ser._bytes(b) for b in bufs]
        one = len(self.views) == 1
        self.big = self.views[0] if one else np.empty(sum(v.size for v in self.views), dtype=np.uint8)
        self.requests = ser.irecv(comm, [self.big], source, int(tag), chunk)

    def done(self) -> bool:
        return bool(_mpi().Request.Testall(self.requests))

    def finish(self) -> None:
        if len(self.views) > 1:
            pos = 0
            for v in self.views:
                v[:] = self.big[pos : pos + v.size]
                pos += v.size


def _mpi() -> Any:
    from mpi4py import MPI

    return MPI


def _json_size(msg: dict[str, Any]) -> int:
    return len(json.dumps(msg, separators=(",", ":")).encode("utf-8"))


# ---------------------------------------------------------------------------------------------------------------
# Rank 0
# ---------------------------------------------------------------------------------------------------------------


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
class _Push:
    rank: int
    body: dict[str, Any]
    requests: list[Any]
    build: Callable[[], tuple]


class _Rank0:
    """Rank 0's side of one call: jobs out, pushes in, pulls answered, results collected."""

    def __init__(self, c: Any, ranks: list[int]):
        self.c = c
        self.comms = c.comms
        self.ranks = ranks
        self.index = {r: i for i, r in enumerate(ranks)}
        self.sending: list[tuple[Any, object]] = []
        self.finished: set[int] = set()
        self.errors: list[Exception] = []
        self.logs: list[list[EpochStats]] = []
        self.final: tuple | None = None
        self.epoch_seconds: list[float] = []
        """Decentralised runs: the epoch times measured by worker 0."""
        self.inflight: list[_Push] = []
        self.backoff = _Idle()
        self.stopping = False
        self.packed: tuple[int, np.ndarray] = (-1, np.empty(0, dtype=np.uint8))
        """The model of one version packed for sending (every worker pulling that version gets the same buffer)."""

    def check(self) -> None:
        self.c._check()

    def isend(self, bufs: list[np.ndarray], dest: int, tag: Tag, keep: object) -> None:
        for r in ser.isend(self.comms.data, bufs, dest, int(tag), self.c.chunk):
            self.sending.append((r, keep))

    def progress_sends(self) -> None:
        if self.sending:
            self.sending = [(r, k) for r, k in self.sending if not r.Test()]

    # -- jobs ------------------------------------------------------------------------------------------------------

    def send_jobs(self, shipped: tuple[str, str, str], model: DaphneList, hp: DaphneList, parts: list[Partition],
                  pushes: list[int], opts: PSOptions) -> None:  # fmt: skip
        ir, upd_sym, agg_sym = shipped
        key = _IR_KEYS.setdefault(ir, len(_IR_KEYS))
        for i, rank in enumerate(self.ranks):
            p = parts[i].materialized()
            msg: dict[str, Any] = {"key": key, "upd": upd_sym, "agg": agg_sym, "index": i, "ranks": self.ranks,
                                   "pushes": pushes, "opts": opts.to_dict(),
                                   "model": [ser.describe(m) for m in model], "hp": [ser.describe(h) for h in hp],
                                   "X": ser.describe(p.X), "y": ser.describe(p.y)}  # fmt: skip
            if (rank, key) not in _IR_SENT:
                msg["ir"] = ir
                _IR_SENT.add((rank, key))
            send_control(self.comms.ctrl, rank, Tag.PARAMSERV, msg)
            bufs = [b for m in model for b in ser.buffers(m)] + [b for h in hp for b in ser.buffers(h)]
            bufs += ser.buffers(p.X) + ser.buffers(p.y)
            self.isend(bufs, rank, Tag.PS_DATA, p)

    # -- the message loop ------------------------------------------------------------------------------------------

    def poll(self) -> tuple[int, Tag, dict[str, Any]] | None:
        m = try_recv_control(self.comms.ctrl, _mpi().ANY_SOURCE)
        if m is None:
            return None
        if m[0] not in self.index:
            raise DaphneRuntimeError(f"paramserv: unexpected message {m[1].name} from rank {m[0]}")
        self.backoff.reset()
        return m

    def on_end(self, rank: int, tag: Tag, body: dict[str, Any]) -> bool:
        """PS_DONE / PS_ERROR; False for other tags."""
        if tag == Tag.PS_ERROR:
            from daphnec.runtime.distributed.coordinator import RemoteError

            self.errors.append(RemoteError(rank, body["message"], body.get("loc")))
            self.logs.append([EpochStats.from_dict(d) for d in body.get("stats", [])])
            self.finished.add(rank)
            return True
        if tag == Tag.PS_DONE:
            self.logs.append([EpochStats.from_dict(d) for d in body["stats"]])
            if "epoch_seconds" in body and self.index[rank] == 0:
                self.epoch_seconds = body["epoch_seconds"]
            if "final" in body:
                self.receive_final(rank, body["final"])
            self.finished.add(rank)
            return True
        return False

    def receive_final(self, rank: int, descs: list[dict[str, Any]]) -> None:
        allocated = [ser.allocate(d) for d in descs]
        reqs = [r for bufs, _ in allocated for r in ser.irecv(self.comms.data, bufs, rank, int(Tag.PS_FINAL),
                                                               self.c.chunk)]  # fmt: skip
        self.wait(lambda: _mpi().Request.Testall(reqs))
        self.final = tuple(build() for _, build in allocated)

    def wait(self, done: Callable[[], bool]) -> None:
        b = _Idle()
        while not done():
            self.progress_sends()
            self.check()
            b.idle(transfer=True)

    def idle(self) -> None:
        self.progress_sends()
        self.check()
        self.backoff.idle(transfer=bool(self.inflight or self.sending))

    def drain_sends(self) -> None:
        self.wait(lambda: not self.sending or _mpi().Request.Testall([r for r, _ in self.sending]))
        self.sending = []

    # -- server strategies -----------------------------------------------------------------------------------------

    def serve(self, server: Any) -> None:
        """Apply pushes and answer pulls until every worker has ended. After a failure (a worker's PS_ERROR, or
        `agg` raising here) every pull is answered with STOP and further gradients are ignored."""
        waiting: dict[int, tuple[int, int]] = {}
        self.stopping = False
        while len(self.finished) < len(self.ranks) or self.inflight:
            m = self.poll()
            if m is not None:
                rank, tag, body = m
                if tag == Tag.PS_PUSH:
                    self.inflight.append(self.post_push(rank, body))
                elif self.on_end(rank, tag, body):
                    waiting.pop(rank, None)
                    if tag == Tag.PS_ERROR:
                        self.stopping = True
                        self.answer(server, waiting)
                else:
                    raise DaphneRuntimeError(f"paramserv: unexpected message {tag.name} from rank {rank}")
                continue
            done = [p for p in self.inflight if _mpi().Request.Testall(p.requests)] if self.inflight else []
            if not done:
                self.idle()
                continue
            for p in done:
                self.inflight.remove(p)
                if not self.stopping:
                    try:
                        server.push(self.index[p.rank], p.body["c"], p.build(), p.body["v"])
                    except Exception as e:  # noqa: BLE001 - agg failed on rank 0: stop the workers, raise at the end
                        self.errors.insert(0, e)
                        self.stopping = True
                if p.body["next"] is not None:
                    waiting[p.rank] = (p.body["next"], p.body["v"])
            self.answer(server, waiting)

    def answer(self, server: Any, waiting: dict[int, tuple[int, int]]) -> None:
        """Answer the waiting pulls the server now allows (all of them with STOP once stopping)."""
        for rank in list(waiting):
            nxt, used = waiting[rank]
            r = STOP if self.stopping else server.try_pull(self.index[rank], nxt)
            if r is not None:
                del waiting[rank]
                self.reply(rank, r, used)

    def post_push(self, rank: int, body: dict[str, Any]) -> _Push:
        allocated: list[tuple[list[np.ndarray], object]] = []
        for d in body["g"]:
            if d["k"] in ("topk", "int8"):
                allocated.append((comp.allocate(d), d))
            else:
                allocated.append(ser.allocate(d))
        recv = _Packed(self.comms.data, [b for bufs, _ in allocated for b in bufs], rank, Tag.PS_GRAD, self.c.chunk)

        def build() -> tuple:
            recv.finish()
            return tuple(comp.decode(how, bufs) if isinstance(how, dict) else how() for bufs, how in allocated)  # type: ignore[operator]

        return _Push(rank, body, recv.requests, build)

    def reply(self, rank: int, r: Pulled, used: int) -> None:
        if r == STOP:
            send_control(self.comms.ctrl, rank, Tag.PS_MODEL, {"stop": True})
            return
        model, version = r  # type: ignore[misc]
        if version == used:
            send_control(self.comms.ctrl, rank, Tag.PS_MODEL, {"v": version, "same": True})
            return
        send_control(self.comms.ctrl, rank, Tag.PS_MODEL, {"v": version, "desc": [ser.describe(m) for m in model]})
        if self.packed[0] != version:
            self.packed = (version, _pack([b for m in model for b in ser.buffers(m)]))
        self.isend([self.packed[1]], rank, Tag.PS_WEIGHTS, self.packed[1])

    # -- decentralised -----------------------------------------------------------------------------------------------

    def collect(self) -> None:
        while len(self.finished) < len(self.ranks):
            m = self.poll()
            if m is None:
                self.idle()
            elif not self.on_end(*m):
                raise DaphneRuntimeError(f"paramserv: unexpected message {m[1].name} from rank {m[0]}")


def run_server(c: Any, model: DaphneList, X: object, y: object, upd: Callable[..., object],
               agg: Callable[..., object], hp: DaphneList, opts: PSOptions,
               shipped: tuple[str, str, str] | None) -> tuple[DaphneList, CallStats]:  # fmt: skip
    """Rank 0 of an MPI-mode call."""
    n = X.shape[0]  # type: ignore[attr-defined]
    available = len(c.workers)
    k = opts.k if opts.k > 0 else available
    if k > available:
        raise DaphneRuntimeError(f"paramserv: k={k} workers but only {available} MPI worker ranks "
                                 f"(mpiexec -n {available + 1}: rank 0 is the server)")  # fmt: skip
    opts = dataclasses.replace(opts, k=k)
    opts.validate(n)
    if shipped is None:
        raise DaphneRuntimeError("paramserv: mode=MPI needs the IR of upd and agg to ship to the workers")
    with c.call_lock:
        c._check()
        ranks = list(c.workers[:k])
        parts = partition(X, y, k, opts.scheme, opts.effective_seed)
        pushes = [p.pushes for p in plans([p.rows for p in parts], opts.batchsize, opts.freq, opts.nbatches)]
        call = new_call(opts, "MPI", k)
        t0 = time.perf_counter()
        r0 = _Rank0(c, ranks)
        r0.send_jobs(shipped, model, hp, parts, pushes, opts)
        del parts
        server = None
        if opts.has_server:
            log = EpochLog(opts.epochs)
            server = make_server(opts.utype, model, hp, agg, log, pushes, opts.epochs, opts.staleness,
                                 opts.backup_workers)  # fmt: skip
            r0.serve(server)
            server.finish()
            r0.logs.append(log.epochs)
        else:
            r0.collect()
        r0.drain_sends()
        if r0.errors:
            raise _first_error(r0.errors)
        if server is not None:
            collect(call, r0.logs, t0, server.epoch_ends, opts.epochs, server.epoch_models)
            return server.model, call
        collect(call, r0.logs, t0, [], opts.epochs)
        for e, sec in enumerate(r0.epoch_seconds[: len(call.epochs)]):
            call.epochs[e].seconds = sec
        assert r0.final is not None
        return as_list(r0.final, model.elem_kind), call


def _first_error(errors: list[Exception]) -> Exception:
    """An error of rank 0 itself (agg failed there) if any, else the worker error of the lowest rank."""
    from daphnec.runtime.distributed.coordinator import RemoteError

    local = [e for e in errors if not isinstance(e, RemoteError)]
    if local:
        return local[0]
    return min(errors, key=lambda e: e.rank)  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------------------------------------------
# Worker ranks
# ---------------------------------------------------------------------------------------------------------------


class RemoteEndpoint:
    """A worker rank's view of the server on rank 0 (`worker.Endpoint`)."""

    def __init__(self, comms: Any, chunk: int, model: DaphneList):
        self.comms = comms
        self.chunk = chunk
        self.model = model
        self.version = 0

    def push_pull(self, w: int, clock: int, used: int, nxt: int | None, c: Contribution,
                  stats: EpochStats) -> Pulled:  # fmt: skip
        descs: list[dict[str, Any]] = []
        bufs: list[np.ndarray] = []
        payloads = c.payloads or [None] * len(c.grads)
        for g, p in zip(c.grads, payloads):
            if p is None:
                descs.append(ser.describe(g))
                bufs += ser.buffers(g)
            else:
                descs.append(p.desc)
                bufs += [ser._bytes(b) for b in p.buffers]
        msg = {"c": clock, "v": used, "next": nxt, "g": descs}
        header = _json_size(msg)
        stats.push_raw += header
        stats.push_sent += header
        send_control(self.comms.ctrl, COORDINATOR, Tag.PS_PUSH, msg)
        packed = _pack(bufs)
        reqs = ser.isend(self.comms.data, [packed], COORDINATOR, int(Tag.PS_GRAD), self.chunk)
        if nxt is None:
            _wait(lambda: _mpi().Request.Testall(reqs))
            return None
        t0 = time.perf_counter()
        box: list[tuple[int, Tag, dict[str, Any]]] = []

        def arrived() -> bool:
            m = try_recv_control(self.comms.ctrl, COORDINATOR, int(Tag.PS_MODEL))
            if m is not None:
                box.append(m)
            return bool(box)

        _wait(arrived, transfer=False)
        body = box[0][2]
        stats.pulled += _json_size(body)
        if body.get("stop"):
            r: Pulled = STOP
        elif body.get("same"):
            r = (self.model, body["v"])
        else:
            allocated = [ser.allocate(d) for d in body["desc"]]
            recv = _Packed(self.comms.data, [b for bufs, _ in allocated for b in bufs], COORDINATOR, Tag.PS_WEIGHTS,
                           self.chunk)  # fmt: skip
            _wait(recv.done)
            recv.finish()
            self.model = DaphneList(tuple(build() for _, build in allocated), self.model.elem_kind)
            stats.pulled += sum(ser.nbytes(d) for d in body["desc"])
            r = (self.model, body["v"])
        stats.wait_seconds += time.perf_counter() - t0
        _wait(lambda: _mpi().Request.Testall(reqs))
        return r


def _wait(done: Callable[[], bool], transfer: bool = True) -> None:
    """Workers wait without a failure check (as runtime/distributed/worker.py): if rank 0 dies, the process
    manager or the liveness watchdog ends this process."""
    b = _Idle()
    while not done():
        b.idle(transfer)


class MpiReducer:
    """ALLREDUCE / LOCALSGD reductions among the worker ranks: one Iallgather of fixed-size byte buffers each
    (gradients for ALLREDUCE, model replicas for LOCALSGD: the size is the same at every reduction of a run)."""

    def __init__(self, comm: Any, k: int, model: DaphneList, c: comp.Compression, collectives: int, models: bool):
        self.comm = comm
        self.k = k
        self.c = c
        self.left = collectives
        """Reductions still to come in this run (a failing worker joins the next one only if there is one)."""
        self.failed = False
        self.shapes = [tuple(m.shape) for m in model]
        self.dtypes = [np.dtype(m.dtype) for m in model]
        self.model_sizes = [int(np.prod(s)) * d.itemsize for s, d in zip(self.shapes, self.dtypes)]
        self.grad_sizes = [self._grad_size(s, d) for s, d in zip(self.shapes, self.dtypes)]
        self.size = sum(self.model_sizes) if models else sum(self.grad_sizes)

    def _compressed(self, shape: tuple[int, ...], dt: np.dtype) -> bool:
        return bool(self.c) and dt.kind == "f" and int(np.prod(shape)) > 0

    def _grad_size(self, shape: tuple[int, ...], dt: np.dtype) -> int:
        if not self._compressed(shape, dt):
            return int(np.prod(shape)) * dt.itemsize
        return comp.payload_size(self.c, shape, dt) + (8 if self.c.kind == "int8" else 0)

    def _gather(self, flag: int, payload: list[np.ndarray], stats: EpochStats | None) -> list[np.ndarray]:
        """The k (flag, payload) buffers in worker order; raises Aborted if some worker failed."""
        MPI = _mpi()
        size = self.size
        send = np.zeros(8 + size, dtype=np.uint8)
        send[:8].view(np.int64)[0] = flag
        pos = 8
        for b in payload:
            raw = ser._bytes(b)
            send[pos : pos + raw.size] = raw
            pos += raw.size
        recv = np.empty(self.k * (8 + size), dtype=np.uint8)
        t0 = time.perf_counter()
        req = self.comm.Iallgather([send, MPI.BYTE], [recv, MPI.BYTE])
        _wait(req.Test)
        self.left -= 1
        parts = [recv[i * (8 + size) : (i + 1) * (8 + size)] for i in range(self.k)]
        if stats is not None:
            stats.wait_seconds += time.perf_counter() - t0
            stats.pulled += (self.k - 1) * (8 + size)
            stats.push_raw += 8
            stats.push_sent += 8
        if any(int(p[:8].view(np.int64)[0]) < 0 for p in parts):
            raise Aborted
        return parts

    def fail(self) -> None:
        """This worker failed: tell the others at the next reduction (if the run has one left)."""
        if self.failed or self.left <= 0:
            return
        self.failed = True
        try:
            self._gather(-1, [], None)
        except Aborted:
            pass

    def _grad_payload(self, c: Contribution) -> list[np.ndarray]:
        out: list[np.ndarray] = []
        payloads = c.payloads or [None] * len(c.grads)
        for j, (g, p) in enumerate(zip(c.grads, payloads)):
            if p is not None:
                if np.dtype(p.desc["dtype"]) != self.dtypes[j]:
                    want, got = self.dtypes[j], p.desc["dtype"]
                    raise DaphneRuntimeError(f"paramserv: ALLREDUCE over MPI with compression needs gradients of the "
                                             f"model's value type ({want}), got {got}")  # fmt: skip
                out += list(p.buffers)
                if p.desc["k"] == "int8":
                    out.append(np.array([p.desc["scale"]], dtype=np.float64))
            else:
                out.append(np.ascontiguousarray(as_dense(g), dtype=self.dtypes[j]))
        return out

    def _decode_grads(self, part: np.ndarray) -> tuple:
        pos, out = 8, []
        for j, (shape, dt) in enumerate(zip(self.shapes, self.dtypes)):
            n = int(np.prod(shape))
            if not self._compressed(shape, dt):
                out.append(part[pos : pos + n * dt.itemsize].view(dt).reshape(shape).copy())
            elif self.c.kind == "topk":
                m = comp.topk_count(n, self.c.fraction)
                vals = part[pos : pos + m * dt.itemsize].view(dt)
                idx = part[pos + m * dt.itemsize : pos + m * (dt.itemsize + 4)].view(np.int32)
                out.append(comp.decode({"k": "topk", "shape": list(shape), "dtype": dt.str, "m": m}, [vals, idx]))
            else:
                q = part[pos : pos + n].view(np.int8)
                scale = float(part[pos + n : pos + n + 8].view(np.float64)[0])
                out.append(comp.decode({"k": "int8", "shape": list(shape), "dtype": dt.str, "scale": scale}, [q]))
            pos += self.grad_sizes[j]
        return tuple(out)

    def reduce(self, w: int, c: Contribution | None, stats: EpochStats) -> tuple:
        parts = self._gather(1 if c is not None else 0, self._grad_payload(c) if c is not None else [], stats)
        return sum_in_order([self._decode_grads(p) for p in parts if int(p[:8].view(np.int64)[0]) == 1])

    def average(self, w: int, model: DaphneList, stats: EpochStats) -> tuple:
        stats.pushes += 1
        stats.push_raw += self.size
        stats.push_sent += self.size
        payload = [np.ascontiguousarray(as_dense(m), dtype=dt) for m, dt in zip(model, self.dtypes)]
        models = []
        for p in self._gather(1, payload, stats):
            pos, ms = 8, []
            for shape, dt, nb in zip(self.shapes, self.dtypes, self.model_sizes):
                ms.append(p[pos : pos + nb].view(dt).reshape(shape).copy())
                pos += nb
            models.append(ms)
        return mean_in_order(models)


def _subcomm(comms: Any, ranks: list[int]) -> Any:
    """The communicator of these worker ranks (created once, collectively among them only)."""
    key = tuple(ranks)
    if key not in _GROUPS:
        group = comms.world.Get_group().Incl(list(ranks))
        _GROUPS[key] = comms.world.Create_group(group, tag=int(Tag.PARAMSERV))
        group.Free()
    return _GROUPS[key]


def _collectives(opts: PSOptions, pushes: list[int]) -> int:
    total = opts.epochs * max(pushes)
    if opts.utype == "ALLREDUCE":
        return total
    return sum(1 for clock in range(total) if (clock + 1) % opts.period == 0 or clock == total - 1)


def _error_body(e: BaseException) -> dict[str, Any]:
    loc = getattr(e, "loc", None)
    return {"message": getattr(e, "message", None) or str(e) or type(e).__name__,
            "loc": [loc.file, loc.line, loc.col] if loc is not None else None}  # fmt: skip


def serve_job(worker: Any, msg: dict[str, Any]) -> None:
    """A worker rank's side of one paramserv call (called from `Worker.serve` for a PARAMSERV message)."""
    comms, chunk = worker.comms, worker.chunk
    sending: list[Any] = []
    job: Job | None = None
    reducer: MpiReducer | None = None
    opts = PSOptions.from_dict(msg["opts"])
    try:
        descs = msg["model"] + msg["hp"] + [msg["X"], msg["y"]]
        allocated = [ser.allocate(d) for d in descs]
        reqs = [r for bufs, _ in allocated for r in ser.irecv(comms.data, bufs, COORDINATOR, int(Tag.PS_DATA), chunk)]
        try:
            functions = _functions(worker, msg)
        finally:
            _wait(lambda: _mpi().Request.Testall(reqs))  # the data arrives whatever happens (rank 0 waits for it)
        values = [build() for _, build in allocated]
        nm, nh = len(msg["model"]), len(msg["hp"])
        model = as_list(values[:nm])
        hp = as_list(values[nm : nm + nh])
        part = Partition(values[-2], values[-1])
        i = msg["index"]
        plan = plans([part.rows], opts.batchsize, opts.freq, opts.nbatches)[0]
        upd, agg = _function(functions, msg["upd"]), _function(functions, msg["agg"])
        job = Job(i, model, hp, upd, agg, part, plan, msg["pushes"], opts)
        t0 = time.perf_counter()
        done: dict[str, Any] = {}
        final: tuple | None = None
        if opts.has_server:
            run_server_worker(job, RemoteEndpoint(comms, chunk, model))
        else:
            reducer = MpiReducer(_subcomm(comms, msg["ranks"]), len(msg["ranks"]), model, opts.compressor,
                                 _collectives(opts, msg["pushes"]), opts.utype == "LOCALSGD")  # fmt: skip
            loop = run_allreduce_worker if opts.utype == "ALLREDUCE" else run_localsgd_worker
            result = loop(job, reducer)
            done["epoch_seconds"] = [end - start for start, end in zip([t0, *job.epoch_ends], job.epoch_ends)]
            if i == 0:
                final = tuple(result)
                done["final"] = [ser.describe(m) for m in final]
        done["stats"] = [s.to_dict() for s in job.log.epochs]
        send_control(comms.ctrl, COORDINATOR, Tag.PS_DONE, done)
        if final is not None:
            sending += ser.isend(comms.data, [b for m in final for b in ser.buffers(m)], COORDINATOR,
                                 int(Tag.PS_FINAL), chunk)  # fmt: skip
    except Aborted:
        stats = [s.to_dict() for s in job.log.epochs] if job is not None else []
        send_control(comms.ctrl, COORDINATOR, Tag.PS_DONE, {"stats": stats, "aborted": True})
    except Exception as e:  # noqa: BLE001 - reported to rank 0, which raises it with the location
        if reducer is None and not opts.has_server:
            reducer = _failing_reducer(comms, msg, opts)
        if reducer is not None:
            reducer.fail()
        stats = [s.to_dict() for s in job.log.epochs] if job is not None else []
        send_control(comms.ctrl, COORDINATOR, Tag.PS_ERROR, {**_error_body(e), "stats": stats})
    _wait(lambda: _mpi().Request.Testall(sending) if sending else True)


def _failing_reducer(comms: Any, msg: dict[str, Any], opts: PSOptions) -> MpiReducer | None:
    """A reducer for a worker that failed before its loop started (the others wait at the first reduction)."""
    try:
        model = as_list([np.empty(d["shape"], dtype=np.dtype(d["dtype"])) for d in msg["model"]])
        return MpiReducer(_subcomm(comms, msg["ranks"]), len(msg["ranks"]), model, opts.compressor,
                          _collectives(opts, msg["pushes"]), opts.utype == "LOCALSGD")  # fmt: skip
    except Exception:  # noqa: BLE001 - a model that cannot even be described: the others cannot proceed either
        return None


def _functions(worker: Any, msg: dict[str, Any]) -> dict[str, Callable[..., object]]:
    key = msg["key"]
    if key not in _COMPILED:
        try:
            _COMPILED[key] = worker.compile_body(msg.get("ir") or "")
        except Exception as e:  # noqa: BLE001 - raised with every call that uses this text
            _COMPILED[key] = e
    compiled = _COMPILED[key]
    if isinstance(compiled, Exception):
        raise compiled
    return compiled.functions  # type: ignore[attr-defined]


def _function(functions: dict[str, Callable[..., object]], sym: str) -> Callable[..., object]:
    fn = functions.get(sym)
    if fn is None:
        raise DaphneRuntimeError(f"paramserv: function '{sym}' is not in the IR shipped to the worker")
    return fn
