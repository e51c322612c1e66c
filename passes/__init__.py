"""DyCL's passes, by kebab-case name, as lazy factories (like `xdsl.transforms`).

Other packages add passes through the entry point group `dycl.passes`
(`my-pass = "my_pkg.passes:MyPass"` under `[project.entry-points."dycl.passes"]`):
`available_passes()` holds them beside DyCL's own, which dycl-opt and
`dycl.compile(passes=...)` read. A plugin is imported only when a pipeline names it; one
that cannot be loaded is a `PassPluginError` naming it then, and never stops the others.
"""

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.passes import ModulePass

PLUGIN_GROUP = "dycl.passes"


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

    def get_hoist_invariant():
        from dycl.passes.hoist_invariant import HoistInvariantPass

        return HoistInvariantPass

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

    def get_single_thread():
        from dycl.passes.single_thread import SingleThreadPass

        return SingleThreadPass

    def get_mark_batchable():
        from dycl.passes.mark_batchable import MarkBatchablePass

        return MarkBatchablePass

    def get_split_batchable():
        from dycl.passes.split_batchable import SplitBatchablePass

        return SplitBatchablePass

    def get_reduce_by_row():
        from dycl.passes.reduce_by_row import ReduceByRowPass

        return ReduceByRowPass

    def get_pipeline():
        from dycl.passes.pipeline import PipelinePass

        return PipelinePass

    return {
        "dycl-const-prop": get_const_prop,
        "dycl-unroll-loops": get_unroll_loops,
        "dycl-shape-infer": get_shape_infer,
        "dycl-hoist-invariant": get_hoist_invariant,
        "dycl-keep-branches": get_keep_branches,
        "dycl-outline": get_outline,
        "dycl-hoist-free": get_hoist_free,
        "dycl-dedup": get_dedup,
        "dycl-merge-calls": get_merge_calls,
        "dycl-single-thread": get_single_thread,
        "dycl-mark-batchable": get_mark_batchable,
        "dycl-split-batchable": get_split_batchable,
        "dycl-reduce-by-row": get_reduce_by_row,
        "dycl-pipeline": get_pipeline,
    }


class PassPluginError(ValueError):
    """A pass another package registers (entry point group `dycl.passes`) cannot be used."""


@dataclass(frozen=True)
class PassPlugin:
    name: str
    target: str
    """`module:Class`, the entry point's value."""
    distribution: str | None

    def describe(self) -> str:
        source = f" (from {self.distribution})" if self.distribution else ""
        return f"pass plugin '{self.name}' = '{self.target}'{source}"

    def load(self) -> type[ModulePass]:
        from importlib.metadata import EntryPoint

        try:
            loaded = EntryPoint(self.name, self.target, PLUGIN_GROUP).load()
        except Exception as err:  # noqa: BLE001 - whatever the plugin's import raises
            raise PassPluginError(f"{self.describe()} cannot be loaded: {type(err).__name__}: {err}") from None
        if not (isinstance(loaded, type) and issubclass(loaded, ModulePass)):
            raise PassPluginError(f"{self.describe()} is not an xdsl.passes.ModulePass subclass")
        if loaded.name != self.name:
            raise PassPluginError(f"{self.describe()}: the class's name is '{loaded.name}', not '{self.name}'")
        return loaded


def pass_plugins() -> list[PassPlugin]:
    """The passes installed packages register under `dycl.passes` (read, not imported)."""
    from importlib.metadata import entry_points

    plugins = []
    for entry in entry_points(group=PLUGIN_GROUP):
        distribution = getattr(entry, "dist", None)
        plugins.append(PassPlugin(entry.name, entry.value, distribution.name if distribution else None))
    return plugins


def available_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """DyCL's passes and those of `pass_plugins()` (a plugin that takes the name of one of
    DyCL's passes is ignored: `dycl-opt --help` says so)."""
    passes = get_all_passes()
    for plugin in pass_plugins():
        if plugin.name in passes:
            continue
        passes[plugin.name] = plugin.load
    return passes
