"""The cost model of paramserv's communication: the bytes each rank sends per step, in the steady state.

One table per fact: docs/distributed-training.md prints these formulas, bench/dist_train_bench.py sets them next
to the bytes it measures, the MPI tests check the measurements against them. |w| is the model's (= a gradient's)
size in bytes, k the number of worker ranks; a *step* is one clock (one batch per worker with freq=BATCH).
Control messages (a few hundred bytes of JSON per push) and the first and last steps (the initial model is
already on the workers; the last push asks for no model) are not in the formulas.

Ranks are listed as the statistics list them: rank 0 (the coordinator, server 1 of the server strategies), the k
worker ranks, then the dedicated server ranks of `servers=M`.
"""

from __future__ import annotations

from collections.abc import Sequence


def broadcast_children(k: int) -> list[int]:
    """How many ranks each of k ranks sends to in a binomial-tree broadcast from rank 0 (reduction.py)."""
    children = [0] * k
    have = 1
    while have < k:
        for i in range(have):
            if i + have < k:
                children[i] += 1
        have *= 2
    return children


def allreduce(algorithm: str, k: int, w: float) -> list[float]:
    """Bytes each of k worker ranks sends for one all-reduce of w bytes."""
    if k == 1:
        return [0.0]
    if algorithm == "ALLGATHER":
        return [(k - 1) * w] * k
    if algorithm == "RING":
        return [2 * (k - 1) / k * w] * k
    if algorithm == "TREE":
        return [(1 if i else 0) * w + c * w for i, c in enumerate(broadcast_children(k))]
    if algorithm == "MASTER":
        return [(k - 1) * w] + [w] * (k - 1)
    raise ValueError(algorithm)


def reduce_to_root(algorithm: str, k: int, w: float) -> list[float]:
    """Bytes each of k worker ranks sends for a reduction of w bytes whose sum only worker 0 needs (ALLREDUCE's
    last clock: only worker 0's replica is the call's result): RING's reduce-scatter, then each chunk to worker 0;
    TREE's reduce without the broadcast; ALLGATHER a gather; MASTER no answers."""
    if k == 1:
        return [0.0]
    if algorithm == "RING":
        return [(k - 1) / k * w] + [w] * (k - 1)
    if algorithm in ("ALLGATHER", "TREE", "MASTER"):
        return [0.0] + [w] * (k - 1)
    raise ValueError(algorithm)


def per_step(utype: str, k: int, w: float, algorithm: str = "ALLGATHER", shards: Sequence[float] = (),
             colocated: bool = False, period: int = 1, topology: str = "RING") -> list[float]:  # fmt: skip
    """Bytes per step sent by rank 0, the k worker ranks and the dedicated server ranks (in that order).
    `shards`: the bytes of each server shard (server strategies with servers > 1 or colocated)."""
    if utype in ("BSP", "SSP", "ASP", "SBP", "EASGD"):
        every = period if utype == "EASGD" else 1  # EASGD: one exchange (model up, difference down) per period
        sizes = list(shards) or [w]
        if colocated:  # worker j holds shard j: pushes to the others' shards, its shard to the other workers
            held = sizes + [0.0] * (k - len(sizes))
            return [0.0] + [((w - held[j]) + (k - 1) * held[j]) / every for j in range(k)]
        return [k * sizes[0] / every] + [w / every] * k + [k * s / every for s in sizes[1:]]
    if utype == "ALLREDUCE":
        return [0.0] + allreduce(algorithm, k, w)
    if utype == "LOCALSGD":
        return [0.0] + [b / period for b in allreduce(algorithm, k, w)]
    if utype == "GOSSIP":
        if topology == "RING":
            return [0.0] + [min(k - 1, 2) * w] * k
        return [0.0] + [w * (k - k % 2) / k] * k  # a random pairing leaves one worker out when k is odd
    raise ValueError(utype)


def per_epoch(utype: str, k: int, w: float, steps: int, algorithm: str = "ALLGATHER", shards: Sequence[float] = (),
              colocated: bool = False, period: int = 1, topology: str = "RING") -> list[float]:  # fmt: skip
    """Bytes per epoch (of `steps` clocks, one epoch per call, every worker with a batch at every clock) sent by
    each rank, with the edges of a call: the last push asks for no model; ALLREDUCE's last sum goes to worker 0
    only (`reduce_to_root`); EASGD and LOCALSGD also exchange after
    the last clock; GOSSIP ends with the mean of all replicas (a RING all-reduce)."""
    if utype in ("BSP", "SSP", "ASP", "SBP"):
        sizes = list(shards) or [w]
        if colocated:
            held = sizes + [0.0] * (k - len(sizes))
            return [0.0] + [steps * (w - held[j]) + (steps - 1) * (k - 1) * held[j] for j in range(k)]
        return [k * (steps - 1) * sizes[0]] + [steps * w] * k + [k * (steps - 1) * s for s in sizes[1:]]
    if utype == "EASGD":
        ex = sum(1 for c in range(steps) if (c + 1) % period == 0 or c == steps - 1)
        sizes = list(shards) or [w]
        if colocated:
            held = sizes + [0.0] * (k - len(sizes))
            return [0.0] + [ex * ((w - held[j]) + (k - 1) * held[j]) for j in range(k)]
        return [k * ex * sizes[0]] + [ex * w] * k + [k * ex * s for s in sizes[1:]]
    if utype == "ALLREDUCE":  # the last clock's sum goes to worker 0 only
        last = reduce_to_root(algorithm, k, w)
        return [0.0] + [(steps - 1) * b + r for b, r in zip(allreduce(algorithm, k, w), last)]
    if utype == "LOCALSGD":
        ex = sum(1 for c in range(steps) if (c + 1) % period == 0 or c == steps - 1)
        return [0.0] + [ex * b for b in allreduce(algorithm, k, w)]
    if utype == "GOSSIP":
        step = per_step("GOSSIP", k, w, topology=topology)[1:]
        return [0.0] + [steps * s + f for s, f in zip(step, allreduce("RING", k, w))]
    raise ValueError(utype)


# -- Poseidon's hybrid communication (`sfb=true`) ---------------------------------------------------------------------

SFB_HEADER = 16
"""Bytes of a sufficient-factor message's header (a flag and the batch's row count, int64 each)."""


def factor_bytes(K: int, shape: Sequence[int], itemsize: int) -> int:
    """Bytes of the sufficient factors of an M x N gradient over a batch of K rows: K (M + N) values."""
    return K * (int(shape[0]) + int(shape[1])) * itemsize


def sfb_wins(algorithm: str, k: int, K: int, shape: Sequence[int], itemsize: int) -> bool:
    """Poseidon's choice for one gradient t(A) @ B (A: K x M, B: K x N) among k workers: broadcast the factors
    ((k-1) K (M + N) values sent per worker) when that is less than what the all-reduce of the full M x N matrix
    sends from its busiest worker (RING: 2 (k-1)/k M N; Poseidon's parameter server: 2 M N per worker).
    `algorithm` "PS" (parameter servers): the worker pushes the factors to the server, which rebuilds the
    product, instead of the M x N gradient; the pull is the M x N matrix either way, so the factors win when
    K (M + N) < M N."""
    if algorithm == "PS":
        return factor_bytes(K, shape, itemsize) < int(shape[0]) * int(shape[1]) * itemsize
    if k < 2:
        return False
    full = max(allreduce(algorithm, k, float(int(shape[0]) * int(shape[1]) * itemsize)))
    return (k - 1) * factor_bytes(K, shape, itemsize) < full


def sfb_per_step(algorithm: str, k: int, K: int, shapes: Sequence[Sequence[int]], itemsize: int,
                 factored: Sequence[int]) -> list[float]:  # fmt: skip
    """Bytes per step sent by rank 0 and the k worker ranks with `sfb=true`: the factors of the positions
    `factored` (chosen by `sfb_wins`) go by one all-gather of K_max-row buffers (batchsize rows, so that all have
    one size), the other matrices by the all-reduce `algorithm`."""
    if k < 2:
        return [0.0] * (k + 1)
    sf = SFB_HEADER + sum(factor_bytes(K, shapes[j], itemsize) for j in factored) if factored else 0
    rest = sum(int(s[0]) * int(s[1]) for j, s in enumerate(shapes) if j not in factored) * itemsize
    full = allreduce(algorithm, k, float(rest)) if rest else [0.0] * k
    return [0.0] + [(k - 1) * sf + f for f in full]
