"""`daphne-opt`: xDSL's opt driver with the daphne dialect, daphnec's passes and a DaphneDSL frontend.

daphne-opt script.daph                        # IR right after parsing
daphne-opt script.daph k=3 s=\"abc\"          # with script arguments (read as $k, $s), as for daphnec
daphne-opt script.daph -p specialize,canonicalize,dce
daphne-opt ir.mlir -p infer --print-op-generic
daphne-opt script.daph -p specialize -t host   # the generated Python host code
daphne-opt pipeline.mlir -p lower-pipeline-to-loops,convert-to-llvm    # the kernel stages
daphne-opt --list-passes

Targets are the ones that apply to daphnec IR: `mlir` (the default), `host` and `llvm` (LLVM IR of a module the
kernel stages lowered to the llvm dialect). `-t host` first runs the `sql` pass on a module that still holds SQL
queries (host code has no kernel for a query: the pass turns it into relational ops, as daphnec's pipeline does).
`--list-passes` lists the passes `-p` takes. Bad input is reported like `daphnec` does, without a traceback: a
missing or unreadable input file or an unknown pass exits 1, an error in a pass or a target 2.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Sequence
from typing import IO

from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import DiagnosticException
from xdsl.utils.exceptions import ParseError as MLIRParseError
from xdsl.xdsl_opt_main import xDSLOptMain

from daphnec.dialects.errors import DaphneError, ParseError

PROG = "daphne-opt"


class DaphneOptMain(xDSLOptMain):
    """xDSLOptMain restricted to the dialects daphnec IR uses, with `.daph` input and a `host` target."""

    script_args: dict[str, str] = {}  # noqa: RUF012 - set per run by `main` (script arguments after the input)

    def register_all_dialects(self) -> None:
        from xdsl.dialects.arith import Arith
        from xdsl.dialects.builtin import Builtin
        from xdsl.dialects.cf import Cf
        from xdsl.dialects.func import Func
        from xdsl.dialects.llvm import LLVM
        from xdsl.dialects.math import Math
        from xdsl.dialects.memref import MemRef
        from xdsl.dialects.scf import Scf

        from daphnec.dialects.daphne import Daphne

        # the daphne dialect and what the kernel stages lower pipelines to (`lower-pipeline-to-loops`: func, scf,
        # arith, math, memref; `convert-to-llvm`: llvm), so each lowering step can start from `.mlir` input
        for d in (Builtin, Func, Scf, Daphne, Arith, Math, MemRef, Cf, LLVM):
            self.ctx.register_dialect(d.name, lambda d=d: d)

    def register_all_passes(self) -> None:
        from daphnec.compiler.passes import PASS_FACTORIES
        from daphnec.frontend import sql  # noqa: F401 - `-p sql` on textual IR needs the SQL frontend registered

        for name, factory in PASS_FACTORIES.items():
            self.register_pass(name, factory)

    def register_all_frontends(self) -> None:
        super().register_all_frontends()

        def parse_daph(io: IO[bytes]) -> ModuleOp:
            from daphnec.frontend.ir_builder import build_module
            from daphnec.frontend.parser import parse_source
            from daphnec.frontend.sources import decode_source

            name = self.get_input_name()
            return build_module(parse_source(decode_source(io.read(), name), name), name, self.script_args)

        self.available_frontends["daph"] = parse_daph
        self.available_frontends["daphne"] = parse_daph

    def get_input_stream(self) -> tuple[IO[bytes], str]:
        """xDSL's input stream, but a FIFO, device or folder is refused instead of read (it could block forever)."""
        path = self.args.input_file
        if path is not None:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            mode = os.fstat(fd).st_mode
            os.close(fd)
            if not stat.S_ISREG(mode):
                from daphnec.frontend.sources import file_kind

                raise ParseError(f"could not open file '{path}': it is {file_kind(mode)}")
        return super().get_input_stream()

    def register_all_targets(self) -> None:
        super().register_all_targets()
        llvm = self.available_targets["llvm"]
        self.available_targets = {"mlir": self.available_targets["mlir"]}

        def emit_llvm(module: ModuleOp, out: IO[str]) -> None:
            from xdsl.utils.arg_spec import parse_spec

            try:
                llvm().from_spec(parse_spec("llvm")).emit(self.ctx, module, out)
            except NotImplementedError as e:
                raise DaphneError(
                    f"the llvm target translates llvm-dialect IR ({e}); lower a pipeline module first with "
                    "-p lower-pipeline-to-loops,convert-to-llvm"
                ) from None

        self.available_targets["llvm"] = emit_llvm

        def emit_host(module: ModuleOp, out: IO[str]) -> None:
            from daphnec.compiler.host.generator import generate_host
            from daphnec.dialects.ops_relational import SqlOp

            if any(isinstance(op, SqlOp) for op in module.walk()):  # queries become relational ops first
                from daphnec.compiler.passes import ALL_PASSES

                ALL_PASSES["sql"]().apply(self.ctx, module)
            out.write(generate_host(module).source)

        self.available_targets["host"] = emit_host


def list_passes() -> str:
    """`--list-passes`: every pass `-p` takes, with the first line of its docstring."""
    from daphnec.compiler.passes import ALL_PASSES, PASS_FACTORIES

    lines = ["Passes (-p name[,name...]):"]
    width = max(len(n) for n in PASS_FACTORIES)
    for name in sorted(PASS_FACTORIES):
        cls = ALL_PASSES[name]
        doc = " ".join((cls.__doc__ or "").split())
        if not doc or doc.startswith(f"{cls.__name__}("):  # a dataclass's generated docstring: the module's
            doc = " ".join((sys.modules[cls.__module__].__doc__ or "").split())
        first = doc.split(". ")[0].rstrip(".")
        if len(first) > 90:
            first = first[:89] + "…"
        lines.append(f"  {name:<{width}}  {first}" if first else f"  {name}")
    return "\n".join(lines) + "\n"


_VALUE_OPTIONS = frozenset({"-p", "--passes", "-t", "--target", "-o", "--output-file", "-f", "--frontend"})
"""xDSL's options that take their value as the next argument."""


def split_script_args(argv: list[str]) -> tuple[list[str], dict[str, str]]:
    """The arguments for xDSL's parser, and the script arguments (`name=value` after the input file), checked as
    daphnec checks them."""
    from daphnec.tools.daphnec import parse_script_args

    rest, pairs = [], []
    takes_value = False  # the previous argument was an option whose value follows (`-p a{x=1},b`)
    for a in argv:
        if takes_value or a.startswith("-") or "=" not in a:
            rest.append(a)
            takes_value = a in _VALUE_OPTIONS
        else:
            pairs.append(a)
    script_args: dict[str, str] = {}
    parse_script_args(pairs, script_args)
    return rest, script_args


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if "--list-passes" in args:
        sys.stdout.write(list_passes())
        return 0
    try:
        args, DaphneOptMain.script_args = split_script_args(args)
    except Exception as e:  # noqa: BLE001 - daphnec's UsageError: a bad script argument
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1
    try:
        DaphneOptMain(args=args).run()
    except DaphneError as e:
        print(e.render(), file=sys.stderr)
        return e.code
    except OSError as e:
        print(f"{PROG}: error: could not open file '{e.filename}': {e.strerror}", file=sys.stderr)
        return 1
    except MLIRParseError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1
    except DiagnosticException as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    except ValueError as e:  # xDSL's pass pipeline: unknown passes or bad pass arguments
        if "pass" not in str(e).lower():
            raise
        print(f"{PROG}: error: {e} (see --list-passes)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
