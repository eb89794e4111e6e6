"""Element-wise unary operations (DaphneDSL `minus abs sign exp ln sqrt round floor ceil sin cos tan sinh cosh tanh
asin acos atan isNan lower upper`).

Result value types (`result_vt`, from DaphneOps.td):
- `minus abs sign round floor ceil isNan`: the argument's type (ValueTypeFromFirstArg), so `round(si64)` is si64 and
  `isNan(f64)` is an f64 0/1;
- `exp ln sqrt sin cos tan sinh cosh tanh asin acos atan`: the argument's type if it is f32/f64, else f64
  (ValueTypeFromArgsFP), so `sqrt(si64)` is f64; the compiler casts the argument to the result type first;
- `lower upper`: str (ASCII-only case mapping, like `std::tolower` in the C locale).

Semantics follow DAPHNE's `EwUnarySca.h`: `sqrt`/`ln` raise for arguments below -0 and `asin`/`acos` outside [-1, 1]
(message `invalid argument '<x>' passed to unary func SQRT with domain [-0, inf]`); `round` is C `round` (half away
from zero, keeps the sign of zero); `sign` is 0 for +-0 and NaN for NaN; integer rounding goes through double like
C++'s integral overloads; integer `minus`/`abs` wrap.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.fperr import quiet
from daphnec.runtime.printing import format_scalar
from daphnec.runtime.values import (
    FLOAT_VTS,
    INT_VTS,
    NEG_NAN,
    POS_NAN,
    cast_matrix,
    cast_scalar,
    dtype_of,
    float_array_to_int,
    float_to_int,
    has_implicit_zeros,
    is_csr,
    to_f32,
    with_pattern,
    wrap_int,
)

UNARY_OPS: tuple[str, ...] = (
    "minus",
    "abs",
    "sign",
    "exp",
    "ln",
    "sqrt",
    "round",
    "floor",
    "ceil",
    "sin",
    "cos",
    "tan",
    "sinh",
    "cosh",
    "tanh",
    "asin",
    "acos",
    "atan",
    "isNan",
    "lower",
    "upper",
)
OP_NAMES: dict[str, str] = {op: "ew" + op[0].upper() + op[1:] for op in UNARY_OPS}
SAME_TYPE_OPS = frozenset(("minus", "abs", "sign", "round", "floor", "ceil", "isNan"))
FP_OPS = frozenset(("exp", "ln", "sqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos", "atan"))
STR_OPS = frozenset(("lower", "upper"))

#: Domain checks from EwUnarySca.h: (lower bound, upper bound or None, text in the error message).
_DOMAINS: dict[str, tuple[float, float | None, str]] = {
    "sqrt": (-0.0, None, "SQRT with domain [-0, inf]"),
    "ln": (-0.0, None, "LN with domain [-0, inf]"),
    "asin": (-1.0, 1.0, "ASIN with domain [-1, 1]"),
    "acos": (-1.0, 1.0, "ACOS with domain [-1, 1]"),
}

_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_UPPER = str.maketrans("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")


STR_IS_NAN_VT = "si64"
"""`isNan` of a string is 0 (never NaN), as an si64 like the result of comparing strings (facts §4)."""


def result_vt(op: str, vt_in: str) -> str:
    """Result value type of unary `op` on an argument of type `vt_in` (see module docstring)."""
    if op in STR_OPS:
        if vt_in != "str":
            raise DaphneRuntimeError(f"{OP_NAMES[op]}: argument must be a string, got {vt_in}")
        return "str"
    if op not in OP_NAMES:
        raise DaphneRuntimeError(f"unknown element-wise unary operation '{op}'")
    if vt_in == "str" and op == "isNan":
        return STR_IS_NAN_VT
    if vt_in == "str":
        raise DaphneRuntimeError(f"{OP_NAMES[op]}: operation is not supported on value type str")
    if op in FP_OPS:
        return vt_in if vt_in in FLOAT_VTS else "f64"
    return vt_in


def _domain_error(op: str, x) -> DaphneRuntimeError:
    return DaphneRuntimeError(f"invalid argument '{format_scalar(x)}' passed to unary func {_DOMAINS[op][2]}")


# ---------------------------------------------------------------------------------------------------------------------
# Scalar float implementations (C libm semantics on Python floats)
# ---------------------------------------------------------------------------------------------------------------------


def _c_round(x: float) -> float:
    """C `round`: half away from zero; keeps the sign of zero; inf/nan unchanged."""
    if x != x or x in (math.inf, -math.inf):
        return x
    t = float(math.trunc(x))
    if abs(x - t) >= 0.5:
        t += math.copysign(1.0, x)
    return math.copysign(t, x)


def _c_floor(x: float) -> float:
    if x != x or x in (math.inf, -math.inf):
        return x
    return math.copysign(float(math.floor(x)), x)


def _c_ceil(x: float) -> float:
    if x != x or x in (math.inf, -math.inf):
        return x
    return math.copysign(float(math.ceil(x)), x)


def _sign(x):
    """`(x == 0) ? 0 : ((x < 0) ? -1 : ((x > 0) ? 1 : NaN))`."""
    if x == 0:
        return 0
    if x < 0:
        return -1
    if x > 0:
        return 1
    return POS_NAN


def _libm(fn: Callable[[float], float], np_fn: Callable) -> Callable[[float], float]:
    """Wrap a `math` function so that domain/overflow errors give the C result (via numpy) instead of raising."""

    def f(x: float) -> float:
        try:
            return fn(x)
        except (ValueError, OverflowError):
            with quiet():
                r = float(np_fn(np.float64(x)))
            return NEG_NAN if r != r and x == x else r

    return f


_FLOAT_FUNCS: dict[str, Callable[[float], float]] = {
    "exp": _libm(math.exp, np.exp),
    "ln": _libm(math.log, np.log),
    "sqrt": _libm(math.sqrt, np.sqrt),
    "sin": _libm(math.sin, np.sin),
    "cos": _libm(math.cos, np.cos),
    "tan": _libm(math.tan, np.tan),
    "sinh": _libm(math.sinh, np.sinh),
    "cosh": _libm(math.cosh, np.cosh),
    "tanh": math.tanh,
    "asin": _libm(math.asin, np.arcsin),
    "acos": _libm(math.acos, np.arccos),
    "atan": math.atan,
    "round": _c_round,
    "floor": _c_floor,
    "ceil": _c_ceil,
    "abs": abs,
    "minus": float.__neg__,
}

_NP_FUNCS: dict[str, Callable] = {
    "exp": np.exp,
    "ln": np.log,
    "sqrt": np.sqrt,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "tanh": np.tanh,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "floor": np.floor,
    "ceil": np.ceil,
    "abs": np.abs,
    "minus": np.negative,
}


# ---------------------------------------------------------------------------------------------------------------------
# Scalar kernels
# ---------------------------------------------------------------------------------------------------------------------

_scalar_cache: dict[tuple[str, str, str], Callable] = {}


def scalar_kernel(op: str, vt_in: str, vt_out: str | None = None) -> Callable:
    """A function `x -> result` for a scalar of type `vt_in` returning type `vt_out` (default: `result_vt`)."""
    vt_out = vt_out or result_vt(op, vt_in)
    key = (op, vt_in, vt_out)
    fn = _scalar_cache.get(key)
    if fn is None:
        fn = _scalar_cache[key] = _build_scalar(op, vt_in, vt_out)
    return fn


def _build_scalar(op: str, vt_in: str, vt_out: str) -> Callable:
    name = OP_NAMES.get(op, op)
    if op in STR_OPS:
        if vt_in != "str":
            raise DaphneRuntimeError(f"{name}: argument must be a string, got {vt_in}")
        table = _LOWER if op == "lower" else _UPPER
        return lambda s: s.translate(table)
    if vt_in == "str" and op == "isNan":
        return lambda s: 0  # a string is never NaN
    if vt_in == "str":
        raise DaphneRuntimeError(f"{name}: operation is not supported on value type str")
    if op in FP_OPS or vt_in in FLOAT_VTS:
        return _float_scalar(op, vt_in, vt_out)
    return _int_scalar(op, vt_in, vt_out)


def _float_scalar(op: str, vt_in: str, vt_out: str) -> Callable:
    """Float arithmetic (the argument is cast to the float result type first, like CastArgsToResType)."""
    calc_vt = vt_out if vt_out in FLOAT_VTS else ("f64" if vt_in not in FLOAT_VTS else vt_in)
    pre = None if vt_in == calc_vt else (lambda x: cast_scalar(x, calc_vt))
    if op == "isNan":
        core = lambda x: x != x  # noqa: E731
    elif op == "sign":
        core = _sign
    else:
        core = _FLOAT_FUNCS[op]
    dom = _DOMAINS.get(op)
    if dom is not None:
        lo, hi, _ = dom
        inner = core

        def core(x, _inner=inner, _lo=lo, _hi=hi):
            if _lo > x or (_hi is not None and x > _hi):
                raise _domain_error(op, x)
            return _inner(x)

    post = _float_post(vt_out, calc_vt)
    if pre is None and post is None:
        return core
    if pre is None:
        return lambda x: post(core(x))
    if post is None:
        return lambda x: core(pre(x))
    return lambda x: post(core(pre(x)))


def _float_post(vt_out: str, calc_vt: str) -> Callable | None:
    """Convert a float (or bool/int from isNan/sign) result to `vt_out`."""
    if vt_out == "f64":
        return float
    if vt_out == "f32":
        return lambda r: to_f32(float(r))
    if vt_out in INT_VTS:
        return lambda r: float_to_int(float(r), vt_out)
    if vt_out == "bool":
        return lambda r: r != 0
    raise DaphneRuntimeError(f"cannot produce a {vt_out} result from a {calc_vt} value")


def _int_scalar(op: str, vt_in: str, vt_out: str) -> Callable:
    """Integer/bool arithmetic; rounding goes through double like C++'s integral overloads of round/floor/ceil."""
    kind_out = vt_out
    if op == "minus":
        core = lambda x: -int(x)  # noqa: E731
    elif op == "abs":
        core = lambda x: abs(int(x))  # noqa: E731
    elif op == "sign":
        core = lambda x: 0 if x == 0 else (-1 if x < 0 else 1)  # noqa: E731
    elif op == "isNan":
        core = lambda x: 0  # noqa: E731
    elif op in ("round", "floor", "ceil"):
        if vt_in == "bool":
            core = int
        else:
            core = lambda x: float_to_int(float(x), vt_in)  # noqa: E731
    else:
        raise DaphneRuntimeError(f"{OP_NAMES.get(op, op)}: operation is not supported on value type {vt_in}")
    if kind_out in INT_VTS:
        return lambda x: wrap_int(core(x), kind_out)
    if kind_out == "bool":
        return lambda x: core(x) != 0
    if kind_out in FLOAT_VTS:
        return lambda x: cast_scalar(float(core(x)), kind_out)
    raise DaphneRuntimeError(f"cannot produce a {vt_out} result from {vt_in}")


# ---------------------------------------------------------------------------------------------------------------------
# Matrix kernels
# ---------------------------------------------------------------------------------------------------------------------

_matrix_cache: dict[tuple[str, str, str], Callable] = {}


def matrix_kernel(op: str, vt_in: str, vt_out: str | None = None) -> Callable:
    """A function `X -> ndarray` applying `op` element-wise to a matrix of type `vt_in` (result type `vt_out`)."""
    vt_out = vt_out or result_vt(op, vt_in)
    key = (op, vt_in, vt_out)
    fn = _matrix_cache.get(key)
    if fn is None:
        fn = _matrix_cache[key] = _build_matrix(op, vt_in, vt_out)
    return fn


def _build_matrix(op: str, vt_in: str, vt_out: str) -> Callable:
    name = OP_NAMES.get(op, op)
    if op in STR_OPS:
        if vt_in != "str":
            raise DaphneRuntimeError(f"{name}: argument must be a string, got {vt_in}")
        table = _LOWER if op == "lower" else _UPPER

        def str_kernel(X):
            out = np.empty(X.shape, dtype=object)
            out.ravel()[:] = [s.translate(table) for s in X.ravel().tolist()]
            return out

        return str_kernel
    if vt_in == "str" and op == "isNan":
        return lambda X: np.zeros(X.shape, dtype=dtype_of(vt_out))  # a string is never NaN
    if vt_in == "str":
        raise DaphneRuntimeError(f"{name}: operation is not supported on value type str")
    if op in FP_OPS or vt_in in FLOAT_VTS:
        calc_vt = vt_out if vt_out in FLOAT_VTS else ("f64" if vt_in not in FLOAT_VTS else vt_in)
        core = _float_matrix_core(op)
    else:
        calc_vt = vt_in
        core = _int_matrix_core(op, vt_in)

    def kernel(X):
        A = cast_matrix(X, calc_vt)
        with quiet():
            res = _csr_unary(core, A) if is_csr(A) else core(A)
        return res if res.dtype == dtype_of(vt_out) else cast_matrix(res, vt_out)

    kernel.__name__ = f"{name}_{vt_in}_{vt_out}"
    return kernel


def _csr_unary(core: Callable, A):
    """The op on a CSR matrix: on the stored values, plus once on a zero for the implicit zeros. Zero-preserving
    ops (minus abs sign sqrt round floor ceil sin tan sinh tanh asin atan isNan) keep CSR; the others (exp cos
    cosh acos, ln(0) = -inf) give a dense matrix with identical values."""
    values = core(A.data)
    zero = core(np.zeros(1, A.dtype))[0] if has_implicit_zeros(A) else 0
    return with_pattern(A, values, zero)


def _check_domain(op: str, A: np.ndarray) -> None:
    dom = _DOMAINS.get(op)
    if dom is None:
        return
    lo, hi, _ = dom
    bad = A < lo if hi is None else (A < lo) | (A > hi)
    if bad.any():
        raise _domain_error(op, A.ravel()[np.flatnonzero(bad)[0]].item())


def _round_array(A: np.ndarray) -> np.ndarray:
    """C `round` on arrays (np.round rounds half to even)."""
    t = np.trunc(A)
    r = t + np.where(np.abs(A - t) >= 0.5, np.sign(A), 0).astype(A.dtype)
    return np.copysign(r, A)


def _sign_array(A: np.ndarray) -> np.ndarray:
    """DAPHNE sign: 0 for +-0 (positive zero), NaN stays NaN (positive)."""
    r = np.sign(A) + A.dtype.type(0)  # + 0 turns -0 into +0
    r[np.isnan(A)] = POS_NAN
    return r


def _nan_sign_fix(res: np.ndarray, A: np.ndarray) -> np.ndarray:
    """Give NaNs produced from non-NaN inputs the x86 sign bit (numpy's SIMD math may not)."""
    new = np.isnan(res) & ~np.isnan(A)
    if new.any():
        res[new] = NEG_NAN
    return res


def _float_matrix_core(op: str) -> Callable:
    if op == "isNan":
        return lambda A: np.isnan(A).astype(A.dtype)
    if op == "sign":
        return _sign_array
    if op == "round":
        return _round_array
    fn = _NP_FUNCS[op]
    if op in _DOMAINS:

        def checked(A):
            _check_domain(op, A)
            return _nan_sign_fix(fn(A), A)

        return checked
    if op in ("sin", "cos", "tan"):
        return lambda A: _nan_sign_fix(fn(A), A)
    return fn


def _int_matrix_core(op: str, vt: str) -> Callable:
    if vt == "bool":
        as_int = {
            "minus": lambda A: A,
            "abs": lambda A: A,
            "sign": lambda A: A,
            "round": lambda A: A,
            "floor": lambda A: A,
            "ceil": lambda A: A,
            "isNan": lambda A: np.zeros_like(A),
        }
        if op not in as_int:
            raise DaphneRuntimeError(f"{OP_NAMES.get(op, op)}: operation is not supported on value type bool")
        return as_int[op]
    if op == "minus":
        return np.negative
    if op == "abs":
        return np.abs
    if op == "sign":
        return np.sign
    if op == "isNan":
        return np.zeros_like
    if op in ("round", "floor", "ceil"):
        return lambda A: float_array_to_int(A.astype(np.float64), vt)
    raise DaphneRuntimeError(f"{OP_NAMES.get(op, op)}: operation is not supported on value type {vt}")
