"""Work stealing: the order in which a worker whose own queue is empty visits the other queues (DAPHNE's
victim selection: SEQ, SEQPRI, RANDOM, RANDOMPRI)."""

from __future__ import annotations

import random
from collections.abc import Sequence

from daphnec.runtime.scheduling.config import STRATEGIES


def victim_order(
    strategy: str, own: int, num_queues: int, queue_packages: Sequence[int], rng: random.Random
) -> list[int]:
    """Queues to steal from after the worker's own queue `own`, each once.

    SEQ: (own+1) % Q, (own+2) % Q, ...; SEQPRI: the same, but queues of the worker's own package first;
    RANDOM: a random order; RANDOMPRI: random within the own package first, then random over the rest.
    """
    others = [(own + i) % num_queues for i in range(1, num_queues)]
    if strategy == "SEQ":
        return others
    same = [q for q in others if queue_packages[q] == queue_packages[own]]
    rest = [q for q in others if queue_packages[q] != queue_packages[own]]
    if strategy == "SEQPRI":
        return same + rest
    if strategy == "RANDOM":
        rng.shuffle(others)
        return others
    if strategy == "RANDOMPRI":
        rng.shuffle(same)
        rng.shuffle(rest)
        return same + rest
    raise ValueError(f"unknown victim selection '{strategy}' (valid: {', '.join(STRATEGIES)})")
