"""The clean-up after the late rewrites (`late_cleanup` in compiler/pipeline.py): `--vec` always runs it, the
default path when `has_folds` finds something to fold, so a program with nothing to fold pays only the check."""

from __future__ import annotations

from daphnec.compiler.passes.canonicalize import has_folds
from daphnec.compiler.pipeline import STAGES, PassManager
from daphnec.dialects import make_context
from daphnec.runtime.config import DaphneConfig
from daphnec.tools.driver import parse_to_ir

INTERCEPT = "X = rand(2000, 30, -1.0, 1.0, 1, 1);\nA = cbind(X, fill(1.0, nrow(X), 1));\nprint(t(A) @ A);\n"
PLAIN = "X = rand(2000, 30, -1.0, 1.0, 1, 1);\nprint(t(X) @ X);\n"


def _before_cleanup(text: str, config: DaphneConfig):
    """The module as the stage of the clean-up receives it, and a pass manager that records the passes it runs."""
    module = parse_to_ir("c.daph", {}, config, text=text)
    pm = PassManager.for_config(make_context(), config)
    at = next(i for i, (_, slot) in enumerate(STAGES) if slot == "vectorized")
    pm.run_stages(module, STAGES[:at])
    ran: list[str] = []
    pm.trace = ran.append
    return module, pm, STAGES[at : at + 1], ran


def test_the_default_path_cleans_up_only_what_folds() -> None:
    module, pm, stage, ran = _before_cleanup(INTERCEPT, DaphneConfig())
    assert has_folds(module)  # `colSums(X) * 1.0`, `2000 * 1.0 * 1.0`
    pm.run_stages(module, stage)
    assert ran == ["canonicalize", "dce"]
    assert not has_folds(module)
    assert "daphne.ewMul" not in str(module)

    module, pm, stage, ran = _before_cleanup(PLAIN, DaphneConfig())
    assert not has_folds(module)
    pm.run_stages(module, stage)
    assert ran == []


def test_vec_always_cleans_up() -> None:
    config = DaphneConfig()
    config.use_vectorized_exec = True
    module, pm, stage, ran = _before_cleanup(PLAIN, config)
    pm.run_stages(module, stage)
    assert ran[-2:] == ["canonicalize", "dce"]
