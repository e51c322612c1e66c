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

    return {
        "dycl-const-prop": get_const_prop,
        "dycl-unroll-loops": get_unroll_loops,
    }
