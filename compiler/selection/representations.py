"""Kernels meet the representations (dense or CSR) the IR types promise.

The run-time object of a value always matches its IR type, so printing says `CSRMatrix` exactly when the type says
`rep[sparse]` (the types come from `select-matrix-repr` and the estimates of compiler/analysis/sparsity.py).
Kernels with CSR paths (marked `csr` in the kernel table) get CSR operands as they are; every other kernel gets
them densified. A result typed sparse is CSR (`rand`, `fill` and `diagMatrix` build it directly, kernels with CSR
paths such as `lowerTri`/`upperTri` and `syrk` keep it, other kernels' dense results are converted), a result
typed dense is densified. The adapted kernel is a `functools.partial` of the runtime's representation calls
(`runtime.values.densifying`, `csr_result`, `dense_result`) around the selected kernel.
"""

from __future__ import annotations

import functools

from xdsl.ir import Operation

from daphnec.compiler.analysis.sparsity import is_sparse_type
from daphnec.compiler.selection.spec import KernelSpec
from daphnec.dialects.types import MatrixType
from daphnec.runtime import values


def meet_representations(op: Operation, spec: KernelSpec, takes_csr: bool) -> KernelSpec:
    """Make a kernel meet the representations in its op's types (see the module docstring); ops without sparse
    operands or results keep their kernel unchanged."""
    sparse_in = [i for i, v in enumerate(op.operands) if is_sparse_type(v.type)]
    sparse_out = len(op.results) == 1 and is_sparse_type(op.results[0].type)
    if not sparse_in and not sparse_out:
        return spec
    fn = spec.fn
    if sparse_in and not takes_csr:
        fn = functools.partial(values.densifying, fn, frozenset(sparse_in))
    if sparse_out:
        fn = functools.partial(values.csr_result, fn)
    elif takes_csr and len(op.results) == 1 and isinstance(op.results[0].type, MatrixType):
        fn = functools.partial(values.dense_result, fn)
    return KernelSpec(fn, spec.arg_casts, spec.name)
