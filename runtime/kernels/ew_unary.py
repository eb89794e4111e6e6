"""Element-wise unary operations (DaphneDSL `minus abs sign exp ln sqrt round floor ceil sin cos tan sinh cosh tanh
asin acos atan isNan lower upper`).

Result value types (`result_vt`: the kind's record in dialects/op_kinds.py, from DaphneOps.td):
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
from sys import getrefcount

import numpy as np

from daphnec.dialects.op_kinds import EW_UNARY, EwUnaryKind
from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.fperr import STATE, quiet, quietly
from daphnec.runtime.kernels.dead_operands import DEAD_REFS, owns_buffer
from daphnec.runtime.printing import format_scalar
from daphnec.runtime.values import (
    FLOAT_VTS,
    INT_RANGES,
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

STR_OPS = frozenset(k for k, r in EW_UNARY.items() if r.strings == "only")
"""`lower upper`: functions of strings."""


def _name(op: str) -> str:
    """The IR op name of kind `op` (`ewSqrt`), as error messages name it."""
    r = EW_UNARY.get(op)
    return r.mnemonic if r is not None else op


_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_UPPER = str.maketrans("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")


def result_vt(op: str, vt_in: str) -> str:
    """Result value type of unary `op` on an argument of type `vt_in` (`EwUnaryKind.vt_rule`, dialects/op_kinds.py);
    raises for an argument the op does not take."""
    r = _record(op, vt_in)
    return r.result_vt(vt_in)


def _record(op: str, vt_in: str) -> EwUnaryKind:
    """The record of kind `op`, which must take an argument of type `vt_in`."""
    r = EW_UNARY.get(op)
    if r is None:
        raise DaphneRuntimeError(f"unknown element-wise unary operation '{op}'")
    _check_strings(r, vt_in)
    return r


def _check_strings(r: EwUnaryKind, vt_in: str) -> None:
    if r.strings == "only" and vt_in != "str":
        raise DaphneRuntimeError(f"{r.mnemonic}: argument must be a string, got {vt_in}")
    if r.strings == "rejected" and vt_in == "str":
        raise DaphneRuntimeError(f"{r.mnemonic}: operation is not supported on value type str")


def _domain_error(op: str, x) -> DaphneRuntimeError:
    what = EW_UNARY[op].domain_text()
    return DaphneRuntimeError(f"invalid argument '{format_scalar(x)}' passed to unary func {what}")


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


_LIBM_KINDS: dict[str, str] = {k: r.libm for k, r in EW_UNARY.items() if r.libm is not None}
"""The kinds computed by a C math function (`sqrt`): `math.<f>` on scalars, `numpy.<f>` on matrices."""

_FLOAT_FUNCS: dict[str, Callable[[float], float]] = {
    **{k: _libm(getattr(math, f), getattr(np, f)) for k, f in _LIBM_KINDS.items()},
    "round": _c_round,
    "floor": _c_floor,
    "ceil": _c_ceil,
    "abs": abs,
    "minus": float.__neg__,
}

_NP_FUNCS: dict[str, Callable] = {
    **{k: getattr(np, f) for k, f in _LIBM_KINDS.items()},
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


def scalar_inline(op: str, vt_in: str, vt_out: str | None = None) -> tuple[str, dict[str, object]] | None:
    """The host-code template of `scalar_kernel(op, vt_in, vt_out)` where a Python expression computes exactly what
    the kernel returns (see `ew_binary.scalar_inline` for the form); None: the kernel is called. Covered: `abs` and
    `-x` of f64 and si64 (si64 wraps: -INT64_MIN is INT64_MIN) and `sqrt` of f64 (a negative or NaN argument goes
    to the kernel, which checks the domain)."""
    vt_out = vt_out or result_vt(op, vt_in)
    if vt_in != vt_out:
        return None
    if vt_in == "f64":
        if op == "abs":
            return "{r} = abs({0})", {}
        if op == "minus":
            return "{r} = -{0}", {}
        if op == "sqrt":
            return "{r} = {sqrt}({0}) if {0} >= 0.0 else {k}({0})", {"sqrt": math.sqrt, "k": scalar_kernel(op, vt_in)}
        return None
    if vt_in == "si64" and op in ("abs", "minus"):
        lo, hi = INT_RANGES["si64"]
        expr = "abs({0})" if op == "abs" else "-{0}"
        return f"{{r}} = {expr}\nif {{r}} > {hi}: {{r}} = {{wrap}}({{r}}, 'si64')", {"wrap": wrap_int}
    return None


def _build_scalar(op: str, vt_in: str, vt_out: str) -> Callable:
    r = _record(op, vt_in)
    if op in STR_OPS:
        table = _LOWER if op == "lower" else _UPPER
        return lambda s: s.translate(table)
    if vt_in == "str" and op == "isNan":
        return lambda s: 0  # a string is never NaN
    if r.floating or vt_in in FLOAT_VTS:
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
    dom = EW_UNARY[op].domain
    if dom is not None:
        lo, hi = dom
        inner = core

        def core(x, _inner=inner, _lo=lo, _hi=hi):
            if _lo > x or x > _hi:
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
        raise DaphneRuntimeError(f"{_name(op)}: operation is not supported on value type {vt_in}")
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
    r = _record(op, vt_in)
    name = r.mnemonic
    if op in STR_OPS:
        table = _LOWER if op == "lower" else _UPPER

        def str_kernel(X):
            out = np.empty(X.shape, dtype=object)
            out.ravel()[:] = [s.translate(table) for s in X.ravel().tolist()]
            return out

        return str_kernel
    if vt_in == "str" and op == "isNan":
        return lambda X: np.zeros(X.shape, dtype=dtype_of(vt_out))  # a string is never NaN
    if r.floating or vt_in in FLOAT_VTS:
        calc_vt = vt_out if vt_out in FLOAT_VTS else ("f64" if vt_in not in FLOAT_VTS else vt_in)
        core = _float_matrix_core(op)
    else:
        calc_vt = vt_in
        core = _int_matrix_core(op, vt_in)

    calc_dt, out_dt = dtype_of(calc_vt), dtype_of(vt_out)
    reuse = type(core) is np.ufunc and calc_dt == out_dt  # abs, minus, exp, ...: into a dead operand (`dead`)

    def kernel(X, dead=0):
        if type(X) is np.ndarray and X.dtype == calc_dt:  # dense, no cast: numpy's overhead dominates small ones
            if dead and reuse and getrefcount(X) == DEAD_REFS and owns_buffer(X):  # runtime/kernels/dead_operands.py
                return core(X, out=X) if STATE.ignoring else quietly(core, X, out=X)
            res = core(X) if STATE.ignoring else quietly(core, X)  # runtime/fperr.py: no scope to enter in a run
            return res if res.dtype == out_dt else cast_matrix(res, vt_out)
        A = cast_matrix(X, calc_vt)
        with quiet():
            res = _csr_unary(core, A) if is_csr(A) else core(A)
        return res if res.dtype == dtype_of(vt_out) else cast_matrix(res, vt_out)

    kernel.__name__ = f"{name}_{vt_in}_{vt_out}"
    kernel.reuses_dead_operands = True  # type: ignore[attr-defined]  # compiler/host/generator.py passes `dead`
    if reuse and vt_in == vt_out == "f64" and "d->d" in core.types:  # type: ignore[union-attr]
        kernel.f64_ufunc = core  # type: ignore[attr-defined]  # the fast path's call, inlined by the host code
    return kernel


def _csr_unary(core: Callable, A):
    """The op on a CSR matrix: on the stored values, plus once on a zero for the implicit zeros. Zero-preserving
    kinds (`EwUnaryKind.zero_preserving`, dialects/op_kinds.py) keep CSR; the others (exp cos cosh acos, ln(0) =
    -inf) give a dense matrix with identical values."""
    values = core(A.data)
    zero = core(np.zeros(1, A.dtype))[0] if has_implicit_zeros(A) else 0
    return with_pattern(A, values, zero)


def _check_domain(op: str, A: np.ndarray) -> None:
    dom = EW_UNARY[op].domain
    if dom is None:
        return
    lo, hi = dom
    bad = A < lo if hi == math.inf else (A < lo) | (A > hi)
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
    if EW_UNARY[op].domain is not None:

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
            raise DaphneRuntimeError(f"{_name(op)}: operation is not supported on value type bool")
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
    raise DaphneRuntimeError(f"{_name(op)}: operation is not supported on value type {vt}")
