"""`--codegen` matrix products: the native loop nests of `lower-matmul-to-loops` against numpy's BLAS, one run.

For each size n (n x n @ n x n, f64 unless `--vt f32`) and each schedule (the `--matmul-*` settings in the first
column), the kernel is built exactly as `daphnec --codegen` builds it (compiler/lowering/matmul_loops.py ->
convert-to-llvm -> llvmlite O3 -> the runtime's wrapper, runtime/kernels/native_matmul.py) and timed, best of
`--repeat`, on the same arrays as `numpy.matmul` (OpenBLAS, as daphnec's default path uses). The ratio column is
native time / BLAS time (> 1: BLAS is faster, which it is expected to be: it packs panels and uses hand-written
micro-kernels). Every result is checked against BLAS (relative error, max over cells of
|C - C_blas| / (|A| @ |B|)).

    .venv/bin/python bench/codegen_bench.py [--sizes 128,256,512] [--repeat 3] [--vt f64] [--threads 1]

`--threads` sets OpenBLAS's threads (the native kernel is single-threaded, like DAPHNE's generated code); set it
before numpy is imported, so it is applied through the environment here.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SCHEDULES: dict[str, dict[str, object]] = {
    "(default: i-j-k)": {},
    "--matmul-invert-loops": {"invert_loops": True},
    "--matmul-invert-loops --matmul-vec-size-bits=512": {"invert_loops": True, "vec_size_bits": 512},
    "--matmul-tile": {"tile": True},
    "--matmul-tile --matmul-vec-size-bits=256": {"tile": True, "vec_size_bits": 256},
    "--matmul-tile --matmul-vec-size-bits=512": {"tile": True, "vec_size_bits": 512},
    "--matmul-tile --matmul-vec-size-bits=512 --matmul-unroll-factor=2": {
        "tile": True,
        "vec_size_bits": 512,
        "unroll_factor": 2,
    },
    "--matmul-fixed-tile-sizes=64,256,128,6,16 --matmul-vec-size-bits=512": {
        "fixed_tile_sizes": (64, 256, 128, 6, 16),
        "tile": True,
        "vec_size_bits": 512,
    },
    "--matmul-fixed-tile-sizes=2,3,4": {"tile": True, "fixed_tile_sizes": (2, 3, 4)},
}


def build(vt: str, settings: dict[str, object]):
    """The runtime's product body for `settings`, compiled through daphnec's own lowering and JIT."""
    import numpy as np
    from xdsl.context import Context
    from xdsl.dialects.builtin import ModuleOp, StringAttr

    from daphnec.compiler.backend import jit
    from daphnec.compiler.lowering import abi
    from daphnec.compiler.lowering.convert_to_llvm import ConvertToLLVMPass
    from daphnec.compiler.lowering.lower_matmul_to_loops import MatMulSettings, schedule_for
    from daphnec.compiler.lowering.matmul_loops import MatMulKernel, build_matmul, kernel_params
    from daphnec.runtime import native_code
    from daphnec.runtime.kernels.native_matmul import matmul_factory

    sched = schedule_for(MatMulSettings(**settings), vt)  # type: ignore[arg-type]
    name = f"mm_bench_{abs(hash((vt, sched))):x}"
    spec = MatMulKernel(name, vt, False, False, sched)
    module = ModuleOp([ModuleOp([build_matmul(spec)], sym_name=StringAttr(name))])
    ConvertToLLVMPass().apply(Context(), module)
    t0 = time.perf_counter()
    obj = jit.compile_module(next(iter(module.ops)))  # type: ignore[arg-type]
    compile_s = time.perf_counter() - t0
    sym = name + abi.ENTRY_SUFFIX
    addr = native_code.engine().load(name, obj, [sym])[sym]
    kinds = tuple(p.kind for p in kernel_params(vt))
    entry = ctypes.CFUNCTYPE(abi.STATUS.ctype, *abi.ctypes_types(kinds))(addr)
    body, _ = matmul_factory(entry, np.dtype(vt.replace("f", "float")), False, False)(_no_fallback)
    return body, compile_s


def _no_fallback(a: object, b: object) -> object:
    raise AssertionError("the benchmark's operands must fit the kernel")


def best(fn, repeat: int) -> float:
    out = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - t0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="128,256,512")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--vt", choices=("f64", "f32"), default="f64")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    os.environ.setdefault("OPENBLAS_NUM_THREADS", str(args.threads))
    sys.path.insert(0, str(ROOT.parent))
    import numpy as np

    kernels = {label: build(args.vt, s) for label, s in SCHEDULES.items()}
    rng = np.random.default_rng(1)
    print(f"value type {args.vt}, BLAS threads {os.environ['OPENBLAS_NUM_THREADS']}, best of {args.repeat}")
    head = ("n", "schedule", "native ms", "BLAS ms", "native/BLAS", "GFLOP/s", "rel.err")
    print("{:>5}  {:<70} {:>10} {:>9} {:>12} {:>8} {:>8}".format(*head))
    dtype = np.dtype(args.vt.replace("f", "float"))
    for n in (int(x) for x in args.sizes.split(",")):
        a, b = rng.random((n, n)).astype(dtype), rng.random((n, n)).astype(dtype)
        ref = a @ b
        t_blas = best(lambda a=a, b=b: a @ b, args.repeat)
        scale = np.abs(a) @ np.abs(b)
        for label, (body, _) in kernels.items():
            t = best(lambda body=body, a=a, b=b: body(a, b), args.repeat)
            err = float(np.max(np.abs(body(a, b) - ref) / scale))
            gf = 2 * n**3 / t / 1e9
            row = (n, label, t * 1e3, t_blas * 1e3, t / t_blas, gf, err)
            print("{:>5}  {:<70} {:>10.2f} {:>9.2f} {:>12.1f} {:>8.2f} {:>8.1e}".format(*row))
    print("compile seconds per kernel: " + ", ".join(f"{k} {v[1]:.2f}" for k, v in kernels.items()))


if __name__ == "__main__":
    main()
