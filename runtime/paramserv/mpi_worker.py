"""MPI mode, ranks 1..N-1: one rank's part of a `paramserv` call (`serve_job`, called from the worker loop of the
distributed runtime for a PARAMSERV message).

A rank has one or two roles in a call:
- **worker** (worker index i): it runs the worker loops of worker.py for its `threads` workers (indices
  i*threads .. i*threads + threads - 1), talking to the server shards through `RemoteEndpoint`s (server
  strategies), or to the other worker ranks through a `Collective` (ALLREDUCE, LOCALSGD, GOSSIP). With threads > 1
  its workers' gradients are summed on the rank first (`RankReducer`), then among the ranks.
- **server shard** s: a dedicated server rank runs the shard's loop (mpi_server.ShardLoop) in its main thread; a
  co-located shard runs it in a thread beside the worker loop.

The rank receives the model, the hyperparameters and its workers' partitions (PS_DATA), compiles the shipped IR
(cached by key), runs its roles, and ends with exactly one PS_DONE to rank 0: its workers' statistics, its
shard's statistics and final matrices (PS_FINAL), worker 0's final model in a decentralised call, and the bytes
it sent over TCP (netbytes.py). A failure is reported at once (PS_ERROR {message, DaphneDSL location}), so that
rank 0 can stop the others; the rank still serves its shard until every worker is done, then sends PS_DONE.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from daphnec.runtime import testing_hooks
from daphnec.runtime.distributed import serialization as ser
from daphnec.runtime.distributed.protocol import COORDINATOR, Tag, send_control, try_recv_control
from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.kernels.lists import DaphneList
from daphnec.runtime.paramserv.collectives import Collective, MpiMixer, MpiReducer
from daphnec.runtime.paramserv.local import LocalReducer, run_threads
from daphnec.runtime.paramserv.mpi_server import ShardLoop, ShardThread
from daphnec.runtime.paramserv.netbytes import tcp_bytes_sent
from daphnec.runtime.paramserv.options import PSOptions
from daphnec.runtime.paramserv.overlap import OverlapReducer
from daphnec.runtime.paramserv.partition import Partition, plans
from daphnec.runtime.paramserv.pulls import shard_order
from daphnec.runtime.paramserv.reduction import tree_sum
from daphnec.runtime.paramserv.server import STOP, Pulled, make_shard
from daphnec.runtime.paramserv.stats import EpochLog, EpochStats, Flights
from daphnec.runtime.paramserv.transport import Packed, Waiter, json_size, mpi, pack
from daphnec.runtime.paramserv.udf import as_list
from daphnec.runtime.paramserv.worker import (
    Aborted,
    Contribution,
    Endpoint,
    Job,
    ShardedEndpoint,
    run_allreduce_worker,
    run_easgd_worker,
    run_gossip_worker,
    run_localsgd_worker,
    run_server_worker,
)

_COMPILED: dict[int, object] = {}
"""Compiled IR by key (or the exception compiling it raised)."""
_GROUPS: dict[tuple[tuple[int, ...], int], Any] = {}
"""Communicators of worker ranks (decentralised strategies), by (ranks, generation)."""


class RemoteEndpoint:
    """A worker rank's view of one server shard on rank `server` (`worker.Endpoint`)."""

    def __init__(self, comms: Any, chunk: int, server: int, model: DaphneList, waiter: Waiter,
                 flights: Flights | None = None):  # fmt: skip
        self.comms = comms
        self.chunk = chunk
        self.server = server
        self.model = model
        self.waiter = waiter
        self.sends: list[Any] = []
        self.closed = False
        self.flights = flights if flights is not None else Flights(-1)
        """When this worker's messages are on the wire (N of the overlap coefficient; shared by its shards)."""
        self.open: list[tuple[list[Any], float, int]] = []
        """Pushes whose sends have not completed yet: requests, post time, matrix (-1: a whole push)."""
        self.lock = threading.Lock()

    def send(self, w: int, clock: int, used: int, nxt: int | None, c: Contribution, stats: EpochStats,
             skip: frozenset[int] | set[int] = frozenset()) -> None:  # fmt: skip
        """Push the contribution; `skip`: the positions that went ahead by `send_part` (then this message ends
        the push and carries the rest)."""
        descs: list[dict[str, Any]] = []
        bufs: list[np.ndarray] = []
        payloads = c.payloads or [None] * len(c.grads)
        rest = [j for j in range(len(c.grads)) if j not in skip]
        for j in rest:
            g, p = c.grads[j], payloads[j]
            if p is None:
                descs.append(ser.describe(g))
                bufs += ser.buffers(g)
            else:
                descs.append(p.desc)
                bufs += [ser._bytes(b) for b in p.buffers]
        msg: dict[str, Any] = {"c": clock, "v": used, "next": nxt, "g": descs}
        if skip:
            msg.update(j=rest, end=True)
        self._post(msg, bufs, stats, rest[0] if len(rest) == 1 else -1)

    def send_part(self, clock: int, used: int, j: int, g: object, stats: EpochStats, pull: int | None = None) -> None:
        """Push gradient j of the push for `clock` ahead of the others (worker.MatrixPushes); `send` with
        `skip` ends the push. `pull`: ask for the model of that clock now, as a streamed pull (mpi_server.py)."""
        msg: dict[str, Any] = {"c": clock, "v": used, "next": None, "g": [ser.describe(g)], "j": [j]}
        if pull is not None:
            msg["p"] = pull
        self._post(msg, ser.buffers(g), stats, j)

    def _post(self, msg: dict[str, Any], bufs: list[np.ndarray], stats: EpochStats, j: int) -> None:
        header = json_size(msg)
        stats.push_raw += header
        stats.push_sent += header
        t0 = time.perf_counter()
        send_control(self.comms.ctrl, self.server, Tag.PS_PUSH, msg)
        if msg["g"]:
            reqs = ser.isend(self.comms.data, [pack(bufs)], self.server, int(Tag.PS_GRAD), self.chunk)
            with self.lock:  # a streamed pull's thread waits for the sends too (`_wait_sends`)
                self.sends += reqs
                self.open.append((reqs, t0, j))

    def _reap(self, finished: bool = False) -> None:
        """Record the pushes whose sends have completed (all of them when `finished`: they were waited for)."""
        with self.lock:
            if not self.open:
                return
            t = time.perf_counter()
            MPI = mpi()
            still = []
            for reqs, t0, j in self.open:
                if finished or MPI.Request.Testall(reqs):
                    self.flights.add("push", j, t0, t)
                else:
                    still.append((reqs, t0, j))
            self.open = still

    def receive(self, w: int, nxt: int | None, used: int, stats: EpochStats,
                arrive: Callable[[int, object], None] | None = None) -> Pulled:  # fmt: skip
        """The shard's answer; with `arrive` (an ordered pull, pulls.py) each matrix is handed to it as soon as it
        is there."""
        waiter = self.waiter
        if nxt is None:
            self._wait_sends()
            return None
        t0 = time.perf_counter()
        box: list[tuple[int, Tag, dict[str, Any]]] = []

        def arrived() -> bool:
            self._reap()
            m = try_recv_control(self.comms.ctrl, self.server, int(Tag.PS_MODEL))
            if m is not None:
                box.append(m)
            return bool(box)

        # the shard always answers (STOP once the call stops), so this wait needs no abort: the conversation stays
        # in step and no answer is left over for a later call
        waiter.wait(arrived, transfer=False, abortable=False)
        body = box[0][2]
        stats.pulled += json_size(body)
        if "j" in body:
            r = self._streamed(body, arrived, box, stats, arrive)
        elif body.get("stop"):
            r: Pulled = STOP
        elif body.get("same"):
            for j, m in enumerate(self.model if arrive is not None else ()):
                arrive(j, m)  # type: ignore[misc]
            r = (self.model, body["v"])
        else:
            allocated = [ser.allocate(d) for d in body["desc"]]
            groups = [[j] for j in body["o"]] if "o" in body else [list(range(len(allocated)))]
            recvs = [Packed(self.comms.data, [b for j in g for b in allocated[j][0]], self.server,
                            int(Tag.PS_WEIGHTS), self.chunk) for g in groups]  # fmt: skip
            values: list[object] = [None] * len(allocated)
            t1 = time.perf_counter()  # the answer is here: its matrices follow on the wire
            for g, recv in zip(groups, recvs):  # in the order the shard sends them
                waiter.wait(recv.done, abortable=False)
                recv.finish()
                t2 = time.perf_counter()
                self.flights.add("pull", g[0] if len(g) == 1 else -1, t1, t2)
                t1 = t2
                for j in g:
                    values[j] = allocated[j][1]()
                    if arrive is not None:
                        arrive(j, values[j])
            self.model = DaphneList(tuple(values), self.model.elem_kind)
            stats.pulled += sum(ser.nbytes(d) for d in body["desc"])
            r = (self.model, body["v"])
        stats.wait_seconds += time.perf_counter() - t0
        self._wait_sends()
        return r

    def _streamed(self, body: dict[str, Any], arrived: Callable[[], bool], box: list[Any], stats: EpochStats,
                  arrive: Callable[[int, object], None] | None) -> Pulled:  # fmt: skip
        """A streamed pull (mpi_server.py): one PS_MODEL {v, j, d} + PS_WEIGHTS per matrix, until every matrix is
        here (or {stop: true}). The receive of every matrix whose PS_MODEL has come is posted at once, before
        waiting for the first of them: the shard sends a large matrix only once its receive is posted (MPI's
        rendezvous), so posting it only after the previous matrix has arrived would cost a round trip per matrix."""
        values: list[object] = list(self.model)
        posted: list[tuple[int, dict[str, Any], Packed, Callable[[], object]]] = []
        bodies = [body]
        got = 0
        t1 = time.perf_counter()

        def more() -> None:
            """Post the receives of the PS_MODELs that have come."""
            while True:
                for b in bodies:
                    if b.get("stop"):
                        posted.append((-1, b, None, lambda: None))  # type: ignore[arg-type]
                    else:
                        bufs, build = ser.allocate(b["d"])
                        recv = Packed(self.comms.data, bufs, self.server, int(Tag.PS_WEIGHTS), self.chunk)
                        posted.append((b["j"], b, recv, build))
                bodies.clear()
                if len(posted) + got >= len(values):
                    return
                m = try_recv_control(self.comms.ctrl, self.server, int(Tag.PS_MODEL))
                if m is None:
                    return
                stats.pulled += json_size(m[2])
                bodies.append(m[2])

        while got < len(values):
            more()
            if not posted:
                box.clear()
                self.waiter.wait(arrived, transfer=False, abortable=False)
                bodies.append(box[0][2])
                stats.pulled += json_size(box[0][2])
                continue
            j, b, recv, build = posted.pop(0)
            if j < 0:
                return STOP

            def here(recv: Packed = recv) -> bool:
                more()  # meanwhile, post the receives of the matrices announced since
                return recv.done()

            self.waiter.wait(here, abortable=False)
            recv.finish()
            t2 = time.perf_counter()
            self.flights.add("pull", j, t1, t2)
            t1 = t2
            values[j] = build()
            stats.pulled += ser.nbytes(b["d"])
            if arrive is not None:
                arrive(j, values[j])
            got += 1
            version = b["v"]
        self.model = DaphneList(tuple(values), self.model.elem_kind)
        return self.model, version

    def _wait_sends(self) -> None:
        with self.lock:
            sends, self.sends = self.sends, []
        self.waiter.requests(sends, abortable=False)
        self._reap(finished=True)

    def progress(self) -> None:
        """Let MPI progress this rank's messages (an Iprobe for a tag no worker receives; worker.EarlyPushes), and
        note which pushes have left."""
        self.comms.data.Iprobe(source=mpi().ANY_SOURCE, tag=int(Tag.PS_GRAD))
        self._reap()

    def close(self, w: int) -> None:
        """Tell the shard this worker is done (once)."""
        if not self.closed:
            self.closed = True
            send_control(self.comms.ctrl, self.server, Tag.PS_PUSH, {"bye": True})


class RankReducer(LocalReducer):
    """threads > 1: the rank's workers meet at a barrier; the last to arrive sums their gradients (the canonical
    tree over the rank's workers) and runs the reduction among the ranks for all of them."""

    def __init__(self, threads: int, inner: MpiReducer):
        super().__init__(threads)
        self.inner = inner

    def reduce(self, w: int, c: Contribution | None, stats: EpochStats) -> tuple:
        local = w % self.k

        def combine(slots: list[object]) -> tuple:
            present = [s for s in slots if s is not None]
            block = None
            if present:
                summed = tree_sum([s.grads if s is not None else None for s in slots])  # type: ignore[attr-defined]
                block = Contribution(summed, None, 0, 0)
            return self.inner.reduce(w, block, stats)

        return self._exchange(local, c, 0, combine, stats)  # type: ignore[return-value]

    def average(self, w: int, model: DaphneList, stats: EpochStats) -> tuple:
        raise NotImplementedError("threads > 1 is for ALLREDUCE")


def serve_job(worker: Any, msg: dict[str, Any]) -> None:
    """This rank's part of one paramserv call (see the module docstring)."""
    comms, chunk = worker.comms, worker.chunk
    call = msg["call"]
    waiter = Waiter(comms.ctrl, call)
    opts = PSOptions.from_dict(msg["opts"])
    wire0 = tcp_bytes_sent()
    index, shard = msg.get("index"), msg.get("shard")
    shards: list[list[int]] = msg.get("shards", [])  # [rank, first matrix, end] per shard
    state = _State()
    state.call = call
    endpoints: list[RemoteEndpoint] = []
    try:
        model, hp, parts = _receive_data(comms, chunk, msg, waiter)
        if index is not None and opts.has_server:
            flights = Flights(index, testing_hooks.ps_timeline())
            endpoints = [RemoteEndpoint(comms, chunk, r, as_list(model[a:b], model.elem_kind), waiter, flights)
                         for r, a, b in shards]  # fmt: skip
        functions = _functions(worker, msg)
        agg = _function(functions, msg["agg"])
        if shard is not None:
            a, b = shards[shard][1], shards[shard][2]
            server = make_shard(opts, model, hp, agg, msg["pushes"], (a, b), EpochLog(opts.epochs))
            state.loop = ShardLoop(comms, chunk, server, msg["ranks"], lambda: waiter.aborted or state.failed,
                                   shard_order(opts, len(model), a, b))  # fmt: skip
            state.t0 = time.perf_counter()
            if index is None:  # a dedicated server rank
                state.loop.run(check=waiter.poll)
            else:
                state.thread = ShardThread(state.loop, waiter.poll)
                state.thread.start()
        if index is not None:
            upd = _function(functions, msg["upd"])
            factors = _function(functions, msg["factors"]) if msg.get("factors") else None
            _run_worker(comms, chunk, msg, opts, model, hp, parts, (upd, factors), agg, endpoints, waiter, state)
    except Aborted:
        pass
    except Exception as e:  # noqa: BLE001 - reported to rank 0, which raises it with the location
        _fail(comms, state, e)
    finally:
        for ep in endpoints:
            ep.close(0)
        _finish(comms, chunk, state, waiter, wire0)


class _State:
    """What one rank's roles produced in a call."""

    def __init__(self) -> None:
        self.failed = False
        self.loop: ShardLoop | None = None
        self.thread: ShardThread | None = None
        self.t0 = 0.0
        self.logs: list[list[EpochStats]] = []
        self.epoch_seconds: list[float] | None = None
        self.final: tuple | None = None
        self.error: dict[str, Any] | None = None
        self.call = -1


def _fail(comms: Any, state: _State, e: BaseException) -> None:
    """Report the rank's (first) failure to rank 0 at once; PS_DONE repeats it (the two messages have different
    tags, so rank 0 may see the PS_DONE first)."""
    if not state.failed:
        state.failed = True
        loc = getattr(e, "loc", None)
        state.error = {"message": getattr(e, "message", None) or str(e) or type(e).__name__,
                       "loc": [loc.file, loc.line, loc.col] if loc is not None else None}  # fmt: skip
        send_control(comms.ctrl, COORDINATOR, Tag.PS_ERROR, {**state.error, "call": state.call})


def _finish(comms: Any, chunk: int, state: _State, waiter: Waiter, wire0: int | None) -> None:
    """Wait for a co-located shard to finish, then PS_DONE (+ PS_FINAL) to rank 0."""
    if state.thread is not None:
        while state.thread.thread.is_alive():
            waiter.poll()  # the shard thread learns of an abort through the waiter
            state.thread.thread.join(0.002)
        if state.thread.failure is not None:
            _fail(comms, state, state.thread.failure)
    loop = state.loop
    if loop is not None and loop.error is not None:
        _fail(comms, state, loop.error)
    done: dict[str, Any] = {"call": state.call, "logs": [[s.to_dict() for s in log] for log in state.logs]}
    if state.error is not None:
        done["error"] = state.error
    bufs: list[np.ndarray] = []
    if state.epoch_seconds is not None:
        done["epoch_seconds"] = state.epoch_seconds
    if state.final is not None:
        done["final"] = [ser.describe(m) for m in state.final]
        bufs = [b for m in state.final for b in ser.buffers(m)]
    if loop is not None:
        done["server"] = loop.report(state.t0)
        bufs = loop.final_buffers()
    sending = []
    wire = tcp_bytes_sent()
    if wire0 is not None and wire is not None:
        done["wire"] = wire - wire0
    send_control(comms.ctrl, COORDINATOR, Tag.PS_DONE, done)
    if bufs:
        sending = ser.isend(comms.data, bufs, COORDINATOR, int(Tag.PS_FINAL), chunk)
    waiter.requests(sending, abortable=False)


def _receive_data(comms: Any, chunk: int, msg: dict[str, Any], waiter: Waiter
                  ) -> tuple[DaphneList, DaphneList, list[Partition]]:  # fmt: skip
    descs = msg["model"] + msg["hp"] + [d for xy in msg.get("parts", []) for d in xy]
    allocated = [ser.allocate(d) for d in descs]
    reqs = [r for bufs, _ in allocated for r in ser.irecv(comms.data, bufs, COORDINATOR, int(Tag.PS_DATA), chunk)]
    waiter.requests(reqs, abortable=False)  # the data arrives whatever happens (rank 0 waits for it)
    values = [build() for _, build in allocated]
    nm, nh = len(msg["model"]), len(msg["hp"])
    model = as_list(values[:nm])
    hp = as_list(values[nm : nm + nh])
    rest = values[nm + nh :]
    parts = [Partition(rest[i], rest[i + 1]) for i in range(0, len(rest), 2)]
    return model, hp, parts


def _run_worker(comms: Any, chunk: int, msg: dict[str, Any], opts: PSOptions, model: DaphneList, hp: DaphneList,
                parts: list[Partition], udfs: tuple[Callable[..., object], Callable[..., object] | None],
                agg: Callable[..., object], endpoints: list[RemoteEndpoint], waiter: Waiter,
                state: _State) -> None:  # fmt: skip
    """The rank's workers: `threads` jobs (worker indices index*threads + t), their loops, their results.
    `udfs`: upd and, with `sfb`, its factors function."""
    index, threads, pushes = msg["index"], msg.get("threads", 1), msg["pushes"]
    upd, factors = udfs
    jobs = []
    for t, part in enumerate(parts):
        w = index * threads + t
        plan = plans([part.rows], opts.batchsize, opts.freq, opts.nbatches)[0]
        job = Job(w, model, hp, upd, agg, part, plan, pushes, opts, factors=factors if opts.sfb else None,
                  rebuild=False)  # fmt: skip
        job.aborted = lambda: waiter.aborted or state.failed
        job.transport_counts = not opts.has_server
        jobs.append(job)
    state.logs = [j.log.epochs for j in jobs]
    t0 = time.perf_counter()
    if opts.has_server:

        def endpoint() -> Endpoint:
            if len(endpoints) == 1:
                return endpoints[0]  # type: ignore[return-value]
            ranges = [(a, b) for _, a, b in msg["shards"]]
            return ShardedEndpoint(endpoints, ranges, model)  # type: ignore[arg-type]

        if opts.utype == "EASGD":
            run_easgd_worker(jobs[0], endpoint())
        else:
            run_server_worker(jobs[0], endpoint(), ordered=opts.ordered_pulls)
        return
    ranks = msg["ranks"]
    comm = _subcomm(comms, ranks, msg["gen"])
    algorithm = opts.algorithm if opts.utype != "GOSSIP" else "RING"
    collective = Collective(comm, len(ranks), index, model, opts.compressor, algorithm, msg["call"], waiter,
                            jobs[0].sf, opts.push_rows)  # fmt: skip
    timeline = testing_hooks.ps_timeline()
    if timeline is not None:  # the reductions' steps on the timeline (Collective.flights)
        collective.flights = Flights(index, timeline)
        if collective.others is not None:
            collective.others.flights = collective.flights
    reducer = MpiReducer(collective, pushes, threads, opts.epochs * max(pushes) if opts.utype == "ALLREDUCE" else 0)
    if opts.utype == "GOSSIP":
        mixer = MpiMixer(collective, opts.neighbourhood, opts.effective_seed)
        result = run_gossip_worker(jobs[0], mixer, reducer)
    elif threads > 1:
        rank_reducer = RankReducer(threads, reducer)
        for j in jobs:
            j.aborted = lambda: waiter.aborted or state.failed or rank_reducer.aborted()
        results = run_threads(threads, lambda t: run_allreduce_worker(jobs[t], rank_reducer), rank_reducer.abort)
        if rank_reducer.aborted():  # another rank failed: the threads stopped
            raise Aborted
        result = results[0]  # type: ignore[assignment]
    elif opts.overlap:
        overlapped = OverlapReducer(reducer, opts.bucket, opts.factored, early=opts.push_rows == opts.batchsize)
        try:
            result = run_allreduce_worker(jobs[0], overlapped)
        finally:
            overlapped.close()
    else:
        loop = run_allreduce_worker if opts.utype == "ALLREDUCE" else run_localsgd_worker
        result = loop(jobs[0], reducer)
    ends = jobs[0].epoch_ends
    state.epoch_seconds = [end - start for start, end in zip([t0, *ends], ends)]
    if index == 0:
        state.final = tuple(result)  # type: ignore[arg-type]


def _subcomm(comms: Any, ranks: list[int], gen: int) -> Any:
    """The communicator of these worker ranks (created once per generation, collectively among them only; rank 0
    starts a new generation after a call that was cut short, whose collectives may still be pending)."""
    key = (tuple(ranks), gen)
    if key not in _GROUPS:
        group = comms.world.Get_group().Incl(list(ranks))
        _GROUPS[key] = comms.world.Create_group(group, tag=int(Tag.PARAMSERV))
        group.Free()
    return _GROUPS[key]


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


__all__ = ["serve_job", "mpi"]
