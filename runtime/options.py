"""The one table of daphnec's settings: every command-line option and every key of the JSON user config.

Each `Option` row names the `DaphneConfig` field it sets (DAPHNE's `DaphneUserConfig` member, which is also the
key of DAPHNE's JSON config file where the file may set it), its kind and default, its command-line name (if any)
with help text, group and choices, and how a command-line value reaches the configuration. Everything else is
derived from this table: `DaphneConfig` and the JSON reader (runtime/config.py), the command-line parser and
`--help` (tools/daphnec.py).

How a command-line value reaches the configuration (`Option.apply`): an option given on the command line wins,
otherwise the config file's value, otherwise the default. (DAPHNE's `daphne_main` assigns most command-line values
unconditionally, so its defaults silently override the file's `use_vectorized_exec`, `taskPartitioningScheme`,
...; daphnec lets the file set them.)
- `IF_GIVEN`: an option given on the command line overwrites the file.
- `IF_SET`: only a given value that is on / non-zero / non-empty overwrites the file (`--num-threads=0` keeps the
  file's thread count, as in DAPHNE).
- `NEVER`: accepted and ignored (`--cuda`: DAPHNE sets it only when it finds a CUDA device).
The parser records which options were given (`ParsedArgs.given`).

This module imports only the standard library and the scheduler's enum tables (it is read by `daphnec --help`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from daphnec.runtime.scheduling.config import LAYOUTS, SCHEMES, STRATEGIES  # not the scheduler: --help stays cheap
from daphnec.runtime.vectorized.settings import MIN_PARALLEL_BYTES

# ---------------------------------------------------------------------------------------------------------------
# Choices (DAPHNE's spellings)
# ---------------------------------------------------------------------------------------------------------------

#: `--explain` values in pipeline order (src/compiler/execution/DaphneIrExecutor.cpp). The three
#: `mlir_codegen_*` values are accepted by DAPHNE but never read, so they print nothing.
EXPLAIN_VALUES: tuple[str, ...] = (
    "parsing",
    "parsing_simplified",
    "sql",
    "property_inference",
    "columnar",
    "select_matrix_repr",
    "transfer_data_props",
    "phy_op_selection",
    "type_adaptation",
    "vectorized",
    "obj_ref_mgnt",
    "codegen",
    "kernels",
    "llvm",
    "mlir_codegen_sparsity_exploiting_op_fusion",
    "mlir_codegen_daphneir_to_mlir",
    "mlir_codegen_mlir_specific",
)

#: Older DAPHNE spellings accepted as well and mapped to the canonical value.
EXPLAIN_ALIASES: dict[str, str] = {"mlir_codegen": "codegen"}

#: `--partitioning` values: DAPHNE's list (AUTO included) plus daphnec's ADAPTIVE extension.
PARTITIONING_SCHEMES: tuple[str, ...] = (*SCHEMES, "ADAPTIVE")
#: `taskPartitioningScheme` values of the JSON config: DAPHNE's JSON enum has no AUTO.
CONFIG_PARTITIONING_SCHEMES: tuple[str, ...] = tuple(s for s in PARTITIONING_SCHEMES if s != "AUTO")

QUEUE_LAYOUTS: tuple[str, ...] = LAYOUTS
VICTIM_SELECTIONS: tuple[str, ...] = STRATEGIES
DIST_BACKENDS: tuple[str, ...] = ("MPI", "sync-gRPC", "async-gRPC")

#: INT_MAX - 1024, DAPHNE's default for `--max-distr-chunk-size`.
DEFAULT_MAX_DISTR_CHUNK_SIZE = 2**31 - 1 - 1024

_EXPLAIN_HELP = {
    "parsing": "Show DaphneIR after parsing",
    "parsing_simplified": "Show DaphneIR after parsing and some simplifications",
    "sql": "Show DaphneIR after SQL parsing",
    "property_inference": "Show DaphneIR after property inference",
    "columnar": "Show DaphneIR after lowering to columnar operations",
    "select_matrix_repr": "Show DaphneIR after selecting physical matrix representations",
    "transfer_data_props": "Show DaphneIR after transferring data properties",
    "phy_op_selection": "Show DaphneIR after selecting physical operators",
    "type_adaptation": "Show DaphneIR after adapting types to available kernels",
    "vectorized": "Show DaphneIR after vectorization",
    "obj_ref_mgnt": "Show DaphneIR after managing object references",
    "codegen": "Show DaphneIR before and after the codegen pipeline (with --codegen)",
    "kernels": "Show DaphneIR after kernel lowering",
    "llvm": "Show DaphneIR after llvm lowering",
    "mlir_codegen_sparsity_exploiting_op_fusion": "Accepted for compatibility; prints nothing",
    "mlir_codegen_daphneir_to_mlir": "Accepted for compatibility; prints nothing",
    "mlir_codegen_mlir_specific": "Accepted for compatibility; prints nothing",
}
_PARTITIONING_HELP = {
    "STATIC": "Static (default)",
    "SS": "Self-scheduling",
    "GSS": "Guided self-scheduling",
    "TSS": "Trapezoid self-scheduling",
    "FAC2": "Factoring self-scheduling",
    "TFSS": "Trapezoid Factoring self-scheduling",
    "FISS": "Fixed-increase self-scheduling",
    "VISS": "Variable-increase self-scheduling",
    "PLS": "Performance loop-based self-scheduling",
    "MSTATIC": "Modified version of Static, i.e., n/(4*p) instead of n/p",
    "MFSC": "Modified version of fixed size chunk self-scheduling",
    "PSS": "Probabilistic self-scheduling",
    "AUTO": "Automatic partitioning",
    "ADAPTIVE": "daphnec extension: adaptive chunk sizes",
}
_QUEUE_HELP = {
    "CENTRALIZED": "One queue (default)",
    "PERGROUP": "One queue per CPU group",
    "PERCPU": "One queue per CPU core",
}
_VICTIM_HELP = {
    "SEQ": "Steal from next adjacent worker (default)",
    "SEQPRI": "Steal from next adjacent worker, prioritize same NUMA domain",
    "RANDOM": "Steal from random worker",
    "RANDOMPRI": "Steal from random worker, prioritize same NUMA domain",
}
_BACKEND_HELP = {
    "MPI": "Use message passing interface for internode data exchange (default)",
    "sync-gRPC": "Use synchronous gRPC (not supported by daphnec)",
    "async-gRPC": "Use asynchronous gRPC (not supported by daphnec)",
}

# ---------------------------------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------------------------------

IF_SET = "if-set"
IF_GIVEN = "if-given"
NEVER = "never"

#: Value kinds. On the command line: `flag` (`--x`, `--x=true|false|1|0`), `int` (a C++ int), `uint` (a size_t),
#: `str`, `enum` (one of `choices`), `explain` (comma-separated `EXPLAIN_VALUES`, repeatable), `uintlist`
#: (`n,n,...`, repeatable), `args` (`name=value,...`), `help`, `version`. In the JSON file: `flag` a boolean,
#: `int`/`uint` any number (truncated, as nlohmann's get<int>()), `float`, `str`, `enum` (one of `json_choices`),
#: `intlist`/`uintlist` an array of numbers, `paths` an object of string arrays, `logging` DAPHNE's logger list,
#: `explain` one boolean key `explain_<value>` per value. `dict`/`strlist` fields are set by daphnec itself.
KINDS = ("flag", "int", "uint", "float", "str", "enum", "explain", "uintlist", "intlist", "paths", "logging",
         "dict", "args", "help", "version")  # fmt: skip

GROUPS = (
    ("general", "General options"),
    ("compiler", "Compiler options"),
    ("sched", "Scheduling options (vectorized engine)"),
    ("dist", "Distributed options"),
    ("debug", "Debugging options"),
)
"""The `--help` sections, in order; config-file-only settings have the group `file`."""


@dataclass(frozen=True)
class Option:
    """One setting: a `DaphneConfig` field, a command-line option, or both."""

    field: str | None
    """The `DaphneConfig` field (DAPHNE's DaphneUserConfig member); None for a command-line-only option."""
    kind: str
    default: object = None
    """The field's default (copied for every configuration)."""
    cli: str | None = None
    """The command-line name, without dashes; None for a setting only the config file (or daphnec) sets."""
    json: bool = False
    """DAPHNE's JSON user config has a key of the field's name."""
    apply: str = IF_GIVEN
    """How the command-line value reaches the field (see the module docstring)."""
    invert: bool = False
    """The command-line flag switches the field off (`--no-obj-ref-mgnt` sets `use_obj_ref_mgnt` to false)."""
    implies: tuple[tuple[str, object], ...] = ()
    """Fields also set when the command-line value is applied."""
    group: str = "file"
    help: str = ""
    choices: tuple[str, ...] = ()
    choice_help: Mapping[str, str] | None = None
    json_choices: tuple[str, ...] = ()
    """The values the JSON file accepts for an `enum` (DAPHNE's JSON enum), named `enum_name` in errors."""
    enum_name: str = ""
    metavar: str = ""
    aliases: tuple[str, ...] = ()
    unsupported: str = ""
    """daphnec never supports this option: the warning printed when it is given."""
    check: Callable[[object], str | None] | None = None
    """Validates a value of the right kind (from the command line or the file): None, or what is wrong with it
    (a parse error, exit 1, as LLVM's option parser and DAPHNE's config parser fail)."""

    @property
    def dest(self) -> str:
        """The option's key in the parsed command line (`ParsedArgs.values`)."""
        assert self.cli is not None
        return self.cli.replace("-", "_")

    @property
    def json_key(self) -> str | None:
        """DAPHNE's JSON key of this setting (its field name), None if the file cannot set it."""
        return self.field if self.json else None


def _vec_size_bits(v: object) -> str | None:
    """A vector register's size in bits (`--matmul-vec-size-bits`), or 0 for no vectors."""
    if v == 0 or (isinstance(v, int) and 8 <= v <= 4096 and v & (v - 1) == 0):
        return None
    return f"must be 0 (off) or a power of two from 8 to 4096, but is {v}"


def _at_least_one(v: object) -> str | None:
    return None if isinstance(v, int) and v >= 1 else f"must be at least 1, but is {v}"


def _tile_sizes(v: object) -> str | None:
    """`MC,NC,KC[,MR[,NR]]` (compiler/lowering/lower_matmul_to_loops.py)."""
    sizes = list(v) if isinstance(v, (list, tuple)) else []
    if 1 <= len(sizes) <= 5 and all(isinstance(x, int) and x >= 1 for x in sizes):
        return None
    return f"must be 1 to 5 tile sizes of at least 1 (MC,NC,KC[,MR[,NR]]), but is {','.join(map(str, sizes))}"


_VEC = " (takes effect with the vectorized engine, --vec)"
_UNSUPPORTED = "not supported by daphnec"

# The command-line options in --help order per group, then the settings only the config file (or daphnec) sets.
OPTIONS: tuple[Option, ...] = (
    # -- general --------------------------------------------------------------------------------------------------
    Option(None, "args", cli="args", group="general", metavar="name=value,...",
           help="Alternative way of specifying arguments to the DaphneDSL script; must be a comma-separated list of "
                "name-value-pairs, e.g., `--args x=1,y=2.2` (a value cannot contain a comma)"),
    Option(None, "str", cli="config", group="general", metavar="filename",
           help="A JSON file that contains the DAPHNE configuration (read only if the file exists)"),
    Option("libdir", "str", "{exedir}/../lib", cli="libdir", json=True, apply=IF_SET, group="general",
           metavar="string", help="The directory containing the kernel catalog files (accepted for compatibility)"),
    Option("kernel_ext", "str", "", cli="kernel-ext", apply=IF_SET, group="general", metavar="catalog.json[:int]",
           help="Additional kernel extension to register: a kernel catalog JSON file, optionally with the priority "
                "of its kernels (default 0; above 0 they replace the built-in kernels they match)"),
    Option(None, "help", cli="help", group="general", aliases=("h",), help="Display available options"),
    Option(None, "version", cli="version", group="general", help="Display the version of this program"),
    # -- compiler -------------------------------------------------------------------------------------------------
    Option("explain", "explain", (), cli="explain", json=True, group="compiler", choices=EXPLAIN_VALUES,
           choice_help=_EXPLAIN_HELP, metavar="value",
           help="Show DaphneIR after certain compiler passes on stderr (separate multiple values by comma, the order "
                "is irrelevant)"),
    Option("select_matrix_repr", "flag", False, cli="select-matrix-repr", group="compiler",
           aliases=("select-matrix-representations",),
           help="Automatically choose physical matrix representations (e.g., dense/sparse)"),
    Option("use_obj_ref_mgnt", "flag", True, cli="no-obj-ref-mgnt", json=True, invert=True, group="compiler",
           help="Switch off garbage collection by not managing data objects' reference counters"),
    Option("use_ipa_const_propa", "flag", True, cli="no-ipa-const-propa", json=True, invert=True, group="compiler",
           help="Switch off inter-procedural constant propagation"),
    Option("use_phy_op_selection", "flag", True, cli="no-phy-op-selection", json=True, invert=True,
           group="compiler", help="Switch off physical operator selection, use default kernels for all operations"),
    Option("use_reassociating_rewrites", "flag", True, cli="no-reassociate", invert=True, group="compiler",
           help="Switch off the rewrites that re-associate floating-point sums (algebraic simplifications such as "
                "sum(X @ Y), matrix-chain reordering, the one-pass t(X) @ (w * (X @ v)) kernel); results then keep "
                "every bit of the program as written (docs/language.md, \"Rewrites\")"),
    Option("use_in_place_updates", "flag", True, cli="no-in-place", invert=True, group="compiler",
           help="Switch off in-place left indexing: every X[i, j] = v copies X, even where the old value of X is "
                "never read again (docs/language.md, \"In-place updates\"); results do not change"),
    Option("use_columnar", "flag", False, cli="columnar", json=True, apply=IF_SET, group="compiler",
           help="Use columnar operations for frames where possible"),
    Option("use_optimistic_splitting", "flag", False, cli="optimistic-splitting", json=True, group="compiler",
           help="Use optimistic splitting in the columnar group-by's grouped sums (takes effect with --columnar; "
                "results do not change)"),
    Option("use_cuda", "flag", False, cli="cuda", json=True, apply=NEVER, group="compiler",
           help=f"Use CUDA ({_UNSUPPORTED}: runs on the CPU)",
           unsupported=f"--cuda is {_UNSUPPORTED}; running on the CPU"),
    Option("use_fpgaopencl", "flag", False, cli="fpgaopencl", apply=IF_SET, group="compiler",
           help=f"Use FPGAOPENCL ({_UNSUPPORTED})",
           unsupported=f"--fpgaopencl is {_UNSUPPORTED}; running on the CPU"),
    Option("use_mlir_codegen", "flag", False, cli="codegen", json=True, group="compiler", aliases=("mlir-codegen",),
           help="Compile element-wise operations, aggregations, transposes and matrix products to native code "
                "instead of calling their kernels (daphnec: the native lowering of vectorized pipelines)"),
    Option("use_mlir_hybrid_codegen", "flag", False, cli="mlir-hybrid-codegen", group="compiler",
           help=f"Hybrid code generation combining kernels and MLIR codegen ({_UNSUPPORTED})",
           unsupported=f"--mlir-hybrid-codegen is {_UNSUPPORTED}; using the default kernels"),
    Option("matmul_vec_size_bits", "int", 0, cli="matmul-vec-size-bits", json=True, group="compiler", metavar="int",
           check=_vec_size_bits,
           help="Vector size in bits (a power of two up to 4096) for the lowering of MatMul; 0 is off "
                "(with --codegen)"),
    Option("matmul_tile", "flag", False, cli="matmul-tile", json=True, group="compiler",
           help="Loop tiling in the lowering of MatMul (with --codegen)"),
    Option("matmul_unroll_factor", "int", 1, cli="matmul-unroll-factor", json=True, group="compiler", metavar="int",
           check=_at_least_one, help="Unroll factor of the innermost loop of the lowered MatMul (with --codegen)"),
    Option("matmul_unroll_jam_factor", "int", 4, cli="matmul-unroll-jam-factor", json=True, group="compiler",
           metavar="int", check=_at_least_one,
           help="Unroll-jam factor of the two innermost loops of the lowered MatMul (with --codegen)"),
    Option("matmul_num_vec_registers", "int", 16, cli="matmul-num-vec-registers", json=True, group="compiler",
           metavar="int", check=_at_least_one,
           help="Number of vector registers used for tiling MatMul (with --codegen)"),
    Option("matmul_fixed_tile_sizes", "uintlist", (4, 4), cli="matmul-fixed-tile-sizes", json=True, apply=IF_SET,
           implies=(("matmul_use_fixed_tile_sizes", True), ("matmul_tile", True)), group="compiler",
           metavar="n,n,...", check=_tile_sizes,
           help="Fixed tile sizes MC,NC,KC[,MR[,NR]] for the lowering of MatMul; also enables tiling (with --codegen)"),
    Option("matmul_invert_loops", "flag", False, cli="matmul-invert-loops", json=True, group="compiler",
           help="Invert the two inner loops of MatMul if tiling is off (with --codegen)"),
    # -- scheduling -----------------------------------------------------------------------------------------------
    Option("use_vectorized_exec", "flag", False, cli="vec", json=True, group="sched",
           help="Enable vectorized execution engine"),
    Option("use_vectorized_restricted", "flag", False, cli="vec-restricted", json=True, apply=IF_SET, group="sched",
           help="Only vectorize operations marked with `vec=true`" + _VEC),
    Option("vec_min_cells", "uint", MIN_PARALLEL_BYTES // 8, cli="vec-min-cells", group="sched", metavar="cells",
           help="Cost model of the vectorizer: ops whose row-split inputs have sizes known at compile time and "
                "together fewer cells than this (or at most one row) are not fused into a pipeline but run as "
                "plain kernels, as the pipeline would run on one thread; 0 fuses every candidate, as DAPHNE does "
                f"(default is {MIN_PARALLEL_BYTES // 8}, 4 MiB of f64 values; always 0 with --distributed)" + _VEC),
    Option("numberOfThreads", "int", -1, cli="num-threads", json=True, apply=IF_SET, group="sched", metavar="int",
           help="Define the number of the CPU threads used by the vectorized execution engine (default is equal to "
                "the number of physical cores)" + _VEC),
    Option("minimumTaskSize", "int", 1, cli="grain-size", json=True, group="sched", metavar="int",
           help="Define the minimum grain size of a task (default is 1)" + _VEC),
    Option("phyBatchSize", "uint", 98304, cli="phy-batch-size", json=True, group="sched", metavar="bytes",
           help="Bytes of input rows processed per pipeline call (default is 98304)" + _VEC),
    Option("taskPartitioningScheme", "enum", "STATIC", cli="partitioning", json=True, group="sched",
           choices=PARTITIONING_SCHEMES, choice_help=_PARTITIONING_HELP, json_choices=CONFIG_PARTITIONING_SCHEMES,
           enum_name="SelfSchedulingScheme", metavar="value", help="Choose task partitioning scheme" + _VEC),
    Option("queueSetupScheme", "enum", "CENTRALIZED", cli="queue_layout", group="sched", choices=QUEUE_LAYOUTS,
           choice_help=_QUEUE_HELP, metavar="value", help="Choose queue setup scheme" + _VEC),
    Option("victimSelection", "enum", "SEQ", cli="victim_selection", group="sched", choices=VICTIM_SELECTIONS,
           choice_help=_VICTIM_HELP, metavar="value", help="Choose work stealing victim selection logic" + _VEC),
    Option("pinWorkers", "flag", False, cli="pin-workers", group="sched", help="Pin workers to CPU cores" + _VEC),
    Option("hyperthreadingEnabled", "flag", False, cli="hyperthreading", group="sched",
           help="Utilize multiple logical CPUs located on the same physical CPU" + _VEC),
    Option("prePartitionRows", "flag", False, cli="pre-partition", group="sched",
           help="Partition rows into the number of queues before applying scheduling technique" + _VEC),
    # -- distributed ----------------------------------------------------------------------------------------------
    Option("use_distributed", "flag", False, cli="distributed", group="dist",
           help="Enable distributed runtime (run under mpirun with at least 2 ranks; implies vectorization)"),
    Option("distributedBackEndSetup", "enum", "MPI", cli="dist_backend", group="dist", choices=DIST_BACKENDS,
           choice_help=_BACKEND_HELP, metavar="value", help="Choose the options for the distribution backend"),
    Option("max_distr_chunk_size", "uint", DEFAULT_MAX_DISTR_CHUNK_SIZE, cli="max-distr-chunk-size",
           apply=IF_GIVEN, group="dist", metavar="bytes",
           help="Define the maximum chunk size per message for the distributed runtime in bytes (default is close to "
                "the maximum allowed, ~2GB) (takes effect with --distributed)"),
    # -- debugging ------------------------------------------------------------------------------------------------
    Option("timing", "flag", False, cli="timing", group="debug",
           help="Enable timing of high-level steps (start-up, parsing, compilation, execution) and print the times "
                "to stderr in JSON format"),
    Option("statistics", "flag", False, cli="statistics", group="debug",
           help="Enable collection and printing of kernel statistics"),
    Option("enable_profiling", "flag", False, cli="enable-profiling", apply=IF_SET, group="debug",
           help="Enable profiling support (accepted, no effect)"),
    Option("debugMultiThreading", "flag", False, cli="debug-mt", group="debug",
           help="Prints debug information about the Multithreading Wrapper" + _VEC),
    Option("debug", "flag", False, cli="debug", group="debug", help="daphnec: print the Python traceback of errors"),
    Option("no_kernel_cache", "flag", False, cli="no-kernel-cache", group="debug",
           help="daphnec: do not reuse compiled kernels from the kernel cache"),
    # -- only in the config file (or set by daphnec) --------------------------------------------------------------
    Option("force_cuda", "flag", False, json=True),
    Option("cuda_fuse_any", "flag", False, json=True),
    Option("cuda_devices", "intlist", (), json=True),
    Option("sparsity_threshold", "float", 0.25, json=True,
           help="Choose CSR when the estimated non-zero fraction is below this (--select-matrix-repr)"),
    Option("matmul_use_fixed_tile_sizes", "flag", False, json=True),
    Option("vectorized_single_queue", "flag", False, json=True),
    Option("useHdfs", "flag", False, json=True),
    Option("hdfsAddress", "str", "", json=True),
    Option("hdfsUsername", "str", "", json=True),
    Option("debug_llvm", "flag", False, json=True),
    Option("enable_property_recording", "flag", False, json=True),
    Option("enable_property_insert", "flag", False, json=True),
    Option("properties_file_path", "str", "properties.json", json=True),
    Option("daphnedsl_import_paths", "paths", {}, json=True,
           help="Directories searched for `import`; `default_dirs` after the importing script's own folder"),
    Option("logging", "logging", (), json=True, help="DAPHNE's loggers and `log-level-limit` (spdlog)"),
    Option("log_level_limit", "str", "", help="Set by the `log-level-limit` entry of `logging` (empty: no limit)"),
    Option("args", "dict", {}, help="The script arguments (name -> DaphneDSL literal text), from the command line"),
    Option("kernel_catalog", "dict", (), help="The kernels of the --kernel-ext catalog (runtime/kernel_catalog.py)"),
)  # fmt: skip
