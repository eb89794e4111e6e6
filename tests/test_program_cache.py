"""The whole-program cache (compiler/host/program_cache.py), observed from real `daphnec` processes.

A second run of an unchanged script loads its program instead of compiling it (without importing xDSL), prints
exactly what a compiled run prints (errors included), and any change of an input (the script, an imported file, a
`.meta` file, an import search result, script arguments, flags, the user config, daphnec's environment variables,
daphnec's own code) compiles again. Concurrent runs leave a consistent cache; damaged or stale entries are ignored.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "tests" / "scripts"
FIVE = ROOT / "tests" / "jit" / "scripts" / "five_pipelines.daph"


def _signature() -> str:
    """daphnec's code signature now (part of every key)."""
    from daphnec.compiler.host import program_cache

    program_cache._CODE_SIGNATURE = None
    return program_cache.code_signature()


class Cache:
    """An isolated kernel + program cache and its event log."""

    def __init__(self, tmp: Path):
        self.dir = tmp / "cache"
        self.programs = tmp / "cache-programs"
        self.log = tmp / "program-cache.log"
        self.sig = self.prev_sig = ""

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("DAPHNEC_")}
        env.update(DAPHNEC_CACHE_DIR=str(self.dir), DAPHNEC_PROGRAM_CACHE_LOG=str(self.log), **extra)
        return env

    def run(
        self, *args: str, cwd: Path = ROOT, python: tuple[str, ...] = (), **env: str
    ) -> subprocess.CompletedProcess[str]:
        if self.log.exists():
            self.log.unlink()
        self.prev_sig, self.sig = self.sig, _signature()
        return subprocess.run(
            [sys.executable, *python, "-m", "daphnec.tools.daphnec", *args],
            capture_output=True,
            text=True,
            cwd=cwd,
            env=self.env(**env),
            timeout=300,
        )

    def hit(self, *args: str, reset: Path | None = None, **kw: object) -> subprocess.CompletedProcess[str]:
        """`run` where a hit is expected. When daphnec's own sources changed since the previous run (other sessions
        editing the tree while the tests run), the key changed with them: the run compiled, so run once more."""
        res = self.run(*args, **kw)  # type: ignore[arg-type]
        if self.events() != ["hit"] and (self.prev_sig != self.sig or _signature() != self.sig):
            if reset is not None and reset.exists():
                reset.unlink()
            res = self.run(*args, **kw)  # type: ignore[arg-type]
        return res

    def events(self) -> list[str]:
        return [line.split()[0] for line in self.log.read_text().splitlines()] if self.log.exists() else []

    def entries(self) -> list[str]:
        return sorted(p.name for p in self.programs.iterdir()) if self.programs.exists() else []


@pytest.fixture
def cache(tmp_path: Path) -> Cache:
    return Cache(tmp_path)


def same(a: subprocess.CompletedProcess[str], b: subprocess.CompletedProcess[str]) -> bool:
    return (a.returncode, a.stdout, a.stderr) == (b.returncode, b.stdout, b.stderr)


# ------------------------------------------------------------------------------------------------------------- hits


@pytest.mark.parametrize("mode", [[], ["--vec", "--vec-min-cells=0"]], ids=["plain", "vec"])
def test_second_run_is_a_hit_with_identical_output(cache: Cache, mode: list[str]) -> None:
    first = cache.run(*mode, str(FIVE))
    assert first.returncode == 0 and first.stderr == ""
    assert cache.events() == ["miss", "stored"]
    second = cache.hit(*mode, str(FIVE))
    assert cache.events() == ["hit"]
    assert same(first, second)
    assert second.stdout == cache.run("--no-kernel-cache", *mode, str(FIVE)).stdout


def test_a_hit_imports_neither_xdsl_nor_the_compiler(cache: Cache) -> None:
    assert cache.run("--vec", "--vec-min-cells=0", str(FIVE)).returncode == 0
    res = cache.hit("--vec", "--vec-min-cells=0", str(FIVE), python=("-X", "importtime"))
    assert cache.events() == ["hit"]
    modules = {line.split("|")[-1].strip() for line in res.stderr.splitlines() if line.startswith("import time:")}
    heavy = sorted(
        m
        for m in modules
        if m.split(".")[0] in ("xdsl", "lark")
        or m.startswith("daphnec.frontend")
        or m
        in (
            "daphnec.compiler.host.generator",
            "daphnec.compiler.pipeline",
            "daphnec.compiler.backend.jit",
            "daphnec.dialects.daphne",
        )
    )
    assert heavy == []
    assert "llvmlite.binding" in modules  # the native kernels are loaded from the kernel cache


HELLO = ROOT / "examples" / "hello.daph"
# Libraries a cached hello.daph never needs (start-up goal, issue 16): numpy is the runtime's values; the rest
# would cost 10-300 ms of imports each. llvmlite only when the program has native kernels (`--vec` here).
HEAVY_LIBRARIES = ("scipy", "pyarrow", "numba", "lark", "xdsl", "pandas", "mpi4py", "fast_matrix_market")
LIGHT_COMPILER = (
    "daphnec.compiler.host",
    "daphnec.compiler.host.program_cache",
    "daphnec.compiler.host.program",
)


# --vec-min-cells=0: hello's matrices are too small for the vectorizer's cost model, which would keep them plain
@pytest.mark.parametrize("mode", [[], ["--vec", "--vec-min-cells=0"]], ids=["plain", "vec"])
def test_a_cached_hello_imports_only_what_it_runs(cache: Cache, mode: list[str]) -> None:
    """A hit on examples/hello.daph imports none of the heavy libraries, nothing of the frontend, the dialect (but
    its plain-Python tables) or the compiler but the program cache itself, and (without native kernels) no
    vectorized engine, scheduler or llvmlite. Import lists, not timings: the timings are bench/startup_bench.py's."""
    assert cache.run(*mode, str(HELLO)).returncode == 0
    res = cache.hit(*mode, str(HELLO), python=("-X", "importtime"))
    assert res.returncode == 0 and cache.events() == ["hit"]
    modules = {line.split("|")[-1].strip() for line in res.stderr.splitlines() if line.startswith("import time:")}
    heavy = {m for m in modules if m.split(".")[0] in HEAVY_LIBRARIES}
    heavy |= {m for m in modules if m.startswith(("daphnec.frontend", "daphnec.compiler.")) and m not in LIGHT_COMPILER}
    pure_tables = ("errors", "value_types", "op_kinds")  # the dialect's plain-Python modules the runtime reads
    heavy |= {m for m in modules if m.startswith("daphnec.dialects.") and m.split(".")[2] not in pure_tables}
    if not mode:
        plain_only = ("llvmlite", "daphnec.runtime.vectorized.pipeline", "daphnec.runtime.scheduling.workers")
        heavy |= {m for m in modules if m.startswith(plain_only)}
        # standard-library modules that numpy does not import and a plain hit does not need (issue 25 item 11:
        # OpenSSL's hashes, JSON, signal's enums, the scheduler's tables)
        heavy |= modules & {"hashlib", "_hashlib", "secrets", "json", "signal", "random", "logging"}
    assert sorted(heavy) == []
    assert "numpy" in modules and ("llvmlite.binding" in modules) == bool(mode)


def test_a_hit_logs_every_kernel_as_loaded(cache: Cache) -> None:
    jit_log = cache.dir.parent / "jit.log"
    assert cache.run("--vec", "--vec-min-cells=0", str(FIVE), DAPHNEC_JIT_LOG=str(jit_log)).returncode == 0
    compiled = sorted(line.split()[1] for line in jit_log.read_text().splitlines())
    jit_log.unlink()
    assert (
        cache.hit("--vec", "--vec-min-cells=0", str(FIVE), reset=jit_log, DAPHNEC_JIT_LOG=str(jit_log)).returncode == 0
    )
    assert cache.events() == ["hit"]
    loaded = [line.split()[:2] for line in jit_log.read_text().splitlines()]
    assert {e for e, _ in loaded} == {"loaded"} and sorted(k for _, k in loaded) == compiled


SCRIPT_CASES = sorted(p for p in SCRIPTS.rglob("*.daph") if p.with_suffix(".txt").exists())


@pytest.fixture(scope="module")
def shared_caches(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("shared")


@pytest.mark.parametrize("mode", [[], ["--vec", "--vec-min-cells=0"]], ids=["plain", "vec"])
@pytest.mark.parametrize("script", SCRIPT_CASES, ids=[str(p.relative_to(SCRIPTS)) for p in SCRIPT_CASES])
def test_every_script_test_program_is_cacheable_and_prints_the_same(
    script: Path,
    mode: list[str],
    shared_caches: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """In-process (fast): every script test's compiled program is stored, loaded back, and prints its expected
    output (every kernel closure, constant and native kernel of the corpus survives the round trip)."""
    from daphnec.compiler.host import program_cache
    from daphnec.runtime import cache_files
    from daphnec.tools.daphnec import build_config, parse_command_line, parse_script_args
    from daphnec.tools.driver import compile_with_inputs

    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("DAPHNEC_CACHE_DIR", str(shared_caches / "kernels"))
    monkeypatch.setenv("DAPHNEC_PROGRAM_CACHE_DIR", str(shared_caches / "programs"))
    args_file, sargs_file = script.with_suffix(".args"), script.with_suffix(".scriptargs")
    parsed = parse_command_line([*mode, *(args_file.read_text().split() if args_file.exists() else []), str(script)])
    cfg = build_config(parsed)
    script_args: dict[str, str] = {}
    parse_script_args(sargs_file.read_text().split() if sargs_file.exists() else [], script_args)
    key = program_cache.lookup_key(str(script), script_args, cfg)
    cache_files.OBJECT_CODE.enabled = True  # as the CLI does; an earlier in-process run may have turned it off
    compiled, inputs = compile_with_inputs(str(script), script_args, cfg, {})
    assert list(inputs.files)[:1] == [str(script)]
    assert program_cache.store(key, inputs, compiled.host)
    loaded = program_cache.load(key)
    assert loaded is not None
    capsys.readouterr()
    loaded.run()
    assert capsys.readouterr().out == script.with_suffix(".txt").read_text()


def test_a_program_stored_under_another_kernel_cache_folder_loads_its_kernels(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A kernel this process loaded while another kernel cache folder was configured is reused without being
    compiled again, so it was never written to the current folder; storing a program that uses it writes it there
    (else the stored program could never load: the order-dependent failure of the corpus test above)."""
    from daphnec.compiler.host import program_cache
    from daphnec.runtime import cache_files
    from daphnec.tools.daphnec import build_config, parse_command_line
    from daphnec.tools.driver import compile_with_inputs

    monkeypatch.chdir(ROOT)
    cfg = build_config(parse_command_line(["--vec", "--vec-min-cells=0", str(FIVE)]))
    cache_files.OBJECT_CODE.enabled = True
    for folder in ("first", "second"):
        monkeypatch.setenv("DAPHNEC_CACHE_DIR", str(tmp_path / folder))
        monkeypatch.setenv("DAPHNEC_PROGRAM_CACHE_DIR", str(tmp_path / (folder + "-programs")))
        compiled, inputs = compile_with_inputs(str(FIVE), {}, cfg, {})
        key = program_cache.lookup_key(str(FIVE), {}, cfg)
        assert program_cache.store(key, inputs, compiled.host)
    assert list((tmp_path / "second").glob("*.o")), "the reused kernels were written to the second folder"
    loaded = program_cache.load(key)
    assert loaded is not None
    capsys.readouterr()
    loaded.run()
    from_cache = capsys.readouterr().out
    compiled.host.run()
    assert from_cache and from_cache == capsys.readouterr().out


def test_run_time_only_flags_still_hit(cache: Cache) -> None:
    assert cache.run("--vec", "--vec-min-cells=0", str(FIVE)).returncode == 0
    res = cache.hit("--vec", "--vec-min-cells=0", "--num-threads=1", "--partitioning=GSS", "--timing", str(FIVE))
    assert cache.events() == ["hit"] and res.returncode == 0
    timing = json.loads(res.stderr.strip().splitlines()[-1])
    assert timing["parsing_seconds"] == 0


# ----------------------------------------------------------------------------------------------------- invalidation


def test_changing_the_script_compiles_again(cache: Cache, tmp_path: Path) -> None:
    s = tmp_path / "s.daph"
    s.write_text("print(1);\n")
    assert cache.run(str(s)).stdout == "1\n"
    s.write_text("print(2);\n")
    assert cache.run(str(s)).stdout == "2\n"
    assert cache.events() == ["miss", "stored"]
    assert cache.hit(str(s)).stdout == "2\n" and cache.events() == ["hit"]


def test_changing_an_imported_file_compiles_again(cache: Cache, tmp_path: Path) -> None:
    (tmp_path / "lib.daph").write_text("def f(x) { return x + 1; }\n")
    s = tmp_path / "s.daph"
    s.write_text('import "lib.daph";\nprint(lib.f(1));\n')
    assert cache.run(str(s)).stdout == "2\n"
    assert cache.hit(str(s)).stdout == "2\n" and cache.events() == ["hit"]
    (tmp_path / "lib.daph").write_text("def f(x) { return x + 10; }\n")
    assert cache.run(str(s)).stdout == "11\n"
    assert cache.events()[0] == "miss"


def test_an_import_found_elsewhere_compiles_again(cache: Cache, tmp_path: Path) -> None:
    """The import search (script folder, then the config's import paths) is re-checked: a file that appears beside
    the script makes the import ambiguous (DAPHNE's rule, doc/DaphneDSL/Imports.md), which the cached program must
    not hide; once the file in the default folder is gone, the new one is imported."""
    other = tmp_path / "other"
    other.mkdir()
    (other / "lib.daph").write_text("def f() { return 1; }\n")
    (tmp_path / "cfg.json").write_text(json.dumps({"daphnedsl_import_paths": {"default_dirs": [str(other)]}}))
    s = tmp_path / "s.daph"
    s.write_text('import "lib.daph";\nprint(lib.f());\n')
    cfg = f"--config={tmp_path / 'cfg.json'}"
    assert cache.run(cfg, str(s)).stdout == "1\n"
    assert cache.hit(cfg, str(s)).stdout == "1\n" and cache.events() == ["hit"]
    (tmp_path / "lib.daph").write_text("def f() { return 2; }\n")
    res = cache.run(cfg, str(s))
    assert res.returncode == 1 and "Ambiguous import: lib.daph" in res.stderr
    (other / "lib.daph").unlink()
    assert cache.run(cfg, str(s)).stdout == "2\n"
    assert cache.events()[0] == "miss"


def test_a_new_file_in_an_imported_library_compiles_again(cache: Cache, tmp_path: Path) -> None:
    """`import "lib";` imports every file of a library folder: a file added to the folder changes the program."""
    lib = tmp_path / "algos"
    lib.mkdir()
    (lib / "a.daph").write_text("def f() { return 1; }\n")
    (tmp_path / "cfg.json").write_text(json.dumps({"daphnedsl_import_paths": {"lib": [str(lib)]}}))
    s = tmp_path / "s.daph"
    s.write_text('import "lib";\nprint(lib.a.f());\n')
    cfg = f"--config={tmp_path / 'cfg.json'}"
    assert cache.run(cfg, str(s)).stdout == "1\n"
    assert cache.hit(cfg, str(s)).stdout == "1\n" and cache.events() == ["hit"]
    (lib / "b.daph").write_text('print("b loaded");\n')
    assert cache.run(cfg, str(s)).stdout == "b loaded\n1\n"
    assert cache.events()[0] == "miss"


def test_the_driver_reports_what_the_program_depends_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The inputs come from the frontend (the scripts it parsed, each import-search candidate it tried) and the
    driver (the `.meta` of each read), each with the digest of its contents when compiled; nothing else."""
    import hashlib

    from daphnec.runtime.config import DaphneConfig
    from daphnec.tools.driver import compile_with_inputs

    def digest(p: Path) -> str:
        return hashlib.sha256(p.read_bytes()).hexdigest()

    lib_dir = tmp_path / "lib"
    lib_dir.mkdir()
    (lib_dir / "util.daph").write_text("def twice(x) { return 2 * x; }\n")
    (tmp_path / "m.csv").write_text("1,2\n")
    (tmp_path / "m.csv.meta").write_text(json.dumps({"numRows": 1, "numCols": 2, "valueType": "f64"}))
    s = tmp_path / "s.daph"
    s.write_text('import "util.daph";\nX = readMatrix("m.csv");\nprint(util.twice(sum(X)));\n')
    monkeypatch.chdir(tmp_path)
    cfg = DaphneConfig()
    cfg.daphnedsl_import_paths = {"default_dirs": [str(lib_dir)]}
    program, inputs = compile_with_inputs("s.daph", {}, cfg, {})
    assert inputs.files == {
        "s.daph": digest(s),
        str(lib_dir / "util.daph"): digest(lib_dir / "util.daph"),
        "m.csv.meta": digest(tmp_path / "m.csv.meta"),
    }
    assert inputs.probes == {str(tmp_path / "util.daph"): False, str(lib_dir / "util.daph"): True}


def test_changing_a_meta_file_compiles_again(cache: Cache, tmp_path: Path) -> None:
    (tmp_path / "m.csv").write_text("1,2\n3,4\n")
    meta = tmp_path / "m.csv.meta"
    meta.write_text(json.dumps({"numRows": 2, "numCols": 2, "valueType": "f64"}))
    s = tmp_path / "s.daph"
    s.write_text('X = readMatrix("m.csv");\nprint(X);\n')
    first = cache.run(str(s), cwd=tmp_path)
    assert first.returncode == 0 and "double" in first.stdout
    assert same(cache.hit(str(s), cwd=tmp_path), first) and cache.events() == ["hit"]
    meta.write_text(json.dumps({"numRows": 2, "numCols": 2, "valueType": "si64"}))
    res = cache.run(str(s), cwd=tmp_path)
    assert cache.events()[0] == "miss"
    assert res.returncode == 0 and "int64_t" in res.stdout


def test_script_arguments_flags_config_and_environment_are_part_of_the_key(cache: Cache, tmp_path: Path) -> None:
    s = tmp_path / "s.daph"
    s.write_text("print($n * 2);\nprint(sum(fill(1.0, 4, 4) * 2.0));\n")
    assert cache.run(str(s), "n=1").stdout.startswith("2\n")
    assert cache.run(str(s), "n=2").stdout.startswith("4\n")
    assert cache.events() == ["miss", "stored"]
    assert cache.hit("--args", "n=2", str(s)).stdout.startswith("4\n") and cache.events() == ["hit"]
    for variant in (["--vec"], ["--select-matrix-repr"], ["--no-ipa-const-propa"]):
        assert cache.run(*variant, str(s), "n=2").returncode == 0
        assert cache.events() == ["miss", "stored"], variant
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"sparsity_threshold": 0.25}))
    assert cache.hit(f"--config={cfg}", str(s), "n=2").returncode == 0
    assert cache.events() == ["hit"]  # the same effective config as without the file
    cfg.write_text(json.dumps({"sparsity_threshold": 0.5}))
    assert cache.run(f"--config={cfg}", str(s), "n=2").returncode == 0
    assert cache.events() == ["miss", "stored"]
    assert cache.run("--vec", str(s), "n=2", DAPHNEC_NO_NATIVE="1").returncode == 0
    assert cache.events() == ["miss", "stored"]


def test_the_key_covers_daphnecs_own_code(monkeypatch: pytest.MonkeyPatch) -> None:
    from daphnec.compiler.host import program_cache
    from daphnec.runtime.config import DaphneConfig

    key = program_cache.lookup_key("s.daph", {}, DaphneConfig())
    assert program_cache.lookup_key("s.daph", {}, DaphneConfig()) == key
    monkeypatch.setattr(program_cache, "_CODE_SIGNATURE", "something else")
    assert program_cache.lookup_key("s.daph", {}, DaphneConfig()) != key
    monkeypatch.setattr(program_cache, "_CODE_SIGNATURE", None)
    assert program_cache.lookup_key("s.daph", {}, DaphneConfig()) == key
    monkeypatch.setattr(program_cache, "_ROOT", Path("/nonexistent"))  # other sources, other signature
    monkeypatch.setattr(program_cache, "_CODE_SIGNATURE", None)
    assert program_cache.lookup_key("s.daph", {}, DaphneConfig()) != key


def test_a_missing_kernel_compiles_again(cache: Cache) -> None:
    first = cache.run("--vec", "--vec-min-cells=0", str(FIVE))
    victim = sorted(cache.dir.iterdir())[0]
    victim.unlink()
    second = cache.run("--vec", "--vec-min-cells=0", str(FIVE))
    assert cache.events() == ["miss", "stored"]
    assert same(first, second)
    assert cache.hit("--vec", "--vec-min-cells=0", str(FIVE)).stdout == first.stdout and cache.events() == ["hit"]


def test_a_damaged_entry_is_ignored(cache: Cache) -> None:
    first = cache.run(str(FIVE))
    (entry,) = cache.entries()
    path = cache.programs / entry
    path.write_bytes(path.read_bytes()[:-20] + b"\0" * 20)
    assert same(cache.run(str(FIVE)), first) and cache.events() == ["miss", "stored"]
    assert cache.hit(str(FIVE)).stdout == first.stdout and cache.events() == ["hit"]


# ------------------------------------------------------------------------------------------------------------ errors


def test_compile_errors_are_never_cached(cache: Cache, tmp_path: Path) -> None:
    s = tmp_path / "bad.daph"
    s.write_text("x = 1;\nprint(y);\n")
    first = cache.run(str(s))
    assert first.returncode != 0 and "error" in first.stderr
    second = cache.run(str(s))
    assert same(first, second)
    assert cache.events() == ["miss"] and cache.entries() == []


def test_run_time_errors_of_a_cached_program_are_reported_identically(cache: Cache, tmp_path: Path) -> None:
    s = tmp_path / "bad.daph"
    s.write_text('print("before");\nx = aggMin(fill(0, 2, 2));\nprint(5 / x);\n')
    first = cache.run(str(s))
    assert first.returncode == 3 and first.stdout == "before\n"
    assert f"{s}:3:7: error:" in first.stderr and "division by zero" in first.stderr
    second = cache.hit(str(s))
    assert cache.events() == ["hit"]
    assert same(first, second)


# ---------------------------------------------------------------------------------------------- skipping, folders


@pytest.mark.parametrize("flags", [["--explain=parsing"], ["--no-kernel-cache"]])
def test_runs_that_skip_the_cache(cache: Cache, flags: list[str]) -> None:
    for _ in range(2):
        res = cache.run(*flags, str(FIVE))
        assert res.returncode == 0
        assert cache.events() == ["skip"]
    assert cache.entries() == []


def test_program_cache_only_switch(cache: Cache) -> None:
    assert cache.run("--vec", "--vec-min-cells=0", str(FIVE), DAPHNEC_NO_PROGRAM_CACHE="1").returncode == 0
    assert cache.events() == ["skip"] and cache.entries() == []
    assert any(p.suffix == ".o" for p in cache.dir.iterdir())  # the kernel cache still works


def test_folder_setting(cache: Cache, tmp_path: Path) -> None:
    elsewhere = tmp_path / "programs-here"
    assert cache.run(str(FIVE), DAPHNEC_PROGRAM_CACHE_DIR=str(elsewhere)).returncode == 0
    assert len(list(elsewhere.iterdir())) == 1 and cache.entries() == []


def test_concurrent_runs_leave_a_consistent_cache(cache: Cache) -> None:
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "daphnec.tools.daphnec", "--vec", "--vec-min-cells=0", str(FIVE)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env=cache.env(),
        )
        for _ in range(4)
    ]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0 and err == ""
        outs.append(out)
    assert len(set(outs)) == 1
    names = cache.entries()
    assert len(names) == 1 and names[0].endswith(".prog")  # no temporary file left behind
    res = cache.hit("--vec", "--vec-min-cells=0", str(FIVE))
    assert cache.events() == ["hit"] and res.stdout == outs[0]


# ------------------------------------------------------------------------------------------------------ in-process


def test_a_cached_kernel_binds_like_the_compiled_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rebuilt native kernel's body carries what `NativeKernel.bind` gives it (scheduling key, flags)."""
    from daphnec.compiler.host import program_cache
    from daphnec.runtime.config import DaphneConfig
    from daphnec.tools.driver import compile_with_inputs

    monkeypatch.setenv("DAPHNEC_CACHE_DIR", str(tmp_path / "k"))
    cfg = DaphneConfig()
    cfg.use_vectorized_exec = True
    cfg.vec_min_cells = 0  # the script's small matrices: pipelines anyway
    key = program_cache.lookup_key(str(FIVE), {}, cfg)
    compiled, inputs = compile_with_inputs(str(FIVE), {}, cfg, {})
    assert list(inputs.files) == [str(FIVE)]
    assert program_cache.store(key, inputs, compiled.host)
    loaded = program_cache.load(key)
    assert loaded is not None and loaded.source == compiled.host.source  # type: ignore[attr-defined]
    natives = [k for k in compiled.host.globals if k.startswith("_native_")]  # type: ignore[attr-defined]
    assert len(natives) >= 5

    def body(*blocks: object) -> tuple[object, ...]:
        return blocks

    for name in natives:
        a = compiled.host.globals[name](body)  # type: ignore[attr-defined,operator]
        b = loaded.globals[name](body)  # type: ignore[operator]
        assert sorted(vars(a)) == sorted(vars(b))
        assert a.key == b.key  # type: ignore[attr-defined]


def test_a_loaded_kernel_keeps_numpys_own_dtypes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Kernels test `X.dtype is dt` on their fast paths (ew_binary's f64 path, the host code's inlined ufuncs):
    a loaded program's dtypes must be numpy's builtin objects, not the copies numpy's own pickling makes (a cached
    RDP took the general path in every element-wise call)."""
    import numpy as np

    from daphnec.compiler.host import program_cache
    from daphnec.runtime.config import DaphneConfig
    from daphnec.tools.driver import compile_with_inputs

    script = tmp_path / "ew.daph"
    script.write_text("X = seq(1.0, 4.0, 1.0);\nY = abs(X * 2.0 - 3.0);\nprint(sum(Y));\n")
    monkeypatch.setenv("DAPHNEC_CACHE_DIR", str(tmp_path / "k"))
    cfg = DaphneConfig()
    key = program_cache.lookup_key(str(script), {}, cfg)
    compiled, inputs = compile_with_inputs(str(script), {}, cfg, {})
    assert program_cache.store(key, inputs, compiled.host)
    loaded = program_cache.load(key)
    assert loaded is not None
    dtypes = [v for v in loaded.globals.values() if isinstance(v, np.dtype)]
    for fn in loaded.globals.values():
        cells = [c.cell_contents for c in getattr(fn, "__closure__", None) or ()]
        dtypes += [c for c in cells if isinstance(c, np.dtype)]
    assert dtypes and all(d is np.dtype(d.str) for d in dtypes), dtypes
