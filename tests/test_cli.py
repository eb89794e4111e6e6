"""The daphnec command line, run as a real subprocess: exit codes and messages (DAPHNE's StatusCode).

0 success, 1 command line / config / script argument / parse error, 2 compile error, 3 execution error.
Also unit tests of the JSON user config (`runtime/config.py`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
HELLO = "examples/hello.daph"
MISSING = "no/such/script.daph"


def run(*args: str, cwd: Path = REPO, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return subprocess.run(
        [sys.executable, "-m", "daphnec.tools.daphnec", *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def write_config(tmp_path: Path, content: str | dict) -> str:
    p = tmp_path / "cfg.json"
    p.write_text(content if isinstance(content, str) else json.dumps(content))
    return str(p)


# --- version and help ----------------------------------------------------------------------------------------------


def test_version():
    r = run("--version")
    assert r.returncode == 0
    assert r.stdout == "daphnec 0.1.0\n"
    assert r.stderr == ""


def test_version_matches_pyproject():
    meta = tomllib.loads((REPO / "pyproject.toml").read_text())
    r = run("--version")
    assert r.stdout.strip() == f"daphnec {meta['project']['version']}"


def test_console_script_version():
    exe = Path(sys.executable).parent / "daphnec"
    found = str(exe) if exe.exists() else shutil.which("daphnec")
    if not found:
        pytest.skip("daphnec is not installed as a console script in this environment")
    r = subprocess.run([found, "--version"], capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
    assert r.returncode == 0
    assert r.stdout == "daphnec 0.1.0\n"


def test_help_groups_and_options():
    r = run("--help")
    assert r.returncode == 0
    assert r.stderr == ""
    out = r.stdout
    assert "USAGE: daphnec [options] script [arguments]" in out
    for group in (
        "General options:",
        "Compiler options:",
        "Scheduling options (vectorized engine):",
        "Distributed options:",
        "Debugging options:",
    ):
        assert group in out
    # groups appear in this order
    positions = [out.index(g) for g in ("General", "Compiler", "Scheduling", "Distributed", "Debugging")]
    assert positions == sorted(positions)
    for opt in (
        "--vec",
        "--vec-restricted",
        "--num-threads=<int>",
        "--grain-size=<int>",
        "--phy-batch-size=<bytes>",
        "--partitioning=<value>",
        "--queue_layout=<value>",
        "--victim_selection=<value>",
        "--pin-workers",
        "--hyperthreading",
        "--pre-partition",
        "--debug-mt",
        "--select-matrix-repr",
        "--select-matrix-representations",
        "--timing",
        "--explain=<value>",
        "--distributed",
        "--dist_backend=<value>",
        "--max-distr-chunk-size=<bytes>",
        "--args=",
        "--config=<filename>",
        "--version",
        "--statistics",
        "--no-obj-ref-mgnt",
        "--no-ipa-const-propa",
        "--no-phy-op-selection",
        "--columnar",
        "--cuda",
        "--codegen",
        "--libdir",
        "--debug",
        "--no-kernel-cache",
    ):
        assert opt in out, opt
    for value in ("=STATIC", "=AUTO", "=ADAPTIVE", "=PERCPU", "=RANDOMPRI", "=sync-gRPC", "=property_inference"):
        assert value in out, value
    assert "takes effect with the vectorized engine" in out


def test_help_short_and_single_dash():
    assert run("-h").stdout == run("--help").stdout
    assert run("-help").returncode == 0


def test_help_is_fast_and_does_not_import_compiler():
    # --help must not import the compiler (nor numpy, xDSL or lark): checked in a fresh interpreter
    code = (
        "import sys, daphnec.tools.daphnec as d; d.main(['--help']);"
        "heavy = ('numpy', 'xdsl', 'daphnec.tools.driver', 'daphnec.compiler.driver', 'lark');"
        "bad = [m for m in heavy if m in sys.modules];"
        "sys.exit(1 if bad else 0)"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def test_version_and_the_driver_import_nothing_heavy():
    # --version imports nothing heavy either; importing the driver (and what a program-cache hit needs before it
    # loads the program) imports neither xDSL nor the frontend nor the compiler: those come with compiling.
    code = (
        "import sys, daphnec.tools.daphnec as d; d.main(['--version']);"
        "import daphnec.tools.driver, daphnec.compiler.host.program_cache, daphnec.dialects.errors;"
        "heavy = ('numpy', 'xdsl', 'lark', 'daphnec.frontend', 'daphnec.compiler.host.generator',"
        " 'daphnec.compiler.pipeline', 'daphnec.dialects.ops');"
        "bad = [m for m in heavy if m in sys.modules];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_garbage_collector_is_off_during_start_up_and_on_for_the_script(tmp_path):
    """The CLI pauses the cyclic garbage collector while it imports and compiles (start-up cost) and turns it back
    on before the script's first statement, and after the run; a caller that had it off keeps it off."""
    script = tmp_path / "s.daph"
    script.write_text('print("x");\n')
    code = (
        "import gc, sys, daphnec.tools.daphnec as d, daphnec.tools.driver as drv\n"
        "seen = []\n"
        "run = drv.Program.run\n"
        "drv.Program.run = lambda self: (seen.append(gc.isenabled()), run(self))[1]\n"
        "compile_script = drv.compile_script\n"
        "def spy(*a, **k):\n"
        "    seen.append(gc.isenabled())\n"
        "    return compile_script(*a, **k)\n"
        "drv.compile_script = spy\n"
        f"assert d.main(['--no-kernel-cache', {str(script)!r}]) == 0\n"
        "after = gc.isenabled()\n"
        "gc.disable()\n"
        f"assert d.main(['--no-kernel-cache', {str(script)!r}]) == 0\n"
        "print(seen, after, gc.isenabled())\n"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == "[False, True, False, False] True False"


# --- command-line errors (exit 1) --------------------------------------------------------------------------------


def test_no_script():
    r = run()
    assert r.returncode == 1
    assert "Not enough positional command line arguments specified!" in r.stderr


def test_unknown_option():
    r = run("--foo", HELLO)
    assert r.returncode == 1
    assert "daphnec: Unknown command line argument '--foo'.  Try: 'daphnec --help'" in r.stderr


def test_unknown_option_suggestion():
    r = run("--vecc", HELLO)
    assert r.returncode == 1
    assert "Did you mean '--vec'?" in r.stderr


@pytest.mark.parametrize(("flag", "meant"), [("--GSS", "--partitioning=GSS"), ("--PERCPU", "--queue_layout=PERCPU")])
def test_a_choice_given_as_an_option_names_its_option(flag, meant):
    """DAPHNE's doc/SchedulingOptions.md shows `--GSS`, the code takes `--partitioning=GSS`."""
    r = run(flag, HELLO)
    assert r.returncode == 1
    assert f"Did you mean '{meant}'?" in r.stderr


@pytest.mark.parametrize(
    ("arg", "hint"),
    [("s=hi", 'write s=\\"hi\\" on the command line'), ("s=1+1", "invalid literal value for argument 's': 1+1")],
)
def test_a_script_argument_that_is_no_literal(tmp_path, arg, hint):
    script = tmp_path / "s.daph"
    script.write_text("print($s);\n")
    r = run(str(script), arg)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.startswith(f"{script}:1:7: error: invalid literal value for argument 's': ") and hint in r.stderr
    assert ("quotes" in r.stderr) == ("hi" in arg)


@pytest.mark.parametrize(
    "option,valid",
    [
        ("--partitioning", "STATIC, SS, GSS, TSS, FAC2, TFSS, FISS, VISS, PLS, MSTATIC, MFSC, PSS, AUTO, ADAPTIVE"),
        ("--queue_layout", "CENTRALIZED, PERGROUP, PERCPU"),
        ("--victim_selection", "SEQ, SEQPRI, RANDOM, RANDOMPRI"),
        ("--dist_backend", "MPI, sync-gRPC, async-gRPC"),
    ],
)
def test_bad_enum_value_lists_valid_values(option, valid):
    r = run(f"{option}=BOGUS", HELLO)
    assert r.returncode == 1
    assert f"for the {option} option: Cannot find option named 'BOGUS'! (valid values: {valid})" in r.stderr


@pytest.mark.parametrize(
    ("arg", "problem"),
    [
        ("--matmul-vec-size-bits=100", "must be 0 (off) or a power of two from 8 to 4096, but is 100"),
        ("--matmul-vec-size-bits=-64", "must be 0 (off) or a power of two from 8 to 4096, but is -64"),
        ("--matmul-vec-size-bits=8192", "must be 0 (off) or a power of two from 8 to 4096, but is 8192"),
        ("--matmul-vec-size-bits=wide", "'wide' value invalid for integer argument!"),
        ("--matmul-fixed-tile-sizes=4,0", "must be 1 to 5 tile sizes of at least 1 (MC,NC,KC[,MR[,NR]]), but is 4,0"),
        ("--matmul-fixed-tile-sizes=1,2,3,4,5,6", "must be 1 to 5 tile sizes of at least 1"),
        ("--matmul-fixed-tile-sizes=4,-2", "'-2' value invalid for uint argument!"),
        ("--matmul-unroll-factor=0", "must be at least 1, but is 0"),
        ("--matmul-unroll-jam-factor=-1", "must be at least 1, but is -1"),
        ("--matmul-num-vec-registers=0", "must be at least 1, but is 0"),
    ],
)
def test_bad_matmul_option_values_are_parse_errors(arg: str, problem: str) -> None:
    """`--matmul-*` values the lowering cannot use (compiler/lowering/lower_matmul_to_loops.py): exit 1, like
    every bad option value, before anything runs."""
    r = run("--codegen", arg, HELLO)
    assert (r.returncode, r.stdout) == (1, "")
    assert f"for the {arg.split('=')[0]} option: {problem}" in r.stderr


@pytest.mark.parametrize(
    ("key", "value"), [("matmul_vec_size_bits", 24), ("matmul_fixed_tile_sizes", []), ("matmul_unroll_factor", 0)]
)
def test_bad_matmul_config_values_are_parse_errors(tmp_path: Path, key: str, value: object) -> None:
    r = run("--codegen", f"--config={write_config(tmp_path, {key: value})}", HELLO)
    assert (r.returncode, r.stdout) == (1, "")
    assert f"config key '{key}': value must be" in r.stderr


def test_enum_value_space_separated_form():
    r = run("--partitioning", "bogus", HELLO)
    assert r.returncode == 1
    assert "Cannot find option named 'bogus'" in r.stderr
    # enum values are case-sensitive, as in DAPHNE
    r = run("--partitioning=gss", HELLO)
    assert r.returncode == 1


def test_bad_integer_value():
    r = run("--num-threads=abc", HELLO)
    assert r.returncode == 1
    assert "for the --num-threads option: 'abc' value invalid for integer argument!" in r.stderr


def test_negative_unsigned_value():
    r = run("--max-distr-chunk-size=-1", HELLO)
    assert r.returncode == 1
    assert "value invalid for uint argument!" in r.stderr


def test_missing_option_value():
    r = run("--num-threads")
    assert r.returncode == 1
    assert "for the --num-threads option: requires a value!" in r.stderr


def test_bad_boolean_flag_value():
    r = run("--vec=maybe", HELLO)
    assert r.returncode == 1
    assert "'maybe' is invalid value for boolean argument! Try 0 or 1" in r.stderr


def test_option_given_twice():
    r = run("--vec", "--vec", HELLO)
    assert r.returncode == 1
    assert "for the --vec option: may only occur zero or one times!" in r.stderr


def test_single_dash_option_is_parsed():
    r = run("-partitioning=BOGUS", HELLO)
    assert r.returncode == 1
    assert "for the --partitioning option" in r.stderr


# --- --explain ---------------------------------------------------------------------------------------------------


def test_explain_unknown_value():
    r = run("--explain=bogus", HELLO)
    assert r.returncode == 1
    assert "for the --explain option: Cannot find option named 'bogus'!" in r.stderr
    assert "parsing, parsing_simplified, sql, property_inference" in r.stderr


def test_explain_one_bad_value_in_list():
    r = run("--explain=parsing,kernelz", HELLO)
    assert r.returncode == 1
    assert "Cannot find option named 'kernelz'" in r.stderr


def test_explain_valid_values_pass_validation():
    # every valid value passes option parsing; the run then stops at the missing script (exit 1, no option error)
    values = (
        "parsing,parsing_simplified,sql,property_inference,columnar,select_matrix_repr,transfer_data_props,"
        "phy_op_selection,type_adaptation,vectorized,obj_ref_mgnt,codegen,kernels,llvm,"
        "mlir_codegen_sparsity_exploiting_op_fusion,mlir_codegen_daphneir_to_mlir,mlir_codegen_mlir_specific"
    )
    r = run(f"--explain={values}", "--explain", "mlir_codegen", MISSING)
    assert r.returncode == 1
    assert "option" not in r.stderr
    assert f"could not open file '{MISSING}'" in r.stderr


# --- script arguments ------------------------------------------------------------------------------------------------


def test_option_after_script_is_a_script_argument():
    r = run(HELLO, "--vec")
    assert r.returncode == 1
    assert (
        "script arguments must be specified as name=value, but found '--vec' ('--vec' is a daphnec option: "
        "options go before the script, `daphnec --vec script.daph`)" in r.stderr
    )
    r = run(HELLO, "--num-threads=2")
    assert r.returncode == 1 and "options go before the script, `daphnec --num-threads=2 script.daph`" in r.stderr
    assert "options go before" not in run(HELLO, "--bogus").stderr  # not an option: no such hint


def test_duplicate_script_argument():
    r = run(HELLO, "x=1", "x=2")
    assert r.returncode == 1
    assert "script argument: 'x' was provided more than once" in r.stderr


def test_duplicate_between_args_option_and_positional():
    r = run("--args", "y=1,x=1", HELLO, "x=2")
    assert r.returncode == 1
    assert "script argument: 'x' was provided more than once" in r.stderr


def test_malformed_args_option():
    r = run("--args=x", HELLO)
    assert r.returncode == 1
    assert "script arguments must be specified as name=value, but found 'x'" in r.stderr


def test_empty_script_argument_name():
    r = run(HELLO, "=3")
    assert r.returncode == 1
    assert "script argument '=3' has an empty name" in r.stderr


def test_script_argument_name_not_identifier():
    r = run(HELLO, "1x=3")
    assert r.returncode == 1
    assert "script argument name '1x' in '1x=3' is not a valid identifier" in r.stderr


def test_script_argument_value_may_contain_equals_sign():
    # only the first `=` splits; the run then fails only because the script does not exist
    r = run(MISSING, "s=a=b")
    assert r.returncode == 1
    assert "script argument" not in r.stderr


# --- script file ---------------------------------------------------------------------------------------------------


def test_missing_script_file():
    r = run(MISSING)
    assert r.returncode == 1
    assert r.stderr.strip() == f"error: could not open file '{MISSING}' for parsing: No such file or directory"
    assert r.stdout == ""


def test_double_dash_ends_options():
    r = run("--", "--vec")
    assert r.returncode == 1
    assert "could not open file '--vec' for parsing" in r.stderr


# --- user config ---------------------------------------------------------------------------------------------------


def test_config_unknown_key(tmp_path):
    cfg = write_config(tmp_path, {"use_vectorized_exec": True, "foo": 1})
    r = run(f"--config={cfg}", HELLO)
    assert r.returncode == 1
    assert f"error: while reading user config: Unexpected key 'foo' in '{cfg}' file" in r.stderr


def test_config_bad_json(tmp_path):
    cfg = write_config(tmp_path, '{"use_vectorized_exec": true,,}')
    r = run("--config", cfg, HELLO)  # space-separated form
    assert r.returncode == 1
    assert "error: while reading user config: parse error at line 1" in r.stderr


def test_config_auto_partitioning_rejected(tmp_path):
    cfg = write_config(tmp_path, {"taskPartitioningScheme": "AUTO"})
    r = run(f"--config={cfg}", HELLO)
    assert r.returncode == 1
    assert 'Invalid value for enum "SelfSchedulingScheme": "AUTO"' in r.stderr


def test_config_wrong_type(tmp_path):
    cfg = write_config(tmp_path, {"use_vectorized_exec": "yes"})
    r = run(f"--config={cfg}", HELLO)
    assert r.returncode == 1
    assert "config key 'use_vectorized_exec': type must be boolean, but is string" in r.stderr


def test_config_valid_file_then_missing_script(tmp_path):
    cfg = write_config(tmp_path, {"numberOfThreads": 2, "taskPartitioningScheme": "GSS", "explain_parsing": False})
    r = run(f"--config={cfg}", MISSING)
    assert r.returncode == 1
    assert "config" not in r.stderr


def test_nonexistent_config_is_warned_about():
    r = run("--config=/nonexistent/daphnec-config.json", MISSING)
    assert r.returncode == 1
    assert "warning: the user config file '/nonexistent/daphnec-config.json' does not exist" in r.stderr
    assert f"could not open file '{MISSING}'" in r.stderr


# --- unsupported options -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("flag", ["--cuda", "--mlir-hybrid-codegen", "--fpgaopencl"])
def test_never_supported_options_warn(flag):
    r = run(flag, MISSING)
    assert r.returncode == 1
    warnings = [line for line in r.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1
    assert warnings[0].startswith("daphnec: warning: --")


def test_accepted_options_do_not_warn():
    r = run(
        "--vec",
        "--vec-restricted",
        "--num-threads=2",
        "--grain-size",
        "4",
        "--phy-batch-size=4096",
        "--partitioning=AUTO",
        "--queue_layout=PERCPU",
        "--victim_selection=SEQPRI",
        "--pin-workers",
        "--hyperthreading",
        "--pre-partition",
        "--debug-mt",
        "--select-matrix-representations",
        "--timing",
        "--distributed",
        "--dist_backend=MPI",
        "--max-distr-chunk-size=1024",
        "--statistics",
        "--no-obj-ref-mgnt",
        "--no-ipa-const-propa",
        "--no-phy-op-selection",
        "--columnar",
        "--libdir=/tmp",
        "--debug",
        "--no-kernel-cache",
        "--codegen",
        "--matmul-tile",
        "--matmul-fixed-tile-sizes=4,4",
        MISSING,
    )
    assert r.returncode == 1
    assert "warning" not in r.stderr
    assert r.stderr.strip().startswith("error: could not open file")


# --- end to end (needs the compiler driver) ------------------------------------------------------------------------


def test_hello_end_to_end():
    r = run(HELLO)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == "Hello, DAPHNE!"


# --- in-process: config parsing and CLI helpers ---------------------------------------------------------------------


def test_config_defaults():
    from daphnec.runtime.config import DaphneConfig

    c = DaphneConfig()
    assert c.use_vectorized_exec is False
    assert c.taskPartitioningScheme == "STATIC"
    assert c.numberOfThreads == -1
    assert c.minimumTaskSize == 1
    assert c.phyBatchSize == 98304
    assert c.sparsity_threshold == 0.25
    assert c.queueSetupScheme == "CENTRALIZED"
    assert c.victimSelection == "SEQ"
    assert c.distributedBackEndSetup == "MPI"
    assert c.max_distr_chunk_size == 2**31 - 1 - 1024
    assert c.use_obj_ref_mgnt and c.use_ipa_const_propa and c.use_phy_op_selection
    assert c.explain == [] and c.args == {}


def test_config_aliases():
    from daphnec.runtime.config import DaphneConfig

    c = DaphneConfig()
    c.grain_size = 0
    assert c.minimumTaskSize == 0 and c.grain_size == 1  # <= 0 acts as 1
    c.num_threads = 3
    assert c.numberOfThreads == 3
    c.vec_restricted = True
    assert c.use_vectorized_restricted
    assert c.queue_layout == "CENTRALIZED" and c.dist_backend == "MPI"


def test_config_full_file(tmp_path):
    from daphnec.runtime.config import load_user_config

    path = write_config(
        tmp_path,
        {
            "use_vectorized_exec": True,
            "numberOfThreads": 4,
            "minimumTaskSize": 2.9,
            "phyBatchSize": 1024,
            "taskPartitioningScheme": "FAC2",
            "sparsity_threshold": 0.5,
            "explain_parsing": True,
            "explain_kernels": True,
            "explain_mlir_codegen": True,
            "daphnedsl_import_paths": {"default_dirs": ["lib"], "alg": ["a", "b"]},
            "logging": [
                {"log-level-limit": "INFO"},
                {"name": "default", "filename": "f", "level": "warn", "format": "%v"},
            ],
            "libdir": "/x",
        },
    )
    c = load_user_config(path)
    assert c.use_vectorized_exec and c.numberOfThreads == 4 and c.minimumTaskSize == 2
    assert c.phyBatchSize == 1024 and c.taskPartitioningScheme == "FAC2" and c.sparsity_threshold == 0.5
    assert c.explain == ["parsing", "codegen", "kernels"]  # pipeline order
    assert c.explains("mlir_codegen")
    assert c.daphnedsl_import_paths == {"default_dirs": ["lib"], "alg": ["a", "b"]}
    assert c.log_level_limit == "info" and c.logging[0]["name"] == "default"
    assert c.libdir == "/x"


@pytest.mark.parametrize(
    "content,fragment",
    [
        ({"numberOfThreads": "4"}, "config key 'numberOfThreads': type must be number, but is string"),
        ({"daphnedsl_import_paths": {"a": "dir"}}, "type must be array, but is string"),
        ({"taskPartitioningScheme": "static"}, "Invalid value for enum"),
        ({"taskPartitioningScheme": 1}, "Invalid value for enum"),
        ({"logging": [{"name": "x"}]}, "key 'filename' not found"),
        ([1, 2], "must be a JSON object"),
        ("", "parse error at line 1, column 1"),
        ('{"sparsity_threshold": NaN}', "parse error"),
    ],
)
def test_config_errors_in_process(tmp_path, content, fragment):
    from daphnec.runtime.config import ConfigError, load_user_config

    path = write_config(tmp_path, content if isinstance(content, str) else json.dumps(content))
    with pytest.raises(ConfigError) as e:
        load_user_config(path)
    assert fragment in e.value.message


def test_one_option_table_gives_parser_help_config_and_json_keys():
    from dataclasses import fields

    import daphnec.runtime.config as rc
    import daphnec.runtime.options as spec
    import daphnec.tools.daphnec as cli

    rows = spec.OPTIONS
    assert set(cli._BY_NAME) == {n for o in rows if o.cli for n in (o.cli, *o.aliases)}
    assert [f.name for f in fields(rc.DaphneConfig)] == [o.field for o in rows if o.field]
    explain_keys = {f"explain_{v}" for v in (*spec.EXPLAIN_VALUES, *spec.EXPLAIN_ALIASES)}
    assert set(rc.CONFIG_KEYS) == {o.field for o in rows if o.json and o.kind != "explain"} | explain_keys
    text = cli.help_text()
    assert all(f"  --{o.cli}" in text for o in rows if o.cli)
    assert all(o.group == "file" for o in rows if o.cli is None)  # not a command-line option: not in --help
    assert rc.DaphneConfig().to_dict() == {o.field: list(o.default) if isinstance(o.default, tuple) else o.default
                                          for o in rows if o.field}  # fmt: skip
    assert "AUTO" not in spec.CONFIG_PARTITIONING_SCHEMES and "AUTO" in spec.PARTITIONING_SCHEMES


def test_the_parser_records_which_options_were_given():
    import daphnec.tools.daphnec as cli

    p = cli.parse_command_line(["--num-threads=0", "--no-obj-ref-mgnt=false", "--explain=llvm", "s.daph", "--vec"])
    assert p.given == {"num_threads", "no_obj_ref_mgnt", "explain"}
    assert p.values["num_threads"] == 0 and p.values["no_obj_ref_mgnt"] is False and p.script_args == ["--vec"]


def test_cli_flags_overwrite_config_file(tmp_path):
    import daphnec.tools.daphnec as cli

    path = write_config(
        tmp_path,
        {
            "use_vectorized_exec": True,
            "numberOfThreads": 7,
            "minimumTaskSize": 5,
            "taskPartitioningScheme": "GSS",
            "explain_sql": True,
        },
    )
    # An option given on the command line wins, otherwise the config file, otherwise the default.
    c = cli.build_config(cli.parse_command_line([f"--config={path}", "--explain=llvm", "s.daph"]))
    assert c.use_vectorized_exec is True
    assert c.taskPartitioningScheme == "GSS" and c.minimumTaskSize == 5
    assert c.numberOfThreads == 7
    assert c.explain == ["sql", "llvm"]
    argv = [f"--config={path}", "--num-threads", "3", "--vec=false", "--partitioning=TSS", "s.daph"]
    c = cli.build_config(cli.parse_command_line(argv))
    assert c.numberOfThreads == 3 and c.use_vectorized_exec is False and c.taskPartitioningScheme == "TSS"
    assert c.minimumTaskSize == 5
    c = cli.build_config(cli.parse_command_line([f"--config={path}", "--num-threads=0", "s.daph"]))
    assert c.numberOfThreads == 7  # 0 keeps the file's value (DAPHNE: 0 means "not set")


def test_config_file_settings_reach_the_engine(tmp_path):
    """`use_vectorized_exec` from the config file vectorizes the script (visible with --explain=vectorized)."""
    path = write_config(tmp_path, {"use_vectorized_exec": True})
    script = tmp_path / "s.daph"
    # rows known only at run time: the vectorizer's cost model keeps known small matrices plain
    script.write_text("X = rand(100 + as.si64(now() % 1), 4, 1.0, 1.0, 1.0, 7);\nprint(sum(X + 1));\n")
    r = run(f"--config={path}", "--explain=vectorized", str(script))
    assert r.returncode == 0 and r.stdout == "800\n"
    assert "daphne.vectorizedPipeline" in r.stderr


def test_timing_json_format():
    import daphnec.tools.daphnec as cli

    line = cli.timing_json(0.0123456789, 1.5e-05, 2.0, 1234567.0, 0.1)
    assert line == (
        '{"startup_seconds": 0.0123457, "parsing_seconds": 1.5e-05, "compilation_seconds": 2, '
        '"execution_seconds": 1.23457e+06, "total_seconds": 0.1}'
    )
    assert re.fullmatch(r"\{.*\}", line)
