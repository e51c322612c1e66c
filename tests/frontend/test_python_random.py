"""Python's and numpy's random draws in forward (docs/conventions.md, "Random ops").

Before, the frontend evaluated `random.random()` once, while compiling, as it evaluates any
expression of import-time values, and export froze a draw inside a captured helper: the
compiled model reused the example's draw at every call (LayerDrop ran the same layers every
time), a silent wrong answer. Now the scalar draws are torch's host draws, made at every call
with the same law; the cases whose answer is fixed (p = 0, p = 1, `uniform(a, a)`,
`randint(k, k)`) are exact; the others are refused at their line."""

from __future__ import annotations

import inspect

import pytest
import torch

import dycl
from dycl.frontend import FrontendError, import_module
from tests.frontend.random_models import HFLayerDrop, LayerDrop, NumpyNoiseHelper, RandomLayerChoice, RandomScaling

CALLS = 400
X = torch.randn(1, 4, generator=torch.Generator().manual_seed(0))


def _eager(model, *args):
    with torch.no_grad():
        return model(*args)


@pytest.mark.parametrize("p, ran", [(0.0, 3), (1.0, 0)])
def test_a_draw_of_fixed_answer_is_exact_call_after_call(p, ran):
    torch.manual_seed(0)
    model = LayerDrop(p=p).eval()
    compiled = dycl.compile(model, (X,), backend="onnxruntime", progress=False)
    expected, expected_ran = _eager(model, X)
    assert expected_ran == ran
    for _ in range(20):
        y, got_ran = compiled(X)
        assert got_ran == ran and (y - expected).abs().max() <= 1e-6


def test_layer_drop_draws_at_every_call_with_the_law_of_eager():
    """p = 0.5 over 3 layers: each call runs Binomial(3, 0.5) layers (mean 1.5, sd 0.87);
    the mean of 400 calls is within 0.2 of it (4.6 standard errors), and every count shows."""
    torch.manual_seed(0)
    compiled = dycl.compile(LayerDrop(p=0.5).eval(), (X,), backend="onnxruntime", progress=False)
    counts = [compiled(X)[1] for _ in range(CALLS)]
    assert set(counts) == {0, 1, 2, 3}
    assert abs(sum(counts) / CALLS - 1.5) < 0.2
    assert compiled.source.count("rt.rand(") >= 3  # (the loop over the layers is unrolled: a draw each)


def test_a_draw_only_training_reads_compiles_exactly():
    torch.manual_seed(0)
    model = HFLayerDrop().eval()
    compiled = dycl.compile(model, (X,), backend="onnxruntime", progress=False)
    expected = _eager(model, X)
    for _ in range(5):
        assert (compiled(X) - expected).abs().max() <= 1e-6


def test_draws_in_a_helper_and_of_numpy_are_made_at_every_call():
    torch.manual_seed(0)
    fixed = RandomScaling(low=1.5, high=1.5, p=1.0, counts=(2, 2)).eval()
    compiled = dycl.compile(fixed, (X,), backend="onnxruntime", progress=False)
    expected = _eager(fixed, X)
    assert bool(expected[1]) and expected[2] == 2
    for _ in range(5):  # uniform(a, a) = a, rand() < 1 always, randint(k, k) = k
        y, gated, k = compiled(X)
        assert (y - expected[0]).abs().max() <= 1e-6 and bool(gated) and k == 2
    torch.manual_seed(0)
    compiled = dycl.compile(RandomScaling().eval(), (X,), backend="onnxruntime", progress=False)
    outs = [compiled(X) for _ in range(CALLS)]
    gated = [bool(g) for _, g, _ in outs]
    ks = [k for _, _, k in outs]
    # rand() < 0.5: mean 0.5 (se 0.025); randint(1, 3): each of 1..3, mean 2 (se 0.041)
    assert abs(sum(gated) / CALLS - 0.5) < 0.1 and set(ks) == {1, 2, 3}
    assert abs(sum(ks) / CALLS - 2.0) < 0.15
    # uniform(0.9, 1.1) is drawn at every call: the outputs differ from call to call
    assert len({round(float(y.sum()), 5) for y, _, _ in outs}) > CALLS // 2


def _line(model_class, mark: str) -> int:
    import tests.frontend.random_models as module

    lines = inspect.getsource(module).splitlines()
    return next(k for k, text in enumerate(lines, start=1) if f"# line marker: {mark}" in text)


@pytest.mark.parametrize("model_class, mark, call", [
    (RandomLayerChoice, "choice", "random.choice(self.layers)"),
    (NumpyNoiseHelper, "numpy-noise", "np.random.normal(size=(4,))"),
])
def test_a_draw_dycl_does_not_lower_is_refused_at_its_line(model_class, mark, call):
    with pytest.raises(FrontendError) as raised:
        import_module(model_class().eval(), (X,))
    error = raised.value
    assert error.line == _line(model_class, mark), str(error)
    assert f"`{call}` draws a random number" in str(error) and "drawn once" in str(error)
