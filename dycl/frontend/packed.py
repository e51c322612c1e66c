"""Packed sequences whose lengths are runtime ints: `pack_padded_sequence(x, lengths)` with
`lengths` a list argument, `.tolist()` values or a tensor.

A packed batch has as many rows as the lengths add up to, a size no export can trace. So
a packed value (`V.Packed`) is kept as what it is made from: the padded tensor and the
lengths. What reads it computes on the padded batch, with static shapes:
- an RNN module (`nn.LSTM`, `nn.GRU`, `nn.RNN`; layers, directions, projections) steps
  through the padded time steps with its own weights, layer by layer and direction by
  direction, and a sequence's state changes only at its own steps (`torch.where(t <
  length, new, old)`): the outputs at every position in the packed batch and the final
  states are the packed kernel's;
- `pad_packed_sequence` masks the positions past each length with the padding value, then
  the host cuts the time dim at the longest length (a runtime size);
- `.data` (`p[0]`) gathers the positions in the packed order (time-major, longest first)
  into a `T * B`-row tensor whose first `sum(lengths)` rows the host keeps;
- `.batch_sizes` (`p[1]`) counts, per step, the lengths past it.
The checks `pack_padded_sequence` makes (lengths positive, sorted if `enforce_sorted`) raise
at run time, where eager raises; so does a length past the padded steps (eager reads past
the tensor there).

With `enforce_sorted=False` eager sorts the batch by length (`torch.sort`, which orders
equal lengths its own way): the RNN's states and `pad_packed_sequence` undo the sort, so
they are compiled; the packed rows and the sort indices, which show that order, are refused.

The functions below the handlers run inside captured runs (the frontend writes calls of
them); the handlers take the compiler as their context, like host_builtins'.
"""

from __future__ import annotations

import ast
import inspect

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils import rnn as rnn_utils

from dycl.frontend import callees, desugar, lists
from dycl.frontend import values as V
from dycl.frontend.desugar import source_text
from dycl.frontend.nodes import parsed

PACK, PAD = rnn_utils.pack_padded_sequence, rnn_utils.pad_packed_sequence
_PACKED_ONLY = (
    "a PackedSequence whose lengths are runtime values is read by an RNN module "
    "(`nn.LSTM`, `nn.GRU`, `nn.RNN`), by `pad_packed_sequence`, or as `.data` (`p[0]`) and "
    "`.batch_sizes` (`p[1]`)"
)


PACKING = {"pack_padded_sequence", "pack_sequence"}


def called_name(call: ast.Call) -> str | None:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None


def _describe(node: ast.AST) -> str:
    return f"`{source_text(node)}`"


def packs_runtime_lengths(c, call: ast.Call, func, env) -> bool:
    """Whether `call` is a `pack_padded_sequence` whose lengths are not known here."""
    if func is not PACK:
        return False
    node = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "lengths"), None)
    return node is not None and c._try_constant(node, env, quiet=True) is V.MISSING


def call(c, expr: ast.Call, env, func, args: list) -> V.EnvValue | None:
    """The value of a call that makes or reads a packed value (None: not such a call)."""
    if func is PACK and packs_runtime_lengths(c, expr, func, env):
        return _pack(c, expr, env, args)
    packed_args = [a for a in args if isinstance(a, V.Packed)]
    if not packed_args:
        return None
    if func is PAD:
        return _pad(c, expr, env, args)
    if func is desugar.HELPERS[desugar.DATA] and len(args) == 1:
        return read(c, expr, args[0], "data")
    if func in (desugar.HELPERS[desugar.CPU], desugar.HELPERS[desugar.CUDA]) and len(args) == 1 and not expr.keywords:
        return args[0]  # (a device move: the host has one device)
    if func is desugar.HELPERS[desugar.TO] and len(args) == 2 and not expr.keywords and isinstance(args[1], V.Const) and desugar.is_device(args[1].value):
        return args[0]
    if isinstance(func, _RNNS) and isinstance(args[0], V.Packed):
        if not callees.forward_is(func, (rnn.forward for rnn in _RNNS)):
            raise c.error(expr, f"{_describe(expr)} calls an RNN module with a forward or hooks of its own on a packed "
                          "sequence whose lengths are runtime values (DyCL steps through an RNN with its weights)",
                          "give the packed sequence to a plain `nn.LSTM`, `nn.GRU` or `nn.RNN` (a subclass that keeps "
                          "their forward is one)")
        return _rnn(c, expr, env, func, args)
    raise refuse(c, expr, f"passes to {_describe(expr.func)}")


_RNNS = (nn.LSTM, nn.GRU, nn.RNN)


def _bind(c, expr: ast.Call, env, func, args: list) -> dict:
    """The call's arguments by parameter name: the positional ones computed already, the
    keyword ones computed here (Python computes them all before the call)."""
    if any(keyword.arg is None for keyword in expr.keywords):
        raise c.error(expr, f"{_describe(expr)} with `**` arguments", "name each argument")
    keywords = {keyword.arg: c.expression(keyword.value, env) for keyword in expr.keywords}
    signature = inspect.signature(func)
    try:
        bound = signature.bind(*args, **keywords).arguments
    except TypeError as error:
        raise c.error(expr, f"{_describe(expr)}: TypeError: {error}") from None
    return {name: bound.get(name, V.Const(p.default)) for name, p in signature.parameters.items()}


def _constant(c, expr, value: V.EnvValue, name: str):
    if not isinstance(value, V.Const):
        raise c.error(expr, f"{_describe(expr)} with `{name}` known only at run time", "give it a value known when the model is imported")
    return value.value


def _pack(c, expr: ast.Call, env, args: list) -> V.Packed:
    bound = _bind(c, expr, env, PACK, args)
    padded, lengths = bound["input"], bound["lengths"]
    batch_first = bool(_constant(c, expr, bound["batch_first"], "batch_first"))
    in_order = bool(_constant(c, expr, bound["enforce_sorted"], "enforce_sorted"))
    if not (isinstance(padded, V.Dyn) and V.is_tensor_type(padded.type) and padded.type.shape is not None and len(padded.type.shape) >= 2):
        raise c.error(expr, f"{_describe(expr)} packs {V.kind_of(padded)}, not a padded tensor of two or more dims")
    steps, batch = padded.type.shape[:2] if not batch_first else padded.type.shape[1::-1]
    if steps is None or batch is None:
        raise c.error(expr, f"{_describe(expr)} packs a tensor whose batch or time size is known only at run time",
                      "pad the batch to a size known when the model is imported")
    if isinstance(lengths, V.Dyn) and V.is_tensor_type(lengths.type):
        # (eager reads a lengths tensor's values on the CPU as Python ints: so does the host)
        lengths = c.written_expression("__lengths.tolist()", expr, {"__lengths": lengths})
    items = lists.items_of(lengths)
    if items is None or any(not (isinstance(i, V.Const) and type(i.value) is int or isinstance(i, V.Dyn) and i.type == V.INT) for i in items):
        raise c.error(expr, f"{_describe(expr)} with lengths that are {V.kind_of(lengths)}, not a list of ints",
                      "pass the lengths as a list of ints or a 1-D int64 tensor")
    if len(items) != batch:
        raise c.error(expr, f"{_describe(expr)}: RuntimeError: Expected `len(lengths)` to be equal to batch_size, "
                      f"but got {len(items)} (batch_size={batch})")
    as_tensors = c._scalars_as_tensors(V.Tup(tuple(items), "list"), True, {})
    lengths_tensor = c.written_expression("__dycl_lengths_tensor(__lengths)", expr, {"__lengths": as_tensors})
    checks = c.written_expression(f"__dycl_check_lengths(__lengths, {steps}, {in_order})", expr, {"__lengths": lengths_tensor})
    messages = (
        "RuntimeError: Length of all samples has to be greater than 0, but found an element in 'lengths' that is <= 0",
        f"a length is larger than the {steps} steps of the padded input (eager reads past the tensor)",
        "RuntimeError: `lengths` array must be sorted in decreasing order when `enforce_sorted` is True",
    )
    for check, message in zip(checks.items, messages[: 3 if in_order else 2]):
        c.runtime_check(check, expr, f"{_describe(expr)}: {message}")
    return V.Packed(padded, tuple(items), lengths_tensor, batch_first, in_order)


def _rnn(c, expr: ast.Call, env, module: nn.RNNBase, args: list) -> V.Tup:
    bound = _bind(c, expr, env, module.forward, args)
    packed, state = bound["input"], bound.get("hx", V.Const(None))
    out, state = c.written_expression(
        f"__dycl_rnn_steps(__rnn, __padded, __lengths, __state, {packed.batch_first})", expr,
        {"__rnn": V.Const(module), "__padded": packed.padded, "__lengths": packed.lengths_tensor, "__state": state},
    ).items
    return V.Tup((V.Packed(out, packed.lengths, packed.lengths_tensor, packed.batch_first, packed.in_order), state), "tuple")


def _pad(c, expr: ast.Call, env, args: list) -> V.Tup:
    bound = _bind(c, expr, env, PAD, args)
    packed = bound["sequence"]
    if not isinstance(packed, V.Packed):
        raise c.error(expr, f"{_describe(expr)} pads {V.kind_of(packed)}, not a packed sequence")
    batch_first = bool(_constant(c, expr, bound["batch_first"], "batch_first"))
    value = _constant(c, expr, bound["padding_value"], "padding_value")
    total = _constant(c, expr, bound["total_length"], "total_length")
    longest = _longest(c, expr, packed)
    if total is not None:
        fits = c.expression(parsed(f"__longest <= {int(total)}", expr, mode="eval"), {"__longest": longest})
        c.runtime_check(fits, expr, f"{_describe(expr)}: ValueError: Expected total_length to be at least the length "
                        f"of the longest sequence in input, but got total_length={total}")
    padded, lengths = c.written_expression(
        f"__dycl_padded(__padded, __lengths, {packed.batch_first}, {batch_first}, {float(value)!r}, {total!r})", expr,
        {"__padded": packed.padded, "__lengths": packed.lengths_tensor},
    ).items
    if total is None:
        cut = "__padded[:, :__longest]" if batch_first else "__padded[:__longest]"
        padded = c.expression(parsed(cut, expr, mode="eval"), {"__padded": padded, "__longest": longest})
    return V.Tup((padded, lengths), "tuple")


def read(c, node: ast.AST, packed: V.Packed, field: str | int) -> V.EnvValue:
    """`p.data`, `p.batch_sizes`, `p.sorted_indices`, `p.unsorted_indices` (or `p[k]`)."""
    fields = ("data", "batch_sizes", "sorted_indices", "unsorted_indices")
    name = fields[field] if isinstance(field, int) and -len(fields) <= field < len(fields) else field
    if name not in fields:
        raise refuse(c, node, f"reads `{name}` of")
    steps = packed.padded.type.shape[1 if packed.batch_first else 0]
    if name == "batch_sizes":
        sizes = c.written_expression(f"__dycl_batch_sizes(__lengths, {steps})", node, {"__lengths": packed.lengths_tensor})
        return c.expression(parsed("__sizes[:__longest]", node, mode="eval"), {"__sizes": sizes, "__longest": _longest(c, node, packed)})
    if not packed.in_order:
        raise c.error(
            node, f"{_describe(node)} reads the order `pack_padded_sequence(..., enforce_sorted=False)` sorted the "
            "batch in, which `torch.sort` picks for equal lengths",
            "read the sequences with `pad_packed_sequence` (in batch order), or sort the batch by length "
            "first and pass `enforce_sorted=True`",
        )
    if name != "data":
        return V.Const(None)
    rows = c.written_expression(f"__dycl_packed_rows(__padded, __lengths, {packed.batch_first})", node,
                                {"__padded": packed.padded, "__lengths": packed.lengths_tensor})
    count = c.expression(parsed("sum(__lengths)", node, mode="eval"), {"__lengths": V.Tup(packed.lengths, "list")})
    return c.expression(parsed("__rows[:__count]", node, mode="eval"), {"__rows": rows, "__count": count})


def _longest(c, node, packed: V.Packed) -> V.EnvValue:
    if packed.in_order:
        return packed.lengths[0]
    return c.expression(parsed("max(__lengths)", node, mode="eval"), {"__lengths": V.Tup(packed.lengths, "list")})


def refuse(c, node: ast.AST, what: str):
    """A packed value used where only its readers may use it."""
    return c.error(
        node, f"{_describe(node)} {what} a PackedSequence whose lengths are runtime values",
        f"{_PACKED_ONLY}: use its fields (`p.data`, `p.batch_sizes`) or `pad_packed_sequence(p)` there instead",
    )


# ----- inside captured runs -----------------------------------------------------------------


def _lengths_tensor(lengths: list) -> torch.Tensor:
    return torch.stack([n.reshape(()) if isinstance(n, torch.Tensor) else torch.tensor(n) for n in lengths]).to(torch.int64)


def _check_lengths(lengths: torch.Tensor, steps: int, in_order: bool) -> tuple:
    """Whether the lengths are positive, at most `steps`, and (`in_order`) not increasing."""
    ordered = (lengths[:-1] >= lengths[1:]).all() if in_order else torch.tensor(True)
    return (lengths > 0).all(), (lengths <= steps).all(), ordered


def _valid(lengths: torch.Tensor, steps: int) -> torch.Tensor:
    """[steps, batch]: whether step t of sequence b is in the packed batch."""
    return lengths.view(1, -1) > torch.arange(steps).view(-1, 1)


def _rnn_steps(rnn: nn.RNNBase, padded: torch.Tensor, lengths: torch.Tensor, state, batch_first: bool):
    """`rnn` on the packed batch, layer by layer and direction by direction: its outputs at
    every position (batch-first as `padded` is; those past a length are never read) and its
    final states. A sequence's state changes only at its own steps: forward, it stays what
    its last step made it; backward, it starts from the initial state at its last step."""
    directions = 2 if rnn.bidirectional else 1
    layer_input = padded.transpose(0, 1) if batch_first else padded  # (time-major)
    steps, batch = layer_input.shape[0], layer_input.shape[1]
    valid = _valid(lengths, steps).unsqueeze(2)
    is_lstm = isinstance(rnn, nn.LSTM)
    if state is None:
        zeros = layer_input.new_zeros(rnn.num_layers * directions, batch, rnn.proj_size or rnn.hidden_size)
        state = (zeros, layer_input.new_zeros(rnn.num_layers * directions, batch, rnn.hidden_size)) if is_lstm else zeros
    finals = []
    for layer in range(rnn.num_layers):
        outputs = []
        for direction in range(directions):
            k = layer * directions + direction
            carried = (state[0][k], state[1][k]) if is_lstm else state[k]
            suffix = f"l{layer}" + ("_reverse" if direction else "")
            step_outputs = [None] * steps
            for t in (reversed(range(steps)) if direction else range(steps)):
                new = _cell(rnn, suffix, layer_input[t], carried)
                keep = valid[t]
                carried = tuple(torch.where(keep, n, c) for n, c in zip(new, carried)) if is_lstm else torch.where(keep, new, carried)
                step_outputs[t] = new[0] if is_lstm else new
            outputs.append(torch.stack(step_outputs))
            finals.append(carried)
        layer_input = torch.cat(outputs, 2) if directions == 2 else outputs[0]
    out = layer_input.transpose(0, 1) if batch_first else layer_input
    if is_lstm:
        return out, (torch.stack([h for h, _ in finals]), torch.stack([c for _, c in finals]))
    return out, torch.stack(finals)


def _cell(rnn: nn.RNNBase, suffix: str, x: torch.Tensor, state):
    """One step of one layer and direction of `rnn`, with its weights `*_{suffix}`: the new
    state ((h, c) for an LSTM)."""
    w_ih, w_hh = getattr(rnn, f"weight_ih_{suffix}"), getattr(rnn, f"weight_hh_{suffix}")
    b_ih, b_hh = (getattr(rnn, f"bias_ih_{suffix}"), getattr(rnn, f"bias_hh_{suffix}")) if rnn.bias else (None, None)
    if isinstance(rnn, nn.LSTM):
        h, c = state
        i, f, g, o = (F.linear(x, w_ih, b_ih) + F.linear(h, w_hh, b_hh)).chunk(4, 1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        return (F.linear(h, getattr(rnn, f"weight_hr_{suffix}")) if rnn.proj_size else h), c
    if isinstance(rnn, nn.GRU):
        i_r, i_z, i_n = F.linear(x, w_ih, b_ih).chunk(3, 1)
        h_r, h_z, h_n = F.linear(state, w_hh, b_hh).chunk(3, 1)
        r, z = torch.sigmoid(i_r + h_r), torch.sigmoid(i_z + h_z)
        n = torch.tanh(i_n + r * h_n)
        return (1 - z) * n + z * state
    pre = F.linear(x, w_ih, b_ih) + F.linear(state, w_hh, b_hh)
    return torch.tanh(pre) if rnn.nonlinearity == "tanh" else torch.relu(pre)


def _packed_rows(padded: torch.Tensor, lengths: torch.Tensor, batch_first: bool) -> torch.Tensor:
    """Every position of `padded` as a row, those in the packed batch first, in its order:
    time-major, and at step t the first `batch_sizes[t]` sequences (the lengths do not
    increase). The rows past `sum(lengths)` are any others."""
    time_major = padded.transpose(0, 1) if batch_first else padded
    steps, batch = time_major.shape[0], time_major.shape[1]
    sizes = _valid(lengths, steps).sum(1)
    ends = torch.minimum(lengths.view(1, -1), torch.arange(1, steps + 1).view(-1, 1)).sum(1)  # (sizes' running sum)
    starts = ends - sizes
    row = torch.arange(steps * batch)
    step = (row.view(-1, 1) >= ends.view(1, -1)).sum(1).clamp(max=steps - 1)
    index = (step * batch + row - starts[step]).clamp(0, steps * batch - 1)
    return time_major.reshape(steps * batch, *time_major.shape[2:]).index_select(0, index)


def _batch_sizes(lengths: torch.Tensor, steps: int) -> torch.Tensor:
    return _valid(lengths, steps).sum(1)


def _padded(padded: torch.Tensor, lengths: torch.Tensor, batch_first: bool, to_batch_first: bool, value: float, total: int | None):
    """`pad_packed_sequence`'s tensor before the cut at the longest length, and its lengths."""
    steps = padded.shape[1 if batch_first else 0]
    valid = _valid(lengths, steps)
    valid = valid.t() if batch_first else valid
    out = torch.where(valid.view(*valid.shape, *[1] * (padded.dim() - 2)), padded, torch.tensor(value, dtype=padded.dtype))
    if batch_first != to_batch_first:
        out = out.transpose(0, 1)
    if total is not None:
        time_dim = 1 if to_batch_first else 0
        if total <= steps:
            out = out.narrow(time_dim, 0, total)
        else:
            shape = list(out.shape)
            shape[time_dim] = total - steps
            out = torch.cat([out, out.new_full(shape, value)], dim=time_dim)
    return out, lengths.clone()


RUN_HELPERS = {
    "__dycl_lengths_tensor": _lengths_tensor,
    "__dycl_check_lengths": _check_lengths,
    "__dycl_rnn_steps": _rnn_steps,
    "__dycl_packed_rows": _packed_rows,
    "__dycl_batch_sizes": _batch_sizes,
    "__dycl_padded": _padded,
}
