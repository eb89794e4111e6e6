"""GOSSIP's neighbourhoods (D-PSGD, Lian et al. 2017): whom each worker averages its replica with at a clock.

- RING: worker i averages with i-1 and i+1 (mod k), a fixed ring: weights 1/3 each (k = 2: 1/2, k = 1: itself).
- RANDOM: worker i averages with its partner in a random pairing of the workers drawn for clock t from
  `PCG64(SeedSequence([seed, t]))`: weights 1/2 each (with k odd, one worker per clock keeps its replica).

Both mixing matrices are symmetric and doubly stochastic, as D-PSGD requires; RANDOM's changes every clock, so
information still spreads over the whole group although each exchange is pairwise. The neighbourhood is a sorted
list of worker indices, and the mix is its canonical mean (reduction.py), so two workers with the same
neighbourhood compute bit-identical averages, and LOCAL and MPI mode agree.
"""

from __future__ import annotations

import numpy as np


def neighbourhood(k: int, clock: int, topology: str, seed: int) -> list[list[int]]:
    """Per worker, the sorted indices whose replicas it averages at `clock` (itself included)."""
    if topology == "RING":
        return [sorted({(i - 1) % k, i, (i + 1) % k}) for i in range(k)]
    order = np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, clock]))).permutation(k)
    groups = [[i] for i in range(k)]
    for a, b in zip(order[0::2], order[1::2]):
        pair = sorted((int(a), int(b)))
        groups[pair[0]] = groups[pair[1]] = pair
    return groups


def peers(k: int, clock: int, topology: str, seed: int, w: int) -> list[int]:
    """The workers `w` exchanges replicas with at `clock` (its neighbourhood without itself)."""
    return [j for j in neighbourhood(k, clock, topology, seed)[w] if j != w]
