"""What export runs for a captured run: a wrapper module holding the model (or a skeleton
of the submodules the run calls), and the `dycl.param` references, by state_dict key, that
the importer makes of the weights it lifts.
"""

from __future__ import annotations

from typing import Callable

import torch
from torch_mlir import ir
from torch_mlir.extras.fx_importer import FxImporterHooks, InputInfo

from dycl.frontend.export_cache import rename


# Name of the submodule under which a run wrapper holds the user's model; export names
# its parameters `model.<state_dict key>`.
_MODEL_ATTR = "model"

# A tensor constant created inside forward larger than this is almost certainly a weight
# the model forgot to register: refuse to write it into the IR.
MAX_LITERAL_ELEMENTS = 4096

class WeightReferences(FxImporterHooks):
    """Parameters and buffers become `dycl.param` ops named by their state_dict key."""

    def __init__(self):
        self.names: set[str] = set()
        # While a cached export is imported again: its module paths -> this run's paths.
        self.renames: dict[str, str] = {}
        # A weight with two names (tied: `self.lm_head.weight = self.wte.weight`) -> the one
        # `named_parameters()` keeps, under which the weight store holds it.
        self.canonical: dict[str, str] = {}

    def resolve_input(self, gni, value, info: InputInfo):
        name = rename(info.input_spec.target.removeprefix(_MODEL_ATTR + "."), self.renames)
        name = self.canonical.get(name, name)
        self.names.add(name)
        return ir.Operation.create(
            "dycl.param",
            results=[info.ir_type],
            attributes={"name": ir.StringAttr.get(name)},
        ).result

    def resolve_literal(self, gni, literal, info):
        if not isinstance(literal, torch.Tensor):
            return None
        if literal.numel() > MAX_LITERAL_ELEMENTS:
            raise ValueError(
                f"a {tuple(literal.shape)} tensor constant is created inside forward; "
                "register it as a buffer so that it goes to the weight store"
            )
        # (not np.ascontiguousarray: it makes a 0-d value 1-d, a tensor<1xf32> for a `[]` type)
        array = literal.detach().cpu().numpy().copy(order="C")
        # signless=False: si64 elements, as the vtensor type says (torch-mlir's convention).
        attr = ir.DenseElementsAttr.get(array, signless=False, shape=list(array.shape))
        vtensor = gni._cc.tensor_to_vtensor_type(literal)
        return ir.Operation.create(
            "torch.vtensor.literal", results=[vtensor], attributes={"value": attr}
        ).result


class RunModule(torch.nn.Module):
    """Calls one run with the original model as `self`; takes and returns flat tensors/ints.

    `weights` is the model itself or a skeleton holding only the submodules the run calls,
    at their own paths, so that export lifts (and names) only the parameters it uses.
    """

    def __init__(self, model: torch.nn.Module, weights: torch.nn.Module, run: Callable, anchored: bool = False):
        super().__init__()
        setattr(self, _MODEL_ATTR, weights)
        self._model = [model]  # a list: not registered as a submodule
        self._run = run
        self._anchored = anchored  # the last input is an `anchor_input()`, which the run does not take

    def forward(self, *flat_inputs):
        return self._run(self._model[0], *(flat_inputs[:-1] if self._anchored else flat_inputs))


def anchor_input() -> torch.Tensor:
    """The input a run of no inputs is exported with, and ignores. torch.export inserts the
    constants it lifts (a module's tensor attributes, buffers outside the exported modules)
    before the graph's first user input; in a graph with none it inserts them before the
    graph's first node, which is often one of those constants, removed once lifted: every
    constant after it is lost ("Argument 'lifted_tensor_1' ... used before it has been
    defined"), as for `a = self.timing_signal; b = self.position_signal`. The imported
    func keeps it as an unused last argument, which `splice` never binds."""
    return torch.zeros(())


def tied_names(model: torch.nn.Module) -> dict[str, str]:
    """Each other name of a parameter or buffer that has several (weight tying: one tensor
    at `wte.weight` and `lm_head.weight`) -> the name `named_parameters()` and
    `named_buffers()` keep. A run whose skeleton reaches the weight through the other
    module names it by that module's path."""
    first: dict[int, str] = {}
    tied = {}
    for table in (model.named_parameters(remove_duplicate=False), model.named_buffers(remove_duplicate=False)):
        for name, tensor in table:
            kept = first.setdefault(id(tensor), name)
            if kept != name:
                tied[name] = kept
    return tied


def module_skeleton(model: torch.nn.Module, used: list[torch.nn.Module]) -> torch.nn.Module | None:
    """Plain modules mirroring the paths of the `used` submodules (None: use the whole model)."""
    paths = {id(m): name for name, m in model.named_modules()}
    names = sorted({paths[id(m)] for m in used if id(m) in paths})
    if "" in names:
        return None
    # Keep only the outermost: a called module brings its children along.
    names = [n for n in names if not any(n.startswith(o + ".") for o in names if o != n)]
    root = torch.nn.Module()
    for name in names:
        holder = root
        *parents, leaf = name.split(".")
        for part in parents:
            if part not in holder._modules:
                holder._modules[part] = torch.nn.Module()
            holder = holder._modules[part]
        holder._modules[leaf] = model.get_submodule(name)
    return root


def lifts_model_weights(program, weight_ids: set[int]) -> bool:
    """True if export captured a parameter/buffer as a constant (the skeleton missed it)."""
    return any(id(value) in weight_ids for value in program.constants.values())
