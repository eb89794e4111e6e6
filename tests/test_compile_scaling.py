"""Compile time grows linearly with deep and long programs (follow-up of issue 14; bench/compile_bench.py times it).

No timing assertions (the machine is shared and noisy): each test counts the Python lines a compiler phase executes
(`sys.settrace`, deterministic) on a program of size n and of size 2n, and requires the count to grow at most
2.2x (linear: 2.0x; the quadratic costs these tests guard against made it 2.3-4.8x at these sizes): xDSL's effect
queries in `cse`/`dce`, the symbol scans and ancestor walks of IR verification, the re-walks of outlined subtrees
in host code generation, the per-call-site function index of `specialize`, the frontend's re-visits of nested
statements and the quadratic worklist fills of `canonicalize`.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Any

import pytest

from daphnec.compiler.host.generator import generate_host
from daphnec.compiler.passes.canonicalize import CanonicalizePass
from daphnec.compiler.passes.cse import CsePass
from daphnec.compiler.passes.dce import DcePass
from daphnec.compiler.passes.specialize import SpecializePass
from daphnec.compiler.pipeline import HOST_STAGES, PassManager
from daphnec.compiler.verify import verify_module
from daphnec.dialects import make_context
from daphnec.runtime.config import DaphneConfig
from daphnec.tools.driver import parse_to_ir, with_deep_stack

MAX_GROWTH = 2.2
"""Allowed ratio of the work at 2n to the work at n."""


def nested_ifs(n: int) -> str:
    return "x = 0;\n" + "".join(f"if (x < {k + 1}) {{\n" for k in range(n)) + "x = x + 1;\n" + "}\n" * n + "print(x);\n"


def chained_calls(n: int) -> str:
    defs = "".join(f"def g{i}(x) {{ return g{i + 1}(x) + 1; }}\n" for i in range(n))
    return defs + f"def g{n}(x) {{ return x; }}\nprint(g0(1));\n"


def lines_executed(fn: Callable[[], object], ignore: frozenset[str] = frozenset()) -> int:
    """How many Python lines `fn()` executes and frames it enters or resumes (a generator resumed through a chain
    of `yield from` runs no new line in the frames between), outside the functions named in `ignore`, on the
    deep-stack compile thread as the driver runs it."""
    count = 0

    def tracer(frame: FrameType, event: str, arg: Any) -> Callable[..., Any] | None:
        nonlocal count
        if event in ("call", "line") and frame.f_code.co_name not in ignore:  # "call": also a generator resumed
            count += 1
        return tracer

    def traced() -> None:
        sys.settrace(tracer)
        try:
            fn()
        finally:
            sys.settrace(None)

    with_deep_stack(traced)
    return count


def module_after(text: str, stages: int = 0) -> Any:
    """The IR of `text` after parsing and the first `stages` host stages of the pipeline (-1: `text` itself)."""
    if stages < 0:
        return text
    module = with_deep_stack(lambda: parse_to_ir("scaling.daph", {}, DaphneConfig(), text=text))
    if stages:
        with_deep_stack(lambda: PassManager(make_context()).run_stages(module, HOST_STAGES[:stages]))
    return module


def growth(phase: Phase) -> float:
    """Work of the phase on the program of size 2n over its work on the program of size n (after a warm-up run,
    so that one-time costs such as loading the parser's tables do not count)."""
    phase.run(module_after(phase.make(2), phase.stages))
    small, large = (module_after(phase.make(k), phase.stages) for k in (phase.n, 2 * phase.n))
    return lines_executed(lambda: phase.run(large), phase.ignore) / lines_executed(
        lambda: phase.run(small), phase.ignore
    )


@dataclass(frozen=True)
class Phase:
    make: Callable[[int], str]
    n: int
    run: Callable[[Any], object]
    stages: int = 0
    """Host stages run before the phase (see `module_after`)."""
    ignore: frozenset[str] = frozenset()
    """Functions whose lines do not count: known O(depth) steps left in place (see PHASES)."""


CTX = make_context()
CONFIG = DaphneConfig()
XDSL_INSERTION = frozenset({"is_ancestor", "parent_node"})
"""xDSL's `Block._attach_op` walks from the insertion point up to the root on every inserted op (O(depth) each);
that is xDSL's, not measured here."""
SCOPE_CHAIN = frozenset({"lookup", "assign", "is_readonly"}) | XDSL_INSERTION
"""The frontend's variable lookups walk the chain of block scopes (O(depth) each); left, not measured here."""

PHASES: dict[str, Phase] = {
    "building the IR of nested ifs": Phase(
        nested_ifs, 160, lambda t: parse_to_ir("s.daph", {}, CONFIG, text=t), -1, SCOPE_CHAIN
    ),
    "canonicalize on nested ifs": Phase(nested_ifs, 100, lambda m: CanonicalizePass().apply(CTX, m), 0, XDSL_INSERTION),
    "cse on nested ifs": Phase(nested_ifs, 60, lambda m: CsePass().apply(CTX, m)),
    "dce on nested ifs": Phase(nested_ifs, 60, lambda m: DcePass().apply(CTX, m), 4),
    "verification of nested ifs": Phase(nested_ifs, 120, verify_module, 4),
    "verification of chained calls": Phase(chained_calls, 100, verify_module, 4),
    "host code of nested ifs": Phase(nested_ifs, 60, lambda m: generate_host(m, {}), len(HOST_STAGES)),
    "specialize on chained calls": Phase(chained_calls, 100, lambda m: SpecializePass().apply(CTX, m), 3),
}


@pytest.mark.parametrize("name", list(PHASES))
def test_compile_phase_work_grows_linearly(name: str) -> None:
    ratio = growth(PHASES[name])
    assert ratio <= MAX_GROWTH, f"{name}: {ratio:.2f}x the work for twice the program (quadratic?)"


def test_indexed_verification_is_per_thread() -> None:
    """While one thread verifies with indexes, another thread's symbol lookups run xDSL's own scan (no shared
    state): a function added after the index was built is still found there."""
    from xdsl.dialects import func
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.traits import SymbolTable

    from daphnec.compiler.verify import indexed_verification

    module = ModuleOp([func.FuncOp("a", ((), ()))])
    found: list[object] = []
    with indexed_verification():
        assert SymbolTable.lookup_symbol(module, "a") is not None
        module.body.block.add_op(func.FuncOp("b", ((), ())))
        other = threading.Thread(target=lambda: found.append(SymbolTable.lookup_symbol(module, "b")))
        other.start()
        other.join()
    assert found[0] is not None and SymbolTable.lookup_symbol(module, "b") is not None


def test_indexed_verification_fails_like_xdsl() -> None:
    """A call of a missing function and a value used across `IsolatedFromAbove`: the same verdict and message."""
    from xdsl.dialects import arith, func
    from xdsl.dialects.builtin import ModuleOp, i64
    from xdsl.ir import Block, Region
    from xdsl.utils.exceptions import VerifyException

    outer = arith.ConstantOp.from_int_and_width(1, i64)
    leak = func.FuncOp("leak", ((), (i64,)), Region(Block([func.ReturnOp(outer.result)])))
    calls = func.FuncOp("calls", ((), ()), Region(Block([func.CallOp("missing", [], []), func.ReturnOp()])))
    nested = ModuleOp([func.FuncOp("f", ((), ()), Region(Block([outer, leak, func.ReturnOp()])))])
    for module, expected in ((nested, "IsolatedFromAbove parent"), (ModuleOp([calls]), "could not be found")):
        messages = []
        for verify in (lambda m: m.verify(), verify_module):
            with pytest.raises(VerifyException, match=expected) as e:
                verify(module)
            messages.append(str(e.value))
        assert messages[0] == messages[1]


def test_indexed_isolation_check_accepts_a_use_walked_before_its_definition() -> None:
    """The isolation check builds its index of the nodes inside while it walks; a use met before its definition
    (a later block of the same function) is inside all the same (the ancestor walk answers it), as in xDSL."""
    from xdsl.dialects import arith, cf, func
    from xdsl.dialects.builtin import ModuleOp, i64
    from xdsl.ir import Block, Region

    later = Block()
    value = arith.ConstantOp.from_int_and_width(1, i64)
    first = Block([arith.AddiOp(value.result, value.result), cf.BranchOp(later)])
    later.add_ops([value, func.ReturnOp()])
    module = ModuleOp([func.FuncOp("f", ((), ()), Region([first, later]))])
    module.verify()
    verify_module(module)
