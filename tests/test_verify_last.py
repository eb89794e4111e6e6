"""`DAPHNEC_VERIFY=last` (compiler/pipeline.py): the pass manager verifies once after the last pass of a
`run_stages` instead of after each pass; the default still verifies after every pass, and a pass that breaks the
IR is still caught (named by the last pass) under the option."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from daphnec.compiler import pipeline
from daphnec.compiler.pipeline import PassManager
from daphnec.dialects import make_context
from daphnec.dialects.ops import EwAddOp
from daphnec.dialects.types import MatrixType
from daphnec.frontend.ir_builder import build_module
from daphnec.frontend.parser import parse_source

SOURCE = "X = fill(1.0, 2, 2);\nY = fill(2.0, 2, 2);\nprint(X + Y);\n"


def _module() -> ModuleOp:
    return build_module(parse_source(SOURCE, "t.daph"), "t.daph")


def _count_verifications(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    calls: list[object] = []
    real = pipeline.verify_module

    def counting(module: ModuleOp, memo: object = None) -> None:
        calls.append(module)
        real(module, memo)

    monkeypatch.setattr(pipeline, "verify_module", counting)
    return calls


def test_the_default_verifies_after_every_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DAPHNEC_VERIFY", raising=False)
    calls = _count_verifications(monkeypatch)
    ran: list[str] = []
    pm = PassManager(make_context(), trace=ran.append)
    assert pm.verify_each
    pm.run_stages(_module())
    assert len(calls) == len(ran) > 5


def test_last_verifies_once_and_compiles_the_same_ir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DAPHNEC_VERIFY", raising=False)
    each = _module()
    PassManager(make_context()).run_stages(each)
    monkeypatch.setenv("DAPHNEC_VERIFY", "last")
    calls = _count_verifications(monkeypatch)
    last = _module()
    pm = PassManager(make_context())
    assert not pm.verify_each
    pm.run_stages(last)
    assert len(calls) == 1
    assert str(last) == str(each)


@dataclass(frozen=True)
class _BreakShapes(ModulePass):
    """A broken pass: the right operand of the addition becomes 3x3 (2x2 + 3x3)."""

    name = "break-shapes"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        add = next(o for o in op.walk() if isinstance(o, EwAddOp))
        rhs = add.rhs.owner.results[0]
        rhs._type = MatrixType(rhs.type.element_type, 3, 3)  # noqa: SLF001 - the breakage under test


def test_last_still_catches_a_broken_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DAPHNEC_VERIFY", "last")
    module = _module()
    pm = PassManager(make_context())
    pm.run_stages(module)  # shapes inferred: the breakage below is a mismatch the verifier sees
    with pytest.raises(pipeline.CompileError, match="shape mismatch"):
        pm.run_stages(module, [(("break-shapes",), None)], passes={"break-shapes": _BreakShapes()})
