"""The sparsely gated mixture of experts as published (issue 34, items 8 and 9), compared
with eager PyTorch on inputs that take every path: experts given no row, one row, many; all
rows on one expert; `topk(k)` with k from the data at 0 and at its largest.

- `SparseDispatcher`, a plain Python object built in forward, its methods called in later
  statements (helper_objects.py): its attributes are variables of the call;
- `torch.nonzero(gates).sort(0)`, `torch.nonzero(gates)[idx, 0]`, `split` by the counts of
  `(gates > 0).sum(0).tolist()` (one host slice per expert, a runtime length each),
  `torch.cat(expert_out, 0)` of those lengths (on the host), `index_add` back;
- `topk(k)` with k computed from the data: its values; its indices, and a beam search whose
  captured step reads them, are refused at the line (topk's order of equal values is its own).
"""

from __future__ import annotations

import inspect

import pytest
import torch

import dycl
from dycl.frontend import FrontendError, import_module
from tests.frontend import moe_dispatch_models as M
from tests.frontend.helpers import BranchCoverage, compiled_error, eager, if_ops, max_abs_error, run, seeded_model, tiered


def _logit_inputs(layer_weight: torch.Tensor, bias: torch.Tensor | None, logits: list[list[float]]) -> torch.Tensor:
    """Rows whose logits under `x @ W + b` (W: [in, out]) are `logits` (W has full column rank)."""
    target = torch.tensor(logits)
    if bias is not None:
        target = target - bias
    return target @ torch.linalg.pinv(layer_weight)


def moe_inputs(k: int = 2) -> list[tuple[torch.Tensor]]:
    """Eight rows routed by their gate logits: the example spreads them over every expert (at
    least two rows each); then two experts get no row, one expert one row, all rows one
    expert (or, at k=2, the same two)."""
    weight = seeded_model(M.MoE).w_gate.detach()
    generator = torch.Generator().manual_seed(3)
    spread = torch.randn(8, 4, generator=generator)
    spread[:, :] += torch.eye(4).repeat(2, 1) * 4.0  # (row r prefers expert r % 4)
    favour_01 = torch.tensor([3.0, 2.0, -1.0, -2.0]) + torch.rand(8, 4, generator=generator) * 0.5
    one_row = torch.tensor([2.0, 1.0, -3.0, 0.0]) + torch.rand(8, 4, generator=generator) * 0.5
    one_row[5] = torch.tensor([-1.0, 0.0, 4.0, 3.0])  # (expert 2 gets row 5 only)
    all_on_3 = torch.tensor([-1.0, 0.5, 0.0, 4.0]) + torch.rand(8, 4, generator=generator) * 0.5
    return [(_logit_inputs(weight, None, logits.tolist()),) for logits in (spread, favour_01, one_row, all_on_3)]


def _rows_per_expert(model, args) -> list[int]:
    gates, _ = model.noisy_top_k_gating(args[0], False)
    return (gates > 0).sum(0).tolist()


def test_the_inputs_route_every_way():
    """What the tests claim about the inputs: experts with 0, 1 and many rows, all on one."""
    for factory, k in ((M.MoE, 2), (M.MoETop1, 1)):
        model = seeded_model(factory)
        counts = [_rows_per_expert(model, args) for args in moe_inputs(k)]
        assert min(counts[0]) >= 2, counts[0]
        assert 0 in counts[1] and 1 in counts[2], counts
        assert max(counts[3]) == 8, counts[3]
    counts = [_rows_per_expert(seeded_model(M.MoETop1), args) for args in moe_inputs(1)]
    assert counts[3] == [0, 0, 0, 8], counts


CASES = {
    "moe_top2": (M.MoE, lambda: moe_inputs(2)),
    "moe_top1": (M.MoETop1, lambda: moe_inputs(1)),
    "moe_expert_batches": (M.MoEExpertBatches, lambda: moe_inputs(2)),
}


# The interpreter legs cost about 10 s each (the dispatcher's runs are captured for sizes 0,
# 1 and more of two runtime lengths); a compile is 45-95 s cold (about 50 sub-DNNs, ONNX
# Runtime): the default tier keeps one interpreter leg, the slow tier the rest.
@pytest.mark.parametrize("name", tiered(CASES, {"moe_top2"}))
def test_moe_dispatch_is_exact_on_the_interpreter(name):
    factory, inputs = CASES[name]
    model = seeded_model(factory)
    args_list = inputs()
    program = import_module(model, args_list[0])
    error = max(max_abs_error(eager(model, args), run(program, args)) for args in args_list)
    print(f"{name} on the interpreter: max abs error {error:.3g}")
    assert error <= 1e-5


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["onnxruntime", "tvm"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_moe_dispatch_compiles_exactly(backend, name):
    factory, inputs = CASES[name]
    model = seeded_model(factory)
    error = compiled_error(model, inputs(), backend)
    print(f"{name} on {backend}: max abs error {error:.3g}")
    assert error <= 1e-5


def test_the_dispatcher_is_compiled_as_variables_of_the_call():
    """No run holds the dispatcher: its `__init__`, `dispatch` and `combine` are inlined, the
    nonzero positions made on the host, the pieces of the split cut there too."""
    model = seeded_model(M.MoE)
    program = import_module(model, moe_inputs()[0])
    names = [getattr(getattr(op, "op_name", None), "data", None) or op.name for op in program.module.walk()]
    assert names.count("torch.aten.nonzero") == 2  # (`torch.nonzero(gates)` twice, as written)
    assert names.count("torch.aten.slice.Tensor") >= 8  # (4 experts' rows and 4 experts' gates)


def _line_of(function, text: str) -> int:
    lines, first = inspect.getsourcelines(function)
    return first + next(k for k, line in enumerate(lines) if text in line)


def test_an_object_used_after_the_next_of_its_class_is_refused_at_its_line():
    model = seeded_model(M.TwoDispatchers)
    with pytest.raises(FrontendError) as raised:
        import_module(model, moe_inputs()[0])
    error = raised.value
    assert (error.file, error.line) == (M.__file__, _line_of(M.TwoDispatchers.forward, "# REFUSED"))
    assert "`SparseDispatcher` built before the one built at line" in str(error)


def adaptive_inputs() -> list[tuple[torch.Tensor]]:
    """Router scores with 3 (the example), 0, 1 and all 5 above 0: `topk(k)` at its extremes."""
    router = seeded_model(M.AdaptiveTopK).router
    weight, bias = router.weight.detach().t(), router.bias.detach()
    rows = [[1.0, -2.0, 0.5, 2.0, -1.0], [-1.0, -2.0, -0.5, -3.0, -0.25], [-1.0, 0.7, -0.5, -3.0, -0.25], [0.3, 1.2, 0.5, 2.5, 0.9]]
    return [(_logit_inputs(weight, bias, [row]),) for row in rows]


def test_topk_of_a_k_from_the_data_is_exact_at_its_extremes():
    model = seeded_model(M.AdaptiveTopK)
    args_list = adaptive_inputs()
    assert [eager(model, args)[2] for args in args_list] == [3, 0, 1, 5]
    program = import_module(model, args_list[0])
    assert max(max_abs_error(eager(model, args), run(program, args)) for args in args_list) <= 1e-6
    compiled = dycl.compile(model, args_list[0], backend="onnxruntime", progress=False)
    error = max(max_abs_error(eager(model, args), compiled(*args)) for args in args_list)
    print(f"topk(k) values on onnxruntime: max abs error {error:.3g}")
    assert error <= 1e-6


@pytest.mark.parametrize("factory, function", [
    (M.AdaptiveTopKIndices, M.AdaptiveTopKIndices.forward),
    (M.ShrinkingBeamSearch, M.BeamStep.forward),
], ids=["indices", "beam_step_captured_whole"])
def test_topk_indices_of_a_k_from_the_data_are_refused_at_the_line(factory, function):
    model = seeded_model(factory)
    args = adaptive_inputs()[0] if factory is M.AdaptiveTopKIndices else (torch.randn(1, 8),)
    with pytest.raises(FrontendError) as raised:
        import_module(model, args)
    error = raised.value
    assert (error.file, error.line) == (M.__file__, _line_of(function, "# REFUSED")), str(error)
    assert "reads the indices of `topk` of a `k` known only at run time" in str(error)


def stats_inputs() -> list[tuple[torch.Tensor]]:
    """`y.max() > self.peak` both ways: tanh(x) and 2x past the linear layer's maximum or not."""
    generator = torch.Generator().manual_seed(5)
    return [(torch.randn(3, 4, generator=generator) * scale,) for scale in (3.0, 0.05, 1.0, 10.0)]


def test_a_helper_object_is_exact_on_every_path():
    model = seeded_model(M.StatsObject)
    args_list = stats_inputs()
    program = import_module(model, args_list[0])
    coverage = BranchCoverage()
    for args in args_list:
        assert max_abs_error(eager(model, args), run(program, args, coverage)) <= 1e-6
    branches = if_ops(program)
    assert branches and all(len(coverage.taken[id(op)]) == 2 for op in branches), "a branch of `add` never ran"
    compiled = dycl.compile(model, args_list[0], backend="onnxruntime", progress=False)
    error = max(max_abs_error(eager(model, args), compiled(*args)) for args in args_list)
    print(f"helper object on onnxruntime: max abs error {error:.3g}")
    assert error <= 1e-5


@pytest.mark.parametrize("factory, message", [
    (M.StatsSetOutside, "assignment to an attribute of something that is not the module"),
    (M.StatsUnknownAttribute, "a `RunningStats` object has no attribute `variance`"),
    (M.StatsInADict, "keeps a `RunningStats` object elsewhere than in a variable"),
], ids=["set_outside", "unknown_attribute", "kept_in_a_dict"])
def test_helper_object_refusals_are_located(factory, message):
    model = seeded_model(factory)
    with pytest.raises(FrontendError) as raised:
        import_module(model, stats_inputs()[0])
    error = raised.value
    assert (error.file, error.line) == (M.__file__, _line_of(factory.forward, "# REFUSED")), str(error)
    assert message in str(error)


def test_a_squeeze_that_drops_no_dim_of_rows_of_a_runtime_count_compiles():
    """(torch.onnx wrote it as a Squeeze of dim 1, which ONNX Runtime rejected: "Dimension of
    input 1 must be 1 instead of 6"; fx_rebuild now keeps the tensor itself.)"""
    model = M.GatheredRowsSqueezed()
    generator = torch.Generator().manual_seed(7)
    args_list = [(torch.randn(5, 6, generator=generator) + shift,) for shift in (0.0, -9.0, 9.0)]
    compiled = dycl.compile(model, args_list[0], backend="onnxruntime", progress=False)
    assert {len(eager(model, args)) for args in args_list} == {0, 5} | {len(eager(model, args_list[0]))}
    assert max(max_abs_error(eager(model, args), compiled(*args)) for args in args_list) == 0.0
