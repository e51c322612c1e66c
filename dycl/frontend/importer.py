"""`import_module`: nn.Module + example inputs -> host IR (xDSL ModuleOp) + weight store."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import torch
from torch_mlir import ir
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr

from dycl.frontend.build import RESULT_NAMES
from dycl.frontend.capture import RunCapturer
from dycl.frontend.compiler import FunctionCompiler
from dycl.frontend.errors import FrontendError
from dycl.frontend import callees, library_calls
from dycl.frontend.state import CallState, Recompile, UnsupportedState
from dycl.frontend.stitch import inline_private_calls
from dycl.frontend.unentered import MAX_BUMPS, UnenteredLoop, bumped
from dycl.weights import WeightStore


@dataclass
class ImportedProgram:
    """The host IR and the weights its `dycl.param` ops name."""

    module: ModuleOp
    weights: WeightStore
    function_name: str = "forward"
    # attribute path -> the module's value when compiled, for the attributes forward keeps
    # from one call to the next (the func's `dycl.state` says where they enter and leave)
    state: dict = field(default_factory=dict)

    @property
    def function(self) -> func.FuncOp:
        for op in self.module.ops:
            if isinstance(op, func.FuncOp) and op.sym_name.data == self.function_name:
                return op
        raise KeyError(self.function_name)


def import_module(
    model: torch.nn.Module,
    example_inputs,
    *,
    method: str = "forward",
) -> ImportedProgram:
    """Import `model.<method>` on `example_inputs` (a tuple of tensors / Python scalars).

    The model is put in eval mode (`self.training` is False in the IR). Raises
    `FrontendError` for constructs DyCL cannot compile.
    """
    from dycl.ir import parse_module

    if not isinstance(example_inputs, (tuple, list)):
        example_inputs = (example_inputs,)
    model.eval()
    library_calls.register_library_trees()
    try:
        state = CallState(model)
    except UnsupportedState as refused:  # (a tensor changed in place, found before compiling)
        source, _ = callees.entry(getattr(model, method), model)
        raise source.error(source.node, str(refused), refused.hint) from None
    # Inference: no weight requires grad while runs execute and export (`out=` arguments
    # and functionalized in-place ops fail under autograd); restored afterwards.
    needs_grad = [p for p in model.parameters() if p.requires_grad]
    # torch.distributions checks its arguments' values by default (a Python branch on tensor
    # data in every Bernoulli/Categorical): it only ever raises for invalid arguments.
    validate = torch.distributions.Distribution._validate_args
    try:
        torch.distributions.Distribution.set_default_validate_args(False)
        for parameter in needs_grad:
            parameter.requires_grad_(False)
        first_refusal, bumps, fixed_kinds = None, 0, False
        while True:  # once more for each attribute found to outlive the call (state.py)
            capturer = RunCapturer(model)
            capturer.state_buffers = state.buffer_paths()
            compiler = FunctionCompiler(model, capturer, state)
            with capturer.context, ir.Location.unknown(capturer.context):
                try:
                    _, tree, input_names, input_tree = compiler.compile(
                        getattr(model, method), tuple(example_inputs), name=method, fixed_kinds=fixed_kinds)
                except UnenteredLoop as found:
                    # (a loop the example never enters: again from examples that enter it)
                    first_refusal = first_refusal or found.refusal
                    example_inputs = bumped(tuple(example_inputs), found.input_tree, found.arguments)
                    bumps += 1
                    if example_inputs is None or bumps > MAX_BUMPS:
                        raise first_refusal from None
                    continue
                except Recompile as found:
                    state.next_attempt(compiler.error, getattr(found, "node", None))
                    state.learn(found, compiler.error)
                    continue
                except FrontendError:
                    if compiler.optional_inputs and not fixed_kinds:
                        # (a statement reads an optional input without an `is None` test: each
                        # optional input takes its example's kind only, optional.py)
                        fixed_kinds = True
                        continue
                    if first_refusal is not None:  # (the other examples fail elsewhere)
                        raise first_refusal from None
                    raise
                except Exception as error:  # no internal exception reaches the user untranslated
                    raise compiler.internal_error(error) from error
                text = capturer.module.operation.get_asm(print_generic_op_form=True)
            break
    finally:
        torch.distributions.Distribution.set_default_validate_args(validate)
        for parameter in needs_grad:
            parameter.requires_grad_(True)
    module = parse_module(text, source_name=f"<{type(model).__name__}.{method}>")
    _name_hints_from_variables(module)
    inline_private_calls(module, method)
    program = ImportedProgram(module, WeightStore(), method)
    function = program.function
    function.attributes["dycl.output_tree"] = StringAttr(json.dumps(tree))
    function.attributes["dycl.input_names"] = ArrayAttr([StringAttr(n) for n in input_names])
    function.attributes["dycl.input_tree"] = StringAttr(json.dumps(input_tree))
    if compiler.input_defaults:
        function.attributes["dycl.input_defaults"] = StringAttr(json.dumps(compiler.input_defaults))
    if compiler.state_record:
        function.attributes["dycl.state"] = StringAttr(json.dumps(compiler.state_record))
        program.state = state.initial_values()
    used = {op.attributes["name"].data for op in module.walk() if op.name == "dycl.param"}
    program.weights = WeightStore.from_module(model).subset(sorted(used))
    return program


def _name_hints_from_variables(module: ModuleOp) -> None:
    """The user's variable names the builder recorded (`RESULT_NAMES`) as SSA name hints,
    which the passes carry and the host program uses."""
    for op in module.walk():
        names = op.attributes.pop(RESULT_NAMES, None)
        if names is None:
            continue
        for result, name in zip(op.results, names.data):
            if name.data and result.name_hint is None:
                result.name_hint = name.data
