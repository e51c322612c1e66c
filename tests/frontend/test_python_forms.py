"""Small Python forms on runtime values (issue 34, items 5 and 9) compile with eager's
meaning (before, each was refused):

- `.tolist()` of a float tensor of static length: a list of runtime floats on the host
  (before: "torch.export raised NotImplementedError", FxImporter takes no float result);
- `lst.index(v)` of such a list (a beam search's `scores.index(max(scores))`, a decoder's
  `ids.index(eos)`): the first equal item, chosen on the host; eager's ValueError where no
  item is equal (before: "uses a tensor's value as a Python value");
- a list comprehension whose items are decided at run time (over a tensor's rows with a
  test of their values, `[d for d in dets if d[-1] > t]`, or over a list of runtime
  length) is the loop Python runs for it (before: "uses a tensor's value as a Python
  value", or "a comprehension over a list whose length is only known at runtime");
- `.tolist()` of a tensor of runtime length (`(g > 0).nonzero().flatten().tolist()`): a
  runtime list of numbers the host fills; `torch.tensor(lst, dtype=...)` of such a list, and
  `torch.tensor(out)` of a list of runtime floats of known length (before: "uses a
  tensor's value as a Python value", "cannot be captured as a tensor program");
- `for v in reversed(x.numpy())`: the rows last first (before: "`reversed` is not lowered
  for numpy");
- sets of runtime ints (issue 34, item 9.2): `set(range(b)) - set(finished)` visited through
  `sorted(...)`, `&`, `|`, `^`, `len`, `in` (a set is the sorted list of its distinct items,
  made by host loops); `sorted(lst)` of runtime ints (`reverse=True` too); `lst.index(v,
  start)`; `x.numpy()[::-1]` (before: each refused);
- refused at the line: a use of a set where its order shows (`for i in s`, `list(s)`: CPython
  iterates a set in its hash table's order); `sorted` of runtime floats; `torch.from_numpy`
  of a reversed array (eager raises); `torch.tensor(lst)` of a runtime-length list of ints
  without a dtype (an empty list makes float32, a non-empty one int64).
"""

from __future__ import annotations

import inspect

import pytest
import torch

import dycl
from tests.frontend import python_form_models as M
from tests.frontend.helpers import compiled_error, eager, seeded_model, tiered

CASES = {
    "float_tolist_gate": (M.ConfidenceGate, M.gate_inputs),
    "index_of_max_score": (M.BeamPick, M.beam_inputs),
    "index_of_end_token": (M.EosPosition, M.eos_inputs),
    "filtered_rows": (M.KeptDetections, M.detection_inputs),
    "comprehension_over_runtime_list": (M.GreedyTokensScaled, M.greedy_inputs),
    "tolist_of_runtime_length": (M.ExpertCounts, M.expert_inputs),
    "reversed_numpy_rows": (M.ReversedScan, M.reversed_inputs),
    "zero_dropped_rows": (M.ZeroDropped, M.dropped_inputs),
    "set_difference_of_rows": (M.UnfinishedRows, M.unfinished_inputs),
    "set_operators": (M.ExpertSets, M.expert_set_inputs),
    "sorted_runtime_ints": (M.SortedPositions, M.sorted_inputs),
    "index_with_start": (M.SecondEndToken, M.second_end_inputs),
    "reversed_numpy_slice": (M.ReversedNumpyScores, M.reversed_numpy_inputs),
}


def _every_path(name: str, model, args_list) -> None:
    """The inputs take each path of the form (else the test would not test it)."""
    if name == "float_tolist_gate":
        firsts = [model.head(a[0]).softmax(-1).max(-1).values[0].item() for a in args_list]
        assert any(f > 0.4 for f in firsts) and any(f <= 0.4 for f in firsts)
    elif name == "index_of_max_score":
        bests = {model.proj(a[0]).log_softmax(-1).max(-1).values.argmax().item() for a in args_list}
        assert len(bests) >= 3
    elif name == "index_of_end_token":
        assert {a[0].argmax(-1).tolist().index(M.EosPosition.eos) for a in args_list} == {0, 1, 2}
    elif name == "filtered_rows":
        assert {int((a[0][:, -1] > model.threshold).sum()) for a in args_list} >= {0, 1, 3, 5}
    elif name == "comprehension_over_runtime_list":
        assert {len(eager(model, a)) - 1 for a in args_list} == {0, 1, 2, 4}
    elif name == "zero_dropped_rows":
        assert {int((a[0].sum(1) <= 0).sum()) for a in args_list} >= {0, 5} and len({int((a[0].sum(1) <= 0).sum()) for a in args_list}) >= 3
    elif name == "tolist_of_runtime_length":
        assert {len(eager(model, a)[0]) for a in args_list} == {0, 1, 4, 6}
    elif name == "set_difference_of_rows":
        assert {eager(model, a)[1] for a in args_list} >= {0, 5} and len({eager(model, a)[1] for a in args_list}) >= 3
    elif name == "set_operators":
        outs = [eager(model, a) for a in args_list]
        assert {len(o[0]) for o in outs} >= {1, 3} and {o[3] for o in outs} == {0.0, 1.0}
    elif name == "sorted_runtime_ints":
        assert {len(eager(model, a)) for a in args_list} == {1, 5, 9, 13}
    elif name == "index_with_start":
        assert len({eager(model, a)[1] for a in args_list}) >= 2


def _compiled_error(name: str, backend: str) -> float:
    factory, inputs = CASES[name]
    model = seeded_model(factory)
    args_list = inputs()
    _every_path(name, model, args_list)
    return compiled_error(model, args_list, backend)


@pytest.mark.parametrize("name", sorted(CASES))
def test_python_form_on_onnxruntime(name):
    assert _compiled_error(name, "onnxruntime") <= 1e-5


def test_index_not_in_list_raises_eagers_value_error():
    model = M.EosPosition()
    args_list = M.eos_inputs()
    compiled = dycl.compile(model, args_list[0], backend="onnxruntime", progress=False)
    no_end = (torch.eye(4)[[0, 1, 3]],)
    with pytest.raises(ValueError):
        model(*no_end)
    with pytest.raises(ValueError, match="not in the list"):
        compiled(*no_end)


@pytest.mark.parametrize("name", tiered(CASES, set()))
def test_python_form_on_tvm(name):
    assert _compiled_error(name, "tvm") <= 1e-5


def test_tensor_of_runtime_int_list_without_dtype_is_refused_at_its_line():
    class Lengths(torch.nn.Module):
        def forward(self, x):
            idx = (x > 0).nonzero().flatten().tolist()
            lengths = [i + 1 for i in idx]
            return torch.tensor(lengths)

    with pytest.raises(dycl.FrontendError) as refused:
        dycl.compile(Lengths(), (torch.tensor([1.0, -1.0, 2.0, 3.0, -2.0, 1.0]),), backend="onnxruntime", progress=False)
    assert refused.value.line == inspect.getsourcelines(Lengths.forward)[1] + 3
    assert "its dtype depends on that length" in str(refused.value)


def test_iterating_a_set_of_runtime_ints_is_refused_at_its_use():
    """CPython iterates a set in its hash table's order (`{9, 3}` gives 9 first): only
    order-free uses compile, and the refusal names the use."""
    class SetOrder(torch.nn.Module):
        def forward(self, x):
            keep = (x.sum(1) > 0).nonzero().flatten().tolist()
            drop = set(range(x.size(0))) - set(keep)
            out = x.clone()
            for i in drop:
                out[i] = 0
            return out

    class SetIterated(torch.nn.Module):
        def forward(self, x):
            keep = (x.sum(1) > 0).nonzero().flatten().tolist()
            return torch.tensor(list(set(keep)) + [0], dtype=torch.long)

    for model, line in ((SetOrder(), 5), (SetIterated(), 3)):
        with pytest.raises(dycl.FrontendError) as refused:
            dycl.compile(model, (torch.randn(5, 3),), backend="onnxruntime", progress=False)
        assert refused.value.line == inspect.getsourcelines(type(model).forward)[1] + line - 1, refused.value
        assert "hash table's order" in str(refused.value) and "sorted(" in str(refused.value)


def test_sorted_of_runtime_floats_is_refused_at_its_line():
    class SortedScores(torch.nn.Module):
        def forward(self, x):
            scores = x.sum(1).tolist()
            return torch.tensor(sorted(scores))

    with pytest.raises(dycl.FrontendError) as refused:
        dycl.compile(SortedScores(), (torch.randn(5, 3),), backend="onnxruntime", progress=False)
    assert refused.value.line == inspect.getsourcelines(SortedScores.forward)[1] + 2
    assert "runtime ints only" in str(refused.value)


def test_from_numpy_of_a_reversed_array_is_refused_as_eager_raises():
    class FromReversed(torch.nn.Module):
        def forward(self, x):
            return torch.from_numpy(x.numpy()[::-1]) * 2

    with pytest.raises(ValueError):
        FromReversed()(torch.randn(4))
    with pytest.raises(dycl.FrontendError) as refused:
        dycl.compile(FromReversed(), (torch.randn(4),), backend="onnxruntime", progress=False)
    assert "negative stride" in str(refused.value)
