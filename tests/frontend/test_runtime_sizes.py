"""Tensors whose size is a number known only at run time: `x[:k]` with a runtime int,
`out[:k, t] = v`, a variable assigned tensors of two sizes. Their sub-DNNs take the dim as a
symbolic size where it is at least 2, and a run captured for size 1 (or 0) below that, which
an `scf.if` marked `dycl.by_size` picks at run time."""

from __future__ import annotations

import inspect

import pytest
import torch
from torch import nn
from xdsl.dialects import scf

import dycl
from dycl.frontend import import_module
from dycl.frontend.joins import BY_SIZE
from tests.frontend.helpers import BranchCoverage, assert_compiled_exactly, assert_imported_exactly, eager, max_abs_error, run


class SliceByCount(nn.Module):
    """The rows of a batch whose length passes a threshold, counted from a list argument."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x, lengths):
        k = sum([l > 2 for l in lengths])
        return self.fc(x[:k]).relu(), k


class TeacherForcing(nn.Module):
    """A batch sorted by length decoded step by step: the batch shrinks as sequences end
    (`h = cell(emb[:bt, t], h[:bt])`) and each step is stored as `out[:bt, t] = fc(h)`."""

    def __init__(self):
        super().__init__()
        self.init_h = nn.Linear(8, 6)
        self.cell = nn.GRUCell(4, 6)
        self.fc = nn.Linear(6, 5)

    def forward(self, feats, emb, lengths):
        h = torch.tanh(self.init_h(feats))
        max_len = max(lengths)
        outputs = torch.zeros(len(lengths), max_len, 5)
        for t in range(max_len):
            bt = sum([l > t for l in lengths])
            h = self.cell(emb[:bt, t], h[:bt])
            outputs[:bt, t] = self.fc(h)
        return outputs


class ShapeByPath(nn.Module):
    """A tensor of two widths, one per path, then math on it."""

    def forward(self, x):
        y = x[:, :2]
        if x.sum() > 0:
            y = x[:, :3]
        return y.sum() * 2, y * 3


class NegativeRuntimeIndex(nn.Module):
    """An index from tensor data, negative: Python's meaning, from the end."""

    def forward(self, x):
        k = int(x.argmax()) - 4  # -4..-1
        return x * x[0, k]


class SizeFromListArgumentThenMath(nn.Module):
    def forward(self, x, lengths):
        out = torch.zeros(len(lengths), max(lengths))
        y = out * 2 + 1
        return y, x


class SizeFromTolist(nn.Module):
    """A caption decoder's `torch.zeros(batch, max(decode_lengths), vocab)` with the lengths
    from `.tolist()`, then stores into it and math on it."""

    def forward(self, x):
        y = x * 2
        lengths = (x.abs() * 3).long().tolist()[0]
        out = torch.zeros(2, max(lengths)).to(x.device)
        out[0, : lengths[0]] = 1.0
        return out * 2 + y.sum(), y


def rows_over(lengths, t):
    return sum([l > t for l in lengths])


class ThreeCounts(nn.Module):
    """Math on three slices cut by three runtime counts, in straight-line statements: one
    run of them would take three sizes known only at run time, so each is a run of its own."""

    def forward(self, x, lengths):
        a = x[:lengths[0]]
        b = x[:lengths[1]]
        c = x[:lengths[2]]
        sa = a.sum(0) * 1.5
        sb = torch.tanh(b).sum(0)
        sc = (c * c).sum(0) + 1.0
        return sa + sb + sc


class CountByHelper(nn.Module):
    """The count from a plain helper function: inlined (it takes runtime ints), it stays an
    int, so `x[:k]` is a runtime slice (captured as tensor code, it was a 0-d tensor, and the
    slice's size data-dependent)."""

    def forward(self, x, lengths):
        k = rows_over(lengths, 2)
        return torch.softmax(x[:k], 0), x[:k].sum(0)


class AugmentedStore(nn.Module):
    def forward(self, x, lengths):
        k = sum([l > 2 for l in lengths])
        buf = torch.zeros(3, 4)
        buf[:k] += x[:k] * 2
        return buf


class RowOverCount(nn.Module):
    """A row whose tensor's size is known only at run time, stored over a runtime count of
    rows: `buf[:k] = row` broadcasts the one row over k (none, one or several), as `copy_`
    does."""

    def forward(self, x, lengths):
        k = sum([l > 2 for l in lengths])
        row = x[:k + 1][-1:]
        buf = torch.zeros(3, 4)
        buf[:k] = torch.tanh(row)
        return buf


class ColumnsAndOffsets(nn.Module):
    """Runtime bounds on the second dim, from the end, and both bounds runtime ints (whose
    difference no probe of the shape inference may take for a constant)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x, lengths):
        k = sum([l > 2 for l in lengths])
        y = x[:, :k].sum(1) + x[:, k:].mean(1)
        a, b = lengths[0] % 3, lengths[1] % 4
        return y, x[1 : k + 1].relu(), self.fc(x[a:b]), x[a:b].shape[0]


class SqueezeAfterSlice(nn.Module):
    def forward(self, x, lengths):
        k = sum([l > 2 for l in lengths])
        y = x[:k].squeeze()
        return y * 2  # REFUSED


class RankByPathQueried(nn.Module):
    """A WRONG ANSWER before: `y.dim()` and `y.shape[0]` of a tensor whose rank depends on the
    path were the example path's constants (export reads them in Python, not in the graph)."""

    def forward(self, x, lengths):
        if x.sum() > 0:
            y = x[0]
        else:
            y = x
        return y.dim(), y.shape[0], y  # REFUSED


class RankByPathReturned(nn.Module):
    def forward(self, x, lengths):
        if x.sum() > 0:
            y = x[0]
        else:
            y = x * 2
        z = y
        return z, x.shape[0]


class InPlaceThroughRuntimeSlice(nn.Module):
    def forward(self, x, lengths):
        y = x * 1
        head = y[: sum([l > 2 for l in lengths])]
        head.mul_(3.0)  # REFUSED
        return y


class SecondRowOfSlice(nn.Module):
    """Valid for k >= 2 only; eager raises IndexError at k = 1."""

    def forward(self, x, lengths):
        k = sum([l > 2 for l in lengths])
        y = x[:k]
        return y[1] * 2  # ERRS


def lengths_inputs(counts, size=3, seed=0):
    """(x, lengths) per wanted count of lengths > 2."""
    generator = torch.Generator().manual_seed(seed)
    return [(torch.randn(size, 4, generator=generator), [5] * n + [1] * (size - n)) for n in counts]


def teacher_inputs():
    generator = torch.Generator().manual_seed(1)
    return [
        (torch.randn(3, 8, generator=generator), torch.randn(3, 5, 4, generator=generator), lengths)
        for lengths in ([5, 3, 2], [4, 4, 1], [1, 1, 1], [3, 0, 0], [2, 2, 2])
    ]


def by_size_ifs(program) -> list:
    return [op for op in program.module.walk() if isinstance(op, scf.IfOp) and BY_SIZE in op.attributes]


def assert_every_size_arm_exact(factory, inputs):
    """Interpreted exactly on every input, which together take both arms of every `if` the
    frontend made to pick a run by size."""
    torch.manual_seed(0)
    model = factory().eval()
    program = import_module(model, inputs[0])
    coverage = BranchCoverage()
    for args in inputs:
        assert max_abs_error(eager(model, args), run(program, args, coverage)) <= 1e-5
    picks = by_size_ifs(program)
    assert picks, "no run was picked by size"
    assert all(len(coverage.taken[id(op)]) == 2 for op in picks), "a size arm never ran"


def test_a_runtime_slice_then_math_is_exact_for_every_count():
    assert_every_size_arm_exact(SliceByCount, lengths_inputs([2, 0, 1, 3]))


@pytest.mark.parametrize("factory", [AugmentedStore, RowOverCount, ColumnsAndOffsets, CountByHelper], ids=lambda f: f.__name__)
def test_more_runtime_bounds_are_exact(factory):
    assert_imported_exactly(factory, lengths_inputs([2, 0, 1, 3]) + [(torch.randn(3, 4), [1, 3, 5]), (torch.randn(3, 4), [2, 2, 0])])


def test_statements_with_more_than_two_runtime_sizes_are_captured_one_by_one():
    generator = torch.Generator().manual_seed(3)
    inputs = [(torch.randn(3, 4, generator=generator), counts) for counts in ([3, 2, 1], [0, 3, 2], [1, 0, 3], [2, 1, 0], [3, 3, 3])]
    assert_imported_exactly(ThreeCounts, inputs)


def test_a_batch_that_shrinks_per_step_is_exact():
    assert_imported_exactly(TeacherForcing, teacher_inputs())


@pytest.mark.parametrize("factory, inputs", [
    (SliceByCount, lengths_inputs([2, 0, 1, 3])),
    pytest.param(TeacherForcing, teacher_inputs(), marks=pytest.mark.slow),  # its interpreter run is above
    (SizeFromListArgumentThenMath, [(torch.randn(2, 3), lengths) for lengths in ([3, 2], [5, 1], [1, 1])]),
    (SizeFromTolist, [(torch.tensor([[0.4, 1.0, 0.1]]),), (torch.tensor([[0.0, 0.2, 2.0]]),), (torch.tensor([[0.1, 0.0, 0.2]]),)]),
], ids=["slice_by_count", "teacher_forcing", "size_from_list_argument", "size_from_tolist"])
def test_runtime_sizes_compile_exactly_on_onnxruntime(factory, inputs):
    assert_compiled_exactly(factory, inputs, "onnxruntime")


@pytest.mark.slow
def test_runtime_sizes_compile_exactly_on_tvm():
    assert_compiled_exactly(TeacherForcing, teacher_inputs(), "tvm")
    assert_compiled_exactly(SliceByCount, lengths_inputs([2, 0, 1, 3]), "tvm")


def test_a_value_whose_rank_depends_on_the_path_can_be_passed_on():
    inputs = [(torch.ones(3, 4), [5, 1, 1]), (-torch.ones(3, 4), [5, 1, 1])]
    assert_imported_exactly(RankByPathReturned, inputs)


def test_two_widths_by_path_then_math_is_exact():
    inputs = [(torch.randn(1, 4) + 2.0,), (torch.randn(1, 4) - 2.0,)]
    assert_compiled_exactly(ShapeByPath, inputs, "onnxruntime")


def test_a_negative_runtime_index_counts_from_the_end():
    inputs = [(torch.eye(4)[k : k + 1] * 3.0 + 0.5,) for k in range(4)]
    assert_compiled_exactly(NegativeRuntimeIndex, inputs, "onnxruntime")


def marked(model_class, mark: str) -> int:
    lines, first = inspect.getsourcelines(model_class)
    return first + next(k for k, text in enumerate(lines) if f"# {mark}" in text)


@pytest.mark.parametrize("model_class, construct", [
    (SqueezeAfterSlice, "whose rank depends on the path"),
    (InPlaceThroughRuntimeSlice, "in-place change of `head`"),
    (RankByPathQueried, "computes with `y`, a float32 tensor whose rank depends on the path"),
])
def test_what_a_runtime_size_cannot_follow_is_refused_at_its_line(model_class, construct):
    with pytest.raises(dycl.FrontendError) as caught:
        import_module(model_class().eval(), lengths_inputs([2])[0])
    assert caught.value.file == __file__ and caught.value.line == marked(model_class, "REFUSED"), caught.value
    assert construct in str(caught.value)


def test_a_run_that_fails_for_one_size_raises_there_at_run_time(tmp_path):
    """`y[1]` of `x[:k]` cannot be captured for k = 1: that arm raises (as eager does) and
    names the statement; the others are exact."""
    model = SecondRowOfSlice().eval()
    compiled = dycl.compile(model, lengths_inputs([2])[0], progress=False, cache_dir=tmp_path)
    for args in lengths_inputs([2, 3]):
        assert max_abs_error(model(*args), compiled(*args)) == 0.0
    (args,) = lengths_inputs([1])
    with pytest.raises(IndexError):
        model(*args)
    with pytest.raises(RuntimeError, match=rf"{__file__}:{marked(SecondRowOfSlice, 'ERRS')}: `.*` cannot run when `y` has size 1 in dim 0"):
        compiled(*args)
