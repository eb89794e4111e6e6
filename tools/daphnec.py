"""daphnec: compile and run a DaphneDSL script (DAPHNE's `bin/daphne` command line).

    daphnec [options] script [name=value ...]

The script is the first positional argument and **every** argument after it is a script argument (LLVM's
`ConsumeAfter`, as in DAPHNE), so `daphnec s.daph --vec` makes `--vec` a (malformed) script argument.
Options take `--opt=value` or `--opt value`; a single leading dash works too (`-vec`), as with LLVM's parser.

Exit status (DAPHNE's StatusCode): 0 success, 1 bad command line / config / script argument / parse error,
2 compile (pass) error, 3 execution error. Errors are printed to stderr.

Importing this module is cheap: the compiler is imported only after the command line has been processed.
"""

from __future__ import annotations

import time

_T0 = time.perf_counter()  # as early as possible: `startup_seconds` of --timing starts here

import os  # noqa: E402
import sys  # noqa: E402
from dataclasses import dataclass  # noqa: E402

PROG = "daphnec"
from daphnec import __version__ as VERSION  # noqa: E402

PARSER_ERROR = 1
PASS_ERROR = 2
EXECUTION_ERROR = 3

# Option enums: runtime/config.py is their one home (it imports only the standard library, so this stays cheap).
from daphnec.runtime.config import (  # noqa: E402
    DIST_BACKENDS,
    EXPLAIN_ALIASES,
    EXPLAIN_VALUES,
    PARTITIONING_SCHEMES,
    QUEUE_LAYOUTS,
    VICTIM_SELECTIONS,
)

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

_VEC_NOTE = "(takes effect with the vectorized engine, --vec)"


class UsageError(Exception):
    """A bad command line: printed as `daphnec: <message>`, exit status 1."""


@dataclass(frozen=True)
class Opt:
    name: str  # without dashes
    kind: str  # flag | int | uint | str | enum | explain | args | uintlist
    dest: str
    group: str
    help: str
    choices: tuple[str, ...] = ()
    choice_help: dict[str, str] | None = None
    metavar: str = ""
    aliases: tuple[str, ...] = ()


GROUPS = (
    ("general", "General options"),
    ("compiler", "Compiler options"),
    ("sched", "Scheduling options (vectorized engine)"),
    ("dist", "Distributed options"),
    ("debug", "Debugging options"),
)

OPTIONS: tuple[Opt, ...] = (
    # general
    Opt(
        "args",
        "args",
        "args",
        "general",
        "Alternative way of specifying arguments to the DaphneDSL script; must be a comma-separated list of "
        "name-value-pairs, e.g., `--args x=1,y=2.2` (a value cannot contain a comma)",
        metavar="name=value,...",
    ),
    Opt(
        "config",
        "str",
        "config",
        "general",
        "A JSON file that contains the DAPHNE configuration (read only if the file exists)",
        metavar="filename",
    ),
    Opt(
        "libdir",
        "str",
        "libdir",
        "general",
        "The directory containing the kernel catalog files (accepted for compatibility)",
        metavar="string",
    ),
    Opt(
        "kernel-ext",
        "str",
        "kernel_ext",
        "general",
        "Additional kernel extension to register (not supported by daphnec)",
        metavar="string",
    ),
    Opt("help", "help", "help", "general", "Display available options", aliases=("h",)),
    Opt("version", "version", "version", "general", "Display the version of this program"),
    # compiler
    Opt(
        "explain",
        "explain",
        "explain",
        "compiler",
        "Show DaphneIR after certain compiler passes on stderr (separate multiple values by comma, the order is "
        "irrelevant)",
        choices=EXPLAIN_VALUES,
        choice_help=_EXPLAIN_HELP,
        metavar="value",
    ),
    Opt(
        "select-matrix-repr",
        "flag",
        "select_matrix_repr",
        "compiler",
        "Automatically choose physical matrix representations (e.g., dense/sparse)",
        aliases=("select-matrix-representations",),
    ),
    Opt(
        "no-obj-ref-mgnt",
        "flag",
        "no_obj_ref_mgnt",
        "compiler",
        "Switch off garbage collection by not managing data objects' reference counters",
    ),
    Opt(
        "no-ipa-const-propa",
        "flag",
        "no_ipa_const_propa",
        "compiler",
        "Switch off inter-procedural constant propagation",
    ),
    Opt(
        "no-phy-op-selection",
        "flag",
        "no_phy_op_selection",
        "compiler",
        "Switch off physical operator selection, use default kernels for all operations",
    ),
    Opt("columnar", "flag", "columnar", "compiler", "Use columnar operations for frames where possible"),
    Opt("cuda", "flag", "cuda", "compiler", "Use CUDA (not supported by daphnec: runs on the CPU)"),
    Opt("fpgaopencl", "flag", "fpgaopencl", "compiler", "Use FPGAOPENCL (not supported by daphnec)"),
    Opt(
        "codegen",
        "flag",
        "codegen",
        "compiler",
        "Lower DaphneIR operations to low-level MLIR code (not supported by daphnec)",
        aliases=("mlir-codegen",),
    ),
    Opt(
        "mlir-hybrid-codegen",
        "flag",
        "mlir_hybrid_codegen",
        "compiler",
        "Hybrid code generation combining kernels and MLIR codegen (not supported by daphnec)",
    ),
    Opt(
        "matmul-vec-size-bits",
        "int",
        "matmul_vec_size_bits",
        "compiler",
        "Vector size for the lowering of MatMul; 0 is off (with --codegen)",
        metavar="int",
    ),
    Opt("matmul-tile", "flag", "matmul_tile", "compiler", "Loop tiling in the lowering of MatMul (with --codegen)"),
    Opt(
        "matmul-unroll-factor",
        "int",
        "matmul_unroll_factor",
        "compiler",
        "Unroll factor of the innermost loop of the lowered MatMul (with --codegen)",
        metavar="int",
    ),
    Opt(
        "matmul-unroll-jam-factor",
        "int",
        "matmul_unroll_jam_factor",
        "compiler",
        "Unroll-jam factor of the two innermost loops of the lowered MatMul (with --codegen)",
        metavar="int",
    ),
    Opt(
        "matmul-num-vec-registers",
        "int",
        "matmul_num_vec_registers",
        "compiler",
        "Number of vector registers used for tiling MatMul (with --codegen)",
        metavar="int",
    ),
    Opt(
        "matmul-fixed-tile-sizes",
        "uintlist",
        "matmul_fixed_tile_sizes",
        "compiler",
        "Fixed tile sizes for the lowering of MatMul; also enables tiling (with --codegen)",
        metavar="n,n,...",
    ),
    Opt(
        "matmul-invert-loops",
        "flag",
        "matmul_invert_loops",
        "compiler",
        "Invert the two inner loops of MatMul if tiling is off (with --codegen)",
    ),
    # scheduling
    Opt("vec", "flag", "vec", "sched", "Enable vectorized execution engine"),
    Opt(
        "vec-restricted",
        "flag",
        "vec_restricted",
        "sched",
        "Only vectorize operations marked with `vec=true` " + _VEC_NOTE,
    ),
    Opt(
        "num-threads",
        "int",
        "num_threads",
        "sched",
        "Define the number of the CPU threads used by the vectorized execution engine (default is equal to the "
        "number of physical cores) " + _VEC_NOTE,
        metavar="int",
    ),
    Opt(
        "grain-size",
        "int",
        "grain_size",
        "sched",
        "Define the minimum grain size of a task (default is 1) " + _VEC_NOTE,
        metavar="int",
    ),
    Opt(
        "phy-batch-size",
        "uint",
        "phy_batch_size",
        "sched",
        "Bytes of input rows processed per pipeline call (default is 98304) " + _VEC_NOTE,
        metavar="bytes",
    ),
    Opt(
        "partitioning",
        "enum",
        "partitioning",
        "sched",
        "Choose task partitioning scheme " + _VEC_NOTE,
        choices=PARTITIONING_SCHEMES,
        choice_help=_PARTITIONING_HELP,
        metavar="value",
    ),
    Opt(
        "queue_layout",
        "enum",
        "queue_layout",
        "sched",
        "Choose queue setup scheme " + _VEC_NOTE,
        choices=QUEUE_LAYOUTS,
        choice_help=_QUEUE_HELP,
        metavar="value",
    ),
    Opt(
        "victim_selection",
        "enum",
        "victim_selection",
        "sched",
        "Choose work stealing victim selection logic " + _VEC_NOTE,
        choices=VICTIM_SELECTIONS,
        choice_help=_VICTIM_HELP,
        metavar="value",
    ),
    Opt("pin-workers", "flag", "pin_workers", "sched", "Pin workers to CPU cores " + _VEC_NOTE),
    Opt(
        "hyperthreading",
        "flag",
        "hyperthreading",
        "sched",
        "Utilize multiple logical CPUs located on the same physical CPU " + _VEC_NOTE,
    ),
    Opt(
        "pre-partition",
        "flag",
        "pre_partition",
        "sched",
        "Partition rows into the number of queues before applying scheduling technique " + _VEC_NOTE,
    ),
    # distributed
    Opt(
        "distributed",
        "flag",
        "distributed",
        "dist",
        "Enable distributed runtime (run under mpirun with at least 2 ranks; implies vectorization)",
    ),
    Opt(
        "dist_backend",
        "enum",
        "dist_backend",
        "dist",
        "Choose the options for the distribution backend",
        choices=DIST_BACKENDS,
        choice_help=_BACKEND_HELP,
        metavar="value",
    ),
    Opt(
        "max-distr-chunk-size",
        "uint",
        "max_distr_chunk_size",
        "dist",
        "Define the maximum chunk size per message for the distributed runtime in bytes (default is close to the "
        "maximum allowed, ~2GB) (takes effect with --distributed)",
        metavar="bytes",
    ),
    # debugging
    Opt(
        "timing",
        "flag",
        "timing",
        "debug",
        "Enable timing of high-level steps (start-up, parsing, compilation, execution) and print the times to "
        "stderr in JSON format",
    ),
    Opt("statistics", "flag", "statistics", "debug", "Enable collection and printing of kernel statistics"),
    Opt("enable-profiling", "flag", "enable_profiling", "debug", "Enable profiling support (accepted, no effect)"),
    Opt(
        "debug-mt",
        "flag",
        "debug_mt",
        "debug",
        "Prints debug information about the Multithreading Wrapper " + _VEC_NOTE,
    ),
    Opt("debug", "flag", "debug", "debug", "daphnec: print the Python traceback of errors"),
    Opt(
        "no-kernel-cache",
        "flag",
        "no_kernel_cache",
        "debug",
        "daphnec: do not reuse compiled kernels from the kernel cache",
    ),
)

_BY_NAME: dict[str, Opt] = {}
for _o in OPTIONS:
    for _n in (_o.name, *_o.aliases):
        _BY_NAME[_n] = _o

# daphnec never supports these; a one-line warning goes to stderr when they are given.
_UNSUPPORTED_WARNINGS = {
    "cuda": "--cuda is not supported by daphnec; running on the CPU",
    "fpgaopencl": "--fpgaopencl is not supported by daphnec; running on the CPU",
    "codegen": "--codegen is not supported by daphnec; using the default kernels",
    "mlir_hybrid_codegen": "--mlir-hybrid-codegen is not supported by daphnec; using the default kernels",
    "kernel_ext": "--kernel-ext is not supported by daphnec; the kernel extension is ignored",
}


# ---------------------------------------------------------------------------------------------------------------
# Help
# ---------------------------------------------------------------------------------------------------------------


def _opt_label(o: Opt) -> str:
    if o.kind in ("flag", "help", "version"):
        return f"--{o.name}"
    return f"--{o.name}=<{o.metavar or 'value'}>"


def _wrap(head: str, text: str, indent: int, limit: int = 110) -> list[str]:
    """`head` + `text`, wrapped at `limit` columns with continuation lines indented by `indent`."""
    out: list[str] = []
    line = head
    room = head
    for word in text.split():
        if line != room and len(line) + 1 + len(word) > limit:
            out.append(line)
            line = room = " " * indent
        line = f"{line}{word}" if line == room else f"{line} {word}"
    out.append(line)
    return out


def help_text() -> str:
    lines = [
        "OVERVIEW: daphnec - the DAPHNE prototype in Python.",
        "",
        "This program compiles and executes a DaphneDSL script.",
        "",
        f"USAGE: {PROG} [options] script [arguments]",
        "",
        "Every argument after the script is a script argument of the form name=value; the value must be a",
        'DaphneDSL literal (strings need their quotes, e.g. s=\\"abc\\") and is read as $name in the script.',
        "Options accept both --opt=value and --opt value.",
        "",
        "OPTIONS:",
    ]
    width = 34
    for gid, title in GROUPS:
        lines.append("")
        lines.append(f"{title}:")
        for o in OPTIONS:
            if o.group != gid:
                continue
            label = _opt_label(o)
            pad = " " * max(1, width - len(label) - 2)
            lines.extend(_wrap(f"  {label}{pad}- ", o.help, width + 2))
            for a in o.aliases:
                alias = f"--{a}" if len(a) > 1 else f"-{a}"
                lines.append(f"  {alias}{' ' * max(1, width - len(alias) - 2)}- Alias for --{o.name}")
            if o.choices:
                for c in o.choices:
                    clabel = f"    ={c}"
                    desc = (o.choice_help or {}).get(c, "")
                    lines.append(f"{clabel}{' ' * max(1, width - len(clabel))}-   {desc}".rstrip())
    lines += [
        "",
        "EXIT STATUS: 0 success, 1 parser error (command line, config, script arguments, DaphneDSL syntax),",
        "             2 compiler/pass error, 3 runtime/execution error.",
        "",
        "EXAMPLES:",
        "",
        f"  {PROG} example.daph",
        f'  {PROG} --vec example.daph x=1 y=2.2 z=\\"foo\\"',
        f'  {PROG} --vec --args x=1,y=2.2,z=\\"foo\\" example.daph',
        f'  {PROG} --vec --args x=1,y=2.2 example.daph z=\\"foo\\"',
        f"  {PROG} --explain=parsing_simplified,property_inference example.daph",
        "",
    ]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------------------
# Command-line parsing (LLVM cl semantics: options, then the script, then script arguments)
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class ParsedArgs:
    values: dict[str, object]
    given: set[str]
    script: str | None
    script_args: list[str]
    cli_args: list[str]  # from --args


def _parse_bool(o: Opt, text: str) -> bool:
    low = text.lower()
    if low in ("true", "1"):
        return True
    if low in ("false", "0"):
        return False
    raise UsageError(f"for the --{o.name} option: '{text}' is invalid value for boolean argument! Try 0 or 1")


def _parse_int(o: Opt, text: str, *, unsigned: bool) -> int:
    t = text.strip()
    try:
        v = int(t, 0)
    except ValueError:
        try:
            v = int(t, 10)
        except ValueError:
            v = None
    if "_" in t:
        v = None
    elif v is not None and not unsigned and not (-(2**31) <= v < 2**31):
        v = None  # opt<int> is a C++ int
    elif v is not None and unsigned and v >= 2**64:
        v = None  # opt<size_t>
    if v is None or (unsigned and v < 0):
        kind = "uint" if unsigned else "integer"
        raise UsageError(f"for the --{o.name} option: '{text}' value invalid for {kind} argument!")
    return v


def _bad_choice(o: Opt, value: str) -> UsageError:
    return UsageError(
        f"for the --{o.name} option: Cannot find option named '{value}'! (valid values: {', '.join(o.choices)})"
    )


def _suggest(name: str) -> str | None:
    import difflib

    cands = difflib.get_close_matches(name, list(_BY_NAME), n=1, cutoff=0.6)
    return cands[0] if cands else None


def parse_command_line(argv: list[str]) -> ParsedArgs:
    values: dict[str, object] = {}
    given: set[str] = set()
    cli_args: list[str] = []
    explain: list[str] = []
    script: str | None = None
    script_args: list[str] = []
    i = 0
    n = len(argv)
    while i < n:
        arg = argv[i]
        i += 1
        if arg == "--":
            if i < n:
                script = argv[i]
                script_args = argv[i + 1 :]
            break
        if not arg.startswith("-") or arg == "-":
            script = arg
            script_args = argv[i:]
            break
        body = arg[2:] if arg.startswith("--") else arg[1:]
        name, eq, inline = body.partition("=")
        o = _BY_NAME.get(name)
        if o is None:
            msg = f"Unknown command line argument '{arg}'.  Try: '{PROG} --help'"
            guess = _suggest(name)
            if guess is not None:
                msg += f"\n{PROG}: Did you mean '--{guess}'?"
            raise UsageError(msg)
        if o.kind == "help":
            if eq:
                raise UsageError(f"for the --{o.name} option: '{inline}' is invalid value for boolean argument!")
            values["help"] = True
            return ParsedArgs(values, given, script, script_args, cli_args)
        if o.kind == "version":
            values["version"] = True
            return ParsedArgs(values, given, script, script_args, cli_args)
        if o.kind == "flag":
            val: object = _parse_bool(o, inline) if eq else True
        else:
            if eq:
                text = inline
            elif i < n:
                text = argv[i]
                i += 1
            else:
                raise UsageError(f"for the --{o.name} option: requires a value!")
            if o.kind == "int":
                val = _parse_int(o, text, unsigned=False)
            elif o.kind == "uint":
                val = _parse_int(o, text, unsigned=True)
            elif o.kind == "str":
                val = text
            elif o.kind == "enum":
                if text not in o.choices:
                    raise _bad_choice(o, text)
                val = text
            elif o.kind == "explain":
                for part in text.split(","):
                    canon = EXPLAIN_ALIASES.get(part, part)
                    if canon not in EXPLAIN_VALUES:
                        raise _bad_choice(o, part)
                    explain.append(canon)
                given.add(o.dest)
                continue
            elif o.kind == "args":
                cli_args.extend(text.split(","))
                given.add(o.dest)
                continue
            elif o.kind == "uintlist":
                val = [_parse_int(o, p, unsigned=True) for p in text.split(",")]
                if o.dest in given:
                    val = list(values[o.dest]) + val  # type: ignore[arg-type]
                values[o.dest] = val
                given.add(o.dest)
                continue
            else:  # pragma: no cover - table error
                raise AssertionError(o.kind)
        if o.dest in given:
            raise UsageError(f"for the --{o.name} option: may only occur zero or one times!")
        values[o.dest] = val
        given.add(o.dest)
    values["explain"] = explain
    return ParsedArgs(values, given, script, script_args, cli_args)


def parse_script_args(pairs: list[str], into: dict[str, str]) -> None:
    """DAPHNE's parseScriptArgs, plus daphnec's check that the name is an identifier."""
    for pair in pairs:
        name, eq, value = pair.partition("=")
        if not eq:
            raise UsageError(f"script arguments must be specified as name=value, but found '{pair}'")
        if not name:
            raise UsageError(f"script argument '{pair}' has an empty name")
        if not name.isidentifier() or not name.isascii():
            raise UsageError(f"script argument name '{name}' in '{pair}' is not a valid identifier")
        if name in into:
            raise UsageError(f"script argument: '{name}' was provided more than once")
        into[name] = value


def build_config(p: ParsedArgs):
    """Defaults, then the config file (if it exists), then the command-line flags (DAPHNE's overwrite rules)."""
    from daphnec.runtime.config import DaphneConfig, load_user_config

    v = p.values
    cfg_path = v.get("config", "-")
    cfg = DaphneConfig()
    if isinstance(cfg_path, str) and cfg_path != "-" and os.path.exists(cfg_path):
        cfg = load_user_config(cfg_path, cfg)

    # Flags that DAPHNE copies into the config unconditionally (the CLI default wins over the file).
    cfg.use_vectorized_exec = bool(v.get("vec", False))
    cfg.use_distributed = bool(v.get("distributed", False))
    cfg.use_obj_ref_mgnt = not v.get("no_obj_ref_mgnt", False)
    cfg.use_ipa_const_propa = not v.get("no_ipa_const_propa", False)
    cfg.use_phy_op_selection = not v.get("no_phy_op_selection", False)
    cfg.use_mlir_codegen = bool(v.get("codegen", False))
    cfg.use_mlir_hybrid_codegen = bool(v.get("mlir_hybrid_codegen", False))
    cfg.matmul_vec_size_bits = int(v.get("matmul_vec_size_bits", 0))  # type: ignore[arg-type]
    cfg.matmul_tile = bool(v.get("matmul_tile", False))
    cfg.matmul_unroll_factor = int(v.get("matmul_unroll_factor", 1))  # type: ignore[arg-type]
    cfg.matmul_unroll_jam_factor = int(v.get("matmul_unroll_jam_factor", 4))  # type: ignore[arg-type]
    cfg.matmul_num_vec_registers = int(v.get("matmul_num_vec_registers", 16))  # type: ignore[arg-type]
    cfg.matmul_invert_loops = bool(v.get("matmul_invert_loops", False))
    if v.get("matmul_fixed_tile_sizes"):
        cfg.matmul_use_fixed_tile_sizes = True
        cfg.matmul_fixed_tile_sizes = list(v["matmul_fixed_tile_sizes"])  # type: ignore[call-overload]
        cfg.matmul_tile = True
    cfg.taskPartitioningScheme = str(v.get("partitioning", "STATIC"))
    cfg.queueSetupScheme = str(v.get("queue_layout", "CENTRALIZED"))
    cfg.victimSelection = str(v.get("victim_selection", "SEQ"))
    cfg.minimumTaskSize = int(v.get("grain_size", 1))  # type: ignore[arg-type]
    cfg.phyBatchSize = int(v.get("phy_batch_size", 98304))  # type: ignore[arg-type]
    cfg.pinWorkers = bool(v.get("pin_workers", False))
    cfg.hyperthreadingEnabled = bool(v.get("hyperthreading", False))
    cfg.debugMultiThreading = bool(v.get("debug_mt", False))
    cfg.prePartitionRows = bool(v.get("pre_partition", False))
    cfg.distributedBackEndSetup = str(v.get("dist_backend", "MPI"))
    if "max_distr_chunk_size" in v:
        cfg.max_distr_chunk_size = int(v["max_distr_chunk_size"])  # type: ignore[call-overload]
    # daphnec: --vec-restricted and --columnar only switch on (the config file may switch them on too).
    if v.get("vec_restricted"):
        cfg.use_vectorized_restricted = True
    if v.get("columnar"):
        cfg.use_columnar = True
    # Flags that overwrite the file only when given.
    num_threads = int(v.get("num_threads", 0))  # type: ignore[arg-type]
    if num_threads != 0:
        cfg.numberOfThreads = num_threads
    libdir = v.get("libdir", "")
    if libdir:
        cfg.libdir = str(libdir)
    if v.get("kernel_ext"):
        cfg.kernel_ext = str(v["kernel_ext"])
    for e in v.get("explain", []):  # type: ignore[union-attr]
        cfg.set_explain(e, True)
    # --cuda: DAPHNE sets use_cuda only if it finds a CUDA device; daphnec never does (and warns).
    if v.get("fpgaopencl"):
        cfg.use_fpgaopencl = True
    if v.get("enable_profiling"):
        cfg.enable_profiling = True
    cfg.select_matrix_repr = bool(v.get("select_matrix_repr", False))
    cfg.timing = bool(v.get("timing", False))
    cfg.statistics = bool(v.get("statistics", False))
    cfg.debug = bool(v.get("debug", False))
    cfg.no_kernel_cache = bool(v.get("no_kernel_cache", False))
    return cfg


# ---------------------------------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------------------------------


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


def _flush_stdout() -> None:
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _silence_stdout()
    except (OSError, ValueError):
        pass


def _silence_stdout() -> None:
    # Point fd 1 at /dev/null so that the interpreter's final flush does not raise again.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def _default_sigpipe() -> None:
    # Like a C++ program (DAPHNE), die quietly when stdout is a closed pipe (`daphnec s.daph | head`)
    # instead of raising BrokenPipeError somewhere inside the generated code.
    try:
        import signal

        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    except (ImportError, AttributeError, ValueError, OSError):  # no SIGPIPE (Windows) or not the main thread
        pass


def _err(line: str) -> None:
    _flush_stdout()
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _report_exception(exc: BaseException, debug: bool, phase_code: int) -> int:
    """Print an error for `exc` and return the exit status."""
    try:
        from daphnec.dialects.errors import DaphneError
    except Exception:  # pragma: no cover - the dialects package is broken
        DaphneError = None  # type: ignore[assignment,misc]
    if debug:
        import traceback

        _flush_stdout()
        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    if DaphneError is not None and isinstance(exc, DaphneError):
        _err(exc.render())
        code = getattr(exc, "code", phase_code)
        return code if code in (PARSER_ERROR, PASS_ERROR, EXECUTION_ERROR) else phase_code
    _err(f"error: internal error: {type(exc).__name__}: {exc}")
    return phase_code


def _load_driver():
    """The driver's `compile_script` (tools/driver.py; importing it is cheap: the compiler is imported only when a
    script is compiled, not when its program comes from the program cache)."""
    from daphnec.tools.driver import compile_script

    return compile_script


def _run(p: ParsedArgs) -> int:
    # 1. user config (file, then flags)
    try:
        from daphnec.runtime.config import ConfigError
    except Exception as e:  # pragma: no cover - broken install
        _err(f"error: internal error: {type(e).__name__}: {e}")
        return PARSER_ERROR
    debug = bool(p.values.get("debug", False))
    try:
        cfg = build_config(p)
    except ConfigError as e:
        _err(f"error: while reading user config: {e.message}")
        return PARSER_ERROR
    except Exception as e:
        return _report_exception(e, debug, PARSER_ERROR)

    # 2. script arguments: after the script first, then --args (DAPHNE's order)
    script_args: dict[str, str] = {}
    try:
        parse_script_args(p.script_args, script_args)
        parse_script_args(p.cli_args, script_args)
    except UsageError as e:
        _err(f"error: {e}")
        return PARSER_ERROR
    cfg.args = dict(script_args)

    # 3. warnings for options daphnec will never support
    for dest, msg in _UNSUPPORTED_WARNINGS.items():
        if p.values.get(dest):
            _err(f"{PROG}: warning: {msg}")
    if cfg.distributedBackEndSetup != "MPI" and "dist_backend" in p.given:
        _err(f"{PROG}: warning: the {cfg.distributedBackEndSetup} backend is not supported by daphnec; using MPI")

    # 4. the script file
    script = p.script
    assert script is not None
    if not os.path.isfile(script):
        reason = "Is a directory" if os.path.isdir(script) else "No such file or directory"
        _err(f"error: could not open file '{script}' for parsing: {reason}")
        return PARSER_ERROR

    # 5. compile and run
    timings: dict[str, float] = {}
    t_comp0 = time.perf_counter()
    try:
        compile_script = _load_driver()
        t_comp0 = time.perf_counter()
        program = compile_script(script, script_args, cfg, timings, program_cache=True)
    except KeyboardInterrupt:
        _flush_stdout()
        return 130
    except BrokenPipeError:
        _silence_stdout()
        return 0
    except Exception as e:
        return _report_exception(e, debug, PASS_ERROR)
    t_exec0 = time.perf_counter()
    try:
        program.run()
    except KeyboardInterrupt:
        _flush_stdout()
        return 130
    except BrokenPipeError:
        _silence_stdout()
        return 0
    except Exception as e:
        return _report_exception(e, debug, EXECUTION_ERROR)
    t_end = time.perf_counter()
    _flush_stdout()

    if cfg.timing:
        compile_wall = t_exec0 - t_comp0
        parsing = float(timings.get("parsing_seconds", 0.0))
        compilation = float(timings.get("compilation_seconds", max(0.0, compile_wall - parsing)))
        _err(timing_json(t_comp0 - _T0, parsing, compilation, t_end - t_exec0, t_end - _T0))
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `daphnec` console script; returns the exit status."""
    if argv is None:
        argv = sys.argv[1:]
    _default_sigpipe()
    try:
        p = parse_command_line(list(argv))
    except UsageError as e:
        _err(f"{PROG}: {e}")
        return PARSER_ERROR
    if p.values.get("help"):
        try:
            sys.stdout.write(help_text())
        except BrokenPipeError:
            _silence_stdout()
            return 0
        _flush_stdout()
        return 0
    if p.values.get("version"):
        try:
            sys.stdout.write(f"{PROG} {VERSION}\n")
        except BrokenPipeError:
            _silence_stdout()
            return 0
        _flush_stdout()
        return 0
    if p.script is None:
        _err(
            f"{PROG}: Not enough positional command line arguments specified!\n"
            f"Must specify at least 1 positional argument: See: {PROG} --help"
        )
        return PARSER_ERROR
    try:
        code = _run_distributed(p) if p.values.get("distributed") else _run(p)
    except KeyboardInterrupt:
        code = 130
    _flush_stdout()
    return code


def _run_distributed(p: ParsedArgs) -> int:
    """`--distributed` (tools/driver.py::run_distributed): rank 0 is the coordinator and runs the script; ranks >= 1
    are workers that never parse it; a single rank warns and runs the pipelines in-process."""
    from daphnec.tools.driver import run_distributed

    return run_distributed(lambda: _run(p), _err)


if __name__ == "__main__":
    sys.exit(main())
