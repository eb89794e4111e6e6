"""Native loops of the DNN kernels (runtime/kernels/dnn.py): im2col/col2im around BLAS, and pooling with DAPHNE's
forward quirks and their exact gradients. Every loop works on a range of images [n0, n1), so the task scheduler runs
them in parallel over images (`dnn.py: over_images`); a task writes only its own images (or its own columns of the
im2col matrix), so results do not depend on how the images are split.

The loops are built with llvmlite's IR builder into the runtime's one llvmlite engine (`runtime.native_code`,
like `native_folds` and `datagen_select`), once per process, their object code cached on disk; llvmlite is imported
only when a DNN kernel first runs. No fast-math flags: every float operation is the IEEE operation numpy performs,
in the order the Python reference (`dnn.py`'s forward quirks) documents, so the results are bit-identical to it.

Functions (T = float or double; all sizes i64; pointers to C-contiguous arrays):
- `im2col_T(x, col, ldcol, n0, n1, C, H, W, fh, fw, sh, sw, ph, pw, P, Q)`: for image n in [n0, n1), channel c,
  filter cell (i, j) and output cell (p, q): `col[((c*fh + i)*fw + j) * ldcol + (n-n0)*P*Q + p*Q + q] =
  x[n, c, p*sh+i-ph, q*sw+j-pw]` (0 outside the image): `col` points at the columns of image n0;
- `col2im_T(dcol, dx, ldcol, ...)`: the adjoint, `dx[n, c, h, w] += dcol[...]` for every cell im2col read from
  (h, w), in (c, i, j, p, q) order; dx must be zero before;
- `{max,avg}pool_{fwd,bwd}_T(x, total, out_or_dout, dx, n0, n1, C, H, W, ph, pw, P, Q, kh, kw, sh, sw, plen)`:
  returns 0, or 1 if a window reads past the end of its buffer (the Python caller raises DaphneRuntimeError).
"""

from __future__ import annotations

import ctypes

import numpy as np

from daphnec.runtime.native_code import BuiltOnce, ir_functions

_TYPES = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}
_I64 = ctypes.c_int64
_P = ctypes.c_void_p
_CONV_SIG = ctypes.CFUNCTYPE(None, _P, _P, *([_I64] * 14))
_POOL_SIGS = {
    "float": ctypes.CFUNCTYPE(ctypes.c_int32, _P, _I64, _P, _P, *([_I64] * 13), ctypes.c_float),
    "double": ctypes.CFUNCTYPE(ctypes.c_int32, _P, _I64, _P, _P, *([_I64] * 13), ctypes.c_double),
}


class _Fn:
    """A function under construction: loop and branch helpers over llvmlite's IRBuilder (loop counters live in
    allocas, which LLVM's mem2reg turns into phis at O3)."""

    def __init__(self, module, name: str, ret, params: list, names: list[str]) -> None:
        from llvmlite import ir

        self.ir = ir
        self.i64 = ir.IntType(64)
        fn = ir.Function(module, ir.FunctionType(ret, params), name)
        for a, n in zip(fn.args, names):
            a.name = n
        self.args = {n: a for n, a in zip(names, fn.args)}
        self.fn = fn
        self.types: dict = {}
        self._allocas = ir.IRBuilder(fn.append_basic_block("vars"))
        self._start = fn.append_basic_block("start")
        self.b = ir.IRBuilder(self._start)

    def finish(self) -> None:
        """Close the block of allocas (made as the body needed them) with a branch to the body."""
        self._allocas.branch(self._start)

    def c(self, v: int):
        return self.ir.Constant(self.i64, v)

    def var(self, init):
        slot = self._allocas.alloca(init.type)
        self.types[slot] = init.type
        self.b.store(init, slot)
        return slot

    def ld(self, ptr, ty=None):
        """Load from an alloca made by `var`, or from an element pointer of type `ty`."""
        return self.b.load(ptr, typ=ty or self.types[ptr])

    def loop(self, lo, hi, body) -> None:
        """for (i = lo; i < hi; i++) body(i)"""
        b = self.b
        i = self.var(lo)
        head, blk, done = (self.fn.append_basic_block(s) for s in ("head", "body", "done"))
        b.branch(head)
        b.position_at_end(head)
        iv = self.ld(i)
        b.cbranch(b.icmp_signed("<", iv, hi), blk, done)
        b.position_at_end(blk)
        body(iv)
        b.store(b.add(self.ld(i), self.c(1)), i)
        b.branch(head)
        b.position_at_end(done)

    def when(self, cond, body) -> None:
        with self.b.if_then(cond):
            body()

    def at(self, ptr, idx, ty):
        return self.b.gep(ptr, [idx], inbounds=True, source_etype=ty)

    def clamp(self, v, lo, hi):
        b = self.b
        v = b.select(b.icmp_signed("<", v, lo), lo, v)
        return b.select(b.icmp_signed(">", v, hi), hi, v)

    def ceil_div_nonneg(self, a, d):
        """ceil(a / d) for d > 0, 0 when a <= 0."""
        b = self.b
        pos = b.icmp_signed(">", a, self.c(0))
        q = b.sdiv(b.sub(b.add(a, d), self.c(1)), d)
        return b.select(pos, q, self.c(0))

    def valid_range(self, off, step, extent, count):
        """[lo, hi) of k in [0, count) with 0 <= k*step + off < extent (step > 0)."""
        b = self.b
        lo = self.clamp(self.ceil_div_nonneg(b.neg(off), step), self.c(0), count)
        top = b.sub(b.sub(extent, self.c(1)), off)  # k*step <= extent - 1 - off
        hi = b.select(b.icmp_signed("<", top, self.c(0)), self.c(0), b.add(b.sdiv(top, step), self.c(1)))
        hi = self.clamp(hi, lo, count)
        return lo, hi


_CONV_ARGS = ["ldcol", "n0", "n1", "C", "H", "W", "fh", "fw", "sh", "sw", "ph", "pw", "P", "Q"]
_POOL_ARGS = ["n0", "n1", "C", "H", "W", "ph", "pw", "P", "Q", "kh", "kw", "sh", "sw"]


def _conv_loop(module, t: str, adjoint: bool) -> None:
    """im2col (`adjoint` False: x -> col) or col2im (True: dcol -> dx, accumulating)."""
    from llvmlite import ir

    ft = ir.FloatType() if t == "float" else ir.DoubleType()
    ptr = ir.PointerType()
    name = f"{'col2im' if adjoint else 'im2col'}_{t}"
    f = _Fn(module, name, ir.VoidType(), [ptr, ptr, *([ir.IntType(64)] * 14)], ["src", "dst", *_CONV_ARGS])
    a, b = f.args, f.b
    img, col = (a["dst"], a["src"]) if adjoint else (a["src"], a["dst"])
    hw = b.mul(a["H"], a["W"])
    chw = b.mul(a["C"], hw)
    pq = b.mul(a["P"], a["Q"])
    zero = ir.Constant(ft, 0.0)

    # Filter cell (c, i, j) outermost, images inside: each task writes (or reads) one contiguous run of every row
    # of the im2col matrix, and col2im keeps the task's planes of channel c in cache while it adds into them.
    def channel(c):
        def frow(i):
            plo, phi = f.valid_range(b.sub(i, a["ph"]), a["sh"], a["H"], a["P"])

            def fcol(j):
                r = b.add(b.mul(b.add(b.mul(c, a["fh"]), i), a["fw"]), j)
                woff = b.sub(j, a["pw"])
                qlo, qhi = f.valid_range(woff, a["sw"], a["W"], a["Q"])

                def image(n):
                    base = b.add(b.mul(r, a["ldcol"]), b.mul(b.sub(n, a["n0"]), pq))
                    plane = b.add(b.mul(n, chw), b.mul(c, hw))

                    def out_row(p):
                        cbase = b.add(base, b.mul(p, a["Q"]))
                        h = b.add(b.mul(p, a["sh"]), b.sub(i, a["ph"]))
                        ibase = b.add(plane, b.add(b.mul(h, a["W"]), woff))

                        def cell(q):
                            ci = f.at(col, b.add(cbase, q), ft)
                            xi = f.at(img, b.add(ibase, b.mul(q, a["sw"])), ft)
                            if adjoint:
                                b.store(b.fadd(f.ld(xi, ft), f.ld(ci, ft)), xi)
                            else:
                                b.store(f.ld(xi, ft), ci)

                        if not adjoint:
                            f.loop(f.c(0), qlo, lambda q: b.store(zero, f.at(col, b.add(cbase, q), ft)))
                        f.loop(qlo, qhi, cell)
                        if not adjoint:
                            f.loop(qhi, a["Q"], lambda q: b.store(zero, f.at(col, b.add(cbase, q), ft)))

                    def zero_row(p):
                        cbase = b.add(base, b.mul(p, a["Q"]))
                        f.loop(f.c(0), a["Q"], lambda q: b.store(zero, f.at(col, b.add(cbase, q), ft)))

                    if not adjoint:
                        f.loop(f.c(0), plo, zero_row)
                    f.loop(plo, phi, out_row)
                    if not adjoint:
                        f.loop(phi, a["P"], zero_row)

                f.loop(a["n0"], a["n1"], image)

            f.loop(f.c(0), a["fw"], fcol)

        f.loop(f.c(0), a["fh"], frow)

    f.loop(f.c(0), a["C"], channel)
    b.ret_void()
    f.finish()


def _pool_loop(module, t: str, kind: str, backward: bool, padded: bool) -> None:
    """One window loop, DAPHNE's forward addressing (dnn.py `_pool_windows`). Without padding, windows index the
    whole input as one flat buffer (a window starting past the image width spills into the next rows, as in
    DAPHNE); with padding, one zero-padded image plane (never materialised: a cell of the padding reads 0)."""
    from llvmlite import ir

    ft = ir.FloatType() if t == "float" else ir.DoubleType()
    i64, i32 = ir.IntType(64), ir.IntType(32)
    ptr = ir.PointerType()
    name = f"{kind}pool_{'bwd' if backward else 'fwd'}{'_pad' if padded else ''}_{t}"
    f = _Fn(module, name, i32, [ptr, i64, ptr, ptr, *([i64] * 13), ft], ["x", "total", "o", "dx", *_POOL_ARGS, "plen"])
    a, b = f.args, f.b
    zero = ir.Constant(ft, 0.0)
    status = f.var(ir.Constant(i32, 0))
    hw = b.mul(a["H"], a["W"])
    chw = b.mul(a["C"], hw)
    pq = b.mul(a["P"], a["Q"])
    rows = b.add(a["H"], b.mul(a["ph"], f.c(2))) if padded else a["H"]
    width = b.add(a["W"], b.mul(a["pw"], f.c(2))) if padded else a["W"]
    limit = b.mul(rows, width) if padded else a["total"]
    acc = f.var(zero)
    pos = f.var(f.c(-1))
    rsum = f.var(zero)
    grad = f.var(zero)

    def visit(xpos, v) -> None:
        """One window cell of value v at input position xpos (-1: padding)."""
        if kind == "max":
            with b.if_then(b.fcmp_ordered("<", f.ld(acc), v)):
                b.store(v, acc)
                b.store(xpos, pos)
        elif backward:
            f.when(b.icmp_signed(">=", xpos, f.c(0)), lambda: _accumulate(f, a["dx"], xpos, f.ld(grad), ft))
        else:
            b.store(b.fadd(f.ld(rsum), v), rsum)

    def window_cell(base, row, col0, j) -> None:
        col = b.add(col0, j)
        lin = b.add(b.mul(row, width), col)
        ok = b.icmp_signed("<", lin if padded else b.add(base, lin), limit)
        with b.if_else(ok) as (then, otherwise):
            with then:
                if not padded:
                    xpos = b.add(base, lin)
                    visit(xpos, f.ld(f.at(a["x"], xpos, ft), ft))
                else:
                    r, cc = f.var(row), f.var(col)
                    with b.if_then(b.icmp_signed(">=", col, width)):  # spilled into the rows below
                        b.store(b.add(row, b.sdiv(col, width)), r)
                        b.store(b.srem(col, width), cc)
                    rr, cx = b.sub(f.ld(r), a["ph"]), b.sub(f.ld(cc), a["pw"])
                    inside = b.and_(
                        b.and_(b.icmp_signed(">=", rr, f.c(0)), b.icmp_signed("<", rr, a["H"])),
                        b.and_(b.icmp_signed(">=", cx, f.c(0)), b.icmp_signed("<", cx, a["W"])),
                    )
                    xpos = b.select(inside, b.add(base, b.add(b.mul(rr, a["W"]), cx)), f.c(-1))
                    v = b.select(inside, f.ld(f.at(a["x"], b.select(inside, xpos, f.c(0)), ft), ft), zero)
                    visit(xpos, v)
            with otherwise:
                b.store(ir.Constant(i32, 1), status)

    def plane_windows(n, c) -> None:
        base = b.add(b.mul(n, chw), b.mul(c, hw))
        obase = b.add(b.mul(n, b.mul(a["C"], pq)), b.mul(c, pq))

        def out_cell(p, q) -> None:
            oi = b.add(obase, b.add(b.mul(p, a["Q"]), q))
            b.store(zero, acc)
            b.store(f.c(-1), pos)
            if backward and kind == "avg":
                b.store(b.fmul(f.ld(f.at(a["o"], oi, ft), ft), a["plen"]), grad)
            col0 = b.mul(q, a["sw"])
            # unsigned arithmetic in DAPHNE: a window starting past the width keeps its full length
            seg = b.select(b.icmp_signed(">", col0, width), a["kw"], f.clamp(b.sub(width, col0), f.c(0), a["kw"]))

            def win_row(k) -> None:
                row = b.add(b.mul(p, a["sh"]), k)
                with b.if_then(b.icmp_signed("<", row, rows)):
                    b.store(zero, rsum)
                    f.loop(f.c(0), seg, lambda j: window_cell(base, row, col0, j))
                    if kind == "avg" and not backward:
                        b.store(b.fadd(b.fmul(f.ld(rsum), a["plen"]), f.ld(acc)), acc)

            f.loop(f.c(0), a["kh"], win_row)
            if not backward:
                b.store(f.ld(acc), f.at(a["o"], oi, ft))
            elif kind == "max":
                p_ = f.ld(pos)
                f.when(
                    b.icmp_signed(">=", p_, f.c(0)),
                    lambda: _accumulate(f, a["dx"], p_, f.ld(f.at(a["o"], oi, ft), ft), ft),
                )

        f.loop(f.c(0), a["P"], lambda p: f.loop(f.c(0), a["Q"], lambda q: out_cell(p, q)))

    f.loop(a["n0"], a["n1"], lambda n: f.loop(f.c(0), a["C"], lambda c: plane_windows(n, c)))
    b.ret(f.ld(status))
    f.finish()


def _accumulate(f: _Fn, dx, idx, g, ft) -> None:
    slot = f.at(dx, idx, ft)
    f.b.store(f.b.fadd(f.ld(slot, ft), g), slot)


def _module_text() -> str:
    from llvmlite import ir

    module = ir.Module(name="daphnec.dnn_loops")
    for t in ("float", "double"):
        _conv_loop(module, t, adjoint=False)
        _conv_loop(module, t, adjoint=True)
        for kind in ("max", "avg"):
            for backward in (False, True):
                for padded in (False, True):
                    _pool_loop(module, t, kind, backward, padded)
    return str(module)


def _names() -> list[str]:
    out = []
    for t in ("float", "double"):
        out += [f"im2col_{t}", f"col2im_{t}"]
        out += [f"{k}pool_{d}{p}_{t}" for k in ("max", "avg") for d in ("fwd", "bwd") for p in ("", "_pad")]
    return out


def _build() -> dict[str, object]:
    """Every loop of `_names()` compiled into the runtime's engine, as ctypes functions by symbol."""
    table: dict[str, object] = {}
    for sym, addr in ir_functions(_module_text(), _names()).items():
        t = sym.rsplit("_", 1)[1]
        sig = _CONV_SIG if sym.startswith(("im2col", "col2im")) else _POOL_SIGS[t]
        table[sym] = sig(addr)
    return table


_FUNCTIONS = BuiltOnce(_build)


def function(name: str, dt: np.dtype):
    """The native loop `name` (`im2col`, `col2im`, `maxpool_fwd`, ...) for float dtype `dt`, as a ctypes function
    (ctypes releases the GIL during the call, so scheduler workers run loops on all cores)."""
    return _FUNCTIONS.get()[f"{name}_{_TYPES[np.dtype(dt)]}"]
