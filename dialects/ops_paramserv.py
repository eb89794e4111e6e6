"""`daphne.paramserv`: parameter-server training (daphnec's addition; DAPHNE has none, SystemDS has `paramserv`).

`paramserv(model=, features=, labels=, upd=, agg=, ...)` takes named arguments only. The op keeps them as a
variadic operand list plus `arg_names` (which named argument each operand is), so optional arguments simply do not
appear; the two user-defined functions are symbol names (`upd`, `agg`) like `daphne.map`'s `func`, retargeted by
the `specialize` pass to their specializations for the model/hyperparameter/data types. `ship` (set by the host
code generator's caller when the run may be distributed) is not part of the op: the IR text of the UDFs is derived
from the module when code is generated (compiler/host/paramserv_udfs.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import ArrayAttr, IntAttr, StringAttr, UnitAttr
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, opt_prop_def, prop_def, result_def, var_operand_def
from xdsl.utils.exceptions import VerifyException

from daphnec.dialects.ops import DaphneOp
from daphnec.dialects.types import UNKNOWN, ListType, StringType, is_matrix, is_scalar, is_unknown

LIST_ARGS: tuple[str, ...] = ("model", "hyperparams")
MATRIX_ARGS: tuple[str, ...] = ("features", "labels", "val_features", "val_labels")
STRING_ARGS: tuple[str, ...] = ("mode", "utype", "freq", "scheme", "compression", "allreduce", "topology")
INT_ARGS: tuple[str, ...] = ("epochs", "batchsize", "k", "staleness", "backup_workers", "nbatches", "period", "seed",
                             "servers", "threads", "bucket")  # fmt: skip
FLOAT_ARGS: tuple[str, ...] = ("alpha", "delta_max")
BOOL_ARGS: tuple[str, ...] = ("colocated", "sfb", "overlap")
FUNCTION_ARGS: tuple[str, ...] = ("upd", "agg", "val")
REQUIRED: tuple[str, ...] = ("model", "features", "labels")
VALUE_ARGS: tuple[str, ...] = LIST_ARGS + MATRIX_ARGS + STRING_ARGS + INT_ARGS + FLOAT_ARGS + BOOL_ARGS
SCALAR_CASTS: dict[str, str] = {**dict.fromkeys(INT_ARGS, "si64"), **dict.fromkeys(FLOAT_ARGS, "f64"),
                                **dict.fromkeys(BOOL_ARGS, "bool")}  # fmt: skip
"""The value type each numeric named argument is cast to (whole numbers si64, coefficients f64, flags bool)."""
"""Every named argument that is a value (an operand); `upd`/`agg` are function names instead."""

UPD_PARAMS = ("model", "hyperparams", "features", "labels")
AGG_PARAMS = ("model", "hyperparams", "gradients")
VAL_PARAMS = ("model", "hyperparams", "val_features", "val_labels")


@irdl_op_definition
class ParamservOp(DaphneOp):
    """`paramserv(...)`: train `model` (a list of matrices) with `upd` (gradients of a batch) and `agg` (apply
    gradients) on worker threads or MPI ranks; the result is the trained model list (same type as `model`)."""

    name = "daphne.paramserv"
    args = var_operand_def()
    arg_names = prop_def(ArrayAttr[StringAttr])
    upd = prop_def(StringAttr)
    agg = prop_def(StringAttr)
    val = opt_prop_def(StringAttr)
    """Optional: the validation-loss function, evaluated on each epoch's model (the statistics show it)."""
    factors = opt_prop_def(StringAttr)
    """Set by `sufficient-factors`: a variant of `upd` that returns, for the positions `factored`, the sufficient
    factors A and B of the gradient t(A) @ B instead of the product (Poseidon's SFB; used with `sfb=true`)."""
    factored = opt_prop_def(ArrayAttr[IntAttr])
    pull_order = opt_prop_def(ArrayAttr[IntAttr])
    """Set by `pull-order`: every read of the model in `upd` waits for its parameter (`daphne.awaitParameter`,
    `daphne.awaitModel`), and this is the order in which the forward pass first reads them (TicTac's order: with
    `overlap=true` and parameter servers the worker pulls them in it, and `upd` starts on the first that arrive)."""
    per_matrix_agg = opt_prop_def(UnitAttr)
    """Set by `pull-order` when `agg` is per-matrix (compiler/passes/per_matrix_agg.py: output j depends only on
    model j, gradient j and the hyperparameters): one server may then update and send back each matrix on its own."""
    res = result_def()

    def __init__(self, args: Sequence[SSAValue], names: Sequence[str], upd: str, agg: str, val: str | None = None):
        props: dict[str, Attribute] = {
            "arg_names": ArrayAttr([StringAttr(n) for n in names]),
            "upd": StringAttr(upd),
            "agg": StringAttr(agg),
        }
        if val is not None:
            props["val"] = StringAttr(val)
        super().__init__(operands=[args], result_types=[UNKNOWN], properties=props)

    @property
    def udfs(self) -> tuple[tuple[str, str], ...]:
        """(role, function symbol) of every function the call runs: upd, agg and, if given, val."""
        roles = [("upd", self.upd.data), ("agg", self.agg.data)]
        roles += [("val", self.val.data)] if self.val is not None else []
        return tuple(roles + ([("factors", self.factors.data)] if self.factors is not None else []))

    @property
    def factored_positions(self) -> tuple[int, ...]:
        """The gradient positions `factors` returns as sufficient factors (empty without `factors`)."""
        return tuple(a.data for a in self.factored.data) if self.factored is not None else ()

    @property
    def pull_positions(self) -> tuple[int, ...] | None:
        """The pull order `pull-order` found (None: the pass did not prepare this call's `upd`)."""
        return tuple(a.data for a in self.pull_order.data) if self.pull_order is not None else None

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(n.data for n in self.arg_names.data)

    def arg(self, name: str) -> SSAValue | None:
        """The operand given for a named argument, or None when it was omitted."""
        for n, v in zip(self.names, self.args):
            if n == name:
                return v
        return None

    def infer(self) -> tuple[Attribute, ...]:
        model = self.arg("model")
        return (model.type if model is not None and isinstance(model.type, ListType) else UNKNOWN,)

    def verify_(self) -> None:
        names = self.names
        if len(names) != len(self.args):
            raise VerifyException(f"{self.name}: {len(self.args)} operands but {len(names)} argument names")
        for n, v in zip(names, self.args):
            _check_arg(self, n, v.type)
        missing = [n for n in REQUIRED if n not in names]
        if missing:
            raise VerifyException(f"{self.name}: missing argument(s) {', '.join(missing)}")
        if self.val is not None and not {"val_features", "val_labels"} <= set(names):
            raise VerifyException(f"{self.name}: val needs val_features and val_labels")
        if (self.factors is None) != (self.factored is None):
            raise VerifyException(f"{self.name}: factors and factored go together")


def _check_arg(op: Operation, name: str, t: Attribute) -> None:
    if name not in VALUE_ARGS:
        raise VerifyException(f"{op.name}: unknown argument '{name}'")
    if is_unknown(t):
        return
    if name in LIST_ARGS:
        ok, want = isinstance(t, ListType), "a list of matrices"
    elif name in MATRIX_ARGS:
        ok, want = is_matrix(t), "a matrix"
    elif name in STRING_ARGS:
        ok, want = isinstance(t, StringType), "a string"
    else:
        ok = is_scalar(t) and not isinstance(t, StringType)
        want = "true or false" if name in BOOL_ARGS else "a number"
    if not ok:
        raise VerifyException(f"{op.name}: argument '{name}' must be {want}, got {t}")


@irdl_op_definition
class GradientReadyOp(DaphneOp):
    """`upd`'s gradient at `position` is final here (set by `wait-free-backprop`): with `overlap=true` its
    all-reduce starts now, beside the rest of the backward pass (Poseidon's wait-free backpropagation); anywhere
    else it does nothing. Not pure, so that no pass moves or removes it."""

    name = "daphne.gradientReady"
    grad = operand_def()
    position = prop_def(IntAttr)

    def __init__(self, grad: SSAValue, position: int):
        super().__init__(operands=[grad], result_types=[], properties={"position": IntAttr(position)})

    def infer(self) -> tuple[Attribute, ...]:
        return ()


@irdl_op_definition
class AwaitParameterOp(DaphneOp):
    """`upd`'s read of the model matrix at `position` (set by `pull-order` right before the forward pass first
    uses it): with `overlap=true` over MPI with parameter servers, the worker's pull of the next model is still
    arriving while `upd` runs, and this waits until that matrix is there (TicTac); anywhere else it is `model[j]`.
    Not pure, so that no pass moves it before the reads it guards or merges two of them."""

    name = "daphne.awaitParameter"
    model = operand_def()
    position = prop_def(IntAttr)
    res = result_def()

    def __init__(self, model: SSAValue, position: int):
        super().__init__(operands=[model], result_types=[UNKNOWN], properties={"position": IntAttr(position)})

    def infer(self) -> tuple[Attribute, ...]:
        t = self.model.type
        return (t.element_type,) if isinstance(t, ListType) else (UNKNOWN,)


@irdl_op_definition
class AwaitModelOp(DaphneOp):
    """`upd`'s use of the whole model list (a call, a computed index, `length`; set by `pull-order`): waits until
    the pull in flight has brought every matrix (see `AwaitParameterOp`); anywhere else the model itself."""

    name = "daphne.awaitModel"
    model = operand_def()
    res = result_def()

    def __init__(self, model: SSAValue):
        super().__init__(operands=[model], result_types=[model.type])

    def infer(self) -> tuple[Attribute, ...]:
        return (self.model.type,)


OPS: list[type[Operation]] = [ParamservOp, GradientReadyOp, AwaitParameterOp, AwaitModelOp]
"""The ops this module defines, registered in the dialect by dialects/daphne.py."""
