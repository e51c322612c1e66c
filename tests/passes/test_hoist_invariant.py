"""dycl-hoist-invariant on a decoder written as published captioning code writes it (the
attention module of sgrvinod's Show, Attend and Tell tutorial): the projection of the
encoder's features is recomputed at every step of the greedy loop. After the pipeline the
step's sub-DNN no longer computes it, and the compiled model is eager's on every stop."""

import numpy as np
import pytest
import torch
from torch import nn
from xdsl.dialects import func, scf

import dycl
from dycl.dialects.dycl import ParamOp
from dycl.frontend import import_module
from tests.frontend.test_small_size_examples import Attention  # (the tutorial's module, as published)
from tests.passes import support

END = 6


class Captioner(nn.Module):
    def __init__(self, encoder_dim=64, dim=32, vocab=12, max_len=6):
        super().__init__()
        self.encoder = nn.Sequential(nn.Conv2d(3, encoder_dim, 3, padding=1), nn.ReLU())
        self.attention = Attention(encoder_dim, dim, dim)
        self.embedding = nn.Embedding(vocab, dim)
        self.decode_step = nn.LSTMCell(dim + encoder_dim, dim, bias=True)
        self.init_h = nn.Linear(encoder_dim, dim)
        self.fc = nn.Linear(dim, vocab)
        self.max_len = max_len

    def forward(self, image):
        encoder_out = self.encoder(image).flatten(2).permute(0, 2, 1)
        h = self.init_h(encoder_out.mean(dim=1))
        c = torch.zeros_like(h)
        word = torch.ones(1, dtype=torch.long)
        words = []
        for step in range(self.max_len):
            context, _ = self.attention(encoder_out, decoder_hidden=h)
            h, c = self.decode_step(torch.cat([self.embedding(word), context], dim=1), (h, c))
            word = self.fc(h).argmax(dim=1)
            words.append(word)
            if word.item() == END:
                break
        return torch.stack(words, dim=1)


@pytest.fixture(scope="module")
def captioner():
    torch.manual_seed(0)
    model = Captioner().eval()
    with torch.no_grad():
        model.fc.weight.mul_(8.0)  # (the image decides the words, and when the end token comes)
        model.init_h.weight.mul_(10.0)
        model.decode_step.weight_ih.mul_(5.0)
    images = [torch.randn(1, 3, 8, 8, generator=torch.Generator().manual_seed(seed)) for seed in range(40)]
    with torch.no_grad():
        lengths = {model(image).shape[1]: image for image in images}
    return model, lengths


def _params_called_in_loops(module) -> set[str]:
    """Weights read by the sub-DNNs the host calls inside a loop."""
    subdnns = {f.sym_name.data: f for f in support.subdnn_functions(module)}
    names = set()
    for loop in (op for fn in support.host_functions(module) for op in fn.walk() if isinstance(op, scf.WhileOp)):
        for call in (op for op in loop.walk() if isinstance(op, func.CallOp)):
            callee = subdnns.get(call.callee.string_value())
            names |= {op.attributes["name"].data for op in callee.walk() if isinstance(op, ParamOp)} if callee else set()
    return names


def test_the_features_projection_leaves_the_decode_loop(captioner):
    model, lengths = captioner
    program = import_module(model, (lengths[max(lengths)],))
    after = support.apply("dycl-pipeline", program.module)
    in_loop = _params_called_in_loops(after)
    assert "attention.decoder_att.weight" in in_loop  # (the step is still called in the loop)
    assert "attention.encoder_att.weight" not in in_loop
    without = _params_called_in_loops(support.apply(
        "dycl-const-prop,dycl-shape-infer,dycl-keep-branches,dycl-outline,dycl-hoist-free,dycl-dedup", program.module))
    assert "attention.encoder_att.weight" in without


def test_the_hoisted_decoder_is_exact_on_every_stop(captioner):
    model, lengths = captioner
    assert sorted(lengths) == [1, 2, 3, model.max_len]
    compiled = dycl.compile(model, (lengths[model.max_len],), "onnxruntime", progress=False)
    worst = 0.0
    for length, image in sorted(lengths.items()):
        with torch.no_grad():
            want = model(image)
        got = compiled(image)
        assert np.array_equal(np.asarray(got), want.numpy()), length
        worst = max(worst, float(np.abs(np.asarray(got) - want.numpy()).max()))
    assert worst == 0.0
