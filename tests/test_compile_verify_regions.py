"""The verification memo's region ops and calls (compiler/verify.py, issue 23 part 5): `scf.for`/`if`/`while`,
`func.func` and the module skip their own checks when nothing in them changed, `func.call` when neither it nor the
function it calls changed; any change inside, to a block's ops or arguments, or to a callee's type is verified
again, so a pass that breaks the IR is still caught after every pass."""

from __future__ import annotations

import pytest
from xdsl.dialects import func, scf
from xdsl.dialects.builtin import FunctionType, ModuleOp
from xdsl.utils.exceptions import VerifyException

from daphnec.compiler.pipeline import PassManager
from daphnec.compiler.verify import indexed_verification, verify_module
from daphnec.dialects import make_context
from daphnec.dialects.ops import ConstantOp
from daphnec.dialects.types import MatrixType
from daphnec.frontend.ir_builder import build_module
from daphnec.frontend.parser import parse_source

SOURCE = """def f(x) { s = x; while (s < 10) { s = s + x; } return s; }
def g(x) { return x + 1; }
s = 0;
for (i in 1:3) { if (i > 1) { s = s + f(i) + g(s); } else { s = s - 1; } }
print(s);
"""
"""Two functions (`f`, with a loop, stays a call; `g` is inlined), a while loop, a for loop and an if."""

REGION_OPS = (scf.ForOp, scf.IfOp, scf.WhileOp, func.FuncOp, ModuleOp)


def _compiled() -> tuple[ModuleOp, PassManager]:
    module = build_module(parse_source(SOURCE, "t.daph"), "t.daph")
    pm = PassManager(make_context(), options=frozenset({"inline"}))
    pm.run_stages(module)
    return module, pm


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Names of the region ops and calls whose own checks (IRDL's, with their traits) run from now on."""
    from xdsl.irdl.operations import OpDef

    calls: list[str] = []
    original = OpDef.verify
    names = {cls.name for cls in (*REGION_OPS, func.CallOp)}

    def counting(self: OpDef, op: object) -> None:
        if op.name in names:  # type: ignore[attr-defined]
            calls.append(op.name)  # type: ignore[attr-defined]
        original(self, op)

    monkeypatch.setattr(OpDef, "verify", counting)
    return calls


def test_the_module_has_every_kind() -> None:
    module, _ = _compiled()
    kinds = {type(o) for o in module.walk()}
    assert {scf.ForOp, scf.IfOp, scf.WhileOp, func.FuncOp, func.CallOp, scf.ConditionOp} <= kinds


def test_an_unchanged_module_runs_no_region_check(monkeypatch: pytest.MonkeyPatch) -> None:
    module, pm = _compiled()
    verify_module(module, pm.verified)
    calls = _counting(monkeypatch)
    with indexed_verification(pm.verified) as ix:
        module.verify()
    assert calls == []
    assert ix.hits == ix.seen + 1  # every op, and the module itself
    verify_module(module)  # without the memo: all of them checked
    assert {"scf.for", "scf.if", "scf.while", "func.func", "builtin.module", "func.call"} <= set(calls)


def test_a_change_inside_a_loop_rechecks_its_enclosing_ops(monkeypatch: pytest.MonkeyPatch) -> None:
    """A new op in the if's block: the if, the for around it, the function and the module check again (their
    op sequences or their subtree changed), the other function does not."""
    module, pm = _compiled()
    verify_module(module, pm.verified)
    calls = _counting(monkeypatch)
    iff = next(o for o in module.walk() if isinstance(o, scf.IfOp))
    block = iff.true_region.block
    block.insert_op_before(ConstantOp.of(1, "si64"), block.first_op)
    verify_module(module, pm.verified)
    assert sorted(calls) == ["builtin.module", "func.func", "scf.for", "scf.if"]


def test_a_broken_yield_in_a_loop_is_caught() -> None:
    module, pm = _compiled()
    verify_module(module, pm.verified)
    loop = next(o for o in module.walk() if isinstance(o, scf.ForOp))
    y = loop.body.block.last_op
    assert isinstance(y, scf.YieldOp) and y.operands
    wrong = ConstantOp.of(1.5, "f64")
    loop.body.block.insert_op_before(wrong, y)
    y.operands = [wrong.results[0], *list(y.operands)[1:]]  # a broken pass: the carried value changes type
    with pytest.raises(VerifyException):
        verify_module(module, pm.verified)


def test_a_removed_op_rechecks_its_block_owner(monkeypatch: pytest.MonkeyPatch) -> None:
    """An op erased from a while loop's body (no op left to miss): the loop's own op sequence changed."""
    module, pm = _compiled()
    verify_module(module, pm.verified)
    loop = next(o for o in module.walk() if isinstance(o, scf.WhileOp))
    extra = ConstantOp.of(7, "si64")
    loop.after_region.block.insert_op_before(extra, loop.after_region.block.first_op)
    verify_module(module, pm.verified)
    calls = _counting(monkeypatch)
    extra.detach()
    extra.erase()
    verify_module(module, pm.verified)
    assert "scf.while" in calls and "func.func" in calls


def test_a_callee_whose_type_changed_fails_its_calls() -> None:
    module, pm = _compiled()
    verify_module(module, pm.verified)
    call = next(o for o in module.walk() if isinstance(o, func.CallOp))
    callee = next(o for o in module.ops if isinstance(o, func.FuncOp) and o.sym_name.data == call.callee.string_value())
    inputs = callee.function_type.inputs.data
    callee.function_type = FunctionType.from_lists(  # a broken pass: the callee's parameter became a matrix
        [MatrixType(inputs[0], 2, 2), *inputs[1:]], callee.function_type.outputs.data
    )
    with pytest.raises(VerifyException):
        verify_module(module, pm.verified)


def test_an_operand_from_another_function_is_caught_after_a_clean_verification() -> None:
    module, pm = _compiled()
    verify_module(module, pm.verified)
    fns = [o for o in module.ops if isinstance(o, func.FuncOp)]
    inner = next(o for o in fns[0].walk() if o.results and o is not fns[0])
    user = next(o for o in fns[1].walk() if o.operands and not isinstance(o, func.ReturnOp | scf.YieldOp))
    user.operands = [inner.results[0], *list(user.operands)[1:]]
    with pytest.raises(VerifyException, match="IsolatedFromAbove"):
        verify_module(module, pm.verified)
