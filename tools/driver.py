"""The compile-and-run driver behind `daphnec`: parse -> IR -> pass pipeline -> host code -> run.

It lives in `tools/` because it is the one place that joins the frontend, the compiler and the runtime.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp

from dialects import make_context
from runtime.config import DaphneConfig


@dataclass
class Program:
    """A compiled script: its final IR and the generated host program."""

    module: ModuleOp
    host: object

    def run(self) -> None:
        self.host.run()  # type: ignore[attr-defined]


def import_paths(config: DaphneConfig) -> list[str]:
    """Directories searched for `import` after the importing script's own folder (`daphnedsl_import_paths`)."""
    dirs: list[str] = []
    for key, paths in config.daphnedsl_import_paths.items():
        dirs.extend(paths if key == "default_dirs" else [])
    return dirs


def configure_runtime(config: DaphneConfig) -> None:
    """Hand the user config's engine knobs to the runtime (the vectorized executor and the task scheduler)."""
    from runtime.scheduling.workers import SchedulerConfig
    from runtime.vectorized.pipeline import SETTINGS

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
    if config.use_distributed:  # the workers' local schedulers get these very flags (runtime/distributed)
        from runtime.distributed.launch import ship_config

        ship_config(config.to_dict())


def parse_to_ir(path: str, script_args: dict[str, str], config: DaphneConfig) -> ModuleOp:
    """The IR right after parsing (DAPHNE's `parsing` stage)."""
    from frontend.ir_builder import build_module
    from frontend.parser import parse_file

    return build_module(parse_file(path), path, script_args, import_paths(config))


def compile_script(path: str, script_args: dict[str, str], config: DaphneConfig, timings: dict[str, float]) -> Program:
    """Parse, optimise and generate host code; raises `DaphneError` (code 1 parse, 2 compile)."""
    from compiler.host_codegen import generate_host
    from compiler.pipeline import PassManager, options_from_config, pass_args_from_config

    t0 = time.perf_counter()
    module = parse_to_ir(path, script_args, config)
    t1 = time.perf_counter()
    timings["parsing_seconds"] = t1 - t0
    pm = PassManager(
        make_context(),
        explain=frozenset(config.explain),
        options=options_from_config(config),
        pass_args=pass_args_from_config(config),
    )
    from compiler import kernel_cache

    kernel_cache.configure(enabled=not config.no_kernel_cache)  # native pipeline kernels (--no-kernel-cache)
    pm.run_stages(module)
    host = generate_host(module)
    configure_runtime(config)
    timings["compilation_seconds"] = time.perf_counter() - t1
    return Program(module, host)


def configure_worker(settings: dict[str, object]) -> None:
    """An MPI worker's engine knobs: the coordinator's user config (its CONFIG message), not the worker's own
    command line, so `--num-threads`, `--partitioning`, ... given to daphnec apply on every node."""
    from dataclasses import fields

    from compiler import kernel_cache

    known = {f.name for f in fields(DaphneConfig)}
    config = DaphneConfig(**{k: v for k, v in settings.items() if k in known})  # type: ignore[arg-type]
    config.use_distributed = False  # a worker runs its share locally
    configure_runtime(config)
    kernel_cache.configure(enabled=not config.no_kernel_cache)


def run_distributed(run_script: Callable[[], int], warn: Callable[[str], None]) -> int:
    """`daphnec --distributed`: rank 0 runs the script as the coordinator (`run_script`); ranks >= 1 serve as
    workers and never parse it. With a single rank there is nobody to distribute to: warn and run the distributed
    pipelines in this process from their shipped IR (same output)."""
    from runtime.distributed import launch

    if launch.under_process_manager():
        code = launch.supervise()  # a parent that outlives a killed rank (see launch.supervise)
        if code is not None:
            return code
    from compiler.passes.distribute import compile_shipped_body

    role = launch.start(compile_shipped_body, configure_worker, warn)
    if role == launch.WORKER_ROLE:
        return launch.serve()
    code = 1
    try:
        code = run_script()
    finally:
        code = launch.finish(code)
    return code
