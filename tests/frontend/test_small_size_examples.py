"""Sizes that runtime ints give, with examples of 0 and 1 (issue 28): export freezes an int
whose example is 0 or 1, and that must not change what compiles. A show-attend-tell caption
decoder (sgrvinod's a-PyTorch-Tutorial-to-Image-Captioning) with one decode step in the
example was refused as "a size computed from tensor values"; with two steps it compiled."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.autograd import Variable

from dycl.frontend import import_module
from tests.frontend.helpers import assert_compiled_exactly, eager, max_abs_error, run


class Attention(nn.Module):
    def __init__(self, encoder_dim, decoder_dim, attention_dim):
        super().__init__()
        self.encoder_att = nn.Linear(encoder_dim, attention_dim)
        self.decoder_att = nn.Linear(decoder_dim, attention_dim)
        self.full_att = nn.Linear(attention_dim, 1)
        self.relu = nn.ReLU()
        self.softmax = nn.Softmax(dim=1)

    def forward(self, encoder_out, decoder_hidden):
        att1 = self.encoder_att(encoder_out)
        att2 = self.decoder_att(decoder_hidden)
        att = self.full_att(self.relu(att1 + att2.unsqueeze(1))).squeeze(2)
        alpha = self.softmax(att)
        attention_weighted_encoding = (encoder_out * alpha.unsqueeze(2)).sum(dim=1)
        return attention_weighted_encoding, alpha


class DecoderWithAttention(nn.Module):
    """The tutorial's decoder, lengths from `.tolist()` of a tensor of caption lengths."""

    def __init__(self, attention_dim=6, embed_dim=5, decoder_dim=6, vocab_size=7, encoder_dim=4):
        super().__init__()
        self.vocab_size = vocab_size
        self.attention = Attention(encoder_dim, decoder_dim, attention_dim)
        self.embedding = nn.Embedding(vocab_size, embed_dim)
        self.dropout = nn.Dropout(p=0.5)
        self.decode_step = nn.LSTMCell(embed_dim + encoder_dim, decoder_dim, bias=True)
        self.init_h = nn.Linear(encoder_dim, decoder_dim)
        self.init_c = nn.Linear(encoder_dim, decoder_dim)
        self.f_beta = nn.Linear(decoder_dim, encoder_dim)
        self.sigmoid = nn.Sigmoid()
        self.fc = nn.Linear(decoder_dim, vocab_size)

    def init_hidden_state(self, encoder_out):
        mean_encoder_out = encoder_out.mean(dim=1)
        h = self.init_h(mean_encoder_out)
        c = self.init_c(mean_encoder_out)
        return h, c

    def forward(self, encoder_out, encoded_captions, caption_lengths):
        batch_size = encoder_out.size(0)
        encoder_out = encoder_out.view(batch_size, -1, encoder_out.size(-1))
        num_pixels = encoder_out.size(1)
        embeddings = self.embedding(encoded_captions)
        h, c = self.init_hidden_state(encoder_out)
        decode_lengths = (caption_lengths - 1).tolist()
        predictions = Variable(torch.zeros(batch_size, max(decode_lengths), self.vocab_size)).to(encoder_out.device)
        alphas = torch.zeros(batch_size, max(decode_lengths), num_pixels).to(encoder_out.device)
        for t in range(max(decode_lengths)):
            batch_size_t = sum([l > t for l in decode_lengths])
            attention_weighted_encoding, alpha = self.attention(encoder_out[:batch_size_t], h[:batch_size_t])
            gate = self.sigmoid(self.f_beta(h[:batch_size_t]))
            attention_weighted_encoding = gate * attention_weighted_encoding
            h, c = self.decode_step(
                torch.cat([embeddings[:batch_size_t, t, :], attention_weighted_encoding], dim=1),
                (h[:batch_size_t], c[:batch_size_t]))
            preds = self.fc(self.dropout(h))
            predictions[:batch_size_t, t, :] = preds
            alphas[:batch_size_t, t, :] = alpha.data
        return predictions, decode_lengths, alphas


class DecoderFromListArgument(nn.Module):
    """The issue's variant: `caption_lengths` a list of ints passed to forward."""

    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(7, 4)
        self.cell = nn.GRUCell(4, 6)
        self.init_h = nn.Linear(3, 6)
        self.fc = nn.Linear(6, 7)

    def forward(self, feats, captions, caption_lengths):
        b = feats.size(0)
        decode_lengths = [c - 1 for c in caption_lengths]
        emb = self.embedding(captions)
        h = torch.tanh(self.init_h(feats))
        predictions = torch.zeros(b, max(decode_lengths), 7)
        for t in range(max(decode_lengths)):
            batch_size_t = sum([l > t for l in decode_lengths])
            h = self.cell(emb[:batch_size_t, t], h[:batch_size_t])
            predictions[:batch_size_t, t, :] = self.fc(h)
        return predictions


class BroadcastBySize(nn.Module):
    """A size from a list argument that broadcasts: export assumes it is at least 2 (a size
    of 1 would broadcast), so a size of 1 runs its own program; a size of 0 its own too."""

    def forward(self, x, lengths):
        n = max(lengths)
        grid = torch.zeros(1, n) + x
        return grid.sum(1), torch.ones(n, 2).sum(0), n


def tolist_inputs(lengths_list, seed=0):
    generator = torch.Generator().manual_seed(seed)
    inputs = []
    for lengths in lengths_list:
        b = len(lengths)
        inputs.append((torch.randn(b, 2, 2, 4, generator=generator), torch.randint(0, 7, (b, 5), generator=generator),
                       torch.tensor(sorted(lengths, reverse=True))))
    return inputs


def list_inputs(lengths_list, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return [(torch.randn(len(lengths), 3, generator=generator), torch.randint(0, 7, (len(lengths), 5), generator=generator),
             sorted(lengths, reverse=True)) for lengths in lengths_list]


# Every example: zero decode steps, one (the example of 1 that was refused), or two (the general
# case every other decoder test compiles from: slow tier here); each compiled program is checked
# on inputs of every decode length, 0 included.
EXAMPLES = [[1, 1], pytest.param([2, 1], marks=pytest.mark.slow), pytest.param([3, 2], marks=pytest.mark.slow)]
LIST_LENGTHS = [[1, 1], [2, 1], [2, 2], [3, 1], [3, 2], [4, 3], [6, 2], [1], [2], [4], [6]]


def same_batch(example):
    """The lengths of every input of the example's batch size (a compiled model takes the
    example's tensor shapes)."""
    return [lengths for lengths in LIST_LENGTHS if len(lengths) == len(example)]


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: f"decode_{max(e) - 1}_batch_{len(e)}")
def test_a_decoder_with_lengths_from_a_list_argument_is_exact_whatever_the_example(example):
    model = DecoderFromListArgument().eval()
    program = import_module(model, list_inputs([example])[0])
    for args in list_inputs(same_batch(example), seed=1):
        assert max_abs_error(eager(model, args), run(program, args)) <= 1e-5


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: f"decode_{max(e) - 1}_batch_{len(e)}")
def test_the_show_attend_tell_decoder_is_exact_whatever_the_example(example):
    torch.manual_seed(0)
    model = DecoderWithAttention().eval()
    program = import_module(model, tolist_inputs([example])[0])
    for args in tolist_inputs(same_batch(example), seed=2):
        assert max_abs_error(eager(model, args), run(program, args)) <= 1e-5


@pytest.mark.parametrize("example", [[0], [1], [3]], ids=lambda e: f"size_{e[0]}")
def test_a_size_that_broadcasts_is_exact_for_0_1_and_more(example):
    model = BroadcastBySize().eval()
    x = torch.randn(4, 1)
    program = import_module(model, (x, example))
    for lengths in ([0], [1], [2], [5]):
        assert max_abs_error(eager(model, (x, lengths)), run(program, (x, lengths))) <= 1e-5


@pytest.mark.slow  # the zero-step examples below are the harder case, in the default tier
def test_the_decoders_compile_exactly_on_onnxruntime_from_one_decode_step():
    assert_compiled_exactly(DecoderFromListArgument, list_inputs([[2, 1], [1, 1], [3, 2], [6, 4]]), "onnxruntime")
    assert_compiled_exactly(DecoderWithAttention, tolist_inputs([[2, 2], [1, 1], [3, 1], [5, 4]]), "onnxruntime")


@pytest.mark.slow  # on ONNX Runtime, the corpus's ShowAttendTellOneWord and CaptionLengthsDecoder
# compile from zero decode steps in the default tier
def test_the_decoders_compile_exactly_on_onnxruntime_from_zero_decode_steps():
    """One-word captions in the example: the decode loop is never entered there, and its
    body is compiled from examples that enter it (unentered.py)."""
    assert_compiled_exactly(DecoderFromListArgument, list_inputs([[1, 1], [2, 1], [3, 2], [6, 4], [1, 1]]), "onnxruntime")
    assert_compiled_exactly(DecoderWithAttention, tolist_inputs([[1], [2], [1], [4], [6]]), "onnxruntime")


@pytest.mark.slow
def test_the_decoders_compile_exactly_on_tvm_from_zero_decode_steps():
    assert_compiled_exactly(DecoderFromListArgument, list_inputs([[1, 1], [2, 1], [3, 2], [6, 4], [1, 1]]), "tvm")
    assert_compiled_exactly(DecoderWithAttention, tolist_inputs([[1], [2], [1], [4], [6]]), "tvm")


def test_a_loop_the_example_never_enters_on_a_float_bound_is_still_refused():
    """No int input drives the loop's bound: nothing to compile it from, the refusal stands."""

    class Unrolled(nn.Module):
        def forward(self, x):
            steps = int(x.sum() > 100)
            out = torch.zeros(2, steps)
            for t in range(steps):
                out[:, t] = x[:, 0]
            return out

    with pytest.raises(Exception, match="on example values failed"):
        import_module(Unrolled().eval(), (torch.ones(2, 3),))
