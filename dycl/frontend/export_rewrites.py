"""What a run's exported program is rewritten into before torch-mlir imports it: value
semantics (in-place ops functionalized, `.detach()` the tensor itself, mutations as
outputs), a runtime size in tensor math as a 0-d tensor, `topk` of a runtime k as a sort,
and decompositions of the ops torch-mlir has no op for.
"""

from __future__ import annotations

import operator

import torch
from torch.export.graph_signature import InputKind, OutputKind, SymFloatArgument, SymIntArgument

from dycl.frontend.export_sizes import symbolic_number
from dycl.frontend.run_weights import _MODEL_ATTR


class WeightMutation(Exception):
    """A run mutates a parameter or buffer in place (state that outlives the call)."""

    def __init__(self, name: str):
        super().__init__(name)
        self.name = name

def _batch_norm_no_training(input, weight, bias, running_mean, running_var, momentum, eps):
    """Eval-mode batch norm as arithmetic. A functionalized run (one with an in-place op)
    holds `_native_batch_norm_legit_no_training`, which torch-mlir has no op for, and whose
    torch-mlir decomposition (`_native_batch_norm_legit`) mutates the running statistics."""
    shape = [1, -1] + [1] * (input.dim() - 2)
    scale = torch.rsqrt(running_var + eps)
    if weight is not None:
        scale = scale * weight
    out = (input - running_mean.view(shape)) * scale.view(shape)
    if bias is not None:
        out = out + bias.view(shape)
    empty = input.new_zeros((0,))
    return out, empty, empty


DECOMPOSITIONS = {torch.ops.aten._native_batch_norm_legit_no_training.default: _batch_norm_no_training}


def topk_of_a_runtime_k(program) -> None:
    """The values of `torch.topk(x, k)` with k a runtime int (nanoGPT's `topk(logits,
    min(top_k, n))`) are the first k of `torch.sort(x, descending=largest)`: the sort goes to
    a sub-DNN, the slice at k is a view the host takes. Only where the values alone are read
    and sorted (the default): the indices of equal values, and the order of `sorted=False`,
    are topk's own, which torch leaves unspecified. (k past the dim raises as in eager: export
    bounded k by the dim's size, `size_ranges`.)"""
    from torch._guards import detect_fake_mode

    graph, fake_mode = program.graph, None
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target is not torch.ops.aten.topk.default:
            continue
        x, k, dim, largest, ordered = (*node.args, *[None] * 5)[:5]
        dim = node.kwargs.get("dim", -1 if dim is None else dim)
        largest = node.kwargs.get("largest", True if largest is None else largest)
        ordered = node.kwargs.get("sorted", True if ordered is None else ordered)
        items = {user.args[1]: user for user in node.users if user.target is operator.getitem}
        fixed = k.meta.get("val") if isinstance(k, torch.fx.Node) else None
        if isinstance(fixed, (int, torch.SymInt)) and symbolic_number(k) is None:
            # (an int the run is captured for one value of, `fixed_ints`: that value)
            node.update_arg(1, int(fixed))
            continue
        if symbolic_number(k) is None or not ordered or len(items) != len(node.users) or items.get(1, None) is not None and items[1].users:
            continue
        if 0 not in items:
            continue
        fake_mode = fake_mode or detect_fake_mode([n.meta.get("val") for n in graph.nodes])
        with graph.inserting_before(node), fake_mode:
            ordered_values = graph.call_function(torch.ops.aten.sort.default, (x, dim, largest))
            ordered_values.meta["val"] = torch.ops.aten.sort.default(x.meta["val"], dim, largest)
            values = graph.call_function(operator.getitem, (ordered_values, 0))
            values.meta["val"] = ordered_values.meta["val"][0]
        # (the values' node becomes the slice: the graph signature names its outputs' nodes)
        items[0].target, items[0].args, items[0].kwargs = torch.ops.aten.slice.Tensor, (values, dim, 0, k), {}
        if 1 in items:
            graph.erase_node(items[1])
        graph.erase_node(node)
    if fake_mode is not None:
        program.graph_module.recompile()


def functionalize(program):
    """Value semantics for in-place ops (`relu_`, `index_put_`, stores through views).

    `torch.export` keeps mutation in its graph (`copy_` into a `select` of an input, `add_`);
    imported as is, a mutating op whose result nobody reads would be dropped as dead code.
    Functionalization rewrites them into out-of-place ops, and what a run mutates outside
    itself becomes explicit: an input or a weight mutation in the graph signature.
    """
    if not any(
        node.op == "call_function"
        and isinstance(node.target, torch._ops.OpOverload)
        and node.target._schema.is_mutable
        for node in program.graph.nodes
    ):
        return program
    return program.run_decompositions({})


def floats_as_number_outputs(program) -> None:
    """A runtime float the run returns (`x.sum(1).tolist()` of a float tensor, `.item()`)
    is a result of type `!torch.float`. FxImporter imports a symbolic number's node by its
    value's type, but takes only the int kind of argument as an output: the float's output
    is named as that kind, its node (and so its type) unchanged."""
    for spec in program.graph_signature.output_specs:
        if spec.kind == OutputKind.USER_OUTPUT and isinstance(spec.arg, SymFloatArgument):
            spec.arg = SymIntArgument(name=spec.arg.name)


def mutations_as_outputs(program, state_buffers: frozenset[str] = frozenset()) -> tuple[list[int], list[str]]:
    """Turn input mutations into plain outputs (the host rebinds the mutated variables);
    returns the mutated user inputs' positions, and the paths of the buffers kept across
    calls (`state_buffers`) the run changes, whose new values become its last outputs. Any
    other weight mutation is refused."""
    signature = program.graph_signature
    buffers = []
    for spec in signature.output_specs:
        if spec.kind in (OutputKind.BUFFER_MUTATION, OutputKind.PARAMETER_MUTATION):
            name = spec.target.removeprefix(_MODEL_ATTR + ".")
            if spec.kind != OutputKind.BUFFER_MUTATION or name not in state_buffers:
                raise WeightMutation(name)
            buffers.append(name)
    if buffers:
        _buffer_mutations_last(program)
    user_inputs = [spec.arg.name for spec in signature.input_specs if spec.kind == InputKind.USER_INPUT]
    mutated = []
    for position, spec in enumerate(signature.output_specs):
        if spec.kind == OutputKind.USER_INPUT_MUTATION:
            # export lists mutations before user outputs; results are spliced in this order
            assert position == len(mutated), "an input mutation after a user output"
            mutated.append(user_inputs.index(spec.target))
            spec.kind, spec.target = OutputKind.USER_OUTPUT, None
    return mutated, buffers


def _buffer_mutations_last(program) -> None:
    """Move the `BUFFER_MUTATION` outputs after the user outputs, as user outputs."""
    signature = program.graph_signature
    output = next(node for node in program.graph.nodes if node.op == "output")
    values = list(output.args[0])
    specs = list(signature.output_specs)
    order = sorted(range(len(specs)), key=lambda k: specs[k].kind == OutputKind.BUFFER_MUTATION)
    for k in order:
        if specs[k].kind == OutputKind.BUFFER_MUTATION:
            specs[k].kind, specs[k].target = OutputKind.USER_OUTPUT, None
    signature.output_specs[:] = [specs[k] for k in order]
    output.args = (tuple(values[k] for k in order),)


# `.detach()` in code export sees (a helper, a submodule) and `detach_` (`torch.tensor(...)`
# exports as lift_fresh_copy + detach_, which would import as an opaque `torch.operator`).
# At inference both are the tensor itself, memory included: `x.detach().clamp_(0)` changes
# `x`. So they become `alias` (a view functionalization follows) before functionalization,
# and, once the graph has value semantics, a copy the importer knows.
DETACHES = {torch.ops.aten.detach_.default, torch.ops.aten.detach.default}


def sizes_as_tensors(program) -> None:
    """A size known only at run time that is a number in tensor math (`h.sum(1) / h.size(1)`,
    `x[idx].mean(0) * idx.numel()`, `x * (h.size(1) / 4)`) enters that math as a 0-d tensor.

    Export passes the SymInt itself (`aten.div.Tensor(sum, sym_size)`); imported so, the op
    would read a host int, and a sub-DNN takes only tensors. `aten.scalar_tensor` (which the
    host program computes) makes the 0-d tensor, in the dtype that gives the result eager
    PyTorch gives with the Python number (`_dtype_of_a_python_number_beside`). A number where
    the op takes a Scalar (`torch.clamp(x, max=n)`) stays a host value, which `splice` refuses."""
    from torch._guards import detect_fake_mode

    graph = program.graph
    fake_mode = None
    for node in list(graph.nodes):
        if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
            continue
        schema = node.target._schema.arguments
        positional = [(schema[k], k, arg) for k, arg in enumerate(node.args) if k < len(schema)]
        named = {a.name: a for a in schema}
        keyword = [(named[name], name, arg) for name, arg in node.kwargs.items() if name in named]
        # (each dtype from the operands as export wrote them, before any is replaced)
        sizes = [(at, arg, _dtype_of_a_python_number_beside(node, symbolic_number(arg)))
                 for argument, at, arg in positional + keyword
                 if isinstance(argument.type, torch.TensorType) and symbolic_number(arg) is not None]
        if not sizes:
            continue
        fake_mode = fake_mode or detect_fake_mode([n.meta.get("val") for n in graph.nodes])
        for at, size, dtype in sizes:
            with graph.inserting_before(node), fake_mode:
                tensor = graph.call_function(torch.ops.aten.scalar_tensor.default, (size,), {"dtype": dtype})
                tensor.meta["val"] = torch.ops.aten.scalar_tensor.default(size.meta["val"], dtype=dtype)
            if isinstance(at, int):
                node.update_arg(at, tensor)
            else:
                node.update_kwarg(at, tensor)
    if fake_mode is not None:
        program.graph_module.recompile()


def _dtype_of_a_python_number_beside(node: torch.fx.Node, number) -> torch.dtype:
    """The dtype of a 0-d tensor that promotes with `node`'s tensor operands as the Python
    number does: 0-d tensors of one kind (integer, float) promote among themselves, and a
    Python number of a kind the operands have takes their dtype."""
    dtypes = [a.meta["val"].dtype for a in (*node.args, *node.kwargs.values())
              if isinstance(a, torch.fx.Node) and isinstance(a.meta.get("val"), torch.Tensor)]
    if isinstance(number, torch.SymFloat):
        same_kind = [d for d in dtypes if d.is_floating_point]
        fallback = torch.get_default_dtype()  # (`int_tensor / 2.5` is float32)
    else:
        same_kind = [d for d in dtypes if not d.is_floating_point and not d.is_complex and d != torch.bool]
        fallback = torch.int64  # (a float operand wins; `bool_tensor * 3` is int64)
        if len(same_kind) < len([d for d in dtypes if d != torch.bool]):
            return fallback
    if not same_kind:
        return fallback
    dtype = same_kind[0]
    for other in same_kind[1:]:
        dtype = torch.promote_types(dtype, other)
    return dtype


def retarget_calls(program, sources, target) -> None:
    """Every call of an op in `sources` calls `target` instead (the node and its name stay)."""
    for node in program.graph.nodes:
        if node.op == "call_function" and node.target in sources:
            node.target = target
