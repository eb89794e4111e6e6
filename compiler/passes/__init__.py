"""Every compiler pass, by its registered kebab-case name (used by the pipeline and by daphne-opt), and which of
them have nothing to do on a given module (`PassGate`)."""

from collections.abc import Callable

from xdsl.ir import Operation
from xdsl.passes import ModulePass


def _canonicalize() -> type[ModulePass]:
    from daphnec.compiler.passes.canonicalize import CanonicalizePass

    return CanonicalizePass


def _codegen() -> type[ModulePass]:
    from daphnec.compiler.passes.codegen import CodegenPass

    return CodegenPass


def _cse() -> type[ModulePass]:
    from daphnec.compiler.passes.cse import CsePass

    return CsePass


def _dce() -> type[ModulePass]:
    from daphnec.compiler.passes.dce import DcePass

    return DcePass


def _fold_transpose() -> type[ModulePass]:
    from daphnec.compiler.passes.fold_transpose import FoldTransposePass

    return FoldTransposePass


def _fold_positions() -> type[ModulePass]:
    from daphnec.compiler.passes.fold_positions import FoldPositionsPass

    return FoldPositionsPass


def _fuse_sums() -> type[ModulePass]:
    from daphnec.compiler.passes.fuse_sums import FuseSumsPass

    return FuseSumsPass


def _fuse_maps() -> type[ModulePass]:
    from daphnec.compiler.passes.fuse_maps import FuseMapsPass

    return FuseMapsPass


def _fuse_filter_agg() -> type[ModulePass]:
    from daphnec.compiler.passes.fuse_filter_agg import FuseFilterAggPass

    return FuseFilterAggPass


def _simplify_algebra() -> type[ModulePass]:
    from daphnec.compiler.passes.simplify_algebra import SimplifyAlgebraPass

    return SimplifyAlgebraPass


def _reorder_matmul_chains() -> type[ModulePass]:
    from daphnec.compiler.passes.reorder_matmul_chains import ReorderMatMulChainsPass

    return ReorderMatMulChainsPass


def _fuse_split_stats() -> type[ModulePass]:
    from daphnec.compiler.passes.fuse_split_stats import FuseSplitStatsPass

    return FuseSplitStatsPass


def _fuse_x_once() -> type[ModulePass]:
    from daphnec.compiler.passes.fuse_x_once import FuseXOncePass

    return FuseXOncePass


def _in_place_insert() -> type[ModulePass]:
    from daphnec.compiler.passes.in_place_insert import InPlaceInsertPass

    return InPlaceInsertPass


def _inline() -> type[ModulePass]:
    from daphnec.compiler.passes.inline import InlinePass

    return InlinePass


def _infer() -> type[ModulePass]:
    from daphnec.compiler.passes.infer import InferPass

    return InferPass


def _parfor() -> type[ModulePass]:
    from daphnec.compiler.passes.parfor import ParForPass

    return ParForPass


def _distribute_parfor() -> type[ModulePass]:
    from daphnec.compiler.passes.distribute_parfor import DistributeParForPass

    return DistributeParForPass


def _select_matrix_repr() -> type[ModulePass]:
    from daphnec.compiler.passes.select_matrix_repr import SelectMatrixReprPass

    return SelectMatrixReprPass


def _select_kernels() -> type[ModulePass]:
    from daphnec.compiler.passes.select_kernels import SelectKernelsPass

    return SelectKernelsPass


def _specialize() -> type[ModulePass]:
    from daphnec.compiler.passes.specialize import SpecializePass

    return SpecializePass


def _lower_pipeline_to_loops() -> type[ModulePass]:
    from daphnec.compiler.lowering.lower_pipeline_to_loops import LowerPipelineToLoopsPass

    return LowerPipelineToLoopsPass


def _lower_matmul_to_loops() -> type[ModulePass]:
    from daphnec.compiler.lowering.lower_matmul_to_loops import LowerMatMulToLoopsPass

    return LowerMatMulToLoopsPass


def _convert_to_llvm() -> type[ModulePass]:
    from daphnec.compiler.lowering.convert_to_llvm import ConvertToLLVMPass

    return ConvertToLLVMPass


def _sufficient_factors() -> type[ModulePass]:
    from daphnec.compiler.passes.sufficient_factors import SufficientFactorsPass

    return SufficientFactorsPass


def _wait_free_backprop() -> type[ModulePass]:
    from daphnec.compiler.passes.wait_free_backprop import WaitFreeBackpropPass

    return WaitFreeBackpropPass


def _pull_order() -> type[ModulePass]:
    from daphnec.compiler.passes.pull_order import PullOrderPass

    return PullOrderPass


def _distribute() -> type[ModulePass]:
    from daphnec.compiler.passes.distribute import DistributePass

    return DistributePass


def _sql() -> type[ModulePass]:
    from daphnec.compiler.passes.sql import SqlPass

    return SqlPass


def _columnar() -> type[ModulePass]:
    from daphnec.compiler.passes.columnar import ColumnarPass

    return ColumnarPass


def _vectorize() -> type[ModulePass]:
    from daphnec.compiler.passes.vectorize import VectorizePass

    return VectorizePass


PASS_FACTORIES: dict[str, Callable[[], type[ModulePass]]] = {
    "canonicalize": _canonicalize,
    "codegen": _codegen,
    "cse": _cse,
    "dce": _dce,
    "infer": _infer,
    "inline": _inline,
    "fold-transpose": _fold_transpose,
    "fold-positions": _fold_positions,
    "fuse-sums": _fuse_sums,
    "fuse-maps": _fuse_maps,
    "fuse-filter-agg": _fuse_filter_agg,
    "simplify-algebra": _simplify_algebra,
    "reorder-matmul-chains": _reorder_matmul_chains,
    "fuse-x-once": _fuse_x_once,
    "fuse-split-stats": _fuse_split_stats,
    "specialize": _specialize,
    "sql": _sql,
    "columnar": _columnar,
    "select-matrix-repr": _select_matrix_repr,
    "select-kernels": _select_kernels,
    "sufficient-factors": _sufficient_factors,
    "wait-free-backprop": _wait_free_backprop,
    "pull-order": _pull_order,
    "vectorize": _vectorize,
    "distribute": _distribute,
    "parfor": _parfor,
    "in-place-insert": _in_place_insert,
    "distribute-parfor": _distribute_parfor,
    "lower-pipeline-to-loops": _lower_pipeline_to_loops,
    "lower-matmul-to-loops": _lower_matmul_to_loops,
    "convert-to-llvm": _convert_to_llvm,
}


class _Registry(dict):
    """name -> pass class, resolved lazily so start-up imports only the passes a run uses."""

    def __missing__(self, name: str) -> type[ModulePass]:
        cls = PASS_FACTORIES[name]()
        self[name] = cls
        return cls


ALL_PASSES: dict[str, type[ModulePass]] = _Registry()


def _triggers() -> dict[str, tuple[type[Operation], ...]]:
    """Pass name -> the op classes it acts on: a module with no op of these classes is left unchanged by the pass
    (each pass's own walk looks for these roots first and does nothing else without one; tests/test_compile_gate.py
    runs every gated pass on modules without them and checks the IR stays the same)."""
    from daphnec.dialects.ops import InsertOp
    from daphnec.dialects.ops_matrix import MatMulOp, OuterBinaryOp
    from daphnec.dialects.ops_parfor import ParForOp
    from daphnec.dialects.ops_relational import RegisterViewOp, SqlOp

    return {
        "sql": (RegisterViewOp, SqlOp),  # SqlPass: its work list is exactly these ops
        "parfor": (ParForOp,),  # ParForPass: `parfor_loops`
        "fuse-x-once": (MatMulOp,),  # FuseGramVector's root
        "fuse-split-stats": (OuterBinaryOp,),  # FuseSplitStats's root
        "in-place-insert": (InsertOp,),  # `in_place_inserts`
    }


class PassGate:
    """Which passes of a pipeline have nothing to do: a gated pass (`_triggers`) whose op classes are absent from
    the module is neither imported, run nor followed by a verification (the IR it would leave is the IR already
    verified). Why: a cold compile of a library script ran ~10 such passes, each importing its module, walking the
    IR and verifying it again, ~1.5 ms apiece (issue 23 part 5).

    The op classes present are collected in one walk and reused by consecutive gated passes; any pass that runs
    (gated or not) may create or remove ops, so the next gated pass walks again."""

    def __init__(self) -> None:
        self._present: frozenset[type[Operation]] | None = None
        self._triggers: dict[str, tuple[type[Operation], ...]] | None = None

    def skips(self, name: str, module: Operation) -> bool:
        """Whether pass `name` would leave `module` unchanged (then the caller skips it); False also means the pass
        runs, so the classes collected before are forgotten."""
        if self._triggers is None:
            self._triggers = _triggers()
        triggers = self._triggers.get(name)
        if triggers is not None:
            if self._present is None:
                from daphnec.compiler.ir_walk import walk

                self._present = frozenset({type(op) for op in walk(module)})
            if not any(issubclass(cls, triggers) for cls in self._present):
                return True
        self._present = None
        return False
