"""The placement cache: which of the coordinator's matrices already live on the workers, and where.

A loop such as connected components runs the same pipelines over the same graph many times; shipping the graph
once per iteration would dominate the run. The coordinator therefore remembers what every worker holds:

- the key is the Python object itself (its `id`, guarded by a weak reference, so an id reused after the object
  died never matches) plus a fingerprint (type, shape, dtype, non-zeros, data address). Run-time values are
  mutated once another object may hold a copy: kernels are copy-on-write (docs/architecture.md), and the one
  kernel that writes in place (an insert whose old value is dead, compiler/passes/in_place_insert.py) writes only
  buffers the program owns alone, so a cached matrix is made read-only here and that kernel's first write copies
  it. Identity is therefore enough; the fingerprint is the "version" that would catch a violation of that rule;
- a matrix is held either as a *replica* (every worker has all of it; for inputs a pipeline needs whole) or as
  *pieces*: rows [first, end) on one worker, under an object id of that worker's store. Pieces come from
  shipping a task's rows, and from results: each worker keeps the rows it computed of every ROWS-combined result,
  so the next pipeline that reads the result (connected components' next `c`) finds them in place;
- when the object dies on the coordinator, a weak-reference finalizer queues its ids, and the next pipeline
  message tells the workers to drop them, so worker memory follows the coordinator's.

The scheduler asks `holders` which workers already has a chunk's rows (locality-aware assignment, coordinator.py).
The worker side (`ObjectStore`) maps ids to the stored value and the first row it holds.
"""

from __future__ import annotations

import bisect
import weakref
from dataclasses import dataclass, field

import numpy as np

from daphnec.runtime.distributed.serialization import row_block
from daphnec.runtime.values import is_csr


@dataclass(frozen=True)
class Piece:
    """Rows [first, end) of a matrix, stored on `worker` under `obj_id`."""

    obj_id: int
    first: int
    end: int
    worker: int


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
    replica: int | None = None
    pieces: dict[int, list[Piece]] = field(default_factory=dict)
    """Per worker, sorted by first row."""

    def ids(self) -> list[int]:
        out = [p.obj_id for ps in self.pieces.values() for p in ps]
        return out + ([self.replica] if self.replica is not None else [])


class PlacementCache:
    """Coordinator side: object -> its replica and pieces on the workers."""

    def __init__(self) -> None:
        self._entries: dict[int, _Entry] = {}
        self._freed: list[int] = []
        self._next_id = 1

    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id - 1

    # -- queries -------------------------------------------------------------------------------------------------

    def replica(self, x: object) -> int | None:
        entry = self._entry(x)
        return entry.replica if entry is not None else None

    def piece(self, x: object, worker: int, a: int, b: int) -> Piece | None:
        """A piece of `x` on `worker` that holds rows [a, b), or None."""
        entry = self._entry(x)
        if entry is None:
            return None
        pieces = entry.pieces.get(worker, [])
        i = bisect.bisect_right([p.first for p in pieces], a) - 1
        if i >= 0 and pieces[i].end >= b:
            return pieces[i]
        return None

    def holders(self, x: object, a: int, b: int, workers: list[int]) -> frozenset[int]:
        """The workers that hold rows [a, b) of `x` as a piece (a replica counts for nobody in particular)."""
        return frozenset(w for w in workers if self.piece(x, w, a, b) is not None)

    # -- updates -------------------------------------------------------------------------------------------------

    def add_replica(self, x: object) -> int:
        entry = self._entry(x) or self._new_entry(x)
        entry.replica = self.new_id()
        return entry.replica

    def add_piece(self, x: object, worker: int, a: int, b: int, obj_id: int | None = None) -> Piece:
        entry = self._entry(x) or self._new_entry(x)
        piece = Piece(self.new_id() if obj_id is None else obj_id, a, b, worker)
        pieces = entry.pieces.setdefault(worker, [])
        pieces.insert(bisect.bisect_right([p.first for p in pieces], a), piece)
        return piece

    def drop(self, obj_ids: list[int]) -> None:
        """Ids the workers were told to keep but that no coordinator object refers to."""
        self._freed.extend(obj_ids)

    def take_freed(self) -> list[int]:
        """Ids the workers may drop (their objects died on the coordinator), each returned once."""
        freed, self._freed = self._freed, []
        return freed

    def _new_entry(self, x: object) -> _Entry:
        if isinstance(x, np.ndarray):
            x.flags.writeable = False  # the workers hold copies: an in-place insert must copy it first
        entry = _Entry(weakref.ref(x), fingerprint(x))
        self._entries[id(x)] = entry
        weakref.finalize(x, self._forget, id(x), entry)
        return entry

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
            self._freed.extend(entry.ids())

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
