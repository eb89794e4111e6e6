"""`paramserv(...)`: the kernel behind `daphne.paramserv` (the engine is runtime/paramserv/).

The generated host code passes the script's named arguments as keywords, the compiled update/aggregation
(/validation) functions as `upd`/`agg`(/`val`), upd's sufficient-factor variant as `factors` with the factored
positions as `factored` (compiler/passes/sufficient_factors.py), and `shipped` = (IR text of the UDFs, upd symbol,
agg symbol, factors symbol or "") for MPI workers.
Omitted options take `PSOptions`' defaults, the one place they are defined.
"""

from __future__ import annotations

from collections.abc import Callable

from daphnec.runtime.kernels.lists import EMPTY_KIND, DaphneList


def paramserv(
    *,
    model: tuple,
    features: object,
    labels: object,
    upd: Callable[..., object],
    agg: Callable[..., object],
    val: Callable[..., object] | None = None,
    factors: Callable[..., object] | None = None,
    shipped: tuple[str, ...] | None = None,
    hyperparams: tuple | None = None,
    val_features: object = None,
    val_labels: object = None,
    **options: object,
) -> DaphneList:
    from daphnec.runtime.paramserv import paramserv as train
    from daphnec.runtime.paramserv.options import PSOptions

    hp = hyperparams if hyperparams is not None else DaphneList((), EMPTY_KIND)
    opts = PSOptions(hyperparams=hp, **options)  # type: ignore[arg-type]
    return train(model, features, labels, upd, agg, opts, val_features, val_labels, shipped, val, factors)


def gradient_ready(grad: object, *, position: int) -> None:
    """`daphne.gradientReady`: `upd`'s gradient at `position` is final (compiler/passes/wait_free_backprop.py);
    with `overlap=true` over MPI its bucket's all-reduce may start now, anywhere else nothing happens."""
    from daphnec.runtime.paramserv.marks import gradient_ready as ready

    ready(grad, position)


def await_parameter(model: tuple, *, position: int) -> object:
    """`daphne.awaitParameter`: the model matrix at `position` (compiler/passes/pull_order.py); with `overlap=true`
    over MPI with parameter servers it waits until that matrix of the pull in flight has arrived."""
    from daphnec.runtime.paramserv.marks import await_parameter as wait

    return wait(model, position)


def await_model(model: tuple) -> tuple:
    """`daphne.awaitModel`: the whole model, once every matrix of the pull in flight has arrived."""
    from daphnec.runtime.paramserv.marks import await_model as wait

    return wait(model)
