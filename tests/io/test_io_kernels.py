"""The read/write kernels the IR calls: format dispatch by extension, dense vs CSR results, CSR round trips, and the
run-time `.meta` checks against what the compiler inferred."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.frame import Frame
from daphnec.runtime.kernels import io


def _csr() -> sp.csr_array:
    return sp.csr_array(np.array([[0.0, 1.5, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [-2.0, 0.0, 0.0, 4.0]]))


@pytest.mark.parametrize("ext", [".dbdf", ".mtx"])
@pytest.mark.parametrize("sparse", [False, True])
def test_csr_round_trip(tmp_path: Path, ext: str, sparse: bool) -> None:
    p = str(tmp_path / f"c{ext}")
    io.write(_csr(), p)
    assert Path(p + ".meta").read_text() == '{"numCols":4,"numRows":3,"valueType":"f64"}'
    r = io.read_matrix(p, vt="f64", sparse=sparse, rows=3, cols=4)
    assert sp.issparse(r) == sparse
    assert np.array_equal(r.toarray() if sparse else r, _csr().toarray())
    if sparse:
        assert r.format == "csr" and r.has_canonical_format


def test_csr_written_to_csv_is_dense_text(tmp_path: Path) -> None:
    p = str(tmp_path / "c.csv")
    io.write(_csr(), p)
    assert Path(p).read_text().splitlines()[2] == "-2.000000,0.000000,0.000000,4.000000"
    assert np.array_equal(io.read_matrix(p, vt="f64", rows=3, cols=4), _csr().toarray())


def test_csv_as_csr_needs_num_non_zeros(tmp_path: Path) -> None:
    p = tmp_path / "e.csv"
    p.write_text("0,1\n2,3\n")
    Path(str(p) + ".meta").write_text('{"numRows": 3, "numCols": 3, "valueType": "f64"}')
    with pytest.raises(DaphneRuntimeError, match='as a sparse \\(CSR\\) matrix needs "numNonZeros"'):
        io.read_matrix(str(p), vt="f64", sparse=True)
    Path(str(p) + ".meta").write_text('{"numRows": 3, "numCols": 4, "valueType": "f64", "numNonZeros": 2}')
    m = io.read_matrix(str(p), vt="f64", sparse=True)
    assert m.toarray().tolist() == [[0, 1, 0, 0], [0, 0, 0, 0], [0, 0, 0, 1]]


def test_meta_changed_since_compilation(tmp_path: Path) -> None:
    p = str(tmp_path / "m.csv")
    io.write(np.ones((2, 2)), p)
    with pytest.raises(DaphneRuntimeError, match="value type in '.*m.csv.meta' changed since the script was compiled"):
        io.read_matrix(p, vt="si64")
    with pytest.raises(DaphneRuntimeError, match=r"numRows in .* changed .* \(5 then, 2 now\)"):
        io.read_matrix(p, vt="f64", rows=5)
    assert io.read_matrix(p, vt="f64", rows=-1, cols=-1).shape == (2, 2)  # unknown dimensions are not checked


def test_hdfs_files_are_rejected(tmp_path: Path) -> None:
    p = tmp_path / "h.csv"
    p.write_text("1\n")
    Path(str(p) + ".meta").write_text(
        '{"numRows": 1, "numCols": 1, "valueType": "f64", "hdfs": {"isHDFS": true, "HDFSFilename": "/h.csv"}}'
    )
    with pytest.raises(DaphneRuntimeError, match="cannot read from HDFS"):
        io.read_matrix(str(p), vt="f64")


def test_frame_round_trip_with_labels_from_meta(tmp_path: Path) -> None:
    s = np.empty(2, dtype=object)
    s[:] = ["a\nb", ""]
    f = Frame([np.array([1.5, -2.0], dtype=np.float32), s, np.array([7, 8], dtype=np.uint32)], ["x", "y", "z"])
    p = str(tmp_path / "f.csv")
    io.write(f, p)
    g = io.read_frame(p, schema=("f32", "str", "ui32"), labels=None)
    assert g.labels == ["x", "y", "z"]
    assert [c.tolist() for c in g.columns] == [[1.5, -2.0], ["a\nb", ""], [7, 8]]
    assert [c.dtype for c in g.columns] == [np.float32, object, np.uint32]


def test_bool_and_index_matrices(tmp_path: Path) -> None:
    p = str(tmp_path / "b.csv")
    io.write(np.array([[True, False]]), p)
    assert Path(p + ".meta").read_text() == '{"numCols":2,"numRows":1,"valueType":"bool"}'
    assert io.read_matrix(p, vt="bool").tolist() == [[True, False]]
    q = str(tmp_path / "i.dbdf")
    io.write(np.array([[3]], dtype=np.uint64), q)
    assert io.read_matrix(q, vt="ui64").tolist() == [[3]]


def test_extensions(tmp_path: Path) -> None:
    with pytest.raises(DaphneRuntimeError, match=r"file extension \(none\) of '.*noext' is not supported"):
        io.write(np.ones((1, 1)), str(tmp_path / "noext"))
    with pytest.raises(DaphneRuntimeError, match="file extension '.hdf5'"):
        io.read_matrix(str(tmp_path / "x.hdf5"), vt="f64")
    assert io.extension("dir.v2/file") == "" and io.extension("a.b.csv") == ".csv"
