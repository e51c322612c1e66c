"""Sizes that depend on the data (`nonzero`, `x[mask]`, `masked_select`, stores at such
indices): the size is made on the host and is a runtime dim from there on, 0 and 1
included. Exact against eager on inputs that make every size the models can see."""

from __future__ import annotations

import inspect

import pytest
import torch
from xdsl.dialects import scf

import dycl
from dycl.dialects.torch_ops import Category, op_info
from dycl.frontend import import_module
from dycl.frontend.joins import BY_SIZE
from tests.frontend.data_size_models import (
    AdaptiveComputationTime,
    BatchEarlyExit,
    BeamSearch,
    ShowAttendTellBeam,
    MaskedSelect,
    NonzeroRows,
    TokenPruning,
    DuplicateRows,
    ExpandBySpans,
    GreedyCTC,
    LabelPooling,
    UniqueScoreRows,
    PrototypeRefresh,
    SDNBatchExit,
    LiveRowsMean,
    LiveRowsBlock,
    ClassWiseTopK,
    TopScoresPadded,
    FirstLiveRows,
    ValidBoxes,
)
from tests.frontend.helpers import BranchCoverage, assert_compiled_exactly, assert_imported_exactly, eager, max_abs_error, run


def pruning_inputs():
    """Token scores above the threshold for none, one, some and all of five tokens (each
    token moved along the scoring weights to a logit of +3 or -3)."""
    generator = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    score = TokenPruning().score
    weight, bias = score.weight.detach()[0], score.bias.detach()[0]
    inputs = []
    for kept in (0, 1, 3, 5, 2):
        tokens = torch.randn(5, 6, generator=generator)
        target = torch.tensor([3.0] * kept + [-3.0] * (5 - kept))
        tokens = tokens + ((target - tokens @ weight - bias) / weight.dot(weight)).unsqueeze(1) * weight
        inputs.append((tokens,))
    return inputs


def rows_inputs():
    """Rows whose sums are positive for none, one, two and all of five rows."""
    generator = torch.Generator().manual_seed(1)
    inputs = []
    for live in (3, 0, 1, 2, 5):
        x = -torch.rand(5, 4, generator=generator)
        x[:live] = x[:live].abs() + 0.1
        inputs.append((x,))
    return inputs


def masked_select_inputs():
    generator = torch.Generator().manual_seed(2)
    return [
        (torch.randn(4, 5, generator=generator), torch.randn(1, 5, generator=generator)),
        (-torch.rand(4, 5, generator=generator), -torch.rand(1, 5, generator=generator)),
        (torch.rand(4, 5, generator=generator), torch.tensor([[1.0, -1.0, -1.0, -1.0, -1.0]])),
    ]


def early_exit_inputs():
    """Scales at which no sample, some, one and all leave at the first exits."""
    generator = torch.Generator().manual_seed(0)
    torch.randn(8 * 6 * 4, generator=generator)
    return [(torch.randn(8, 6, generator=generator) * scale,) for scale in (0.1, 2.0, 3.0, 10.0, 1.0)]


def act_inputs():
    """The halting unit reads the first feature: 3.0 halts at the first step, -3.0 never,
    values between at later steps; one input keeps a single live sample."""
    generator = torch.Generator().manual_seed(0)
    firsts = (
        [3.0] * 8,
        [-3.0] * 8,
        [3.0, -3.0, 0.0, 0.2, -0.3, 0.5, 1.0, -1.0],
        [0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45],
        [3.0] * 7 + [-3.0],
        [0.0] * 7 + [3.0],
    )
    inputs = []
    for first in firsts:
        x = torch.randn(8, 4, generator=generator)
        x[:, 0] = torch.tensor(first)
        inputs.append((x, torch.randn(8, 6, generator=generator)))
    return inputs


def beam_inputs():
    """The end token's score follows the encoding's first feature: the beam count falls to
    1, to 0 before the step limit, and stays above 0 to the limit."""
    generator = torch.Generator().manual_seed(0)
    inputs = []
    for first in (-6.0, -3.0, -1.0, 0.0, 3.0):
        for _ in range(4):
            encoding = torch.randn(1, 8, generator=generator)
            encoding[0, 0] = first
            inputs.append((encoding,))
    # the example first: one whose beams last to the step limit (DyCL runs every step on
    # the example's values, and a step with no beam left cannot run)
    return [inputs[2]] + inputs[:2] + inputs[3:]


def by_size_ifs(program) -> list:
    return [op for op in program.module.walk() if isinstance(op, scf.IfOp) and BY_SIZE in op.attributes]


def host_ops(program, name: str) -> int:
    return sum(1 for op in program.module.walk() if op.name == name or getattr(getattr(op, "op_name", None), "data", None) == name)


def test_the_ops_that_make_sizes_from_data_run_on_the_host():
    for name in ("torch.aten.nonzero", "torch.aten.masked_select"):
        info = op_info(name)
        assert info.category is Category.DATA_SIZE and info.host is not None and info.shape is not None


@pytest.mark.parametrize("factory, inputs", [
    (TokenPruning, pruning_inputs()),
    (MaskedSelect, masked_select_inputs()),
    pytest.param(BatchEarlyExit, early_exit_inputs(), marks=pytest.mark.slow),
], ids=["token_pruning", "masked_select", "batch_early_exit"])
def test_sizes_from_data_are_exact_on_the_interpreter(factory, inputs):
    assert_imported_exactly(factory, inputs)


def test_every_count_of_selected_rows_takes_its_own_arm():
    """The counts 0, 1 and more of the selected rows each run the sub-DNN made for them."""
    torch.manual_seed(0)
    model = NonzeroRows().eval()
    inputs = rows_inputs()
    program = import_module(model, inputs[0])
    assert host_ops(program, "torch.aten.nonzero") >= 1
    coverage = BranchCoverage()
    for args in inputs:
        assert max_abs_error(eager(model, args), run(program, args, coverage)) <= 1e-6
    picks = by_size_ifs(program)
    both = [op for op in picks if len(coverage.taken[id(op)]) == 2]
    assert len(both) >= 3, "the arms for sizes 0 and 1 never ran"


def test_the_inputs_make_every_count():
    """What the tests claim about their inputs: sizes 0, 1 and more where it matters."""
    inputs = pruning_inputs()
    torch.manual_seed(0)
    model = TokenPruning().eval()
    kept = [eager(model, args)[1] for args in inputs]
    assert {0, 1, 5} <= set(kept), kept
    torch.manual_seed(0)
    model, sizes = BeamSearch().eval(), []
    model.decode_step.register_forward_hook(lambda module, args, out: sizes.append(args[1].size(0)))
    trajectories = []
    for args in beam_inputs():
        sizes.clear()
        final = eager(model, args)[2]
        trajectories.append((list(sizes), final))
    assert any(final == 0 and len(steps) < model.max_len for steps, final in trajectories)
    assert any(1 in steps for steps, _ in trajectories) and any(final > 0 for _, final in trajectories)
    assert trajectories[0][1] > 0


def test_adaptive_computation_time_over_a_batch_is_exact():
    """0, some and all samples halt at a step; a single live sample; the loop's `break`."""
    assert_imported_exactly(AdaptiveComputationTime, act_inputs())


def test_a_beam_search_that_drops_finished_beams_is_exact():
    torch.manual_seed(0)
    model = BeamSearch().eval()
    inputs = beam_inputs()
    program = import_module(model, inputs[0])
    for args in inputs:
        assert max_abs_error(eager(model, args), run(program, args)) <= 1e-5


@pytest.mark.parametrize("factory, inputs", [
    pytest.param(TokenPruning, pruning_inputs(), marks=pytest.mark.slow),
    pytest.param(NonzeroRows, rows_inputs(), marks=pytest.mark.slow),  # the interpreter's run is in the default tier
    (MaskedSelect, masked_select_inputs()),
], ids=["token_pruning", "nonzero_rows", "masked_select"])
def test_sizes_from_data_compile_exactly_on_onnxruntime(factory, inputs):
    assert_compiled_exactly(factory, inputs, "onnxruntime")


@pytest.mark.slow
@pytest.mark.parametrize("factory, inputs", [
    (BatchEarlyExit, early_exit_inputs()),
    (AdaptiveComputationTime, act_inputs()),
    (BeamSearch, beam_inputs()),
], ids=["batch_early_exit", "act", "beam_search"])
def test_loops_over_sizes_from_data_compile_exactly_on_onnxruntime(factory, inputs):
    assert_compiled_exactly(factory, inputs, "onnxruntime")


@pytest.mark.slow
@pytest.mark.parametrize("factory, inputs", [
    (TokenPruning, pruning_inputs()),
    (NonzeroRows, rows_inputs()),
    (MaskedSelect, masked_select_inputs()),
], ids=["token_pruning", "nonzero_rows", "masked_select"])
def test_sizes_from_data_compile_exactly_on_tvm(factory, inputs):
    assert_compiled_exactly(factory, inputs, "tvm")


@pytest.mark.slow
def test_a_beam_search_compiles_exactly_on_tvm():
    """Its `F.pad(seqs, (0, max_len + 1 - seqs.size(1)))` pads by a runtime width, which
    Relax's `nn.pad` cannot take (the TVM backend writes it as a concat and a slice); its
    `top_k_scores[:k]` (k = 3 - len(complete_inds)) slices to nothing at the export's example
    size, and TVM's decompositions fixed the size there (the next example size serves)."""
    assert_compiled_exactly(BeamSearch, beam_inputs(), "tvm")


def marked(model_class, mark: str) -> int:
    lines, first = inspect.getsourcelines(model_class)
    return first + next(k for k, text in enumerate(lines) if f"# {mark}" in text)


def test_a_size_from_data_dycl_does_not_lower_is_refused_at_its_line():
    with pytest.raises(dycl.FrontendError, match="NaN") as caught:
        import_module(UniqueScoreRows().eval(), (torch.rand(4, 3),))
    assert caught.value.line == marked(UniqueScoreRows, "REFUSED"), caught.value
    assert "`torch.unique(scores, dim=0)`" in str(caught.value)


def label_inputs():
    """Labels with 1, 2 and 4 distinct values (4 of 4: every count 1), 0 for an empty batch
    is no input a compiled model of 4 rows takes."""
    generator = torch.Generator().manual_seed(3)
    return [(torch.randn(4, 4, generator=generator), torch.tensor(labels))
            for labels in ([2, 0, 2, 1], [5, 5, 5, 5], [3, 1, 3, 1], [0, 1, 2, 3], [7, -1, 7, 7])]


def span_inputs():
    """Tokens whose durations are all 0 (no frame), one 1, mixed, and large."""
    torch.manual_seed(0)
    duration = ExpandBySpans().duration
    weight, bias = duration.weight.detach()[0], duration.bias.detach()[0]
    generator = torch.Generator().manual_seed(4)
    inputs = []
    for target in ([-1.0, -2.0, -1.0], [0.5, -1.0, -3.0], [1.0, 0.0, 2.5], [3.0, 2.0, 1.5]):
        tokens = torch.randn(3, 4, generator=generator)
        goal = torch.tensor(target)
        tokens = tokens + ((goal - tokens @ weight - bias) / weight.dot(weight)).unsqueeze(1) * weight
        inputs.append((tokens,))
    return inputs


def test_unique_and_repeat_interleave_run_on_the_host():
    for name in ("torch.aten._unique2", "torch.aten.unique_dim", "torch.aten.unique_consecutive",
                 "torch.aten.repeat_interleave.self_Tensor", "torch.aten.repeat_interleave.Tensor"):
        info = op_info(name)
        assert info.category is Category.DATA_SIZE and info.host is not None and info.shape is not None


def test_the_label_and_span_inputs_make_every_count():
    torch.manual_seed(0)
    model = ExpandBySpans().eval()
    frames = [eager(model, args)[0].size(0) for args in span_inputs()]
    assert 0 in frames and max(frames) > 3, frames
    counts = [eager(LabelPooling().eval(), args)[2] for args in label_inputs()]
    assert {1, 2, 4} <= set(counts), counts


@pytest.mark.parametrize("factory, inputs", [(LabelPooling, label_inputs()), (ExpandBySpans, span_inputs())],
                         ids=["unique", "repeat_interleave"])
def test_unique_and_repeat_interleave_are_exact_on_the_interpreter(factory, inputs):
    assert_imported_exactly(factory, inputs)


@pytest.mark.parametrize("factory, inputs", [(LabelPooling, label_inputs()), (ExpandBySpans, span_inputs())],
                         ids=["unique", "repeat_interleave"])
def test_unique_and_repeat_interleave_compile_exactly_on_onnxruntime(factory, inputs):
    assert_compiled_exactly(factory, inputs, "onnxruntime")


@pytest.mark.slow
@pytest.mark.parametrize("factory, inputs", [(LabelPooling, label_inputs()), (ExpandBySpans, span_inputs())],
                         ids=["unique", "repeat_interleave"])
def test_unique_and_repeat_interleave_compile_exactly_on_tvm(factory, inputs):
    assert_compiled_exactly(factory, inputs, "tvm")


def ctc_inputs():
    """Valid frames: none (0 runs), one (1 run), seven of one label (1 run of 7), and random
    ones (many runs, blanks among them)."""
    generator = torch.Generator().manual_seed(5)
    frames = [torch.randn(7, 4, generator=generator) for _ in range(3)]
    frames.append(torch.randn(1, 4, generator=generator).repeat(7, 1))
    masks = [[0] * 7, [0, 0, 1, 0, 0, 0, 0], [1] * 7, [1, 1, 0, 1, 1, 1, 1]]
    return [(frames[k], torch.tensor(mask).bool()) for k, mask in zip((0, 1, 3, 2), masks)] + [(frames[2], torch.ones(7).bool())]


def row_inputs():
    """Rows of token ids: all equal (1 distinct row, 1 run), all distinct, two distinct in two runs."""
    return [(torch.tensor(rows),) for rows in ([[1, 2, 3]] * 4, [[1, 2, 3], [0, 5, 1], [1, 2, 4], [5, 5, 5]],
                                                [[2, 2, 0], [2, 2, 0], [1, 0, 0], [1, 0, 0]], [[3, 1, 3]] * 4)]


def test_the_run_and_row_inputs_make_every_count():
    torch.manual_seed(0)
    runs = [len(eager(GreedyCTC().eval(), args)[2].unique()) for args in ctc_inputs()]
    assert {0, 1} <= set(runs) and max(runs) > 3, runs
    rows = [eager(DuplicateRows().eval(), args)[1].size(0) for args in row_inputs()]
    assert {1, 2, 4} <= set(rows), rows
    runs = [eager(DuplicateRows().eval(), args)[3].size(0) for args in row_inputs()]
    assert {1, 4} <= set(runs) and 1 < runs[2] < 4, runs


@pytest.mark.parametrize("factory, inputs", [(GreedyCTC, ctc_inputs()), (DuplicateRows, row_inputs())],
                         ids=["unique_consecutive", "unique_dim"])
def test_unique_consecutive_and_unique_dim_are_exact_on_the_interpreter(factory, inputs):
    assert_imported_exactly(factory, inputs)


@pytest.mark.parametrize("factory, inputs", [(GreedyCTC, ctc_inputs()), (DuplicateRows, row_inputs())],
                         ids=["unique_consecutive", "unique_dim"])
def test_unique_consecutive_and_unique_dim_compile_exactly_on_onnxruntime(factory, inputs):
    assert_compiled_exactly(factory, inputs, "onnxruntime")


def test_unique_consecutive_keeps_each_nan_a_run_of_its_own():
    class Runs(torch.nn.Module):
        def forward(self, x):
            return torch.unique_consecutive(x * 2, return_inverse=True, return_counts=True)

    nan = float("nan")
    inputs = [torch.tensor(values) for values in ([[1.0, nan], [nan, 2.0]], [[nan, nan], [nan, nan]], [[0.0, -0.0], [0.0, 3.0]])]
    program = import_module(Runs().eval(), (inputs[0],))
    for x in inputs:
        for expected, actual in zip(Runs()(x), run(program, (x,))):
            torch.testing.assert_close(actual, expected, rtol=0, atol=0, equal_nan=True)


def test_unique_with_an_order_pytorch_leaves_open_is_refused_at_its_line():
    class UnsortedLabels(torch.nn.Module):
        def forward(self, labels):
            return torch.unique(labels, sorted=False).sum()

    with pytest.raises(dycl.FrontendError, match="sorted=False") as caught:
        import_module(UnsortedLabels().eval(), (torch.tensor([3, 1, 3]),))
    assert "`torch.unique(labels, sorted=False)`" in str(caught.value)


@pytest.mark.slow
@pytest.mark.parametrize("factory, inputs", [(GreedyCTC, ctc_inputs()), (DuplicateRows, row_inputs())],
                         ids=["unique_consecutive", "unique_dim"])
def test_runs_and_distinct_rows_compile_exactly_on_tvm(factory, inputs):
    assert_compiled_exactly(factory, inputs, "tvm")


def prototype_inputs():
    """Rows near the prototypes: one cluster with an outlier (one far row), every row in one
    cluster (two prototypes with no member, no far row), a two-row cluster pulled apart (two
    far rows), and spread rows."""
    torch.manual_seed(0)
    centers = PrototypeRefresh().init_centers.data
    generator = torch.Generator().manual_seed(1)

    def near(assigned):
        return centers[torch.tensor(assigned)] + 0.01 * torch.randn(len(assigned), 4, generator=generator)

    one_far, no_far, two_far = near([0, 0, 0, 1, 2, 1]), near([0] * 6), near([0, 1, 2, 0, 1, 2])
    one_far[0, 1] += 1.2
    two_far[0, 1] += 1.0
    return [(one_far,), (no_far,), (two_far,), (near([1, 2] * 3),), (3 * torch.randn(6, 4, generator=generator),)]


def sdn_batch_inputs():
    """All samples leave at an exit, one, two or three of them reach the end, or all five."""
    generator = torch.Generator().manual_seed(9)
    inputs = [(torch.randn(5, 4, generator=generator) * 30,) for _ in range(5)]
    return [inputs[1], inputs[0], inputs[2], inputs[4], (torch.randn(5, 4, generator=generator) * 0.01,)]


def live_rows_inputs():
    """Two live rows, none, one, all four."""
    generator = torch.Generator().manual_seed(3)
    inputs = []
    for live in (2, 0, 1, 4):
        x = -torch.rand(4, 4, generator=generator) - 0.1
        x[:live] = -x[:live]
        inputs.append((x,))
    return inputs


def test_a_size_test_of_rows_picked_by_a_mask_is_exact():
    """`if rows.size(0) > 0:` of `rows = x[mask]`: the host reads the size (a comparison of
    it is a bool no captured run can return), for counts 0, 1 and more."""
    assert_imported_exactly(LiveRowsMean, live_rows_inputs())


def test_a_block_called_on_rows_from_the_data_keeps_its_constant_results():
    """A block returning `(x, 0, None)` called on rows from the data: the `0` stays a
    constant and `if is_output:` folds (it was a runtime int, and the arm ran on `None`)."""
    assert_imported_exactly(LiveRowsBlock, live_rows_inputs())


@pytest.mark.slow
def test_size_tests_of_rows_picked_by_a_mask_are_exact():
    """`if members.numel() > 0:`, `if far.size(0) == 0:`, `far.shape[0] == 0` and `1.0 if
    far.size(-2) > 1 else 0.5` of rows `x[mask]` picks, in a loop over prototypes."""
    assert_imported_exactly(PrototypeRefresh, prototype_inputs())


@pytest.mark.slow
def test_sdn_blocks_called_on_the_samples_left_are_exact():
    """SDN blocks return `(x, 0, None)`; after samples left the batch, a block runs on a
    size from the data, and `if is_output:` still folds."""
    assert_imported_exactly(SDNBatchExit, sdn_batch_inputs())


@pytest.mark.slow
@pytest.mark.parametrize("factory, inputs", [
    (PrototypeRefresh, prototype_inputs()),
    (SDNBatchExit, sdn_batch_inputs()),
], ids=["prototype_refresh", "sdn_batch_exit"])
def test_size_tests_and_constant_block_results_compile_exactly_on_onnxruntime(factory, inputs):
    assert_compiled_exactly(factory, inputs, "onnxruntime")


def detection_inputs():
    """Per class: no box, one, two, three, and all five above the threshold (more than
    `max_det`: the slice `[:4]` cuts)."""
    generator = torch.Generator().manual_seed(24)
    boxes = torch.rand(5, 4, generator=generator)
    return [(torch.randn(5, 4, generator=generator), boxes), (torch.randn(5, 4, generator=generator) * 10, boxes),
            (torch.randn(5, 4, generator=generator) * 0.01, boxes)]


@pytest.mark.slow
def test_the_best_boxes_of_each_class_compile_exactly_on_onnxruntime():
    """`cs.argsort(descending=True)[:4]` of a size from the data: 5 boxes above the threshold
    gave 5 rows, not 4 (the backend's export dropped the slice), a silent wrong answer."""
    model = ClassWiseTopK().eval()
    with torch.no_grad():
        kept = [int((torch.sigmoid(model.cls(feats)) > model.thresh).sum(0).max()) for feats, _ in detection_inputs()]
    assert max(kept) > model.max_det
    assert_compiled_exactly(ClassWiseTopK, detection_inputs(), "onnxruntime")


def test_min_of_a_size_from_the_data_is_a_runtime_int():
    """`n = min(2, rows.size(0))`: a `min` of the size is computed on the host (a captured
    run could not return it: refused, torch-mlir has no `sym_min` output)."""
    assert_imported_exactly(FirstLiveRows, live_rows_inputs())


@pytest.mark.slow
def test_the_best_scores_padded_to_a_fixed_count_are_exact():
    """`k = min(self.max_det, kept.size(0))`, then `[:k]` and `F.pad`, for counts 0 to 5."""
    generator = torch.Generator().manual_seed(32)
    inputs = [(torch.randn(5, 4, generator=generator) * scale,) for scale in (1.0, 10.0, 0.01, 3.0, 30.0, 100.0)]
    torch.manual_seed(0)
    counts = {eager(TopScoresPadded().eval(), args)[1] for args in inputs}
    assert {0, 1, 3} <= counts, counts
    assert_imported_exactly(TopScoresPadded, inputs)


@pytest.mark.slow
def test_the_best_boxes_of_each_class_compile_exactly_on_tvm():
    """The clamped slice bound (`min(4, n)`) in Relax: TVM's importer had no `sym_min`."""
    assert_compiled_exactly(ClassWiseTopK, detection_inputs(), "tvm")


@pytest.mark.slow
def test_a_slice_to_the_end_of_rows_from_the_data_compiles_on_onnxruntime():
    """`good[:, :2]` of `good = boxes[keep]`: its `:` ends at INT64_MAX, which bounds nothing
    (it is not clamped)."""
    generator = torch.Generator().manual_seed(14)
    inputs = [(torch.randn(3, 4, generator=generator), boxes) for boxes in (
        torch.tensor([[0.0, 0, 1, 1], [2.0, 0, 1, 1], [0.0, 1, 3, 2]]), torch.tensor([[2.0, 0, 1, 1]] * 3),
        torch.tensor([[0.0, 0, 1, 1]] * 3), torch.tensor([[2.0, 0, 1, 1], [0.0, 1, 3, 2], [2.0, 0, 1, 1]]))]
    assert_compiled_exactly(ValidBoxes, inputs, "onnxruntime")


def test_published_beam_search_with_topk_of_the_beam_count_is_refused_at_its_line():
    """Show-Attend-Tell's beam search as published: `k` is a Python int and the beams' row
    count at once (`expand(k, ...)`, `k -= len(complete_inds)`, `encoder_out[...]`), which
    compiles (`BeamSearch`, exact); its `scores.topk(k, 0, True, True)` with a runtime k
    reads the indices, whose order for equal scores is topk's own kernel's: refused at that
    line, naming it (before: "a number computed from tensor values", the wrong cause)."""
    torch.manual_seed(0)
    model = ShowAttendTellBeam().eval()
    encoding = torch.cat([beam_inputs()[0][0]] * 2).unsqueeze(0)
    with pytest.raises(dycl.FrontendError) as refused:
        dycl.compile(model, (encoding,), backend="onnxruntime", progress=False)
    source, first = inspect.getsourcelines(ShowAttendTellBeam.forward)
    topk_lines = [first + k for k, line in enumerate(source) if ".topk(k, 0, True, True)" in line]
    assert refused.value.line in topk_lines, refused.value
    assert "reads the indices of `topk` of a `k` known only at run time" in str(refused.value)
