"""`--timing`: the JSON line DAPHNE prints on stderr after a run, shared by the command line and the Python API's
`timing=True` (tools/daphnelib/session.py)."""

from __future__ import annotations


def _fmt_seconds(x: float) -> str:
    """C++ `std::ostream << double` with default flags: 6 significant digits, like `%g`."""
    return f"{x:g}"


def timing_json(startup: float, parsing: float, compilation: float, execution: float, total: float) -> str:
    return (
        "{"
        f'"startup_seconds": {_fmt_seconds(startup)}, '
        f'"parsing_seconds": {_fmt_seconds(parsing)}, '
        f'"compilation_seconds": {_fmt_seconds(compilation)}, '
        f'"execution_seconds": {_fmt_seconds(execution)}, '
        f'"total_seconds": {_fmt_seconds(total)}'
        "}"
    )


def timing_parts(
    startup: float, compile_wall: float, timings: dict[str, float], execution: float
) -> tuple[float, float, float, float, float]:
    """`--timing`'s parts, which add up to the total: parsing as the frontend measured it, compilation the rest of
    the time between start-up and execution (imports, passes, host code, the JIT). A program served from the
    whole-program cache was not parsed or compiled: loading it counts as start-up."""
    if timings.get("program_cache_hit"):
        startup, parsing, compilation = startup + compile_wall, 0.0, 0.0
    else:
        parsing = min(float(timings.get("parsing_seconds", 0.0)), compile_wall)
        compilation = compile_wall - parsing
    return startup, parsing, compilation, execution, startup + parsing + compilation + execution
