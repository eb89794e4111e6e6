"""Test hooks: the environment variables that exist only for tests and benchmarks, and the one place that reads them.

Production code never reads these variables itself; it asks this module. Every hook is off when its variable is
unset, and a malformed value counts as unset (a hook never fails a run). mpiexec passes the environment on, so a
hook set for `mpiexec ... daphnec` acts on every rank.

- `DAPHNEC_PS_SLOW_WORKER=<worker>:<seconds>` (`ps_slow_worker`, runtime/paramserv/worker.py): that `paramserv`
  worker (0-based, LOCAL thread or MPI worker rank) sleeps this long after each batch, a straggler; the tests and
  the benchmark show with it that ASP and SBP do not wait for a slow worker.
- `DAPHNEC_PS_PULL_TRACE=<file>` (`ps_pull_trace`, runtime/paramserv/pulls.py): every ordered pull (`overlap=true`
  with parameter servers) appends one line to the file: the worker, the order in which the matrices arrived and
  the order in which `upd` first read them; the MPI tests check TicTac's order with it.
- `DAPHNEC_PS_TIMELINE=<file>` (`ps_timeline`, runtime/paramserv/stats.py `Flights`): every MPI worker appends, per
  step, the intervals its `upd` computed and, with the server strategies, each push and pull was in flight (per
  matrix with `overlap=true`); with ALLREDUCE the reduction's phases (each reduce-scatter level and its additions,
  all-gather or broadcast step, overlap bucket) and `agg`; bench/dist_train_bench.py `--timeline` shows with it
  what serialises.
- `DAPHNEC_DIST_SLOW_RANK=<rank>:<factor>` (`dist_slow_rank`, runtime/distributed/worker.py): that MPI worker rank
  takes `factor` times as long for every task (it sleeps (factor - 1) x the task's compute time afterwards), a slow
  node; bench/dist_bench.py and the tests show with it what dynamic inter-node scheduling buys.
- `DAPHNEC_DIST_STATS=<file>` (`dist_stats_file`, runtime/distributed/coordinator.py): the coordinator writes what
  it did (tasks, shipped bytes, seconds per call) to the file as JSON when it ends.
- `DAPHNEC_DIST_PING_INTERVAL=<seconds>` and `DAPHNEC_DIST_DEADLINE=<seconds>` (`dist_ping_interval`,
  `dist_deadline`, runtime/distributed/protocol.py): the liveness check's ping interval (0.25 s) and the silence
  after which a rank counts as failed (4 s); the fault tests shorten them to detect failures quickly.
- `DAPHNEC_NAMED_TEMPORARIES=1` (`named_temporaries`, runtime/io/atomic.py): file writes use named temporary
  files, as on a file system without unnamed files (`O_TMPFILE`), so that the tests can see what a killed writer
  leaves there and who sweeps it.
- `DAPHNEC_NO_SHIPPED_TABLES=1` (`no_shipped_tables`, runtime/cache_files.py): the parser ignores the LALR tables
  shipped next to its grammar, so that the cache folder's parser entries are written and read as for a grammar
  without shipped tables (tests/test_cache_safety.py attacks those entries).
- `DAPHNEC_PROGRESS_AFTER=<seconds>` (`progress_after`, tools/progress.py): the command line's progress line on a
  terminal appears after this many seconds instead of 5, so that a test on a pseudo-terminal need not run for 5 s.

This module imports only the standard library.
"""

from __future__ import annotations

import os

PS_SLOW_WORKER = "DAPHNEC_PS_SLOW_WORKER"
PS_PULL_TRACE = "DAPHNEC_PS_PULL_TRACE"
PS_TIMELINE = "DAPHNEC_PS_TIMELINE"
DIST_SLOW_RANK = "DAPHNEC_DIST_SLOW_RANK"
DIST_STATS = "DAPHNEC_DIST_STATS"
DIST_PING_INTERVAL = "DAPHNEC_DIST_PING_INTERVAL"
DIST_DEADLINE = "DAPHNEC_DIST_DEADLINE"
NO_SHIPPED_TABLES = "DAPHNEC_NO_SHIPPED_TABLES"
NAMED_TEMPORARIES = "DAPHNEC_NAMED_TEMPORARIES"
PROGRESS_AFTER = "DAPHNEC_PROGRESS_AFTER"

#: Every hook variable (tests/runtime/test_testing_hooks.py checks that no other module of daphnec names one).
HOOKS: tuple[str, ...] = (
    PS_SLOW_WORKER,
    PS_PULL_TRACE,
    PS_TIMELINE,
    DIST_SLOW_RANK,
    DIST_STATS,
    DIST_PING_INTERVAL,
    DIST_DEADLINE,
    NO_SHIPPED_TABLES,
    NAMED_TEMPORARIES,
    PROGRESS_AFTER,
)


def _indexed(variable: str, least: float) -> tuple[int, float]:
    """`<variable>=<index>:<amount>` as (index, max(amount, least)); (-1, least) when unset or malformed."""
    index, _, amount = os.environ.get(variable, "").partition(":")
    try:
        return int(index), max(float(amount or least), least)
    except ValueError:
        return -1, least


def _seconds(variable: str, default: float) -> float:
    try:
        return float(os.environ.get(variable, default))
    except ValueError:
        return default


def ps_slow_worker() -> tuple[int, float]:
    """(worker index, seconds to sleep after each batch); (-1, 0.0) when off."""
    return _indexed(PS_SLOW_WORKER, 0.0)


def ps_pull_trace() -> str | None:
    """The file ordered pulls append their arrival and read orders to, None when off."""
    return os.environ.get(PS_PULL_TRACE) or None


def ps_timeline() -> str | None:
    """The file paramserv's MPI workers append their compute and in-flight intervals to, None when off."""
    return os.environ.get(PS_TIMELINE) or None


def dist_slow_rank() -> tuple[int, float]:
    """(rank, slow-down factor >= 1); (-1, 1.0) when off."""
    return _indexed(DIST_SLOW_RANK, 1.0)


def dist_stats_file() -> str | None:
    """Where the coordinator writes its statistics, None when off."""
    return os.environ.get(DIST_STATS) or None


def dist_ping_interval(default: float) -> float:
    """Seconds between liveness pings."""
    return _seconds(DIST_PING_INTERVAL, default)


def dist_deadline(default: float) -> float:
    """Seconds of silence after which a rank counts as failed."""
    return _seconds(DIST_DEADLINE, default)


def no_shipped_tables() -> bool:
    """Whether the parser must ignore the tables shipped next to its grammar."""
    return os.environ.get(NO_SHIPPED_TABLES) == "1"


def named_temporaries() -> bool:
    """Whether file writes must use named temporary files (no `O_TMPFILE`)."""
    return os.environ.get(NAMED_TEMPORARIES) == "1"


def progress_after(default: float) -> float:
    """Seconds of running before the command line's progress line appears (on a terminal)."""
    return _seconds(PROGRESS_AFTER, default)
