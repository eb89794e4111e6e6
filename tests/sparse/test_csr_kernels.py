"""CSR kernels against the dense path: every supported op on random data (NaN and inf included), every value type,
must give the same values as densifying first, and zero-preserving ops must keep CSR."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from daphnec.dialects.op_kinds import EW_BINARY, EW_UNARY
from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.kernels import agg, datagen, datagen_csr, ew_binary, ew_unary, indexing, matmul, matrix_ops, reorg
from daphnec.runtime.printing import format_obj, type_name
from daphnec.runtime.values import as_dense, cast_matrix, is_csr, to_csr, with_pattern

DTYPES = {"f64": np.float64, "f32": np.float32, "si64": np.int64, "si32": np.int32, "si8": np.int8,
          "ui64": np.uint64, "ui8": np.uint8, "bool": np.bool_}  # fmt: skip


def random_csr(
    rng: np.random.Generator,
    shape: tuple[int, int],
    density: float,
    vt: str,
    specials: bool = False,
    integral: bool = False,
):
    """A canonical CSR matrix with small values (negative too); floats may hold NaN, inf and an explicit zero, or
    only integral values (`integral`), whose sums are exact in any order."""
    a = sp.random_array(shape, density=density, rng=rng, format="csr")
    a.data = a.data * 10 - 4
    dt = np.dtype(DTYPES[vt])
    if dt.kind != "f" or integral:
        a.data = np.round(a.data)
    elif specials and a.nnz >= 3:
        a.data[rng.integers(0, a.nnz, 3)] = [np.nan, np.inf, 0.0]
    with np.errstate(invalid="ignore"):
        m = sp.csr_array(a.astype(dt))
    m.sum_duplicates()
    return m


def same(got, expected) -> bool:
    """Equal values and value type (NaN equals NaN; the CSR/dense choice is not compared)."""
    g = as_dense(got)
    e = np.asarray(expected)
    return g.dtype == e.dtype and g.shape == e.shape and np.array_equal(g, e, equal_nan=g.dtype.kind == "f")


def outcome(fn, *args):
    """The result of fn(*args), or the error message it raised."""
    try:
        with np.errstate(all="ignore"):
            return fn(*args), None
    except DaphneRuntimeError as e:
        return None, str(e)


# --- element-wise binary -----------------------------------------------------------------------------------------


def _defined(factory, *args: str) -> bool:
    """Whether a kernel exists for these types (undefined combinations are compile errors, not CSR cases)."""
    try:
        factory(*args)
    except DaphneRuntimeError:
        return False
    return True


BINARY_CASES = [(op, vt) for op in EW_BINARY if op != "concat" for vt in DTYPES
                if _defined(ew_binary.matrix_kernel, op, vt)]  # fmt: skip


def _binary_operand_pairs(rng: np.random.Generator, vt: str) -> list[tuple[object, object]]:
    dt = np.dtype(DTYPES[vt])
    a = random_csr(rng, (6, 5), 0.3, vt, specials=True)
    b = random_csr(rng, (6, 5), 0.3, vt, specials=True)
    d = as_dense(random_csr(rng, (6, 5), 0.7, vt))
    row, col, one = random_csr(rng, (1, 5), 0.6, vt), random_csr(rng, (6, 1), 0.6, vt), random_csr(rng, (1, 1), 1.0, vt)
    s, z = dt.type(3), dt.type(0)
    return [(a, s), (s, a), (a, z), (z, a), (a, b), (a, d), (d, a), (a, row), (a, as_dense(row)), (a, col),
            (a, as_dense(col)), (a, one), (d, row), (a, a)]  # fmt: skip


@pytest.mark.parametrize(("op", "vt"), BINARY_CASES, ids=[f"{o}-{v}" for o, v in BINARY_CASES])
def test_ew_binary_csr_equals_dense(op: str, vt: str) -> None:
    kernel = ew_binary.matrix_kernel(op, vt)
    rng = np.random.default_rng(hash((op, vt)) % 2**32)
    for _ in range(4):
        for lhs, rhs in _binary_operand_pairs(rng, vt):
            dense_res, dense_err = outcome(kernel, as_dense(lhs), as_dense(rhs))
            csr_res, csr_err = outcome(kernel, lhs, rhs)
            assert csr_err == dense_err
            if dense_err is None:
                assert same(csr_res, dense_res), (op, vt, lhs, rhs)


@pytest.mark.parametrize("vt", ["f64", "si64", "ui8", "f32"])
def test_zero_preserving_binary_ops_keep_csr(vt: str) -> None:
    rng = np.random.default_rng(1)
    a, b = random_csr(rng, (8, 7), 0.2, vt), random_csr(rng, (8, 7), 0.2, vt)
    two = np.dtype(DTYPES[vt]).type(2)
    mul, add, sub = (ew_binary.matrix_kernel(k, vt) for k in ("mul", "add", "sub"))
    assert is_csr(mul(a, two)) and is_csr(mul(two, a))
    assert is_csr(add(a, b)) and is_csr(sub(a, b)) and is_csr(mul(a, b))
    assert is_csr(mul(a, as_dense(random_csr(rng, (8, 7), 1.0, "si64")).astype(DTYPES[vt])))
    assert not is_csr(add(a, two))  # 0 + 2 is not zero: a dense result


def test_csr_times_dense_with_nan_is_dense_and_exact() -> None:
    a = to_csr(np.array([[0.0, 1.0], [2.0, 0.0]]))
    d = np.array([[np.nan, 1.0], [1.0, np.inf]])
    res = ew_binary.matrix_kernel("mul", "f64")(a, d)
    assert not is_csr(res)
    assert same(res, np.array([[np.nan, 1.0], [2.0, np.nan]]))


def test_binary_shape_mismatch_with_csr() -> None:
    a = to_csr(np.eye(3))
    with pytest.raises(DaphneRuntimeError, match="ewAdd: shape mismatch: lhs 3x3, rhs 2x3"):
        ew_binary.matrix_kernel("add", "f64")(a, to_csr(np.ones((2, 3))))


def test_integer_division_by_zero_with_csr() -> None:
    a = to_csr(np.array([[0, 4], [0, 0]], dtype=np.int64))
    div = ew_binary.matrix_kernel("div", "si64")
    with pytest.raises(DaphneRuntimeError, match="division by zero"):
        div(np.int64(1), a)
    with pytest.raises(DaphneRuntimeError, match="division by zero"):
        div(a, np.int64(0))
    assert same(div(a, np.int64(3)), np.array([[0, 1], [0, 0]], dtype=np.int64))


# --- element-wise unary ------------------------------------------------------------------------------------------

UNARY_CASES = [(op, vt) for op in EW_UNARY if op not in ew_unary.STR_OPS for vt in DTYPES
               if _defined(ew_unary.matrix_kernel, op, vt)]  # fmt: skip


@pytest.mark.parametrize(("op", "vt"), UNARY_CASES, ids=[f"{o}-{v}" for o, v in UNARY_CASES])
def test_ew_unary_csr_equals_dense(op: str, vt: str) -> None:
    kernel = ew_unary.matrix_kernel(op, vt)
    rng = np.random.default_rng(hash((op, vt)) % 2**32)
    for density in (0.0, 0.3, 1.0):
        a = random_csr(rng, (7, 6), density, vt, specials=True)
        if op in ("sqrt", "ln", "asin", "acos"):  # keep most inputs in the domain, so both paths compute
            a.data = np.abs(a.data) / (10 if op in ("asin", "acos") else 1)
        dense_res, dense_err = outcome(kernel, as_dense(a))
        csr_res, csr_err = outcome(kernel, a)
        assert csr_err == dense_err
        if dense_err is None:
            assert same(csr_res, dense_res), (op, vt)
            if EW_UNARY[op].zero_preserving and density < 1.0:  # the record says so: the kernel keeps CSR
                assert is_csr(csr_res)


def test_unary_domain_error_names_the_stored_value() -> None:
    a = to_csr(np.array([[0.0, 0.0], [-4.0, 0.0]]))
    with pytest.raises(DaphneRuntimeError, match="invalid argument '-4' passed to unary func SQRT"):
        ew_unary.matrix_kernel("sqrt", "f64")(a)


def test_exp_of_csr_is_dense() -> None:
    a = to_csr(np.array([[0.0, 1.0]]))
    res = ew_unary.matrix_kernel("exp", "f64")(a)
    assert not is_csr(res) and same(res, np.exp(np.array([[0.0, 1.0]])))


# --- aggregations --------------------------------------------------------------------------------------------------

_AGG_FACTORIES = {"all": agg.full_kernel, "row": agg.row_kernel, "col": agg.col_kernel}
AGG_CASES = [(op, axis, vt) for op in agg.AGG_OPS for axis in ("all", "row", "col")
             for vt in ("f64", "f32", "si64", "ui8", "si8", "bool")
             if _defined(_AGG_FACTORIES[axis], op, vt)]  # fmt: skip
SHAPES = [(7, 6, 0.3), (1, 9, 0.5), (9, 1, 0.5), (5, 5, 1.0), (4, 4, 0.0), (60, 700, 0.6), (50, 3, 0.9)]


@pytest.mark.parametrize(("op", "axis", "vt"), AGG_CASES, ids=[f"{o}-{a}-{v}" for o, a, v in AGG_CASES])
def test_aggregation_csr_equals_dense(op: str, axis: str, vt: str) -> None:
    kernel = _AGG_FACTORIES[axis](op, vt)
    rng = np.random.default_rng(hash((op, axis, vt)) % 2**32)
    for rows, cols, density in SHAPES:
        for specials in (False, True):
            a = random_csr(rng, (rows, cols), density, vt, specials)
            dense_res, dense_err = outcome(kernel, as_dense(a))
            csr_res, csr_err = outcome(kernel, a)
            assert csr_err == dense_err
            if dense_err is not None:
                continue
            if axis == "all":
                assert type(csr_res) is type(dense_res)
                assert csr_res == dense_res or (csr_res != csr_res and dense_res != dense_res)
            else:  # bit-identical: float sums are sequential folds on both paths
                assert csr_res.dtype == dense_res.dtype and csr_res.tobytes() == dense_res.tobytes(), (op, axis, vt)


def test_min_max_account_for_implicit_zeros() -> None:
    a = to_csr(np.array([[3.0, 0.0], [-2.0, -5.0], [4.0, 1.0]]))
    assert agg.full_kernel("min", "f64")(to_csr(np.array([[3.0, 0.0]]))) == 0.0
    assert agg.full_kernel("max", "f64")(to_csr(np.array([[-3.0, 0.0]]))) == 0.0
    assert same(agg.row_kernel("max", "f64")(a), np.array([[3.0], [-2.0], [4.0]]))
    assert same(agg.col_kernel("min", "f64")(a), np.array([[-2.0, -5.0]]))
    assert same(agg.row_kernel("min", "f64")(a), np.array([[0.0], [-5.0], [1.0]]))


# --- matmul, transpose, reshape, indexing -------------------------------------------------------------------------


@pytest.mark.parametrize("vt", ["f64", "f32", "si64", "si8", "ui8", "bool"])
def test_matmul_with_csr(vt: str) -> None:
    rng = np.random.default_rng(7)
    a, b = random_csr(rng, (30, 20), 0.2, vt, integral=True), random_csr(rng, (20, 10), 0.3, vt, integral=True)
    d = as_dense(random_csr(rng, (20, 10), 0.8, vt, integral=True))
    e = as_dense(random_csr(rng, (5, 30), 0.8, vt, integral=True))
    for lhs, rhs in ((a, b), (a, d), (e, a), (a, as_dense(b))):
        expected = matmul.matmul(as_dense(lhs), as_dense(rhs), vt)  # integer-valued data: exact in every order
        assert same(matmul.matmul(lhs, rhs, vt), expected)
    assert is_csr(matmul.matmul(a, b, vt)) and not is_csr(matmul.matmul(a, d, vt))


def test_matmul_shape_mismatch_with_csr() -> None:
    with pytest.raises(DaphneRuntimeError, match="matMul: shape mismatch: lhs 3x3, rhs 2x2"):
        matmul.matmul(to_csr(np.eye(3)), np.eye(2), "f64")


@pytest.mark.parametrize("vt", ["f64", "f32", "si64", "ui8", "bool"])
def test_triangles_diagonals_and_syrk_keep_csr(vt: str) -> None:
    """The ops DAPHNE infers sparsity for give a CSR matrix with the dense path's values (syrk on integral data,
    exact in every order)."""
    rng = np.random.default_rng(5)
    a = random_csr(rng, (25, 25), 0.2, vt, integral=True)
    for upper in (True, False):
        for diag in (True, False):
            for values in (True, False):
                r = matrix_ops.tri(a, upper, diag, values)
                assert (
                    is_csr(r) and r.has_canonical_format and same(r, matrix_ops.tri(as_dense(a), upper, diag, values))
                )
    assert same(matrix_ops.diag_vector(a), matrix_ops.diag_vector(as_dense(a)))
    col = matrix_ops.diag_vector(a)
    d = datagen_csr.diag_matrix(col)
    assert is_csr(d) and d.nnz == np.count_nonzero(col) and same(d, datagen.diag_matrix(col))
    if vt != "bool":
        s = matrix_ops.syrk(a)
        assert is_csr(s) and same(s, matrix_ops.syrk(as_dense(a)))


def test_syrk_is_exactly_symmetric() -> None:
    """A general product of a materialised transpose rounds (i, j) and (j, i) differently; syrk mirrors."""
    x = np.random.default_rng(3).random((1000, 37))
    s = matrix_ops.syrk(x)
    assert (s == s.T).all()
    c = matrix_ops.syrk(to_csr(np.where(x < 0.3, x, 0.0)))
    assert is_csr(c) and (c != c.T).nnz == 0


def test_transpose_and_reshape_keep_csr() -> None:
    a = random_csr(np.random.default_rng(3), (30, 20), 0.2, "f64", specials=True)
    t = reorg.transpose(a)
    assert is_csr(t) and t.has_canonical_format and same(t, as_dense(a).T)
    for shape in ((60, 10), (600, 1), (1, 600), (20, 30)):
        r = reorg.reshape(a, *shape)
        assert is_csr(r) and same(r, as_dense(a).reshape(shape))
    with pytest.raises(DaphneRuntimeError, match="reshape: cannot reshape a 30x20 matrix"):
        reorg.reshape(a, 7, 7)


@pytest.mark.parametrize(
    "selection",
    [
        ((3, 9), None),
        ((-5, None), None),
        ((0, 0), None),
        (None, (2, 5)),
        (4, None),
        (np.array([[3], [1], [3]]), None),
        ((1, 4), np.array([[0], [5]])),
    ],  # fmt: skip
)
def test_extract_from_csr(selection: tuple) -> None:
    a = random_csr(np.random.default_rng(4), (30, 20), 0.2, "si64")
    got = indexing.extract(a, *selection)
    assert is_csr(got) and same(got, indexing.extract(as_dense(a), *selection))


def test_row_slice_shares_the_stored_values() -> None:
    a = random_csr(np.random.default_rng(5), (30, 20), 0.3, "f64")
    s = indexing.extract(a, (10, 20), None)
    assert np.shares_memory(s.data, a.data) and np.shares_memory(s.indices, a.indices)


def test_other_indexing_kernels_densify_csr() -> None:
    a = to_csr(np.array([[0, 1], [2, 0]], dtype=np.int64))
    assert same(indexing.filter_rows(a, np.array([[0], [1]])), np.array([[2, 0]]))
    assert same(indexing.insert(a, (0, 1), None, np.int64(7)), np.array([[7, 7], [2, 0]]))


# --- values, casts, printing ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("target", ["f64", "f32", "si64", "si32", "ui8", "bool", "str"])
def test_cast_csr(target: str) -> None:
    a = to_csr(np.array([[0.0, -1.5], [2.7, 0.0], [0.0, 300.0]]))
    got = cast_matrix(a, target)
    assert is_csr(got) == (target != "str")
    expected = cast_matrix(as_dense(a), target)
    assert np.array_equal(as_dense(got), expected)


def test_densify_keeps_negative_zero() -> None:
    a = sp.csr_array((np.array([-0.0]), np.array([1]), np.array([0, 1])), shape=(1, 2))
    assert np.signbit(as_dense(a)[0, 1])


def test_with_pattern_chooses_csr_only_for_zero_fill() -> None:
    a = to_csr(np.array([[0.0, 2.0]]))
    assert is_csr(with_pattern(a, a.data * 2, 0.0))
    assert same(with_pattern(a, a.data + 1, 1.0), np.array([[1.0, 3.0]]))
    assert not is_csr(with_pattern(a, a.data, np.nan))


def test_print_csr_rows_densely() -> None:
    a = to_csr(np.array([[0, 1.5], [0, 0], [-2, 0]]))
    assert format_obj(a) == "CSRMatrix(3x2, double)\n0 1.5\n0 0\n-2 0\n"
    assert type_name(a) == "CSRMatrix(3x2, double)"
    assert format_obj(to_csr(np.zeros((0, 3), dtype=np.int64))) == "CSRMatrix(0x3, int64_t)\n"
    assert format_obj(to_csr(np.array([[True, False]]))) == "CSRMatrix(1x2, bool)\n1 0\n"


def test_print_large_csr_in_blocks() -> None:
    a = to_csr(np.eye(3000, dtype=np.uint8))
    text = format_obj(a)
    lines = text.splitlines()
    assert lines[0] == "CSRMatrix(3000x3000, uint8_t)" and len(lines) == 3001
    assert lines[2999 + 1].endswith(" 1") and lines[1].startswith("1 0 0")


def test_str_matrix_cannot_be_csr() -> None:
    from daphnec.runtime.values import object_matrix

    with pytest.raises(DaphneRuntimeError, match="value type str cannot be stored in CSR"):
        to_csr(object_matrix(["a"], 1, 1))


@pytest.mark.parametrize("dt", [np.float64, np.float32])
@pytest.mark.parametrize("axis", [0, 1])
def test_csr_float_row_and_column_sums_are_the_stored_values_folded_in_order(dt, axis):
    """Row/column sums of a float CSR matrix (scipy's product with ones) equal the sequential fold of each row's or
    column's stored values from the first one, bit for bit: long and short segments, empty ones, a segment of
    only -0 values (-0, not +0), NaNs and cancellations."""
    rng = np.random.default_rng(11)
    D = (rng.standard_normal((300, 40)) * 10.0 ** rng.integers(-8, 8, (300, 40))).astype(dt)
    D[rng.random(D.shape) < 0.7] = 0
    D[:, 3] = rng.standard_normal(300).astype(dt)  # a long column
    D[5] = rng.standard_normal(40).astype(dt)  # a long row
    D[7, :] = 0
    D[:, 9] = 0
    D[12, 0] = np.nan
    r, c = np.nonzero(D)
    extra_r, extra_c = np.array([7, 7, 20, 21, 40, 40]), np.array([0, 1, 9, 9, 10, 11])  # row 7, column 9: only -0
    vals = np.concatenate([D[r, c], np.array([-0.0, -0.0, -0.0, -0.0, 1.0, 0.0], dtype=dt)]).astype(dt)
    keep = ~np.isin(r * 40 + c, extra_r * 40 + extra_c)
    rows, cols = np.concatenate([r[keep], extra_r]), np.concatenate([c[keep], extra_c])
    vals = np.concatenate([vals[: r.size][keep], vals[r.size :]])
    A = sp.coo_array((vals, (rows, cols)), shape=D.shape).tocsr()
    A.sort_indices()
    got = agg._csr_sum(A, axis)
    segments = A if axis == 1 else A.T.tocsr()
    want = np.array(
        [
            np.cumsum(segments.data[segments.indptr[i] : segments.indptr[i + 1]], dtype=dt)[-1]
            if segments.indptr[i + 1] > segments.indptr[i]
            else dt(0)
            for i in range(segments.shape[0])
        ],
        dtype=dt,
    )
    assert got.dtype == dt and got.tobytes() == want.tobytes()
    neg_zero = got[7] if axis == 1 else got[9]
    assert np.signbit(neg_zero) and neg_zero == 0 and (axis == 1 or np.isnan(got[0]))
