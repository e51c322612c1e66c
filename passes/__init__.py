"""DyCL's passes, by kebab-case name, as lazy factories (like `xdsl.transforms`)."""

from collections.abc import Callable

from xdsl.passes import ModulePass


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Return DyCL's passes; importing a pass module happens only when it is used."""

    def get_const_prop():
        from dycl.passes.const_prop import ConstPropPass

        return ConstPropPass

    def get_unroll_loops():
        from dycl.passes.unroll_loops import UnrollLoopsPass

        return UnrollLoopsPass

    def get_shape_infer():
        from dycl.passes.shape_infer import ShapeInferPass

        return ShapeInferPass

    def get_keep_branches():
        from dycl.passes.keep_branches import KeepBranchesPass

        return KeepBranchesPass

    def get_outline():
        from dycl.passes.outline import OutlinePass

        return OutlinePass

    def get_hoist_free():
        from dycl.passes.hoist_free import HoistFreePass

        return HoistFreePass

    def get_dedup():
        from dycl.passes.dedup import DedupPass

        return DedupPass

    def get_merge_calls():
        from dycl.passes.merge_calls import MergeCallsPass

        return MergeCallsPass

    def get_mark_batchable():
        from dycl.passes.mark_batchable import MarkBatchablePass

        return MarkBatchablePass

    def get_pipeline():
        from dycl.passes.pipeline import PipelinePass

        return PipelinePass

    return {
        "dycl-const-prop": get_const_prop,
        "dycl-unroll-loops": get_unroll_loops,
        "dycl-shape-infer": get_shape_infer,
        "dycl-keep-branches": get_keep_branches,
        "dycl-outline": get_outline,
        "dycl-hoist-free": get_hoist_free,
        "dycl-dedup": get_dedup,
        "dycl-merge-calls": get_merge_calls,
        "dycl-mark-batchable": get_mark_batchable,
        "dycl-pipeline": get_pipeline,
    }
