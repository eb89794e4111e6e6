"""Matrix Market reading (every storage/field/symmetry, dense and CSR results) and writing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.io import mtx


def _file(tmp_path: Path, text: str, name: str = "m.mtx") -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def _both(path: str, rows: int, cols: int, vt: str) -> np.ndarray:
    """Read densely and as CSR; both must agree (CSR canonical); returns the dense one."""
    d = mtx.read(path, rows, cols, vt, sparse=False)
    s = mtx.read(path, rows, cols, vt, sparse=True)
    assert isinstance(d, np.ndarray) and d.flags.c_contiguous
    assert sp.issparse(s) and s.format == "csr" and s.has_canonical_format
    assert s.dtype == d.dtype and np.array_equal(s.toarray(), d)
    return d


CASES = [
    (  # coordinate real general, with comments and blank lines
        "%%MatrixMarket matrix coordinate real general\n% a comment\n\n3 4 3\n1 1 1.5\n3 4 -2e1\n2 2 0.25\n",
        (3, 4),
        [[1.5, 0, 0, 0], [0, 0.25, 0, 0], [0, 0, 0, -20]],
    ),
    (  # symmetric: the stored lower triangle is mirrored, the diagonal is not doubled
        "%%MatrixMarket matrix coordinate integer symmetric\n3 3 4\n1 1 5\n2 1 7\n3 2 -1\n3 3 2\n",
        (3, 3),
        [[5, 7, 0], [7, 0, -1], [0, -1, 2]],
    ),
    (  # pattern entries are 1
        "%%MatrixMarket matrix coordinate pattern general\n2 3 2\n1 3\n2 1\n",
        (2, 3),
        [[0, 0, 1], [1, 0, 0]],
    ),
    (  # symmetric pattern with a diagonal entry (not doubled)
        "%%MatrixMarket matrix coordinate pattern symmetric\n3 3 3\n2 2\n3 1\n2 1\n",
        (3, 3),
        [[0, 1, 1], [1, 1, 0], [1, 0, 0]],
    ),
    (  # skew-symmetric: mirrored with the sign flipped
        "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n2 1 4\n3 1 -1.5\n",
        (3, 3),
        [[0, -4, 1.5], [4, 0, 0], [-1.5, 0, 0]],
    ),
    (  # array files are column-major
        "%%MatrixMarket matrix array integer general\n2 3\n1\n2\n3\n4\n5\n6\n",
        (2, 3),
        [[1, 3, 5], [2, 4, 6]],
    ),
    (  # symmetric array files store the lower triangle column by column
        "%%MatrixMarket matrix array real symmetric\n3 3\n1\n2\n3\n4\n5\n6\n",
        (3, 3),
        [[1, 2, 3], [2, 4, 5], [3, 5, 6]],
    ),
]


@pytest.mark.parametrize(("text", "shape", "expected"), CASES)
def test_read(tmp_path, text, shape, expected) -> None:
    m = _both(_file(tmp_path, text), *shape, "f64")
    assert m.tolist() == expected


def test_value_type_conversion_truncates_like_a_cpp_cast(tmp_path) -> None:
    p = _file(tmp_path, "%%MatrixMarket matrix coordinate real general\n1 3 3\n1 1 2.7\n1 2 -2.7\n1 3 1e30\n")
    assert _both(p, 1, 3, "si64").tolist() == [[2, -2, -(2**63)]]
    p = _file(tmp_path, "%%MatrixMarket matrix coordinate integer general\n1 1 1\n1 1 3\n", "i.mtx")
    assert _both(p, 1, 1, "f32").dtype == np.float32


def test_a_cell_given_twice_keeps_its_last_value(tmp_path) -> None:
    p = _file(tmp_path, "%%MatrixMarket matrix coordinate real general\n2 2 3\n2 2 1\n1 1 5\n2 2 9\n")
    assert _both(p, 2, 2, "f64").tolist() == [[5, 0], [0, 9]]


def test_unsorted_coordinates(tmp_path) -> None:
    rng = np.random.default_rng(3)
    dense = np.where(rng.random((40, 30)) < 0.2, rng.integers(1, 100, (40, 30)), 0)
    r, c = np.nonzero(dense)
    order = rng.permutation(len(r))
    lines = "".join(f"{i + 1} {j + 1} {dense[i, j]}\n" for i, j in zip(r[order], c[order]))
    p = _file(tmp_path, f"%%MatrixMarket matrix coordinate integer general\n40 30 {len(r)}\n{lines}")
    assert np.array_equal(_both(p, 40, 30, "si64"), dense)


@pytest.mark.parametrize(
    ("text", "shape", "vt", "fragment"),
    [
        (
            "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1\n",
            (3, 2),
            "f64",
            "holds a 2x2 matrix, but its .meta says 3x2",
        ),
        ("%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n2 x 2\n", (2, 2), "f64", "Line 4"),
        ("%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n3 1 2\n", (2, 2), "f64", "out of bounds"),
        ("%%MatrixMarket matrix coordinate real general\n2 2 3\n1 1 1\n", (2, 2), "f64", "Truncated"),
        ("%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n", (1, 1), "f64", "field 'complex'"),
        ("not a matrix market file\n", (1, 1), "f64", "is not a valid Matrix Market file"),
        ("%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 1\n", (1, 1), "str", "string-valued"),
    ],
)
def test_bad_files(tmp_path, text, shape, vt, fragment) -> None:
    with pytest.raises(DaphneRuntimeError) as e:
        mtx.read(_file(tmp_path, text), *shape, vt, sparse=False)
    assert fragment in str(e.value)


def test_natural_value_types() -> None:
    assert [mtx.natural_value_type(f) for f in ("integer", "real", "pattern")] == ["si64", "f64", "f64"]


@pytest.mark.parametrize("kind", ["dense", "csr"])
def test_write_and_read_back(tmp_path, kind) -> None:
    rng = np.random.default_rng(5)
    m = np.where(rng.random((6, 5)) < 0.4, rng.standard_normal((6, 5)), 0.0)
    arg = m if kind == "dense" else sp.csr_array(m)
    p = tmp_path / "w.mtx"
    with open(p, "wb") as f:
        mtx.write(arg, f)
    header = p.read_text().splitlines()[0]
    assert header == (
        "%%MatrixMarket matrix array real general"
        if kind == "dense"
        else "%%MatrixMarket matrix coordinate real general"
    )
    assert np.array_equal(mtx.read(str(p), 6, 5, "f64", sparse=False), m)  # shortest round-trip digits


def test_write_integer_field(tmp_path) -> None:
    p = tmp_path / "i.mtx"
    with open(p, "wb") as f:
        mtx.write(np.array([[1, -2]], dtype=np.int64), f)
    assert p.read_text().splitlines()[0] == "%%MatrixMarket matrix array integer general"
    assert mtx.read(str(p), 1, 2, "si64", sparse=False).tolist() == [[1, -2]]


@pytest.mark.parametrize("symmetry", ["symmetric", "skew-symmetric"])
@pytest.mark.parametrize("chunk", [3, 1 << 21])
def test_row_major_lower_triangle_merged_with_its_mirror(tmp_path, monkeypatch, symmetry, chunk):
    """The direct merge of a row-major lower triangle and its mirror (in chunks of `chunk` triplets) gives the same
    CSR matrix as the dense reader, with a diagonal and empty rows."""
    from daphnec.runtime.io import sparse

    monkeypatch.setattr(sparse, "_MIRROR_CHUNK", chunk)
    rng = np.random.default_rng(11)
    n = 60
    low = np.tril(rng.random((n, n)) < 0.2, k=0 if symmetry == "symmetric" else -1)
    low[7, :] = low[:, 7] = False  # an empty row
    r, c = np.nonzero(low)  # row-major
    vals = np.round(rng.standard_normal(len(r)) * 8, 2)
    lines = "".join(f"{i + 1} {j + 1} {v}\n" for i, j, v in zip(r, c, vals))
    path = _file(tmp_path, f"%%MatrixMarket matrix coordinate real {symmetry}\n{n} {n} {len(r)}\n{lines}")
    assert sparse.lower_sorted(r, c)
    d = _both(path, n, n, "f64")
    sign = -1.0 if symmetry == "skew-symmetric" else 1.0
    want = np.zeros((n, n))
    want[r, c] = vals
    want[c, r] = np.where(r != c, sign * vals, vals)
    assert np.array_equal(d, want)
