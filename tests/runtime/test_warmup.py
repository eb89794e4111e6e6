"""The scheduler's background warm-up (runtime/scheduling/warmup.py): a program that calls kernels running on the
workers starts the pool threads when it starts, one that does not starts none, and a product that races the
warm-up gives the same bits as one run without it. Each case runs in a fresh process (the warm-up is once per
process)."""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
from pathlib import Path

from daphnec.runtime.kernels.matmul import matmul
from daphnec.runtime.kernels.matrix_ops import syrk
from daphnec.runtime.kernels.reorg import order
from daphnec.runtime.scheduling.topology import worker_cpus
from daphnec.runtime.scheduling.warmup import WORKER_KERNEL_MODULES, uses_workers

RUNTIME = Path(__file__).resolve().parents[2] / "runtime"

DRIVER = """
import sys, threading
from daphnec.runtime.config import DaphneConfig
from daphnec.runtime.scheduling import warmup
from daphnec.tools.driver import compile_source, configure_runtime
if sys.argv[2] == "off":
    warmup._started = True  # as if done: the program's kernels start the workers themselves
cfg = DaphneConfig()
configure_runtime(cfg)
program = compile_source(sys.argv[1], "warm.daph", cfg, {})
program.run()
for t in threading.enumerate():
    if t.name == "daphne-warmup":
        t.join()
print(sorted(t.name for t in threading.enumerate() if t.name.startswith("daphne-worker")))
"""

PRODUCT = """X = rand(30000, 40, 0.0, 1.0, 1.0, 7);
C = t(X) @ X;
print(sum(C));
print(as.scalar(C[3, 5]));
"""


def _run(source: str, mode: str = "on") -> list[str]:
    res = subprocess.run([sys.executable, "-c", DRIVER, source, mode], capture_output=True, text=True, check=True)
    return res.stdout.splitlines()


def test_program_with_products_starts_the_workers_and_keeps_the_bits() -> None:
    warm = _run(PRODUCT, "on")
    cold = _run(PRODUCT, "off")
    assert warm[:2] == cold[:2]  # the same bits, printed in full
    assert warm[2] == ("['daphne-worker-0']" if len(worker_cpus(-1, False)) > 1 else "[]")


def test_the_warm_up_starts_the_workers_a_small_product_never_needs() -> None:
    small = "A = rand(4, 3, 0.0, 1.0, 1.0, 1);\nprint(sum(t(A) @ A) > 0.0);\n"
    helpers = "['daphne-worker-0']" if len(worker_cpus(-1, False)) > 1 else "[]"
    assert _run(small, "on") == ["1", helpers]
    assert _run(small, "off") == ["1", "[]"]


def test_program_without_worker_kernels_starts_no_thread() -> None:
    assert _run('x = 3;\nprint(x * 2);\nprint("done");\n') == ["6", "done", "[]"]


def test_uses_workers_sees_through_partials() -> None:
    assert uses_workers([order, functools.partial(matmul, vt="f64")])
    assert uses_workers([syrk])
    assert not uses_workers([order, 3, "text", functools.partial(print, end="")])


def test_every_module_that_schedules_tasks_is_listed() -> None:
    """A kernel module that calls the scheduler (directly or through blas_threads' blocks) must be in
    `WORKER_KERNEL_MODULES`, or its programs would pay the scheduler's start in their first kernel."""
    calls = re.compile(r"\b(schedule_tasks|run_blocks|split_product|split_reduction)\(")
    missing = []
    for path in RUNTIME.rglob("*.py"):
        rel = path.relative_to(RUNTIME)
        if rel.parts[0] == "scheduling" or rel == Path("kernels/blas_threads.py"):
            continue
        text = "\n".join(line for line in path.read_text().splitlines() if not line.lstrip().startswith(("def ", "#")))
        module = "daphnec.runtime." + ".".join(rel.with_suffix("").parts)
        if calls.search(text) and module not in WORKER_KERNEL_MODULES:
            missing.append(module)
    assert missing == []


def test_a_program_with_the_one_pass_kernel_builds_its_native_loop_in_the_background() -> None:
    """`t(X) @ (X @ v)` of fewer than `BLAS_MIN_COLS` dense columns, or of CSR X, runs gram_vector's native loop:
    the warm-up builds it (llvmlite's engine included) before the program's first call needs it."""
    code = """
from daphnec.runtime.kernels import gram_vector
from daphnec.runtime.scheduling import warmup
assert not gram_vector.LOOPS.built
t = warmup.warm_up_for([gram_vector.gram_vector_plain])
t.join()
print(gram_vector.LOOPS.built, warmup.warm_up_for([gram_vector.gram_vector_plain]))
"""
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert res.stdout.split() == ["True", "None"]


def test_a_process_ending_during_the_warm_up_waits_for_its_native_build(tmp_path: Path) -> None:
    """A script may end while the warm-up thread still compiles a native loop (a cold cache folder): the process
    waits for it at exit instead of tearing LLVM down under it, and the object code is in the cache folder."""
    code = """
from daphnec.runtime.kernels import gram_vector
from daphnec.runtime.scheduling import warmup
warmup.warm_up_for([gram_vector.gram_vector_plain])
"""
    env = {**os.environ, "DAPHNEC_CACHE_DIR": str(tmp_path / "cache")}
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert (res.returncode, res.stderr) == (0, "")
    assert len(list((tmp_path / "cache").glob("*.o"))) == 1


def test_a_program_whose_x_is_known_wide_builds_no_native_loop() -> None:
    """`t(X) @ (X @ v)` of a dense X known to have at least `BLAS_MIN_COLS` columns runs the BLAS form, so its
    program's warm-up builds no native loop (the build took the cores from the first products); a narrower X's
    program builds gram_vector's loop. The results are the same bits as without the warm-up."""
    code = """
import sys, threading
from daphnec.runtime.config import DaphneConfig
from daphnec.runtime.kernels import gram_vector
from daphnec.tools.driver import compile_source, configure_runtime
cfg = DaphneConfig()
configure_runtime(cfg)
compile_source(sys.argv[1], "gram.daph", cfg, {}).run()
for t in threading.enumerate():
    if t.name.startswith("daphne-") and "warmup" in t.name:
        t.join()
print(gram_vector.LOOPS.built)
"""
    script = (
        "X = rand(3000, {cols}, 0.0, 1.0, 1.0, 3);\nv = rand({cols}, 1, 0.0, 1.0, 1.0, 4);\n"
        "print(t(X) @ (X @ v));\n"
    )
    built = {}
    for cols in (50, 100):
        res = subprocess.run([sys.executable, "-c", code, script.format(cols=cols)], capture_output=True, text=True,
                             check=True)  # fmt: skip
        lines = res.stdout.splitlines()
        assert lines[0] == f"DenseMatrix({cols}x1, double)" and len(lines) == cols + 2
        built[cols] = lines[-1]
    assert built == {50: "True", 100: "False"}
