"""The placement cache: which of the coordinator's matrices already live on the workers, and how.

A loop such as connected components runs the same pipelines over the same graph many times; shipping the graph
once per iteration would dominate the run. The coordinator therefore remembers every object it has shipped:

- the key is the Python object itself (its `id`, guarded by a weak reference, so an id reused after the object
  died never matches) plus a fingerprint (type, shape, dtype, non-zeros, data address). Run-time values are
  never mutated (every kernel is copy-on-write, docs/architecture.md), so identity is enough; the fingerprint is
  the "version" that would catch a violation of that rule;
- the value is a `Placement`: the object id under which the workers store it, and its layout — `REPLICATED`
  (every worker holds the whole matrix) or `BLOCKS` (worker i holds rows blocks[i], DAPHNE's contiguous split);
- when the object dies on the coordinator, a weak-reference finalizer queues its ids, and the next pipeline
  message tells the workers to drop them, so worker memory follows the coordinator's.

Results combined by ROWS under STATIC scheduling are registered too: each worker keeps its block of the result,
so when the next pipeline reads that result (the next iteration's `c` in connected components) nothing is sent.

The worker side (`ObjectStore`) maps ids to the stored value and the first row it holds.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

import numpy as np

from runtime.distributed.serialization import row_block
from runtime.values import is_csr

REPLICATED = "replicated"
BLOCKS = "blocks"

Block = tuple[int, int]


@dataclass(frozen=True)
class Placement:
    obj_id: int
    layout: str
    blocks: tuple[Block, ...] = ()
    """Per worker (in rank order) for BLOCKS; empty for REPLICATED."""

    def first_row(self, worker_index: int) -> int:
        """The row of the whole matrix at which worker `worker_index`'s stored piece starts."""
        return self.blocks[worker_index][0] if self.layout == BLOCKS else 0


def fingerprint(x: object) -> tuple[object, ...]:
    """What must not change while an object is cached (it never does: values are immutable)."""
    if is_csr(x):
        return ("csr", x.shape, x.data.dtype.str, x.nnz, x.data.__array_interface__["data"][0],  # type: ignore[attr-defined]
                x.indices.__array_interface__["data"][0])  # type: ignore[attr-defined]  # fmt: skip
    assert isinstance(x, np.ndarray)
    return ("dense", x.shape, x.dtype.str, x.__array_interface__["data"][0])


@dataclass
class _Entry:
    ref: weakref.ref
    fingerprint: tuple[object, ...]
    placements: list[Placement] = field(default_factory=list)


class PlacementCache:
    """Coordinator side: object -> placements on the workers."""

    def __init__(self) -> None:
        self._entries: dict[int, _Entry] = {}
        self._freed: list[int] = []
        self._next_id = 1

    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id - 1

    def find(self, x: object, layout: str, blocks: tuple[Block, ...] = ()) -> Placement | None:
        """A placement of `x` with that layout (and those blocks), or None."""
        entry = self._entry(x)
        if entry is None:
            return None
        for p in entry.placements:
            if p.layout == layout and (layout == REPLICATED or p.blocks == blocks):
                return p
        return None

    def add(self, x: object, layout: str, blocks: tuple[Block, ...] = (), obj_id: int | None = None) -> Placement:
        """Record that the workers now hold `x` (under a new id unless one is given)."""
        entry = self._entry(x)
        if entry is None:
            entry = _Entry(weakref.ref(x), fingerprint(x))
            self._entries[id(x)] = entry
            weakref.finalize(x, self._forget, id(x), entry)
        p = Placement(self.new_id() if obj_id is None else obj_id, layout, blocks)
        entry.placements.append(p)
        return p

    def _entry(self, x: object) -> _Entry | None:
        entry = self._entries.get(id(x))
        if entry is None or entry.ref() is not x:
            return None
        if entry.fingerprint != fingerprint(x):  # a mutated value: never trust its old copies
            self._forget(id(x), entry)
            return None
        return entry

    def _forget(self, key: int, entry: _Entry) -> None:
        if self._entries.get(key) is entry:
            del self._entries[key]
            self._freed.extend(p.obj_id for p in entry.placements)

    def take_freed(self) -> list[int]:
        """Ids the workers may drop (their objects died on the coordinator), each returned once."""
        freed, self._freed = self._freed, []
        return freed

    def __len__(self) -> int:
        return len(self._entries)


class ObjectStore:
    """Worker side: id -> (stored value, first row of the whole matrix it holds)."""

    def __init__(self) -> None:
        self._objects: dict[int, tuple[object, int]] = {}

    def put(self, obj_id: int, value: object, first_row: int = 0) -> None:
        self._objects[obj_id] = (value, first_row)

    def free(self, ids: list[int]) -> None:
        for i in ids:
            self._objects.pop(i, None)

    def whole(self, obj_id: int) -> object:
        return self._objects[obj_id][0]

    def rows(self, obj_id: int, a: int, b: int) -> object:
        """Rows a..b-1 of the whole matrix, from the stored piece (the piece itself when it is exactly those rows)."""
        value, first = self._objects[obj_id]
        lo, hi = a - first, b - first
        if lo == 0 and hi == value.shape[0]:  # type: ignore[attr-defined]
            return value
        return row_block(value, lo, hi)

    def __len__(self) -> int:
        return len(self._objects)
