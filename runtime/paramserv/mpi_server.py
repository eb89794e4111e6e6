"""MPI mode: a parameter-server shard's message loop, on whichever rank holds the shard.

With one server (the default) the shard is the whole model and lives on rank 0. With `servers=M` shard 0 stays
on rank 0 and shards 1..M-1 get ranks of their own (`DedicatedShard`, after the worker ranks); with `colocated`
every worker rank (the first M of them) also holds one shard, served by a thread beside its worker loop
(`ShardThread`), as in the co-located parameter servers of the lecture: each node keeps 1/n of the model.

The loop (`ShardLoop`) is the server side of worker.Endpoint, for the `Server` object of its shard (server.py):

    worker -> shard: PS_PUSH {c: clock, v: version used, next: clock to pull for (or None), g: descriptions}
                     + PS_GRAD (the packed gradients; compressed payloads when compression is on)
                     or PS_PUSH {bye: true}: the worker is done with this shard
                     with one server and `overlap` (worker.MatrixPushes): PS_PUSH {c, v, next: None, g, j: [position]}
                     + PS_GRAD per matrix as soon as it is final, then PS_PUSH {c, v, next, g, j: the rest, end: true}
                     (+ PS_GRAD if the rest is not empty); the shard sums each matrix as it arrives
                     (`SyncServer.push_part`) and completes the push when all its matrices are here
    shard -> worker: PS_MODEL {v: version, desc: descriptions} + PS_WEIGHTS (the packed matrices, packed once per
                     version), or {v, same: true} (the worker has that version), or {stop: true}
                     with ordered pulls (`order`, pulls.py): PS_MODEL {v, desc, o: the order} + one PS_WEIGHTS per
                     matrix in that order, so that the worker's `upd` can start on the first ones
                     with streamed pulls (options.streamed_pulls: BSP, one server, a per-matrix `agg`): the worker's
                     first PS_PUSH part carries {p: clock to pull for} (its end message then has next: None); the
                     shard updates each matrix once its sum is complete (`SyncServer.apply_ready`) and sends it at
                     once, strictly in the pull order: PS_MODEL {v, j: position, d: description} + PS_WEIGHTS per
                     matrix (or {stop: true}); the update of the big matrices (complete first) is done while the
                     last gradients still arrive, and the worker's receive is posted before its push ends

A push is applied once its buffers have arrived; the pull it carries is answered as soon as the server's
`try_pull` allows. The loop ends when every worker has said bye and no push is in flight. `stopping()` (a rank of
the call failed) makes it answer every pull with STOP and ignore gradients, so that every worker ends.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from daphnec.runtime.distributed import serialization as ser
from daphnec.runtime.distributed.protocol import Tag, send_control, try_recv_control
from daphnec.runtime.paramserv import compression as comp
from daphnec.runtime.paramserv.server import STOP, Pulled, Server, SyncServer
from daphnec.runtime.paramserv.transport import Idle, mpi, pack


@dataclasses.dataclass
class _Push:
    rank: int
    body: dict[str, Any]
    requests: list[Any]
    build: Callable[[], tuple]


class ShardLoop:
    """One shard's side of the conversation with the call's worker ranks (`clients`, in worker order)."""

    def __init__(self, comms: Any, chunk: int, server: Server, clients: list[int],
                 stopping: Callable[[], bool], order: list[int] | None = None):  # fmt: skip
        self.comms = comms
        self.order = order
        """Ordered pulls (pulls.shard_order): the shard's matrices one message each, in this order."""
        self.chunk = chunk
        self.server = server
        self.index = {r: i for i, r in enumerate(clients)}
        self.clients = clients
        self.stopping = stopping
        self.byes: set[int] = set()
        self.inflight: list[_Push] = []
        self.waiting: dict[int, tuple[int, int]] = {}
        self.sending: list[tuple[Any, object]] = []
        self.packed: tuple[int, list[np.ndarray]] = (-1, [])
        self.error: Exception | None = None
        """An exception of `agg` on this shard (the loop then stops the workers)."""
        self.backoff = Idle()
        self.parts: dict[int, tuple[dict[int, object], list[dict[str, Any]]]] = {}
        """Pushes arriving matrix by matrix, by rank: the matrices kept (a server without `push_part`) and the
        push's end message once it has arrived (its matrices may complete after it)."""
        self.received: dict[int, set[int]] = {}
        self.streams: dict[int, tuple[int, list[int]]] = {}
        """Streamed pulls by rank: the clock pulled for and the positions sent so far."""
        self.part_packed: tuple[int, dict[int, np.ndarray]] = (-1, {})
        """Streamed pulls: the matrices of one version packed once each, by position."""

    @property
    def done(self) -> bool:
        return len(self.byes) == len(self.clients) and not self.inflight

    def halted(self) -> bool:
        return self.error is not None or self.stopping()

    def step(self) -> bool:
        """One round of polling: new pushes, completed pushes, answers; True if anything happened."""
        did = False
        m = try_recv_control(self.comms.ctrl, mpi().ANY_SOURCE, int(Tag.PS_PUSH))
        if m is not None:
            did = True
            rank, _, body = m
            if body.get("bye"):
                self.byes.add(rank)
                self.waiting.pop(rank, None)
            else:
                self.inflight.append(self._post(rank, body))
        if self.inflight:
            MPI = mpi()
            done = [p for p in self.inflight if MPI.Request.Testall(p.requests)]
            for p in done:
                did = True
                self.inflight.remove(p)
                grads = p.build()
                body = p.body
                if "j" in body:
                    body = self._part(p.rank, body, grads)
                    if body is None:
                        continue
                elif not self.halted():
                    try:
                        self.server.push(self.index[p.rank], body["c"], grads, body["v"])
                    except Exception as e:  # noqa: BLE001 - agg failed here: stop the workers, report the error
                        self.error = e
                if body["next"] is not None:
                    self.waiting[p.rank] = (body["next"], body["v"])
        if self.streams:
            did = self.stream() or did
        if self.waiting:
            did = self.answer() or did
        if self.sending:
            self.sending = [(r, k) for r, k in self.sending if not r.Test()]
        if did:
            self.backoff.reset()
        return did

    def _part(self, rank: int, body: dict[str, Any], grads: tuple) -> dict[str, Any] | None:
        """Matrices of a push that comes matrix by matrix; the push's end message once all of them are here."""
        w = self.index[rank]
        if body.get("p") is not None:  # a streamed pull, asked for with the push's first matrix
            self.streams[rank] = (body["p"], [])
        kept, end = self.parts.setdefault(rank, ({}, []))
        got = self.received.setdefault(rank, set())
        incremental = isinstance(self.server, SyncServer)
        for j, g in zip(body["j"], grads):
            got.add(j)
            if not incremental:
                kept[j] = g
            elif not self.halted():
                try:
                    self.server.push_part(w, body["c"], j, g)
                except Exception as e:  # noqa: BLE001 - reported as agg's failures are
                    self.error = e
        if body.get("end"):
            end.append(body)
        if not end or len(got) < len(self.server.model):
            return None
        del self.parts[rank], self.received[rank]
        last = end[0]
        if not self.halted():
            try:
                if incremental:
                    self.server.push_done(w, last["c"], last["v"])  # type: ignore[attr-defined]
                else:
                    self.server.push(w, last["c"], tuple(kept[j] for j in range(len(kept))), last["v"])
            except Exception as e:  # noqa: BLE001 - agg failed here: stop the workers, report the error
                self.error = e
        return last

    def idle(self) -> None:
        self.backoff.idle(transfer=bool(self.inflight or self.sending))

    def run(self, check: Callable[[], object] = lambda: None) -> None:
        """Serve until every worker has said bye (then wait for the last answers to leave)."""
        while not self.done:
            if not self.step():
                check()
                self.idle()
        self.drain(check)

    def drain(self, check: Callable[[], object] = lambda: None) -> None:
        b = Idle()
        while self.sending:
            self.sending = [(r, k) for r, k in self.sending if not r.Test()]
            check()
            b.idle(transfer=True)

    def answer(self) -> bool:
        """Answer the waiting pulls the server now allows (all of them with STOP once halted)."""
        did = False
        halted = self.halted()
        posts: list[tuple[int, list[np.ndarray]]] = []
        for rank in list(self.waiting):
            nxt, used = self.waiting[rank]
            r = STOP if halted else self.server.try_pull(self.index[rank], nxt)
            if r is not None:
                del self.waiting[rank]
                bufs = self._reply(rank, r, used)
                if bufs:
                    posts.append((rank, bufs))
                did = True
        # matrix-major across the workers answered together (BSP: all of them at once): every worker's first matrix
        # in the pull order is posted before anyone's second, so that all of them start their forward pass early and
        # stay in step, instead of the first worker getting its whole model before the last gets anything
        for i in range(max((len(b) for _, b in posts), default=0)):
            for rank, bufs in posts:
                if i < len(bufs):
                    for req in ser.isend(self.comms.data, [bufs[i]], rank, int(Tag.PS_WEIGHTS), self.chunk):
                        self.sending.append((req, bufs[i]))
        return did

    def stream(self) -> bool:
        """Streamed pulls: update the matrices whose sums are complete, send every waiting worker the updated
        matrices it has not got yet (matrix-major across the workers, as `answer`), STOP to all once halted."""
        server = self.server
        halted = self.halted()
        did = False
        if not halted and isinstance(server, SyncServer):
            try:
                did = bool(server.apply_ready())
            except Exception as e:  # noqa: BLE001 - agg failed here: stop the workers, report the error
                self.error = e
                halted = True
        posts: list[tuple[int, int, list[tuple[int, object]]]] = []
        sequence = self.order if self.order is not None else list(range(len(server.model)))
        for rank in list(self.streams):
            nxt, sent = self.streams[rank]
            if halted:
                send_control(self.comms.ctrl, rank, Tag.PS_MODEL, {"stop": True})
                del self.streams[rank]
                did = True
                continue
            if server.version >= nxt:
                ready: dict[int, object] = dict(enumerate(server.model))
            elif server.version == nxt - 1:
                ready = server.fresh  # type: ignore[attr-defined]
            else:
                continue
            # strictly in the pull order, each as soon as it is updated: on a link shared by pushes and pulls a big
            # matrix sent early would hold back the small first ones the next forward pass waits for
            todo = []
            for j in sequence[len(sent) :]:
                if j not in ready:
                    break
                todo.append((j, ready[j]))
            sent += [j for j, _ in todo]
            if len(sent) == len(server.model):
                del self.streams[rank]
            if todo:
                posts.append((rank, nxt, todo))
        for i in range(max((len(t) for _, _, t in posts), default=0)):
            for rank, nxt, todo in posts:
                if i < len(todo):
                    j, m = todo[i]
                    send_control(self.comms.ctrl, rank, Tag.PS_MODEL, {"v": nxt, "j": j, "d": ser.describe(m)})
                    buf = self._packed_part(nxt, j, m)
                    for req in ser.isend(self.comms.data, [buf], rank, int(Tag.PS_WEIGHTS), self.chunk):
                        self.sending.append((req, buf))
                    did = True
        return did

    def _packed_part(self, version: int, j: int, m: object) -> np.ndarray:
        """Matrix j of `version`, packed once for all the workers it goes to."""
        if self.part_packed[0] != version:
            self.part_packed = (version, {})
        cache = self.part_packed[1]
        if j not in cache:
            cache[j] = pack(ser.buffers(m))
        return cache[j]

    def _post(self, rank: int, body: dict[str, Any]) -> _Push:
        allocated: list[tuple[list[np.ndarray], object]] = []
        for d in body["g"]:
            if d["k"] in comp.PAYLOAD_KINDS:
                allocated.append((comp.allocate(d), d))
            else:
                allocated.append(ser.allocate(d))
        views = [ser._bytes(b) for bufs, _ in allocated for b in bufs]
        big = views[0] if len(views) == 1 else np.empty(sum(v.size for v in views), dtype=np.uint8)
        # a push's end message whose matrices all went ahead carries no data
        requests = ser.irecv(self.comms.data, [big], rank, int(Tag.PS_GRAD), self.chunk) if body["g"] else []

        def build() -> tuple:
            if len(views) > 1:
                pos = 0
                for v in views:
                    v[:] = big[pos : pos + v.size]
                    pos += v.size
            return tuple(comp.decode(how, bufs) if isinstance(how, dict) else how() for bufs, how in allocated)  # type: ignore[operator]

        return _Push(rank, body, requests, build)

    def _reply(self, rank: int, r: Pulled, used: int) -> list[np.ndarray]:
        """Answer a pull: the control message now; the packed matrices to send (in order) are returned."""
        ctrl = self.comms.ctrl
        if r == STOP:
            send_control(ctrl, rank, Tag.PS_MODEL, {"stop": True})
            return []
        model, version = r  # type: ignore[misc]
        if version == used:
            send_control(ctrl, rank, Tag.PS_MODEL, {"v": version, "same": True})
            return []
        body: dict[str, Any] = {"v": version, "desc": [ser.describe(m) for m in model]}
        if self.order is not None:
            body["o"] = self.order
        send_control(ctrl, rank, Tag.PS_MODEL, body)
        if self.packed[0] != version:  # packed once per version, one message per matrix with ordered pulls
            groups = [[model[j]] for j in self.order] if self.order is not None else [list(model)]
            self.packed = (version, [pack([b for m in g for b in ser.buffers(m)]) for g in groups])
        return self.packed[1]

    # -- the end of a shard on a rank other than 0 ---------------------------------------------------------------------

    def report(self, t0: float) -> dict[str, Any]:
        """The shard's part of its rank's PS_DONE: statistics, epoch end times (seconds since t0) and the
        descriptions of its final matrices (sent next as PS_FINAL)."""
        s = self.server
        s.finish()
        return {"stats": [e.to_dict() for e in s.log.epochs], "ends": [e - t0 for e in s.epoch_ends],
                "final": [ser.describe(m) for m in s.model]}  # fmt: skip

    def final_buffers(self) -> list[np.ndarray]:
        return [b for m in self.server.model for b in ser.buffers(m)]


class ShardThread:
    """A co-located shard: its loop runs in a thread of a worker rank, beside the rank's worker loop (numpy
    releases the GIL, and both threads sleep while they wait). The worker's `Waiter` notices rank 0's abort; the
    thread reads it through `stopping`."""

    def __init__(self, loop: ShardLoop, check: Callable[[], object]):
        self.loop = loop
        self.check = check
        self.failure: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="daphnec-paramserv-shard", daemon=True)
        self.started = time.perf_counter()

    def start(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        try:
            self.loop.run(self.check)  # type: ignore[arg-type]
        except BaseException as e:  # noqa: BLE001 - reported by the rank's main thread
            self.failure = e

    def join(self) -> None:
        self.thread.join()
