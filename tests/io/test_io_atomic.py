"""Atomic writes: all-or-nothing replacement of a data file and its `.meta`."""

from __future__ import annotations

import os

import numpy as np
import pytest

from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.io import atomic
from daphnec.runtime.kernels import io


def test_files_appear_complete(tmp_path) -> None:
    a, b = str(tmp_path / "a.csv"), str(tmp_path / "a.csv.meta")
    atomic.write_files([(a, lambda f: f.write(b"data")), (b, lambda f: f.write(b"meta"))])
    assert open(a, "rb").read() == b"data" and open(b, "rb").read() == b"meta"
    assert sorted(os.listdir(tmp_path)) == ["a.csv", "a.csv.meta"]


def test_a_failing_writer_changes_nothing(tmp_path) -> None:
    a = tmp_path / "a.csv"
    a.write_text("old")

    def boom(f) -> None:
        f.write(b"half a fi")
        raise DaphneRuntimeError("boom")

    with pytest.raises(DaphneRuntimeError, match="boom"):
        atomic.write_files([(str(a), lambda f: f.write(b"new")), (str(a) + ".meta", boom)])
    assert a.read_text() == "old"
    assert os.listdir(tmp_path) == ["a.csv"]


def test_permissions_follow_the_umask(tmp_path) -> None:
    old = os.umask(0o022)
    try:
        p = str(tmp_path / "p.csv")
        atomic.write_files([(p, lambda f: f.write(b"x"))])
    finally:
        os.umask(old)
    assert os.stat(p).st_mode & 0o777 == 0o644


def test_missing_folder_is_reported(tmp_path) -> None:
    with pytest.raises(DaphneRuntimeError, match=r"cannot open file '.*nope/x\.csv' for writing"):
        io.write(np.ones((1, 1)), str(tmp_path / "nope" / "x.csv"))
