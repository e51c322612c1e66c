"""Import a *static* module with torch-mlir's FxImporter, weights as `dycl.param` references.

Foundation tests use it to get real torch-mlir IR; dynamic models go through dycl.frontend.
"""

from __future__ import annotations

import torch
from torch_mlir.extras.fx_importer import FxImporter, FxImporterHooks
from torch_mlir.dialects import torch as torch_d
from torch_mlir.ir import Context, Location, Operation, StringAttr

from dycl.ir import parse_module


class _ParamsAsReferences(FxImporterHooks):
    def resolve_input(self, gni, value, info):
        with gni._c, Location.unknown():
            op = Operation.create(
                "dycl.param",
                results=[info.ir_type],
                attributes={"name": StringAttr.get(info.input_spec.target)},
            )
        return op.result


def import_static(model: torch.nn.Module, *example_inputs, func_name: str = "forward"):
    """Return (xDSL module, weights) for a model without data-dependent control flow."""
    program = torch.export.export(model, tuple(example_inputs))
    context = Context()
    torch_d.register_dialect(context)
    context.allow_unregistered_dialects = True
    importer = FxImporter(context=context, hooks=_ParamsAsReferences())
    importer.import_program(program, func_name=func_name)
    text = importer.module.operation.get_asm(print_generic_op_form=True)
    weights = {**dict(model.named_parameters()), **dict(model.named_buffers())}
    return parse_module(text), {k: v.detach() for k, v in weights.items()}
