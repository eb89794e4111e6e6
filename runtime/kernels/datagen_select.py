"""The one sequential loop of DAPHNE's dense RandMatrix, compiled: Knuth's selection sampling (RandMatrix.h).

Position i is chosen iff `draw_i % (n - i) < limit - chosen`: each decision depends on the ones before it, so the
loop cannot be vectorised with numpy; in Python it took half a minute for 10^8 cells. It is a native loop in the
runtime's one llvmlite engine (`runtime.native_code`, like `native_folds`), built once per process in a few
milliseconds: no numba (whose import costs more than the build, and whose `cache=True` would write pickled code
beside the installed package instead of daphnec's private cache folder).
"""

from __future__ import annotations

import ctypes

import numpy as np

from daphnec.runtime.native_code import BuiltOnce, ir_functions

_IR = """
define void @knuth_select(ptr noalias %draws, i64 %count, i64 %n, i64 %limit, ptr noalias %state,
                          ptr noalias %positions) {
entry:
  %i0 = load i64, ptr %state
  %pc = getelementptr inbounds i64, ptr %state, i64 1
  %c0 = load i64, ptr %pc
  br label %loop
loop:
  %j = phi i64 [0, %entry], [%j1, %next]
  %i = phi i64 [%i0, %entry], [%i1, %next]
  %c = phi i64 [%c0, %entry], [%c2, %next]
  %k = phi i64 [0, %entry], [%k2, %next]
  %more = icmp slt i64 %j, %count
  %room = icmp slt i64 %c, %limit
  %go = and i1 %more, %room
  br i1 %go, label %body, label %done
body:
  %pd = getelementptr inbounds i64, ptr %draws, i64 %j
  %d = load i64, ptr %pd
  %left = sub i64 %n, %i
  %r = urem i64 %d, %left
  %want = sub i64 %limit, %c
  %take = icmp ult i64 %r, %want
  br i1 %take, label %choose, label %next
choose:
  %pp = getelementptr inbounds i64, ptr %positions, i64 %k
  store i64 %i, ptr %pp
  %k1 = add nuw nsw i64 %k, 1
  %c1 = add nuw nsw i64 %c, 1
  br label %next
next:
  %k2 = phi i64 [%k, %body], [%k1, %choose]
  %c2 = phi i64 [%c, %body], [%c1, %choose]
  %i1 = add nuw nsw i64 %i, 1
  %j1 = add nuw nsw i64 %j, 1
  br label %loop
done:
  store i64 %i, ptr %state
  store i64 %c, ptr %pc
  %pk = getelementptr inbounds i64, ptr %state, i64 2
  store i64 %k, ptr %pk
  ret void
}
"""

_SIG = ctypes.CFUNCTYPE(
    None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p
)


def _build() -> object:
    """The compiled loop, in the runtime's llvmlite engine."""
    return _SIG(ir_functions(_IR, ["knuth_select"])["knuth_select"])


_NATIVE = BuiltOnce(_build)


def select(draws: np.ndarray, i: int, n: int, chosen: int, limit: int, positions: np.ndarray) -> tuple[int, int, int]:
    """Consume `draws` (uint64, uniform in [0, n)) from position i on until they run out or `limit` positions are
    chosen; the chosen ones go to `positions` (int64, at least as long as `draws`). Returns the next position, the
    number chosen so far and how many were written. Knuth's method has chosen exactly `limit` by position n, so i
    never passes n."""
    draws = np.ascontiguousarray(draws, dtype=np.uint64)
    if positions.dtype != np.int64 or not positions.flags.c_contiguous or len(positions) < len(draws):
        raise ValueError("positions must be a contiguous int64 array at least as long as draws")
    state = np.array([i, chosen, 0], dtype=np.int64)
    _NATIVE.get()(draws.ctypes.data, len(draws), n, limit, state.ctypes.data, positions.ctypes.data)  # type: ignore[operator]
    return int(state[0]), int(state[1]), int(state[2])
