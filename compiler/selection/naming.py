"""DAPHNE's kernel naming scheme: the name of the kernel an op calls, from its mnemonic and its types.

DAPHNE names a kernel instantiation `_<op mnemonic>__<result type>...__<operand type>...`, each type spelled as its
C++ type with `_` for the template brackets (`src/compiler/lowering/RewriteToCallKernelOpPass.cpp`,
`CompilerUtils::mlirTypeToCppTypeName`): `sum(X)` of an si64 matrix calls `_sumAll__int64_t__DenseMatrix_int64_t`.
Kernel hints (`sum::name(X)`) and kernel-extension catalogs (`--kernel-ext`) name kernels this way; catalogs spell
the types with brackets (`DenseMatrix<float>`), as `cpp_type_name(t, brackets=True)` does.
"""

from __future__ import annotations

from xdsl.ir import Attribute, Operation

from daphnec.dialects.types import FrameType, ListType, MatrixType, StringType, vt_name
from daphnec.dialects.value_types import KERNEL_CPP_NAMES


def _templated(name: str, arg: str, brackets: bool) -> str:
    return f"{name}<{arg}>" if brackets else f"{name}_{arg}"


def cpp_type_name(t: Attribute, brackets: bool = False) -> str:
    """DAPHNE's C++ name of an IR type; `?` for a type inference left unknown."""
    if isinstance(t, MatrixType):
        vt = vt_name(t)
        elem = "std::string" if vt == "str" else KERNEL_CPP_NAMES.get(vt or "", "?")
        return _templated("CSRMatrix" if t.is_sparse else "DenseMatrix", elem, brackets)
    if isinstance(t, FrameType):
        return "Frame"
    if isinstance(t, ListType):
        return _templated("List", cpp_type_name(t.element_type, brackets), brackets)
    if isinstance(t, StringType):
        return "char"  # a `const char *` argument
    return KERNEL_CPP_NAMES.get(vt_name(t) or "", "?")


def mnemonic(op: Operation) -> str:
    """The op's name without its dialect (`sumAll`), as kernel catalogs name ops (`opMnemonic`)."""
    return op.name.split(".", 1)[-1]


def op_types(op: Operation, brackets: bool = False) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The C++ names of an op's result and operand types."""
    res = tuple(cpp_type_name(r.type, brackets) for r in op.results)
    return res, tuple(cpp_type_name(v.type, brackets) for v in op.operands)


def kernel_name(op: Operation) -> str:
    """The name of the built-in kernel an op calls (`_sumAll__int64_t__DenseMatrix_int64_t`)."""
    res, args = op_types(op)
    return "".join(["_", mnemonic(op), *(f"__{t}" for t in (*res, *args))])
