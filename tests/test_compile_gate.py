"""`compiler.passes.PassGate`: a pass it skips (its op classes absent from the module) really would have left the
IR as it was, so skipping it, its import and the verification after it changes nothing (issue 23 part 5); a pass
whose op classes are present is never skipped, so a pass that changes the IR still runs and is verified."""

from __future__ import annotations

from pathlib import Path

import pytest

from daphnec.compiler.passes import ALL_PASSES, PassGate
from daphnec.compiler.pipeline import HOST_STAGES, PassManager, module_text
from daphnec.dialects import make_context
from daphnec.runtime.config import DaphneConfig
from daphnec.tools.driver import parse_to_ir

ROOT = Path(__file__).resolve().parents[1]

PLAIN = "X = rand(4, 3, 0.0, 1.0, 1.0, 1);\ns = sum(X) + 1;\nprint(s);\n"
"""No SQL, parfor, matrix product, outer op or insert: every gated pass is skipped."""

GRAM = "X = rand(4, 3, 0.0, 1.0, 1.0, 1);\nv = rand(3, 1, 0.0, 1.0, 1.0, 2);\nX[0, 0] = 5.0;\nprint(t(X) @ (X @ v));\n"
"""A product (fuse-x-once) and an insert (in-place-insert) run; the SQL, parfor and outer-op passes are skipped."""


def _compile(text: str, tmp_path: Path) -> tuple[list[str], list[str]]:
    """Run the host stages as the pipeline does, asking the gate before each pass; a skipped pass is run anyway
    and must leave the printed IR unchanged. Returns (skipped, run) pass names."""
    path = tmp_path / "s.daph"
    path.write_text(text)
    config = DaphneConfig()
    module = parse_to_ir(str(path), {}, config)
    pm = PassManager.for_config(make_context(), config)
    gate = PassGate()
    skipped: list[str] = []
    ran: list[str] = []
    for names, _slot in HOST_STAGES:
        for entry in names:
            name, option = entry if isinstance(entry, tuple) else (entry, None)
            if option is not None and option not in pm.options:
                continue
            skip = gate.skips(name, module)
            before = module_text(module) if skip else None
            pm.run_pass(module, ALL_PASSES[name](**pm.pass_args.get(name, {})))
            if skip:
                assert module_text(module) == before, f"{name} was skipped but changes the IR"
                skipped.append(name)
            else:
                ran.append(name)
    return skipped, ran


def test_plain_script_skips_every_gated_pass(tmp_path: Path) -> None:
    skipped, ran = _compile(PLAIN, tmp_path)
    assert set(skipped) == {"sql", "parfor", "fuse-x-once", "fuse-split-stats", "in-place-insert"}
    assert "canonicalize" in ran and "specialize" in ran  # ungated passes always run


def test_passes_with_their_ops_run(tmp_path: Path) -> None:
    skipped, ran = _compile(GRAM, tmp_path)
    assert {"fuse-x-once", "in-place-insert"} <= set(ran)
    assert {"sql", "parfor", "fuse-split-stats"} <= set(skipped)


@pytest.mark.parametrize(
    "script",
    ["examples/sql_tutorial_where.daph", "examples/kmeans.daph", "tests/scripts/in_place/parfor.daph"],
)
def test_skipped_passes_change_nothing_on_real_scripts(script: str, tmp_path: Path) -> None:
    """SQL and parfor scripts: their pass runs (the gate sees their ops), the others are checked as skipped."""
    skipped, ran = _compile((ROOT / script).read_text(), tmp_path)
    assert skipped
    if "sql" in script:
        assert "sql" in ran
    if "parfor" in script:
        assert "parfor" in ran


def test_a_pass_that_runs_forgets_the_collected_classes(tmp_path: Path) -> None:
    """Consecutive gated passes share one walk; after a pass that runs, the next gated pass walks again (the pass
    may have created its ops: here an insert appears after the walk)."""
    path = tmp_path / "s.daph"
    path.write_text(PLAIN)
    module = parse_to_ir(str(path), {}, DaphneConfig())
    gate = PassGate()
    assert gate.skips("sql", module) and gate.skips("in-place-insert", module)
    assert not gate.skips("canonicalize", module)  # ungated: runs, and may change anything
    path.write_text(GRAM)
    other = parse_to_ir(str(path), {}, DaphneConfig())
    assert not gate.skips("in-place-insert", other)  # walked again: the insert is seen
