"""The LALR tables' JSON (shipped next to the grammar, or in the cache folder) decode to exactly the tables that were
encoded: `runtime.cache_files` undoes its non-string-key encoding in `json.loads`'s object hook (issue 23 part 5),
and a parser loaded from each place parses like one built from the grammar."""

from __future__ import annotations

import json

import pytest

from daphnec.frontend import parser as p
from daphnec.frontend.parser import parse_source
from daphnec.runtime import cache_files

TEXT = 'x = [1, 2.5f, 3]; /* c */ if (x[0, 0] > 1) { print("a" + 1); } else { y = t(x) @ x; }\nz = -x ^ 2;\n'


def _decoded(value: object) -> object:
    """The encoding undone by a second walk over the decoded JSON (what the loader did before the object hook)."""
    if isinstance(value, dict):
        if "\0items" in value:
            return {_decoded(k): _decoded(v) for k, v in value["\0items"]}
        return {k: _decoded(v) for k, v in value.items()}
    return [_decoded(v) for v in value] if isinstance(value, list) else value


def test_object_hook_undoes_the_encoding() -> None:
    """Nested dicts with int and string keys, lists and scalars come back equal; DaphneDSL's shipped tables decode
    to what a separate walk over their JSON gives."""
    value = {"a": [1, {2: "b", 3: [{"c": None}]}], "d": {4: {5: 1.5}, "f": {}}, "e": []}
    text = json.dumps(cache_files._json_encode(value))
    assert json.loads(text, object_hook=cache_files._json_object) == value
    shipped = cache_files.shipped_tables_path(p._GRAMMAR_PATH).read_text()
    tables = json.loads(shipped, object_hook=cache_files._json_object)["tables"]
    assert tables == _decoded(json.loads(shipped)["tables"])
    assert any(isinstance(k, int) for k in tables["memo"])  # the non-string keys really are decoded


def test_cache_folder_tables_load_like_a_fresh_build(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """Without the shipped tables: the first parser is built and stored in the cache folder, the second is loaded
    from that entry; both give the shipped parser's AST (every field and location)."""
    monkeypatch.setattr(p, "_lark", None)
    shipped = repr(parse_source(TEXT, "a.daph"))
    monkeypatch.setenv("DAPHNEC_NO_SHIPPED_TABLES", "1")
    monkeypatch.setenv("DAPHNEC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(p, "_lark", None)
    assert repr(parse_source(TEXT, "a.daph")) == shipped
    assert list((tmp_path / "cache").glob("parser-*.json"))
    monkeypatch.setattr(p.Lark, "__init__", None)  # a third parser can only come from the cache folder's entry
    monkeypatch.setattr(p, "_lark", None)
    assert repr(parse_source(TEXT, "a.daph")) == shipped
