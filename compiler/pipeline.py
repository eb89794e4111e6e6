"""The pass manager: DAPHNE's pipeline order, IR verification after every pass, and `--explain` slots.

Each explain slot prints DAPHNE's header to stderr followed by the module (without locations) at its place in the
pipeline, even when the passes before it are disabled, exactly as DAPHNE's DaphneIrExecutor does.

The last two stages (`KERNEL_STAGES`) turn vectorized pipelines into native kernels: `lower-pipeline-to-loops`
(slot `kernels`) and `convert-to-llvm` (slot `llvm`). `compiler.backend.native` plans every kernel once and runs
them with its plans, on the module itself when one of their slots is printed, else per kernel (see there).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import TextIO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException, VerifyException

from daphnec.compiler.passes import ALL_PASSES, PassGate
from daphnec.compiler.printing import module_text, print_module
from daphnec.compiler.verify import verify_module
from daphnec.dialects.errors import CompileError, DaphneError, in_dsl_terms
from daphnec.dialects.locations import loc_of

__all__ = [
    "EXPLAIN_HEADERS",
    "HOST_STAGES",
    "KERNEL_SLOTS",
    "KERNEL_STAGES",
    "STAGES",
    "PassManager",
    "module_text",
    "native_enabled",
    "pipeline_options",
    "print_module",
]

EXPLAIN_HEADERS: dict[str, str] = {
    "parsing": "IR after parsing:",
    "parsing_simplified": "IR after parsing and some simplifications:",
    "sql": "IR after SQL parsing:",
    "property_inference": "IR after inference:",
    "columnar": "IR after lowering to columnar ops:",
    "select_matrix_repr": "IR after selecting matrix representations:",
    "transfer_data_props": "IR after transferring data properties:",
    "phy_op_selection": "IR after selecting physical operators:",
    "type_adaptation": "IR after type adaptation:",
    "vectorized": "IR after vectorization:",
    "obj_ref_mgnt": "IR after managing object references:",
    "codegen_before": "IR before codegen pipeline",
    "codegen": "IR after codegen pipeline",
    "kernels": "IR after kernel lowering:",
    "llvm": "IR after llvm lowering:",
}
"""DAPHNE's explain values in pipeline order with the header each prints (facts §1)."""

# The pipeline: stages of passes, each followed by the explain slot that prints after it. A pass written as
# ("name", "option") runs only when that option is on (`PassManager.options`, derived from the user config by
# `pipeline_options`): every optional pass has its own option, except the clean-ups that follow a rewrite
# (`canonicalize`, `cse`, `dce`), which share its option, and the clean-up after the late rewrites, whose option
# the module decides when the config does not (`MODULE_CONDITIONS`).
Stage = tuple[tuple[str | tuple[str, str], ...], str | None]
STAGES: tuple[Stage, ...] = (
    ((), "parsing"),
    (("canonicalize", "cse"), "parsing_simplified"),
    (("sql",), "sql"),
    (("specialize", "canonicalize", ("inline", "inline"), "specialize", "dce", "parfor"), "property_inference"),
    ((("columnar", "columnar"), ("infer", "columnar"), ("canonicalize", "columnar"), ("cse", "columnar")), "columnar"),
    (
        (("dce", "columnar"), ("select-matrix-repr", "select_matrix_repr")),
        "select_matrix_repr",
    ),
    ((), "transfer_data_props"),
    (
        (
            "sufficient-factors",
            "wait-free-backprop",
            "pull-order",
            ("reorder-matmul-chains", "reassociate"),
            "simplify-algebra",
            ("fuse-x-once", "reassociate"),
            ("fuse-split-stats", "reassociate"),
            "dce",
            "select-kernels",
            ("fold-transpose", "phy_op_selection"),
        ),
        "phy_op_selection",
    ),
    ((), "type_adaptation"),
    ((("fuse-filter-agg", "fuse_filter_agg"), ("fuse-sums", "fuse_sums"), ("fuse-maps", "fuse_maps")), None),
    (
        (
            ("vectorize", "vec"),
            ("canonicalize", "late_cleanup"),
            ("dce", "late_cleanup"),
            ("distribute-parfor", "distributed"),
            ("distribute", "distributed"),
        ),
        "vectorized",
    ),
    ((("in-place-insert", "in_place_early"),), "obj_ref_mgnt"),
    ((), "codegen_before"),
    ((("codegen", "codegen"), ("in-place-insert", "in_place_late")), "codegen"),
    ((("lower-pipeline-to-loops", "native"), ("lower-matmul-to-loops", "native_matmul")), "kernels"),
    ((("convert-to-llvm", "native"),), "llvm"),
)
HOST_STAGES = STAGES[:-2]
KERNEL_STAGES = STAGES[-2:]
"""The stages that turn vectorized pipelines into native kernels (see the module docstring)."""
KERNEL_SLOTS = frozenset(slot for _, slot in KERNEL_STAGES if slot is not None)


def _has_folds(module: ModuleOp) -> bool:
    from daphnec.compiler.passes.canonicalize import has_folds  # the selection table: loaded to compile only

    return has_folds(module)


MODULE_CONDITIONS: dict[str, Callable[[ModuleOp], bool]] = {"late_cleanup": _has_folds}
"""Options that, when the config does not turn them on, are decided per run by the module the stage sees (once per
stage). `late_cleanup`: `canonicalize` and `dce` after the late rewrites (`simplify-algebra`, `fuse-x-once`,
`select-kernels`, `vectorize`) fold what those made: `colSums(X) * 1.0`, products of constants, casts of a known
`nrow`. `--vec` always runs them; the default path only when something folds (`has_folds`), since on lmDS the two
passes cost ~10 ms of a ~0.5 s compile when nothing does, and the check ~1 ms."""


def _vec_min_cells(config: object) -> int:
    return int(getattr(config, "vec_min_cells", 0) or 0)


def pipeline_options(config: object) -> tuple[frozenset[str], dict[str, dict[str, object]]]:
    """The options a user config turns on (which optional passes run, see `STAGES`) and the arguments it gives
    passes, both derived here, each setting read once:

    - vectorized execution (`--vec`, forced by `--distributed` as in DAPHNE): `vectorize` fuses row-wise ops into
      pipelines the task scheduler runs; `fuse-filter-agg` builds parallel partial aggregates (`ordered` off);
    - the default path: `fuse-sums`, `fuse-maps` and `fuse-filter-agg` build ordered native loops, bit-identical
      to the kernels (not with `--codegen`, whose `codegen` pass fuses instead);
    - `--codegen`: `codegen`, and `lower-matmul-to-loops` (`native_matmul`) with the `--matmul-*` settings;
    - native kernels for every pipeline (`native`: `lower-pipeline-to-loops`, `convert-to-llvm`) unless
      `DAPHNEC_NO_NATIVE=1`.
    """
    vectorized = bool(getattr(config, "use_vectorized_exec", False) or getattr(config, "use_distributed", False))
    codegen = bool(getattr(config, "use_mlir_codegen", False))
    native = native_enabled()
    opts = set()
    if vectorized:
        opts |= {"vec", "late_cleanup"}
    if native and (vectorized or not codegen):
        opts |= {"fuse_filter_agg", "native"}
    if native and not (vectorized or codegen):
        opts |= {"fuse_sums", "fuse_maps"}
    if codegen:
        opts.add("codegen")  # compiler/passes/codegen.py
        if native:
            opts |= {"native", "native_matmul"}  # compiler/lowering/lower_matmul_to_loops.py
    if getattr(config, "use_distributed", False):
        opts.add("distributed")  # every vectorized pipeline becomes a daphne.distributedPipeline
    reassociate = bool(getattr(config, "use_reassociating_rewrites", True))
    if reassociate:
        opts.add("reassociate")  # rewrites that re-associate float sums (`--no-reassociate` turns them off)
    if getattr(config, "use_phy_op_selection", True):
        opts.add("phy_op_selection")  # `--no-phy-op-selection` keeps matMul's operands as written
    if getattr(config, "use_in_place_updates", True):  # after every pass that moves ops (codegen's fusion too)
        opts.add("in_place_late" if codegen else "in_place_early")
    if getattr(config, "select_matrix_repr", False):
        opts.add("select_matrix_repr")
    else:  # with representations chosen, functions take and return dense matrices: their calls stay calls
        opts.add("inline")  # small straight-line functions inlined at their call sites (compiler/passes/inline.py)
    if getattr(config, "use_columnar", False):
        opts.add("columnar")  # frame and matrix ops rewritten to columnar ops (RewriteToColumnarOpsPass)
    pass_args: dict[str, dict[str, object]] = {
        "select-matrix-repr": {"threshold": float(getattr(config, "sparsity_threshold", 0.25))},
        "specialize": {"ipa": bool(getattr(config, "use_ipa_const_propa", True))},
        "select-kernels": {"catalog": tuple(getattr(config, "kernel_catalog", ()))},
        "fuse-filter-agg": {"ordered": not vectorized},
        "columnar": {"optimistic_splitting": bool(getattr(config, "use_optimistic_splitting", False))},
        # the cost model: every pipeline of a distributed run is shipped to the workers, whatever its size
        "vectorize": {"min_cells": 0 if getattr(config, "use_distributed", False) else _vec_min_cells(config)},
        "simplify-algebra": {"reassociate": reassociate},
        "lower-matmul-to-loops": _matmul_pass_args(config) if codegen else {},
    }
    return frozenset(opts), pass_args


def native_enabled() -> bool:
    """`DAPHNEC_NO_NATIVE=1` keeps every pipeline's Python body (for comparisons)."""
    return os.environ.get("DAPHNEC_NO_NATIVE") != "1"


def _matmul_pass_args(config: object) -> dict[str, object]:
    """DAPHNE's `matmul_*` settings as the arguments of `lower-matmul-to-loops` (read only with `--codegen`, the
    one pipeline that runs the pass: the lowering's imports stay off other runs' start-up)."""
    from daphnec.compiler.lowering.lower_matmul_to_loops import settings_from_config

    return asdict(settings_from_config(config))


@dataclass
class PassManager:
    """Runs named passes in order, verifying the IR after each and printing requested explain slots."""

    ctx: Context
    explain: frozenset[str] = frozenset()
    verify_each: bool = field(default_factory=lambda: os.environ.get("DAPHNEC_VERIFY", "each") != "last")
    """Verify the IR after every pass (the default and the project's standard). `DAPHNEC_VERIFY=last` verifies
    once after the last pass of each `run_stages` (and after a pass run alone) instead: a measured option for
    cold compiles (issue 23 part 5), not a default; a failure then names the last pass, not the one that broke."""
    out: TextIO = field(default_factory=lambda: sys.stderr)
    trace: Callable[[str], None] | None = None
    options: frozenset[str] = frozenset()
    """Pipeline options in force (see `pipeline_options`)."""
    pass_args: dict[str, dict[str, object]] = field(default_factory=dict)
    """Keyword arguments per pass name (see `pipeline_options`)."""
    verified: dict[Operation, tuple] = field(default_factory=dict, repr=False, compare=False)
    """The ops that verified after an earlier pass, with their signatures (`compiler.verify`'s memo)."""

    @classmethod
    def for_config(cls, ctx: Context, config: object, explain: frozenset[str] = frozenset()) -> PassManager:
        """The pass manager of a run with this user config (`pipeline_options`)."""
        options, pass_args = pipeline_options(config)
        return cls(ctx, explain=explain, options=options, pass_args=pass_args)

    def run_pass(self, module: ModuleOp, p: ModulePass, last: bool = True) -> None:
        """Apply `p`, then verify the module (after every pass; with `verify_each` off, only if `last`)."""
        if self.trace:
            self.trace(p.name)
        self._checked(module, p.name, lambda: p.apply(self.ctx, module), self.verify_each or last)

    def _checked(self, module: ModuleOp, name: str, step: Callable[[], object], verify: bool) -> None:
        """Run `step`, then verify if asked; a verifier's failure becomes a CompileError in DaphneDSL terms."""
        try:
            step()
            if verify:
                verify_module(module, self.verified)  # module.verify(), linear, memoized (compiler/verify.py)
        except DaphneError:
            raise
        except (VerifyException, DiagnosticException) as e:
            op = failing_op(module)
            msg = in_dsl_terms(_first_line(e))
            raise CompileError(
                msg if op is not None else f"IR verification failed after pass '{name}': {msg}", loc_of(op)
            ) from e

    def run_stages(
        self, module: ModuleOp, stages: Iterable[Stage] = STAGES, passes: Mapping[str, ModulePass] | None = None
    ) -> None:
        """Run the stages' passes in order (each made from its `pass_args`, unless `passes` gives the instance to
        run: the native backend's lowering passes carry the plans it made) and print their explain slots."""
        last = ""
        gate = PassGate()
        for names, slot in stages:
            decided: dict[str, bool] = {}
            for entry in names:
                name, option = entry if isinstance(entry, tuple) else (entry, None)
                enabled = option is None or option in self.options or self._decide(option, module, decided)
                if enabled and not gate.skips(name, module):
                    given = passes.get(name) if passes is not None else None
                    self.run_pass(module, given or ALL_PASSES[name](**self.pass_args.get(name, {})), last=False)
                    last = name
            if slot is not None and self._explains(slot):
                self.out.write(EXPLAIN_HEADERS[slot] + "\n")
                print_module(module, self.out)
                self.out.flush()
        if not self.verify_each and last:
            self._checked(module, last, lambda: None, True)  # DAPHNEC_VERIFY=last: once, after the last pass

    @staticmethod
    def _decide(option: str, module: ModuleOp, decided: dict[str, bool]) -> bool:
        """A `MODULE_CONDITIONS` option's value for this stage (asked once, before its first pass runs)."""
        condition = MODULE_CONDITIONS.get(option)
        if condition is None:
            return False
        if option not in decided:
            decided[option] = condition(module)
        return decided[option]

    def _explains(self, slot: str) -> bool:
        """Whether the slot prints: its explain value was given (`codegen` prints its two slots only with
        `--codegen`, as in DAPHNE)."""
        if slot.startswith("codegen"):
            return "codegen" in self.explain and "codegen" in self.options
        return slot in self.explain


def _first_line(e: Exception) -> str:
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__


def failing_op(module: ModuleOp) -> Operation | None:
    """The innermost op whose own verifier fails (xDSL's exception does not say which op it was)."""
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
        except Exception:  # noqa: BLE001 - any failure identifies the op
            return op
    return None
