"""Property tests: native task kernels compute exactly what the plain (non-fused) path computes.

Random pipelines (element-wise binary/unary chains over dense matrices of every numeric value type, scalar,
row-vector and column-vector operands, ending in rows results, full/row/column aggregations and transposes)
and random CSR pipelines (`agg(G * t(c))` and friends) run three ways (see `pipeline_harness`):

- one batch, native vs the non-fused reference: bit-identical (signed zeros included), except f64 full sums,
  which the kernel reassociates to vectorise them: within 1e-12 of sum(|x|). NaNs compare equal whatever their
  sign: where two NaNs of different signs meet, LLVM may commute the operands (test_nan_signs.py checks the sign
  of every NaN an operation creates, which is exact);
- many small batches, native vs the executor with the Python body: the same, batch by batch;
- when the reference raises (integer division by zero, sqrt of a negative, ...), the native run raises the same
  message (the kernel reports the error and the Python body reruns the batch).

Data mixes ordinary values with the awkward ones: NaN of both signs, +-inf, +-0, halves, values just beyond the
integer ranges, type minima and maxima. `DAPHNEC_HYPOTHESIS_EXAMPLES` scales the number of examples.
"""

from __future__ import annotations

import os
import struct

import numpy as np
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from pipeline_harness import (  # noqa: F401 - no_disk_cache is an autouse fixture
    C_ADD,
    C_COLS,
    C_MAX,
    C_MIN,
    C_ROWS,
    NONE,
    NP,
    ROWS,
    Body,
    Calls,
    build,
    close_sum,
    interpret,
    mat,
    no_disk_cache,
    reference,
    run_native,
    run_python,
    same_bits,
)
from scipy import sparse

from daphnec.compiler.lowering import ew_kinds
from daphnec.compiler.lowering.kernel_plan import OPAQUE_UNARY_KINDS
from daphnec.dialects.errors import CompileError
from daphnec.dialects.op_kinds import EW_UNARY
from daphnec.runtime.errors import DaphneRuntimeError
from daphnec.runtime.values import as_dense

VTS = ("f64", "f32", "si64", "si32", "si8", "ui64", "ui32", "ui8", "bool")
BINARY = (*ew_kinds.BINARY, "log")  # log: opaque
UNARY = tuple(k for k in EW_UNARY if k in ew_kinds.UNARY or k in OPAQUE_UNARY_KINDS)
AGG_COMBINE = {"sum": C_ADD, "min": C_MIN, "max": C_MAX}
EXAMPLES = int(os.environ.get("DAPHNEC_HYPOTHESIS_EXAMPLES", "60"))
NEG_NAN = struct.unpack("<d", struct.pack("<Q", 0xFFF8000000000000))[0]

_FLOAT_SPECIALS = [
    0.0,
    -0.0,
    float("nan"),
    NEG_NAN,
    float("inf"),
    float("-inf"),
    0.5,
    -0.5,
    1.5,
    -2.5,
    2.0,
    -1.0,
    5e-324,
    9.3e18,
    -9.3e18,
    1.9e19,
    3e9,
    -3e9,
    300.0,
    -129.0,
    255.5,
]


def data(vt: str, shape: tuple[int, int], seed: int, specials: float = 0.3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n = shape[0] * shape[1]
    dt = np.dtype(NP[vt])
    if vt == "bool":
        return rng.random(n).reshape(shape) < 0.5
    if dt.kind == "f":
        vals = rng.normal(0.0, 10.0, n) * np.where(rng.random(n) < 0.1, 1e90, 1.0)
        spec = np.array(_FLOAT_SPECIALS)[rng.integers(0, len(_FLOAT_SPECIALS), n)]
        with np.errstate(all="ignore"):
            return np.where(rng.random(n) < specials, spec, vals).astype(dt).reshape(shape)
    info = np.iinfo(dt)
    small = rng.integers(-5, 6, n)
    big = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
    spec = np.array([0, 1, info.max, info.min, 2], dtype=object)[rng.integers(0, 5, n)]
    pick = rng.random(n)
    out = np.where(pick < 0.5, small.astype(object), np.where(pick < 0.8, big.astype(object), spec))
    return (
        np.array([int(v) % (1 << dt.itemsize * 8) if dt.kind == "u" else int(v) for v in out], dtype=object)
        .astype(dt)
        .reshape(shape)
    )


# ---------------------------------------------------------------------------------------------------------------------
# Random dense pipelines
# ---------------------------------------------------------------------------------------------------------------------

# a value's form while generating: ("full", C), ("col", 1), ("row", C), ("scalar", 1)


@st.composite
def dense_programs(draw):
    rows = draw(st.integers(1, 24))
    cols = draw(st.integers(2, 5))
    inputs, forms = [], []
    for _ in range(draw(st.integers(1, 3))):
        vt = draw(st.sampled_from(VTS))
        shape = draw(st.sampled_from(("full", "full", "col", "row", "rownone")))
        if shape == "full":
            inputs.append((vt, (rows, cols), ROWS))
            forms.append(("full", cols))
        elif shape == "col":
            inputs.append((vt, (rows, 1), ROWS))
            forms.append(("col", 1))
        else:
            inputs.append((vt, (1, cols), ROWS if shape == "row" else NONE))
            forms.append(("row", cols))
    if not any(f[0] in ("full", "col") for f in forms):
        inputs[0] = (inputs[0][0], (rows, cols), ROWS)
        forms[0] = ("full", cols)
    steps = []
    for _ in range(draw(st.integers(1, 4))):
        choice = draw(st.integers(0, 9))
        i = draw(st.integers(0, len(forms) - 1))
        if choice < 3:
            steps.append(("un", draw(st.sampled_from(UNARY)), i))
            forms.append(forms[i])
            continue
        if choice == 9 and forms[i] == ("full", cols):
            steps.append(("mm", i))
            forms.append(("full", 2))
            continue
        kind = draw(st.sampled_from(BINARY))
        if choice < 6 or (kind == "pow" and draw(st.booleans())):
            cvt = draw(st.sampled_from(("f64", "si64", "f32", "ui8", "bool")))
            value = 2 if kind == "pow" and draw(st.booleans()) else draw(st.sampled_from((0, 1, 2, 3, -1, 0.5, -2.5)))
            value = bool(value) if cvt == "bool" else value
            scalar_left = kind != "pow" and draw(st.booleans())
            steps.append(("binc", kind, i, value, cvt, scalar_left))
            forms.append(forms[i])
            continue
        j = draw(st.integers(0, len(forms) - 1))
        res = _broadcast(forms[i], forms[j])
        if res is None:
            continue
        steps.append(("bin", kind, i, j))
        forms.append(res)
    sinks = []
    cands = [k for k, f in enumerate(forms) if f[0] in ("full", "col")]
    for _ in range(draw(st.integers(1, 3))):
        k = draw(st.sampled_from(cands))
        sink = draw(st.sampled_from(("rows", "all", "row", "col", "t", "extract")))
        agg = draw(st.sampled_from(("sum", "min", "max", "mean" if sink == "row" else "sum")))
        sinks.append((sink, agg, k, draw(st.integers(-1, 0))))
    if any(st_[0] == "mm" for st_ in steps):
        inputs.append((draw(st.sampled_from(("f64", "f32", "si64"))), (cols, 2), NONE))
    seed = draw(st.integers(0, 2**31))
    batch = draw(st.sampled_from((16, 64, 200)))
    return rows, cols, inputs, steps, sinks, seed, batch


def _broadcast(a: tuple[str, int], b: tuple[str, int]) -> tuple[str, int] | None:
    """DAPHNE's rules (only the rhs broadcasts): the result has the lhs's form, or None if invalid."""
    if a[0] in ("full", "col"):
        ok = (b[0] in ("full", "col") and b[1] in (a[1], 1)) or (b[0] == "row" and b[1] == a[1])
        return a if ok else None
    if a[0] == "row":
        return a if b[0] == "row" and b[1] == a[1] else None
    return None


def _body(program):
    rows, cols, inputs, steps, sinks, _, _ = program

    def fn(b: Body, args):
        vals = list(args)
        for s in steps:
            if s[0] == "un":
                vals.append(b.unary(s[1], vals[s[2]]))
            elif s[0] == "mm":
                vals.append(b.matmul(vals[s[1]], args[-1]))
            elif s[0] == "bin":
                vals.append(b.binary(s[1], vals[s[2]], vals[s[3]]))
            else:
                _, kind, i, value, cvt, left = s
                c = b.const(value, cvt if not (cvt in ("si64", "ui8") and isinstance(value, float)) else "f64")
                vals.append(b.binary(kind, c, vals[i]) if left else b.binary(kind, vals[i], c))
        out = []
        for sink, agg, k, j in sinks:
            v = vals[k]
            if sink == "rows":
                out.append((v, C_ROWS))
            elif sink == "all":
                out.append((b.agg(agg if agg != "mean" else "sum", "all", v), AGG_COMBINE.get(agg, C_ADD)))
            elif sink == "row":
                out.append((b.agg(agg, "row", v), C_ROWS))
            elif sink == "col":
                out.append((b.agg(agg if agg != "mean" else "sum", "col", v), AGG_COMBINE.get(agg, C_ADD)))
            elif sink == "t":
                out.append((b.transpose(v), C_COLS))
            else:
                out.append((b.extract_col(v, j), C_ROWS))
        return out

    types = [(mat(vt, *shape), split) for vt, shape, split in inputs]
    return types, fn


def _reads_columns(p) -> bool:
    """Whether the pipeline extracts columns (so a native kernel may compute only some columns of a value)."""
    return any(op.name == "daphne.extractCol" for op in p.op.body.block.ops)


def _compare(p, inputs, batch, sum_outputs):
    """Run all three ways and compare; returns the Calls of the single-batch native run."""
    try:
        ref = reference(p, inputs)
    except DaphneRuntimeError as e:
        try:
            run_native(p, inputs, 1 << 40)
        except DaphneRuntimeError as got:
            assert str(got) == str(e)
            return None
        # Known divergence: a native kernel computes only the columns a column extraction reads, so an integer
        # division by zero in a column nothing reads is not reported (the plain path computes the whole matrix).
        assert str(e) == "division by zero" and _reads_columns(p), f"the native kernel did not raise {e!r}"
        return None
    calls = Calls()
    nat = run_native(p, inputs, 1 << 40, calls)
    _check(ref, nat, sum_outputs, "single batch vs non-fused")
    try:
        py = run_python(p, inputs, batch, threads=2)
    except DaphneRuntimeError:
        return calls
    # A native kernel runs a whole task per call, a Python body one physical batch: float column sums then add
    # their per-call partials in another grouping (a reduction: within 1e-12, not bit for bit).
    try:
        f32 = F32_SUM_REL
        batched_sums = {
            **{i: (m, f32) for i, m in _reassociated_sums(p, inputs, vt="f32").items()},
            **{i: (m, f32) for i, m in _reassociated_sums(p, inputs, axis="col", vt="f32").items()},
            **_reassociated_sums(p, inputs, axis="col"),
            **sum_outputs,
        }
    except (DaphneRuntimeError, CompileError):
        batched_sums = sum_outputs
    _check(py, run_native(p, inputs, batch, threads=2), batched_sums, "batches on 2 threads vs Python body")
    return calls


F32_SUM_REL = 1e-5
"""f32 sums of several calls: each call's partial is rounded to f32 and the partials are added (then rounded once
more), so another grouping differs by a few f32 roundings of the magnitude, not 1e-12."""


def _check(expected, got, sum_outputs, what):
    for i, (a, b) in enumerate(zip(expected, got)):
        if i in sum_outputs:
            mag, rel = sum_outputs[i] if isinstance(sum_outputs[i], tuple) else (sum_outputs[i], 1e-12)
            assert close_sum(a, b, mag, rel), f"{what}: result {i}: {a!r} vs {b!r}"
        else:
            assert same_bits(a, b, any_nan=True), f"{what}: result {i}: {a!r} vs {b!r}"


def _reassociated_sums(p, inputs, axis: str = "all", vt: str = "f64") -> dict[int, float]:
    """Results that are f64 full sums (reassociated by the kernel), with the sum of |x| they add up; with
    `axis="col"` the column sums (any column's cells add up to at most that sum of |x|); `vt`: of that type."""
    from daphnec.dialects import ops

    ret = p.op.body.block.last_op
    out = {}
    for i, v in enumerate(ret.operands):
        op = v.owner
        rvt = str(v.type) if axis == "all" else str(v.type).rstrip(">").rsplit("x", 1)[-1]
        if isinstance(op, ops.AggOp) and op.AXIS == axis and op.KIND == "sum" and rvt == vt:
            env_val = _value_of(p, inputs, op.arg)
            with np.errstate(all="ignore"):
                out[i] = float(np.nansum(np.abs(np.asarray(as_dense(env_val), dtype=np.float64))))
    return out


def _value_of(p, inputs, v):
    from daphnec.dialects.ops_pipeline import PipelineReturnOp

    block = p.op.body.block
    ret = block.last_op
    assert isinstance(ret, PipelineReturnOp)
    saved = list(ret.operands)
    ret.operands = [v]
    try:
        return interpret(block, inputs)[0]
    finally:
        ret.operands = saved


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(dense_programs())
# regressions found by the search: a bool full sum over several batches (logical or), an si32 sum wrapping
@example(program=(4, 2, [("f64", (4, 2), 1), ("bool", (4, 2), 1)], [("un", "minus", 0)], [("all", "sum", 1, 0)], 0, 16))
@example(program=(5, 3, [("si32", (5, 3), 1)], [("un", "minus", 0)], [("all", "sum", 0, 0)], 0, 16))
# a sum of x - x over infinities (a reassociating native sum cancelled it to 0 instead of NaN)
@example(program=(2, 3, [("f64", (2, 3), 1)], [("bin", "sub", 0, 0)], [("all", "sum", 1, 0)], 1, 16))
# an integer division by zero in a column that no extraction reads (the native kernel computes the column read)
@example(program=(1, 2, [("bool", (1, 2), 1)], [("bin", "div", 0, 0)], [("extract", "sum", 1, 0)], 155, 16))
def test_dense_pipelines_match_the_plain_path(program):
    rows, cols, inputs_spec, steps, sinks, seed, batch = program
    types, fn = _body(program)
    try:
        p = build(types, fn)
    except Exception:  # noqa: BLE001 - an op the dialect rejects for these types
        assume(False)
        return
    from daphnec.compiler.lowering.kernel_plan import try_plan

    plan, why = try_plan(p.op)
    assume(plan is not None)
    inputs = [data(vt, shape, seed + i) for i, (vt, shape, _) in enumerate(inputs_spec)]
    try:
        sums = _reassociated_sums(p, inputs)
    except (DaphneRuntimeError, CompileError):
        sums = {}
    try:
        calls = _compare(p, inputs, batch, sums)
    except CompileError:
        assume(False)
        return
    if calls is not None and calls.fallbacks:  # only a scalar `^` with another exponent than 2 may hand back
        assert any(s[0] == "binc" and s[1] == "pow" and s[3] != 2 for s in steps)


# ---------------------------------------------------------------------------------------------------------------------
# Random CSR pipelines
# ---------------------------------------------------------------------------------------------------------------------


def csr(vt: str, shape: tuple[int, int], density: float, seed: int, idx64: bool) -> sparse.csr_array:
    rng = np.random.default_rng(seed)
    mask = rng.random(shape) < density
    values = data(vt, shape, seed + 7, specials=0.2)
    if values.dtype.kind != "b":
        values = np.where(values == 0, values.dtype.type(1), values)  # stored cells are non-zero to begin with
    m = sparse.csr_array(np.where(mask, values, values.dtype.type(0)))
    m.sum_duplicates()
    if idx64:
        m.indices = m.indices.astype(np.int64)
        m.indptr = m.indptr.astype(np.int64)
    return m


@st.composite
def csr_programs(draw):
    rows, cols = draw(st.integers(1, 20)), draw(st.integers(1, 8))
    vt = draw(st.sampled_from(("f64", "f64", "f32", "si64", "si32", "ui8")))
    factor = draw(st.sampled_from(("rowvec", "scalar", "none", "divscalar")))
    fvt = draw(st.sampled_from(("f64", "si64", "f32")))
    unary = draw(st.sampled_from((None, None, "minus", "abs", "sqrt", "round", "sign")))
    agg = draw(st.sampled_from(("sum", "min", "max", "mean")))
    axis = draw(st.sampled_from(("row", "row", "all")))
    typed_sparse = draw(st.booleans())
    with_max = draw(st.booleans())
    return (
        rows,
        cols,
        vt,
        factor,
        fvt,
        unary,
        agg if axis == "row" or agg != "mean" else "sum",
        axis,
        typed_sparse,
        with_max,
        draw(st.floats(0.0, 1.0)),
        draw(st.integers(0, 2**31)),
        draw(st.booleans()),
        draw(st.sampled_from((16, 64, 400))),
        draw(st.booleans()),
    )


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(csr_programs())
def test_csr_pipelines_match_the_plain_path(program):
    rows, cols, vt, factor, fvt, unary, agg, axis, typed_sparse, with_max, density, seed, idx64, batch, ones = program

    def fn(b: Body, a):
        g = a[0]
        if factor == "rowvec":
            g = b.binary("mul", g, a[1])
        elif factor == "scalar":
            g = b.binary("mul", g, b.const(-3 if fvt != "f32" else 0.5, fvt))
        elif factor == "divscalar":
            g = b.binary("div", g, b.const(4 if fvt != "f32" else 0.5, fvt))
        if typed_sparse and g is not a[0]:
            b.as_csr_typed(g)
        if unary:
            g = b.unary(unary, g)
            if typed_sparse:
                b.as_csr_typed(g)
        r = b.agg(agg, axis, g)
        out = [(r, C_ROWS if axis == "row" else AGG_COMBINE[agg])]
        if with_max and axis == "row":
            out.append((b.binary("max", r, a[2]), C_ROWS))
        return out

    types = [(mat(vt, rows, cols, sparse=True), ROWS), (mat(fvt, 1, cols), ROWS), (mat("f64", rows, 1), ROWS)]
    try:
        p = build(types, fn)
    except Exception:  # noqa: BLE001
        assume(False)
        return
    from daphnec.compiler.lowering.kernel_plan import try_plan

    plan, why = try_plan(p.op)
    if not typed_sparse and unary and factor != "none":  # a densified product read by another op: Python body
        assert plan is None
        return
    assert plan is not None, why
    G = csr(vt, (rows, cols), density, seed, idx64)
    if ones:  # a pattern matrix (a graph): float kernels read the constant 1.0 instead of the stored values
        G.data[:] = 1
    t = data(fvt, (1, cols), seed + 1, specials=0.15 if fvt != "f64" else 0.0)
    c = data("f64", (rows, 1), seed + 2)
    inputs = [G, t, c]
    try:
        sums = _reassociated_sums(p, inputs)
    except (DaphneRuntimeError, CompileError):
        sums = {}
    calls = _compare(p, inputs, batch, sums)
    if calls is not None and calls.fallbacks:  # non-finite broadcast factors give a dense product: Python body
        assert factor == "rowvec" and not np.isfinite(np.asarray(t, dtype=np.float64)).all()
