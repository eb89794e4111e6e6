"""Lazy frame columns (runtime/columns.py): dictionary-encoded strings and deferred gathers give exactly the values,
value types and row order of eager arrays, through every relational kernel that passes them on."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from daphnec.runtime.columns import DictColumn, GatherColumn
from daphnec.runtime.frame import Frame
from daphnec.runtime.kernels import frame_ops, relational

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))

words = st.lists(st.sampled_from(["", "a", "B", "ab", "b", "é", "zz"]), max_size=40)


def _strs(v: list[str]) -> np.ndarray:
    return np.array(v, dtype=object)


@SETTINGS
@given(v=words)
def test_dict_column_values_and_dense_codes(v: list[str]) -> None:
    col = DictColumn.encode(_strs(v))
    assert col.materialize().tolist() == v and col.materialize().dtype == object
    codes, uniq = relational.dense_codes(col)
    ref_codes, ref_uniq = relational.dense_codes(_strs(v))
    assert codes.tolist() == ref_codes.tolist() and uniq.tolist() == ref_uniq.tolist()


@SETTINGS
@given(v=words, data=st.data())
def test_filters_compose_and_stay_exact(v: list[str], data: st.DataObject) -> None:
    n = len(v)
    nums = np.arange(n, dtype=np.float64) * 1.5
    F = Frame([DictColumn.encode(_strs(v)), nums], ["s", "x"])
    eager = Frame([_strs(v), nums], ["s", "x"])
    for _ in range(2):
        rows = np.array(sorted(data.draw(st.sets(st.integers(0, max(n - 1, 0)), max_size=n))) if n else [], np.int64)
        F, eager = F.take_rows(rows), eager.take_rows(rows)
        n = len(rows)
    assert isinstance(F.raw_columns[0], DictColumn) and isinstance(F.raw_columns[1], GatherColumn)
    assert F.schema == ["str", "f64"] and F.nrow == eager.nrow
    assert [c.tolist() for c in F.columns] == [c.tolist() for c in eager.columns]


def test_join_gathers_only_the_columns_read() -> None:
    lhs = Frame([np.array([3, 1, 2, 1]), np.array([10.0, 20.0, 30.0, 40.0])], ["k", "v"])
    rhs = Frame([np.array([1, 2, 3]), DictColumn.encode(_strs(["x", "y", "x"]))], ["k2", "s"])
    J = frame_ops.inner_join(lhs, rhs, "k", "k2")
    assert all(not isinstance(c, np.ndarray) for c in J.raw_columns)
    G = relational.group_frame(J.take_rows(np.array([0, 2, 3])), ["s"], ["v"], ["SUM"])
    assert isinstance(J.raw_columns[0], GatherColumn)  # no op read the joined key column: never gathered
    assert G.labels == ["s", "SUM(v)"]
    assert G.columns[0].tolist() == ["x", "y"] and G.columns[1].tolist() == [50.0, 30.0]
    assert [c.tolist() for c in J.columns] == [
        [3, 1, 2, 1],
        [10.0, 20.0, 30.0, 40.0],
        [3, 1, 2, 1],
        ["x", "x", "y", "x"],
    ]


def test_read_frame_encodes_strings_once(tmp_path) -> None:  # noqa: ANN001 - pytest's tmp_path
    from daphnec.runtime.kernels import io

    (tmp_path / "f.csv").write_text("1,b\n2,a\n3,b\n")
    schema = '[{"label": "k", "valueType": "si64"}, {"label": "s", "valueType": "str"}]'
    (tmp_path / "f.csv.meta").write_text(f'{{"numRows": 3, "numCols": 2, "schema": {schema}}}')
    F = io.read_frame(str(tmp_path / "f.csv"), schema=("si64", "str"))
    assert isinstance(F.raw_columns[1], DictColumn) and F.header() == "Frame(3x2, [k:int64_t, s:std::string])"
    assert F.columns[1].tolist() == ["b", "a", "b"]


@SETTINGS
@given(a=words, data=st.data())
def test_group_codes_of_ordered_and_unordered_dictionaries(a: list[str], data: st.DataObject) -> None:
    """Grouping by an ordered dictionary's codes (no pass over the rows) or an unordered one's (compacted and
    sorted) numbers the groups as grouping the strings does."""
    b = data.draw(st.lists(st.sampled_from(["q", "p", "pp"]), min_size=len(a), max_size=len(a)))
    ordered = DictColumn.encode(_strs(a))
    dictionary = _strs(sorted(set(b), reverse=True))
    unordered = DictColumn(np.array([dictionary.tolist().index(x) for x in b], dtype=np.uint8), dictionary)
    assert ordered.ordered and not unordered.ordered
    gid, ng, keys = relational.group_codes([ordered, unordered], len(a))
    ref_gid, ref_ng, ref_keys = relational.group_codes([_strs(a), _strs(b)], len(a))
    assert gid.tolist() == ref_gid.tolist() and ng == ref_ng
    assert [k.tolist() for k in keys] == [k.tolist() for k in ref_keys]


@SETTINGS
@given(a=words, b=words)
def test_joins_on_encoded_strings(a: list[str], b: list[str]) -> None:
    """Two dictionaries (each with strings the other lacks) join by codes exactly as the strings join."""
    li, ri = relational.equi_pairs(DictColumn.encode(_strs(a)), DictColumn.encode(_strs(b)))
    ref_li, ref_ri = relational.equi_pairs(_strs(a), _strs(b))
    assert li.tolist() == ref_li.tolist() and ri.tolist() == ref_ri.tolist()
    lhs = Frame([DictColumn.encode(_strs(a))], ["k"])
    rhs = Frame([_strs(b)], ["k2"])  # one side encoded: joined as strings
    assert frame_ops.inner_join(lhs, rhs, "k", "k2").columns[1].tolist() == [b[j] for j in ref_ri]
