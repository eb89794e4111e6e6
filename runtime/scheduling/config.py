"""The task scheduler's knobs (`SchedulerConfig`), apart from the scheduler: the driver sets them on every run,
and a program that never runs a pipeline must not pay for importing the scheduler (tools/driver.py's
`configure_runtime`, the program cache's hit path).

This module imports only the standard library.
"""

from __future__ import annotations

from dataclasses import dataclass

SCHEMES = ("STATIC", "SS", "GSS", "TSS", "FAC2", "TFSS", "FISS", "VISS", "PLS", "MSTATIC", "MFSC", "PSS", "AUTO")
"""The partitioning schemes of `partitioning.py` (here, so that the option table reads them without importing it)."""
LAYOUTS = ("CENTRALIZED", "PERGROUP", "PERCPU")
"""The queue layouts of `queues.py`."""
STRATEGIES = ("SEQ", "SEQPRI", "RANDOM", "RANDOMPRI")
"""The victim selections of `victim_selection.py`."""


@dataclass
class SchedulerConfig:
    """The scheduling knobs of the user config / command line (DAPHNE's names in comments)."""

    num_threads: int = -1  # numberOfThreads / --num-threads (<= 0: one per physical core)
    scheme: str = "STATIC"  # taskPartitioningScheme / --partitioning
    queue_layout: str = "CENTRALIZED"  # queueSetupScheme / --queue_layout
    victim_selection: str = "SEQ"  # victimSelection / --victim_selection
    grain: int = 1  # minimumTaskSize / --grain-size
    pin_workers: bool = False  # pinWorkers / --pin-workers
    hyperthreading: bool = False  # hyperthreadingEnabled / --hyperthreading
    pre_partition: bool = False  # prePartitionRows / --pre-partition
    debug_mt: bool = False  # debugMultiThreading / --debug-mt
    seed: int = 0  # for RANDOM/RANDOMPRI victim selection (reproducible runs)
    coalesce_rows: int = 1  # consecutive tasks of a queue are run together up to this many rows (a physical batch)
