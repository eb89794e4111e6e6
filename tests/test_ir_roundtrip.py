"""The IR of every script test round-trips through xDSL's text format (print -> parse -> identical), both right
after parsing and after the whole pass pipeline: what MPI workers and daphne-opt rely on."""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.parser import Parser

from daphnec.compiler.pipeline import PassManager, module_text
from daphnec.dialects import make_context
from daphnec.runtime.config import DaphneConfig
from daphnec.tools.driver import parse_to_ir

SCRIPTS = sorted((Path(__file__).parent / "scripts").rglob("*.daph"))


def _roundtrip(text: str, locations: bool = False) -> str:
    return module_text(Parser(make_context(), text).parse_module(), locations)


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.name for p in SCRIPTS])
def test_roundtrip_after_parsing_and_pipeline(script: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(Path(__file__).resolve().parents[1])
    args_file = script.with_suffix(".scriptargs")
    args = dict(w.split("=", 1) for w in args_file.read_text().split()) if args_file.exists() else {}
    module = parse_to_ir(str(script), args, DaphneConfig())
    for locations in (False, True):  # with locations, the DaphneDSL positions survive the text form too
        text = module_text(module, locations)
        assert _roundtrip(text, locations) == text
    PassManager(make_context()).run_stages(module)
    final = module_text(module)
    assert _roundtrip(final) == final
