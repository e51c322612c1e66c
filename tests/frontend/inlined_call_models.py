"""Calls DyCL compiles by what Python runs, the way published code writes them.

- SDN's residual blocks (Kaya et al., "Shallow-Deep Networks"): a block without an internal
  classifier sets `self.output = None` and `self.forward = self.only_forward` in `__init__`,
  and the network unpacks `fwd, is_output, output = layer(fwd)`. The block returns Python
  values next to its tensor, and is either inlined (its forward indexes `self.layers[0]`,
  which DyCL compiles itself) or captured whole (plain submodule calls). Both must run the
  instance's `forward`, as `nn.Module.__call__` does, not the class's.
- The Universal Transformer's ACT (`act_fn(x, inputs, self.enc, self.timing_signal,
  self.position_signal, self.num_layers)`): an inlined helper whose first statements only
  bind module tensors (a plain tensor attribute and a buffer) before its `while`.
- Activations picked by name from a dict of lambdas (`self.act = ACTIVATIONS[name]`): a
  lambda's source lines are the dict's item, which DyCL cannot parse on its own; it runs the
  lambda as it is.

`CASES` compile exactly (their inputs take every path); `REFUSED` are refused at the marked
line, with a message that quotes the statement written there.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Variable

CASES: dict = {}
REFUSED: dict = {}


def _images(scales, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return [(torch.randn(1, 3, 8, 8, generator=generator) * s,) for s in scales]


class InternalClassifier(nn.Module):
    def __init__(self, channels, num_classes=10):
        super(InternalClassifier, self).__init__()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.linear = nn.Linear(channels, num_classes)

    def forward(self, x):
        return self.linear(self.pool(x).view(x.size(0), -1))


class BasicBlockWOutput(nn.Module):
    """SDN's block, as published: `layers` is a ModuleList read by index in forward."""

    expansion = 1

    def __init__(self, in_channels, channels, params, stride=1):
        super(BasicBlockWOutput, self).__init__()
        add_output, num_classes, self.output_id = params
        self.depth = 2
        layers = nn.ModuleList()
        conv_layer = [
            nn.Conv2d(in_channels, channels, kernel_size=3, stride=stride, padding=1, bias=False),
            nn.BatchNorm2d(channels), nn.ReLU(),
            nn.Conv2d(channels, channels, kernel_size=3, stride=1, padding=1, bias=False),
            nn.BatchNorm2d(channels),
        ]
        layers.append(nn.Sequential(*conv_layer))
        shortcut = nn.Sequential()
        if stride != 1 or in_channels != self.expansion * channels:
            shortcut = nn.Sequential(nn.Conv2d(in_channels, self.expansion * channels, kernel_size=1, stride=stride, bias=False),
                                     nn.BatchNorm2d(self.expansion * channels))
        layers.append(shortcut)
        layers.append(nn.ReLU())
        self.layers = layers
        if add_output:
            self.output = InternalClassifier(self.expansion * channels, num_classes)
            self.no_output = False
        else:
            self.output = None
            self.forward = self.only_forward
            self.no_output = True

    def forward(self, x):
        fwd = self.layers[0](x)  # conv layers
        fwd = fwd + self.layers[1](x)  # shortcut
        return self.layers[2](fwd), 1, self.output(fwd)  # output layers for this module

    def only_output(self, x):
        fwd = self.layers[0](x)
        fwd = fwd + self.layers[1](x)
        fwd = self.layers[2](fwd)
        return self.output(fwd)

    def only_forward(self, x):
        fwd = self.layers[0](x)  # conv layers
        fwd = fwd + self.layers[1](x)  # shortcut
        return self.layers[2](fwd), 0, None  # activation


class PlainBlockWOutput(nn.Module):
    """The same block with named submodules: nothing in it needs DyCL, so it is captured whole."""

    def __init__(self, in_channels, channels, add_output, num_classes=10):
        super(PlainBlockWOutput, self).__init__()
        self.conv = nn.Sequential(nn.Conv2d(in_channels, channels, 3, padding=1, bias=False), nn.BatchNorm2d(channels))
        self.relu = nn.ReLU()
        if add_output:
            self.output = InternalClassifier(channels, num_classes)
        else:
            self.output = None
            self.forward = self.only_forward

    def forward(self, x):
        fwd = self.relu(self.conv(x) + x)
        return fwd, 1, self.output(fwd)

    def only_forward(self, x):
        return self.relu(self.conv(x) + x), 0, None


def _randomize_bn(model, seed):
    generator = torch.Generator().manual_seed(seed)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.data = torch.randn(m.num_features, generator=generator) * 0.1
            m.running_var.data = torch.rand(m.num_features, generator=generator) + 0.5


class ResNetSDN(nn.Module):
    """SDN's ResNet: `forward` returns every output; `early_exit`, installed over forward on
    the instance, stops at the first confident one."""

    def __init__(self, block=BasicBlockWOutput, add_output=(1, 0, 1, 0), num_classes=10, early_exit=True):
        super(ResNetSDN, self).__init__()
        self.num_output = sum(add_output) + 1
        self.init_conv = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU())
        layers = []
        for layer_id, add in enumerate(add_output):
            if block is BasicBlockWOutput:
                layers.append(block(8, 8, (add, num_classes, layer_id)))
            else:
                layers.append(block(8, 8, add, num_classes))
        self.layers = nn.ModuleList(layers)
        self.end_layers = InternalClassifier(8, num_classes)
        self.confidence_threshold = 0.4
        _randomize_bn(self, 7)
        if early_exit:
            self.forward = self.early_exit

    def forward(self, x):
        outputs = []
        fwd = self.init_conv(x)
        for layer in self.layers:
            fwd, is_output, output = layer(fwd)
            if is_output:
                outputs.append(output)
        fwd = self.end_layers(fwd)
        outputs.append(fwd)
        return outputs

    def confidence(self, output):
        softmax = F.softmax(Variable(output.data[0]), dim=0)
        return torch.max(softmax)

    def early_exit(self, x):
        confidences = []
        outputs = []
        fwd = self.init_conv(x)
        output_id = 0
        for layer in self.layers:
            fwd, is_output, output = layer(fwd)
            if is_output:
                outputs.append(output)
                confidence = self.confidence(output)
                confidences.append(confidence)
                if confidence >= self.confidence_threshold:
                    is_early = True
                    return output, output_id, is_early
                output_id += is_output
        output = self.end_layers(fwd)
        outputs.append(output)
        confidence = self.confidence(output)
        confidences.append(confidence)
        max_confidence_output = int(np.argmax([c.item() for c in confidences]))
        is_early = False
        return outputs[max_confidence_output], max_confidence_output, is_early


def _sdn(block=BasicBlockWOutput, early_exit=True):
    model = ResNetSDN(block=block, early_exit=early_exit)
    model.layers[0].output.linear.weight.data.mul_(0.2)  # (a weak first exit: the second one exits too)
    return model


# exits 0 and 1, and no exit (the most confident of the three, 0 to 2): calibrated by hand
_SDN_INPUTS = _images([0.05, 1.0, 4.0, 12.0, 40.0, 100.0], seed=3)

CASES["sdn_inlined_blocks_early_exit"] = (_sdn, _SDN_INPUTS)
CASES["sdn_inlined_blocks_all_outputs"] = (lambda: _sdn(early_exit=False), _SDN_INPUTS[:2])
CASES["sdn_captured_blocks_early_exit"] = (lambda: _sdn(block=PlainBlockWOutput), _SDN_INPUTS)


class GatedBlock(nn.Module):
    """A block whose instance forward has control flow (so it is inlined) and whose class
    forward would compute something else."""

    def __init__(self, gated):
        super(GatedBlock, self).__init__()
        self.fc = nn.Linear(4, 4)
        self.gate = nn.Linear(4, 1)
        if gated:
            self.forward = self.gated_forward

    def forward(self, x):
        return torch.tanh(self.fc(x)), True

    def gated_forward(self, x):
        g = torch.sigmoid(self.gate(x))
        if g.item() > 0.5:
            return torch.tanh(self.fc(x)), True
        return x, False


class GatedChain(nn.Module):
    def __init__(self):
        super(GatedChain, self).__init__()
        self.blocks = nn.ModuleList([GatedBlock(gated=k % 2 == 0) for k in range(3)])

    def forward(self, x):
        executed = []
        for block in self.blocks:
            x, ran = block(x)
            executed.append(ran)
        return x, [int(r) for r in executed]


def _vectors(scales, seed=1):
    generator = torch.Generator().manual_seed(seed)
    base = torch.randn(1, 4, generator=generator)
    return [(base * s,) for s in scales]


CASES["gated_instance_forward"] = (GatedChain, _vectors([-8.0, -0.5, 0.5, 8.0]))


# activations picked by name from a dict of lambdas, as configurable research code does: a
# lambda's source lines are the dict's item, not a statement (an internal SyntaxError before)
ACTIVATIONS = {
    "swish": lambda x: x * torch.sigmoid(x),
    "hard_swish": lambda x: x * F.relu6(x + 3.0) / 6.0,
}


class ActivationByName(nn.Module):
    def __init__(self, activation="swish"):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.act = ACTIVATIONS[activation]
        self.gate = ACTIVATIONS["hard_swish"]

    def forward(self, x):
        h = self.act(self.fc(x))
        if h.sum() > 0:
            return self.gate(h) * 2.0
        return h - 1.0


CASES["lambda_activations_from_a_dict"] = (ActivationByName, _vectors([-8.0, -0.5, 0.5, 8.0], seed=3))


def _double_output(module, args, output):
    return output * 2


class UnrolledBlock(nn.Module):
    """Control flow on configuration: a call of it alone would be inlined."""

    def __init__(self, depth=2):
        super(UnrolledBlock, self).__init__()
        self.fc = nn.Linear(4, 4)
        self.depth = depth

    def forward(self, x):
        for _ in range(self.depth):
            x = torch.tanh(self.fc(x))
        return x


class HookedBlockGate(nn.Module):
    """A forward hook on a submodule runs with its forward: the call runs whole."""

    def __init__(self):
        super(HookedBlockGate, self).__init__()
        self.block = UnrolledBlock()
        self.block.register_forward_hook(_double_output)
        self.head = nn.Linear(4, 1)

    def forward(self, x):
        h = self.block(x)
        if self.head(h).sum() > 0:
            return h + 1
        return h - 1


CASES["forward_hook_on_a_block"] = (HookedBlockGate, _vectors([-4.0, -1.0, 1.0, 4.0], seed=4))


# ----- the Universal Transformer's ACT (andreamad8/Universal-Transformer-Pytorch) -----------

def _gen_timing_signal(length, channels, min_timescale=1.0, max_timescale=1.0e4):
    position = np.arange(length)
    num_timescales = channels // 2
    log_timescale_increment = (math.log(float(max_timescale) / float(min_timescale)) / (float(num_timescales) - 1))
    inv_timescales = min_timescale * np.exp(np.arange(num_timescales).astype(np.float64) * -log_timescale_increment)
    scaled_time = np.expand_dims(position, 1) * np.expand_dims(inv_timescales, 0)
    signal = np.concatenate([np.sin(scaled_time), np.cos(scaled_time)], axis=1)
    signal = np.pad(signal, [[0, 0], [0, channels % 2]], 'constant', constant_values=[0.0, 0.0])
    signal = signal.reshape([1, length, channels])
    return torch.from_numpy(signal).type(torch.FloatTensor)


class ACT_basic(nn.Module):
    def __init__(self, hidden_size):
        super(ACT_basic, self).__init__()
        self.sigma = nn.Sigmoid()
        self.p = nn.Linear(hidden_size, 1)
        self.p.bias.data.fill_(1)
        self.threshold = 1 - 0.1

    def forward(self, state, inputs, fn, time_enc, pos_enc, max_hop, encoder_output=None):
        halting_probability = torch.zeros(inputs.shape[0], inputs.shape[1])
        remainders = torch.zeros(inputs.shape[0], inputs.shape[1])
        n_updates = torch.zeros(inputs.shape[0], inputs.shape[1])
        previous_state = torch.zeros_like(inputs)
        step = 0
        while (((halting_probability < self.threshold) & (n_updates < max_hop)).byte().any()):
            state = state + time_enc[:, :inputs.shape[1], :].type_as(inputs.data)
            state = state + pos_enc[:, step, :].unsqueeze(1).repeat(1, inputs.shape[1], 1).type_as(inputs.data)
            p = self.sigma(self.p(state)).squeeze(-1)
            still_running = (halting_probability < 1.0).float()
            new_halted = (halting_probability + p * still_running > self.threshold).float() * still_running
            still_running = (halting_probability + p * still_running <= self.threshold).float() * still_running
            halting_probability = halting_probability + p * still_running
            remainders = remainders + new_halted * (1 - halting_probability)
            halting_probability = halting_probability + new_halted * remainders
            n_updates = n_updates + still_running + new_halted
            update_weights = p * still_running + new_halted * remainders
            if (encoder_output):
                state, _ = fn((state, encoder_output))
            else:
                state = fn(state)
            previous_state = ((state * update_weights.unsqueeze(-1)) + (previous_state * (1 - update_weights.unsqueeze(-1))))
            step += 1
        return previous_state, (remainders, n_updates)


class UniversalEncoder(nn.Module):
    """`self.timing_signal` is a plain tensor attribute (as published), `position_signal` a buffer."""

    def __init__(self, hidden_size=8, num_layers=4, max_length=6):
        super(UniversalEncoder, self).__init__()
        self.num_layers = num_layers
        self.timing_signal = _gen_timing_signal(max_length, hidden_size)
        self.register_buffer("position_signal", _gen_timing_signal(num_layers, hidden_size))
        self.embedding_proj = nn.Linear(hidden_size, hidden_size, bias=False)
        self.enc = nn.Sequential(nn.Linear(hidden_size, hidden_size), nn.Tanh())
        self.act_fn = ACT_basic(hidden_size)

    def forward(self, inputs):
        x = self.embedding_proj(inputs)
        x, (remainders, n_updates) = self.act_fn(x, inputs, self.enc, self.timing_signal, self.position_signal, self.num_layers)
        return x, (remainders, n_updates)


def _sequences(biases, seed=2):
    generator = torch.Generator().manual_seed(seed)
    return [(torch.randn(1, 3, 8, generator=generator) + b,) for b in biases]


def _universal_encoder():
    model = UniversalEncoder()
    model.act_fn.p.bias.data.fill_(-3.0)  # halting after 1 to 4 steps, depending on the input
    return model


CASES["universal_transformer_act"] = (_universal_encoder, _sequences([-30.0, 0.0, 3.0, 30.0]))


class SignalsBeforeIf(nn.Module):
    """Nothing but bindings of module tensors before an `if`."""

    def __init__(self):
        super(SignalsBeforeIf, self).__init__()
        self.timing_signal = _gen_timing_signal(1, 4)[0]
        self.register_buffer("position_signal", torch.linspace(-1, 1, 4).view(1, 4))
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        a = self.timing_signal
        b = self.position_signal
        if x.sum() > 0:
            x = self.fc(x) + a
        else:
            x = x - b
        return x, a, b


CASES["module_tensors_before_if"] = (SignalsBeforeIf, _vectors([-1.0, 1.0]))


# the exits a network took, passed to a plain helper that reads them (SDN-style ensembling):
# the list's length is known only at run time, so the helper is compiled by DyCL, its `len`
# and `[-1]` read in the host (refused before: "tensor code on a list ... known only at runtime")
def ensemble(outputs):
    return torch.stack(outputs).mean(0), len(outputs)


def confident_last(outputs, threshold=0.5):
    return outputs[-1] * (1.0 + threshold * len(outputs))


class ExitsToAHelper(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Linear(4, 4) for _ in range(3))
        self.heads = nn.ModuleList(nn.Linear(4, 3) for _ in range(3))

    def forward(self, x):
        outs = []
        for block, head in zip(self.blocks, self.heads):
            x = torch.tanh(block(x))
            logits = head(x)
            if F.softmax(logits, -1).max() > 0.43:
                outs.append(logits)
        outs.append(self.heads[-1](x))
        mean, count = ensemble(outs)
        return mean, count, confident_last(outs, threshold=0.25)


def _exit_inputs(picked=(0, 1, 2, 4, 6, 17, 25, 59)):
    """Inputs that take each of the 8 sets of exits (of 60 drawn, at scales 0.5 to 8)."""
    generator = torch.Generator().manual_seed(3)
    drawn = [torch.randn(1, 4, generator=generator) * s for s in (0.5, 1, 2, 4, 8) for _ in range(12)]
    return [(drawn[k],) for k in picked]


CASES["exits_to_a_helper"] = (ExitsToAHelper, _exit_inputs())


# ----- refused: the message quotes the statement at its line --------------------------------

class ScaledGate(nn.Module):
    def __init__(self):
        super(ScaledGate, self).__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, h, scale):
        if h.sum() > 0:
            h = self.fc(h) * scale
        return h


class DataSizeArgument(nn.Module):
    def __init__(self):
        super(DataSizeArgument, self).__init__()
        self.gate = ScaledGate()

    def forward(self, x):
        y = self.gate(x, 0.1 * x[x > 0].size(0))  # line marker: data-size-argument
        return y


REFUSED["data_dependent_argument"] = (
    DataSizeArgument, (torch.randn(1, 4),), "data-size-argument", "cannot be captured as a tensor program"
)
