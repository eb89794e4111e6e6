"""Column representations of frames besides plain arrays: dictionary-encoded strings and gathers not yet done.

A frame column is a 1-D numpy array (runtime/frame.py). Two relational patterns make eager arrays wasteful: str
columns held as Python objects are slow to hash, compare and gather, and a join or a filter gathers every column
of its input while a query reads a few of them. So a frame may hold, in place of an array,
- a `DictColumn`: a str column as small integer codes into a dictionary of its distinct strings, encoded once
  (when a frame is read); gathers copy codes, and grouping uses the codes as keys;
- a `GatherColumn`: `base[idx]`, not computed yet (the columns of a join's or a filter's result); a later filter
  composes the positions, so a column no op reads is never gathered.
`Frame.columns` turns them into arrays on first use and keeps the arrays, so a kernel that does not know them sees
plain arrays; values, value types and row order are those of the eager gather.
"""

from __future__ import annotations

import numpy as np

Rows = slice | np.ndarray
"""A row selection: a slice or an array of int64 positions."""


class DictColumn:
    """A str column: `dictionary[codes]`, the dictionary holding each distinct string once; `ordered`: the
    dictionary is in ascending order, so codes compare like the strings (as C++ `std::string`'s byte-wise `<`)."""

    __slots__ = ("_value", "codes", "dictionary", "ordered")
    dtype = np.dtype(object)

    def __init__(self, codes: np.ndarray, dictionary: np.ndarray, ordered: bool = False):
        self.codes = codes
        self.dictionary = dictionary
        self.ordered = ordered
        self._value: np.ndarray | None = None

    @classmethod
    def from_arrow(cls, arr) -> DictColumn:  # noqa: ANN001 - a pyarrow (chunked) string array
        """Encode a pyarrow string array: one hash pass in Arrow, then a small dictionary sorted (a large one is
        sorted by the grouping that needs it, restricted to the strings present); codes as narrow as possible."""
        import pyarrow as pa

        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        enc = arr.dictionary_encode()
        dictionary = enc.dictionary.to_numpy(zero_copy_only=False).astype(object)
        codes = enc.indices.to_numpy(zero_copy_only=False)
        n = len(dictionary)
        if n > _ORDER_LIMIT:
            return cls(codes.astype(_code_dtype(n), copy=False), dictionary)
        order = np.argsort(dictionary, kind="stable")
        rank = np.empty(n, dtype=_code_dtype(n))
        rank[order] = np.arange(n)
        return cls(rank[codes], dictionary[order], ordered=True)

    @classmethod
    def encode(cls, values: np.ndarray) -> DictColumn:
        """Encode an object array of Python strings."""
        import pyarrow as pa

        return cls.from_arrow(pa.array(values, type=pa.string()))

    def __len__(self) -> int:
        return len(self.codes)

    def materialize(self) -> np.ndarray:
        if self._value is None:
            empty = not len(self.dictionary)
            self._value = np.empty(len(self.codes), dtype=object) if empty else self.dictionary[self.codes]
        return self._value

    def take(self, rows: Rows) -> DictColumn:
        return DictColumn(self.codes[rows], self.dictionary, self.ordered)

    def keys(self) -> tuple[np.ndarray, np.ndarray]:
        """(codes, uniques) with codes in ascending string order, not necessarily dense (`uniques[codes]` gives
        the values back): grouping keys without hashing, and with an ordered dictionary without a pass."""
        return (self.codes, self.dictionary) if self.ordered else self.dense()

    def dense(self) -> tuple[np.ndarray, np.ndarray]:
        """(codes, uniques) of the strings present, codes dense and in ascending string order (`uniques[codes]`
        gives the values back): runtime/kernels/relational.dense_codes without hashing."""
        present = np.flatnonzero(np.bincount(self.codes, minlength=len(self.dictionary)))
        values = self.dictionary[present]
        order = np.argsort(values, kind="stable")
        rank = np.zeros(len(self.dictionary), dtype=np.int64)
        rank[present[order]] = np.arange(len(present))
        return rank[self.codes], values[order]


class GatherColumn:
    """`base[idx]`, gathered when first read (once: the frames that share the column share the array)."""

    __slots__ = ("_value", "base", "idx")

    def __init__(self, base: np.ndarray, idx: np.ndarray):
        self.base = base
        self.idx = idx
        self._value: np.ndarray | None = None

    @property
    def dtype(self) -> np.dtype:
        return self.base.dtype

    def __len__(self) -> int:
        return len(self.idx)

    def materialize(self) -> np.ndarray:
        if self._value is None:
            self._value = self.base[self.idx]
        return self._value


LazyColumn = DictColumn | GatherColumn
Column = np.ndarray | DictColumn | GatherColumn


_ORDER_LIMIT = 1 << 16
"""Dictionaries up to this size are sorted when encoded (a sort of Python strings; larger ones cost seconds)."""


def _code_dtype(n: int) -> np.dtype:
    return np.dtype(np.uint8 if n <= 1 << 8 else np.uint16 if n <= 1 << 16 else np.int32 if n < 1 << 31 else np.int64)


def take_rows(cols: list[Column], rows: Rows) -> list[Column]:
    """The rows `rows` of every column: slices at once (views), positions lazily (codes of dictionary columns at
    once); columns gathered by the same positions compose them once."""
    composed: dict[int, np.ndarray] = {}
    out: list[Column] = []
    for c in cols:
        if isinstance(c, DictColumn):
            out.append(c.take(rows))
        elif isinstance(c, GatherColumn):
            idx = composed.get(id(c.idx))
            if idx is None:
                idx = composed[id(c.idx)] = c.idx[rows]
            out.append(GatherColumn(c.base, idx))
        elif isinstance(rows, slice):
            out.append(c[rows])
        else:
            out.append(GatherColumn(c, rows))
    return out


def materialize(c: Column) -> np.ndarray:
    return c if isinstance(c, np.ndarray) else c.materialize()
