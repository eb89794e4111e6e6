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

import gc  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
from dataclasses import dataclass  # noqa: E402

PROG = "daphnec"
from daphnec import __version__ as VERSION  # noqa: E402

PARSER_ERROR = 1
PASS_ERROR = 2
EXECUTION_ERROR = 3

# The options are runtime/options.py's table (it imports only the standard library, so this stays cheap).
from daphnec.runtime.memory import reuse_freed_memory  # noqa: E402
from daphnec.runtime.options import EXPLAIN_ALIASES, EXPLAIN_VALUES, GROUPS, OPTIONS, Option  # noqa: E402
from daphnec.tools.timing import timing_json, timing_parts  # noqa: E402 - shared with the Python API


class UsageError(Exception):
    """A bad command line: printed as `daphnec: <message>`, exit status 1."""


_BY_NAME: dict[str, Option] = {n: o for o in OPTIONS if o.cli is not None for n in (o.cli, *o.aliases)}


# ---------------------------------------------------------------------------------------------------------------
# Help
# ---------------------------------------------------------------------------------------------------------------


def _opt_label(o: Option) -> str:
    if o.kind in ("flag", "help", "version"):
        return f"--{o.cli}"
    return f"--{o.cli}=<{o.metavar or 'value'}>"


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
                lines.append(f"  {alias}{' ' * max(1, width - len(alias) - 2)}- Alias for --{o.cli}")
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
    """A parsed command line: option values by `Option.dest`, and which options were given explicitly."""

    values: dict[str, object]
    given: set[str]
    script: str | None
    script_args: list[str]
    cli_args: list[str]  # from --args


def _parse_bool(o: Option, text: str) -> bool:
    low = text.lower()
    if low in ("true", "1"):
        return True
    if low in ("false", "0"):
        return False
    raise UsageError(f"for the --{o.cli} option: '{text}' is invalid value for boolean argument! Try 0 or 1")


def _parse_int(o: Option, text: str, *, unsigned: bool) -> int:
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
        raise UsageError(f"for the --{o.cli} option: '{text}' value invalid for {kind} argument!")
    return v


def _bad_choice(o: Option, value: str) -> UsageError:
    return UsageError(
        f"for the --{o.cli} option: Cannot find option named '{value}'! (valid values: {', '.join(o.choices)})"
    )


def _suggest(name: str) -> str | None:
    import difflib

    cands = difflib.get_close_matches(name, list(_BY_NAME), n=1, cutoff=0.6)
    return cands[0] if cands else None


def parse_command_line(argv: list[str]) -> ParsedArgs:
    """Options, then the script, then its arguments (LLVM's `cl` semantics, see the module docstring)."""
    p = ParsedArgs({"explain": []}, set(), None, [], [])
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if arg == "--" or not arg.startswith("-") or arg == "-":
            rest = argv[i:] if arg == "--" else argv[i - 1 :]
            if rest:
                p.script, p.script_args = rest[0], rest[1:]
            break
        name, eq, text = (arg[2:] if arg.startswith("--") else arg[1:]).partition("=")
        o = _BY_NAME.get(name)
        if o is None:
            raise _unknown(arg, name)
        if o.kind in ("help", "version"):
            if eq and o.kind == "help":
                raise UsageError(f"for the --{o.cli} option: '{text}' is invalid value for boolean argument!")
            p.values[o.kind] = True
            return p
        if o.kind == "flag":
            _set_once(p, o, _parse_bool(o, text) if eq else True)
            continue
        if not eq:
            if i == len(argv):
                raise UsageError(f"for the --{o.cli} option: requires a value!")
            text = argv[i]
            i += 1
        _store(p, o, text)
    return p


def _unknown(arg: str, name: str) -> UsageError:
    msg = f"Unknown command line argument '{arg}'.  Try: '{PROG} --help'"
    guess = _choice_option(name) or _suggest(name)
    if guess is not None:
        msg += f"\n{PROG}: Did you mean '--{guess}'?"
    return UsageError(msg)


def _choice_option(name: str) -> str | None:
    """`--GSS` is a value of `--partitioning` (DAPHNE's doc/SchedulingOptions.md still shows that old form):
    the option and value meant, `partitioning=GSS`."""
    for o in OPTIONS:
        if o.cli is not None and o.kind == "enum" and name in o.choices:
            return f"{o.cli}={name}"
    return None


def _store(p: ParsedArgs, o: Option, text: str) -> None:
    """The value `text` of a (non-flag) option: the repeatable kinds accumulate, the others occur once."""
    if o.kind == "explain":
        for part in text.split(","):
            canon = EXPLAIN_ALIASES.get(part, part)
            if canon not in EXPLAIN_VALUES:
                raise _bad_choice(o, part)
            p.values["explain"].append(canon)  # type: ignore[attr-defined]
    elif o.kind == "args":
        p.cli_args.extend(text.split(","))
    elif o.kind == "uintlist":
        sizes = [_parse_int(o, x, unsigned=True) for x in text.split(",")]
        p.values[o.dest] = [*p.values.get(o.dest, []), *sizes]  # type: ignore[misc]
    elif o.kind in ("int", "uint"):
        _set_once(p, o, _parse_int(o, text, unsigned=o.kind == "uint"))
    elif o.kind == "enum" and text not in o.choices:
        raise _bad_choice(o, text)
    else:
        assert o.kind in ("str", "enum"), o.kind
        _set_once(p, o, text)
    p.given.add(o.dest)
    problem = o.check(p.values[o.dest]) if o.check is not None else None
    if problem is not None:
        raise UsageError(f"for the --{o.cli} option: {problem}")


def _set_once(p: ParsedArgs, o: Option, value: object) -> None:
    if o.dest in p.given:
        raise UsageError(f"for the --{o.cli} option: may only occur zero or one times!")
    p.values[o.dest] = value
    p.given.add(o.dest)


def _option_hint(arg: str) -> str:
    """For a daphnec option given after the script (where every argument is a script argument, as in DAPHNE)."""
    if arg.startswith("-") and _BY_NAME.get(arg.lstrip("-").partition("=")[0]) is not None:
        return f" ('{arg}' is a daphnec option: options go before the script, `{PROG} {arg} script.daph`)"
    return ""


def parse_script_args(pairs: list[str], into: dict[str, str]) -> None:
    """DAPHNE's parseScriptArgs, plus daphnec's check that the name is an identifier."""
    for pair in pairs:
        name, eq, value = pair.partition("=")
        if not eq:
            hint = _option_hint(pair)
            raise UsageError(f"script arguments must be specified as name=value, but found '{pair}'{hint}")
        if not name:
            raise UsageError(f"script argument '{pair}' has an empty name")
        if not name.isidentifier() or not name.isascii():
            raise UsageError(f"script argument name '{name}' in '{pair}' is not a valid identifier{_option_hint(pair)}")
        if name in into:
            raise UsageError(f"script argument: '{name}' was provided more than once")
        into[name] = value


def build_config(p: ParsedArgs):
    """Defaults, then the config file (a missing one is warned about), then the options given on the command line
    (per option in runtime/options.py)."""
    from daphnec.runtime.config import DaphneConfig, apply_command_line, load_user_config

    cfg_path = p.values.get("config", "-")
    cfg = DaphneConfig()
    if isinstance(cfg_path, str) and cfg_path != "-":
        if os.path.exists(cfg_path):
            cfg = load_user_config(cfg_path, cfg)
        else:  # DAPHNE skips it silently
            _err(f"{PROG}: warning: the user config file '{cfg_path}' does not exist; using the defaults")

    apply_command_line(cfg, p.values, p.given)
    if cfg.kernel_ext:
        from daphnec.runtime.kernel_catalog import load_kernel_ext

        cfg.kernel_catalog = load_kernel_ext(cfg.kernel_ext)
    return cfg


# ---------------------------------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------------------------------


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
    # `_signal`, not `signal`: the latter builds its IntEnums at import (~1.5 ms of a cached run's start-up).
    try:
        import _signal

        _signal.signal(_signal.SIGPIPE, _signal.SIG_DFL)
    except (ImportError, AttributeError, ValueError, OSError):  # no SIGPIPE (Windows) or not the main thread
        pass


def _err(line: str) -> None:
    _flush_stdout()
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _out(line: str) -> None:
    try:
        sys.stdout.write(line + "\n")
    except (OSError, ValueError):
        pass
    _flush_stdout()


def _report_exception(exc: BaseException, debug: bool, phase_code: int) -> int:
    """Print an error for `exc` and return the exit status."""
    try:
        from daphnec.dialects.errors import DaphneError, ScriptStopped
    except Exception:  # pragma: no cover - the dialects package is broken
        DaphneError = ScriptStopped = None  # type: ignore[assignment,misc]
    if debug:
        import traceback

        _flush_stdout()
        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    if DaphneError is not None and isinstance(exc, DaphneError):
        if ScriptStopped is not None and isinstance(exc, ScriptStopped):  # DAPHNE's logger prints it on stdout
            _out(exc.message)
            return EXECUTION_ERROR
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
        from daphnec.runtime.kernel_catalog import KernelCatalogError
    except Exception as e:  # pragma: no cover - broken install
        _err(f"error: internal error: {type(e).__name__}: {e}")
        return PARSER_ERROR
    debug = bool(p.values.get("debug", False))
    try:
        cfg = build_config(p)
    except KernelCatalogError as e:
        _err(f"error: {e.message}")
        return PARSER_ERROR
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
    for o in OPTIONS:
        if o.unsupported and p.values.get(o.dest):
            _err(f"{PROG}: warning: {o.unsupported}")
    if cfg.distributedBackEndSetup != "MPI" and "dist_backend" in p.given:
        _err(f"{PROG}: warning: the {cfg.distributedBackEndSetup} backend is not supported by daphnec; using MPI")

    # 4. the script file
    script = p.script
    assert script is not None
    if not os.path.isfile(script):
        reason = "Is a directory" if os.path.isdir(script) else "No such file or directory"
        if os.path.exists(script) and reason != "Is a directory":
            from daphnec.frontend.sources import file_kind

            reason = f"it is {file_kind(os.stat(script).st_mode)}"
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
    _resume_gc()
    t_exec0 = time.perf_counter()
    progress = _progress_line(program)
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
    finally:
        if progress is not None:
            progress.stop()
    t_end = time.perf_counter()
    _flush_stdout()

    if cfg.statistics:
        from daphnec.runtime import statistics

        table = statistics.report()
        if table:
            _err(table.rstrip("\n"))
    if cfg.timing:
        _err(timing_json(*timing_parts(t_comp0 - _T0, t_exec0 - t_comp0, timings, t_end - t_exec0)))
    return 0


def _progress_line(program: object):  # noqa: ANN202 - a tools.progress.ProgressLine or None
    """Start the progress line of a long run (tools/progress.py) if stderr is a terminal."""
    if not sys.stderr.isatty():
        return None
    from daphnec.compiler.host.program import HOST_FILENAME
    from daphnec.tools.progress import progress_line

    line = progress_line(program.host.line_locs, HOST_FILENAME)  # type: ignore[attr-defined]
    if line is not None:
        line.start()
    return line


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `daphnec` console script; returns the exit status."""
    if argv is None:
        argv = sys.argv[1:]
    _default_sigpipe()
    reuse_freed_memory()
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
    _sweep_dead_writers()
    try:
        if p.values.get("distributed"):
            code = _run_distributed(p)
        else:
            _warn_ranks_without_distributed()
            _pause_gc()
            code = _run(p)
    except KeyboardInterrupt:
        code = 130
    finally:
        _resume_gc()
    _flush_stdout()
    return code


def _mpi_rank_and_size() -> tuple[int, int] | None:
    """This process's rank and the job's size when a process manager started it (mpich's hydra: PMI_RANK and
    PMI_SIZE; Open MPI: OMPI_COMM_WORLD_*), read from the environment: no MPI is initialised for this."""
    env = os.environ
    for rank, size in (("PMI_RANK", "PMI_SIZE"), ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE")):
        if rank in env and size in env:
            try:
                return int(env[rank]), int(env[size])
            except ValueError:
                return None
    return None


def _warn_ranks_without_distributed() -> None:
    """`mpiexec -n 2 daphnec s.daph` without `--distributed`: every rank runs the whole script on its own and
    prints everything once per rank. Almost always a forgotten flag, so rank 0 (only) says so."""
    job = _mpi_rank_and_size()
    if job is not None and job[0] == 0 and job[1] >= 2:
        _err(
            f"{PROG}: warning: started by mpiexec with {job[1]} ranks but without --distributed: every rank runs the "
            f"whole script on its own (and prints everything {job[1]} times); add --distributed before the script "
            "to run its pipelines on the ranks"
        )


def _sweep_dead_writers() -> None:
    """Remove the temporary files of file writes whose process was killed (runtime/io/atomic.py): a killed
    `writeMatrix` on a file system without unnamed files leaves one as large as the file. The common case costs
    one `stat`: no journal folder, and the writer module is not even imported."""
    from daphnec.runtime.cache_files import write_journal

    if os.path.isdir(write_journal()):
        from daphnec.runtime.io.atomic import sweep_dead_writers

        sweep_dead_writers()


_GC_PAUSED: list[bool] = []
"""Set while `_pause_gc` holds the cyclic garbage collector off."""


def _pause_gc() -> None:
    """Turn the cyclic garbage collector off until the script starts (`_resume_gc`). Start-up (imports of numpy,
    xDSL, the dialect and the compiler, then the compile) creates ~10^5 long-lived objects and almost no cyclic
    garbage (~10^3 objects in a cold run): the ~20 generation-1 and 2 full collections it triggered only
    traversed live objects, 30-100 ms of a cold run before its first statement. The script itself runs with the
    collector as always. Not for `--distributed`, whose worker ranks never start a script."""
    if gc.isenabled():
        gc.disable()
        _GC_PAUSED.append(True)


def _resume_gc() -> None:
    if _GC_PAUSED:
        _GC_PAUSED.clear()
        gc.enable()


def _run_distributed(p: ParsedArgs) -> int:
    """`--distributed` (tools/driver.py::run_distributed): rank 0 is the coordinator and runs the script; ranks >= 1
    are workers that never parse it; a single rank warns and runs the pipelines in-process."""
    from daphnec.tools.driver import run_distributed

    return run_distributed(lambda: _run(p), _err)


if __name__ == "__main__":
    sys.exit(main())
