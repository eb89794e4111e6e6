"""The pieces of the distributed runtime that need no second process: the `distribute` pass and the shipped body,
DAPHNE's static split, the chunk-picking policy, the placement cache and the value descriptions."""

from __future__ import annotations

import gc
import math
import struct

import numpy as np
import pytest
import scipy.sparse as sp
from xdsl.parser import Parser

from daphnec.compiler.host.shipped import compile_shipped_body
from daphnec.compiler.passes.distribute import distributed_pipelines
from daphnec.compiler.pipeline import PassManager, module_text
from daphnec.dialects import make_context
from daphnec.dialects.errors import ExecutionError
from daphnec.runtime.config import DaphneConfig
from daphnec.runtime.distributed import serialization as ser
from daphnec.runtime.distributed.coordinator import inter_node_scheme, pick_chunk, static_blocks
from daphnec.runtime.distributed.placement import ObjectStore, PlacementCache
from daphnec.runtime.values import NEG_NAN, csr_from_parts
from daphnec.tools.driver import parse_to_ir

# -- the pass and the shipped body ------------------------------------------------------------------------------


def _distributed_module(tmp_path, source: str):  # noqa: ANN202 - an xDSL module
    script = tmp_path / "s.daph"
    script.write_text(source)
    cfg = DaphneConfig()
    cfg.use_distributed = True
    module = parse_to_ir(str(script), {}, cfg)
    PassManager.for_config(make_context(), cfg).run_stages(module)
    return module


def test_every_pipeline_becomes_distributed_and_round_trips(tmp_path) -> None:
    source = (
        "X = rand(50, 3, 0.0, 1.0, 1.0, 1);\nprint(aggMax(X * 2.0));\nprint(t(X + 1.0));\nprint(aggMax(X @ t(X)));\n"
    )
    module = _distributed_module(tmp_path, source)
    text = module_text(module)
    assert 'daphne.vectorizedPipeline"(' not in text.replace("\\22daphne.vectorizedPipeline\\22", "")
    pipes = distributed_pipelines(module)
    assert len(pipes) >= 2
    assert module_text(Parser(make_context(), text).parse_module()) == text
    for p in pipes:  # the shipped text parses and verifies on its own
        Parser(make_context(), p.ir_text).parse_module().verify()


def test_shipped_body_computes_what_the_pipeline_computes(tmp_path) -> None:
    module = _distributed_module(tmp_path, "X = rand(50, 3, 0.0, 1.0, 1.0, 1);\nY = X * 2.0 + 1.0;\nprint(sum(Y));\n")
    (pipe,) = distributed_pipelines(module)
    body = compile_shipped_body(pipe.ir_text)
    X = np.arange(150.0).reshape(50, 3)
    (total,) = body(X)
    assert total == pytest.approx(float(np.sum(X * 2.0 + 1.0)), rel=1e-12)


def test_shipped_body_error_carries_the_source_location(tmp_path) -> None:
    module = _distributed_module(tmp_path, "X = seq(0, 9, 1);\nprint(sum(10 / X));\n")
    (pipe,) = distributed_pipelines(module)
    body = compile_shipped_body(pipe.ir_text)
    with pytest.raises(ExecutionError) as info:
        body(np.arange(10).reshape(10, 1))
    assert info.value.message == "division by zero"
    assert (info.value.loc.file, info.value.loc.line) == (str(tmp_path / "s.daph"), 2)


# -- scheduling -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("n", "w"), [(10, 4), (7, 2), (3, 5), (0, 3), (100, 3)])
def test_static_blocks_follow_daphne(n: int, w: int) -> None:
    blocks = static_blocks(n, w)
    k, m = divmod(n, w)
    assert blocks == [(i * k + min(i, m), (i + 1) * k + min(i + 1, m)) for i in range(w)]
    assert blocks[0][0] == 0 and blocks[-1][1] == n
    assert all(a == prev_b for (a, _), (_, prev_b) in zip(blocks[1:], blocks))


def test_pick_chunk_prefers_own_rows_then_unclaimed_then_steals_from_the_tail() -> None:
    pending = [(0, 40), (40, 60), (60, 70), (70, 80), (80, 90)]
    f = frozenset
    assert pick_chunk(pending, [f({1}), f({2}), f({2}), f(), f({1})], 2) == 1  # its own first
    assert pick_chunk(pending, [f({1}), f({1, 3}), f({1}), f(), f({1})], 3) == 1  # held by several: its own too
    assert pick_chunk(pending, [f({1}), f({1}), f({1}), f(), f({1})], 2) == 3  # then one nobody holds
    assert pick_chunk(pending, [f({1}), f({3}), f({3}), f({3}), f({1})], 2) == 4  # steal: rank 1 has 50 rows left
    assert pick_chunk([], [], 1) is None


def test_pick_chunk_never_steals_a_workers_only_pending_chunk() -> None:
    """It is next in line on its holder; a thief would first receive its rows (and keep a second copy): only a
    much slower holder loses it."""
    f = frozenset
    pending = [(0, 10), (10, 20), (20, 30)]
    assert pick_chunk(pending, [f({1}), f({3}), f({4})], 2) is None  # every holder has one chunk left: wait
    assert pick_chunk(pending, [f({1}), f({3}), f({3})], 2) == 2  # rank 3 has two: its last one is taken
    speed = {1: 100.0, 2: 1000.0, 3: 600.0, 4: 900.0}
    assert pick_chunk(pending, [f({1}), f({3}), f({4})], 2, speed) == 0  # but rank 1 is 10x slower than rank 2
    assert pick_chunk(pending[1:], [f({3}), f({4})], 2, speed) is None  # less than 2x slower: not worth the rows


def test_adaptive_runs_gss_between_nodes() -> None:
    assert inter_node_scheme("ADAPTIVE") == "GSS"
    assert inter_node_scheme("FAC2") == "FAC2"


# -- placement ------------------------------------------------------------------------------------------------------


def test_placement_cache_finds_pieces_and_forgets_dead_objects() -> None:
    cache = PlacementCache()
    x = np.zeros((100, 2))
    p = cache.add_piece(x, 1, 0, 50)
    cache.add_piece(x, 2, 50, 100)
    assert cache.piece(x, 1, 10, 20) == p
    assert cache.piece(x, 1, 40, 60) is None
    assert cache.holders(x, 60, 70, [1, 2]) == {2}
    assert cache.replica(x) is None
    rid = cache.add_replica(x)
    assert cache.replica(x) == rid
    assert cache.replica(np.zeros((100, 2))) is None  # identity, not equality
    del x
    gc.collect()
    assert sorted(cache.take_freed()) == sorted([p.obj_id, p.obj_id + 1, rid])
    assert cache.take_freed() == []
    assert len(cache) == 0


def test_placement_cache_keys_csr_matrices() -> None:
    cache = PlacementCache()
    g = sp.csr_array(np.eye(6))
    cache.add_piece(g, 1, 0, 6)
    assert cache.holders(g, 0, 6, [1, 2]) == {1}


def test_object_store_serves_rows_of_pieces() -> None:
    store = ObjectStore()
    piece = np.arange(20.0).reshape(10, 2)
    store.put(7, piece, first_row=30)
    assert store.rows(7, 30, 40) is piece
    np.testing.assert_array_equal(store.rows(7, 32, 35), piece[2:5])
    g = sp.csr_array(np.eye(10))
    store.put(8, g, first_row=0)
    np.testing.assert_array_equal(store.rows(8, 3, 6).toarray(), np.eye(10)[3:6])
    store.free([7, 8])
    assert len(store) == 0


# -- value descriptions and buffers ---------------------------------------------------------------------------------

VALUES = [
    np.arange(12, dtype=np.float64).reshape(3, 4),
    np.array([[1.5, -0.0], [NEG_NAN, math.inf]], dtype=np.float32),
    np.arange(-5, 5, dtype=np.int64).reshape(5, 2),
    np.arange(-4, 4, dtype=np.int32).reshape(4, 2),
    np.arange(-3, 3, dtype=np.int8).reshape(2, 3),
    np.arange(6, dtype=np.uint64).reshape(3, 2) + np.uint64(2**63),
    np.arange(6, dtype=np.uint32).reshape(2, 3),
    np.arange(6, dtype=np.uint8).reshape(6, 1),
    np.array([[True, False, True]]),
    np.array([["a", "ß"], ["", "x,y"]], dtype=object),
    np.zeros((0, 3)),
    csr_from_parts(
        np.array([1.0, 2.0]), np.array([0, 2], dtype=np.int32), np.array([0, 1, 1, 2], dtype=np.int32), (3, 3)
    ),  # fmt: skip
    sp.csr_array(sp.random(20, 30, density=0.1, random_state=1, dtype=np.float64)),
]


def _copy_through_buffers(x: object) -> object:
    """What a receiver builds from the description and the raw bytes of `x`."""
    desc = ser.describe(x)
    bufs, build = ser.allocate(desc)
    sent = ser.buffers(x)
    assert [b.nbytes for b in bufs] == [b.nbytes for b in sent]
    assert sum(b.nbytes for b in bufs) == ser.nbytes(desc)
    for dst, src in zip(bufs, sent):
        dst[:] = src
    return build()


@pytest.mark.parametrize("x", VALUES, ids=lambda x: f"{getattr(x, 'format', 'dense')}-{x.dtype}")
def test_matrices_survive_their_buffers_bit_for_bit(x: object) -> None:
    y = _copy_through_buffers(x)
    assert type(y) is type(x) or (ser.describe(x)["k"] == "csr" and ser.describe(y)["k"] == "csr")
    if sp.issparse(x):
        assert y.shape == x.shape and y.nnz == x.nnz
        np.testing.assert_array_equal(y.indptr, x.indptr)
        np.testing.assert_array_equal(y.indices, x.indices)
        assert y.data.tobytes() == x.data.tobytes()
    elif x.dtype == object:
        assert y.tolist() == x.tolist()
    else:
        assert y.dtype == x.dtype and y.shape == x.shape and y.tobytes() == x.tobytes()


@pytest.mark.parametrize("v", [3, -(2**63), 2**64 - 1, 2.5, -0.0, NEG_NAN, math.inf, True, False, 's,"t"\n'])
def test_scalars_survive_their_description(v: object) -> None:
    w = ser.scalar_value(ser.describe_scalar(v))
    assert type(w) is type(v)
    if isinstance(v, float):
        assert struct.pack("<d", w) == struct.pack("<d", v)  # the sign of zero and of NaN included
    else:
        assert w == v


def test_row_blocks_of_csr_share_the_value_arrays() -> None:
    g = sp.csr_array(sp.random(50, 40, density=0.2, random_state=2, dtype=np.float64))
    block = ser.row_block(g, 10, 30)
    np.testing.assert_array_equal(block.toarray(), g.toarray()[10:30])
    assert np.shares_memory(block.data, g.data)
