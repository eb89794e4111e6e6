"""Bad input around CSR matrices and `sparsity(X)`: DAPHNE's exit code and a one-line `file:line:col: error:` message
(run with `--select-matrix-repr`, so the kernels see CSR operands)."""

from __future__ import annotations

import pytest

SLICE = "X = [0, 0, 0, 0, 0, 0, 0, 1.0](8, 1);\nn = as.si64(sum(X)) + 1;\nY = X[0:n, ];\n"

# (name, script, exit code, "line:col" or None, message fragment)
CASES: list[tuple[str, str, int, str | None, str]] = [
    ("sparsity_two_args", "X = [0, 1];\nprint(sparsity(X, 1));", 1, "2:7", "built-in function 'sparsity' expects 1"),
    ("sparsity_no_args", "print(sparsity());", 1, "1:7", "built-in function 'sparsity' expects 1"),
    ("sparsity_of_scalar", "print(sparsity(3));", 2, "1:7", "sparsity: the argument must be a matrix"),
    ("rand_csr_bad_sparsity", "print(rand(2, 2, 0.0, 1.0, -0.5, 1));", 3, "1:7", "sparsity has to be in the interval"),
    ("rand_csr_min_gt_max", "print(rand(3, 3, 5, 1, 0.1, 1));", 3, "1:7", "RandMatrix - min must be <= max"),
    ("rand_csr_zero_rows", "print(rand(0, 3, 1.0, 2.0, 0.1, 1));", 3, "1:7", "RandMatrix - numRows must be > 0"),
    ("rand_csr_zero_bounds", "print(rand(3, 3, 0, 0, 0.1, 1));", 3, "1:7", "min and max must not both be zero"),
    ("csr_add_shape", SLICE + "print(X + Y);", 3, "4:7", "`+`: shape mismatch: lhs 8x1, rhs 2x1"),
    ("csr_matmul_shape", SLICE + "print(X @ Y);", 3, "4:7", "matMul: shape mismatch: lhs 8x1, rhs 2x1"),
    ("csr_sqrt_domain", "print(sqrt([0, 0, 0, 0, -4.0, 0, 0, 0]));", 3, "1:7", "invalid argument '-4' passed to unary"),
    ("csr_int_division_by_zero", "X = [0, 0, 0, 0, 0, 0, 0, 4];\nprint(1 / X);", 3, "2:7", "division by zero"),
    ("csr_reshape", "print(reshape([0, 0, 0, 0, 0, 0, 0, 4], 3, 3));", 3, "1:7", "reshape: cannot reshape a 8x1"),
    ("csr_index_out_of_bounds", "X = [0, 0, 0, 0, 0, 0, 0, 4];\nprint(X[9:10, ]);", 3, "2:7", "out of bounds"),
]


@pytest.mark.parametrize(("name", "source", "code", "where", "fragment"), CASES, ids=[c[0] for c in CASES])
def test_bad_input(check_bad_input, name: str, source: str, code: int, where: str | None, fragment: str) -> None:
    check_bad_input(source, code, where, fragment)
