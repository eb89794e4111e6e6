"""Units of paramserv's communication architecture: the canonical summation order and the schedules that follow
it, shard ranges and shard updates, gossip neighbourhoods, buffer layouts, sufficient factors, the cost model, the
TCP byte counter, option validation; and the new strategies in LOCAL mode (real threads)."""

from __future__ import annotations

import socket
import threading

import numpy as np
import ps_linreg as lr
import pytest

from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.kernels.lists import create_list
from daphnec.runtime.paramserv import STATS, PSOptions, costs, paramserv
from daphnec.runtime.paramserv.compression import allocate, decode, factors
from daphnec.runtime.paramserv.layout import FactorLayout, FlatLayout
from daphnec.runtime.paramserv.marks import await_model, await_parameter
from daphnec.runtime.paramserv.netbytes import tcp_bytes_sent
from daphnec.runtime.paramserv.pulls import OrderedPull, PullStopped, pull_sequence, shard_order
from daphnec.runtime.paramserv.reduction import (
    TreeAccumulator,
    broadcast_schedule,
    chunk_bounds,
    scatter_schedule,
    tree_fold,
    tree_sum,
    tree_sum_array,
)
from daphnec.runtime.paramserv.server import ShardUpdate, SyncServer, shard_ranges
from daphnec.runtime.paramserv.stats import EpochLog
from daphnec.runtime.paramserv.topology import neighbourhood
from daphnec.runtime.paramserv.worker import Contribution

X, Y = lr.data(n=610)


def diff(a: tuple, b: tuple) -> float:
    return max(float(np.max(np.abs(np.asarray(x) - np.asarray(y)))) for x, y in zip(a, b))


def train(**kw: object) -> tuple:
    opts = {"utype": "BSP", "freq": "BATCH", "epochs": 2, "batchsize": 32, "k": 3, "hyperparams": lr.hyper(0.02)}
    opts.update(kw)
    return paramserv(lr.model0(), X, Y, lr.upd, lr.agg, PSOptions(**opts))  # type: ignore[arg-type]


# -- the canonical order -------------------------------------------------------------------------------------------


def test_tree_order_and_absent_workers() -> None:
    names = [f"g{i}" for i in range(6)]
    assert tree_fold(names, lambda a, b: f"({a}+{b})") == "(((g0+g1)+(g2+g3))+(g4+g5))"
    assert tree_fold(["g0", None, "g2", "g3", None], lambda a, b: f"({a}+{b})") == "((g0+(g2+g3)))"[1:-1]
    assert tree_fold([None, None, "g2"], lambda a, b: f"({a}+{b})") == "g2"
    # the association matters for doubles and is the tree's, not the left fold's
    g = [np.array([1e16]), np.array([1.0]), np.array([-1e16]), np.array([1.0])]
    assert tree_sum_array(g)[0] == (1e16 + 1.0) + (-1e16 + 1.0) != ((1e16 + 1.0) - 1e16) + 1.0


@pytest.mark.parametrize("k", range(1, 9))
def test_reduce_scatter_follows_the_tree(k: int) -> None:
    """Simulated: every chunk reaches its owner as the tree sums it (bit for bit), each rank sends each chunk it
    does not own once (with everyone present: (k-1) chunks, the ring's cost), also with workers absent."""
    rng = np.random.default_rng(k)
    for trial in range(12):
        present = [True] * k if trial == 0 else list(rng.random(k) < 0.6)
        if not any(present):
            present[int(rng.integers(k))] = True
        n = 29
        g = [rng.standard_normal(n) * 10.0 ** rng.integers(-8, 8, n) if p else None for p in present]
        bounds = chunk_bounds(n, k)
        hold = {(r, c): g[r][lo:hi].copy() if present[r] else None for r in range(k)  # type: ignore[index]
                for c, (lo, hi) in enumerate(bounds)}  # fmt: skip
        sent = [0] * k
        for moves in scatter_schedule(k, present, list(range(k))):
            inbox = []
            for m in moves:
                assert hold[(m.src, m.chunk)] is not None
                inbox.append((m, hold[(m.src, m.chunk)]))
                hold[(m.src, m.chunk)] = None
                sent[m.src] += 1
            for m, v in inbox:
                mine = hold[(m.dst, m.chunk)]
                hold[(m.dst, m.chunk)] = v if mine is None else mine + v
        want = tree_sum_array(g)
        for c, (lo, hi) in enumerate(bounds):
            np.testing.assert_array_equal(hold[(c, c)], want[lo:hi])
        if trial == 0:
            assert sent == [k - 1] * k


def test_broadcast_reaches_everyone_with_the_costed_children() -> None:
    for k in range(1, 10):
        have = {0}
        children = [0] * k
        for step in broadcast_schedule(k, 0):
            for src, dst in step:
                assert src in have and dst not in have
                children[src] += 1
            have |= {dst for _, dst in step}
        assert have == set(range(k)) and children == costs.broadcast_children(k)


def test_chunks_and_buckets() -> None:
    assert chunk_bounds(10, 3) == [(0, 4), (4, 7), (7, 10)]
    lay = FlatLayout([np.zeros((100, 10)), np.zeros((1, 10)), np.zeros((3, 3)), np.zeros((50, 50))])
    buckets = lay.buckets(2000)  # 250 values per bucket
    assert buckets[0][0] == 0 and buckets[-1][1] == lay.n
    assert all(a[1] == b[0] for a, b in zip(buckets, buckets[1:]))
    assert all(hi - lo <= 250 for lo, hi in buckets)
    assert (1000, 1019) in buckets  # the two small matrices share one bucket
    parts = [np.arange(1000.0).reshape(100, 10), np.ones((1, 10)), np.eye(3), np.full((50, 50), 2.0)]
    flat = lay.flatten(parts)
    assert all(np.array_equal(a, b) for a, b in zip(lay.unflatten(flat), parts))
    with pytest.raises(DaphneRuntimeError, match="one value type"):
        FlatLayout([np.zeros(2), np.zeros(2, dtype=np.float32)])


# -- shards ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5, 7, 8])
def test_tree_accumulator_sums_in_any_arrival_order_as_tree_sum(k: int) -> None:
    """Contributions fed one by one in every kind of arrival order (absent workers too) give `tree_sum`'s bits:
    the server's per-matrix running sum of `overlap=true` is BSP's sum. Values of very different magnitudes, so
    that another association would change the bits."""
    rng = np.random.default_rng(k)
    for _trial in range(30):
        present = [bool(rng.random() < 0.75) for _ in range(k)]
        present[int(rng.integers(k))] = True
        vals = [rng.standard_normal((3, 5)) * 10.0 ** int(rng.integers(-9, 9)) for _ in range(k)]
        expected = tree_sum([(v,) if p else None for v, p in zip(vals, present)])[0]
        acc = TreeAccumulator(present)
        order = [int(i) for i in rng.permutation(k) if present[i]]
        for n, i in enumerate(order):
            assert not acc.complete
            acc.add(i, vals[i].copy())
            assert acc.complete == (n == len(order) - 1)
        assert np.array_equal(acc.result, expected), (k, present, order)  # type: ignore[arg-type]
        assert all(np.isfinite(v).all() for v in vals)


def test_sync_server_push_part_equals_push() -> None:
    """BSP's server fed matrix by matrix (`push_part` in a shuffled order, then `push_done`; one worker with a
    whole push, as a worker's last push is) applies the same updates as when fed whole pushes: bit-identical
    models at every version; the model changes only when the clock's last push is done."""
    rng = np.random.default_rng(3)
    shapes = [(4, 3), (1, 3), (3, 2)]
    model = create_list(*[np.zeros(s) for s in shapes])
    k, clocks = 3, 4
    grads = [[[rng.standard_normal(s) * 10.0 ** int(rng.integers(-6, 6)) for s in shapes] for _ in range(k)]
             for _ in range(clocks)]  # fmt: skip

    def update(m: object, g: object) -> object:
        return create_list(*[a - 0.1 * b for a, b in zip(m, g)])  # type: ignore[call-overload]

    whole = SyncServer(model, update, EpochLog(1), [clocks] * k, 1)
    parts = SyncServer(model, update, EpochLog(1), [clocks] * k, 1)
    for c in range(clocks):
        for w in range(k):
            whole.push(w, c, tuple(grads[c][w]), c)
        pieces = [(w, j) for w in range(1, k) for j in range(len(shapes))]
        for i in rng.permutation(len(pieces)):
            w, j = pieces[int(i)]
            parts.push_part(w, c, j, grads[c][w][j])
        assert parts.push_done(1, c, c) is False
        assert parts.push(0, c, tuple(grads[c][0]), c) is False
        assert parts.version == c
        assert parts.push_done(2, c, c) is True
        assert parts.version == whole.version == c + 1
        assert all(np.array_equal(a, b) for a, b in zip(parts.model, whole.model))


def test_sync_server_per_matrix_updates_equal_whole() -> None:
    """Streamed pulls: a server with a per-matrix `agg` (`ShardUpdate.some`) updates the matrices whose sums are
    complete (`apply_ready`, 1x1 stand-ins for the others) before the clock's last push; the model at every version
    equals the whole update's bit for bit, also when `agg` fails on the stand-ins (a product with a hyperparameter
    of the model's shape: then zero gradients of the real shapes) and the fresh matrices come in completion order."""
    rng = np.random.default_rng(5)
    shapes = [(4, 3), (1, 3), (3, 3)]
    model = create_list(*[rng.standard_normal(s) for s in shapes])
    k, clocks = 3, 3
    grads = [[[rng.standard_normal(s) for s in shapes] for _ in range(k)] for _ in range(clocks)]
    hp = create_list(np.full((1, 1), 0.1), rng.standard_normal((3, 3)))

    def sgd(m: tuple, h: tuple, g: tuple) -> tuple:
        return create_list(*(a - h[0][0, 0] * b for a, b in zip(m, g)))

    def projected(m: tuple, h: tuple, g: tuple) -> tuple:  # fails on a 1x1 stand-in: (1x1) @ (3x3)
        return create_list(*(a - h[0][0, 0] * (b @ h[1]) for a, b in zip(m, g)))

    for agg in (sgd, projected):
        update = ShardUpdate(agg, hp, range(3), model)
        whole = SyncServer(model, update, EpochLog(1), [clocks] * k, 1)
        fresh = SyncServer(model, update, EpochLog(1), [clocks] * k, 1)
        fresh.per_matrix = update.some
        for c in range(clocks):
            for w in range(k):
                whole.push(w, c, tuple(grads[c][w]), c)
            for j in (2, 0):  # matrices 2 and 0 complete first, 1 with the last push
                for w in range(k):
                    fresh.push_part(w, c, j, grads[c][w][j])
                assert fresh.apply_ready() == [j]
            assert list(fresh.fresh) == [2, 0] and fresh.version == c
            for w in range(k):
                fresh.push_part(w, c, 1, grads[c][w][1])
                fresh.push_done(w, c, c)
            assert fresh.version == whole.version == c + 1 and not fresh.fresh
            assert all(np.array_equal(a, b) for a, b in zip(fresh.model, whole.model))


def test_shard_ranges_balance_bytes() -> None:
    fc = [784 * 1024, 1024, 1024 * 1024, 1024, 1024 * 10, 10]
    assert shard_ranges(fc, 1) == [(0, 6)]
    assert shard_ranges(fc, 2) == [(0, 2), (2, 6)]
    assert shard_ranges([5, 5, 5, 5], 2) == [(0, 2), (2, 4)]
    assert shard_ranges([1, 1, 1, 1, 10], 3) == [(0, 2), (2, 4), (4, 5)]
    with pytest.raises(DaphneRuntimeError, match="servers=7 but the model has 6 matrices"):
        shard_ranges(fc, 7)


def test_shard_update_sees_full_shapes() -> None:
    """A shard's `agg` gets the full model (initial values elsewhere, zero gradients): an update that reads its
    matrices' shapes still computes what one server computes."""
    model = create_list(np.ones((3, 2)), np.full((1, 2), 2.0), np.full((2, 2), 3.0))
    grads = (np.full((1, 2), 0.5), np.full((2, 2), 0.25))

    def scaled(m: tuple, h: tuple, g: tuple) -> tuple:  # a step scaled by each matrix's rows
        return create_list(*(a - 0.1 / a.shape[0] * b for a, b in zip(m, g)))

    out = ShardUpdate(scaled, lr.hyper(), range(1, 3), model)(create_list(model[1], model[2]), grads)
    whole = scaled(model, (), (np.zeros((3, 2)), *grads))
    assert all(np.array_equal(a, b) for a, b in zip(out, whole[1:]))


# -- topology, factors, costs, bytes -------------------------------------------------------------------------------


def test_gossip_neighbourhoods() -> None:
    assert neighbourhood(4, 0, "RING", 1) == [[0, 1, 3], [0, 1, 2], [1, 2, 3], [0, 2, 3]]
    assert neighbourhood(2, 5, "RING", 1) == [[0, 1], [0, 1]] and neighbourhood(1, 0, "RING", 1) == [[0]]
    for k in (4, 5):
        a = neighbourhood(k, 3, "RANDOM", 9)
        assert a == neighbourhood(k, 3, "RANDOM", 9)  # seeded per clock
        assert len({str(neighbourhood(k, c, "RANDOM", 9)) for c in range(8)}) > 1  # and changing with the clock
        for i, g in enumerate(a):
            assert i in g and len(g) <= 2 and all(a[j] == g for j in g)  # pairs, symmetric
        assert sum(len(g) == 1 for g in a) == k % 2


def test_sufficient_factors_payload() -> None:
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((4, 6)), rng.standard_normal((4, 3))
    p = factors(A, B)
    assert p.nbytes == (4 * 6 + 4 * 3) * 8 and p.desc["shape"] == [6, 3]
    bufs = allocate(p.desc)
    for dst, src in zip(bufs, p.buffers):
        dst[...] = src
    np.testing.assert_array_equal(decode(p.desc, bufs), A.T @ B)


def test_stacked_rebuild_is_the_sum_of_the_products() -> None:
    """sfb: the workers' products t(A_i) @ B_i summed as ONE product of the stacked factors (absent workers, flag
    0, left out; batches of fewer rows than batchsize): within 1e-15 relative of the canonical tree of k
    products, and exactly one product when one worker is present."""
    rng = np.random.default_rng(3)
    model = (np.zeros((30, 20)), np.zeros((1, 20)), np.zeros((20, 5)))
    lay = FactorLayout(model, (0, 2), 8)
    parts, products = [], []
    for K in (8, 5, 8, 0):
        if K == 0:
            parts.append(lay.encode(None))
            products.append(None)
            continue
        A0, B0, A2, B2 = rng.random((K, 30)), rng.random((K, 20)), rng.random((K, 20)), rng.random((K, 5))
        payloads = [factors(A0, B0), None, factors(A2, B2)]
        parts.append(lay.encode(Contribution((None, None, None), payloads, 0, 0)))
        products.append((A0.T @ B0, A2.T @ B2))
    got = lay.rebuild([p for p in parts if lay.flag(p) == 1])
    want = tree_sum(products)
    for g, w in zip(got, want):
        assert g.shape == w.shape and np.max(np.abs(g - w)) <= 1e-15 * np.max(np.abs(w)) * 8
    one = lay.rebuild(parts[:1])
    assert all(np.array_equal(g, w) for g, w in zip(one, products[0]))


def test_ordered_pull_hands_out_matrices_as_they_arrive() -> None:
    """pulls.py: the pull order (recorded first reads, then the rest by index; each shard its own slice), a wait
    returning a matrix as soon as the communication thread has it (before the rest arrived), and a STOP answer
    ending the waiting `upd` with PullStopped (a BaseException: the compiled function's handlers let it pass)."""
    opts = PSOptions(utype="BSP", overlap=True, pull_order=(2, 0))
    assert pull_sequence((2, 0, 2, 9), 4) == [2, 0, 1, 3]
    assert shard_order(opts, 4, 0, 2) == [0, 1] and shard_order(opts, 4, 2, 4) == [0, 1]
    assert shard_order(PSOptions(utype="BSP", overlap=True, pull_order=(3, 1)), 4, 0, 2) == [1, 0]
    assert shard_order(PSOptions(utype="ALLREDUCE", overlap=True, pull_order=(2, 0)), 4, 0, 2) is None
    model = create_list(*(np.full((2, 2), float(j)) for j in range(3)))
    gate = threading.Event()

    def receive(arrive):  # noqa: ANN001, ANN202 - the endpoint's receive with its arrival callback
        arrive(2, model[2])
        gate.wait(5)
        arrive(0, model[0])
        arrive(1, model[1])
        return (model, 1)

    pull = OrderedPull(receive, 3, model.elem_kind)
    with pull.installed():
        assert await_parameter(model, 2) is model[2]  # while matrices 0 and 1 are still missing
        gate.set()
        assert await_model(model) == model
    assert pull.finish() == (model, 1) and pull.arrivals == [2, 0, 1] and pull.reads[:1] == [2]
    assert await_parameter(model, 1) is model[1]  # no pull installed: the model itself
    stopped = OrderedPull(lambda arrive: "STOP", 3, model.elem_kind)
    with stopped.installed(), pytest.raises(PullStopped):
        await_parameter(model, 0)
    assert stopped.finish() == "STOP" and not issubclass(PullStopped, Exception)


def test_cost_model() -> None:
    w = 1.0
    assert costs.per_step("ALLREDUCE", 4, w, "RING") == [0.0, 1.5, 1.5, 1.5, 1.5]
    assert costs.per_step("ALLREDUCE", 4, w, "TREE") == [0.0, 2.0, 2.0, 1.0, 1.0]
    assert costs.per_step("BSP", 3, w) == [3.0, 1.0, 1.0, 1.0]
    assert costs.per_step("BSP", 2, w, shards=[0.25, 0.75]) == [0.5, 1.0, 1.0, 1.5]
    co = costs.per_step("BSP", 4, w, shards=[0.25] * 4, colocated=True)
    assert co == [0.0] + [2 * 3 / 4] * 4  # the lecture's 2 (n-1)/n |w|
    assert costs.per_epoch("BSP", 3, w, 5) == [12.0, 5.0, 5.0, 5.0]
    assert costs.per_epoch("EASGD", 2, w, 5, period=2) == [6.0, 3.0, 3.0]


def test_tcp_bytes_are_counted() -> None:
    before = tcp_bytes_sent()
    server = socket.create_server(("127.0.0.1", 0))
    a = socket.create_connection(server.getsockname())
    b, _ = server.accept()
    with a, b, server:
        start = tcp_bytes_sent()
        assert start is not None
        a.sendall(b"x" * 100_000)
        got = 0
        while got < 100_000:
            got += len(b.recv(65536))
        assert tcp_bytes_sent() - start == 100_000  # type: ignore[operator]
    assert before is None or before >= 0


def test_poseidon_cost_model_chooses_per_matrix() -> None:
    """SFB wins for a wide layer over a small batch and loses for a narrow one; never with one worker; the bytes
    per step add the all-gather of the factors ((k-1) K (M+N) values and a 16-byte header) to the ring's."""
    assert costs.sfb_wins("RING", 3, 64, (1024, 1024), 8)  # 2 * 64 * 2048 < 4/3 * 1024^2
    assert not costs.sfb_wins("RING", 3, 64, (1024, 10), 8)  # 2 * 64 * 1034 > 4/3 * 10240
    # with parameter servers the pull is M x N either way: the factors win when K (M + N) < M N, at any k
    assert costs.sfb_wins("PS", 1, 64, (1024, 1024), 8) and not costs.sfb_wins("PS", 8, 64, (100, 100), 8)
    assert not costs.sfb_wins("RING", 1, 64, (1024, 1024), 8)
    got = costs.sfb_per_step("RING", 4, 16, [(64, 512), (1, 512)], 8, (0,))
    assert got == [0.0] + [3 * (16 + 16 * 576 * 8) + 1.5 * 512 * 8] * 4


# -- validation ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("kw", "fragment"), [
    ({"utype": "BSP", "allreduce": "RING"}, "allreduce=RING applies to utype ALLREDUCE or LOCALSGD, not BSP"),
    ({"utype": "ALLREDUCE", "allreduce": "star"}, "unknown allreduce 'STAR' (expected one of ALLGATHER, RING"),
    ({"utype": "SBP", "servers": 2}, "sharded servers (servers=2) need utype BSP, SSP, ASP, EASGD, not SBP"),
    ({"utype": "ALLREDUCE", "colocated": True}, "sharded servers (colocated) need utype"),
    ({"utype": "BSP", "servers": -1}, "servers must be >= 1 (or 0 for the default), got -1"),
    ({"utype": "BSP", "colocated": True, "servers": 5, "k": 3}, "colocated servers live on the worker ranks"),
    ({"utype": "BSP", "topology": "RING"}, "topology applies to utype GOSSIP, not BSP"),
    ({"utype": "GOSSIP", "topology": "star"}, "unknown topology 'STAR' (expected one of RING, RANDOM)"),
    ({"utype": "GOSSIP", "freq": "EPOCH"}, "utype=GOSSIP applies every batch to the worker's own model"),
    ({"utype": "EASGD", "alpha": 1.5}, "alpha must be in (0, 1], got 1.5"),
    ({"utype": "ASP", "alpha": 0.5}, "alpha applies to utype EASGD, not ASP"),
    ({"utype": "SSP", "delta_max": 0.1}, "delta_max (value-bounded asynchrony) applies to utype ASP, not SSP"),
    ({"utype": "ASP", "delta_max": -1}, "delta_max must be >= 0, got -1.0"),
    ({"utype": "ASP", "threads": 2}, "threads=2 (a rank sums its workers' gradients first) needs utype ALLREDUCE"),
    ({"utype": "ALLREDUCE", "threads": 0}, "threads must be > 0, got 0"),
    ({"utype": "ALLREDUCE", "threads": 2, "compression": "int8"}, "cannot be combined with compression"),
    ({"utype": "ALLREDUCE", "allreduce": "TREE", "compression": "int8"}, "compression needs allreduce=ALLGATHER"),
    ({"utype": "BSP", "colocated": "yes"}, "colocated must be true or false, got 'yes'"),
    ({"utype": "BSP", "servers": 3}, "servers=3 but the model has 2 matrices"),
    ({"utype": "EASGD", "sfb": True}, "sfb (sufficient factors instead of gradients) applies to utype ALLREDUCE, "),
    ({"utype": "ALLREDUCE", "sfb": True, "freq": "EPOCH"}, "sfb with freq=EPOCH would send the factors of the whole"),
    ({"utype": "ALLREDUCE", "sfb": True, "compression": "int8"}, "sfb cannot be combined with compression"),
    ({"utype": "ALLREDUCE", "sfb": "yes"}, "sfb must be true or false, got 'yes'"),
    ({"utype": "EASGD", "overlap": True}, "overlap (all-reduce beside the backward pass, or pulls beside the forward"),
    ({"utype": "BSP", "overlap": True, "bucket": 1000}, "bucket sizes the all-reduce's messages; utype BSP pulls"),
    ({"utype": "ALLREDUCE", "overlap": True, "allreduce": "MASTER"}, "it needs allreduce=RING or TREE, not MASTER"),
    ({"utype": "ALLREDUCE", "overlap": True, "threads": 2}, "overlap cannot be combined with compression or threads"),
    ({"utype": "ALLREDUCE", "bucket": -2}, "bucket must be >= 1 byte (or 0 for the default), got -2"),
])  # fmt: skip
def test_validation_messages(kw: dict[str, object], fragment: str) -> None:
    with pytest.raises(DaphneRuntimeError) as e:
        train(**kw)
    assert fragment in str(e.value)


# -- LOCAL mode --------------------------------------------------------------------------------------------------------


def test_local_deterministic_strategies_equal_bsp() -> None:
    bsp = train()
    for kw in ({"servers": 2}, {"colocated": True}, {"utype": "SSP", "staleness": 0, "servers": 2},
               *({"utype": "ALLREDUCE", "allreduce": a} for a in ("ALLGATHER", "RING", "TREE", "MASTER"))):  # fmt: skip
        assert diff(train(**kw), bsp) == 0.0, kw
    for freq in ("NBATCHES", "EPOCH"):
        ring = train(utype="ALLREDUCE", allreduce="RING", freq=freq, nbatches=3)
        assert diff(ring, train(freq=freq, nbatches=3)) == 0.0
    assert diff(train(utype="ALLREDUCE", k=2, threads=2), train(k=4)) == 0.0  # k * threads workers


def test_local_easgd_gossip_and_value_bound() -> None:
    start = lr.mse(lr.model0(), X, Y)
    hp = lr.hyper(0.05)
    for kw in ({"utype": "EASGD", "period": 2}, {"utype": "EASGD", "period": 2, "alpha": 0.5, "servers": 2},
               {"utype": "GOSSIP"}, {"utype": "GOSSIP", "topology": "RANDOM", "k": 5}):  # fmt: skip
        got = lr.mse(train(epochs=4, hyperparams=hp, **kw), X, Y)
        assert got < 0.25 * start, (kw, got, start)
    g1 = train(utype="GOSSIP", topology="RANDOM", k=4, seed=3)
    assert diff(g1, train(utype="GOSSIP", topology="RANDOM", k=4, seed=3)) == 0.0
    assert diff(g1, train(utype="GOSSIP", topology="RANDOM", k=4, seed=4)) > 0.0
    # one worker: GOSSIP is plain SGD, and so is EASGD's worker (its master only trails it)
    assert diff(train(utype="GOSSIP", k=1), train(k=1)) == 0.0
    # the value bound: fewer models travel, the loss stays
    train(utype="ASP", epochs=4, hyperparams=hp)
    free = STATS.last.total  # type: ignore[union-attr]
    m = train(utype="ASP", epochs=4, hyperparams=hp, delta_max=0.02)
    bounded = STATS.last.total  # type: ignore[union-attr]
    assert bounded.pulled < 0.9 * free.pulled
    assert lr.mse(m, X, Y) < 0.05 * start


FAILING = [{"utype": "ALLREDUCE", "allreduce": "RING"}, {"utype": "GOSSIP"}, {"utype": "EASGD"},
           {"utype": "BSP", "servers": 2}, {"utype": "ASP", "colocated": True}]  # fmt: skip


@pytest.mark.parametrize("kw", FAILING)
def test_local_worker_failure_is_raised(kw: dict[str, object]) -> None:
    opts = PSOptions(freq="BATCH", k=3, hyperparams=lr.hyper(), **kw)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="bad_upd exploded"):
        paramserv(lr.model0(), X, Y, lr.bad_upd, lr.agg, opts)
