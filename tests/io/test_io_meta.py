"""The `.meta` sidecar: parsing (every key, DAPHNE's fallbacks, errors naming the key) and the written form."""

from __future__ import annotations

import json

import pytest

from daphnec.runtime.io.meta import (
    FileMeta,
    MetaDataError,
    frame_meta_json,
    matrix_meta_json,
    parse_meta,
    read_meta,
)


def test_matrix_meta() -> None:
    m = parse_meta('{"numRows": 2, "numCols": 4, "valueType": "f64", "numNonZeros": 0}', "x.meta")
    assert m == FileMeta(2, 4, ("f64",) * 4, None, 0)
    assert m.value_type == "f64" and m.single_value_type


def test_num_non_zeros_defaults_to_minus_one() -> None:
    assert parse_meta('{"numRows": 1, "numCols": 1, "valueType": "si64"}', "x").num_non_zeros == -1


def test_frame_schema_with_labels() -> None:
    doc = {
        "numRows": 2,
        "numCols": 2,
        "schema": [{"label": "foo", "valueType": "si64"}, {"label": "bar", "valueType": "f64"}],
    }
    m = parse_meta(json.dumps(doc), "x")
    assert m.value_types == ("si64", "f64") and m.labels == ("foo", "bar")
    assert m.value_type == "si64"  # a matrix read from it takes the first column's type, like DAPHNE


def test_schema_empty_value_type_falls_back_to_top_level() -> None:
    doc = {
        "numRows": 5,
        "numCols": 3,
        "valueType": "f32",
        "schema": [{"label": "a", "valueType": ""}, {"label": "bc", "valueType": ""}, {"label": "d"}],
    }
    assert parse_meta(json.dumps(doc), "x").value_types == ("f32", "f32", "f32")


def test_unknown_keys_are_ignored_and_integral_floats_accepted() -> None:
    m = parse_meta('{"numRows": 2.0, "numCols": 1, "valueType": "ui8", "comment": "hi"}', "x")
    assert (m.num_rows, m.num_cols, m.value_type) == (2, 1, "ui8")


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("{", "is not valid JSON"),
        ("[1, 2]", "must contain a JSON object"),
        ('{"numCols": 1, "valueType": "f64"}', '"numRows"'),
        ('{"numRows": 1, "valueType": "f64"}', '"numCols"'),
        ('{"numRows": -1, "numCols": 1, "valueType": "f64"}', '"numRows" must be a non-negative integer'),
        ('{"numRows": "2", "numCols": 1, "valueType": "f64"}', '"numRows" must be a non-negative integer'),
        ('{"numRows": 1, "numCols": 1}', '"valueType"'),
        ('{"numRows": 1, "numCols": 1, "valueType": "float"}', "unknown value type 'float' for \"valueType\""),
        ('{"numRows": 1, "numCols": 1, "valueType": 7}', '"valueType" must be a string'),
        ('{"numRows": 1, "numCols": 1, "valueType": "f64", "numNonZeros": -2}', '"numNonZeros"'),
        ('{"numRows": 1, "numCols": 2, "schema": [{"label": "a", "valueType": "f64"}]}', '"schema" describes 1'),
        ('{"numRows": 1, "numCols": 1, "schema": {"a": 1}}', '"schema" must be an array'),
        ('{"numRows": 1, "numCols": 1, "schema": [{"label": "a", "valueType": ""}]}', '"schema[0].valueType" is empty'),
        ('{"numRows": 1, "numCols": 1, "schema": [{"label": 3, "valueType": "f64"}]}', '"schema[0].label"'),
        ('{"numRows": 1, "numCols": 1, "schema": [{"label": "a", "valueType": "x"}]}', '"schema[0].valueType"'),
        (
            '{"numRows": 1, "numCols": 2, "schema": [{"label": "a", "valueType": "f64"}, {"label": "a", '
            '"valueType": "f64"}]}',
            "labels must be unique",
        ),
        ('{"numRows": 1, "numCols": 1, "valueType": "f64", "hdfs": 1}', '"hdfs"'),
    ],
)
def test_malformed_meta_names_the_key(text: str, fragment: str) -> None:
    with pytest.raises(MetaDataError) as e:
        parse_meta(text, "data.csv.meta")
    assert "data.csv.meta" in str(e.value)
    assert fragment in str(e.value)


def test_missing_meta_file_names_it(tmp_path) -> None:
    with pytest.raises(MetaDataError, match=r"cannot read meta data file '.*x\.csv\.meta'"):
        read_meta(str(tmp_path / "x.csv"))


def test_written_matrix_meta_is_compact_and_sorted() -> None:
    assert matrix_meta_json(2, 4, "f64") == '{"numCols":4,"numRows":2,"valueType":"f64"}'
    assert matrix_meta_json(3, 1, "index") == '{"numCols":1,"numRows":3,"valueType":"ui64"}'


def test_written_frame_meta_has_a_schema() -> None:
    text = frame_meta_json(2, ["a", "b"], ["si64", "str"])
    assert text == (
        '{"numCols":2,"numRows":2,"schema":[{"label":"a","valueType":"si64"},{"label":"b","valueType":"str"}]}'
    )
    assert parse_meta(text, "x").labels == ("a", "b")
