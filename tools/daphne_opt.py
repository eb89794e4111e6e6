"""`daphne-opt`: xDSL's opt driver with the daphne dialect, daphnec's passes and a DaphneDSL frontend.

daphne-opt script.daph                        # IR right after parsing
daphne-opt script.daph -p specialize,canonicalize,dce
daphne-opt ir.mlir -p infer --print-op-generic
daphne-opt script.daph -p specialize -t host   # the generated Python host code
daphne-opt pipeline.mlir -p lower-pipeline-to-loops,convert-to-llvm    # the kernel stages
daphne-opt --list-passes
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import IO

from xdsl.dialects.builtin import ModuleOp
from xdsl.xdsl_opt_main import xDSLOptMain

from daphnec.dialects.errors import DaphneError


class DaphneOptMain(xDSLOptMain):
    """xDSLOptMain restricted to the dialects daphnec IR uses, with `.daph` input and a `host` target."""

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

        for name, factory in PASS_FACTORIES.items():
            self.register_pass(name, factory)

    def register_all_frontends(self) -> None:
        super().register_all_frontends()

        def parse_daph(io: IO[bytes]) -> ModuleOp:
            from daphnec.frontend.ir_builder import build_module
            from daphnec.frontend.parser import parse_source

            name = self.get_input_name()
            return build_module(parse_source(io.read().decode(), name), name)

        self.available_frontends["daph"] = parse_daph
        self.available_frontends["daphne"] = parse_daph

    def register_all_targets(self) -> None:
        super().register_all_targets()

        def emit_host(module: ModuleOp, out: IO[str]) -> None:
            from daphnec.compiler.host_codegen import generate_host

            out.write(generate_host(module).source)

        self.available_targets["host"] = emit_host


def main(argv: Sequence[str] | None = None) -> int:
    try:
        DaphneOptMain(args=argv).run()
    except DaphneError as e:
        print(e.render(), file=sys.stderr)
        return e.code
    return 0


if __name__ == "__main__":
    sys.exit(main())
