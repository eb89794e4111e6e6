"""Errors that once reached the user as Python exceptions or in the compiler's terms (issue 24): each now ends in a
located DaphneDSL message with DAPHNE's exit code. Their reproducers are also seeds of the mutation fuzzer
(`tests/fuzz_corpus/`), whose suite test checks that no message names a Python exception."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from bad_input import assert_error, run_bad_script

from daphnec.compiler.host.program import unforeseen_message
from daphnec.dialects.errors import CompileError, ExecutionError, name_ops_in_dsl_terms
from daphnec.runtime.memory import memory_error_message

GIB_MSG = r"needs [\d.]+ GiB, more than the [\d.]+ GiB of memory available"

# (name, script, exit code, "line:col", exact message after "error: " (a regex where it holds a size))
CASES: list[tuple[str, str, int, str, str]] = [
    # shape inference met a NaN/inf `seq` bound: the kernel's message, at the call
    ("seq_nan_step", "print(seq(1.0, 2.0, nan));", 3, "1:7", re.escape("seq: from, to and inc must not be NaN")),
    ("seq_inf_bound", "print(seq(1.0, inf, 1.0));", 3, "1:7",
     re.escape("seq: too many elements for from=1.0, to=inf, inc=1.0")),
    # matrix-only builtins given a frame: a compile error in DaphneDSL types
    ("t_of_frame", 'print(t(createFrame([1, 2], "a")));', 2, "1:7", "t: the argument must be a matrix, got frame"),
    ("reshape_of_frame", 'print(reshape(createFrame([1, 2], "a"), 1, 2));', 2, "1:7",
     "reshape: the argument must be a matrix, got frame"),
    ("rand_min_matrix", "print(rand(2, 2, fill(1.0, 2, 2), 2.0, 1.0, 1));", 2, "1:7",
     re.escape("rand: min must be a scalar, got matrix<f64>")),
    # LAPACK refuses NaN and infinity
    ("eigen_nan", "v, w = eigen(fill(nan, 2, 2)); print(v);", 3, "1:8",
     "eigen: the matrix must not contain NaN or infinite values"),
    ("eigen_inf", "v, w = eigen([inf, 1.0, 1.0, inf](2, 2)); print(v);", 3, "1:8",
     "eigen: the matrix must not contain NaN or infinite values"),
    # results larger than the memory available: one check, named by the builtin
    ("ctable_huge", "print(ctable([1, 9000000000000], [1, 9000000000000]));", 3, "1:7",
     r"ctable: a 9000000000001x9000000000001 f64 result " + GIB_MSG),
    # aggMax, not sum: sum(A @ B) is rewritten to a product of sums and never allocates (docs/language.md, "Rewrites")
    ("matmul_big", "A = fill(1.0, 100000, 1); B = fill(1.0, 1, 100000); print(aggMax(A @ B));", 3, "1:66",
     r"@: a 100000x100000 f64 result " + GIB_MSG),
    ("outer_big", "A = fill(1.0, 100000, 1); B = fill(1.0, 1, 100000); print(sum(outerAdd(A, B)));", 3, "1:63",
     r"outerAdd: a 100000x100000 f64 result " + GIB_MSG),
    ("onehot_big", "A = fill(1.0, 100000, 1); print(sum(oneHot(A, [100000])));", 3, "1:37",
     r"oneHot: a 100000x100000 f64 result " + GIB_MSG),
    ("ctable_big", "A = seq(0.0, 99999.0, 1.0); print(sum(ctable(A, A)));", 3, "1:39",
     r"ctable: a 100000x100000 f64 result " + GIB_MSG),
    ("cartesian_big",
     'f = createFrame(seq(1, 100000, 1), "a"); g = createFrame(seq(1, 100000, 1), "b"); print(cartesian(f, g));',
     3, "1:89", r"cartesian: a frame of 10000000000 rows " + GIB_MSG),
    # list `remove` out of range
    ("remove_too_high", "l = createList([1.0], [2.0]);\nl2, x = remove(l, 5);\nprint(x);", 3, "2:9",
     re.escape("remove: trying to remove element at position 5 from a list with 2 elements")),
    ("remove_negative", "l = createList([1.0], [2.0]);\nl2, x = remove(l, -1);\nprint(x);", 3, "2:9",
     re.escape("remove: trying to remove element at position -1 from a list with 2 elements")),
    ("remove_from_empty", "l = createList([1.0]);\nl2, x = remove(l, 0);\nl3, y = remove(l2, 0);\nprint(y);", 3,
     "3:9", re.escape("remove: trying to remove element at position 0 from a list with 0 elements")),
    # a typed parameter takes exactly its type: no cast (DAPHNE's argAndUDFParamCompatible)
    ("udf_typed_param_si64_for_f64", "def f(x: f64) -> f64 { return x * 2.0; }\nprint(f(3));", 1, "2:7",
     re.escape("no definition of function `f` for argument types (si64), available options: f(f64)")),
    ("udf_typed_param_matrix_vt", "def f(X: matrix<f64>) -> f64 { return sum(X); }\nprint(f([1, 2]));", 1, "2:7",
     re.escape("no definition of function `f` for argument types (matrix<si64>), available options: "
               "f(matrix<f64>)")),
]  # fmt: skip


@pytest.mark.parametrize(("name", "source", "code", "where", "message"), CASES, ids=[c[0] for c in CASES])
def test_internal_errors_are_daphnedsl_errors(
    tmp_path: Path, name: str, source: str, code: int, where: str, message: str
) -> None:
    res = run_bad_script(tmp_path, source, cwd=tmp_path)
    assert_error(res, "bad.daph", code, where, "")
    assert re.fullmatch(rf"bad\.daph:{where}: error: {message}", res.stderr.strip()), res.stderr


def test_the_corpus_holds_every_family() -> None:
    """The fuzzer starts from these reproducers (tests/fuzz_scripts.py SEEDS)."""
    corpus = Path(__file__).parent / "fuzz_corpus"
    names = {p.stem for p in corpus.glob("*.daph")}
    assert {"seq_nan", "t_frame", "reshape_frame", "ctable_huge", "eigen_nan", "matmul_big", "groupsum_empty",
            "asframe_3x0", "rand_min_matrix", "empty_frame", "udf_typed_param", "sparse_matvec"} <= names  # fmt: skip


# --- the general mechanisms behind the families ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("daphne.cast: the type of an operand or result could not be inferred (!daphne.Unknown)",
         "cast: the type of an operand or result could not be inferred (an unknown type)"),
        ("no kernel for operation 'daphne.ewAbs'", "no kernel for operation 'abs'"),
        ("daphne.matMul: shape mismatch", "`@`: shape mismatch"),
        ("daphne.numRows: bad", "nrow: bad"),
        ("readMatrix: readMatrix: cannot read 'x.csv'", "readMatrix: cannot read 'x.csv'"),
        ('the IR name "daphne.cast" and the attribute daphne.native_kernel stay',
         'the IR name "daphne.cast" and the attribute daphne.native_kernel stay'),
    ],
)  # fmt: skip
def test_every_message_names_ops_as_a_script_does(raw: str, shown: str) -> None:
    """One place (`DaphneError`) maps IR op names to DaphneDSL names and drops a doubled builtin prefix, for every
    message of every layer."""
    assert CompileError(raw).message == shown
    assert ExecutionError(raw).message == shown
    assert name_ops_in_dsl_terms("daphne.ewSqrt") == "sqrt"


def test_numpy_memory_errors_read_like_the_allocation_check() -> None:
    try:
        np.empty((1 << 20, 1 << 20))
    except MemoryError as e:
        msg = memory_error_message(e)
    else:  # pragma: no cover - 8 TiB
        pytest.fail("numpy allocated 8 TiB")
    assert re.fullmatch(r"a 1048576x1048576 f64 result " + GIB_MSG, msg), msg
    assert "MemoryError" not in msg and "Unable to allocate" not in msg


def test_unforeseen_kernel_failures_keep_their_words_without_the_exception_class() -> None:
    assert unforeseen_message(ValueError("cannot reshape array of size 1 into shape (1,2)")) == (
        "cannot reshape array of size 1 into shape (1,2)"
    )
    assert unforeseen_message(KeyError()) == "the operation failed"


def test_python_api_reports_results_larger_than_memory_in_daphnedsl_terms() -> None:
    from daphnec.tools.daphnelib import DaphneContext
    from daphnec.tools.daphnelib.errors import DaphneExecutionError

    dc = DaphneContext()
    a, b = dc.fill(1.0, 100000, 1), dc.fill(1.0, 1, 100000)
    for node, op in ((a @ b, "@"), (a.outerAdd(b), "outerAdd")):
        with pytest.raises(DaphneExecutionError) as e:
            node.aggMax().compute()  # not sum: sum(a @ b) is rewritten to a product of sums
        assert re.search(rf"error: {re.escape(op)}: a 100000x100000 f64 result " + GIB_MSG, str(e.value)), e.value
        assert "MemoryError" not in str(e.value)
