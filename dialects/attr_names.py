"""The names of the discardable attributes daphnec's IR carries: one table, read by every pass that writes or
reads one (an attribute written by the frontend and read by a pass, or written by a pass and read by the host code
generator, is the same string only if both import it from here).

Every name is daphnec's own and starts with `daphne.`, except DAPHNE's `kernel_hint` and the kernel choice of
`select-kernels` (`kernel`, `kernel_backend`, `kernel_lib`), which name DAPHNE kernel functions. Native code has
its own family, `daphne.native_kernel` (the kernel module a native lowering made), `daphne.native` (why there is
none) and `daphne.opaque`, so a DAPHNE kernel function and a native kernel module are never both called "kernel".
"""

from __future__ import annotations

# --- frontend and type inference -----------------------------------------------------------------------------------

DECLARED_RESULTS_ATTR = "daphne.declared_results"
"""On a `func.func` whose result types the script declared (`def f(...) -> matrix<f64>`): inference and the `sql`
pass keep them."""
DECLARED_TYPE_ATTR = "daphne.declared_type"
"""On a `daphne.read` whose file name is known only at run time and whose value type the script gives by casting
the result (`as.matrix<f64>(readMatrix(name))`, or the declared result of a typed function): the read kernel reads
the `.meta` at run time and converts the data to that value type (`compiler/analysis/infer_io.py`)."""
MERGE_CAST_ATTR = "daphne.merge"
"""On a `daphne.cast` to a fixed type chosen by its creator (a control-flow merge, a typed parameter): inference
keeps its result type instead of recomputing it from the operand."""
SCALAR_ROLE_ATTR = "daphne.scalar_role"
"""On a `daphne.cast` to a scalar that the frontend inserted where DaphneDSL needs a scalar (the condition of `if` or
`while`, `print`'s `newline`): what that scalar is, so that a matrix of a known shape other than 1 x 1 is reported
in those terms (`the condition of 'if' must be a scalar ...`) instead of as a failing `as.scalar`."""
OVERLOADS_ATTR = "daphne.overloads"
"""On a `daphne.generic_call` whose callee is one of several overloads that fit the argument types known when the
call was built (an untyped argument fits every parameter): the symbols of all of them, in definition order.
Specialization chooses again once the argument types are known."""

# --- kernel functions (DAPHNE's naming scheme, compiler/selection/naming.py) ---------------------------------------

KERNEL_HINT_ATTR = "kernel_hint"
"""DAPHNE's kernel hint, as the script wrote it (`sum::myKernel(X)`)."""
KERNEL_CHOICE_ATTR = "kernel"
"""The kernel function `select-kernels` chose for an op by its hint or by extension priority."""
KERNEL_BACKEND_ATTR = "kernel_backend"
"""An extension kernel's backend (`CPP`, `Python`)."""
KERNEL_LIB_ATTR = "kernel_lib"
"""An extension kernel's shared library or Python file."""

EXACT_SUM_ATTR = "daphne.exact_sum_cells"
"""On a full `sum` of a float matrix whose cells are integers (compiler/analysis/integer_valued.py), set by
`select-kernels`: up to this many cells (-1: any number) every partial sum is exact, so the kernel may add in any
order (numpy's pairwise sum) with the sequential fold's bits (`agg.exact_sum_kernel`)."""

COMPARED_SUM_ATTR = "daphne.only_compared"
"""On a full `sum` of an f64 matrix whose value the program only compares (compiler/analysis/order_only.py), set
by `select-kernels`: its kernel adds pairwise and answers each comparison as the sequential fold would
(`agg.compared_sum_kernel`)."""

# --- pipelines and native code -------------------------------------------------------------------------------------

ORDERED_ATTR = "daphne.ordered"
"""On a pipeline: it runs as one call over all rows, its sums folding cells in DAPHNE's sequential order (the plain
path's fusion, `compiler/passes/fuse_sums.py`), so its results equal those of its ops run one by one."""
CODEGEN_ATTR = "daphne.codegen"
"""On a pipeline the `codegen` pass made (`--codegen`): the runtime runs it as one call on the calling thread."""
NATIVE_KERNEL_ATTR = "daphne.native_kernel"
"""On a pipeline or a `daphne.matMul`: the symbol of its native kernel module (`builtin.module @vp_<hash>`)."""
NATIVE_FALLBACK_ATTR = "daphne.native"
"""On a pipeline or a product without a native kernel: `fallback: <why>` (it keeps its Python kernels)."""
OPAQUE_ATTR = "daphne.opaque"
"""On a pipeline with stages: the names of the ops run by their runtime kernels between the stages."""
TASK_KERNEL_ATTR = "daphne.task_kernel"
"""On a kernel function (what `convert-to-llvm` converts)."""
ABI_ATTR = "daphne.abi"
"""On a kernel function and its entry: the kinds of its parameters (`compiler/lowering/abi.py: encode`)."""

# --- parfor (compiler/passes/parfor.py, runtime/parfor.py) ----------------------------------------------------------

IN_PLACE_ATTR = "daphne.in_place"
"""On a `daphne.insert` into a parfor's result matrix: the host code writes into the parfor's private buffer of the
result instead of copying it (the `parfor` pass proved that nothing else reads that buffer)."""
PARFOR_WRITES_ATTR = "daphne.parfor_writes"
"""On a `daphne.parfor` the `parfor` pass accepted: what each iteration writes of each result (`R[(i+1), _]`)."""
PARFOR_SHIPPED_ATTR = "daphne.parfor_shipped"
"""On a `daphne.parfor` under `--distributed`: the IR text of the `@dist` function MPI workers run per chunk of
iterations (`compiler/passes/distribute_parfor.py`)."""
