"""The vectorized engine's knobs (`Settings`, the one `SETTINGS`), apart from the engine: the driver sets them from
the user config on every run, and a program without pipelines must not pay for importing the engine, the scheduler
and numpy's friends for it (tools/driver.py's `configure_runtime`, the program cache's hit path).

This module imports only the standard library and the scheduler's knobs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from daphnec.runtime.scheduling.config import SchedulerConfig

MIN_PARALLEL_BYTES = 4 << 20
"""A pipeline whose ROWS inputs have fewer bytes runs as one call on the calling thread: waking workers and
combining their parts would cost more than the work (connected components' `t(c)`: 3.2 MB, ~0.3 ms). The
vectorizer's cost model does not form such pipelines when it knows the sizes (`--vec-min-cells`, in f64 cells)."""


@dataclass
class Settings:
    """Knobs of the vectorized engine, set once from the user config by the driver."""

    phy_batch_size: int = 98304
    """Bytes of input rows per body call (DAPHNE's `--phy-batch-size`)."""
    min_parallel_bytes: int = MIN_PARALLEL_BYTES
    """See `MIN_PARALLEL_BYTES`."""
    native_batch_bytes: int = 16 << 20
    """Bytes of input rows a single-stage native kernel may process per call (consecutive small tasks of a queue
    run together), but at most a quarter of a worker's share, and the batches shrink as the queue drains
    (`TaskQueue.pop_run`), so the workers still finish together. A call costs a few microseconds, and more in
    caches refilled after the Python code between calls: fine-grained schemes (SS, AUTO) need few, large calls."""
    scheduler: SchedulerConfig = field(default_factory=SchedulerConfig)


SETTINGS = Settings()
