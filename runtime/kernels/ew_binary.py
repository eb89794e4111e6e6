"""Element-wise binary operations (DaphneDSL `+ - * / ^ % log min max && || xor bitwiseAnd concat == != < <= > >=`).

Kernels are specialised once per (op, operand value type, result value type) and cached, so generated code binds a
plain Python function and pays one call per scalar operation. Operands arrive ALREADY CAST to the operand type (the
compiler inserts the casts, like DAPHNE's CastArgsToResType).

Semantics follow DAPHNE's `EwBinarySca.h` compiled for x86-64:
- integer results wrap to the type width; `/` truncates toward zero; integer `/` or `%` by zero raises
  DaphneRuntimeError("division by zero") (DAPHNE itself would crash with SIGFPE);
- float `/` by zero gives +-inf, and 0/0 gives a NaN with the sign bit (prints `-nan`) like x86;
- `%` is `std::fmod` (sign of the dividend) and `^` is `pow(double, double)`, both cast back to the result type
  (so si64 `2^-1` is 0); `log(x, b)` is `ln(x)/ln(b)`;
- `min`/`max` are `std::min`/`std::max`: `min(a, b) = b < a ? b : a`, so NaN handling depends on the position;
- `&& || xor` are logical (0/1 of the result type), `bitwiseAnd` is `&` on integers;
- comparisons give 0/1 in the result type (the operand type, si64 for strings); `+` on strings is concatenation.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from sys import getrefcount

import numpy as np

from daphnec.dialects.op_kinds import COMPARISON_KINDS, EW_BINARY, LOGICAL_KINDS
from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.fperr import STATE, quiet, quietly
from daphnec.runtime.kernels.dead_operands import DEAD_REFS, owns_buffer
from daphnec.runtime.values import (
    FLOAT_VTS,
    INT_RANGES,
    INT_VTS,
    NEG_NAN,
    as_dense,
    cast_matrix,
    csr_from_parts,
    dtype_of,
    float_array_to_int,
    float_to_int,
    has_implicit_zeros,
    is_csr,
    row_ids,
    to_f32,
    with_pattern,
    wrap_int,
)


def _name(op: str) -> str:
    """The IR op name of kind `op` (`ewAdd`), as error messages name it."""
    return EW_BINARY[op].mnemonic


_INF = math.inf


# ---------------------------------------------------------------------------------------------------------------------
# IEEE helpers for Python floats (Python raises where C returns inf/nan)
# ---------------------------------------------------------------------------------------------------------------------


def _fdiv(a: float, b: float) -> float:
    """IEEE division: x/0 is +-inf, 0/0 is -nan (x86 default NaN)."""
    try:
        return a / b
    except ZeroDivisionError:
        if a != a:
            return a
        if a == 0.0:
            return NEG_NAN
        return math.copysign(_INF, a) * math.copysign(1.0, b)


def _fpow(a: float, b: float) -> float:
    """C `pow(double, double)`."""
    try:
        return math.pow(a, b)
    except (ValueError, OverflowError, ZeroDivisionError):
        with quiet():
            return float(np.power(np.float64(a), np.float64(b)))


def _fmod(a: float, b: float) -> float:
    """C `fmod`: fmod(x, 0) and fmod(inf, y) are -nan."""
    try:
        return math.fmod(a, b)
    except ValueError:
        return NEG_NAN


def _ln(x: float) -> float:
    """C `log`: log(0) = -inf, log(negative) = -nan."""
    try:
        return math.log(x)
    except ValueError:
        return -_INF if x == 0.0 else NEG_NAN


def _flog(a: float, b: float) -> float:
    """`log(a)/log(b)` with IEEE division."""
    return _fdiv(_ln(a), _ln(b))


def _tdiv(a: int, b: int) -> int:
    """C integer division (truncation toward zero); division by zero raises."""
    if b == 0:
        raise DaphneRuntimeError("division by zero")
    q = a // b
    if q < 0 and q * b != a:
        q += 1
    return q


def _imod(a: int, b: int) -> float:
    """`std::fmod` of two integers (computed in double like DAPHNE); modulo by zero raises."""
    if b == 0:
        raise DaphneRuntimeError("division by zero")
    return math.fmod(float(a), float(b))


def _ipow(a: int, b: int) -> float:
    """`pow` of two integers, computed in double like DAPHNE."""
    return _fpow(float(a), float(b))


def _min(a, b):
    """`std::min(a, b)`: `b < a ? b : a`."""
    return b if b < a else a


def _max(a, b):
    """`std::max(a, b)`: `a < b ? b : a`."""
    return b if a < b else a


_CMP_FUNCS: dict[str, Callable] = {
    "eq": lambda a, b: a == b,
    "neq": lambda a, b: a != b,
    "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b,
}
_CMP_INT: dict[str, Callable] = {
    "eq": lambda a, b: 1 if a == b else 0,
    "neq": lambda a, b: 1 if a != b else 0,
    "lt": lambda a, b: 1 if a < b else 0,
    "le": lambda a, b: 1 if a <= b else 0,
    "gt": lambda a, b: 1 if a > b else 0,
    "ge": lambda a, b: 1 if a >= b else 0,
}
_CMP_FLOAT: dict[str, Callable] = {
    "eq": lambda a, b: 1.0 if a == b else 0.0,
    "neq": lambda a, b: 1.0 if a != b else 0.0,
    "lt": lambda a, b: 1.0 if a < b else 0.0,
    "le": lambda a, b: 1.0 if a <= b else 0.0,
    "gt": lambda a, b: 1.0 if a > b else 0.0,
    "ge": lambda a, b: 1.0 if a >= b else 0.0,
}


# ---------------------------------------------------------------------------------------------------------------------
# Scalar kernels
# ---------------------------------------------------------------------------------------------------------------------

_scalar_cache: dict[tuple[str, str, str], Callable] = {}


def scalar_kernel(op: str, operand_vt: str, res_vt: str | None = None) -> Callable:
    """A function `(a, b) -> result` for scalars already cast to `operand_vt`; the result has type `res_vt`.

    `res_vt` defaults to DAPHNE's rule (`EW_BINARY[op].result_vt`, dialects/op_kinds.py), e.g. si64 for string
    comparisons.
    """
    if op not in EW_BINARY:
        raise DaphneRuntimeError(f"unknown element-wise binary operation '{op}'")
    res_vt = res_vt or EW_BINARY[op].result_vt(operand_vt, operand_vt)
    key = (op, operand_vt, res_vt)
    fn = _scalar_cache.get(key)
    if fn is None:
        fn = _scalar_cache[key] = _build_scalar(op, operand_vt, res_vt)
    return fn


_PY_CMP = {"eq": "==", "neq": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_PY_ARITH = {"add": "+", "sub": "-", "mul": "*"}


def scalar_inline(op: str, operand_vt: str, res_vt: str | None = None) -> tuple[str, dict[str, object]] | None:
    """The host-code template of `scalar_kernel(op, operand_vt, res_vt)` where a Python expression computes exactly
    what the kernel returns, so the generated code evaluates it inline instead of calling the kernel (a call costs
    more than the operation: loops over scalars spend most of their time in calls). None: the kernel is called.

    The template is a statement `{r} = ...` (more lines may follow) over the operands `{0}`, `{1}` (already cast to
    `operand_vt`, simple names or literals) and the helper names of the dict, which the generator binds to the
    objects. Covered: f64 `+ - * /` (division by zero through `_fdiv`: +-inf, -nan), si64 `+ - *` (wrapping to the
    width when the result leaves the range), `min`/`max` of f64/si64 (`std::min`/`std::max`, NaN by position) and
    the comparisons (0/1 of the result type, or a bool)."""
    res_vt = res_vt or EW_BINARY[op].result_vt(operand_vt, operand_vt)
    if op in _PY_CMP and operand_vt in ("f64", "si64", "bool", "str"):
        test = f"{{0}} {_PY_CMP[op]} {{1}}"
        if res_vt == "bool":
            return f"{{r}} = {test}", {}
        if res_vt in ("si64", "ui64", "si32", "ui32", "si8", "ui8", "index"):
            return f"{{r}} = 1 if {test} else 0", {}
        if res_vt == "f64":
            return f"{{r}} = 1.0 if {test} else 0.0", {}
        return None
    if operand_vt != res_vt or res_vt not in ("f64", "si64"):
        return None
    if op == "min":
        return "{r} = {1} if {1} < {0} else {0}", {}
    if op == "max":
        return "{r} = {1} if {0} < {1} else {0}", {}
    if res_vt == "f64":
        if op in _PY_ARITH:
            return f"{{r}} = {{0}} {_PY_ARITH[op]} {{1}}", {}
        if op == "div":
            return "{r} = {0} / {1} if {1} else {fdiv}({0}, {1})", {"fdiv": _fdiv}
        return None
    if op in _PY_ARITH:  # si64: Python ints do not overflow; wrap like the kernel when the result leaves the range
        lo, hi = INT_RANGES["si64"]
        return (
            f"{{r}} = {{0}} {_PY_ARITH[op]} {{1}}\nif not {lo} <= {{r}} <= {hi}: {{r}} = {{wrap}}({{r}}, 'si64')",
            {"wrap": wrap_int},
        )
    return None


def _unsupported(op: str, vt: str) -> DaphneRuntimeError:
    return DaphneRuntimeError(f"{_name(op)}: operation is not supported on value type {vt}")


def _converter(raw_kind: str, res_vt: str) -> Callable | None:
    """A function converting a raw Python result (kind 'int', 'float', 'bool', 'str') to `res_vt`; None = identity."""
    if res_vt in INT_VTS:
        if raw_kind == "int":
            return lambda r: wrap_int(r, res_vt)
        if raw_kind == "float":
            return lambda r: float_to_int(r, res_vt)
        if raw_kind == "bool":
            return lambda r: 1 if r else 0
    elif res_vt == "f64":
        if raw_kind == "float":
            return None
        if raw_kind in ("int", "bool"):
            return float
    elif res_vt == "f32":
        if raw_kind in ("float", "int", "bool"):
            return lambda r: to_f32(float(r))
    elif res_vt == "bool":
        if raw_kind == "bool":
            return None
        if raw_kind in ("int", "float"):
            return lambda r: r != 0
    elif res_vt == "str":
        if raw_kind == "str":
            return None
    raise DaphneRuntimeError(f"cannot produce a {res_vt} result from a {raw_kind} value")


def _build_scalar(op: str, vt: str, res_vt: str) -> Callable:
    """Pick the fastest exact implementation for (op, vt, res_vt)."""
    fast = _fast_scalar(op, vt, res_vt)
    if fast is not None:
        return fast
    raw, kind = _raw_scalar(op, vt)
    conv = _converter(kind, res_vt)
    if conv is None:
        return raw
    return lambda a, b: conv(raw(a, b))


def _fast_scalar(op: str, vt: str, res_vt: str) -> Callable | None:
    """Hand-specialised one-call kernels for the hot cases (int/float arithmetic and comparisons)."""
    if vt in INT_VTS and res_vt == vt and op in ("add", "sub", "mul"):
        lo, hi = INT_RANGES[vt]
        span = hi - lo
        if op == "add":

            def k(a, b, _lo=lo, _hi=hi, _s=span):
                r = a + b
                return r if _lo <= r <= _hi else ((r - _lo) & _s) + _lo
        elif op == "sub":

            def k(a, b, _lo=lo, _hi=hi, _s=span):
                r = a - b
                return r if _lo <= r <= _hi else ((r - _lo) & _s) + _lo
        else:

            def k(a, b, _lo=lo, _hi=hi, _s=span):
                r = a * b
                return r if _lo <= r <= _hi else ((r - _lo) & _s) + _lo

        return k
    if vt == "f64" and res_vt == "f64":
        if op == "add":
            return float.__add__
        if op == "sub":
            return float.__sub__
        if op == "mul":
            return float.__mul__
        if op == "div":
            return _fdiv
    if op in COMPARISON_KINDS:
        if res_vt in INT_VTS:
            return _CMP_INT[op]
        if res_vt in FLOAT_VTS:
            return _CMP_FLOAT[op]
        if res_vt == "bool":
            return _CMP_FUNCS[op]
    return None


def _raw_scalar(op: str, vt: str) -> tuple[Callable, str]:
    """The C++ operation on operands of type `vt`, returning an unconverted Python value and its kind."""
    if op in COMPARISON_KINDS:
        return _CMP_FUNCS[op], "bool"
    if op in ("min", "max"):
        kind = "int" if vt in INT_VTS else "float" if vt in FLOAT_VTS else vt
        return (_min if op == "min" else _max), kind
    if vt == "str":
        if op in ("concat", "add"):
            return (lambda a, b: a + b), "str"
        raise _unsupported(op, vt)
    if op == "concat":
        raise _unsupported(op, vt)
    if op == "and":
        return (lambda a, b: bool(a) and bool(b)), "bool"
    if op == "or":
        return (lambda a, b: bool(a) or bool(b)), "bool"
    if op == "xor":
        return (lambda a, b: bool(a) != bool(b)), "bool"
    if vt in FLOAT_VTS:
        table = {
            "add": lambda a, b: a + b,
            "sub": lambda a, b: a - b,
            "mul": lambda a, b: a * b,
            "div": _fdiv,
            "pow": _fpow,
            "mod": _fmod,
            "log": _flog,
        }
        if op not in table:
            raise _unsupported(op, vt)
        return table[op], "float"
    if vt in INT_VTS or vt == "bool":  # bool arithmetic happens in int (C++ integral promotion)
        table_i = {
            "add": (lambda a, b: a + b, "int"),
            "sub": (lambda a, b: a - b, "int"),
            "mul": (lambda a, b: a * b, "int"),
            "div": (_tdiv, "int"),
            "pow": (_ipow, "float"),
            "mod": (_imod, "float"),
            "log": (lambda a, b: _flog(float(a), float(b)), "float"),
            "bitwiseAnd": (lambda a, b: a & b, "int"),
        }
        if op not in table_i:
            raise _unsupported(op, vt)
        fn, kind = table_i[op]
        if vt == "bool":
            return (lambda a, b, _f=fn: _f(int(a), int(b))), kind
        return fn, kind
    raise _unsupported(op, vt)


# ---------------------------------------------------------------------------------------------------------------------
# Matrix kernels
# ---------------------------------------------------------------------------------------------------------------------

_matrix_cache: dict[tuple[str, str, str], Callable] = {}


def check_shapes(name: str, lhs, rhs) -> None:
    """Allowed: equal shapes, or rhs 1 x m / n x 1 / 1 x 1 broadcast over lhs (DAPHNE broadcasts only the rhs)."""
    if _is_matrix(lhs) and _is_matrix(rhs):
        lr, lc = lhs.shape
        rr, rc = rhs.shape
        if (lr == rr and lc == rc) or (rr == 1 and (rc == lc or rc == 1)) or (rc == 1 and rr == lr):
            return
        raise DaphneRuntimeError(f"{name}: shape mismatch: lhs {lr}x{lc}, rhs {rr}x{rc}")


def matrix_kernel(op: str, operand_vt: str, res_vt: str | None = None) -> Callable:
    """A function `(lhs, rhs) -> ndarray` where each side is a matrix or a scalar already cast to `operand_vt`.

    Supports matrix op scalar, scalar op matrix, n x m op n x m, and rhs broadcasting (1 x m, n x 1); the result has
    the matrix operand's shape and `res_vt`'s dtype. Other shapes raise `ewAdd: shape mismatch: lhs .., rhs ..`.
    A matrix operand of another dtype is cast to `operand_vt` first (defensive; the compiler normally does it).
    """
    if op not in EW_BINARY:
        raise DaphneRuntimeError(f"unknown element-wise binary operation '{op}'")
    res_vt = res_vt or EW_BINARY[op].result_vt(operand_vt, operand_vt)
    key = (op, operand_vt, res_vt)
    fn = _matrix_cache.get(key)
    if fn is None:
        fn = _matrix_cache[key] = _build_matrix(op, operand_vt, res_vt)
    return fn


_TRUTH_VTS = frozenset(("si64", "ui64", "si32", "ui32"))


def _truth(x: np.ndarray, vt: str) -> np.ndarray | None:
    """`cast(x, vt) != 0` for a float matrix without the cast (SQL's `a AND b` of float comparisons casts both to
    an integer type first, CastArgsToResType): where every value is in the int32 range (no NaN) the cast truncates,
    so a value is non-zero exactly when |x| >= 1. None: not this case, cast as usual."""
    if x.dtype.kind != "f" or vt not in _TRUTH_VTS or not x.size:
        return None
    if not (-2147483648.0 < float(x.min()) and float(x.max()) < 2147483648.0):  # NaN fails both tests
        return None
    return np.abs(x) >= 1.0


def _to_result(res: np.ndarray, res_vt: str) -> np.ndarray:
    """A core's result in the result value type: a comparison's bool matrix becomes 0/1 numbers with a plain
    `astype` (exact, no floating-point error to silence: `cast_matrix` enters `np.errstate`, ~1-2 us, more than a
    small comparison costs); anything else takes `cast_matrix`."""
    dt = dtype_of(res_vt)
    if res.dtype.kind == "b" and dt.kind in "fiu":
        return res.astype(dt)
    return cast_matrix(res, res_vt)


def _build_matrix(op: str, vt: str, res_vt: str) -> Callable:
    name = _name(op)
    dt = dtype_of(vt)
    res_dt = dtype_of(res_vt)
    core = _matrix_core(op, vt)
    to_scalar = (lambda x: x) if vt == "str" else dt.type
    logical = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}.get(op)

    f64_fast = vt == "f64" and logical is None  # dense f64 with a same-shape matrix or a Python float: the hot case
    # + - * /: f64 in, f64 out (a comparison's ufunc gives bools, made 0/1 numbers after)
    arith = f64_fast and res_dt == dt and type(core) is np.ufunc and op not in COMPARISON_KINDS

    def kernel(lhs, rhs, dead=0):
        if f64_fast:  # the checks below, decided by types alone (numpy's per-call overhead dominates small matrices)
            tl, tr = type(lhs), type(rhs)  # `dtype is`: numpy's f64 dtype is one object; another one takes the long way
            if (
                tl is np.ndarray
                and lhs.dtype is dt
                and (tr is float or (tr is np.ndarray and rhs.dtype is dt and rhs.shape == lhs.shape))
            ) or (tl is float and tr is np.ndarray and rhs.dtype is dt):
                if dead and arith:  # runtime/kernels/dead_operands.py: the counts are taken here, in the kernel's frame
                    out = (
                        lhs if dead & 1 and getrefcount(lhs) == DEAD_REFS and owns_buffer(lhs)
                        else rhs if dead & 2 and getrefcount(rhs) == DEAD_REFS and owns_buffer(rhs)
                        else None
                    )  # fmt: skip
                    if out is not None:
                        return core(lhs, rhs, out=out) if STATE.ignoring else quietly(core, lhs, rhs, out=out)
                res = core(lhs, rhs) if STATE.ignoring else quietly(core, lhs, rhs)
                return res if arith or res.dtype == res_dt else _to_result(res, res_vt)
        if is_csr(lhs) or is_csr(rhs):
            return sparse_kernel(lhs, rhs)
        lm = isinstance(lhs, np.ndarray)
        rm = isinstance(rhs, np.ndarray)
        if not (lm or rm):
            raise DaphneRuntimeError(f"{name}: matrix kernel called with two scalars")
        if lm and rm:
            check_shapes(name, lhs, rhs)
            if logical is not None and lhs.shape == rhs.shape and lhs.dtype != dt:
                fast = _logical_of_floats(logical, lhs, rhs, vt, res_dt)
                if fast is not None:
                    return fast
        a = (lhs if lhs.dtype == dt else cast_matrix(lhs, vt)) if lm else to_scalar(lhs)
        b = (rhs if rhs.dtype == dt else cast_matrix(rhs, vt)) if rm else to_scalar(rhs)
        with quiet():
            res = core(a, b)
        if res.dtype != res_dt:
            res = _to_result(res, res_vt)
        return res

    def sparse_kernel(lhs, rhs):
        check_shapes(name, lhs, rhs)
        a = cast_matrix(lhs, vt) if _is_matrix(lhs) else to_scalar(lhs)
        b = cast_matrix(rhs, vt) if _is_matrix(rhs) else to_scalar(rhs)
        with quiet():
            res = _csr_binary(core, a, b)
        return cast_matrix(res, res_vt) if res.dtype != res_dt else res

    kernel.__name__ = f"{name}_{vt}_{res_vt}"
    kernel.reuses_dead_operands = True  # type: ignore[attr-defined]  # compiler/host/generator.py passes `dead`
    if arith and "dd->d" in core.types:  # type: ignore[union-attr]
        kernel.f64_ufunc = core  # type: ignore[attr-defined]  # the fast path's call, inlined by the host code
    return kernel


def _logical_of_floats(f: Callable, lhs: np.ndarray, rhs: np.ndarray, vt: str, res_dt: np.dtype) -> np.ndarray | None:
    """`lhs AND/OR/XOR rhs` of same-shape matrices through `_truth` (no integer copies of the operands)."""
    ta = _truth(lhs, vt) if lhs.dtype.kind == "f" else None
    if ta is None:
        return None
    tb = _truth(rhs, vt) if rhs.dtype.kind == "f" else (rhs != 0 if rhs.dtype == dtype_of(vt) else None)
    if tb is None:
        return None
    return f(ta, tb).astype(res_dt)


# ---------------------------------------------------------------------------------------------------------------------
# CSR operands
#
# Every CSR path evaluates the very same vectorised core as the dense path, on the stored values plus, once, on a
# zero: if op(0, y) (or op(x, 0), op(0, 0)) is zero the result keeps a sparse pattern and comes back as CSR,
# otherwise it is a dense matrix filled with that value and the stored positions scattered in. Results are thus
# value-identical to densifying first (NaN * 0, 1 / 0 and integer division by zero included), while
# zero-preserving ops (`X * 2`, `X + Y` of two CSR matrices, `X * D`) never densify.
# ---------------------------------------------------------------------------------------------------------------------


def _is_matrix(x) -> bool:
    return isinstance(x, np.ndarray) or is_csr(x)


def _csr_binary(core: Callable, a, b):
    """`a op b` where at least one side is CSR; the other is CSR, dense or a scalar."""
    if not _is_matrix(b):
        zero = core(np.zeros(1, a.dtype), b)[0] if has_implicit_zeros(a) else 0
        return with_pattern(a, np.asarray(core(a.data, b)), zero)
    if not _is_matrix(a):
        zero = core(a, np.zeros(1, b.dtype))[0] if has_implicit_zeros(b) else 0
        return with_pattern(b, np.asarray(core(a, b.data)), zero)
    if a.shape != b.shape:  # a broadcast rhs vector (or 1 x 1) is small: densify it
        b = as_dense(b)
        if not is_csr(a):
            return core(a, b)
    if is_csr(a) and is_csr(b):
        return _csr_csr(core, a, b)
    if is_csr(a):
        return _csr_dense(core, a, b)
    return _dense_csr(core, a, b)


#: Cores whose result has the operands' dtype (float operands), so they can write into a temporary operand.
_SAME_TYPE_UFUNCS = (np.add, np.subtract, np.multiply, np.divide)


def _csr_dense(core: Callable, A, D: np.ndarray):
    """CSR lhs, dense rhs of the same shape or broadcast (1 x m, n x 1, 1 x 1). A row vector (`G * t(c)`, a
    column scaling) needs no row of each value, only its column (2x faster than with the row ids)."""
    if D.shape[0] == 1:
        rows = None
        dv = D[0, A.indices if D.shape[1] > 1 else 0]
    else:
        rows = row_ids(A)
        dv = D[rows, A.indices if D.shape[1] > 1 else 0]
    same_type = A.dtype.kind == "f" and isinstance(dv, np.ndarray) and dv.dtype == A.dtype
    if core in _SAME_TYPE_UFUNCS and same_type and dv.shape == A.data.shape:
        values = core(A.data, dv, out=dv)  # dv is a fresh gather: reusing it saves an nnz-sized allocation
    else:
        values = np.asarray(core(A.data, dv))
    zero = core(np.zeros((1, 1), A.dtype), D) if has_implicit_zeros(A) else 0
    return with_pattern(A, values, zero, rows)


def _dense_csr(core: Callable, D: np.ndarray, B):
    """Dense lhs, CSR rhs of the same shape."""
    rows = row_ids(B)
    values = np.asarray(core(D[rows, B.indices], B.data))
    if not has_implicit_zeros(B):
        return csr_from_parts(values, B.indices, B.indptr, B.shape)
    res = np.asarray(core(D, np.zeros((1, 1), B.dtype)))
    res = np.array(res, dtype=values.dtype, copy=True)
    res[rows, B.indices] = values
    return res


def _csr_csr(core: Callable, A, B):
    """Two CSR matrices of the same shape: the op runs on the union of both patterns."""
    cols = A.shape[1]
    keys_a = row_ids(A) * cols + A.indices
    keys_b = row_ids(B) * cols + B.indices
    keys = np.union1d(keys_a, keys_b)
    av = np.zeros(keys.size, A.dtype)
    av[np.searchsorted(keys, keys_a)] = A.data
    bv = np.zeros(keys.size, B.dtype)
    bv[np.searchsorted(keys, keys_b)] = B.data
    values = np.asarray(core(av, bv))
    rows = keys // cols
    indptr = np.zeros(A.shape[0] + 1, np.int64)
    np.cumsum(np.bincount(rows, minlength=A.shape[0]), out=indptr[1:])
    union = csr_from_parts(values, keys % cols, indptr, A.shape)
    zero = core(np.zeros(1, A.dtype), np.zeros(1, B.dtype))[0] if has_implicit_zeros(union) else 0
    return with_pattern(union, values, zero, rows)


def _as_f64(x):
    return x.astype(np.float64) if isinstance(x, np.ndarray) else np.float64(x)


def _check_zero(b) -> None:
    if np.any(b == 0):
        raise DaphneRuntimeError("division by zero")


def _trunc_div(a, b):
    """C integer division on arrays: floor division corrected toward zero."""
    _check_zero(b)
    q = np.floor_divide(a, b)
    if q.dtype.kind == "i":
        fix = (q < 0) & (q * b != a)
        q = q + fix.astype(q.dtype)
    return q


def _float_pow(a, b):
    """`pow` on float arrays; a scalar exponent 2 squares (`x * x` has the same bits as numpy's and libm's pow for
    every input, and costs a multiply instead of a pow call per cell)."""
    if not isinstance(b, np.ndarray) and b == 2:
        return np.square(a)
    return np.power(a, b)


def _matrix_core(op: str, vt: str) -> Callable:
    """Vectorised implementation returning an array (dtype fixed up by the caller)."""
    if op in COMPARISON_KINDS:
        return {
            "eq": np.equal,
            "neq": np.not_equal,
            "lt": np.less,
            "le": np.less_equal,
            "gt": np.greater,
            "ge": np.greater_equal,
        }[op]
    if op == "min":
        return lambda a, b: np.where(b < a, b, a)
    if op == "max":
        return lambda a, b: np.where(a < b, b, a)
    if vt == "str":
        if op in ("concat", "add"):
            return np.add
        raise _unsupported(op, vt)
    if op == "concat":
        raise _unsupported(op, vt)
    if op in LOGICAL_KINDS:
        f = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}[op]
        return lambda a, b: f(a != 0, b != 0)
    if vt in FLOAT_VTS:
        table = {
            "add": np.add,
            "sub": np.subtract,
            "mul": np.multiply,
            "div": np.divide,
            "pow": _float_pow,
            "mod": np.fmod,
            "log": lambda a, b: np.log(a) / np.log(b),
        }
        if op not in table:
            raise _unsupported(op, vt)
        return table[op]
    if vt == "bool":
        int_core = _int_core(op, "si64")
        return lambda a, b: int_core(np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64))
    if vt in INT_VTS:
        return _int_core(op, vt)
    raise _unsupported(op, vt)


def _int_core(op: str, vt: str) -> Callable:
    """Integer matrix operations with C++ semantics (wrapping; pow/mod/log go through double)."""
    if op in ("add", "sub", "mul", "bitwiseAnd"):
        return {"add": np.add, "sub": np.subtract, "mul": np.multiply, "bitwiseAnd": np.bitwise_and}[op]
    if op == "div":
        return _trunc_div
    if op == "pow":
        return lambda a, b: float_array_to_int(np.power(_as_f64(a), _as_f64(b)), vt)
    if op == "mod":

        def mod(a, b):
            _check_zero(b)
            return float_array_to_int(np.fmod(_as_f64(a), _as_f64(b)), vt)

        return mod
    if op == "log":
        return lambda a, b: np.log(_as_f64(a)) / np.log(_as_f64(b))
    raise _unsupported(op, vt)
