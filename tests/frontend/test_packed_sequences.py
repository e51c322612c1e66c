"""`pack_padded_sequence` with lengths known only at run time (a list argument, a lengths
tensor), as published encoders and captioning decoders write it: RNN modules on the packed
batch (stacked, bidirectional, projected), `pad_packed_sequence`, `.data`, `.batch_sizes`.
Eager's checks of the lengths raise at run time; what shows `enforce_sorted=False`'s sort
order is refused at its line."""

from __future__ import annotations

import inspect

import pytest
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

import dycl
from dycl.frontend import import_module
from tests.frontend.helpers import assert_compiled_exactly, assert_imported_exactly, eager, max_abs_error
from tests.frontend.research import decoders


class ChatbotEncoder(decoders.ChatbotEncoder):
    """The PyTorch chatbot tutorial's EncoderRNN (the corpus' own): time-major, a bidirectional
    two-layer GRU, the directions' outputs summed; on a vocabulary of 10."""

    def __init__(self):
        super().__init__(5, nn.Embedding(10, 5))


class SentimentClassifier(nn.Module):
    """Lengths as a tensor, an unsorted batch (`enforce_sorted=False`), the last layer's final
    state classified, the outputs averaged over each sequence's own length."""

    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(10, 6)
        self.lstm = nn.LSTM(6, 5, num_layers=2, batch_first=True)
        self.fc = nn.Linear(5, 2)

    def forward(self, tokens, lengths):
        packed = pack_padded_sequence(self.embedding(tokens), lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, (h, c) = self.lstm(packed)
        out, lens = pad_packed_sequence(out, batch_first=True)
        return self.fc(h[-1]), out.sum(1) / lens.unsqueeze(1).float(), out.shape[1]


class StackedPacked(nn.Module):
    """An initial state given, a second (projected) LSTM on the first one's packed output,
    a fixed `total_length`, and the packed fields read by name and by index."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(4, 3, num_layers=2)
        self.projected = nn.LSTM(3, 3, proj_size=2)

    def forward(self, x, lengths):
        packed = pack_padded_sequence(x, lengths)
        h0, c0 = torch.ones(2, x.shape[1], 3), torch.zeros(2, x.shape[1], 3)
        out, (h, c) = self.lstm(packed, (h0, c0))
        out2, (h2, c2) = self.projected(out)
        padded, lens = pad_packed_sequence(out2, total_length=6, padding_value=-1.0)
        return padded, lens, h, c, h2, c2, out.batch_sizes, out2.data, out[2]


class PackedRows(nn.Module):
    """The packed rows themselves (`hiddens[0]`, `.data`), through a linear layer, and the
    packed value unpacked into its four fields; `.to(x.device)` of a packed value."""

    def __init__(self):
        super().__init__()
        self.rnn = nn.RNN(4, 3, batch_first=True, nonlinearity="relu")
        self.linear = nn.Linear(3, 2)

    def forward(self, x, lengths):
        hiddens, _ = self.rnn(pack_padded_sequence(x, lengths, batch_first=True).to(x.device))
        data, batch_sizes, sorted_indices, unsorted_indices = hiddens
        return self.linear(hiddens[0]), self.linear(hiddens.data).sum(), batch_sizes, data, sorted_indices is None


class CutShorterThanPadded(nn.Module):
    """`total_length` shorter than the padded input: the longest length must fit in it.
    The lengths and the initial state as keyword arguments."""

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(4, 3)

    def forward(self, x, lengths):
        out, h = self.gru(pack_padded_sequence(x, lengths=lengths), hx=torch.ones(1, x.shape[1], 3))
        padded, _ = pad_packed_sequence(out, total_length=3)  # ERRS
        return padded, h


class PartlyKnownLengths(nn.Module):
    """The first length known at import, the second a runtime int."""

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(4, 4, batch_first=True)

    def forward(self, x, lengths):
        out, h = self.gru(pack_padded_sequence(x, [3, lengths[1]], batch_first=True))
        return pad_packed_sequence(out, batch_first=True, total_length=3)[0], out.batch_sizes, out.data, h


class LSTMWithItsOwnForward(nn.LSTM):
    def forward(self, x, hx=None):
        return super().forward(x, hx)


class OwnForwardOnPacked(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = LSTMWithItsOwnForward(4, 4, batch_first=True)

    def forward(self, x, lengths):
        out, _ = self.lstm(pack_padded_sequence(x, lengths, batch_first=True))  # REFUSED
        return pad_packed_sequence(out, batch_first=True)[0]


class DataOfUnsorted(nn.Module):
    def forward(self, x, lengths):
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        return packed.data  # REFUSED


class ReturnsPacked(nn.Module):
    def forward(self, x, lengths):
        return pack_padded_sequence(x, lengths, batch_first=True)  # REFUSED


class PackedOnEachPath(nn.Module):
    def forward(self, x, lengths):
        if x.sum() > 0:
            packed = pack_padded_sequence(x, lengths, batch_first=True)
        else:
            packed = pack_padded_sequence(-x, lengths, batch_first=True)
        return pad_packed_sequence(packed, batch_first=True)[0]  # REFUSED


def tokens(lengths: list[int], steps: int = 5, batch_first: bool = False) -> torch.Tensor:
    generator = torch.Generator().manual_seed(sum(lengths) * 7 + len(lengths))
    ids = torch.randint(1, 10, (len(lengths), steps), generator=generator)
    ids = ids * (torch.arange(steps).view(1, -1) < torch.tensor(lengths).view(-1, 1))
    return ids if batch_first else ids.t().contiguous()


def padded(lengths: list[int], shape: tuple[int, ...]) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(sum(lengths) * 11 + len(lengths)))


SORTED = [[5, 3, 1], [2, 2, 2], [1, 1, 1], [5, 5, 5], [4, 2, 1]]
UNSORTED = [[2, 5, 3], [1, 1, 1], [5, 5, 5], [3, 1, 4], [4, 4, 1]]
INPUTS = {
    ChatbotEncoder: [(tokens(lengths), lengths) for lengths in SORTED],
    SentimentClassifier: [(tokens(lengths, batch_first=True), torch.tensor(lengths)) for lengths in UNSORTED],
    StackedPacked: [(padded(lengths, (5, 3, 4)), lengths) for lengths in SORTED],
    PackedRows: [(padded(lengths, (3, 5, 4)), lengths) for lengths in SORTED],
    CutShorterThanPadded: [(padded(lengths, (5, 2, 4)), lengths) for lengths in ([3, 1], [2, 2], [1, 1])],
    PartlyKnownLengths: [(padded(lengths, (2, 3, 4)), lengths) for lengths in ([3, 1], [3, 3], [3, 2])],
}


@pytest.mark.parametrize("factory", list(INPUTS), ids=lambda f: f.__name__)
def test_packed_sequences_with_runtime_lengths_are_exact(factory):
    assert_imported_exactly(factory, INPUTS[factory])


@pytest.mark.parametrize("factory", [ChatbotEncoder, pytest.param(SentimentClassifier, marks=pytest.mark.slow), PackedRows],
                         ids=lambda f: f.__name__)
def test_packed_sequences_compile_exactly_on_onnxruntime(factory):
    assert_compiled_exactly(factory, INPUTS[factory], "onnxruntime")


@pytest.mark.slow
@pytest.mark.parametrize("factory", [ChatbotEncoder, SentimentClassifier, StackedPacked, PackedRows], ids=lambda f: f.__name__)
def test_packed_sequences_compile_exactly_on_tvm(factory):
    assert_compiled_exactly(factory, INPUTS[factory], "tvm")


def test_the_lengths_eager_refuses_raise_at_run_time_where_eager_raises(tmp_path):
    torch.manual_seed(0)
    model = StackedPacked().eval()
    compiled = dycl.compile(model, INPUTS[StackedPacked][0], progress=False, cache_dir=tmp_path)
    x = padded([5, 3, 1], (5, 3, 4))
    for lengths, message in (
        ([1, 3, 5], "must be sorted in decreasing order when `enforce_sorted` is True"),
        ([5, 3, 0], "Length of all samples has to be greater than 0"),
    ):
        with pytest.raises(RuntimeError, match=message):
            eager(model, (x, lengths))
        with pytest.raises(RuntimeError, match=rf"{__file__}:{marked(StackedPacked, 'packed = ')}: .*{message}"):
            compiled(x, lengths)
    # eager reads past the tensor for a length past its steps; the compiled model raises
    with pytest.raises(RuntimeError, match="a length is larger than the 5 steps of the padded input"):
        compiled(x, [6, 3, 1])
    assert max_abs_error(eager(model, (x, [5, 3, 1])), compiled(x, [5, 3, 1])) <= 1e-5


def test_a_total_length_shorter_than_the_longest_raises_at_run_time(tmp_path):
    torch.manual_seed(0)
    model = CutShorterThanPadded().eval()
    compiled = dycl.compile(model, INPUTS[CutShorterThanPadded][0], progress=False, cache_dir=tmp_path)
    args = (padded([4, 1], (5, 2, 4)), [4, 1])
    with pytest.raises(ValueError, match="Expected total_length to be at least"):
        eager(model, args)
    with pytest.raises(RuntimeError, match=rf"{__file__}:{marked(CutShorterThanPadded, 'ERRS')}: .*total_length=3"):
        compiled(*args)
    good = INPUTS[CutShorterThanPadded][1]
    assert max_abs_error(eager(model, good), compiled(*good)) <= 1e-5


def marked(model_class, mark: str) -> int:
    lines, first = inspect.getsourcelines(model_class)
    return first + next(k for k, text in enumerate(lines) if mark in text)


@pytest.mark.parametrize("model_class, construct", [
    (DataOfUnsorted, "reads the order `pack_padded_sequence(..., enforce_sorted=False)` sorted the batch in"),
    (ReturnsPacked, "returns a PackedSequence whose lengths are runtime values"),
    (PackedOnEachPath, "`packed` is a packed sequence whose lengths are runtime values, made on each path"),
    (OwnForwardOnPacked, "calls an RNN module with a forward or hooks of its own on a packed sequence"),
])
def test_what_would_show_more_than_a_packed_sequence_holds_is_refused_at_its_line(model_class, construct):
    args = (padded([3, 1], (2, 3, 4)), [3, 1])
    eager(model_class().eval(), args)  # (eager runs it)
    with pytest.raises(dycl.FrontendError) as caught:
        import_module(model_class().eval(), args)
    line = marked(model_class, "# REFUSED")
    if model_class is PackedOnEachPath:
        line = marked(model_class, "if x.sum() > 0")  # (the join is at the `if`)
    assert caught.value.file == __file__ and caught.value.line == line, caught.value
    assert construct in str(caught.value)
