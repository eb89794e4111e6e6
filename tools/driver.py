"""The compile-and-run driver behind `daphnec`: parse -> IR -> pass pipeline -> host code -> run.

It lives in `tools/` because it is the one place that joins the frontend, the compiler and the runtime.
"""

from __future__ import annotations

import _thread
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from daphnec.compiler.host.program import HostProgram
from daphnec.runtime.config import DaphneConfig

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

    from daphnec.compiler.host.program_cache import Inputs
    from daphnec.frontend.sources import SourceFiles

T = TypeVar("T")

# Nothing heavy is imported at module level: a run whose program comes from the whole-program cache
# (compiler/host/program_cache.py) never imports xDSL, the frontend or the compiler.


@dataclass
class Program:
    """A compiled script: its final IR (None when the program came from the program cache) and the generated host
    program."""

    module: ModuleOp | None
    host: HostProgram
    after_run: Callable[[], None] | None = None
    """Runs once the program has run (or failed): storing it in the program cache, whose native kernels are
    compiled on a background thread while the script runs and are only complete afterwards."""

    runner: Callable[[], None] | None = None
    """The host program compiled to Python (on the first run); later runs reuse it (the Python API's cache)."""

    def run(self) -> None:
        t0 = time.perf_counter()
        try:
            if self.runner is None:
                self.runner = self.host.runner()
            self.runner()
            _log("default", "info", f"executed in {time.perf_counter() - t0:.3f} s")
        finally:
            finish_background_kernels()
            if self.after_run is not None:
                self.after_run()


def finish_background_kernels() -> None:
    """Wait for native kernels still compiling in the background (only if the JIT was used at all), so that the
    kernel cache holds every kernel of the script when the process ends."""
    jit = sys.modules.get("daphnec.compiler.backend.jit")
    if jit is not None:
        jit.finish_background()


_CONFIGURED: list[DaphneConfig | None] = [None]
"""The config whose knobs the runtime holds (the last `configure_runtime`)."""


def configure_runtime(config: DaphneConfig, unless_current: bool = False) -> None:
    """Hand the user config's engine knobs to the runtime (the vectorized executor and the task scheduler).
    `unless_current`: nothing to do if `config` (the very object, never changed in place by the Python API) was
    the last one handed over (the API's runs of a cached program: ~20 us of each `compute()`)."""
    if unless_current and _CONFIGURED[0] is config:
        return
    _CONFIGURED[0] = config
    from daphnec.runtime.scheduling.config import SchedulerConfig  # the knobs only: not the scheduler or the engine
    from daphnec.runtime.vectorized.settings import SETTINGS

    SETTINGS.phy_batch_size = max(1, config.phyBatchSize)
    SETTINGS.scheduler = SchedulerConfig(
        num_threads=config.numberOfThreads,
        scheme=config.taskPartitioningScheme,
        queue_layout=config.queueSetupScheme,
        victim_selection=config.victimSelection,
        grain=max(1, config.minimumTaskSize),
        pin_workers=config.pinWorkers,
        hyperthreading=config.hyperthreadingEnabled,
        pre_partition=config.prePartitionRows,
        debug_mt=config.debugMultiThreading,
    )
    if config.statistics or config.timing:
        from daphnec.runtime import statistics

        statistics.ENABLED = statistics.ENABLED or config.statistics
        statistics.PARAMSERV_TABLES = True  # paramserv prints its per-epoch table of every call
    configure_logging(config)
    if config.use_distributed:  # the workers' local schedulers get these very flags (runtime/distributed)
        from daphnec.runtime.distributed.launch import ship_config

        ship_config(config.to_dict())


def configure_logging(config: DaphneConfig) -> None:
    """DAPHNE's loggers of the user config's `logging` key (runtime/logs.py; nothing is imported without it)."""
    if config.logging or "daphnec.runtime.logs" in sys.modules:
        from daphnec.runtime import logs

        logs.configure(config.logging, config.log_level_limit)


def configure_object_cache(config: DaphneConfig) -> None:
    """`--no-kernel-cache`: object code (native kernels, the runtime's own loops) is neither read from nor written
    to the cache folder (`runtime.native_code`); set before compiling, as kernels are built while compiling."""
    from daphnec.runtime import cache_files

    cache_files.OBJECT_CODE.enabled = not config.no_kernel_cache


def parse_to_ir(
    path: str,
    script_args: dict[str, str],
    config: DaphneConfig,
    sources: SourceFiles | None = None,
    text: str | None = None,
) -> ModuleOp:
    """The IR right after parsing (DAPHNE's `parsing` stage); the frontend reports the files it read to
    `sources`. With `text`, the script is that text (held in memory) under the name `path`."""
    from daphnec.frontend.ir_builder import build_module
    from daphnec.frontend.parser import parse_file, parse_source

    script = parse_file(path, sources) if text is None else parse_source(text, path)
    return build_module(script, path, script_args, config.daphnedsl_import_paths, sources)


def compile_script(
    path: str,
    script_args: dict[str, str],
    config: DaphneConfig,
    timings: dict[str, float],
    program_cache: bool = False,
) -> Program:
    """Parse, optimise and generate host code; raises `DaphneError` (code 1 parse, 2 compile).

    With `program_cache` (the `daphnec` CLI) a run whose script, inputs and flags are unchanged loads the program
    from the whole-program cache (`compiler.host.program_cache`) instead; in-process callers compile every time."""
    configure_object_cache(config)
    key = None
    if program_cache:
        from daphnec.compiler.host import program_cache as pcache

        reason = pcache.skip_reason(config)
        if reason is None:
            t0 = time.perf_counter()
            try:
                key = pcache.lookup_key(path, script_args, config)
                host = pcache.load(key)
            except Exception as e:  # noqa: BLE001 - the cache must never fail a run: compile without it
                pcache.log("error", f"{type(e).__name__}:{e}"[:300])
                key = host = None
            if host is not None:
                configure_runtime(config)
                timings["parsing_seconds"] = timings["compilation_seconds"] = 0.0
                timings["program_cache_hit"] = time.perf_counter() - t0  # loading, not compiling (`--timing`)
                _log("default", "info", f"{path}: program cache hit, loaded in {timings['program_cache_hit']:.3f} s")
                return Program(None, host)
        else:
            pcache.log("skip", reason)
    if key is None:
        return _compile(path, script_args, config, timings)
    program, inputs = compile_with_inputs(path, script_args, config, timings)

    def store() -> None:
        try:
            pcache.store(key, inputs, program.host)
        except Exception as e:  # noqa: BLE001 - the cache must never fail a run
            pcache.log("error", f"{type(e).__name__}:{e}"[:300])

    program.after_run = store
    return program


def compile_with_inputs(
    path: str, script_args: dict[str, str], config: DaphneConfig, timings: dict[str, float]
) -> tuple[Program, Inputs]:
    """`_compile`, and what the program depends on besides its cache key: the files the frontend read and the
    `.meta` of every read of a constant file name, which compiler/analysis/infer_io.py reads (if it exists) to type the
    read. Reads are never dropped (`daphne.read` is not Pure), so each one is still in the compiled module."""
    from daphnec.compiler.host.program_cache import Inputs, file_digest
    from daphnec.compiler.ir_walk import preorder
    from daphnec.dialects.ops import constant_value
    from daphnec.dialects.ops_io import ReadOp
    from daphnec.frontend.sources import SourceFiles
    from daphnec.runtime.io.meta import meta_path

    sources = SourceFiles()
    program = _compile(path, script_args, config, timings, sources)
    files: dict[str, str | None] = dict(sources.read)
    assert program.module is not None
    for op in preorder(program.module):  # xDSL's walk is quadratic in the nesting depth
        name = constant_value(op.file_name) if isinstance(op, ReadOp) else None
        if isinstance(name, str):
            files.setdefault(meta_path(name), file_digest(meta_path(name)))
            if name.endswith(".parquet") and files[meta_path(name)] is None:  # typed by its own schema
                files.setdefault(name, file_digest(name))
    return program, Inputs(files, dict(sources.probed), dict(sources.listed))


def compile_source(text: str, filename: str, config: DaphneConfig, timings: dict[str, float]) -> Program:
    """Compile DaphneDSL source text held in memory (the Python API's generated programs, `tools/daphnelib`) like a
    script file named `filename`: the same parse, pass pipeline and host code; never the whole-program cache."""
    configure_object_cache(config)
    return _compile(filename, {}, config, timings, text=text)


def run_bound(program: Program, inputs: list[object]) -> list[object]:
    """Run `program` with `inputs` bound to its `receiveFromNumpy` slots; what it passed to `saveDaphneLibResult`."""
    from daphnec.runtime.kernels.daphnelib import bound

    with bound(inputs) as results:
        program.run()
    return results


DEEP_STACK_BYTES = 1 << 30
"""The compile thread's stack (virtual memory: only the pages a deep program touches are used)."""
DEEP_RECURSION_LIMIT = 400_000
_STACK_SIZE_LOCK = _thread.allocate_lock()  # `threading` is imported only to compile (start-up)


def with_deep_stack(fn: Callable[[], T]) -> T:
    """`fn()` on a thread with a 1 GiB stack and a high recursion limit, so that compiling a program nested as deep
    as the frontend allows (`frontend.nesting.MAX_NESTING_DEPTH`) never hits Python's limits in the recursive
    visitors of xDSL and of the passes (the frontend reports deeper programs with a located error first)."""

    result: list[T] = []
    error: list[BaseException] = []

    def run() -> None:
        try:
            result.append(fn())
        except BaseException as e:  # noqa: BLE001 - re-raised on the calling thread
            error.append(e)

    import threading

    from daphnec.runtime import recursion_limit

    with recursion_limit.at_least(DEEP_RECURSION_LIMIT):
        with _STACK_SIZE_LOCK:  # the stack size is process-wide too: set, start, restore as one step
            old_size = threading.stack_size(DEEP_STACK_BYTES)
            try:  # a daemon: Ctrl-C while compiling ends the process without waiting for the compilation
                thread = threading.Thread(target=run, name="daphnec-compile", daemon=True)
                thread.start()
            finally:
                threading.stack_size(old_size)
        while thread.is_alive():  # short waits: a signal (Ctrl-C) is handled on this thread between them
            thread.join(0.05)
    if error:
        raise error[0]
    return result[0]


def _compile(
    path: str,
    script_args: dict[str, str],
    config: DaphneConfig,
    timings: dict[str, float],
    sources: SourceFiles | None = None,
    text: str | None = None,
) -> Program:
    from daphnec.compiler.backend.native import compile_kernels
    from daphnec.compiler.host.generator import generate_host
    from daphnec.compiler.pipeline import HOST_STAGES, PassManager
    from daphnec.dialects import make_context

    def build() -> Program:
        configure_logging(config)  # first: DAPHNE's loggers log the compilation too
        t0 = time.perf_counter()
        module = parse_to_ir(path, script_args, config, sources, text)
        t1 = time.perf_counter()
        timings["parsing_seconds"] = t1 - t0
        _log("default", "info", f"{path}: parsed in {t1 - t0:.3f} s")
        pm = PassManager.for_config(make_context(), config, explain=frozenset(config.explain))
        if _logging():
            pm.trace = _pass_logger(pm.trace)
        pm.run_stages(module, HOST_STAGES)
        host = generate_host(module, compile_kernels(module, pm))  # the kernel stages, then the JIT
        configure_runtime(config)
        timings["compilation_seconds"] = time.perf_counter() - t1
        _log("default", "info", f"{path}: compiled in {timings['compilation_seconds']:.3f} s")
        return Program(module, host)

    return with_deep_stack(build)


def _logging() -> bool:
    logs = sys.modules.get("daphnec.runtime.logs")
    return logs is not None and logs.enabled()  # type: ignore[no-any-return]


def _log(name: str, level: str, message: str) -> None:
    """A message for DAPHNE's logger `name` (runtime/logs.py), if the user config set up logging."""
    if _logging():
        from daphnec.runtime import logs

        logs.log(name, level, message)


def _pass_logger(trace: Callable[[str], None] | None) -> Callable[[str], None]:
    """The pass manager's trace hook, logging each pass and the time since the previous one on `compiler`."""
    last = [time.perf_counter(), ""]

    def traced(name: str) -> None:
        now = time.perf_counter()
        if last[1]:
            _log("compiler", "debug", f"pass {last[1]}: {(now - last[0]) * 1000:.1f} ms")  # type: ignore[operator]
        last[0], last[1] = now, name
        if trace is not None:
            trace(name)

    return traced


def configure_worker(settings: dict[str, object]) -> None:
    """An MPI worker's engine knobs: the coordinator's user config (its CONFIG message), not the worker's own
    command line, so `--num-threads`, `--partitioning`, ... given to daphnec apply on every node."""
    from dataclasses import fields

    known = {f.name for f in fields(DaphneConfig)}
    config = DaphneConfig(**{k: v for k, v in settings.items() if k in known})  # type: ignore[arg-type]
    config.use_distributed = False  # a worker runs its share locally
    configure_runtime(config)
    configure_object_cache(config)


def run_distributed(run_script: Callable[[], int], warn: Callable[[str], None]) -> int:
    """`daphnec --distributed`: rank 0 runs the script as the coordinator (`run_script`); ranks >= 1 serve as
    workers and never parse it. With a single rank there is nobody to distribute to: warn and run the distributed
    pipelines in this process from their shipped IR (same output)."""
    from daphnec.runtime.distributed import launch

    if launch.under_process_manager():
        code = launch.supervise()  # a parent that outlives a killed rank (see launch.supervise)
        if code is not None:
            return code
    from daphnec.compiler.host.shipped import compile_shipped_body

    role = launch.start(compile_shipped_body, configure_worker, warn)
    if role == launch.WORKER_ROLE:
        return launch.serve()
    code = 1
    try:
        code = run_script()
    finally:
        code = launch.finish(code)
    return code
