"""Random ops compile to host draws (docs/conventions.md, "Random ops"): the law of torch's
op on both backends, and the cases whose answer is fixed exactly (`bernoulli` of 0 and 1,
`multinomial` of one-hot weights, `randint(k, k + 1)`, `uniform(a, a)`, `normal(m, 0)`).

Before, `torch.bernoulli` went into a sub-DNN: ONNX Runtime 1.31's `Bernoulli` answered the
complement (1 for p = 0, 0 for p = 1), so PonderNet halted at its first step where eager
ran to the last; TVM's Relax import had no `rand` and failed the compile. Random ops that
DyCL does not reproduce are refused at the statement that draws."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import torch

import dycl
from dycl.frontend import import_module
from tests.frontend.random_models import (
    DRAW_NAMES, Draws, EvalDropout, NormalNoise, Permuted, PonderNet, PonderSteps, TrainingDropout,
)

CALLS = 5
SAMPLE = 20000
DEGENERATE = dict(p_fixed=1.0, low=3, high=4, uniform=(2.0, 2.0), normal=(1.5, 0.0), samples=3, replacement=True)
ONE_HOT = torch.tensor([[0.0, 0.0, 0.7, 0.0], [1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 2.5]])


def marked(model_class, mark: str) -> int:
    lines, first = inspect.getsourcelines(model_class)
    return first + next(k for k, text in enumerate(lines) if f"# line marker: {mark}" in text)


def _compile(model, inputs, backend):
    return dycl.compile(model.eval(), inputs, backend=backend, progress=False)


def degenerate_inputs():
    p = torch.tensor([0.0, 1.0, 0.0, 1.0, 1.0, 0.0])
    return p, ONE_HOT, torch.zeros(6)


def check_degenerate(compiled) -> None:
    """Every draw of fixed answer is that answer, call after call."""
    p, probs, like = degenerate_inputs()
    for _ in range(CALLS):
        out = dict(zip(DRAW_NAMES, compiled(p, probs, like)))
        assert torch.equal(out["bernoulli"], p)
        assert torch.equal(out["bernoulli_p"], torch.ones(6))
        assert torch.equal(out["rand_below"], p.bool())
        assert out["rand"].dtype == torch.float32 and ((out["rand"] >= 0) & (out["rand"] < 1)).all()
        assert torch.equal(out["randint"], torch.full((6,), 3))
        assert torch.equal(out["multinomial"], torch.tensor([[2, 2, 2], [0, 0, 0], [3, 3, 3]]))
        assert torch.equal(out["uniform"], torch.full((6,), 2.0))
        assert torch.equal(out["normal"], torch.full((6,), 1.5))
        assert out["randn"].shape == (6,) and out["randn_size"].shape == (6,) and (out["exponential"] >= 0).all()


def distribution_inputs():
    return torch.full((SAMPLE,), 0.3), torch.tensor([[1.0, 2.0, 3.0, 4.0]]).expand(SAMPLE, 4).contiguous(), torch.zeros(SAMPLE)


def check_distribution(compiled) -> None:
    """Means (and spreads) of one fixed large sample per op, each within 0.02 of torch's law
    (at least 6 standard errors of the sample: a statistical assertion, not a timing)."""
    out = dict(zip(DRAW_NAMES, (v.double() for v in compiled(*distribution_inputs()))))
    assert abs(out["bernoulli"].mean() - 0.3) < 0.02
    assert abs(out["bernoulli_p"].mean() - 0.3) < 0.02
    assert abs(out["rand_below"].mean() - 0.3) < 0.02
    assert abs(out["rand"].mean() - 0.5) < 0.02
    for name in ("randn", "randn_size", "normal"):
        assert abs(out[name].mean()) < 0.03 and abs(out[name].std() - 1.0) < 0.02, name
    assert abs(out["randint"].mean() - 1.5) < 0.03 and set(out["randint"].unique().tolist()) == {0, 1, 2, 3}
    frequencies = torch.bincount(out["multinomial"][:, 0].long(), minlength=4) / SAMPLE
    assert (frequencies - torch.tensor([0.1, 0.2, 0.3, 0.4], dtype=torch.float64)).abs().max() < 0.02
    assert abs(out["uniform"].mean() - 0.5) < 0.02 and out["uniform"].min() >= 0 and out["uniform"].max() < 1
    assert abs(out["exponential"].mean() - 0.5) < 0.02


def check_pondernet(backend: str) -> None:
    """Halting probability exactly 0 until the last step (every sample ponders max_steps)
    and exactly 1 from the first: the compiled model halts where eager does, every call."""
    x = torch.randn(3, 6, generator=torch.Generator().manual_seed(0))
    for bias, steps in ((-1000.0, 4), (1000.0, 1)):
        torch.manual_seed(1)
        model = PonderNet(max_steps=4, bias=bias).eval()
        compiled = _compile(model, (x,), backend)
        with torch.no_grad():
            expected = model(x)
        assert torch.equal(expected[2], torch.full((3,), steps))
        for _ in range(CALLS):
            y, p, halting_step = compiled(x)
            assert torch.equal(halting_step, expected[2])
            assert y.shape == expected[0].shape and (y - expected[0]).abs().max() <= 1e-5
            assert torch.equal(p, expected[1])


# ------------------------------------------------------------------ ONNX Runtime


def test_pondernet_halts_at_the_step_eager_halts_at_on_onnxruntime():
    """The old wrong answer: ORT's `Bernoulli` gave 1 for p = 0, so the compiled PonderNet
    stopped after one step where eager pondered to max_steps."""
    x = torch.randn(1, 6, generator=torch.Generator().manual_seed(2))
    torch.manual_seed(3)
    model = PonderSteps(max_steps=5, bias=-1000.0).eval()
    compiled = dycl.compile(model, (x,), backend="onnxruntime", progress=False)
    assert compiled.manifest["check"]["passed"] is True
    assert [compiled(x)[1] for _ in range(CALLS)] == [model(x)[1]] * CALLS == [5] * CALLS


def test_pondernet_outputs_match_eager_on_onnxruntime():
    check_pondernet("onnxruntime")


def test_draws_of_fixed_answer_are_exact_on_onnxruntime():
    check_degenerate(_compile(Draws(**DEGENERATE), degenerate_inputs(), "onnxruntime"))


def test_draws_follow_torchs_law_on_onnxruntime():
    check_distribution(_compile(Draws(lambd=2.0), distribution_inputs(), "onnxruntime"))


def test_a_random_halting_loop_compiles_and_records_its_check():
    """lambda_n in (0, 1): eager and compiled draw differently, so `dycl.compile`'s check
    records the difference (if any) rather than raising; both halt within max_steps."""
    torch.manual_seed(4)
    model = PonderSteps(max_steps=5).eval()
    x = torch.randn(1, 6)
    compiled = dycl.compile(model, (x,), backend="onnxruntime", progress=False)
    assert compiled.manifest["check"]["draws"] == ["torch.aten.bernoulli"]
    assert {compiled(x)[1] for _ in range(40)} <= set(range(1, 6))


# ------------------------------------------------------------------------- TVM


@pytest.mark.slow
def test_pondernet_outputs_match_eager_on_tvm():
    check_pondernet("tvm")


@pytest.mark.slow
def test_draws_of_fixed_answer_are_exact_on_tvm():
    check_degenerate(_compile(Draws(**DEGENERATE), degenerate_inputs(), "tvm"))


@pytest.mark.slow
def test_draws_follow_torchs_law_on_tvm():
    check_distribution(_compile(Draws(lambd=2.0), distribution_inputs(), "tvm"))


# -------------------------------------------------------------------- refusals


@pytest.mark.parametrize("model_class, mark, op", [
    (Permuted, "randperm", "randperm"),
    (TrainingDropout, "dropout", "dropout"),
    (NormalNoise, "normal", "normal.Tensor_float"),
], ids=["randperm", "dropout_in_training", "normal_of_a_tensor"])
def test_random_ops_dycl_does_not_reproduce_are_refused_at_their_line(model_class, mark, op):
    with pytest.raises(dycl.FrontendError) as caught:
        import_module(model_class().eval(), (torch.randn(2, 4),))
    assert caught.value.line == marked(model_class, mark), caught.value
    assert f"torch.ops.aten.{op}`" in str(caught.value)


def test_dropout_that_draws_nothing_compiles():
    torch.manual_seed(0)  # (ONNX Runtime's linear may round one ulp apart from torch's: not equal, close)
    model = EvalDropout().eval()
    x = torch.randn(2, 4)
    compiled = dycl.compile(model, (x,), backend="onnxruntime", progress=False)
    with torch.no_grad():
        assert (compiled(x) - model(x)).abs().max() <= 1e-6


def test_host_draws_refuse_what_torch_refuses():
    from dycl.runtime import random_draws

    for bad in (lambda: random_draws.bernoulli(np.array([1.5], np.float32)),
                lambda: random_draws.randint(2, 2, (3,)),
                lambda: random_draws.multinomial(np.zeros((1, 3)), 1),
                lambda: random_draws.multinomial(np.ones((1, 3)), 4)):
        with pytest.raises(ValueError, match="torch"):
            bad()
    # past the categories of positive weight, the rest are drawn (torch's topk order of ties)
    picks = random_draws.multinomial(np.array([[0.0, 1.0, 0.0, 0.0]]), 4)
    assert picks[0, 0] == 1 and sorted(picks[0].tolist()) == [0, 1, 2, 3]


def test_host_draws_are_arrays_even_of_no_dims():
    """host.py passes a draw to a backend runner, which takes arrays only (a 0-d numpy
    float32 scalar failed ORT's run: a fuzz program's `torch.bernoulli((x.mean() > t).float())`)."""
    from dycl.runtime import random_draws

    zero = np.zeros((), np.float32)
    for drawn in (random_draws.bernoulli(zero), random_draws.bernoulli(shape=(), p=1.0, dtype=np.float32),
                  random_draws.rand((), np.float16), random_draws.randn((), np.float32), random_draws.randint(0, 3, ()),
                  random_draws.uniform(zero, 1.0, 2.0), random_draws.normal(zero), random_draws.exponential(zero)):
        assert isinstance(drawn, np.ndarray) and drawn.shape == ()
