"""The `.meta` JSON sidecar of a data file (DAPHNE's FileMetaData, `src/parser/metadata/MetaDataParser.cpp`).

`<file>.meta` holds `numRows`, `numCols` (required) and either `valueType` (one type for all cells) or `schema`
(an array of `{"label", "valueType"}`, one per column; an empty or missing `valueType` falls back to the top-level
one); `numNonZeros` (default -1) and `hdfs` are optional, unknown keys are ignored. DAPHNE reads it at compile time
to type `readMatrix`/`readFrame` and again when the file is read; every problem is reported with the key it is
about. Written metadata is compact JSON with sorted keys, as nlohmann::json::dump() writes it:
`{"numCols":4,"numRows":2,"valueType":"f64"}`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass

from daphnec.dialects.value_types import VT_OF_CODE
from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.memory import machine_bytes

META_VALUE_TYPES = (*(VT_OF_CODE[c] for c in sorted(VT_OF_CODE)), "bool")
"""Value-type names a `.meta` file may use: DAPHNE's ValueTypeCode names, plus `bool` (a daphnec extension, so that
bool matrices can be written and read back)."""

_VT_FOR_META = {"index": "ui64"}
"""Run-time value types without a ValueTypeCode of their own: `index` is C++ `size_t`, i.e. `ui64`."""


class MetaDataError(DaphneRuntimeError):
    """A missing or malformed `.meta` file (the compiler reports it as a compile error)."""


class Repeated(Sequence[str]):
    """One value type for every column, without a table of `numCols` entries: a tiny `.meta` may claim
    `"numCols": 1e11` (compares equal to the tuple it stands for)."""

    def __init__(self, vt: str, n: int):
        self.vt, self.n = vt, n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return (self.vt,) * len(range(*i.indices(self.n)))
        if not -self.n <= i < self.n:
            raise IndexError(i)
        return self.vt

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Repeated):
            return (self.vt, self.n) == (other.vt, other.n) or self.n == other.n == 0
        if isinstance(other, tuple):
            return len(other) == self.n and all(v == self.vt for v in other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.vt, self.n))

    def __repr__(self) -> str:
        return f"({self.vt!r},) * {self.n}"


@dataclass(frozen=True)
class FileMeta:
    """The contents of a `.meta` file; `value_types` has one entry per column (all equal without a schema)."""

    num_rows: int
    num_cols: int
    value_types: Sequence[str]
    """Per column (a `Repeated` without a schema)."""
    labels: tuple[str, ...] | None = None
    num_non_zeros: int = -1
    is_hdfs: bool = False

    @property
    def value_type(self) -> str:
        """The type of a matrix read from the file: the first column's (DAPHNE silently uses schema[0])."""
        return self.value_types[0] if self.value_types else "f64"

    @property
    def single_value_type(self) -> bool:
        return self.labels is None


def meta_path(data_path: str) -> str:
    return data_path + ".meta"


def read_meta(data_path: str) -> FileMeta:
    """Parse `<data_path>.meta`; raises MetaDataError naming the file and the offending key."""
    path = meta_path(data_path)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        raise MetaDataError(f"cannot read meta data file '{path}' (for '{data_path}'): no such file") from None
    except OSError as e:
        raise MetaDataError(f"cannot read meta data file '{path}': {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise MetaDataError(f"meta data file '{path}' is not valid UTF-8 text") from None
    meta = parse_meta(text, path, data_path)
    _check_pair(meta, data_path, path)
    return meta


def _check_pair(meta: FileMeta, data_path: str, where: str) -> None:
    """A data file written by daphnec records its `.meta` (runtime/io/atomic.py): a different shape, type or
    labels means the two files do not belong together (a write killed between its two renames)."""
    from daphnec.runtime.io.atomic import written_meta

    text = written_meta(data_path)
    if text is None:
        return
    try:
        then = parse_meta(text, where)
    except MetaDataError:
        return
    if (then.num_rows, then.num_cols, then.labels) == (meta.num_rows, meta.num_cols, meta.labels) and (
        then.value_types == meta.value_types
    ):
        return
    raise MetaDataError(f"'{data_path}' and its .meta do not belong together: the data was written as "
                        f"{_describe(then)}, but '{where}' describes {_describe(meta)} (was writing them "
                        "interrupted? write both again)")  # fmt: skip


def _describe(m: FileMeta) -> str:
    if m.labels is None:
        return f"a {m.num_rows}x{m.num_cols} {m.value_type} matrix"
    return f"a {m.num_rows}x{m.num_cols} frame ({', '.join(m.value_types)})"


def parse_meta(text: str, where: str, data_path: str | None = None) -> FileMeta:
    """Parse meta data JSON text; `where` names the file in error messages. The sizes are checked against the data
    file `data_path` (if it exists) before anything per column is built (`check_sizes`)."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise MetaDataError(f"meta data file '{where}' is not valid JSON: {e}") from None
    if not isinstance(doc, dict):
        raise MetaDataError(f"meta data file '{where}' must contain a JSON object")
    rows = _size(doc, "numRows", where)
    cols = _size(doc, "numCols", where)
    nnz = _non_zeros(doc, where)
    check_sizes(rows, cols, nnz, where, data_path)
    is_hdfs = _hdfs(doc, where)
    if "schema" not in doc:
        if "valueType" not in doc:
            raise MetaDataError(f'meta data file \'{where}\' needs a "valueType" key (or a "schema" for a frame)')
        vt = _value_type(doc["valueType"], "valueType", where, allow_empty=False)
        return FileMeta(rows, cols, Repeated(vt, cols), None, nnz, is_hdfs)
    default = _value_type(doc["valueType"], "valueType", where, allow_empty=True) if "valueType" in doc else ""
    vts, labels = _schema(doc["schema"], default, where)
    if len(vts) != cols:
        raise MetaDataError(
            f'meta data file \'{where}\': "schema" describes {len(vts)} column(s), but "numCols" is {cols}'
        )
    return FileMeta(rows, cols, tuple(vts), tuple(labels), nnz, is_hdfs)


COLUMN_BYTES = 64
"""A lower bound of what one column costs in per-column tables (labels, types, a frame's column object)."""


def check_sizes(rows: int, cols: int, nnz: int, where: str, data_path: str | None) -> None:
    """Refuse sizes that cannot be true before anything is allocated for them: more columns than this machine can
    hold tables for, or (for an existing `.csv` data file) more cells than the file has bytes. A dense CSV row of
    n cells has at least n - 1 separators and a line end; DAPHNE's sparse CSV has a `row,col` line per non-zero."""
    if cols * COLUMN_BYTES > machine_bytes():
        raise MetaDataError(f"meta data file '{where}': \"numCols\" is {cols}, more columns than this machine's "
                            f"memory can describe")  # fmt: skip
    if data_path is None or not data_path.endswith(".csv") or not os.path.isfile(data_path):
        return
    need = rows * cols - 1 if rows and cols else 0
    if nnz >= 0:
        need = min(need, 4 * nnz - 1 if nnz else 0)
    size = os.path.getsize(data_path)
    if size < need:
        raise MetaDataError(f"meta data file '{where}' describes a {rows}x{cols} matrix, but '{data_path}' has only "
                            f"{size} bytes (at least {need} needed)")  # fmt: skip


def _size(doc: dict, key: str, where: str) -> int:
    if key not in doc:
        raise MetaDataError(f'meta data file \'{where}\' needs the "{key}" key ("numRows" and "numCols" are required)')
    v = doc[key]
    if type(v) is float and v.is_integer():
        v = int(v)  # nlohmann's get<size_t>() accepts 2.0 as well
    if type(v) is not int or v < 0:
        raise MetaDataError(f"meta data file '{where}': \"{key}\" must be a non-negative integer, got {json.dumps(v)}")
    return v


def _non_zeros(doc: dict, where: str) -> int:
    v = doc.get("numNonZeros", -1)
    if type(v) is not int or v < -1:
        raise MetaDataError(f"meta data file '{where}': \"numNonZeros\" must be an integer >= -1, got {json.dumps(v)}")
    return v


def _hdfs(doc: dict, where: str) -> bool:
    if "hdfs" not in doc:
        return False
    h = doc["hdfs"]
    if not isinstance(h, dict) or not isinstance(h.get("isHDFS", False), bool):
        raise MetaDataError(
            f'meta data file \'{where}\': "hdfs" must be an object like {{"isHDFS": true, "HDFSFilename": "/name"}}'
        )
    return bool(h.get("isHDFS", False))


def _value_type(v: object, key: str, where: str, allow_empty: bool) -> str:
    if not isinstance(v, str):
        raise MetaDataError(f"meta data file '{where}': \"{key}\" must be a string, got {json.dumps(v)}")
    if v == "" and allow_empty:
        return ""
    if v not in META_VALUE_TYPES:
        raise MetaDataError(
            f"meta data file '{where}': unknown value type '{v}' for \"{key}\" "
            f"(expected one of {', '.join(META_VALUE_TYPES)})"
        )
    return v


def _schema(schema: object, default: str, where: str) -> tuple[list[str], list[str]]:
    if not isinstance(schema, list):
        raise MetaDataError(
            f'meta data file \'{where}\': "schema" must be an array of {{"label", "valueType"}} objects'
        )
    vts, labels = [], []
    for i, col in enumerate(schema):
        key = f"schema[{i}]"
        if not isinstance(col, dict):
            raise MetaDataError(f'meta data file \'{where}\': "{key}" must be an object with "label" and "valueType"')
        label = col.get("label", "")
        if not isinstance(label, str):
            raise MetaDataError(f"meta data file '{where}': \"{key}.label\" must be a string, got {json.dumps(label)}")
        vt = _value_type(col.get("valueType", ""), f"{key}.valueType", where, allow_empty=True) or default
        if not vt:
            raise MetaDataError(
                f"meta data file '{where}': \"{key}.valueType\" is empty and there is no top-level "
                '"valueType" to fall back to'
            )
        vts.append(vt)
        labels.append(label)
    dup = next((lbl for i, lbl in enumerate(labels) if lbl in labels[:i]), None)
    if dup is not None:
        raise MetaDataError(
            f"meta data file '{where}': a frame's column labels must be unique, but '{dup}' occurs "
            'more than once in "schema"'
        )
    return vts, labels


# --- writing -------------------------------------------------------------------------------------------------------


def meta_value_type(vt: str) -> str:
    """The `.meta` name of a run-time value type (`index` is written as `ui64`)."""
    return _VT_FOR_META.get(vt, vt)


def matrix_meta_json(rows: int, cols: int, vt: str) -> str:
    """What DAPHNE's Write kernel writes for a matrix (numNonZeros is never written)."""
    return dump_json({"numRows": rows, "numCols": cols, "valueType": meta_value_type(vt)})


def frame_meta_json(rows: int, labels: list[str], vts: list[str]) -> str:
    """What DAPHNE's Write kernel writes for a frame: a schema with every column's label and value type."""
    schema = [{"label": lbl, "valueType": meta_value_type(vt)} for lbl, vt in zip(labels, vts, strict=True)]
    return dump_json({"numRows": rows, "numCols": len(labels), "schema": schema})


def dump_json(doc: dict) -> str:
    """nlohmann::json::dump(): no spaces, keys sorted, UTF-8 kept as is."""
    return json.dumps(doc, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def exists(data_path: str) -> bool:
    return os.path.isfile(meta_path(data_path))
