"""`inline`: small straight-line functions replaced by their bodies at their call sites (DAPHNE runs MLIR's inliner
right after specializing functions, too).

Why: a library function such as `prepareDesign` (scale and shift the columns, `cbind` the intercept column) hands
its result to its caller across a call, and every rewrite after it (`simplify-algebra`, `fuse-x-once`, in-place
updates, kernel selection) works inside one function body: none saw that the caller's products read a `cbind` of a
scaled matrix. Once the callee's ops stand in the caller, they do.

What is inlined: a `func.call` of a function whose body is one block without regions (no `if`, loop or `parfor`
left: `specialize` propagates constant options into the call site's clone and `canonicalize` folds the branches on
them), of at most `MAX_OPS` ops, that cannot reach itself through its calls (no recursion), outside `parfor`
bodies (see `_in_parfor`), not from daphnec's own library (`_shipped`) and without `sparsity(...)` (the
compile-time estimate, -1 for a parameter: inlined, the printed value would change). The callee's ops are cloned
before the call in their order, so prints and other effects keep their order; the call's results become the
values the callee returned. A value that a declared parameter or result type generalized (a merge cast to
`matrix<f64>`) is handed to the daphne ops that read it uncast, so they learn its shape and the `cbind` it came
from (the `specialize` that follows re-infers their types); terminators and calls keep the cast value, whose type
they were built for. A function whose every call was inlined is removed; `main` and functions still called (or
passed by name to `map`, `paramserv`) stay.

The pass runs between the first `canonicalize` and the second `specialize` (`--explain property_inference` shows
its result), except with `--select-matrix-repr`, where functions take and return dense matrices and their calls
stay calls (compiler/pipeline.py). Inlining changes no bit of the program's results; the rewrites it lets see
through the call are the usual ones (the re-associating ones off with `--no-reassociate`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from daphnec.compiler.ir_walk import enclosing_function, preorder
from daphnec.dialects.attr_names import MERGE_CAST_ATTR
from daphnec.dialects.calls import callees, reachable_functions
from daphnec.dialects.locations import loc_of
from daphnec.dialects.ops import CastOp, DaphneOp
from daphnec.dialects.ops_matrix import SparsityOp
from daphnec.dialects.ops_parfor import ParForOp
from daphnec.lib import LIBRARY_DIR

MAX_OPS = 64
"""Largest callee body (ops, the return included) inlined: a library helper's size. Larger bodies stay calls, so
a function called from many places is not copied into each of them (compile time grows with the copies)."""
MAX_ROUNDS = 8
"""Rounds of inlining: a round inlines the calls an earlier round brought into a caller (a helper calling a
helper); bounded, since each round can only copy calls of functions that do not reach themselves."""


def inlinable(f: func.FuncOp, functions: dict[str, func.FuncOp]) -> bool:
    """Whether `f`'s calls are replaced by its body: one block of at most `MAX_OPS` ops, none with regions, and `f`
    not reachable from the functions it calls."""
    if not f.body.blocks or len(f.body.blocks) != 1 or f.sym_name.data == "main":
        return False
    ops = list(f.body.block.ops)
    if len(ops) > MAX_OPS or any(op.regions for op in ops) or not isinstance(ops[-1], func.ReturnOp):
        return False
    if _shipped(f) or any(isinstance(op, SparsityOp) for op in ops):
        return False  # `sparsity(M)` of a parameter is -1 (no estimate crosses a call): inlined, it would change
    called = [c for op in ops for c in callees(op)]
    return not called or f not in reachable_functions(functions, called)


def _shipped(f: func.FuncOp) -> bool:
    """Whether `f` is defined in daphnec's own library (`lib/`, the `nn` layers): its calls stay calls, since
    `--statistics` charges a library op to the script line that called into the library by the call's frame
    (runtime/statistics.py), which makes each layer of a network a row of its own."""
    loc = loc_of(f.body.block.last_op) or loc_of(f)
    return loc is not None and os.path.abspath(loc.file).startswith(os.path.join(LIBRARY_DIR, ""))


def inline_call(call: func.CallOp, callee: func.FuncOp) -> None:
    """Replace `call` by a copy of `callee`'s body (see the module docstring)."""
    mapping: dict[SSAValue, SSAValue] = dict(zip(callee.body.block.args, call.arguments))
    block = call.parent_block()
    assert block is not None
    ret = callee.body.block.last_op
    assert isinstance(ret, func.ReturnOp)
    given = set(call.arguments)
    for op in callee.body.block.ops:
        if op is ret:
            break
        new = op.clone(value_mapper=mapping)
        if isinstance(new, DaphneOp):  # a parameter's declared type generalized the argument: see the docstring
            new.operands = [_uncast(v) if v in given else v for v in new.operands]
        block.insert_op_before(new, call)
    returned = [mapping.get(v, v) for v in ret.arguments]
    for res, value in zip(call.results, returned):
        uncast = _uncast(value)
        for use in list(res.uses):
            use.operation.operands[use.index] = uncast if isinstance(use.operation, DaphneOp) else value
    call.detach()
    call.erase()


def _uncast(v: SSAValue) -> SSAValue:
    """The value a merge cast generalized (what the callee computed), else `v`."""
    owner = v.owner
    if isinstance(owner, CastOp) and MERGE_CAST_ATTR in owner.attributes:
        return owner.arg
    return v


def inline_module(module: ModuleOp) -> int:
    """Inline every call of an inlinable function, in rounds; remove the functions left without callers. Returns
    the number of calls inlined."""
    functions = {f.sym_name.data: f for f in module.ops if isinstance(f, func.FuncOp)}
    verdicts: dict[str, bool] = {}
    inlined: set[str] = set()
    count = 0
    for _ in range(MAX_ROUNDS):
        calls = [op for f in functions.values() for op in preorder(f) if isinstance(op, func.CallOp)]
        done = 0
        for call in calls:
            name = call.callee.root_reference.data
            callee = functions.get(name)
            if callee is None or call.parent_op() is None:
                continue
            if name not in verdicts:
                verdicts[name] = inlinable(callee, functions)
            if verdicts[name] and enclosing_function(call) is not callee and not _in_parfor(call):
                inline_call(call, callee)
                inlined.add(name)
                done += 1
        count += done
        if not done:
            break
    if inlined:
        _drop_uncalled(functions, inlined)
    return count


def _in_parfor(op: Operation) -> bool:
    """Whether `op` is in a `parfor` body: its calls stay calls, so that the `parfor` pass's check of the body's
    effects names the function that prints or writes (a located error about the function, not the body)."""
    p = op.parent_op()
    while p is not None and not isinstance(p, func.FuncOp):
        if isinstance(p, ParForOp):
            return True
        p = p.parent_op()
    return False


def _drop_uncalled(functions: dict[str, func.FuncOp], inlined: set[str]) -> None:
    """Erase the inlined functions nothing calls or names any more (repeated: an erased function may have been the
    last caller of another)."""
    while True:
        used = {c for f in functions.values() for op in preorder(f) for c in callees(op)}
        dead = sorted(inlined.intersection(functions) - used)
        if not dead:
            return
        for name in dead:
            f = functions.pop(name)
            f.detach()
            f.erase()


@dataclass(frozen=True)
class InlinePass(ModulePass):
    name = "inline"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        inline_module(op)
