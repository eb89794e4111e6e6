"""Data generation: `fill`, `seq`, `rand`, matrix literals and `now` (DAPHNE's Fill.h, Seq.h, RandMatrix.h).

`rand` reproduces DAPHNE's dense RandMatrix bit for bit for explicit seeds: values come from `std::mt19937(seed)`
through libstdc++'s `uniform_real_distribution` (generate_canonical: two 32-bit draws (r0 + r1 * 2^32) / 2^64 for
double, one draw / 2^32 for float) or `uniform_int_distribution` (Lemire's nearly-divisionless downscaling,
upscaling for ranges wider than 32 bits), zero values are redrawn, and the positions of the zeros (sparsity >= 0.5)
or of the non-zeros (sparsity < 0.5) are chosen by Knuth's selection sampling driven by a second
`std::mt19937(seed * 3)`. numpy's MT19937 bit generator has the same state transition, so its raw outputs are
exactly std::mt19937's once the state is seeded with the same `init_genrand`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator

import numpy as np

from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.memory import check_alloc
from daphnec.runtime.values import FLOAT_VTS, INT_VTS, cast_scalar, dtype_of, object_matrix, wrap_int

# ---------------------------------------------------------------------------------------------------------------------
# fill, matrix literals, now
# ---------------------------------------------------------------------------------------------------------------------


def _check_dims(name: str, rows: int, cols: int) -> None:
    if rows < 0 or cols < 0:
        raise DaphneRuntimeError(f"{name}: the number of rows and columns must not be negative, got {rows}x{cols}")


def fill(value, rows: int, cols: int, vt: str) -> np.ndarray:
    """`fill(value, rows, cols)`: a rows x cols matrix of `value` (cast to `vt`)."""
    rows, cols = int(rows), int(cols)
    _check_dims("fill", rows, cols)
    check_alloc("fill", rows, cols, vt)
    v = cast_scalar(value, vt)
    if vt == "str":
        return object_matrix([v] * (rows * cols), rows, cols)
    if v == 0 and not math.copysign(1.0, v) < 0:
        # fresh zero pages from the allocator: nothing is written now, and a cell the program never reads is
        # never touched (RDP's 50,000-row stack); -0.0 keeps its sign bit, so it is filled
        return np.zeros((rows, cols), dtype=dtype_of(vt))
    return np.full((rows, cols), v, dtype=dtype_of(vt))


def matrix_from_values(values: list, rows: int, cols: int, vt: str) -> np.ndarray:
    """A matrix literal `[v0, v1, ...](rows, cols)`: row-major values, each cast to `vt`."""
    rows, cols = int(rows), int(cols)
    _check_dims("matrix literal", rows, cols)
    if len(values) != rows * cols:
        raise DaphneRuntimeError(
            f"matrix literal: {len(values)} values do not fit a {rows}x{cols} matrix ({rows * cols} cells)"
        )
    cast = [cast_scalar(v, vt) for v in values]
    if vt == "str":
        return object_matrix(cast, rows, cols)
    return np.array(cast, dtype=dtype_of(vt)).reshape(rows, cols)


def matrix_literal(*args: object, vt: str) -> np.ndarray:
    """`[v0, v1, ...]` as the IR passes it: the values, then the rows and columns (`daphne.matrixLiteral`)."""
    *values, rows, cols = args
    return matrix_from_values(values, rows, cols, vt)  # type: ignore[arg-type]


def now() -> int:
    """`now()`: nanoseconds since the epoch (si64), like DAPHNE's Builtins.md."""
    return time.time_ns()


# ---------------------------------------------------------------------------------------------------------------------
# seq
# ---------------------------------------------------------------------------------------------------------------------


def seq(frm, to, inc, vt: str) -> np.ndarray:
    """`seq(from, to, inc)`: an inclusive arithmetic sequence as a column matrix (DAPHNE's Seq.h).

    Rows = ceil(|to - from| / |inc|) + 1 (integer division for integer types); values are accumulated (v += inc)
    in the value type; the last row is dropped if it overshoots `to` by more than 1e-13 (0 for integers). inc of
    the wrong sign gives a 0 x 1 matrix; inc = 0 or a NaN argument raises.
    """
    if vt in FLOAT_VTS:
        ftype = np.float32 if vt == "f32" else np.float64
        s, e, i = ftype(frm), ftype(to), ftype(inc)
        if np.isnan(s) or np.isnan(e) or np.isnan(i):
            raise DaphneRuntimeError("seq: from, to and inc must not be NaN")
    elif vt in INT_VTS:
        s, e, i = int(frm), int(to), int(inc)
    else:
        raise DaphneRuntimeError(f"seq: value type {vt} is not supported")
    if i == 0:
        raise DaphneRuntimeError("seq: inc must not be zero")
    dt = dtype_of(vt)
    if (s < e and i < 0) or (s > e and i > 0):
        return np.empty((0, 1), dtype=dt)
    if vt in FLOAT_VTS:
        with np.errstate(all="ignore"):
            steps = abs(e - s) / abs(i)
        if not np.isfinite(steps):
            raise DaphneRuntimeError(f"seq: too many elements for from={frm}, to={to}, inc={inc}")
        n = math.ceil(float(steps)) + 1
        _check_size(n, frm, to, inc, vt)
        incs = np.full(n, i, dtype=dt)
        incs[0] = s
        vals = np.cumsum(incs, dtype=dt)  # sequential accumulation, exactly like `acc += inc`
        eps = dt.type(1e-13)
        last = vals[-1]
        if (e < s and e - last > eps) or (e > s and last - e > eps):
            vals = vals[:-1]
    else:
        n = abs(e - s) // abs(i) + 1
        _check_size(n, frm, to, inc, vt)
        with np.errstate(all="ignore"):  # modular arithmetic == C++ accumulation with wrap-around
            vals = np.arange(n, dtype=np.int64).astype(dt) * dt.type(wrap_int(i, vt)) + dt.type(wrap_int(s, vt))
    return np.ascontiguousarray(vals.reshape(-1, 1))


def _check_size(n: int, frm, to, inc, vt: str) -> None:
    if n > (1 << 40):
        raise DaphneRuntimeError(f"seq: too many elements ({n}) for from={frm}, to={to}, inc={inc}")
    check_alloc("seq", n, 1, vt)


# ---------------------------------------------------------------------------------------------------------------------
# std::mt19937 and libstdc++ distributions
# ---------------------------------------------------------------------------------------------------------------------

_M32 = 0xFFFFFFFF
_M64 = 0xFFFFFFFFFFFFFFFF


class MT19937:
    """`std::mt19937(seed)`: raw 32-bit outputs, drawn in bulk from numpy's MT19937 (same recurrence)."""

    def __init__(self, seed: int) -> None:
        key = np.empty(624, dtype=np.uint32)
        x = seed & _M32  # the C++ constructor takes the seed modulo 2^32
        for i in range(624):
            key[i] = x
            x = (1812433253 * (x ^ (x >> 30)) + i + 1) & _M32
        self._bg = np.random.MT19937()
        self._bg.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": 624}}
        self._buf: list[int] = []
        self._pos = 0

    def raw(self, n: int) -> np.ndarray:
        """The next `n` outputs as a uint64 array (buffered single draws come first)."""
        avail = len(self._buf) - self._pos
        if avail == 0:
            return self._bg.random_raw(n)
        take = min(avail, n)
        head = np.array(self._buf[self._pos : self._pos + take], dtype=np.uint64)
        self._pos += take
        return np.concatenate([head, self._bg.random_raw(n - take)])

    def next(self) -> int:
        """One output (buffered, for the sequential code paths)."""
        if self._pos >= len(self._buf):
            self._buf, self._pos = self._bg.random_raw(1024).tolist(), 0
        v = self._buf[self._pos]
        self._pos += 1
        return v


def _lemire_one(gen: MT19937, urange: int) -> int:
    """libstdc++ uniform_int_distribution downscaling for urange < 2^32 - 1 (one value in [0, urange])."""
    uerange = urange + 1
    prod = gen.next() * uerange
    low = prod & _M32
    if low < uerange:
        threshold = (-uerange & _M32) % uerange
        while low < threshold:
            prod = gen.next() * uerange
            low = prod & _M32
    return prod >> 32


def _uniform_int_one(gen: MT19937, urange: int) -> int:
    """libstdc++ uniform_int_distribution::operator() for a 32-bit engine: a value in [0, urange]."""
    if urange < _M32:
        return _lemire_one(gen, urange)
    if urange == _M32:
        return gen.next()
    while True:  # upscaling: high part from a recursive call, low part from one more draw
        tmp = (_uniform_int_one(gen, urange >> 32) << 32) & _M64
        ret = (tmp + gen.next()) & _M64
        if not (ret > urange or ret < tmp):
            return ret


def _nonzero_ints(gen: MT19937, count: int, lo: int, hi: int, vt: str) -> np.ndarray:
    """`count` draws of uniform_int_distribution<vt>(lo, hi), each redrawn while it is 0. Exactly the raw outputs
    those draws take are consumed, so consecutive calls continue one stream (the kernels draw block by block)."""
    dt = dtype_of(vt)
    urange = hi - lo
    if urange > _M32:  # only si64/ui64 ranges wider than 32 bits: sequential
        out = []
        while len(out) < count:
            v = wrap_int(lo + _uniform_int_one(gen, urange), vt)
            if v != 0:
                out.append(v)
        return np.array(out, dtype=dt)
    parts, have = [], 0
    while have < count:
        r = gen.raw(count - have)  # one raw output per attempt: all accepted values are used
        if urange == _M32:
            off = r
        else:
            uerange = urange + 1
            prod = r * np.uint64(uerange)
            ok = (prod & np.uint64(_M32)) >= np.uint64((-uerange & _M32) % uerange)
            off = prod[ok] >> np.uint64(32)
        if dt.kind == "u":
            vals = (off + np.uint64(lo)).astype(dt)
        else:
            vals = (off.astype(np.int64) + np.int64(lo)).astype(dt)
        vals = vals[vals != 0]
        parts.append(vals)
        have += len(vals)
    if not parts:  # no draws asked (a block the selection left empty)
        return np.empty(0, dtype=dtype_of(vt))
    return np.concatenate(parts) if len(parts) != 1 else parts[0]


def _nonzero_reals(gen: MT19937, count: int, lo: float, hi: float, vt: str) -> np.ndarray:
    """`count` draws of uniform_real_distribution<vt>(lo, hi), each redrawn while it is 0 (exactly the raw outputs
    they take are consumed, as in `_nonzero_ints`)."""
    parts, have = [], 0
    while have < count:
        k = count - have
        if vt == "f64":
            r = gen.raw(2 * k).reshape(k, 2)
            u = r[:, 0].astype(np.float64)
            u += r[:, 1].astype(np.float64) * 4294967296.0
            u /= 18446744073709551616.0
            u[u >= 1.0] = np.nextafter(1.0, 0.0)
            u *= np.float64(hi) - np.float64(lo)
            u += np.float64(lo)
        else:
            f = np.float32
            u = gen.raw(k).astype(f) / f(4294967296.0)
            u[u >= f(1.0)] = np.nextafter(f(1.0), f(0.0))
            u = u * (f(hi) - f(lo)) + f(lo)
        vals = u[u != 0]
        parts.append(vals)
        have += len(vals)
    if not parts:  # no draws asked (a block the selection left empty)
        return np.empty(0, dtype=dtype_of(vt))
    return np.concatenate(parts) if len(parts) != 1 else parts[0]


def _index_draws(gen: MT19937, count: int, n_cells: int) -> np.ndarray:
    """At least `count` consecutive draws of uniform_int_distribution<int>(0, n_cells - 1) (uint64).

    Every raw output taken from `gen` is accounted for (accepted draws are all returned, in order), so repeated
    calls continue the same stream.
    """
    if n_cells > (1 << 31) - 1:
        raise DaphneRuntimeError(f"RandMatrix - too many cells ({n_cells}) for an int index distribution")
    parts, have = [], 0
    uerange = np.uint64(n_cells)
    thr = np.uint64((-n_cells & _M32) % n_cells)
    while have < count:
        need = count - have
        prod = gen.raw(need + need // 8 + 64) * uerange
        ok = (prod & np.uint64(_M32)) >= thr
        parts.append(prod[ok] >> np.uint64(32))
        have += len(parts[-1])
    if not parts:  # no draws asked
        return np.empty(0, dtype=np.uint64)
    return np.concatenate(parts) if len(parts) != 1 else parts[0]


def _c_round(x: float) -> int:
    """C `round` (half away from zero) for non-negative x, as an integer."""
    f = math.floor(x)
    return f + 1 if x - f >= 0.5 else f


def check_rand_args(rows: int, cols: int, lo, hi, sparsity: float, vt: str) -> None:
    """RandMatrix.h's argument validation, shared by the dense and the CSR kernel (the same messages)."""
    if vt not in FLOAT_VTS and vt not in INT_VTS:
        raise DaphneRuntimeError(f"RandMatrix - value type {vt} is not supported (must be integral or floating point)")
    if not rows > 0:
        raise DaphneRuntimeError("RandMatrix - numRows must be > 0")
    if not cols > 0:
        raise DaphneRuntimeError("RandMatrix - numCols must be > 0")
    if lo > hi:
        raise DaphneRuntimeError("RandMatrix - min must be <= max")
    if not lo and not hi:
        raise DaphneRuntimeError(
            "RandMatrix - min and max must not both be zero, consider setting sparsity to zero instead"
        )
    if not 0.0 <= sparsity <= 1.0:
        raise DaphneRuntimeError("sparsity has to be in the interval [0.0, 1.0]")


BLOCK = 1 << 18
"""Values (and selection draws) generated per round: the working memory of `rand` beyond its result is a few
times this many elements, whatever the result's size."""


def rand(rows: int, cols: int, min_, max_, sparsity: float, seed: int, vt: str) -> np.ndarray:
    """`rand(rows, cols, min, max, sparsity, seed)`: DAPHNE's dense RandMatrix (see module docstring).

    `sparsity` is the fraction of non-zeros; floats are uniform in [min, max), integers in [min, max]. The result
    is allocated once and filled block by block, so the peak memory is the result plus O(BLOCK).
    """
    rows, cols, seed, sparsity = int(rows), int(cols), int(seed), float(sparsity)
    lo, hi = cast_scalar(min_, vt), cast_scalar(max_, vt)
    check_rand_args(rows, cols, lo, hi, sparsity, vt)
    if seed == -1:
        seed = _random_seed()
    gen_val = MT19937(seed)
    n = rows * cols
    dense = sparsity >= 0.5
    limit = _c_round((1.0 - sparsity) * cols * rows) if dense else _c_round(sparsity * cols * rows)

    def draw(count: int) -> np.ndarray:
        if vt in FLOAT_VTS:
            return _nonzero_reals(gen_val, count, lo, hi, vt)
        return _nonzero_ints(gen_val, count, lo, hi, vt)

    check_alloc("rand", rows, cols, vt)
    if dense:
        values = np.empty(n, dtype=dtype_of(vt))
        for start in range(0, n, BLOCK):
            values[start : start + BLOCK] = draw(min(BLOCK, n - start))
    else:
        values = np.zeros(n, dtype=dtype_of(vt))
    if limit:
        for selected in _knuth_select(MT19937(seed * 3), n, limit):
            values[selected] = 0 if dense else draw(len(selected))
    return values.reshape(rows, cols)


def _knuth_select(gen: MT19937, n: int, limit: int) -> Iterator[np.ndarray]:
    """Knuth's selection sampling as in RandMatrix.h: position i is chosen iff draw % (n - i) < (limit - chosen).
    Yields the chosen positions in increasing order, block by block (a compiled loop: `datagen_select`)."""
    from daphnec.runtime.kernels.datagen_select import select

    i = chosen = 0
    while chosen < limit:
        draws = _index_draws(gen, min(n - i, BLOCK), n)
        positions = np.empty(len(draws), dtype=np.int64)
        i, chosen, k = select(draws, i, n, chosen, limit, positions)
        yield positions[:k]


# ---------------------------------------------------------------------------------------------------------------------
# sample, diagMatrix
# ---------------------------------------------------------------------------------------------------------------------


def _canonical(gen: MT19937, vt: str) -> float:
    """libstdc++ `generate_canonical<vt>` on a 32-bit engine (two draws for double, one for float)."""
    if vt == "f64":
        r0, r1 = gen.next(), gen.next()
        u = (r0 + r1 * 4294967296.0) / 18446744073709551616.0
        return u if u < 1.0 else math.nextafter(1.0, 0.0)
    f = np.float32
    u = f(gen.next()) / f(4294967296.0)
    return float(u if u < f(1.0) else np.nextafter(f(1.0), f(0.0)))


def _uniform_real(gen: MT19937, hi: float, vt: str) -> float:
    """`uniform_real_distribution<vt>(0, hi)(gen)`."""
    if vt == "f64":
        return _canonical(gen, vt) * hi
    f = np.float32
    return float(f(_canonical(gen, vt)) * f(hi))


def _shuffle(values: list[int], gen: MT19937) -> None:
    """libstdc++ `std::shuffle` with a 32-bit engine: swap positions are drawn two at a time from one
    `uniform_int_distribution` call while (2^32 - 1) / n >= n, otherwise one at a time."""
    n = len(values)
    if n == 0:
        return
    if _M32 // n >= n:
        i = 1
        if n % 2 == 0:
            j = _uniform_int_one(gen, 1)
            values[i], values[j] = values[j], values[i]
            i += 1
        while i != n:
            b0 = i + 1
            x = _uniform_int_one(gen, b0 * (b0 + 1) - 1)
            p0, p1 = divmod(x, b0 + 1)
            values[i], values[p0] = values[p0], values[i]
            values[i + 1], values[p1] = values[p1], values[i + 1]
            i += 2
        return
    for i in range(1, n):
        j = _uniform_int_one(gen, i)
        values[i], values[j] = values[j], values[i]


def sample(range_, size: int, with_replacement: bool, seed: int, vt: str) -> np.ndarray:
    """`sample(range, size, withReplacement, seed)`: DAPHNE's Sample.h with `std::mt19937(seed)`; `vt` is the
    value type of `range` and of the result.

    Values are drawn from [0, range): integers from `uniform_int_distribution(0, range - 1)`, floats from
    `uniform_real_distribution(0, nextafter(range, 0))`. Without replacement, integers use selection sampling
    (`fmod(draw, range - i) < size - chosen`) followed by `std::shuffle`; floats are redrawn until unseen.
    """
    size, seed = int(size), int(seed)
    if size <= 0:
        raise DaphneRuntimeError(f"sample: size must be > 0, got {size}")
    if not range_ > 0:
        raise DaphneRuntimeError(f"sample: range must be > 0, got {range_}")
    is_float = vt in FLOAT_VTS
    if not with_replacement and not is_float and range_ < size:
        raise DaphneRuntimeError(f"sample: without replacement, range ({range_}) must be >= size ({size})")
    check_alloc("sample", size, 1, vt)
    if seed == -1:
        seed = _random_seed()
    gen = MT19937(seed)
    if is_float:
        return _sample_reals(gen, float(range_), size, bool(with_replacement), vt)
    return _sample_ints(gen, int(range_), size, bool(with_replacement)).astype(dtype_of(vt)).reshape(size, 1)


def _sample_ints(gen: MT19937, range_: int, size: int, with_replacement: bool) -> np.ndarray:
    hi = int(math.nextafter(float(range_), 0.0))  # the distribution's upper bound: range - 1
    if with_replacement:
        return np.array([_uniform_int_one(gen, hi) for _ in range(size)], dtype=np.int64)
    out: list[int] = []
    for i in range(range_):
        if len(out) >= size:
            break
        if math.fmod(float(_uniform_int_one(gen, hi)), float(range_ - i)) < size - len(out):
            out.append(i)
    _shuffle(out, gen)
    return np.array(out, dtype=np.int64)


def _sample_reals(gen: MT19937, range_: float, size: int, with_replacement: bool, vt: str) -> np.ndarray:
    hi = math.nextafter(range_, 0.0)  # `std::nextafter(range, 0)` promotes to double, also for float ranges
    if vt == "f32":
        hi = float(np.float32(hi))
    values: list[float] = []
    seen: set[float] = set()
    while len(values) < size:
        v = _uniform_real(gen, hi, vt)
        if not with_replacement:
            if v in seen:
                continue
            seen.add(v)
        values.append(v)
    return np.array(values, dtype=dtype_of(vt)).reshape(size, 1)


def diag_column(arg) -> np.ndarray:
    """`diagMatrix`'s argument as a dense n x 1 column (DiagMatrix.h's check)."""
    from daphnec.runtime.values import as_dense

    arg = as_dense(arg)
    r, c = arg.shape
    if c != 1:
        raise DaphneRuntimeError(f"diagMatrix: the argument must be a column matrix (n x 1), but it is {r}x{c}")
    return arg


def diag_matrix(arg) -> np.ndarray:
    """`diagMatrix(arg)`: the n x 1 column `arg` on the diagonal of an n x n zero matrix (DiagMatrix.h)."""
    from daphnec.runtime.values import vt_of

    arg = diag_column(arg)
    r = arg.shape[0]
    check_alloc("diagMatrix", r, r, vt_of(arg))
    if arg.dtype == object:
        res = object_matrix([""] * (r * r), r, r)
    else:
        res = np.zeros((r, r), dtype=arg.dtype)
    res[np.arange(r), np.arange(r)] = arg[:, 0]
    return res


def _random_seed() -> int:
    """A fresh seed for `seed = -1` (imported here: `secrets` pulls in OpenSSL's hashes, which a run without
    random data does not need at start-up)."""
    import secrets

    return secrets.randbits(63)
