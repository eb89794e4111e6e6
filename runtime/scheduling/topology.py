"""The CPU topology as the operating system reports it (DAPHNE reads it with hwloc): for every logical CPU its
package (socket) and physical core, so workers can be spread over cores, grouped per package and pinned."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path

_SYS = Path("/sys/devices/system/cpu")


@dataclass(frozen=True)
class Cpu:
    """One logical CPU (processing unit)."""

    id: int
    package: int
    core: int


def _read_int(path: Path, default: int) -> int:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return default


def logical_cpus() -> list[Cpu]:
    """The CPUs this process may run on, with their package and core ids (Linux sysfs; one package otherwise)."""
    try:
        allowed = sorted(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        allowed = list(range(os.cpu_count() or 1))
    return [_cpu(c) for c in allowed]


@functools.cache
def _cpu(c: int) -> Cpu:
    """A CPU's package and core, read once per process (every pipeline call asks)."""
    topo = _SYS / f"cpu{c}" / "topology"
    return Cpu(c, _read_int(topo / "physical_package_id", 0), _read_int(topo / "core_id", c))


def physical_cores(cpus: list[Cpu]) -> list[Cpu]:
    """One logical CPU per physical core (the first hyperthread of each), DAPHNE's default worker placement."""
    seen: set[tuple[int, int]] = set()
    out = []
    for c in cpus:
        if (c.package, c.core) not in seen:
            seen.add((c.package, c.core))
            out.append(c)
    return out


def worker_cpus(num_threads: int, hyperthreading: bool) -> list[Cpu]:
    """The CPU each worker runs on: physical cores first (or every hyperthread with `--hyperthreading`), cycling
    when more workers than CPUs are asked for. `num_threads <= 0` means one worker per physical core."""
    cpus = logical_cpus()
    pool = cpus if hyperthreading else physical_cores(cpus)
    n = num_threads if num_threads > 0 else len(physical_cores(cpus))
    return [pool[i % len(pool)] for i in range(n)]
