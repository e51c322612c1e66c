"""The reference interpreter against eager PyTorch."""

import pytest
import torch

from dycl.interpreter import InterpretationError, output_tree, run_function, unflatten
from dycl.ir import parse_module
from tests.foundation import samples
from tests.foundation.models import ConvBnLinear, ResNetLike, randomize_bn
from tests.support.static_import import import_static


@pytest.mark.parametrize("model", [ConvBnLinear(), ResNetLike(depth=2)], ids=type)
def test_static_models_match_eager_exactly(model):
    model = randomize_bn(model)
    x = torch.randn(2, 3, 8, 8)
    module, weights = import_static(model, x)
    for seed in range(3):
        x = torch.randn(2, 3, 8, 8, generator=torch.Generator().manual_seed(seed))
        got = run_function(module, [x], weights)
        with torch.no_grad():
            want = model(x)
        want = want if isinstance(want, tuple) else (want,)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert torch.equal(g, w)


def _early_exit_eager(x, w):
    h = torch.nn.functional.linear(x, w["fc.weight"], w["fc.bias"])
    if h.max() > 0.5:
        return h, 0
    return torch.nn.functional.linear(torch.relu(h), w["fc.weight"], w["fc.bias"]), 1


def test_scf_if_takes_both_branches_like_eager():
    module = parse_module(samples.EARLY_EXIT)
    weights = samples.weights()
    taken = set()
    for x in samples.inputs():
        got = unflatten(output_tree(module.ops.first), run_function(module, [x], weights))
        want = _early_exit_eager(x, weights)
        assert torch.equal(got[0], want[0]) and got[1] == want[1]
        taken.add(got[1])
    assert taken == {0, 1}


def _gated_loop_eager(x, w):
    count = 0
    for _ in range(4):
        if x.sum() > 0:
            x = x - x @ w["fc.weight"]
            count += 1
        else:
            x = -x
    return x, count


def test_scf_for_with_gates_and_counter():
    module = parse_module(samples.GATED_LOOP)
    weights = samples.weights()
    counts = set()
    for x in samples.inputs():
        got = run_function(module, [x], weights)
        want = _gated_loop_eager(x, weights)
        assert torch.equal(got[0], want[0]) and got[1] == want[1]
        counts.add(got[1])
    assert len(counts) >= 3


def test_scf_while_with_data_dependent_exit():
    module = parse_module(samples.BOUNDED_WHILE)
    trips = set()
    for x in samples.inputs():
        v, i = x, 0
        while i < 6 and v.max().item() < 8.0:
            v, i = v * 2.0, i + 1
        got = run_function(module, [x])
        assert torch.equal(got[0], v) and got[1] == i
        trips.add(i)
    assert 0 in trips and 6 in trips and len(trips) >= 3


def test_missing_weight_is_a_clear_error():
    module = parse_module(samples.EARLY_EXIT)
    with pytest.raises(Exception, match="no weight named 'fc.weight'"):
        run_function(module, [torch.zeros(1, 4)], {})


def test_unflatten_nested_structures():
    tree = {"tuple": [0, {"list": [1, {"tuple": [2]}]}]}
    assert unflatten(tree, ["a", "b", "c"]) == ("a", ["b", ("c",)])
    assert unflatten(None, ["only"]) == "only"
