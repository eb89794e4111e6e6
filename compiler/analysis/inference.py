"""Type and shape inference over whole modules, with specialization of untyped functions per call-site types.

Each daphne op knows its own result types (`DaphneOp.infer`); this module walks the IR in program order, applies
them, and handles what no single op can: control flow (types of values merged by `scf.if`, `scf.for`, `scf.while`
are joined to a fixpoint and casts are inserted where a value must be generalized) and calls (untyped functions
are cloned per distinct argument types, DAPHNE's SpecializeGenericFunctionsPass; recursion converges because
Unknown is the bottom of the type lattice).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence

from xdsl.dialects import func, scf
from xdsl.dialects.builtin import FunctionType, ModuleOp, StringAttr, SymbolRefAttr, UnitAttr
from xdsl.ir import Attribute, Block, Operation, SSAValue

from daphnec.compiler.analysis.infer_io import infer_read
from daphnec.compiler.ir_walk import preorder
from daphnec.dialects.attr_names import DECLARED_RESULTS_ATTR, MERGE_CAST_ATTR, OVERLOADS_ATTR
from daphnec.dialects.calls import Overload, callees, choose_overload, overload_error, reachable_functions
from daphnec.dialects.errors import CompileError, DaphneError, dsl_name
from daphnec.dialects.locations import loc_of
from daphnec.dialects.ops import CastOp, ConstantOp, DaphneOp, GenericCallOp, MapOp, constant_value
from daphnec.dialects.ops_io import ReadOp
from daphnec.dialects.ops_paramserv import AGG_PARAMS, UPD_PARAMS, VAL_PARAMS, ParamservOp
from daphnec.dialects.types import (
    FrameType,
    ListType,
    MatrixType,
    is_matrix,
    is_unknown,
    join_types,
    value_type,
    vt_name,
)

_MAX_ROUNDS = 16
_MAX_CONSTANT_CLONES = 16
_MAX_PROPERTY_CLONES = 8
"""Clones of one typed function for the shapes and representations of its call sites (`_refined_types`); later
call sites with new properties call the function as declared."""

_PROPERTY_SPECS: weakref.WeakSet[func.FuncOp] = weakref.WeakSet()
"""The clones made for call sites' matrix properties, whose declared results are refined by what their bodies
compute. Kept across inference runs (the pipeline's second `specialize`, `infer` after `columnar`): a clone made by
the first run, when `fill(1.0, nrow(X), 1)` was still `? x 1`, must be refined by the run that sees `nrow(X)`
folded to a constant (decisionTree/treePredict's `nid` and `pred`: `5000 x 1` inside, `? x 1` at the call)."""

Constants = tuple[tuple[int, object], ...]
"""Constant arguments inlined into a specialization: (parameter position, value) pairs."""

TYPE_HOOKS: dict[type[Operation], Callable[[Operation], tuple[Attribute, ...]]] = {ReadOp: infer_read}
"""Inference that needs the compiler's view of the world (a `.meta` file read at compile time) instead of the
op's own `infer()`."""


def set_type(v: SSAValue, t: Attribute) -> bool:
    """Change the type of an SSA value in place; True if it changed."""
    if v.type == t:
        return False
    v._type = t  # noqa: SLF001 - xDSL has no public setter; its own rewriters do the same via replace_value
    return True


def is_generic(f: func.FuncOp) -> bool:
    """An untyped function: some parameter type is unknown until a call site specializes it."""
    return any(is_unknown(t) for t in f.function_type.inputs.data)


def _data_kind(t: Attribute) -> str:
    return "matrix" if isinstance(t, MatrixType) else "frame" if isinstance(t, FrameType) else "scalar"


def join_all(a: Attribute, b: Attribute, where: Operation) -> Attribute:
    """Join two types at a control-flow merge; a matrix/scalar/frame conflict is a compile error."""
    if not is_unknown(a) and not is_unknown(b) and _data_kind(a) != _data_kind(b):
        raise CompileError(
            f"a variable is a {_data_kind(a)} on one path and a {_data_kind(b)} on another", loc_of(where)
        )
    return join_types(a, b)


def true_type(v: SSAValue) -> Attribute:
    """The type a value really has: looks through merge casts (which only record a chosen type)."""
    owner = v.owner
    if isinstance(owner, CastOp) and MERGE_CAST_ATTR in owner.attributes and not is_unknown(owner.arg.type):
        return owner.arg.type
    return v.type


def coerce(v: SSAValue, t: Attribute, before: Operation) -> SSAValue:
    """`v` as type `t`: a merge cast inserted before `before` when the types differ."""
    if v.type == t or is_unknown(t):
        return v
    owner = v.owner
    if isinstance(owner, CastOp) and MERGE_CAST_ATTR in owner.attributes:
        set_type(owner.res, t)
        return v
    return insert_merge_cast(v, t, before)


def insert_merge_cast(v: SSAValue, t: Attribute, before: Operation) -> SSAValue:
    """A new merge cast of `v` to type `t` right before `before` (at its location); its result."""
    cast = CastOp(v, vt=vt_name(t), dt="matrix" if is_matrix(t) else None)
    cast.attributes[MERGE_CAST_ATTR] = UnitAttr()
    set_type(cast.res, t)
    cast.location = before.location
    block = before.parent_block()
    assert block is not None
    block.insert_op_before(cast, before)
    return cast.res


def _refined(declared: Attribute, given: Attribute) -> Attribute:
    """A declared `matrix<vt>` type refined by a value of that value type: its shape, sparsity, representation."""
    same = isinstance(declared, MatrixType) and isinstance(given, MatrixType)
    return given if same and given.element_type == declared.element_type else declared


def _steering_params(f: func.FuncOp, constant: set[int]) -> set[int]:
    """Positions among `constant` (the parameters a call passes constants for) that would let `canonicalize` fold
    control flow in `f`: those a branch or loop condition of `f` is computed from when that condition depends on
    nothing but constants and such parameters (`d > 1.5` with `d` read from a matrix cannot fold, whatever index
    is constant), and those `f` passes on to the functions it calls (whose own specialization decides for them)."""
    params = f.body.block.args
    found: set[int] = set()
    for op in preorder(f):
        if isinstance(op, scf.IfOp):
            found |= _foldable_from(op.cond, params, constant)
        elif isinstance(op, scf.ConditionOp):
            found |= _foldable_from(op.condition, params, constant)
        elif isinstance(op, (func.CallOp, GenericCallOp)):
            found.update(i for i, p in enumerate(params) if i in constant and p in op.operands)
    return found


def _foldable_from(cond: SSAValue, params: Sequence[SSAValue], constant: set[int]) -> set[int]:
    """The parameters `cond` is computed from if it is computed only from constants and parameters in `constant`
    (by ops without regions), else the empty set."""
    found: set[int] = set()
    todo, seen = [cond], set()
    while todo:
        v = todo.pop()
        if v in seen:
            continue
        seen.add(v)
        owner = v.owner
        if v in params:
            i = list(params).index(v)
            if i not in constant:
                return set()
            found.add(i)
        elif isinstance(owner, ConstantOp):
            continue
        elif isinstance(owner, Operation) and not owner.regions and owner.operands:
            todo.extend(owner.operands)
        else:  # a value of a loop, a branch, a call, or an op that reads the clock or the data
            return set()
    return found


def _merged_source(v: SSAValue) -> SSAValue:
    """The value a merge cast (a coercion to a declared or joined type) was made from, else `v`."""
    owner = v.owner
    if isinstance(owner, CastOp) and MERGE_CAST_ATTR in owner.attributes:
        return owner.arg
    return v


class Inference:
    """One inference run over a module; `specialize=True` also clones untyped functions per call site."""

    def __init__(self, module: ModuleOp, specialize: bool, ipa: bool = True):
        self.module = module
        self.specialize = specialize
        self.ipa = ipa
        """Propagate constant file names into the functions that read files (see `_constant_args`)."""
        self.specializations: dict[tuple[str, tuple[Attribute, ...], Constants], func.FuncOp] = {}
        self.constant_clones: dict[str, int] = {}
        self.property_clones: dict[str, int] = {}
        """Typed functions cloned for their call sites' matrix properties, and how many clones each has."""
        self.in_progress: set[str] = set()
        self.inferred: set[str] = set()
        self.counter = 0
        self._functions: dict[str, func.FuncOp] | None = None

    # -- functions ------------------------------------------------------------------------------------------------

    def functions(self) -> dict[str, func.FuncOp]:
        """The module's functions by name, in module order when (re)built. Kept, not rebuilt per call site: that
        was O(functions) per call, quadratic on long call chains. `_specialization` adds each clone it inserts
        (the only function inference adds); `_drop_unused_generics` rebuilds it in module order."""
        if self._functions is None:
            self._functions = {op.sym_name.data: op for op in self.module.ops if isinstance(op, func.FuncOp)}
        return self._functions

    def run(self) -> None:
        for f in list(self.functions().values()):
            if not is_generic(f) and f.sym_name.data not in self.inferred:
                self.infer_function(f)
        if self.specialize:
            self._drop_unused_generics()

    def infer_function(self, f: func.FuncOp) -> None:
        """Infer a function body; repeat until its result types are stable (recursion)."""
        name = f.sym_name.data
        self.in_progress.add(name)
        try:
            for _ in range(_MAX_ROUNDS):
                before = f.function_type
                self.infer_block(f.body.block)
                self._update_signature(f)
                if f.function_type == before:
                    break
        finally:
            self.in_progress.discard(name)
            self.inferred.add(name)

    def _update_signature(self, f: func.FuncOp) -> None:
        ret = f.body.block.last_op
        inputs = [a.type for a in f.body.block.args]
        outputs = list(f.function_type.outputs.data)
        if isinstance(ret, func.ReturnOp):
            declared = f.attributes.get(DECLARED_RESULTS_ATTR) is not None
            if declared:
                if f in _PROPERTY_SPECS:  # a clone for known properties returns what its body computes
                    outputs = [_refined(o, true_type(v)) for o, v in zip(outputs, ret.arguments)]
                new_args = [coerce(v, t, ret) for v, t in zip(ret.arguments, outputs)]
                ret.operands = new_args
            else:
                outputs = [join_all(o, v.type, ret) for o, v in zip(outputs, ret.arguments)]
                if all(not is_unknown(v.type) for v in ret.arguments):
                    outputs = [v.type for v in ret.arguments]
        f.function_type = FunctionType.from_lists(inputs, outputs)

    def _specialization(
        self,
        callee: func.FuncOp,
        arg_types: tuple[Attribute, ...],
        consts: Constants = (),
        property_clone: bool = False,
    ) -> func.FuncOp:
        """The clone of `callee` for these argument types, with the constant arguments `consts` ((position,
        value) pairs) inlined into its body."""
        key = (callee.sym_name.data, arg_types, consts)
        if key in self.specializations:
            return self.specializations[key]
        self.counter += 1
        while f"{callee.sym_name.data}.{self.counter}" in self.functions():  # a second run's clone of a first's
            self.counter += 1
        spec = callee.clone()
        spec.sym_name = StringAttr(f"{callee.sym_name.data}.{self.counter}")
        for a, t in zip(spec.body.block.args, arg_types):
            set_type(a, t)
        block = spec.body.block
        for i, value in reversed(consts):
            const = ConstantOp.of(value, vt_name(arg_types[i]) or "str")  # type: ignore[arg-type]
            const.location = spec.location
            block.insert_op_before(const, block.first_op) if block.first_op else block.add_op(const)
            block.args[i].replace_all_uses_with(const.results[0])
        spec.function_type = FunctionType.from_lists(list(arg_types), list(callee.function_type.outputs.data))
        self.module.body.block.insert_op_after(spec, callee)
        if spec.sym_name.data in self.functions():
            self._functions = None  # a name taken twice: the rebuild finds what the module order says
        else:
            self.functions()[spec.sym_name.data] = spec
        self.specializations[key] = spec
        if property_clone:
            _PROPERTY_SPECS.add(spec)
        self.infer_function(spec)
        return spec

    def _constant_args(self, callee: func.FuncOp, args: Sequence[SSAValue]) -> Constants:
        """The constant arguments of a call that are inlined into the callee's specialization, like DAPHNE's
        inter-procedural constant propagation (SpecializeGenericFunctionsPass; `--no-ipa-const-propa` turns it
        off): constant strings passed to a function that reads files (itself or through the functions it calls),
        so the reads learn their types from the files' `.meta` while compiling; and constant integers and booleans
        passed to parameters that steer the callee's control flow (`_steering_params`), so `canonicalize` folds
        the branches on options such as `icpt` away (a library function called with `icpt = 2` computes only the
        steps of `icpt = 2`, and the passes after it see one straight-line path). A function gets at most
        `_MAX_CONSTANT_CLONES` such clones (a recursion that keeps building new names stops there)."""
        if not self.ipa or self.constant_clones.get(callee.sym_name.data, 0) >= _MAX_CONSTANT_CLONES:
            return ()
        declared = callee.function_type.inputs.data
        generic = is_generic(callee)
        strings = tuple((i, v) for i, a in enumerate(args) if isinstance(v := constant_value(a), str))
        if strings:
            functions = self.functions()
            reached = reachable_functions(functions, [callee.sym_name.data])
            if not any(isinstance(o, ReadOp) for f in reached for o in preorder(f)):
                strings = ()
        ints = {
            i: v
            for i, a in enumerate(args)
            if isinstance(v := constant_value(a), int)  # bool is an int
            and (generic or a.type == declared[i])
        }
        flags = tuple((i, ints[i]) for i in sorted(_steering_params(callee, set(ints))))
        consts = tuple(sorted(strings + flags, key=lambda c: c[0]))
        if not consts:
            return ()
        self.constant_clones[callee.sym_name.data] = self.constant_clones.get(callee.sym_name.data, 0) + 1
        return consts

    def _refined_types(self, callee: func.FuncOp, arg_types: tuple[Attribute, ...]) -> tuple[Attribute, ...] | None:
        """Parameter types of a typed function refined by a call site: a `matrix<vt>` parameter given a matrix of
        that value type takes the argument's shape, sparsity and representation (a declared type names the value
        type only). None when nothing is refined, for a recursive call, or when the function has its
        `_MAX_PROPERTY_CLONES` clones already.

        Why: library functions (`def lmDS(X:matrix<f64>, ...)`) would otherwise compile their bodies for unknown
        shapes and dense inputs: a CSR graph passed to `pageRank(G:matrix<f64>, ...)` was densified by every
        kernel of the body (1000x slower than scipy), and no pass could use the sizes the `.meta` files gave.
        The clone computes the same values; it is what DAPHNE's specialization does for untyped parameters."""
        name = callee.sym_name.data
        if name in self.in_progress or self.property_clones.get(name, 0) >= _MAX_PROPERTY_CLONES:
            return None
        declared = tuple(callee.function_type.inputs.data)
        refined = tuple(_refined(p, a) for p, a in zip(declared, arg_types))
        if refined == declared:
            return None
        if (name, refined, ()) not in self.specializations:
            self.property_clones[name] = self.property_clones.get(name, 0) + 1
        return refined

    def _drop_unused_generics(self) -> None:
        """Remove generic functions no specialized code calls (their clones took over), and typed functions whose
        every call now goes to a clone (with inlined constants, or for the call sites' matrix properties); repeated,
        since a dropped function may have been the last caller of another."""
        while True:
            self._functions = None  # module order
            used: set[str] = set()
            for f in self.functions().values():
                if is_generic(f):
                    continue
                for op in preorder(f):  # xDSL's walk is quadratic in the nesting depth (compiler/ir_walk.py)
                    used.update(callees(op))
            dropped = False
            for f in list(self.functions().values()):
                name = f.sym_name.data
                cloned = (name in self.constant_clones or name in self.property_clones) and name != "main"
                if (is_generic(f) or cloned) and name not in used:
                    f.detach()
                    f.erase()
                    dropped = True
            if not dropped:
                break
        self._functions = None

    # -- blocks and ops -------------------------------------------------------------------------------------------

    def infer_block(self, block: Block) -> None:
        for op in list(block.ops):
            self.infer_op(op)

    def infer_op(self, op: Operation) -> None:
        if isinstance(op, MapOp):
            self._infer_map(op)
        elif isinstance(op, ParamservOp):
            self._infer_paramserv(op)
        elif isinstance(op, DaphneOp):
            if isinstance(op, CastOp) and MERGE_CAST_ATTR in op.attributes:
                return
            hook = TYPE_HOOKS.get(type(op))
            try:
                types = hook(op) if hook is not None else op.infer()
            except DaphneError:
                raise
            except (ArithmeticError, ValueError, TypeError, IndexError, KeyError, AttributeError) as e:
                # a type rule that did not foresee its operands (a NaN constant, an odd type) still ends in a
                # located compile error that names the builtin, not in a Python exception without a place
                raise CompileError(f"{dsl_name(op.name.removeprefix('daphne.'))}: cannot infer the result type: {e}",
                                   loc_of(op)) from e  # fmt: skip
            for res, t in zip(op.results, types):
                set_type(res, t)
        elif isinstance(op, scf.IfOp):
            self._infer_if(op)
        elif isinstance(op, scf.ForOp):
            self._infer_for(op)
        elif isinstance(op, scf.WhileOp):
            self._infer_while(op)
        elif isinstance(op, func.CallOp):
            self._infer_call(op)
        elif isinstance(op, GenericCallOp):
            self._infer_generic_call(op)

    def _infer_call(self, op: func.CallOp) -> None:
        callee = self.functions().get(op.callee.root_reference.data)
        if callee is None:
            return
        consts = self._constant_args(callee, op.arguments) if self.specialize else ()
        given = [_merged_source(a) for a in op.arguments]  # what the frontend's casts to the declared types got
        refined = self._refined_types(callee, tuple(g.type for g in given)) if self.specialize else None
        if refined is not None:
            declared = callee.function_type.inputs.data
            op.operands = [g if r != d else a for a, g, r, d in zip(op.arguments, given, refined, declared)]
        if consts or refined is not None:
            types = refined if refined is not None else tuple(callee.function_type.inputs.data)
            callee = self._specialization(callee, types, consts, property_clone=refined is not None)
            op.callee = SymbolRefAttr(callee.sym_name.data)
        elif callee.sym_name.data not in self.in_progress and callee.sym_name.data not in self.inferred:
            # A re-run (the second `specialize`) may refine the callee's results (a size folded to a constant by
            # canonicalize): infer it before the call takes its result types.
            self.infer_function(callee)
        op.operands = [coerce(a, t, op) for a, t in zip(op.arguments, callee.function_type.inputs.data)]
        for r, t in zip(op.results, callee.function_type.outputs.data):
            set_type(r, t)

    def _infer_generic_call(self, op: GenericCallOp) -> None:
        """Specialize the callee for the argument types and turn the call into a `func.call` of the clone."""
        arg_types = tuple(a.type for a in op.args)
        if not self.specialize or any(is_unknown(t) for t in arg_types):
            return
        self._choose_overload(op, arg_types)
        callee = self.functions().get(op.callee.data)
        if callee is None:
            return
        consts = self._constant_args(callee, op.args)
        refined = None if is_generic(callee) else self._refined_types(callee, arg_types)
        if is_generic(callee) or consts or refined is not None:
            if is_generic(callee):
                types = arg_types
            else:
                types = refined if refined is not None else tuple(callee.function_type.inputs.data)
            spec = self._specialization(callee, types, consts, property_clone=refined is not None)
            args = [coerce(a, t, op) for a, t in zip(op.args, types)]
        else:  # typed parameters, inferred results: call it directly once its body is inferred
            if callee.sym_name.data not in self.in_progress and callee.sym_name.data not in self.inferred:
                self.infer_function(callee)
            spec = callee
            args = [coerce(a, t, op) for a, t in zip(op.args, callee.function_type.inputs.data)]
        outs = list(spec.function_type.outputs.data)
        call = func.CallOp(spec.sym_name.data, args, outs)
        call.location = op.location
        block = op.parent_block()
        assert block is not None
        block.insert_op_before(call, op)
        for old, new in zip(op.results, call.results):
            old.replace_all_uses_with(new)
        op.detach()
        op.erase()

    def _choose_overload(self, op: GenericCallOp | MapOp, arg_types: Sequence[Attribute]) -> None:
        """A call the frontend could not resolve to one overload (argument types unknown then) chooses now, by
        the same rules (`dialects.calls`)."""
        syms = op.attributes.pop(OVERLOADS_ATTR, None)
        if syms is None:
            return
        functions = self.functions()
        overloads = [Overload(s.data, tuple(functions[s.data].function_type.inputs.data)) for s in syms.data]  # type: ignore[attr-defined]
        chosen, exact = choose_overload([(o, arg_types) for o in overloads])
        if not chosen or (not exact and len(chosen) > 1):
            name = overloads[0].sym.rsplit("-", 1)[0]
            raise CompileError(overload_error(name, overloads, arg_types, len(chosen)), loc_of(op))
        if isinstance(op, MapOp):
            op.func = StringAttr(chosen[0].sym)
        else:
            op.callee = StringAttr(chosen[0].sym)

    def _infer_map(self, op: MapOp) -> None:
        """Specialize the UDF for the matrix's value type; the result has the UDF's result value type."""
        t = op.arg.type
        if not isinstance(t, MatrixType) or is_unknown(t):
            return
        self._choose_overload(op, [t.element_type])
        callee = self.functions().get(op.func.data)
        if callee is None:
            return
        elem = t.element_type
        if is_generic(callee):
            if not self.specialize:
                return
            callee = self._specialization(callee, (elem,))
            op.func = StringAttr(callee.sym_name.data)
        else:
            if callee.sym_name.data not in self.inferred and callee.sym_name.data not in self.in_progress:
                self.infer_function(callee)
            param = callee.function_type.inputs.data[0]
            if param != elem and vt_name(param) is not None:  # typed UDF: elements arrive as its parameter type
                op.operands = [coerce(op.arg, MatrixType(param, *t.shape), op)]
        outs = callee.function_type.outputs.data
        if len(outs) != 1:
            raise CompileError(f"map: function '{callee.sym_name.data}' must return exactly one value", loc_of(op))
        set_type(op.res, MatrixType(outs[0], *t.shape))

    def _infer_paramserv(self, op: ParamservOp) -> None:
        """Specialize `upd` for (model, hyperparams, a batch of features, a batch of labels) and `agg` for (model,
        hyperparams, upd's gradients); check both signatures. The result has the model's type."""
        model, features, labels = (op.arg(n) for n in ("model", "features", "labels"))
        hp = op.arg("hyperparams")
        assert model is not None and features is not None and labels is not None
        hp_t = hp.type if hp is not None else ListType(MatrixType(value_type("f64")))
        types = (model.type, hp_t, _batch(features.type), _batch(labels.type))
        upd = self._udf(op, "upd", UPD_PARAMS, types)
        if upd is None:
            return
        op.upd = StringAttr(upd.sym_name.data)
        grads_t = _returns_list(upd, "upd", op)
        agg = self._udf(op, "agg", AGG_PARAMS, (model.type, hp_t, grads_t))
        if agg is None:
            return
        op.agg = StringAttr(agg.sym_name.data)
        _returns_list(agg, "agg", op)
        if op.val is not None:
            vx, vy = op.arg("val_features"), op.arg("val_labels")
            assert vx is not None and vy is not None
            val = self._udf(op, "val", VAL_PARAMS, (model.type, hp_t, vx.type, vy.type))
            if val is None:
                return
            op.val = StringAttr(val.sym_name.data)
        set_type(op.res, model.type)

    def _udf(
        self, op: ParamservOp, role: str, params: tuple[str, ...], types: tuple[Attribute, ...]
    ) -> func.FuncOp | None:
        """The specialization of paramserv's `role` function for `types` (None while a type is still unknown)."""
        sym = dict(op.udfs)[role]
        callee = self.functions().get(sym)
        if callee is None:
            raise CompileError(f"paramserv: '{sym}' ({role}) is not a user-defined function", loc_of(op))
        n_in, n_out = len(callee.function_type.inputs.data), len(callee.function_type.outputs.data)
        if n_in != len(params) or n_out != 1:
            what = "the loss" if role == "val" else "one list"
            raise CompileError(
                f"paramserv: function '{sym}' ({role}) must take {len(params)} arguments ({', '.join(params)}) and "
                f"return {what}, it takes {n_in} and returns {n_out}",
                loc_of(op),
            )
        if any(is_unknown(t) for t in types):
            return None
        if is_generic(callee):
            return self._specialization(callee, types) if self.specialize else None
        if callee.sym_name.data not in self.inferred and callee.sym_name.data not in self.in_progress:
            self.infer_function(callee)
        return callee

    def _merge(self, op: Operation, yields: Sequence[scf.YieldOp]) -> list[Attribute]:
        types = [true_type(v) for v in yields[0].arguments]
        for y in yields[1:]:
            types = [join_all(a, true_type(v), op) for a, v in zip(types, y.arguments)]
        return types

    def _infer_if(self, op: scf.IfOp) -> None:
        self.infer_block(op.true_region.block)
        yields = [op.true_region.block.last_op]
        if op.false_region.blocks:
            self.infer_block(op.false_region.block)
            yields.append(op.false_region.block.last_op)
        if not op.results:
            return
        ys = [y for y in yields if isinstance(y, scf.YieldOp)]
        types = self._merge(op, ys)
        for y in ys:
            y.operands = [coerce(v, t, y) for v, t in zip(y.arguments, types)]
        for r, t in zip(op.results, types):
            set_type(r, t)

    def _infer_for(self, op: scf.ForOp) -> None:
        block = op.body.block
        carried = block.args[1:]
        types = [true_type(v) for v in op.iter_args]
        for _ in range(_MAX_ROUNDS):
            for a, t in zip(carried, types):
                set_type(a, t)
            self.infer_block(block)
            y = block.last_op
            assert isinstance(y, scf.YieldOp)
            new = [join_all(t, true_type(v), op) for t, v in zip(types, y.arguments)]
            if new == types:
                break
            types = new
        y = block.last_op
        assert isinstance(y, scf.YieldOp)
        y.operands = [coerce(v, t, y) for v, t in zip(y.arguments, types)]
        op.operands = [*op.operands[:3], *(coerce(v, t, op) for v, t in zip(op.iter_args, types))]
        for r, t in zip(op.results, types):
            set_type(r, t)

    def _infer_while(self, op: scf.WhileOp) -> None:
        before, after = op.before_region.block, op.after_region.block
        types = [true_type(v) for v in op.arguments]
        for _ in range(_MAX_ROUNDS):
            for a, t in zip(before.args, types):
                set_type(a, t)
            self.infer_block(before)
            cond = before.last_op
            assert isinstance(cond, scf.ConditionOp)
            for a, v in zip(after.args, cond.args):
                set_type(a, true_type(v))
            self.infer_block(after)
            y = after.last_op
            assert isinstance(y, scf.YieldOp)
            new = [
                join_all(join_all(t, true_type(c), op), true_type(v), op)
                for t, c, v in zip(types, cond.args, y.arguments)
            ]
            if new == types and all(true_type(c) == t for c, t in zip(cond.args, types)):
                break
            types = new
        cond = before.last_op
        y = after.last_op
        assert isinstance(cond, scf.ConditionOp) and isinstance(y, scf.YieldOp)
        cond.operands = [cond.condition, *(coerce(v, t, cond) for v, t in zip(cond.args, types))]
        for a, t in zip(after.args, types):
            set_type(a, t)
        y.operands = [coerce(v, t, y) for v, t in zip(y.arguments, types)]
        op.operands = [coerce(v, t, op) for v, t in zip(op.arguments, types)]
        for r, t in zip(op.results, types):
            set_type(r, t)


def infer_module(module: ModuleOp, specialize: bool, ipa: bool = True) -> None:
    Inference(module, specialize, ipa).run()


def _batch(t: Attribute) -> Attribute:
    """A batch of rows of `t` (paramserv hands its update function row blocks): the row count is unknown."""
    return t.with_shape(rows=-1) if isinstance(t, MatrixType) else t


def _returns_list(f: func.FuncOp, role: str, op: Operation) -> Attribute:
    """paramserv's `upd` returns the gradients and `agg` the new model, each a list of matrices."""
    t = f.function_type.outputs.data[0]
    if not isinstance(t, ListType) and not is_unknown(t):
        raise CompileError(
            f"paramserv: function '{f.sym_name.data}' ({role}) must return a list of matrices, it returns {t}",
            loc_of(op),
        )
    return t
