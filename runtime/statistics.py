"""`--statistics`: DAPHNE's operator execution statistics for every run.

DAPHNE (`src/runtime/local/instrumentation/KernelInstrumentation.cpp`, `src/util/Statistics.cpp`) times every
kernel call when `--statistics` is given and prints, after the run, one line per operator (kernel at a source
location): its total time, call count, average time and `File:Line:Column`, most expensive first. daphnec does
the same for the kernels its host code calls (a vectorized pipeline counts as one operator, `pipeline(<kernel>)`,
so its fused body is timed as a whole) and adds the bytes of the results the calls produced (none for a result
that is the call's first argument: an in-place update, `compiler/passes/in_place_insert.py`). An op inside
daphnec's `nn` library is charged to the line that called into its library file (`_where`), so the table shows
the time of each layer's ops (docs/deep-learning.md). Ops the host code computes inline, without a kernel call,
are not operators of the table: scalar arithmetic, comparisons and casts (`KernelSpec.inline`), `nrow`/`ncol` of
matrices, `as.scalar(X[i, j])` of integer positions, the in-place store of one f64 cell `X[i, j] = v`, and a row
range `X[a:b, ]` or a read-once column when the kernel's own test allows a numpy view (`host_view`)
(compiler/host/generator.py); their time is the time of the generated code around the calls. An f64 element-wise
op that calls its numpy function directly (`f64_ufunc`) is still charged to its kernel's name.

`instrument(globals, line_locs, host_file)` wraps the callables of a host program's globals; each call is charged
to the generated line that made it, hence to that line's DaphneDSL location. The report goes to stderr (stdout is
the script's), as a table under DAPHNE's header line.
"""

from __future__ import annotations

import os
import re
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from daphnec.lib import LIBRARY_DIR

MAX_ROWS = 10
"""DAPHNE's `Statistics::MAX_STATS_COUNT`: the rows printed (most expensive first)."""

_SUFFIX = re.compile(r"_\d+$")


@dataclass
class OperatorStats:
    seconds: float = 0.0
    calls: int = 0
    bytes: int = 0


ENABLED = False
"""Set by the driver from `--statistics`: host programs built afterwards are instrumented."""

PARAMSERV_TABLES = False
"""Set by the driver from `--statistics` or `--timing`: every `paramserv` call prints its per-epoch table
(`runtime.paramserv.stats`). The flag lives here, not in the paramserv package, so that setting it costs no import
of that package (~0.1 s: MPI, the server, compression) in runs that never call `paramserv`."""

_STATS: dict[tuple[str, str], OperatorStats] = {}
_LOCK = threading.Lock()


def instrument(glob: dict[str, object], line_locs: list[Any], host_file: str) -> dict[str, object]:
    """A copy of a host program's globals whose kernels (callables bound by host code) record their calls."""
    out = dict(glob)
    for name, value in glob.items():
        if callable(value) and not isinstance(value, type) and not name.startswith("_native_"):
            out[name] = _timed(_SUFFIX.sub("", name).lstrip("_") or name, value, line_locs, host_file)
    return out


def _loc_of(frame: Any, line_locs: list[Any], host_file: str) -> Any:
    line = frame.f_lineno if frame.f_code.co_filename == host_file else 0
    return line_locs[line - 1] if 0 < line <= len(line_locs) else None


def _where(frame: Any, line_locs: list[Any], host_file: str) -> str:
    """`File:Line:Column` of the DaphneDSL line that made the call. A call inside daphnec's own library (`lib/nn`:
    a layer's conv2d) is charged to the line outside the op's library file that called into it, the library's
    line after it (`train.daph:40:5 (nn/layers/conv2d.daph:23:10)`, or for a layer that the shipped LeNet calls
    `nn/networks/lenet.daph:53:23 (nn/layers/conv2d.daph:14:23)`), so each layer of a network is its own row."""
    loc = _loc_of(frame, line_locs, host_file)
    if loc is None:
        return "-"
    if not _in_library(loc.file):
        return f"{loc.file}:{loc.line}:{loc.col}"
    inner = f"{_shown(loc.file)}:{loc.line}:{loc.col}"
    caller = frame.f_back
    while caller is not None:
        outer = _loc_of(caller, line_locs, host_file)
        if outer is not None and os.path.abspath(outer.file) != os.path.abspath(loc.file):
            return f"{_shown(outer.file)}:{outer.line}:{outer.col} ({inner})"
        caller = caller.f_back
    return inner


def _in_library(file: str) -> bool:
    return os.path.abspath(file).startswith(_LIBRARY)


def _shown(file: str) -> str:
    """A library file by its import path (`nn/layers/conv2d.daph`), any other file as the script named it."""
    return os.path.relpath(os.path.abspath(file), LIBRARY_DIR) if _in_library(file) else file


_LIBRARY = os.path.join(LIBRARY_DIR, "")


def _timed(name: str, fn: Callable[..., Any], line_locs: list[Any], host_file: str) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        where = _where(sys._getframe(1), line_locs, host_file)
        op = f"pipeline({_body_name(args[0])})" if name == "run_pipeline" and args else name
        t0 = time.perf_counter()
        result = fn(*args, **kwargs)
        seconds = time.perf_counter() - t0
        with _LOCK:
            s = _STATS.setdefault((op, where), OperatorStats())
            s.seconds += seconds
            s.calls += 1
            s.bytes += 0 if args and result is args[0] else _nbytes(result)  # an in-place update made nothing new
        return result

    return call


def _nbytes(value: object) -> int:
    """The bytes a result holds (numpy arrays, matrices and frames with `nbytes`; tuples of them)."""
    if isinstance(value, tuple):
        return sum(_nbytes(v) for v in value)
    n = getattr(value, "nbytes", 0)
    return n if isinstance(n, int) else 0


def report() -> str:
    """DAPHNE's table (plus a Bytes column), most expensive operators first; empty if nothing was recorded."""
    with _LOCK:
        rows = sorted(_STATS.items(), key=lambda kv: -kv[1].seconds)[:MAX_ROWS]
    if not rows:
        return ""
    width = max(len("Operator Name"), *(len(op) for (op, _), _ in rows))
    lines = [
        "DAPHNE operator execution runtime statistics.",
        f"{'#':<2}  {'Operator Name':<{width}}  {'Time(s)':<9}{'Count':<11}  {'Avg(s)':<8}{'Bytes':<14}"
        "File:Line:Column",
    ]
    for i, ((op, where), s) in enumerate(rows):
        lines.append(
            f"{i:<2}  {op:<{width}}  {s.seconds:<9.4f}{s.calls:<13}{s.seconds / s.calls:<8.4f}{s.bytes:<14}{where}"
        )
    return "\n".join(lines) + "\n"


def _body_name(body: object) -> str:
    """A pipeline body's name: its native kernel's (`PipelineBody.key`) or the generated Python function's."""
    return str(getattr(body, "key", None) or getattr(body, "__name__", "body"))


def take_report() -> str:
    """`report()`, then forget what was recorded (the Python API prints one table per `compute()`)."""
    text = report()
    with _LOCK:
        _STATS.clear()
    return text
