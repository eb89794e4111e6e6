"""`--codegen` matrix products (compiler/lowering/lower_matmul_to_loops.py): the native loop nests against the BLAS
path (the runtime's `matmul` kernel, what daphnec runs without `--codegen`).

Kernels are built as the compiler builds them: a module holding one `daphne.matMul` goes through
`compiler.backend.native.compile_kernels` (the pass `lower-matmul-to-loops`, `convert-to-llvm`, the JIT) and the product
runs through the runtime's wrapper (runtime/kernels/native_matmul.py). Shapes are drawn so that they are rarely
multiples of the tile, block or vector sizes (and include empty matrices), operands may be transposed
(`transa`/`transb`, as `fold-transpose` marks them), and the schedule is one of the `--matmul-*` settings.

Tolerance: integers are exact (both wrap); a float cell may differ from BLAS only by the rounding of a different
summation order, bounded by `tol * (|op(A)| @ |op(B)|)` with tol 1e-12 for f64 (the project's reduction promise,
README.md) and 1e-5 for f32 (accumulated in f32). Every schedule adds the products of a cell in the same order, so
they agree with each other bit for bit.
"""

from __future__ import annotations

from dataclasses import asdict

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from daphnec.compiler.backend.native import compile_kernels
from daphnec.compiler.lowering.abi import kernel_symbol
from daphnec.compiler.lowering.lower_matmul_to_loops import MatMulSettings
from daphnec.compiler.pipeline import PassManager
from daphnec.dialects import make_context, ops_matrix
from daphnec.dialects.attr_names import NATIVE_FALLBACK_ATTR
from daphnec.runtime.kernels.matmul import matmul
from daphnec.runtime.kernels.native_matmul import run_native
from daphnec.runtime.values import DTYPES

SCHEDULES = (
    MatMulSettings(),
    MatMulSettings(invert_loops=True),
    MatMulSettings(vec_size_bits=256, unroll_factor=2),
    MatMulSettings(invert_loops=True, vec_size_bits=128, unroll_factor=3),
    MatMulSettings(tile=True),
    MatMulSettings(tile=True, vec_size_bits=512),
    MatMulSettings(tile=True, fixed_tile_sizes=(2, 3, 4, 5, 6), vec_size_bits=128),
    MatMulSettings(tile=True, fixed_tile_sizes=(5,), unroll_jam_factor=3, num_vec_registers=8),
)
TOL = {"f64": 1e-12, "f32": 1e-5}


@pytest.fixture(autouse=True, scope="module")
def no_disk_cache():  # noqa: ANN201 - a fixture
    """Compile every kernel (no on-disk kernel cache)."""
    from daphnec.runtime import cache_files

    cache_files.OBJECT_CODE.enabled = False
    yield
    cache_files.OBJECT_CODE.enabled = True


def product_module(vt: str, types: tuple[str, str, str], flags: str = "", attrs: str = "") -> ModuleOp:
    """`func @main(A, B) { C = matMul(A, B) }` with dynamic sizes, as the compiler sees a product."""
    a, b, c = (f"!daphne.Matrix<?x?x{t}>" for t in types)
    text = f"""func.func @main(%A: {a}, %B: {b}) -> {c} {{
      %C = "daphne.matMul"(%A, %B) {flags} {attrs} : ({a}, {b}) -> {c}
      func.return %C : {c}
    }}"""
    return Parser(make_context(), text).parse_module()


def compiled(module: ModuleOp, s: MatMulSettings):  # noqa: ANN201 - the kernel or None
    pm = PassManager(
        make_context(),
        options=frozenset({"native", "native_matmul"}),
        pass_args={"lower-matmul-to-loops": asdict(s)},
    )
    kernels = compile_kernels(module, pm)
    op = next(o for o in module.walk() if isinstance(o, ops_matrix.MatMulOp))
    sym = kernel_symbol(op)
    return op, (kernels.get(sym) if sym is not None else None)


def _data(rng: np.random.Generator, shape: tuple[int, int], vt: str) -> np.ndarray:
    if vt in ("f64", "f32"):
        return rng.uniform(-1.0, 1.0, shape).astype(DTYPES[vt])
    return rng.integers(-1000, 1000, shape).astype(DTYPES[vt])


def native_product(vt: str, ta: bool, tb: bool, s: MatMulSettings, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    flags = "<{" + ", ".join(f for f, on in (("transa", ta), ("transb", tb)) if on) + "}>" if ta or tb else ""
    _, kernel = compiled(product_module(vt, (vt, vt, vt), flags), s)
    assert kernel is not None

    def blas(x: object, y: object) -> object:
        raise AssertionError("the native kernel handed the product back to BLAS")

    return run_native(kernel.bind, blas, a, b)  # type: ignore[return-value]


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    vt=st.sampled_from(("f64", "f64", "f32", "si64", "ui8")),
    m=st.integers(0, 37),
    k=st.integers(0, 37),
    n=st.integers(0, 41),
    ta=st.booleans(),
    tb=st.booleans(),
    sched=st.sampled_from(SCHEDULES),
    seed=st.integers(0, 2**32 - 1),
)
@example(vt="f64", m=67, k=259, n=261, ta=False, tb=False, sched=SCHEDULES[5], seed=1)  # beyond one auto tile
@example(vt="f64", m=1, k=1, n=1, ta=True, tb=True, sched=SCHEDULES[6], seed=2)
def test_native_product_matches_blas(
    vt: str, m: int, k: int, n: int, ta: bool, tb: bool, sched: MatMulSettings, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    a = _data(rng, (k, m) if ta else (m, k), vt)
    b = _data(rng, (n, k) if tb else (k, n), vt)
    got = native_product(vt, ta, tb, sched, a, b)
    ref = matmul(a, b, vt, transa=ta, transb=tb)
    assert got.shape == ref.shape == (m, n) and got.dtype == ref.dtype and got.flags.c_contiguous
    if vt not in TOL:
        np.testing.assert_array_equal(got, ref)
        return
    oa, ob = (a.T if ta else a), (b.T if tb else b)
    bound = TOL[vt] * (np.abs(oa).astype(np.float64) @ np.abs(ob).astype(np.float64))
    assert np.all(np.abs(got.astype(np.float64) - ref.astype(np.float64)) <= bound)


def test_every_schedule_gives_the_same_bits() -> None:
    """Same summation order per cell, whatever the loop nest: the schedules agree exactly."""
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((45, 70)), rng.standard_normal((70, 29))
    results = [native_product("f64", False, False, s, a, b) for s in SCHEDULES]
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])


def test_operands_of_another_form_run_blas() -> None:
    """A non-contiguous view is copied for the kernel; another dtype (or a CSR matrix) goes to the fallback."""
    _, kernel = compiled(product_module("f64", ("f64", "f64", "f64")), MatMulSettings(tile=True))
    calls: list[str] = []

    def blas(x: np.ndarray, y: object) -> object:
        calls.append("blas")
        return matmul(x, y, "f64")

    a = np.asfortranarray(np.arange(12.0).reshape(3, 4))
    b = np.arange(8.0).reshape(4, 2)
    np.testing.assert_array_equal(run_native(kernel.bind, blas, a, b), a @ b)
    assert calls == []
    run_native(kernel.bind, blas, a.astype(np.float32), b)
    assert calls == ["blas"]


@pytest.mark.parametrize(
    ("types", "attrs", "why"),
    [
        (("f64", "si64", "f64"), "", "mixed value types"),
        (("i1", "i1", "i1"), "", "value type bool"),
        (("f64", "f64", "f64"), '{kernel = "_matMul__DenseMatrix_double"}', "a kernel hint"),
    ],
)
def test_products_without_a_native_kernel_say_why(types: tuple[str, str, str], attrs: str, why: str) -> None:
    op, kernel = compiled(product_module("f64", types, attrs=attrs), MatMulSettings())
    assert kernel is None and why in op.attributes[NATIVE_FALLBACK_ATTR].data  # type: ignore[attr-defined]
