"""`compute()`: generate the program, compile it once per DAG shape, run it in this process, convert the result.

**Why DaphneDSL text.** `compute()` generates DaphneDSL text (`codegen.py`) and hands it to the normal frontend
rather than building IR directly. The text reuses the whole frontend, its checks and its error locations (an error
points at a line of the generated program, which maps back to the Python call that built the node), and it is the
natural cache key for "the same DAG shape with new data": inputs enter as typed slots, never as addresses or
values. Parsing costs a few milliseconds, but only on a cache miss; a hit costs the text generation and a dict
lookup (docs/python-api.md has the measurements).

**Caching.** Compiled programs (host code plus its native kernels) are kept in-process, keyed by the text, every
compile-relevant option and the types of file inputs (`--explain` always compiles, so that the IR is printed).
The scheduler's knobs (`num_threads`, `partitioning`, ...) are not part of the key: like the CLI's program cache,
they are handed to the runtime before each run (`tools/driver.py::configure_runtime`).

Runs are serialised by a lock: the runtime's engine settings and input bindings are process-wide.
"""

from __future__ import annotations

import atexit
import shutil
import sys
import tempfile
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, fields
from typing import Any, NoReturn

from daphnec.tools.daphnelib.dag import FRAME, MATRIX, SCALAR, Node
from daphnec.tools.daphnelib.errors import (
    BY_EXIT_CODE,
    DaphneCompileError,
    DaphneExecutionError,
    DaphneLibError,
    DaphneUsageError,
)
from daphnec.tools.daphnelib.script import PROGRAM_NAME, Generated, generate

CACHE_SIZE = 256
TRANSFERS = ("shared memory", "files")

_LOCK = threading.RLock()
_PROGRAMS: OrderedDict[tuple[object, ...], Any] = OrderedDict()
_STATS = {"compiles": 0, "hits": 0, "runs": 0}
_TMPDIR: list[str] = []


def stats() -> dict[str, int]:
    """How many programs were compiled, found in the cache and run in this process (for tests and tuning)."""
    return dict(_STATS)


def clear_cache() -> None:
    with _LOCK:
        _PROGRAMS.clear()


def tmpdir() -> str:
    """This process's folder for file transfers (removed at exit)."""
    if not _TMPDIR:
        path = tempfile.mkdtemp(prefix="daphnelib-")
        atexit.register(shutil.rmtree, path, True)
        _TMPDIR.append(path)
    return _TMPDIR[0]


# --- options -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Settings:
    """A user config from keyword options, and the part of it that compiled programs depend on."""

    config: Any
    compile_key: tuple[object, ...]

    @property
    def debug(self) -> bool:
        return bool(self.config.debug)


def make_settings(options: dict[str, object]) -> Settings:
    from daphnec.compiler.host.program_cache import _RUNTIME_ONLY  # the one list of run-time-only config fields
    from daphnec.tools.daphnelib.options import build_config

    config = build_config(options)
    items = [(f.name, _frozen(getattr(config, f.name))) for f in fields(config)]
    return Settings(config, tuple(i for i in items if i[0] not in _RUNTIME_ONLY))


def _frozen(v: object) -> object:
    if isinstance(v, list):
        return tuple(_frozen(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _frozen(x)) for k, x in v.items()))
    return v


# --- progress ------------------------------------------------------------------------------------------------------


class Progress:
    """`compute(progress=True)`: each phase on stderr, and a heartbeat while a long run executes."""

    def __init__(self, enabled: bool, interval: float = 2.0):
        self.enabled = enabled
        self.interval = interval
        self.t0 = time.perf_counter()
        self._stop: threading.Event | None = None

    def say(self, text: str) -> None:
        if self.enabled:
            sys.stderr.write(f"[daphnec] {time.perf_counter() - self.t0:7.3f} s  {text}\n")
            sys.stderr.flush()

    def running(self) -> threading.Thread | None:
        if not self.enabled:
            return None
        stop = self._stop = threading.Event()

        def beat() -> None:
            start = time.perf_counter()
            while not stop.wait(self.interval):
                self.say(f"running ({time.perf_counter() - start:.1f} s so far)")

        t = threading.Thread(target=beat, name="daphnelib-progress", daemon=True)
        t.start()
        return t

    def stop(self, t: threading.Thread | None) -> None:
        if t is not None and self._stop is not None:
            self._stop.set()
            t.join()


# --- errors --------------------------------------------------------------------------------------------------------


def program_error(e: Exception, gen: Generated, stage: type[DaphneLibError]) -> DaphneLibError:
    """A DaphneLib exception for an error of the generated program (see errors.py); `stage` is the class of
    errors that are not the compiler's or the runtime's own (internal errors of that stage)."""
    from daphnec.dialects.errors import DaphneError

    if not isinstance(e, DaphneError):
        return stage(f"internal error: {type(e).__name__}: {e}", program=gen.text)
    loc = e.loc
    line, site = "", None
    if loc is not None and loc.file == PROGRAM_NAME and 1 <= loc.line <= len(gen.line_nodes):
        line = gen.text.splitlines()[loc.line - 1].strip()
        node = gen.line_nodes[loc.line - 1]
        site = node.site if node is not None else None
    return BY_EXIT_CODE.get(e.code, stage)(e.message, loc, gen.text, line, site)


def _fail(e: Exception, gen: Generated, settings: Settings, stage: type[DaphneLibError]) -> NoReturn:
    """Raise the API's exception for `e`; the internal traceback is kept only with `debug=True`."""
    err = program_error(e, gen, stage)
    if settings.debug:
        raise err from e
    raise err from None


# --- compute -------------------------------------------------------------------------------------------------------


def compile_program(
    gen: Generated, settings: Settings, progress: Progress, timings: dict[str, float] | None = None
) -> Any:
    """The compiled program of `gen` (from the cache unless `--explain` asks to see the IR); `timings` receives
    the frontend's `parsing_seconds` when it compiles."""
    from daphnec.tools.driver import compile_source

    explain = bool(settings.config.explain)
    key = (gen.text, gen.signature, settings.compile_key)
    program = None if explain else _PROGRAMS.get(key)
    if program is not None:
        _PROGRAMS.move_to_end(key)
        _STATS["hits"] += 1
        return program
    progress.say("compiling the generated DaphneDSL program")
    try:
        program = compile_source(gen.text, PROGRAM_NAME, settings.config, {} if timings is None else timings)
    except Exception as e:  # noqa: BLE001 - every failure becomes one of the API's exceptions
        _fail(e, gen, settings, DaphneCompileError)
    _STATS["compiles"] += 1
    if not explain:
        _PROGRAMS[key] = program
        while len(_PROGRAMS) > CACHE_SIZE:
            _PROGRAMS.popitem(last=False)
    return program


def run_program(program: Any, gen: Generated, settings: Settings, progress: Progress) -> list[object]:
    from daphnec.tools.driver import configure_runtime, run_bound

    configure_runtime(settings.config, unless_current=True)  # another context may have other knobs
    progress.say("running")
    beat = progress.running()
    _STATS["runs"] += 1
    try:
        if settings.config.statistics:
            return _run_with_statistics(program, gen)
        return run_bound(program, gen.inputs)
    except Exception as e:  # noqa: BLE001 - every failure becomes one of the API's exceptions
        _fail(e, gen, settings, DaphneExecutionError)
    finally:
        progress.stop(beat)


def _run_with_statistics(program: Any, gen: Generated) -> list[object]:
    """`statistics=True`: one run of the program with its kernels timed (an instrumented copy of its host code;
    the cached program itself stays uninstrumented), then DAPHNE's statistics table on stderr, as `--statistics`
    prints it after a script. Kernel calls the program makes are charged to lines of the generated program."""
    from daphnec.runtime import statistics
    from daphnec.runtime.kernels.daphnelib import bound

    was = statistics.ENABLED
    statistics.ENABLED = True
    try:
        runner = program.host.runner()
    finally:
        statistics.ENABLED = was
    try:
        with bound(gen.inputs) as results:
            runner()
    finally:
        table = statistics.take_report()
        if table:
            sys.stdout.flush()
            sys.stderr.write(table)
            sys.stderr.flush()
    return results


def compute(
    root: Node,
    settings: Settings,
    transfer: str = "shared memory",
    verbose: bool = False,
    progress: bool = False,
) -> tuple[object, Generated]:
    """Run the program computing `root`; its raw runtime result (None for print/write nodes)."""
    if transfer not in TRANSFERS:
        raise RuntimeError(f"unknown way to transfer the data: '{transfer}'")
    prog = Progress(progress)
    t0 = time.perf_counter()
    timings: dict[str, float] = {}
    with _LOCK:
        gen = generate(root, transfer, tmpdir)
        t1 = time.perf_counter()
        program = compile_program(gen, settings, prog, timings)
        t2 = time.perf_counter()
        results = run_program(program, gen, settings, prog)
        t3 = time.perf_counter()
        result = _result(root, results, gen)
    if verbose:
        print(f"compute(): time to generate the DaphneDSL program: {t1 - t0:.10f} seconds")
        print(f"compute(): time to compile (or find) the program: {t2 - t1:.10f} seconds")
        print(f"compute(): Python-side execution time of the execute() function: {t3 - t2:.10f} seconds")
    if settings.config.timing:
        _print_timing(t1 - t0, t2 - t1, timings, t3 - t2)
    prog.say("done")
    return result, gen


def _print_timing(generate: float, compile_wall: float, timings: dict[str, float], execution: float) -> None:
    """`timing=True`: `--timing`'s JSON line on stderr for this `compute()`: generating the program is its start-up,
    parsing and compilation are zero when the program came from the cache."""
    from daphnec.tools.timing import timing_json, timing_parts

    sys.stdout.flush()
    sys.stderr.write(timing_json(*timing_parts(generate, compile_wall, timings, execution)) + "\n")
    sys.stderr.flush()


def _result(root: Node, results: list[object], gen: Generated) -> object:
    if root.kind not in (MATRIX, FRAME, SCALAR):
        return None
    if gen.result_file is not None:
        from daphnec.tools.daphnelib.transfer import read_result_file, remove_quietly

        try:
            return read_result_file(gen.result_file, root.kind)
        finally:
            remove_quietly(gen.result_file)
    if not results:
        raise DaphneUsageError("the program saved no result")
    return results[-1]


def writable(a: Any) -> Any:
    """A result array the caller may write to: views of the read-only input views are made writable again (their
    memory belongs to the caller's writable array)."""
    if not a.flags.writeable:
        try:
            a.flags.writeable = True
        except ValueError:
            pass
    return a


def inferred_matrix_type(root: Node, settings: Settings) -> tuple[int, int, str | None] | None:
    """The rows, columns (-1: unknown) and value type the compiler infers for matrix `root`, without running it:
    the type of what the generated program saves, in the compiled IR (the compile is cached like `compute()`'s).
    None if the program has no such value (or its IR is not kept)."""
    from daphnec.dialects.ops_daphnelib import SaveDaphneLibResultOp
    from daphnec.dialects.types import MatrixType

    with _LOCK:
        gen = generate(root, "shared memory", tmpdir)
        program = compile_program(gen, settings, Progress(False))
    module = getattr(program, "module", None)
    if module is None:
        return None
    for op in module.walk():
        if isinstance(op, SaveDaphneLibResultOp) and isinstance(op.arg.type, MatrixType):
            rows, cols = op.arg.type.shape
            vt = _vt_name(op.arg.type.element_type)
            return rows, cols, vt
    return None


def _vt_name(element_type: Any) -> str | None:
    from daphnec.dialects.types import vt_name

    try:
        return vt_name(element_type)
    except Exception:  # noqa: BLE001 - an unknown value type
        return None
