"""The verification memo of the pass manager (compiler/verify.py): an op verified after one pass is not verified
again while its signature is unchanged, and an op whose operands, types or attributes changed is verified again,
so a pass that breaks the IR is still caught."""

from __future__ import annotations

import pytest
from xdsl.utils.exceptions import VerifyException

from daphnec.compiler.pipeline import PassManager
from daphnec.compiler.verify import verify_module
from daphnec.dialects import make_context
from daphnec.dialects.ops import EwAddOp
from daphnec.dialects.types import MatrixType
from daphnec.frontend.ir_builder import build_module
from daphnec.frontend.parser import parse_source

SOURCE = "X = fill(1.0, 2, 2);\nY = fill(2.0, 2, 2);\nprint(X + Y);\n"


def _compiled():
    module = build_module(parse_source(SOURCE, "t.daph"), "t.daph")
    pm = PassManager(make_context())
    pm.run_stages(module)
    return module, pm


def test_every_pass_fills_the_memo_with_the_ops_it_verified() -> None:
    module, pm = _compiled()
    add = next(o for o in module.walk() if isinstance(o, EwAddOp))
    assert add in pm.verified


def test_an_unchanged_op_is_not_verified_again(monkeypatch: pytest.MonkeyPatch) -> None:
    module, pm = _compiled()
    calls: list[object] = []
    original = EwAddOp.verify_

    def counting(self: EwAddOp) -> None:
        calls.append(self)
        original(self)

    monkeypatch.setattr(EwAddOp, "verify_", counting)
    verify_module(module, pm.verified)
    assert calls == []
    verify_module(module)  # without the memo: verified
    assert len(calls) == 1


def test_an_op_whose_operand_types_changed_is_verified_again() -> None:
    module, pm = _compiled()
    add = next(o for o in module.walk() if isinstance(o, EwAddOp))
    rhs = add.rhs.owner.results[0]
    rhs._type = MatrixType(rhs.type.element_type, 3, 3)  # noqa: SLF001 - a broken pass: 2x2 + 3x3
    with pytest.raises(VerifyException, match="shape mismatch"):
        verify_module(module, pm.verified)


LOOP = "def f(x) { return x + 1; }\ns = 0;\nfor (i in 1:3) { if (i > 1) { s = s + f(i); } }\nprint(s);\n"


def _compiled_loop():
    module = build_module(parse_source(LOOP, "t.daph"), "t.daph")
    pm = PassManager(make_context())
    pm.run_stages(module)
    return module, pm


def test_an_unchanged_terminator_is_not_verified_again(monkeypatch: pytest.MonkeyPatch) -> None:
    from xdsl.dialects import func, scf

    module, pm = _compiled_loop()
    assert any(isinstance(o, scf.YieldOp) for o in pm.verified)
    assert any(isinstance(o, func.ReturnOp) for o in pm.verified)
    calls: list[object] = []
    for cls in (scf.YieldOp, func.ReturnOp):
        original = cls.verify_

        def counting(self: object, original=original) -> None:  # noqa: ANN001 - the bound original per class
            calls.append(self)
            original(self)

        monkeypatch.setattr(cls, "verify_", counting)
    verify_module(module, pm.verified)
    assert calls == []
    verify_module(module)  # without the memo: every terminator verified
    assert calls


def test_a_return_whose_function_type_changed_is_verified_again() -> None:
    from xdsl.dialects import func
    from xdsl.dialects.builtin import FunctionType

    module, pm = _compiled_loop()
    ret = next(o for o in module.walk() if isinstance(o, func.ReturnOp) and o.operands)
    fn = ret.parent_op()
    assert isinstance(fn, func.FuncOp)
    wrong = MatrixType(ret.operands[0].type, 2, 2) if not isinstance(ret.operands[0].type, MatrixType) else None
    assert wrong is not None
    fn.function_type = FunctionType.from_lists(fn.function_type.inputs.data, [wrong])  # a broken pass
    with pytest.raises(VerifyException, match="return"):
        verify_module(module, pm.verified)


def test_an_operand_from_outside_a_function_is_still_caught() -> None:
    from xdsl.dialects import func

    module, pm = _compiled_loop()
    fns = [o for o in module.ops if isinstance(o, func.FuncOp)]
    inner = next(o for o in fns[0].walk() if o.results and o is not fns[0])
    user = next(o for o in fns[1].walk() if isinstance(o, EwAddOp | func.ReturnOp) and o.operands)
    user.operands = [inner.results[0], *list(user.operands)[1:]]  # a broken pass: a value of another function
    with pytest.raises(VerifyException, match="IsolatedFromAbove"):
        verify_module(module, pm.verified)
