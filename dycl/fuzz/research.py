"""Research-code constructs for generated programs (issue 13, item 3): the Python that
published dynamic networks are written in, which the frontend accepts.

`Researcher` writes `Research` statements (program.py) for `dycl.fuzz.generate`, tagged with
their form (`FORMS`):

- inference no-ops: `x.data`, `x.detach()`, `x.cpu()`, `x.to(x.device)`, `Variable(x)`, and
  `with torch.no_grad():` around generated statements (`With`; the generator also wraps
  statements it wrote itself);
- numpy on tensors and on lists of 0-d tensors: `confs.append(torch.max(F.softmax(y, 1)))`,
  `k = np.argmax(confs)` indexing a list of exits, `np.max(p.detach().cpu().numpy())` in a
  condition, `float(np.mean(confs))`;
- list surgery with constant positions, on a local list of tensors or on forward's `outs`:
  `del l[-1]`, `l.pop()`, `t = l.pop(0)`, `l[:-1]`, `l.insert(0, t)`, `l.extend([a, b])`,
  `[t] + l` (on `outs` an append comes first, so that `outs` is never empty);
- a variable that starts as None (`logits = None`; a loop that assigns it, then may break);
- a constant-trip loop whose carry changes structure: an `nn.LSTMCell` (state None, then a
  tuple) or `nn.GRUCell` (None, then a tensor) called with `state` None on the first step;
- comprehensions and generator expressions over a ModuleList (`[head(s) for head in
  self.heads]`), `sum([c > t for c in scores])`, `any(...)`, `all(...)`,
  `max(range(n), key=lambda i: scores[i])`;
- runtime conditional expressions (`m = 1 if g.item() > t else 0`) and `and`/`or` conditions;
- a runtime bool in tensor math (`b = bool(g > t)`, then `x * b`, `b & (x > 0)`);
- a list of Python scalars grown in a loop that may `break` (`toks.append(int(s.argmax()))`,
  maybe under a condition), then `len(toks)`, `toks[-1]`, `toks.pop()`;
- a loop whose carry an inner loop (that may `break`) defines: `acc = x * 0.5`, the inner
  loop changes `acc`, then `x = acc`;
- a module of a ModuleList picked by a runtime index: `k = int(s[0, :n].argmax())` (or
  `np.argmax(...)`, or from the end with a negative `k`), then `self.heads[k](s)`;
- runtime trip counts: `for i in range(n)` with `n = int(s[0, :3].argmax()) + 1` (maybe a
  `break`), `for t in toks` over a runtime list of ints, `for v in s[0].detach().numpy()`
  (or over `np.argsort(...)`, stable or numpy's default sort),
  `while (x.abs() > c).any():` shrinking x; a list of bools stored into (`flags[b] = True`
  under a runtime condition), then `sum(flags)`;
- `hits = np.where(mask)[0]`, then `len(hits)`, `hits[0]` or `for h in hits`;
- a store through a view taken before a loop that may break (`v = hist.view(-1)`, then
  `v[i] = s.mean()` each step), and a view read after its base changed in a branch;
- 0-d tensors appended by a constant-trip loop that may break (`toks.append(s.argmax())`),
  then `ids = np.array(toks)`, `np.where(ids == 0)[0]`, `torch.stack(toks)`;
- a variable None on some paths (`aux = None`, assigned under a condition), then
  `if aux is not None:`, `if aux is None: ... else: ...`, `1.5 if aux is None else 0.5`;
- a second forward argument `lengths`, a list (or tuple) of Python ints: `enumerate` over it,
  its items compared in conditions, `len(lengths)` (forward only);
- module attributes assigned in forward or a helper, then read there (variables of the
  call): `self.mem = torch.tanh(s)` read back, a per-call list `self.probs = []` filled by
  a ModuleList, a counter `self.n = 0` incremented under a runtime condition;
- state that outlives the call, in a few programs, anywhere in forward (also in an arm no
  input takes): `self.saved.append(v)` (a list forward only appends to), a call counter
  `self.steps += 1`, or a None-started running value (`if self.ema is None: self.ema =
  torch.zeros(())`, then `self.ema = self.ema * 0.5 + s.detach().mean()`); the oracle runs
  the inputs as one sequence of calls and compares the state after each call; (also a tuple
  `self.pair`, or `self.hs` and `self.cs` set together; zeros spelled `Variable(...)`,
  `x.data.new(...).zero_()` or `fill_`, and `.data` for `.detach()`);
- sizes that depend on the data: `nonzero` and mask gathers, stores back, a loop over the
  live rows until none is left (masks also `.byte()`, buffers `rows.data.new(...).zero_()`,
  `Variable(...)`, `fill_`), `torch.unique` / `unique_consecutive` / `repeat_interleave`;
- the sparse mixture of experts as published (`sparse_dispatch`): top-k gates scattered
  into a (3, E) tensor, a `SparseDispatcher` (a plain object) built from them, `dispatch`
  (split by counts from `.tolist()`), the experts on 0..3 rows each, `combine` (`index_add`);
- sizes that runtime ints give: `rows = torch.cat([...])[:k]` with `k` counted from
  `lengths` (`sum([l > t for l in lengths])`) or from tensor data (`int(...argmax())`), math
  on those 0..3 rows, `buf[:k] = v` into a tensor, and a batch that shrinks step by step
  (`h = torch.tanh(lin(h[:bt]))`, `acc[:bt] = acc[:bt] + h`);
- packed sequences with lengths from `lengths` (`lens = [min(l + 1, 4) for l in lengths]`
  with `enforce_sorted=False`, or made non-increasing by a running `min`): an `nn.GRU`,
  `nn.LSTM` or `nn.RNN` (stacked, bidirectional) on `pack_padded_sequence(seq, lens)`, then
  its final state, `pad_packed_sequence(out)`, `out.data` or `out.batch_sizes` (forward only).
- kinds that change around a loop and aliases made on one path (after `data_dependent_size`
  and what follows it, from a stream of their own): a live-rows `while` (or `for` that may `break`) whose mask
  enters as `.byte()` and comes back bool, then `run.sum()` and `~run`; `c = h` on one path
  and two tensors on the other, then `h[idx], c[idx] = ...` and `h += 0.5`.

Rules that keep every program valid: statements keep the shape of `x` (a stage's summary
`s` is (1, W): `x` itself for vectors, `x.mean((2, 3))` for images; results of shape (1, W)
are folded back into `x`, broadcast over the image for images), lists are never popped when
they may be empty, loops have constant trip counts, and thresholds of the conditions written
here take slots after every other (numbered by the generator at the end). Statements that read
forward's `outs`, `count` or `lengths` or keep state across calls appear in forward only.

The researcher draws from its own random stream and names its modules `r<k>`: with research
off the generator writes exactly the programs it wrote before (`generate(seed, research=False)`).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable

from dycl.fuzz.program import BoolOp, Break, Cond, CondLine, For, If, Research, Stmt, With

# Every form (`Research.form`, `CondLine.form`; `With` is "no_grad"); tests/fuzz/test_generator.py
# checks that each appears in the first 300 seeds.
FORMS = (
    # inference no-ops
    "data", "detach", "cpu", "to_device", "variable", "no_grad",
    # numpy on tensors and lists of 0-d tensors
    "np_argmax_exits", "np_max_cond", "np_mean_confs",
    # list surgery with constant positions
    "del_last", "pop_last", "pop_first", "slice_drop_last", "insert_front", "extend", "prepend_concat",
    # None before a loop; constant-trip loops whose carry changes structure
    "none_start", "lstm_cell", "gru_cell",
    # comprehensions and generator expressions
    "head_comprehension", "sum_comprehension", "any_genexp", "all_genexp", "max_key",
    # runtime conditional expressions, and/or, a runtime bool in tensor math
    "cond_expr", "and_or", "bool_math",
    # a list of Python ints/floats/bools grown in a loop that may break
    "scalar_list",
    # a loop whose carry an inner loop that may break defines
    "nested_carry",
    # a module of a ModuleList picked by a runtime index
    "module_pick",
    # runtime trip counts: range of a runtime int, a loop over a runtime list or array,
    # a while on a tensor condition; items stored into a Python list
    "runtime_range", "iterate_list", "iterate_array", "while_tensor", "list_store",
    # the index array of np.where(mask) used as numpy and a list agree on
    "np_where_hits",
    # a store through a view taken before a loop or branch; a view read after its base changed
    "view_store", "view_of_changed",
    # an `assert` that holds on every input (dycl.fuzz.generate draws it from its own stream)
    "assert",
    # sizes that change in a runtime loop, tested each iteration: a window crop, a queue, a
    # parity, a while on the length (dycl.fuzz.generate draws it from its own stream)
    "size_window",
    # an exception of the program's own raised in a loop (or a nested function) and caught
    # around it, `else:`/`finally:`, a lambda bound to a name, `raise ValueError` on paths no
    # input takes (dycl.fuzz.generate draws it from its own stream)
    "exception",
    # 0-d tensors appended by a constant-trip loop (that may break), then numpy on the list
    "decode_array",
    # a variable None on some paths and a tensor on others, tested with `is None`
    "optional_aux",
    # one list held in several places (items of a list, a tuple, an alias, `+=`), changed
    # through one of them under a runtime condition
    "list_alias",
    # a dict of runtime values: filled item by item, aliased, updated or iterated, changed
    # under a runtime condition
    "dict_state",
    # a list of Python ints as forward's second argument
    "lengths_enumerate", "lengths_compare", "lengths_len",
    # module attributes assigned, then read, in the same call
    "attr_state", "attr_list", "attr_counter",
    # state that outlives the call: a list appended to, a counter, a None-started value
    "cross_call_state",
    # sizes that runtime ints give: `x[:k]`, `buf[:k] = v`, a batch that shrinks per step
    "runtime_slice",
    # an RNN module on pack_padded_sequence with runtime lengths
    "packed_rnn",
    # SDN's block: without an exit, `self.forward = self.only_forward` on the instance
    # (`x, o, y = block(x)`); inlined (its layers read by index) or captured whole
    "instance_forward",
    # a tensor predicate in an `if`: of metadata (`x.dim() == 2`, `torch.is_tensor(x)`, folded
    # at import) or of values (`torch.equal`, `torch.allclose`, `x.is_nonzero()`, `torch.any`)
    "tensor_predicate",
    # sizes that depend on the data: nonzero and mask gathers, stores back, a loop over the
    # live rows that stops when none is left
    "data_dependent_size",
    # gates kept in a plain list besides their ModuleList, what each saved on itself read back
    # through the list (dycl.fuzz.research draws it from its own stream, after `attr_list`)
    "gate_list",
    # sets of runtime ints, `sorted`, `index(v, start)`, `a[::-1]` of a numpy value (its own
    # stream, after `data_dependent_size`)
    "set_indices",
    # the sparse MoE's `SparseDispatcher`, a helper object built in forward (drawn where
    # `data_dependent_size` would be, from a stream of its own)
    "sparse_dispatch",
    # kinds that change around a loop (a byte mask that comes back bool), an alias made on one
    # path and written through (`c = h` on one path, `h[idx], c[idx] = ...` after the join)
    "kind_change", "one_path_alias",
)

PROGRAM_PROBABILITY = 0.6  # a program uses research constructs at all
GAP_PROBABILITY = 0.12  # a construct before/after each statement of a block
WITH_PROBABILITY = 0.1  # a block wraps one or two of its statements in `with torch.no_grad():`
LENGTHS_PROBABILITY = 0.3  # a research program takes `lengths` (forward(self, x, lengths))
TUPLE_PROBABILITY = 0.25  # ... passed as a tuple rather than a list
LENGTHS_ITEMS = (2, 3, 4)  # how many ints `lengths` holds (values 0..4: oracle.candidate_inputs)
STATE_PROBABILITY = 0.08  # a research program keeps state across calls (`cross_call_state`)
STATE_MODULES = {"saved": "[]", "steps": "0", "ema": "None", "pair": "None", "hs": "None", "cs": "None"}  # the attributes it keeps
MAX_CONDITIONS = 3  # threshold slots of this module's conditions, per program
HEADS = (2, 3, 4)  # heads in a ModuleList

IMPORTS = ["import random", "import numpy as np", "from torch.autograd import Variable",
           "from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence"]

WEIGHTS = {
    "data": 0.4, "detach": 0.4, "cpu": 0.3, "to_device": 0.3, "variable": 0.4, "no_grad": 0.5,
    "np_argmax_exits": 1.0, "np_max_cond": 0.8, "np_mean_confs": 0.8,
    "del_last": 0.5, "pop_last": 0.4, "pop_first": 0.4, "slice_drop_last": 0.4, "insert_front": 0.4,
    "extend": 0.4, "prepend_concat": 0.4,
    "none_start": 0.8, "lstm_cell": 0.7, "gru_cell": 0.5,
    "head_comprehension": 0.5, "sum_comprehension": 0.6, "any_genexp": 0.5, "all_genexp": 0.5, "max_key": 0.6,
    "cond_expr": 0.8, "and_or": 0.8,
    "lengths_enumerate": 1.2, "lengths_compare": 0.8, "lengths_len": 0.6,
    "attr_state": 0.7, "attr_list": 0.5, "attr_counter": 0.5,
    "bool_math": 0.5, "scalar_list": 0.7, "nested_carry": 0.5, "module_pick": 0.8,
    "runtime_range": 0.6, "iterate_list": 0.5, "iterate_array": 0.5, "while_tensor": 0.5, "list_store": 0.6, "np_where_hits": 0.6,
    "view_store": 0.6, "view_of_changed": 0.5, "decode_array": 0.6, "optional_aux": 0.6, "list_alias": 0.8,
    "dict_state": 0.5, "runtime_slice": 0.6, "packed_rnn": 1.5, "data_dependent_size": 2.0,
}
# `instance_forward` follows a construct with this probability, drawn from a stream of its own
# (`Researcher.blocks`): the programs of every seed keep the constructs they had before it.
INSTANCE_FORWARD_PROBABILITY = 0.05
# `data_dependent_size` is `torch.unique` / `repeat_interleave`, and `cross_call_state` a tuple
# or paired state, with this probability, drawn from `Researcher.extras`.
EXTRA_PROBABILITY = 0.35
# Older code's spellings of those two forms, drawn from `Researcher.spellings` (only the text of
# a construct changes, never which construct a seed writes): a `.byte()` mask (indexed as it is,
# or through `.bool()`), a buffer made by `Variable(...)`, `rows.data.new(...).zero_()` or
# `fill_`, and state that starts as such a buffer and is fed `.data`.
SPELLING_PROBABILITY = 0.4
# `tensor_predicate` draws from a stream of its own (`Researcher.predicates`), so that the
# other forms' programs stay what they were: a gap gets one with this probability, and at most
# PREDICATE_CONDITIONS of them a program compare a statistic (their threshold slots are extra).
PREDICATE_PROBABILITY = 0.04
# A tensor condition of a research program is a halting draw with this probability
# (PonderNet's `halt = torch.bernoulli(lambda_n)`), of a probability that is exactly 0 or 1,
# so that eager and compiled agree: the host draws it (docs/conventions.md, "Random ops").
DRAW_PROBABILITY = 0.1
DRAW_WRAP = "torch.bernoulli((@).float()).bool()"
# ... or, as often, a draw of Python's or numpy's below that 0 or 1 (stochastic depth's
# `random.random() < p`), which the compiled model draws at every call too
PYTHON_DRAW_WRAPS = ["random.random() < float(@)", "np.random.rand() < float(@)", "random.uniform(0, 1) < float(@)"]
PREDICATE_CONDITIONS = 1
# `data_dependent_size` is followed by the sparse MoE dispatch (`sparse_dispatch`) with this
# probability, drawn from `Researcher.dispatchers` (what every seed wrote before stays).
DISPATCH_PROBABILITY = 0.25
# `data_dependent_size`, where it would be its first kind, is followed by Python numbers from
# the rows (`.tolist()`, `.index(max(...))`, comprehensions decided at run time), drawn from
# `Researcher.numbers`.
NUMBERS_PROBABILITY = 0.35
# `attr_list` is followed by a gate list (`gate_list`), and `data_dependent_size` by index
# bookkeeping with sets (`set_indices`), with these probabilities, drawn from `Researcher.gates`
# and `Researcher.sets`.
GATE_LIST_PROBABILITY = 0.5
SETS_PROBABILITY = 0.35
# `data_dependent_size` is followed by a loop whose mask enters as a byte mask and comes back
# bool, or by an alias made on one path and written through (issue 34, item 7), with this
# probability, drawn from `Researcher.kinds` (last of all its followers, so that it changes
# none of theirs).
KINDS_PROBABILITY = 0.3
CONDITIONS = {  # threshold slots a form needs (forms with 0 here write none)
    "np_max_cond": 1, "sum_comprehension": 1, "any_genexp": 1, "all_genexp": 1, "cond_expr": 1, "and_or": 2,
    "attr_counter": 1, "bool_math": 1, "scalar_list": 1, "nested_carry": 1,
    "view_store": 1, "view_of_changed": 1, "decode_array": 1, "optional_aux": 1, "list_alias": 1,
    "dict_state": 1,
}
FORWARD_ONLY = ("lengths_enumerate", "lengths_compare", "lengths_len", "cross_call_state", "packed_rnn")
SURGERY = ("del_last", "pop_last", "pop_first", "slice_drop_last", "insert_front", "extend", "prepend_concat")
ACTIVATIONS = ["torch.relu({})", "torch.tanh({})", "torch.sigmoid({})", "F.gelu({})", "F.silu({})"]
# A predicate of values around a calibrated comparison `@` (a 0-d bool tensor): true exactly
# where the comparison is.
VALUE_PREDICATES = [
    "torch.any(@)", "torch.all(@)", "(@).is_nonzero()", "torch.is_nonzero(@)", "(@).any().item()",
    "torch.equal(@, torch.tensor(True))", "(@).equal(torch.ones((), dtype=torch.bool))",
    "(@).eq(torch.tensor(True)).all()", "torch.count_nonzero(@) > 0",
    "torch.allclose((@).float(), torch.ones(()))", "(@).double().allclose(torch.ones((), dtype=torch.float64), atol=0.5)",
    "torch.isclose((@).float(), torch.tensor(1.0)).all()", "torch.isfinite(torch.log((@).float())).all()",
]
# Predicates of metadata, known at import ({w}: the width; {rank}: 2 for vectors, 4 for images).
METADATA_PREDICATES = [
    "x.dim() == {rank}", "x.ndim > 2", "x.numel() > {w}", "torch.numel(x) == {w}", "len(x) == 1", "x.size(1) == {w}",
    "x.shape[-1] == {w}", "x.dtype == torch.float32", "x.is_floating_point()", "torch.is_floating_point(x)",
    "torch.is_tensor(x)", "isinstance(x, torch.Tensor)", "x.is_contiguous()", "x.is_complex()", "x.requires_grad",
    "x.is_cuda", "x.device.type == 'cpu'", "x.is_same_size(x * 2)",
]
NUMPY_STATISTICS = [
    "np.max(F.softmax({s}, -1).detach().cpu().numpy())",
    "np.max({s}.detach().cpu().numpy())",
    "np.mean({s}.data.cpu().numpy())",
    "np.min({s}.detach().numpy())",
]

# Module classes a form uses, written into the program's file before its own class
# (`Program.classes`): SDN's residual block, whose forward is replaced on the instance when it
# has no exit; its layers read by index (DyCL inlines the call) or by name (captured whole).
CLASSES = {
    "OnlyForwardBlock": """\
class OnlyForwardBlock(nn.Module):
    def __init__(self, layer, output):
        super(OnlyForwardBlock, self).__init__()
        self.layers = nn.ModuleList([layer, nn.Tanh()])
        self.output = output
        if output is None:
            self.forward = self.only_forward

    def forward(self, x):
        fwd = self.layers[1](self.layers[0](x))
        return fwd, 1, self.output(fwd)

    def only_forward(self, x):
        fwd = self.layers[1](self.layers[0](x))
        return fwd, 0, None
""",
    "SavedActionGate": """\
class SavedActionGate(nn.Module):
    def __init__(self, width):
        super(SavedActionGate, self).__init__()
        self.proj = nn.Linear(width, 1)

    def forward(self, s):
        prob = torch.sigmoid(self.proj(s))
        action = (prob > 0.5).float()
        self.saved_action = action
        self.saved_prob = prob
        return action
""",
    "OnlyForwardPlainBlock": """\
class OnlyForwardPlainBlock(nn.Module):
    def __init__(self, layer, output):
        super(OnlyForwardPlainBlock, self).__init__()
        self.layer = layer
        self.output = output
        if output is None:
            self.forward = self.only_forward

    def forward(self, x):
        fwd = torch.tanh(self.layer(x))
        return fwd, 1, self.output(fwd)

    def only_forward(self, x):
        return torch.tanh(self.layer(x)), 0, None
""",
}

# Plain classes and functions a form uses (`sparse_dispatch`, `list_alias`), written into the program's file as CLASSES are
# (kept apart from CLASSES, from which `instance_forward` draws its block).
HELPER_CLASSES = {
    "SparseDispatcher": """\
class SparseDispatcher(object):
    def __init__(self, num_experts, gates):
        self._gates = gates
        self._num_experts = num_experts
        sorted_experts, index_sorted_experts = torch.nonzero(gates).sort(0)
        _, self._expert_index = sorted_experts.split(1, dim=1)
        self._batch_index = torch.nonzero(gates)[index_sorted_experts[:, 1], 0]
        self._part_sizes = (gates > 0).sum(0).tolist()
        gates_exp = gates[self._batch_index.flatten()]
        self._nonzero_gates = torch.gather(gates_exp, 1, self._expert_index)

    def dispatch(self, inp):
        inp_exp = inp[self._batch_index].squeeze(1)
        return torch.split(inp_exp, self._part_sizes, dim=0)

    def combine(self, expert_out, multiply_by_gates=True):
        stitched = torch.cat(expert_out, 0)
        if multiply_by_gates:
            stitched = stitched.mul(self._nonzero_gates)
        zeros = torch.zeros(self._gates.size(0), expert_out[-1].size(1), requires_grad=True, device=stitched.device)
        combined = zeros.index_add(0, self._batch_index, stitched.float())
        return combined

    def expert_to_gates(self):
        return torch.split(self._nonzero_gates, self._part_sizes, dim=0)
""",
    # a plain helper reading a list whose length is known only at run time (`list_alias`)
    "fz_read_items": """\
def fz_read_items(items, scale=0.1):
    return items[-1] * (1.0 + scale * len(items))
""",
}


class Researcher:
    def __init__(self, rng: random.Random, width: int, register: Callable[[str, str], None],
                 statistics: Callable[[str], list[str]], summary: dict[str, str],
                 outputs: list[str]):
        self.rng, self.width, self.register = rng, width, register
        self.statistics, self.summary, self.outputs = statistics, summary, outputs
        self.names = 0
        self.modules = 0
        self.conds: list[Cond] = []  # threshold slots, numbered by the generator at the end
        self.predicates = random.Random(0)  # the tensor_predicate stream (the generator seeds it)
        self.predicate_conds = 0
        self.lengths = 0
        self.lengths_type = "list"
        self.saved = False
        self.classes: set[str] = set()  # of CLASSES, which the program's file must define
        # (seeded from the main stream's state without drawing from it)
        self.blocks = random.Random(f"instance_forward {rng.getstate()[1][:8]}")
        # the issue-28 spellings (unique / repeat_interleave, tuple and paired state) draw from
        # a stream of their own: every seed's other programs stay what they were
        self.extras = random.Random(f"issue28 {rng.getstate()[1][:8]}")
        self.spellings = random.Random(f"issue28 spellings {rng.getstate()[1][:8]}")
        self.sizes = random.Random(f"issue28 sizes {rng.getstate()[1][:8]}")
        self.block_count = 0
        # the issue-34 Python numbers (`python_numbers`) draw from a stream of their own too
        self.numbers = random.Random(f"issue34 numbers {rng.getstate()[1][:8]}")
        # the issue-34 gate lists and sets of ints draw from streams of their own too
        self.gates = random.Random(f"issue34 gates {rng.getstate()[1][:8]}")
        self.sets = random.Random(f"issue34 sets {rng.getstate()[1][:8]}")
        self.gate_lists = 0
        self.dispatchers = random.Random(f"issue34 dispatch {rng.getstate()[1][:8]}")  # (`sparse_dispatch`)
        # ... and so do the issue-34 kinds that change around a loop (`kind_changes`)
        self.kinds = random.Random(f"issue34 kinds {rng.getstate()[1][:8]}")

    # ----- names, modules, pieces --------------------------------------------------------

    def fresh(self, prefix: str) -> str:
        self.names += 1
        return f"{prefix}{self.names}"

    def module(self, ctor: str) -> str:
        name = f"r{self.modules}"
        self.modules += 1
        self.register(name, ctor)
        return f"self.{name}"

    def heads(self) -> tuple[str, int]:
        n = self.rng.choice(HEADS)
        w = self.width
        return self.module(f"nn.ModuleList([nn.Linear({w}, {w}) for _ in range({n})])"), n

    def fold(self, value: str, stage: str) -> str:
        """`value` (1, W) added to x's shape."""
        if stage == "vector":
            return value
        simple = value.replace("_", "a").replace(".", "a").isalnum() or value.endswith("]") and "(" not in value
        return f"{value}[:, :, None, None]" if simple else f"({value})[:, :, None, None]"

    def slots_used(self) -> int:
        """Threshold slots the forms of the research stream took (not tensor_predicate's)."""
        return len(self.conds) - self.predicate_conds

    def layer(self, stage: str, rng: random.Random | None = None) -> str:
        """`x = ...` keeping x's shape (a layer of this module's own)."""
        r, w = rng or self.rng, self.width
        act = r.choice(ACTIVATIONS)
        if stage == "image":
            conv = self.module(f"nn.Conv2d({w}, {w}, 3, padding=1)")
            return r.choice([f"x = {act.format(f'{conv}(x)')}", f"x = x + {act.format(f'{conv}(x)')}"])
        choice = r.randrange(3)
        if choice == 2:
            return f"x = {act.format('x')}"
        linear = self.module(f"nn.Linear({w}, {w})")
        return [f"x = {act.format(f'{linear}(x)')}", f"x = x + {act.format(f'{linear}(x)')}"][choice]

    def cond(self, stat: str, wrap: str = "", item: bool = True, form: str | None = None, rng: random.Random | None = None) -> Cond:
        r = rng or self.rng
        forms, weights = (["tensor", "item", "bool"], [5, 2, 1]) if item else (["tensor", "bool"], [5, 1])
        cond = Cond(stat=stat, index=-1, op=r.choice([">", "<"]), form=form or r.choices(forms, weights)[0],
                    via_attr=r.random() < 0.25, wrap=wrap)
        self.conds.append(cond)
        return cond

    def statistic(self, stage: str) -> tuple[str, bool]:
        """A statistic of x for a condition; whether `.item()` applies to it."""
        r = self.rng
        if r.random() < 0.4:
            return r.choice(NUMPY_STATISTICS).format(s=self.summary[stage]), True
        return r.choice(self.statistics(stage)).replace("{k}", str(r.randrange(self.width))), True

    def a_cond(self, stage: str) -> Cond:
        stat, item = self.statistic(stage)
        return self.cond(stat, item=item)

    # ----- statements --------------------------------------------------------------------

    def statements(self, stage: str, in_helper: bool, in_loop: bool = False) -> list[Stmt]:
        """A research construct (a few statements) for a block of forward or a helper."""
        r = self.rng
        kinds = dict(WEIGHTS)
        left = MAX_CONDITIONS - self.slots_used()
        for form, needed in CONDITIONS.items():
            if needed > left:
                kinds[form] = 0.0
        if in_helper or not self.lengths:
            for form in FORWARD_ONLY:
                kinds[form] = 0.0
        form = r.choices(list(kinds), [kinds.get(k, 0.0) for k in kinds])[0]
        stmts = self.form(form, stage, in_helper)
        if self.blocks.random() < INSTANCE_FORWARD_PROBABILITY:
            stmts += self.form("instance_forward", stage, in_helper)
        return stmts

    def tensor_predicate(self, stage: str) -> list[Stmt]:
        """`if <predicate>:` around layers (drawn from the predicate stream only): a predicate
        of values on a calibrated statistic, else one of metadata, whose `if` folds at import."""
        r, form = self.predicates, "tensor_predicate"
        orelse = [Research(self.layer(stage, r), form)] if r.random() < 0.5 else None
        if self.predicate_conds < PREDICATE_CONDITIONS and r.random() < 0.75:
            stat = r.choice(self.statistics(stage)).replace("{k}", str(r.randrange(self.width)))
            cond = self.cond(stat, wrap=r.choice(VALUE_PREDICATES), form="tensor", rng=r)
            self.predicate_conds += 1
            return [If([(cond, [Research(self.layer(stage, r), form)])], orelse)]
        predicate = r.choice(METADATA_PREDICATES).format(w=self.width, rank=2 if stage == "vector" else 4)
        arms = f"if {predicate}:\n    {self.layer(stage, r)}"
        if orelse:
            arms += f"\nelse:\n    {self.layer(stage, r)}"
        return [Research(arms, form)]

    def list_alias(self, stage: str, fold) -> list[Stmt]:
        """One list, several holders; a change through one under a runtime condition must show
        through all (`[[]] * 2`, `g = groups[k]`, `pair = (acc, c)`, `b = a; b += [...]`,
        `for g in groups`, `g = rows[0]` then `rows[0][1] = ...` and `g[1]`, or the same for a dict)."""
        r, s, form = self.rng, self.summary[stage], "list_alias"
        new_item = r.choice([f"torch.tanh({s})", f"{s} * 0.5", f"F.softmax({s}, -1)"])
        kind = r.randrange(6)
        if kind == 5:  # a store through the holder, read through another name of the inner list or dict
            rows, g = self.fresh("rows"), self.fresh("g")
            make, first, inner = r.choice([
                (f"[[{s} * 1.0, {s} * 0.5], [{s}]]", "0", "1"),
                (f"{{'a': {{'b': {s} * 1.0}}, 'c': {s}}}", "'a'", "'b'"),
            ])
            return [Research(f"{rows} = {make}\n{g} = {rows}[{first}]", form),
                    If([(self.a_cond(stage), [Research(self.layer(stage), form)])]),
                    Research(f"{rows}[{first}][{inner}] = {new_item}\nx = x + 0.1 * {fold(f'{g}[{inner}]')}", form)]
        if kind == 0:  # items of a list of lists, one of them possibly shared (`[[]] * m`)
            rows, i, m = self.fresh("rows"), self.fresh("i"), r.randint(2, 3)
            make = r.choice([f"[[] for _ in range({m})]", f"[[]] * {m}"])
            body = [Research(self.layer(stage), form), Research(f"{rows}[{i} % {m}].append({s} * 0.25)", form),
                    If([(self.a_cond(stage), [Research(f"{rows}[{r.randrange(m)}].append({new_item})", form)])])]
            use = f"x = x * (1.0 + 0.05 * sum(len(row) for row in {rows}))\nif len({rows}[0]) > 0:\n    x = x + 0.1 * {fold(f'{rows}[0][-1]')}"
            return [Research(f"{rows} = {make}", form), For(r.randint(1, 3), body, var=i), Research(use, form)]
        if kind == 1:  # an alias of an item, changed in a branch (after a tensor changed in place there)
            groups, g, k = self.fresh("groups"), self.fresh("g"), r.randrange(2)
            acc = self.fresh("acc") if r.random() < 0.5 else None
            made = f"{groups} = [[{s} * 1.0], [torch.tanh({s})]]\n{g} = {groups}[{k}]"
            changed = f"{acc}.mul_(0.5)\n" if acc else ""
            used = f" + 0.1 * {fold(acc)}" if acc else ""
            if r.random() < 0.5:  # read by a plain helper (`fz_read_items(groups[k], scale=0.2)`)
                self.classes.add("fz_read_items")
                read = f"x = x + 0.1 * {fold(f'fz_read_items({groups}[{k}], scale=0.2)')}{used}"
            else:
                read = f"x = x * (1.0 + 0.1 * len({groups}[{k}])) + 0.1 * {fold(f'{groups}[{k}][-1]')}{used}"
            return [Research(made + (f"\n{acc} = {s} * 1.0" if acc else ""), form),
                    If([(self.a_cond(stage), [Research(f"{changed}{g}.append({new_item})", form)])]),
                    Research(read, form)]
        if kind == 2:  # a list a tuple also holds
            acc, pair = self.fresh("acc"), self.fresh("pair")
            return [Research(f"{acc} = []\n{pair} = ({acc}, 0.5)", form),
                    If([(self.a_cond(stage), [Research(f"{pair}[0].append({new_item})", form)])]),
                    Research(f"{acc}.append({s} * 0.25)\nx = x * (1.0 + 0.1 * len({pair}[0])) + {pair}[1] * {fold(f'{acc}[0]')}", form)]
        if kind == 3:  # `b += [...]` extends the list `a` also names
            a, b = self.fresh("a"), self.fresh("b")
            body = [Research(self.layer(stage), form), Research(f"{b} += [{s} * 0.5]", form),
                    If([(self.a_cond(stage), [Research(f"{b} += [{new_item}]", form)])])]
            return [Research(f"{a} = []\n{b} = {a}", form), For(r.randint(1, 3), body),
                    Research(f"x = x * (1.0 + 0.05 * len({a})) + 0.1 * {fold(f'{a}[-1]')}", form)]
        groups, g = self.fresh("groups"), self.fresh("g")  # a `for` over lists, each changed in a branch
        return [Research(f"{groups} = [[{s} * 1.0], [{s} * 0.5]]", form),
                For(2, [If([(self.a_cond(stage), [Research(f"{g}.append({new_item})", form)])])], header=f"for {g} in {groups}:"),
                Research(f"x = x * (1.0 + 0.1 * len({groups}[0]) + 0.2 * len({groups}[1])) + 0.1 * {fold(f'{groups}[1][-1]')}", form)]

    def dict_state(self, stage: str, fold) -> list[Stmt]:
        """A dict of runtime values, keys known at import (`outs = {}; outs["a"] = ...`, an
        alias changed in a branch, `.update` and `.items()`, `del`), changed under a runtime
        condition; every path keeps the same keys."""
        r, s, form = self.rng, self.summary[stage], "dict_state"
        new_item = r.choice([f"torch.tanh({s})", f"{s} * 0.5", f"F.softmax({s}, -1)"])
        kind = r.randrange(4)
        if kind == 0:  # filled item by item, one item replaced in a branch
            outs = self.fresh("results")
            return [Research(f"{outs} = {{}}\n{outs}['early'] = {s} * 0.5\n{outs}['steps'] = 1", form),
                    If([(self.a_cond(stage), [Research(f"{outs}['early'] = {new_item}\n{outs}['steps'] = {outs}['steps'] + 1", form)])]),
                    Research(f"x = x * (1.0 + 0.1 * {outs}['steps']) + 0.1 * {fold(f'{outs}[{chr(39)}early{chr(39)}]')}", form)]
        if kind == 1:  # two names for one dict
            d, e = self.fresh("d"), self.fresh("e")
            return [Research(f"{d} = {{'h': {s} * 1.0, 'n': 0}}\n{e} = {d}", form),
                    If([(self.a_cond(stage), [Research(f"{e}['h'] = {new_item}\n{e}['n'] += 1", form)])]),
                    Research(f"x = x * (1.0 + 0.1 * {d}['n']) + 0.1 * {fold(f'{d}[{chr(39)}h{chr(39)}]')}", form)]
        if kind == 2:  # dict(...), .update in a branch, a loop over .items()
            feats, k, v = self.fresh("feats"), self.fresh("k"), self.fresh("v")
            return [Research(f"{feats} = dict(a=torch.tanh({s}), b={s} * 0.5)", form),
                    If([(self.a_cond(stage), [Research(f"{feats}.update(b={new_item})", form)])]),
                    Research(f"for {k}, {v} in {feats}.items():\n    x = x + 0.05 * {fold(v)}", form)]
        d = self.fresh("d")  # an item deleted and put back in a branch (the keys keep their order)
        return [Research(f"{d} = {{'a': {s} * 1.0, 'b': {new_item}}}", form),
                If([(self.a_cond(stage), [Research(f"del {d}['b']\n{d}['b'] = {s} * 2.0", form)])]),
                Research(f"x = x + 0.1 * {fold(f'({d}[{chr(39)}a{chr(39)}] + {d}[{chr(39)}b{chr(39)}])')}", form)]

    def runtime_slice(self, stage: str, fold, in_helper: bool) -> list[Stmt]:
        """Tensors of 0..3 rows, the count a runtime int: from `lengths` in forward, else from
        tensor data. The count never grows between steps, so every slice and store is valid."""
        r, s, w, form = self.rng, self.summary[stage], self.width, "runtime_slice"
        k = self.fresh("k")
        if self.lengths and not in_helper and r.random() < 0.6:
            count = lambda t: f"sum([l > {t} for l in lengths])"  # noqa: E731
        else:
            count = lambda t: f"int(F.softmax({s}, -1)[0, :4].argmax()) - {t}"  # noqa: E731
        stack = r.choice([f"torch.cat([{s}, {s} * 0.5, torch.tanh({s})])", f"torch.stack([{s}[0], {s}[0] * 0.5, torch.sigmoid({s}[0])])"])
        kind = r.randrange(3)
        if kind == 0:  # math on the first k rows
            rows, lin = self.fresh("rows"), self.module(f"nn.Linear({w}, {w})")
            math = r.choice([f"torch.tanh({lin}({rows}))", f"{rows} * 2.0 + 1.0", f"F.relu({lin}({rows})).squeeze(1)"])
            # (a reduction of the k rows: of none when k is 0, which has its own value)
            reduced = r.choice([f"{rows}.sum(0, keepdim=True)", f"({rows} > 0).all(0, keepdim=True).float()",
                                f"({rows} > 0.5).any(0, keepdim=True).float()", f"{rows}[-1:].sum(0, keepdim=True)"])
            return [Research(f"{k} = {count(1)}\n{rows} = {stack}[:{k}]\n{rows} = {math}\n"
                             f"x = x + 0.1 * {fold(reduced)}", form)]
        if kind == 1:  # a store into the first k rows
            buf = self.fresh("buf")
            value = r.choice([f"torch.tanh({s})", "0.5", f"{s} * 0.25"])
            return [Research(f"{k} = {count(0)}\n{buf} = torch.zeros(3, {w})\n{buf}[:{k}] = {value}\n"
                             f"x = x + 0.1 * {fold(f'{buf}.sum(0, keepdim=True)')}", form)]
        hs, acc, t, lin = self.fresh("hs"), self.fresh("acc"), self.fresh("t"), self.module(f"nn.Linear({w}, {w})")
        body = [Research(f"{k} = min({k}, max({count(t)}, 0))\n{hs} = torch.tanh({lin}({hs}[:{k}]))\n"
                         f"{acc}[:{k}] = {acc}[:{k}] + {hs}", form)]
        return [Research(f"{hs} = {stack}\n{acc} = torch.zeros(3, {w})\n{k} = 3", form),
                For(r.randint(2, 3), body, var=t),
                Research(f"x = x + 0.1 * {fold(f'{acc}.sum(0, keepdim=True)')}", form)]

    def data_dependent_size(self, stage: str, fold) -> list[Stmt]:
        """Rows of a 3-row tensor built from x, picked by a mask on their values (0..3 of
        them): gathered through `nonzero` indices or the mask itself, reduced, or stored back
        into a buffer; or a loop that updates the live rows only and stops when none is left
        (batch-level adaptive computation time)."""
        r, s, w, form = self.rng, self.summary[stage], self.width, "data_dependent_size"
        rows, mask, idx = self.fresh("rows"), self.fresh("mask"), self.fresh("idx")
        stack = r.choice([f"torch.cat([{s}, {s} * 0.5, torch.tanh({s})])", f"torch.stack([{s}[0], -{s}[0], torch.sigmoid({s}[0]) - 0.5])"])
        # (no row sum is compared with 0: a LayerNorm output sums to 0 up to rounding, and a
        # mask on it would follow each backend's rounding: seeds 18 and 613 on ONNX Runtime)
        made = f"{rows} = {stack}\n{mask} = {rows}.sum(1) {r.choice(['>', '<'])} {r.choice(['0.05', '0.1', '-0.1'])}"
        nonzero = r.choice([f"{mask}.nonzero().squeeze(1)", f"torch.nonzero({mask}).view(-1)", f"torch.where({mask})[0]"])
        kind = r.randrange(4)
        if kind == 0:  # a gather of the picked rows, math on them, a reduction
            lin = self.module(f"nn.Linear({w}, {w})")
            gather = r.choice([f"{rows}[{idx}]", f"{rows}.index_select(0, {idx})", f"{rows}[{mask}]"])
            picked = self.fresh("picked")
            math = r.choice([f"torch.tanh({lin}({picked}))", f"({picked} * 2.0 + 1.0)"])
            reduced = r.choice([f"{math}.sum(0, keepdim=True)", f"({picked} > 0).any(0, keepdim=True).float()"])
            return [Research(f"{made}\n{idx} = {nonzero}\n{picked} = {gather}\n"
                             f"x = x + 0.1 * {fold(reduced)} + 0.01 * len({idx})", form)]
        if kind == 1:  # the selected elements as a flat tensor
            picked = r.choice([f"{rows}[{rows} > 0]", f"torch.masked_select({rows}, {mask}.unsqueeze(1))",
                               f"{rows}.masked_select({rows} < 0.2)"])
            return [Research(f"{made}\nx = x + 0.1 * {picked}.sum()", form)]
        if kind == 2:  # a store back at the picked rows
            buf = self.fresh("buf")
            store = r.choice([f"{buf}[{idx}] = torch.tanh({rows}[{idx}])", f"{buf}[{idx}] += {rows}[{idx}] * 0.5",
                              f"{buf}[{mask}] = {rows}[{mask}] * 2.0"])
            return [Research(f"{made}\n{idx} = {nonzero}\n{buf} = torch.zeros(3, {w})\n{store}\n"
                             f"x = x + 0.1 * {fold(f'{buf}.sum(0, keepdim=True)')}", form)]
        lin, t = self.module(f"nn.Linear({w}, {w})"), self.fresh("t")
        body = [Research(f"{idx} = {mask}.nonzero().squeeze(1)\n{rows}[{idx}] = torch.tanh({lin}({rows}[{idx}]))\n"
                         f"{mask} = {mask} & ({rows}.sum(1) > {r.choice(['0.05', '0.2'])})\n"
                         f"if not {mask}.any():\n    break", form)]
        return [Research(made, form), For(r.randint(2, 3), body, var=t),
                Research(f"x = x + 0.1 * {fold(f'{rows}.sum(0, keepdim=True)')}", form)]

    def kind_changes(self, stage: str, fold) -> list[Stmt]:
        """Issue 34, item 7 (`kinds` only): 3 rows built from x and a loop over the live ones
        whose mask enters as a byte mask (`.byte()`) and comes back bool (`rows.sum(1) > t`),
        a `while` or a `for` over a constant range that may `break` (a batch whose mask is
        empty never enters the `while`; `~run` differs by kind after it; a list made before
        the `while` may hold the rows it writes, `held = [rows]`, read after it); or two names of one
        buffer on one path (`c = h`) and of two on the other, written through both at the
        picked rows (`h[idx], c[idx] = ...`), then changed in place (`h += 0.5`)."""
        r, s, w = self.kinds, self.summary[stage], self.width
        rows, run, idx = self.fresh("rows"), self.fresh("run"), self.fresh("idx")
        made = f"{rows} = " + r.choice([f"torch.cat([{s}, {s} * 0.5, torch.tanh({s})])",
                                        f"torch.stack([{s}[0], -{s}[0], torch.sigmoid({s}[0]) - 0.5])"])
        first, again = r.choice(["0.05", "0.1", "-0.1"]), r.choice(["0.05", "0.2"])
        if r.random() < 0.5 or self.slots_used() >= MAX_CONDITIONS:
            form, lin, n = "kind_change", self.module(f"nn.Linear({w}, {w})"), self.fresh("n")
            step = [f"{idx} = {run}.nonzero().squeeze(1)", f"{rows}[{idx}] = torch.tanh({lin}({rows}[{idx}]))",
                    f"{run} = {rows}.sum(1) > {again}"]
            head = [made, f"{run} = ({rows}.sum(1) > {first}).byte()"]
            if r.random() < 0.5:
                loop = [f"{n} = 0", f"while {run}.any() and {n} < {r.randint(2, 4)}:", *("    " + line for line in step), f"    {n} += 1"]
                use = f"x = x + 0.1 * {fold(f'{rows}.sum(0, keepdim=True)')} + 0.01 * {run}.sum() + 0.001 * (~{run}).float().mean()"
                if r.random() < 0.5:  # a list holding the rows the loop writes: its item follows them
                    held = self.fresh("held")
                    head.append(f"{held} = [{rows}]")
                    use += f" + 0.05 * {fold(f'{held}[0].sum(0, keepdim=True)')}"
                return [Research("\n".join([*head, *loop, use]), form)]
            body = [Research("\n".join([*step, f"if not {run}.any():", "    break"]), form)]
            return [Research("\n".join(head), form), For(r.randint(2, 4), body),
                    Research(f"x = x + 0.1 * {fold(f'{rows}.sum(0, keepdim=True)')} + 0.01 * {run}.sum()", form)]
        form, h, c = "one_path_alias", self.fresh("h"), self.fresh("c")
        zeros = r.choice([f"Variable({rows}.data.new(3, {w}).zero_())", f"{rows} * 0.5", f"torch.zeros(3, {w})"])
        store = r.choice([f"{h}[{idx}], {c}[{idx}] = torch.tanh({rows}[{idx}]), torch.sigmoid({rows}[{idx}])",
                          f"{h}[{idx}] = torch.tanh({rows}[{idx}])\n{c}[{idx}] += 0.5"])
        stat = r.choice(self.statistics(stage)).replace("{k}", str(r.randrange(w)))
        return [Research(f"{made}\n{run} = {rows}.sum(1) > {first}", form),
                If([(self.cond(stat, rng=r), [Research(f"{h} = {zeros}\n{c} = {h}", form)])],
                   [Research(f"{h}, {c} = torch.tanh({rows}), {rows} * 0.25", form)]),
                Research(f"{idx} = {run}.nonzero().squeeze(1)\n{store}\n{h} += 0.5\n"
                         f"x = x + 0.1 * {fold(f'({h} + 2.0 * {c}).sum(0, keepdim=True)')}", form)]

    def picked_count(self, stage: str, fold) -> list[Stmt]:
        """Rows of a 3-row tensor built from x picked by the union of two bool masks (`m1 + m2`:
        no bool `Add` in ONNX), a test of how many (`picked.size(0) > 0`, `.numel() == 0`,
        `.shape[0] > 1`: the host reads the size) and the first ones by a constant slice
        (`picked[:2]`, clamped to the size) (`sizes` stream only)."""
        r, s, form = self.sizes, self.summary[stage], "data_dependent_size"
        rows, mask, picked = self.fresh("rows"), self.fresh("mask"), self.fresh("picked")
        made = (f"{rows} = " + r.choice([f"torch.cat([{s}, {s} * 0.5, torch.tanh({s})])",
                                         f"torch.stack([{s}[0], -{s}[0], torch.sigmoid({s}[0]) - 0.5])"])
                + f"\n{mask} = ({rows}.sum(1) > {r.choice(['0.05', '0.1'])}) + ({rows}[:, 0] < {r.choice(['-0.5', '-1.0'])})"
                + f"\n{picked} = {rows}[{mask}]")
        test = r.choice([f"{picked}.size(0) > 0", f"{picked}.numel() == 0", f"{picked}.shape[0] > 1", f"len({picked}) > 1"])
        first = fold(f"{picked}[:{r.choice([1, 2])}].sum(0, keepdim=True)")
        return [Research(f"{made}\nif {test}:\n    x = x + 0.1 * {first}\nelse:\n    x = x * 0.9", form)]

    def python_numbers(self, stage: str, fold) -> list[Stmt]:
        """Python numbers from 3 rows built from x (issue 34): their float sums as a list
        (`.tolist()`) and the best row by `scores.index(max(scores))`; the picked rows'
        positions as a list of runtime length (`.nonzero().flatten().tolist()`, 0..3 of them,
        and a 3 after them: a loop over a list empty on the example path is refused), and a
        comprehension over it into `torch.tensor(..., dtype=torch.long)` (`numbers` only)."""
        r, s, form = self.numbers, self.summary[stage], "data_dependent_size"
        rows, scores, best = self.fresh("rows"), self.fresh("scores"), self.fresh("best")
        made = (f"{rows} = " + r.choice([f"torch.cat([{s}, {s} * 0.5, torch.tanh({s})])",
                                         f"torch.stack([{s}[0], -{s}[0], torch.sigmoid({s}[0]) - 0.5])"]))
        threshold = r.choice(["0.05", "0.1", "-0.1"])
        if r.random() < 0.5:
            return [Research(f"{made}\n{scores} = {rows}.sum(1).tolist()\n{best} = {scores}.index(max({scores}))\n"
                             f"x = x + 0.1 * {fold(f'{rows}[{best}].unsqueeze(0)')}", form)]
        chosen, slots = self.fresh("chosen"), self.fresh("slots")
        return [Research(f"{made}\n{chosen} = ({rows}.sum(1) > {threshold}).nonzero().flatten().tolist() + [3]\n"
                         f"{slots} = [i + 1 for i in {chosen}]\n"
                         f"x = x + 0.01 * (torch.tensor({slots}, dtype=torch.long).sum() + len({chosen}))", form)]

    def gate_list(self, stage: str, fold) -> list[Stmt]:
        """Gates kept in a plain list on the model besides their ModuleList (issue 34, item
        9.1): each gate stores its action and probability on itself in its forward
        (`SavedActionGate`), and forward reads them back through the list after the gates
        ran: a comprehension into `torch.cat`, a generator into `sum`, a loop, or the last
        one by index (`gates` only)."""
        g, s, w, form = self.gates, self.summary[stage], self.width, "gate_list"
        self.classes.add("SavedActionGate")
        k = self.gate_lists
        self.gate_lists += 1
        gates, kept = f"rg{k}", f"rgl{k}"
        self.register(gates, f"nn.ModuleList([SavedActionGate({w}) for _ in range({g.choice([2, 3])})])")
        self.register(kept, f"list(self.{gates})")
        gate, inst = self.fresh("gate"), self.fresh("inst")
        run = f"for {gate} in self.{gates}:\n    x = x + 0.1 * {fold(f'{gate}({s}) * torch.tanh({s})')}"
        read = g.choice([
            f"x = x + 0.1 * torch.cat([{inst}.saved_action for {inst} in self.{kept}], 1).sum()",
            f"x = x * (1.0 + 0.1 * sum({inst}.saved_prob.sum() for {inst} in self.{kept}))",
            f"for {inst} in self.{kept}:\n    x = x + 0.05 * {inst}.saved_prob.sum()",
            f"x = x + 0.1 * self.{kept}[-1].saved_action.sum()",
        ])
        return [Research(f"{run}\n{read}", form)]

    def set_indices(self, stage: str, fold) -> list[Stmt]:
        """Index bookkeeping on the host (issue 34, item 9.2): the rows of 3 built from x that
        a mask leaves out, `set(range(3)) - set(picked)`, visited through `sorted(...)`, a set
        operator with a constant set and `in`; `sorted(..., reverse=True)` of the picked
        positions; `scores.index(v, 1)`; a right-to-left scan over `s.numpy()[::-1]` (`sets` only)."""
        r, s, form = self.sets, self.summary[stage], "set_indices"
        rows, picked, rest, i = self.fresh("rows"), self.fresh("picked"), self.fresh("rest"), self.fresh("i")
        made = (f"{rows} = " + r.choice([f"torch.cat([{s}, {s} * 0.5, torch.tanh({s})])",
                                         f"torch.stack([{s}[0], -{s}[0], torch.sigmoid({s}[0]) - 0.5])"])
                + f"\n{picked} = ({rows}.sum(1) > {r.choice(['0.05', '0.1', '-0.1'])}).nonzero().flatten().tolist()")
        kind = r.randrange(4)
        if kind == 0:
            use = (f"{rest} = set(range(3)) - set({picked})\nfor {i} in sorted({rest}):\n"
                   f"    x = x + 0.05 * ({i} + 1) * {fold(f'{rows}[{i}].unsqueeze(0)')}")
        elif kind == 1:
            use = (f"{rest} = set({picked}) {r.choice(['|', '&', '^', '-'])} {{1, 2}}\n"
                   f"x = x * (1.0 + 0.1 * len({rest}) + (0.2 if 0 in {rest} else 0.0))")
        elif kind == 2:
            scores = self.fresh("scores")
            use = (f"{rest} = sorted({picked} + [2], reverse=True)\n{scores} = {rows}.sum(1).tolist()\n"
                   f"x = x + 0.05 * {fold(f'{rows}[{rest}[0]].unsqueeze(0)')} * {scores}.index(max({scores}[1:]), 1)")
        else:
            v, acc = self.fresh("v"), self.fresh("acc")
            use = (f"{acc} = 0.0\nfor {v} in {s}[0].detach().numpy()[::-1]:\n    {acc} = {acc} * 0.5 + float({v})\n"
                   f"x = x + 0.1 * {acc} + 0.01 * len({picked})")
        return [Research(f"{made}\n{use}", form)]

    def sparse_dispatch(self, stage: str, fold) -> list[Stmt]:
        """The sparse MoE as davidmrau/mixture-of-experts writes it, on 3 rows built from x:
        top-k gates (k of 1..E, E of 2..3) scattered into `gates`, `SparseDispatcher(E, gates)`,
        `dispatch`, each expert on its rows (0..3 of them; maybe weighted by
        `expert_to_gates()`), `combine` (`dispatchers` only)."""
        r, s, w, form = self.dispatchers, self.summary[stage], self.width, "sparse_dispatch"
        experts = r.choice([2, 3])
        k = r.randint(1, experts)
        self.classes.add("SparseDispatcher")
        rows, logits, top, idx, gates = (self.fresh(n) for n in ("rows", "logits", "top", "idx", "gates"))
        disp, parts, outs, y = self.fresh("disp"), self.fresh("parts"), self.fresh("outs"), self.fresh("y")
        gate = self.module(f"nn.Linear({w}, {experts})")
        heads = [self.module(f"nn.Linear({w}, {w})") for _ in range(experts)]
        made = (f"{rows} = " + r.choice([f"torch.cat([{s}, {s} * 0.5, torch.tanh({s})])",
                                         f"torch.stack([{s}[0], -{s}[0], torch.sigmoid({s}[0]) - 0.5])"])
                + f"\n{logits} = {gate}({rows})\n{top}, {idx} = {logits}.topk({k}, dim=1)"
                + f"\n{gates} = torch.zeros_like({logits}).scatter(1, {idx}, F.softmax({top}, 1))"
                + f"\n{disp} = SparseDispatcher({experts}, {gates})\n{parts} = {disp}.dispatch({rows})")
        if r.random() < 0.5:
            weights = self.fresh("g")
            made += f"\n{weights} = {disp}.expert_to_gates()"
            made += f"\n{outs} = [" + ", ".join(f"torch.tanh({h}({parts}[{i}])) * {weights}[{i}]" for i, h in enumerate(heads)) + "]"
            made += f"\n{y} = {disp}.combine({outs}, multiply_by_gates=False)"
        else:
            made += f"\n{outs} = [" + ", ".join(f"torch.tanh({h}({parts}[{i}]))" for i, h in enumerate(heads)) + "]"
            made += f"\n{y} = {disp}.combine({outs})"
        return [Research(f"{made}\nx = x + 0.1 * {fold(f'{y}.sum(0, keepdim=True)')}", form)]

    def unique_or_repeat(self, stage: str, fold) -> list[Stmt]:
        """`torch.unique` (of dim None or 0) or `unique_consecutive` of labels made from 3 rows
        built from x (1..3 distinct values or runs) with its inverse and counts, or the rows repeated by counts made from them (0..2 each:
        `repeat_interleave` with a tensor of repeats), folded back into x (`extras` only)."""
        r, s, form = self.extras, self.summary[stage], "data_dependent_size"
        rows = self.fresh("rows")
        made = f"{rows} = " + r.choice([f"torch.cat([{s}, {s} * 0.5, torch.tanh({s})])", f"torch.stack([{s}[0], -{s}[0], torch.sigmoid({s}[0]) - 0.5])"])
        unique = r.random() < 0.5
        labels, vals, inverse, counts = self.fresh("labels"), self.fresh("vals"), self.fresh("inv"), self.fresh("cnt")
        label = f"({rows}.sum(1) > 0.05).long() + ({rows}[:, 0] > {r.choice(['0.0', '0.1'])}).long()"
        if unique:
            call = r.choice([f"torch.unique({labels}, return_inverse=True, return_counts=True)",
                             f"{labels}.unique(sorted=True, return_inverse=True, return_counts=True)",
                             f"torch.unique({labels}, dim=0, return_inverse=True, return_counts=True)",
                             f"torch.unique_consecutive({labels}, return_inverse=True, return_counts=True)",
                             f"{labels}.unique_consecutive(return_counts=True, return_inverse=True, dim=0)"])
            use = r.choice([f"{counts}.float().max() * {vals}.float().mean()", f"{counts}[{inverse}].float().sum()",
                            f"len({vals}) + {inverse}.float().mean()"])
            return [Research(f"{made}\n{labels} = {label}\n{vals}, {inverse}, {counts} = {call}\nx = x + 0.1 * ({use})", form)]
        repeated = self.fresh("rep")
        call = r.choice([f"torch.repeat_interleave({rows}, {labels}, dim=0)", f"{rows}.repeat_interleave({labels}, 0)"])
        use = r.choice([f"{fold(f'{repeated}.sum(0, keepdim=True)')}", f"{repeated}.sum() + torch.repeat_interleave({labels}).float().sum()"])
        return [Research(f"{made}\n{labels} = {label}\n{repeated} = {call}\nx = x + 0.1 * {use}", form)]

    def packed_rnn(self, stage: str, fold) -> list[Stmt]:
        """A padded batch of 4 steps built from x, one sequence per item of `lengths`, packed
        with lengths made from them (positive, at most 4: every input is valid in eager), an
        RNN module on it, and what it gives folded back into x."""
        r, s, w, form = self.rng, self.summary[stage], self.width, "packed_rnn"
        seq, lens, out, h = self.fresh("seq"), self.fresh("lens"), self.fresh("out"), self.fresh("h")
        steps, batch = 4, self.lengths
        in_order = r.random() < 0.5
        kind = r.choice(["nn.GRU", "nn.LSTM", "nn.RNN"])
        options = r.choice(["", "", ", 2", ", bidirectional=True", ", 2, bidirectional=True"])
        rnn = self.module(f"{kind}({w}, {w}{options})")
        text = (f"{seq} = torch.stack([torch.tanh({s} * (1.0 + 0.5 * t)) for t in range({steps})])"
                f".repeat(1, {batch}, 1) * torch.linspace(0.5, 1.5, {batch}).view(1, {batch}, 1)\n")
        if in_order:  # non-increasing, as enforce_sorted requires
            m, l = self.fresh("m"), self.fresh("l")
            text += f"{lens} = []\n{m} = {steps}\nfor {l} in lengths:\n    {m} = min({m}, {l} + 1)\n    {lens}.append({m})\n"
            text += f"{out}, {h} = {rnn}(pack_padded_sequence({seq}, {lens}))\n"
        else:
            text += f"{lens} = [min(l + 1, {steps}) for l in lengths]\n"
            text += f"{out}, {h} = {rnn}(pack_padded_sequence({seq}, {lens}, enforce_sorted=False))\n"
        final = f"{h}[0][-1]" if kind == "nn.LSTM" else f"{h}[-1]"
        uses = [f"x = x + 0.1 * {fold(f'{final}.mean(0, keepdim=True)')}",
                f"x = x + 0.1 * {fold(f'pad_packed_sequence({out})[0].sum(0).mean(0, keepdim=True)[:, :{w}]')}"]
        if in_order:
            uses += [f"x = x + 0.1 * {fold(f'{out}.data.mean(0, keepdim=True)[:, :{w}]')}",
                     f"x = x * (1.0 + 0.01 * {out}.batch_sizes.sum())"]
        return [Research(text + r.choice(uses), form)]

    def form(self, form: str, stage: str, in_helper: bool) -> list[Stmt]:
        r, w = self.rng, self.width
        s = self.summary[stage]
        fold = lambda value: self.fold(value, stage)  # noqa: E731
        if form == "data":
            return [Research(r.choice(["x = x.data", "x = torch.tanh(x).data", f"x = x + 0.5 * {fold(s + '.data')}"]), form)]
        if form == "detach":
            return [Research(r.choice(["x = x.detach()", "x = x + 0.5 * x.detach()", "x = torch.sigmoid(x.detach())"]), form)]
        if form == "cpu":
            return [Research(r.choice(["x = x.cpu()", "x = x.detach().cpu()", "x = x.cpu() * 1.0"]), form)]
        if form == "to_device":
            ones = f"torch.ones(1, {w})" if stage == "vector" else f"torch.ones(1, {w}, 1, 1)"
            return [Research(r.choice(["x = x.to(x.device)", f"x = x + {ones}.to(x.device) * 0.1"]), form)]
        if form == "variable":
            return [Research(r.choice(["x = Variable(x)", "x = Variable(x.data)"]), form)]
        if form == "no_grad":
            return [With([Research(self.layer(stage), form)])]
        if form == "np_argmax_exits":
            heads, n = self.heads()
            e, c, y, k = self.fresh("exits"), self.fresh("confs"), self.fresh("y"), self.fresh("k")
            conf = r.choice([f"torch.max(F.softmax({y}, 1))", f"torch.max(F.softmax({y}, 1)).data",
                             f"F.softmax({y}, 1).max().detach()"])
            if r.random() < 0.5:
                loop = f"for head in {heads}:\n    {y} = head({s})"
            else:
                i = self.fresh("i")
                loop = f"for {i} in range({n}):\n    {y} = {heads}[{i}]({s})"
            text = (f"{e} = []\n{c} = []\n{loop}\n    {e}.append({y})\n    {c}.append({conf})\n"
                    f"{k} = np.argmax({c})\nx = x + {fold(f'{e}[{k}]')}")
            return [Research(text, form)]
        if form == "np_max_cond":
            p = self.fresh("p")
            source = r.choice([f"F.softmax({s}, -1)", f"torch.sigmoid({s})", s])
            stat = r.choice([f"np.max({p}.detach().cpu().numpy())", f"np.max({p}.data.cpu().numpy())",
                             f"np.mean({p}.detach().numpy())"])
            orelse = [Research(self.layer(stage), form)] if r.random() < 0.4 else None
            return [Research(f"{p} = {source}", form), If([(self.cond(stat), [Research(self.layer(stage), form)])], orelse)]
        if form == "np_mean_confs":
            heads, n = self.heads()
            c = self.fresh("confs")
            if r.random() < 0.5:
                build = f"{c} = [torch.max(F.softmax(head({s}), 1)) for head in {heads}]"
            else:
                build = f"{c} = []\nfor head in {heads}:\n    {c}.append(torch.max(F.softmax(head({s}), 1)).data)"
            if self.slots_used() < MAX_CONDITIONS and r.random() < 0.6:
                cond = self.cond(f"float(np.mean({c}))", item=False)
                return [Research(build, form), If([(cond, [Research(self.layer(stage), form)])])]
            return [Research(f"{build}\nx = x * (0.5 + float(np.mean({c})))", form)]
        if form in SURGERY:
            return self.surgery(form, stage, in_helper)
        if form == "nested_carry":
            acc = self.fresh("acc")
            inner: list[Stmt] = [Research(self.layer(stage).replace("x = x", f"{acc} = {acc}", 1).replace("x = ", f"{acc} = ", 1)
                                          .replace("(x)", f"({acc})"), form)]
            inner.append(Break(self.a_cond(stage)))
            return [For(r.randint(2, 3), [Research(f"{acc} = x * 0.5", form), For(r.randint(2, 3), inner),
                                          Research(r.choice([f"x = {acc}", f"x = x + {acc}"]), form)])]
        if form == "scalar_list":
            toks, t = self.fresh("toks"), self.fresh("t")
            value = r.choice([f"int({s}.argmax())", f"float({s}.max())", f"bool({s}.sum() > 0)", f"{s}.argmax().item()"])
            body: list[Stmt] = [Research(self.layer(stage), form)]
            always = r.random() < 0.6  # appended on every iteration (else under a condition)
            if always or self.slots_used() >= MAX_CONDITIONS:
                body.append(Research(f"{t} = {value}\n{toks}.append({t})", form))
                always = True
            else:
                body += [Research(f"{t} = {value}", form), If([(self.a_cond(stage), [Research(f"{toks}.append({t})", form)])])]
            if self.slots_used() < MAX_CONDITIONS and r.random() < 0.7:
                body.append(Break(self.a_cond(stage)))
            uses = [f"x = x * (1.0 + 0.1 * len({toks}))"]
            if always:  # never empty: the first iteration appends
                uses += [f"x = x + 0.1 * {toks}[-1]", f"x = x * (1.0 + 0.05 * {toks}[0])",
                         f"{t} = {toks}.pop()\nx = x + 0.1 * {t} + 0.05 * len({toks})"]
            return [Research(f"{toks} = []", form), For(r.randint(1, 4), body), Research(r.choice(uses), form)]
        if form == "module_pick":
            heads, n = self.heads()
            k = self.fresh("k")
            scores = f"{s}[0, :{n}]"
            index = r.choice([f"int({scores}.argmax())", f"np.argmax({scores}.detach().numpy())",
                              f"{scores}.argmax().item()", f"int({scores}.argmin()) - {n}"])
            pick = f"{heads}[{k}]({s})"
            uses = [f"x = x + 0.5 * {fold(pick)}", f"y{k} = {pick}\nx = x * 0.5 + {fold(f'y{k}')}"]
            if not index.endswith(f"- {n}"):  # (a negative runtime index into a tensor is refused)
                uses.append(f"x = x + {fold(f'torch.tanh({pick}) * {scores}[{k}]')}")
            use = r.choice(uses)
            return [Research(f"{k} = {index}\n{use}", form)]
        if form == "runtime_range":
            n, i = self.fresh("n"), self.fresh("i")
            body: list[Stmt] = [Research(self.layer(stage), form)]
            if r.random() < 0.5:
                body.append(Research(f"x = x * (1.0 - 0.05 * {i})", form))
            if self.slots_used() < MAX_CONDITIONS and r.random() < 0.5:
                body.append(Break(self.a_cond(stage)))
            start = r.choice(["", "1, "])
            return [Research(f"{n} = int({s}[0, :3].argmax()) + 1", form), For(0, body, header=f"for {i} in range({start}{n}):")]
        if form == "iterate_list":
            toks, t = self.fresh("toks"), self.fresh("t")
            return [Research(f"{toks} = []\nfor _ in range({r.randint(1, 3)}):\n    {self.layer(stage)}\n"
                             f"    {toks}.append(int({s}.argmax()))\n    if {s}.sum() > 0:\n        break\n"
                             f"for {t} in {toks}:\n    x = x + 0.05 * {t}", form)]
        if form == "iterate_array":
            v, acc = self.fresh("v"), self.fresh("acc")
            source = r.choice([f"{s}[0].detach().numpy()", f"{s}[0, :3].cpu().numpy()", f"np.argsort({s}[0].detach().numpy(), kind='stable')", f"np.argsort(-{s}[0].detach().numpy())"])
            use = r.choice([f"    {acc} = {acc} + float({v})", f"    if {v} > 0:\n        {acc} = {acc} + 0.1"])
            return [Research(f"{acc} = 0.0\nfor {v} in {source}:\n{use}\nx = x * (1.0 + 0.01 * {acc})", form)]
        if form == "while_tensor":
            n = self.fresh("n")
            bound = r.choice(["0.5", "1.0", "2.0"])
            return [Research(f"{n} = 0\nwhile (x.abs() > {bound}).any() and {n} < 40:\n    x = x * 0.5\n    {n} += 1\n"
                             f"x = x * (1.0 + 0.01 * {n})", form)]
        if form == "np_where_hits":
            hits = self.fresh("hits")
            mask = r.choice([f"{s}[0].detach().numpy() > 0", f"F.softmax({s}, -1)[0].detach().cpu().numpy() > 0.2"])
            use = r.choice([f"x = x * (1.0 + 0.1 * len({hits}))", f"if len({hits}) > 0:\n    x = x + 0.01 * {hits}[0]",
                            f"for h in {hits}:\n    x = x * 0.9 + 0.01 * h"])
            return [Research(f"{hits} = np.where({mask})[0]\n{use}", form)]
        if form == "view_store":
            hist, v, i = self.fresh("hist"), self.fresh("v"), self.fresh("i")
            trips = r.randint(1, min(3, w))
            view = r.choice([f"{hist}.view(-1)", f"{hist}[0]", f"{hist}.reshape(-1)"])
            body: list[Stmt] = [Research(self.layer(stage), form),
                                Research(r.choice([f"{v}[{i}] = {s}.mean()", f"{v}[{i}] += torch.tanh({s}).max()"]), form)]
            if r.random() < 0.6:
                body.append(Break(self.a_cond(stage)))
            return [Research(f"{hist} = torch.zeros(1, {w})\n{v} = {view}", form), For(trips, body, var=i),
                    Research(f"x = x + 0.1 * {fold(hist)}", form)]
        if form == "view_of_changed":
            hist, row = self.fresh("hist"), self.fresh("row")
            view = r.choice([f"{hist}[0]", f"{hist}.view(-1)", f"{hist}.t()[:, 0]"])
            change = r.choice([f"{hist}.mul_(0.5)", f"{hist}[0, 0] = 1.0", f"{hist}.clamp_(-0.2, 0.2)"])
            orelse = [Research(self.layer(stage), form)] if r.random() < 0.3 else None
            return [Research(f"{hist} = torch.tanh({s}) * 1.0\n{row} = {view}", form),
                    If([(self.a_cond(stage), [Research(change, form)])], orelse),
                    Research(f"x = x + 0.1 * {fold(f'{row}.unsqueeze(0)')}", form)]
        if form == "optional_aux":
            aux = self.fresh("aux")
            value = r.choice([f"torch.tanh({s})", f"{s} * 0.5", f"F.softmax({s}, -1)"])
            use = r.choice([f"if {aux} is not None:\n    x = x + 0.5 * {fold(aux)}",
                            f"if {aux} is None:\n    x = x * 0.9\nelse:\n    x = x - 0.1 * {fold(aux)}",
                            f"x = x * (1.5 if {aux} is None else 0.5)"])
            return [Research(f"{aux} = None", form), If([(self.a_cond(stage), [Research(f"{aux} = {value}", form)])]),
                    Research(use, form)]
        if form == "list_alias":
            return self.list_alias(stage, fold)
        if form == "dict_state":
            return self.dict_state(stage, fold)
        if form == "decode_array":
            toks, ids = self.fresh("toks"), self.fresh("ids")
            body = [Research(self.layer(stage), form), Research(f"{toks}.append({s}.argmax())", form)]
            if r.random() < 0.6:
                body.append(Break(self.a_cond(stage)))
            use = r.choice([f"x = x * (1.0 + 0.01 * float({ids}.sum()))",
                            f"{ids}_ends = np.where({ids} == 0)[0]\nx = x * (1.0 + 0.1 * len({ids}_ends))",
                            f"x = x * (1.0 + 0.01 * float(torch.stack({toks}).float().mean()))"])
            return [Research(f"{toks} = []", form), For(r.randint(1, 3), body),
                    Research(f"{ids} = np.array({toks})\n{use}", form)]
        if form == "list_store":
            flags, b = self.fresh("flags"), self.fresh("b")
            m = r.randint(2, 3)
            index = r.choice([b, f"{b} - {m}"])
            return [Research(f"{flags} = [False] * {m}\nfor {b} in range({m}):\n    if {s}[0, {b}] > 0:\n"
                             f"        {flags}[{index}] = True\nx = x * (1.0 + 0.1 * {r.choice(['any', 'all'])}({flags}))", form)]
        if form == "none_start":
            logits, trips = self.fresh("logits"), r.randint(1, 4)
            head = self.module(f"nn.Linear({w}, {w})")
            body: list[Stmt] = [Research(self.layer(stage), form), Research(f"{logits} = {head}({s})", form)]
            if r.random() < 0.5:
                body.reverse()  # assigned before or after the layer (always before the break)
            if self.slots_used() < MAX_CONDITIONS and r.random() < 0.8:
                body.append(Break(self.a_cond(stage)))
            return [Research(f"{logits} = None", form), For(trips, body),
                    Research(f"x = x + 0.5 * {fold(logits)}", form)]
        if form in ("lstm_cell", "gru_cell"):
            lstm = form == "lstm_cell"
            cell = self.module(f"nn.{'LSTMCell' if lstm else 'GRUCell'}({w}, {w})")
            state, i = self.fresh("state"), self.fresh("i")
            h = f"{state}[0]" if lstm else state
            source = r.choice([s, f"torch.tanh({s})"])
            if lstm and r.random() < 0.4:
                hh, cc = self.fresh("h"), self.fresh("c")
                step = [Research(f"{hh}, {cc} = {cell}({source}, {state})\n{state} = ({hh}, {cc})", form)]
            else:
                step = [Research(f"{state} = {cell}({source}, {state})", form)]
            if r.random() < 0.5:  # x changes in the loop too (s is read again every step)
                step.append(Research(f"x = x + 0.25 * {fold(h)}", form))
                after = []
            else:
                after = [Research(f"x = x + 0.5 * {fold(h)}", form)]
            return [Research(f"{state} = None", form), For(r.randint(1, 4), step, var=i), *after]
        if form == "head_comprehension":
            heads, _ = self.heads()
            ys = self.fresh("ys")
            merge = r.choice([f"torch.stack({ys}).mean(0)", f"sum({ys}) / len({ys})", f"torch.cat({ys}, 0).mean(0, keepdim=True)"])
            return [Research(f"{ys} = [head({s}) for head in {heads}]\nx = x + {fold(merge)}", form)]
        if form in ("sum_comprehension", "any_genexp", "all_genexp"):
            heads, n = self.heads()
            scores, c = self.fresh("scores"), self.fresh("c")
            build = r.choice([f"{scores} = [F.softmax(head({s}), -1).max() for head in {heads}]",
                              f"{scores} = [torch.sigmoid(head({s})).mean() for head in {heads}]"])
            if form == "sum_comprehension":
                inner = r.choice([f"[@ for {c} in {scores}]", f"@ for {c} in {scores}"])
                wrap = f"sum({inner}) >= {r.randint(1, n)}"
            else:
                wrap = f"{form[:3]}(@ for {c} in {scores})" if r.random() < 0.7 else f"{form[:3]}([@ for {c} in {scores}])"
            orelse = [Research(self.layer(stage), form)] if r.random() < 0.3 else None
            return [Research(build, form), If([(self.cond(c, wrap), [Research(self.layer(stage), form)])], orelse)]
        if form == "max_key":
            heads, _ = self.heads()
            ys, scores, k = self.fresh("ys"), self.fresh("scores"), self.fresh("k")
            key = r.choice([f"lambda i: {scores}[i]", f"lambda i: float({scores}[i])"])
            text = (f"{ys} = [head({s}) for head in {heads}]\n{scores} = [F.softmax(y, -1).max() for y in {ys}]\n"
                    f"{k} = max(range(len({ys})), key={key})\nx = x + {fold(f'{ys}[{k}]')}")
            return [Research(text, form)]
        if form == "cond_expr":
            m = self.fresh("m")
            if r.random() < 0.5:
                g = self.fresh("g")
                gate = self.module(f"nn.Linear({w}, 1)")
                cond = self.cond(g, form=r.choice(["item", "item", "tensor"]))
                use = r.choice([f"x = x * (1.0 + 0.5 * {m})", f"x = x + {m} * torch.tanh(x)"])
                return [Research(f"{g} = torch.sigmoid({gate}({s})).mean()", form),
                        CondLine(f"{m} = 1 if @ else 0\n{use}", cond, form)]
            cond = self.a_cond(stage)
            return [CondLine(r.choice(["x = torch.tanh(x) if @ else x * 0.5", f"{m} = 1.5 if @ else 0.5\nx = x * {m}"]),
                             cond, form)]
        if form == "bool_math":
            b = self.fresh("b")
            use = r.choice([f"x = x * {b} + 0.5 * x", f"x = x + 0.5 * ({b} & (x > 0)).float()", f"x = torch.where(x > 0, x, x * {b})"])
            return [CondLine(f"{b} = bool(@)\n{use}", self.a_cond(stage), form)]
        if form == "and_or":
            op = r.choice(["and", "or"])
            cond = BoolOp(op, [self.a_cond(stage), self.a_cond(stage)])
            if r.random() < 0.25:
                m = self.fresh("m")
                return [CondLine(f"{m} = 1 if @ else 0\nx = x * (1.0 + 0.5 * {m})", cond, form)]
            orelse = [Research(self.layer(stage), form)] if r.random() < 0.4 else None
            return [If([(cond, [Research(self.layer(stage), form)])], orelse)]
        if form == "runtime_slice":
            return self.runtime_slice(stage, fold, in_helper)
        if form == "packed_rnn":
            return self.packed_rnn(stage, fold)
        if form == "data_dependent_size":
            made = self.older_masks(self.data_dependent_size(stage, fold))  # (its draws first: the main stream stays as it was)
            if self.extras.random() < EXTRA_PROBABILITY:
                made = self.unique_or_repeat(stage, fold)
            elif self.sizes.random() < EXTRA_PROBABILITY:
                made = self.picked_count(stage, fold)
            else:
                if self.numbers.random() < NUMBERS_PROBABILITY:
                    made = made + self.python_numbers(stage, fold)
                if self.sets.random() < SETS_PROBABILITY:
                    made = made + self.set_indices(stage, fold)
            # (after the others, each from a stream of its own: they stay what they were, and
            # what a form makes is never dropped, so every threshold slot it takes is used)
            if self.dispatchers.random() < DISPATCH_PROBABILITY:
                made = made + self.sparse_dispatch(stage, fold)
            if self.kinds.random() < KINDS_PROBABILITY:
                made = made + self.kind_changes(stage, fold)
            return made
        if form == "lengths_enumerate":
            i, l = self.fresh("i"), self.fresh("l")
            use = [f"x = x + 0.1 * {l} * torch.tanh(x)", f"x = x * (1.0 + 0.05 * {i})"]
            if "outs" in self.outputs:
                use.append(f"outs.append({s} * {l})")
            if "count" in self.outputs:
                use.append(f"count += {l}")
            body = f"if {l} {r.choice(['>', '>=', '<', '=='])} {r.randint(0, 3)}:\n    {self.layer(stage)}"
            if r.random() < 0.5:
                body += f"\n{r.choice(use)}"
            body = body.replace("\n", "\n    ")
            return [Research(f"for {i}, {l} in enumerate(lengths):\n    {body}", form)]
        if form == "lengths_compare":
            a, b = r.sample(range(self.lengths), 2)
            first = r.choice([f"lengths[{a}] > lengths[{b}]", f"lengths[{a}] >= {r.randint(1, 3)}",
                              f"lengths[-1] < {r.randint(1, 3)}", "lengths[0] == lengths[-1]"])
            if r.random() < 0.4:
                first += r.choice([f" and lengths[{b}] > 0", f" or lengths[{b}] == {r.randint(0, 4)}"])
            text = f"if {first}:\n    {self.layer(stage)}"
            if r.random() < 0.4:
                text += f"\nelse:\n    {self.layer(stage)}"
            return [Research(text, form)]
        if form == "lengths_len":
            i, n = self.fresh("i"), self.fresh("n")
            choices = ["x = x * (1.0 + 0.1 * len(lengths))",
                       f"for {i} in range(len(lengths)):\n    x = x + 0.05 * lengths[{i}] * torch.tanh(x)",
                       f"{n} = sum([l > 1 for l in lengths])\nx = x * (1.0 + 0.1 * {n})",
                       "x = x * (2.0 / len(lengths))"]
            if "count" in self.outputs:
                choices.append("count += len(lengths)")
            return [Research(r.choice(choices), form)]
        if form == "attr_state":
            m = self.fresh("mem")
            write = r.choice([f"self.{m} = torch.tanh({s})", f"self.{m} = {s} * 0.5", f"self.{m} = torch.sigmoid({s}).detach()"])
            update = r.choice(["", f"\nself.{m} = self.{m} * 0.5 + torch.relu({s})", f"\nself.{m} += 0.1"])
            return [Research(f"{write}{update}\nx = x + 0.5 * {fold(f'self.{m}')}", form)]
        if form == "attr_list":
            heads, _ = self.heads()
            p = self.fresh("probs")
            fill = r.choice([f"for head in {heads}:\n    self.{p}.append(torch.sigmoid(head({s})))",
                             f"self.{p}.extend([torch.sigmoid(head({s})) for head in {heads}])"])
            merge = r.choice([f"torch.stack(self.{p}).mean(0)", f"sum(self.{p}) / len(self.{p})", f"self.{p}[-1]"])
            made = [Research(f"self.{p} = []\n{fill}\nx = x + {fold(merge)}", form)]
            return made + self.gate_list(stage, fold) if self.gates.random() < GATE_LIST_PROBABILITY else made
        if form == "attr_counter":
            n = self.fresh("n")
            orelse = [Research(r.choice([f"self.{n} -= 1", "pass"]), form)] if r.random() < 0.3 else None
            return [Research(f"self.{n} = 0", form),
                    If([(self.a_cond(stage), [Research(f"self.{n} += 1", form)])], orelse),
                    Research(f"x = x * (1.0 + 0.1 * self.{n})", form)]
        if form == "instance_forward":  # (its own stream and names: see INSTANCE_FORWARD_PROBABILITY)
            b, k = self.blocks, self.block_count
            self.block_count += 1
            block = b.choice(sorted(name for name in CLASSES if name.startswith("OnlyForward")))  # (SDN's blocks)
            self.classes.add(block)
            layer = f"nn.Conv2d({w}, {w}, 3, padding=1)" if stage == "image" else f"nn.Linear({w}, {w})"
            output = b.choice(["None", layer.replace(", 3, padding=1", ", 1")])
            self.register(f"rb{k}", f"{block}({layer}, {output})")
            name, o, y = f"self.rb{k}", f"is_output_b{k}", f"out_b{k}"
            use = b.choice([f"if {o}:\n    x = x + 0.5 * {y}", f"x = x + 0.5 * {y} if {o} else x",
                            f"if {y} is not None:\n    x = x * 0.5 + {y}"])
            return [Research(f"x, {o}, {y} = {name}(x)\n{use}", form)]
        if form == "cross_call_state":
            text = r.choice([
                f"self.saved.append({s})", "self.saved.append(x.detach())", "self.steps += 1",
                f"if self.ema is None:\n    self.ema = torch.zeros(())\nself.ema = self.ema * 0.5 + {s}.detach().mean()",
            ])
            text = self.extras.choice(self.paired_state(s)) if self.extras.random() < EXTRA_PROBABILITY else text
            return [Research(self.older_state(text), form)]
        raise ValueError(f"no such research form: {form}")

    def older_masks(self, stmts: list[Stmt]) -> list[Stmt]:
        """`data_dependent_size` as older code spells it (`spellings` only): `mask = (...).byte()`,
        then `rows[mask]` or `rows[mask.bool()]` (masked_select takes bools only); the buffer
        stored into as `Variable(torch.zeros(3, w))`, `rows.data.new(3, w).zero_()`, ... ; the
        picked count as a number in the statement's math (`picked.sum() / (picked.numel() + 1)`,
        `... .sum(0, keepdim=True) * idx.size(0) / 3.0`)."""
        sp = self.spellings
        byte, through_bool = sp.random() < SPELLING_PROBABILITY, sp.random() < 0.5
        buffer = sp.choice(["Variable(torch.zeros(3, {w}))", "{rows}.data.new(3, {w}).zero_()",
                            "Variable({rows}.data.new({rows}.size()).zero_())", "torch.zeros_like({rows}).fill_(0.25)"])
        buffer = buffer if sp.random() < SPELLING_PROBABILITY else None
        sized = sp.random() < SPELLING_PROBABILITY  # (drawn last: the draws above stay as they were)

        def spell(text: str) -> str:
            if byte:
                text = re.sub(r"^(mask\d+) = (.*)$", r"\1 = (\2).byte()", text, flags=re.MULTILINE)
                text = re.sub(r"(mask\d+)\.unsqueeze\(1\)", r"\1.bool().unsqueeze(1)", text)
                if through_bool:
                    text = re.sub(r"\[(mask\d+)\]", r"[\1.bool()]", text)
            if sized:  # the picked count as a number in the math of the statement that picks
                text = re.sub(r"0\.1 \* (picked\d+|rows\d+\[[^\]]+\]|torch\.masked_select\([^)]*\)\)|rows\d+\.masked_select\([^)]*\))\.sum\(\)",
                              r"0.1 * \1.sum() / (\1.numel() + 1)", text)
                text = re.sub(r"\.sum\(0, keepdim=True\)(\)*) \+ 0\.01 \* len\((idx\d+)\)",
                              r".sum(0, keepdim=True) * \2.size(0) / 3.0\1", text)
            rows = re.search(r"rows\d+", text)
            if buffer and rows:
                text = re.sub(r"= torch\.zeros\(3, (\d+)\)", lambda m: "= " + buffer.format(w=m[1], rows=rows[0]), text)
            return text

        for stmt in stmts:
            for inner in stmt.body if isinstance(stmt, For) else [stmt]:
                if isinstance(inner, Research):
                    inner.text = spell(inner.text)
        return stmts

    def older_state(self, text: str) -> str:
        """`cross_call_state` as older code spells it (`spellings` only): its zeros made by
        `Variable(...)`, `x.data.new(...).zero_()` or `fill_`, fed `.data` for `.detach()`."""
        sp = self.spellings
        if sp.random() >= SPELLING_PROBABILITY:
            return text
        zeros = sp.choice(["Variable(torch.zeros({size}))", "x.data.new({size}).zero_()", "torch.zeros({size}).fill_(0.5)"])

        def made(m: re.Match) -> str:
            size = m[1]
            return (zeros if size != "()" or not zeros.startswith("x.data") else "Variable(torch.zeros({size}))").format(size=size)

        return re.sub(r"torch\.zeros\((\(\)|[\d, ]+)\)", made, text).replace(".detach()", ".data")

    def paired_state(self, s: str) -> list[str]:
        """`cross_call_state` kept in a tuple (`self.pair`, None until the first call), or in
        two attributes that start None and are set together (`self.hs`, `self.cs`); read as
        scalars (it may land in either stage of forward)."""
        w = self.width
        return [  # (each counts its calls too: `self.steps` marks a program that keeps state)
            f"self.steps += 1\nif self.pair is None:\n    self.pair = (torch.zeros(1, {w}), torch.zeros(1, {w}))\n"
            f"self.pair = (self.pair[0] * 0.5 + {s}.detach().mean(), self.pair[1] + 0.1)\nx = x + 0.1 * self.pair[0].mean()",
            f"self.steps += 1\nif self.hs is None:\n    self.hs = torch.zeros(1, {w})\n    self.cs = torch.zeros(1, {w})\n"
            f"self.hs, self.cs = self.hs * 0.5 + {s}.detach().mean(), self.cs + 0.1\nx = x + 0.1 * self.cs.mean()",
        ]

    def surgery(self, form: str, stage: str, in_helper: bool) -> list[Stmt]:
        """List surgery at constant positions on a local list of (1, W) tensors, or on `outs`."""
        r = self.rng
        s = self.summary[stage]
        fold = lambda value: self.fold(value, stage)  # noqa: E731
        a, b = r.sample([f"torch.tanh({s})", f"{s} * 0.5", f"torch.sigmoid({s})", f"torch.relu({s})", f"{s} * -0.25"], 2)
        if not in_helper and "outs" in self.outputs and r.random() < 0.4:
            t = self.fresh("t")
            text = {
                "del_last": f"outs.append({a})\ndel outs[-1]",
                "pop_last": f"outs.append({a})\n{t} = outs.pop()\nx = x + 0.5 * {fold(t)}",
                "pop_first": f"outs.insert(0, {a})\n{t} = outs.pop(0)\nx = x + 0.5 * {fold(t)}",
                "slice_drop_last": f"outs.append({a})\nouts = outs[:-1]",
                "insert_front": f"outs.insert(0, {a})",
                "extend": f"outs.extend([{a}, {b}])",
                "prepend_concat": f"outs = [{a}] + outs",
            }[form]
            return [Research(text, form)]
        hs, t = self.fresh("hs"), self.fresh("t")
        items = r.sample([f"torch.tanh({s})", f"{s} * 0.5", f"torch.sigmoid({s})", f"{s} - 0.25", f"torch.relu({s})"], r.randint(3, 4))
        lines = [f"{hs} = [{', '.join(items)}]"]
        extra = None
        if form == "del_last":
            lines.append(r.choice([f"del {hs}[-1]", f"del {hs}[0]"]))
        elif form == "pop_last":
            if r.random() < 0.5:
                lines.append(f"{hs}.pop()")
            else:
                lines.append(f"{t} = {hs}.pop()")
                extra = t
        elif form == "pop_first":
            lines.append(f"{t} = {hs}.pop(0)")
            extra = t
        elif form == "slice_drop_last":
            if r.random() < 0.5:
                lines.append(r.choice([f"{hs} = {hs}[:-1]", f"{hs} = {hs}[1:]"]))
            else:
                extra = f"torch.stack({hs}[:-1]).sum(0)"
        elif form == "insert_front":
            lines.append(f"{hs}.insert(0, {a})")
        elif form == "extend":
            lines.append(f"{hs}.extend([{a}, {b}])")
        else:
            lines.append(f"{hs} = [{a}] + {hs}")
        merge = r.choice([f"torch.stack({hs}).mean(0)", f"sum({hs}) / len({hs})", f"({hs}[0] - {hs}[-1]) * 0.5"])
        lines.append(f"x = x + {fold(merge)}")
        if extra:
            lines.append(f"x = x + 0.5 * {fold(extra)}")
        return [Research("\n".join(lines), form)]
