"""Early-exit classifiers written the way SDN, BranchyNet and MSDNet code is written.

Every class declares `example_inputs()` (what `dycl.compile` sees), `path_inputs()` (inputs
that together take every path) and `N_PATHS`, the number of distinct paths; `path_key`, when
present, says which path an eager run took (the default is the sequence of submodule calls).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Variable
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from tests.frontend.research.common import conv_bn, images, pooled_head, randn


class SDNConfidence(nn.Module):
    """Shallow-Deep Networks: return at the first internal classifier that is confident."""

    N_PATHS = 3
    CONSTRUCTS = ('early-return', 'mixed-return')

    def __init__(self, num_classes=10, threshold=0.5):
        super().__init__()
        self.layers = nn.ModuleList([conv_bn(3, 8), conv_bn(8, 8), conv_bn(8, 8)])
        self.heads = nn.ModuleList([pooled_head(8, num_classes) for _ in range(3)])
        self.threshold = threshold

    def forward(self, x):
        confs = []
        for i, (layer, head) in enumerate(zip(self.layers, self.heads)):
            x = layer(x)
            y = head(x)
            confs.append(torch.max(F.softmax(y, 1)))
            if confs[-1] > self.threshold and i < len(self.layers) - 1:
                return y, i, True
        return y, len(self.layers) - 1, False

    @staticmethod
    def example_inputs():
        return (randn(1, 3, 8, 8),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (0, 30.0), (1, 30.0)])


class SDNNumpyArgmax(nn.Module):
    """Run every internal classifier and keep the most confident one (numpy on 0-d tensors)."""

    N_PATHS = 3
    CONSTRUCTS = ('np-on-list', 'np.argmax', '.data')
    WEIGHT_SEED = 1

    def __init__(self, num_classes=10):
        super().__init__()
        self.layers = nn.ModuleList([conv_bn(3, 8), conv_bn(8, 8), conv_bn(8, 8)])
        self.heads = nn.ModuleList([pooled_head(8, num_classes) for _ in range(3)])

    def forward(self, x):
        outs, confs = [], []
        for layer, head in zip(self.layers, self.heads):
            x = layer(x)
            y = head(x)
            outs.append(y)
            confs.append(torch.max(F.softmax(y, 1)).data)
        k = np.argmax(confs)
        return outs[k], int(k)

    @staticmethod
    def path_key(inputs, output, trace):
        return output[1]

    @staticmethod
    def example_inputs():
        return (randn(1, 3, 8, 8),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (0, 0.3), (3, 30.0)])


def entropy(p):
    return -torch.sum(p * torch.log(p + 1e-12), dim=1)


class BranchyNetEntropy(nn.Module):
    """BranchyNet: exit when the entropy of a branch's softmax is below its threshold
    (thresholds compared in numpy, as in the original evaluation scripts)."""

    N_PATHS = 3
    CONSTRUCTS = ('np-on-tensor', '.data', '.cpu()', 'early-return')
    WEIGHT_SEED = 3

    def __init__(self, num_classes=10):
        super().__init__()
        self.stages = nn.ModuleList([conv_bn(3, 8), conv_bn(8, 8), conv_bn(8, 8)])
        self.exits = nn.ModuleList([pooled_head(8, num_classes) for _ in range(3)])
        self.thresholds = [1.6, 1.9]

    def forward(self, x):
        for i in range(len(self.stages)):
            x = self.stages[i](x)
            y = self.exits[i](x)
            if i == len(self.stages) - 1:
                return y, i
            e = entropy(F.softmax(y, dim=1)).data.cpu().numpy()
            if e < self.thresholds[i]:
                return y, i

    @staticmethod
    def example_inputs():
        return (randn(1, 3, 8, 8),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (1, 30.0), (18, 30.0)])


class SDNLayer(nn.Module):
    """An SDN layer: `only_forward` returns the features, whether it has an output, and the output."""

    def __init__(self, cin, cout, add_output, num_classes=10):
        super().__init__()
        self.layers = conv_bn(cin, cout)
        self.output = pooled_head(cout, num_classes) if add_output else None
        self.no_output = not add_output

    def only_forward(self, x):
        fwd = self.layers(x)
        if self.no_output:
            return fwd, 0, None
        return fwd, 1, self.output(fwd)


class SDNEarlyExitOverride(nn.Module):
    """SDN's `early_exit` installed over `forward` (`model.forward = model.early_exit`);
    the last resort picks the most confident output with `np.argmax(confidences)`."""

    N_PATHS = 4
    CONSTRUCTS = ('forward-override', 'np-on-list', 'np.argmax', 'no_grad', '.detach()', 'early-return', 'mixed-return')
    WEIGHT_SEED = 29

    def __init__(self, num_classes=10):
        super().__init__()
        self.init_conv = conv_bn(3, 8)
        self.layers = nn.ModuleList([SDNLayer(8, 8, True), SDNLayer(8, 8, False), SDNLayer(8, 8, True)])
        self.end_layers = pooled_head(8, num_classes)
        self.confidence_threshold = 0.6
        self.forward = self.early_exit

    def early_exit(self, x):
        confidences = []
        outputs = []
        fwd = self.init_conv(x)
        output_id = 0
        for layer in self.layers:
            fwd, is_output, output = layer.only_forward(fwd)
            if is_output:
                outputs.append(output)
                with torch.no_grad():
                    softmax = F.softmax(output[0].detach(), dim=0)
                confidence = torch.max(softmax)
                confidences.append(confidence)
                if confidence >= self.confidence_threshold:
                    is_early = True
                    return output, output_id, is_early
                output_id += is_output
        output = self.end_layers(fwd)
        outputs.append(output)
        softmax = F.softmax(output[0], dim=0)
        confidence = torch.max(softmax)
        confidences.append(confidence)
        max_confidence_output = np.argmax(confidences)
        is_early = False
        return outputs[max_confidence_output], max_confidence_output, is_early

    @staticmethod
    def path_key(inputs, output, trace):
        return int(output[1]), output[2]

    @staticmethod
    def example_inputs():
        return (randn(1, 3, 8, 8),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (0, 10.0), (0, 30.0), (11, 3.0)])


class SDNBlockWOutput(nn.Module):
    """SDN's residual block: one without an internal classifier sets `self.output = None` and
    `self.forward = self.only_forward` on the instance; `layers` is read by index."""

    def __init__(self, cin, cout, add_output, num_classes=10):
        super(SDNBlockWOutput, self).__init__()
        layers = nn.ModuleList()
        layers.append(nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout)))
        layers.append(nn.Sequential())  # shortcut
        layers.append(nn.ReLU())
        self.layers = layers
        if add_output:
            self.output = pooled_head(cout, num_classes)
            self.no_output = False
        else:
            self.output = None
            self.forward = self.only_forward
            self.no_output = True

    def forward(self, x):
        fwd = self.layers[0](x)  # conv layers
        fwd = fwd + self.layers[1](x)  # shortcut
        return self.layers[2](fwd), 1, self.output(fwd)  # output layers for this module

    def only_forward(self, x):
        fwd = self.layers[0](x)  # conv layers
        fwd = fwd + self.layers[1](x)  # shortcut
        return self.layers[2](fwd), 0, None  # activation


class SDNOnlyForwardBlocks(nn.Module):
    """SDN's network over blocks whose `forward` is replaced on the instance: `fwd, is_output,
    output = layer(fwd)` runs `only_forward` where the block has no exit."""

    N_PATHS = 3
    CONSTRUCTS = ('forward-override', 'early-return', 'mixed-return', '.data')

    def __init__(self, num_classes=10):
        super(SDNOnlyForwardBlocks, self).__init__()
        self.init_conv = conv_bn(3, 8)
        self.layers = nn.ModuleList([SDNBlockWOutput(8, 8, add) for add in (True, False, True, False)])
        self.end_layers = pooled_head(8, num_classes)
        self.confidence_threshold = 0.4
        self.forward = self.early_exit

    def early_exit(self, x):
        fwd = self.init_conv(x)
        output_id = 0
        for layer in self.layers:
            fwd, is_output, output = layer(fwd)
            if is_output:
                softmax = F.softmax(output.data[0], dim=0)
                confidence = torch.max(softmax)
                if confidence >= self.confidence_threshold:
                    return output, output_id, True
                output_id += is_output
        return self.end_layers(fwd), output_id, False

    @staticmethod
    def example_inputs():
        return (randn(1, 3, 8, 8),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (1, 10.0), (0, 100.0)])


class MSDNetBreak(nn.Module):
    """Anytime prediction: `logits = None` before a loop that assigns it and may break."""

    N_PATHS = 3
    CONSTRUCTS = ('none-start',)

    def __init__(self, num_classes=10):
        super().__init__()
        self.nBlocks = 3
        self.blocks = nn.ModuleList([conv_bn(3, 8), conv_bn(8, 8), conv_bn(8, 8)])
        self.classifiers = nn.ModuleList([pooled_head(8, num_classes) for _ in range(3)])
        self.T = [0.5, 0.45, 0.0]

    def forward(self, x):
        logits = None
        for i in range(self.nBlocks):
            x = self.blocks[i](x)
            logits = self.classifiers[i](x)
            prob = F.softmax(logits, dim=1)
            if prob.max().item() >= self.T[i]:
                break
        return logits, i

    @staticmethod
    def example_inputs():
        return (randn(1, 3, 8, 8),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (0, 30.0), (1, 30.0)])


class SDNNumpyMaxMean(nn.Module):
    """Confidences as numpy arrays: `np.max(probs)` to exit, `np.mean(confs)` reported."""

    N_PATHS = 3
    CONSTRUCTS = ('np-on-tensor', 'np.max', 'np.mean', '.detach()', '.cpu()')

    def __init__(self, num_classes=10):
        super().__init__()
        self.blocks = nn.ModuleList([conv_bn(3, 8), conv_bn(8, 8), conv_bn(8, 8)])
        self.heads = nn.ModuleList([pooled_head(8, num_classes) for _ in range(3)])
        self.threshold = 0.5

    def forward(self, x):
        confs = []
        for i, (block, head) in enumerate(zip(self.blocks, self.heads)):
            x = block(x)
            logits = head(x)
            probs = F.softmax(logits, dim=1).detach().cpu().numpy()
            confs.append(np.max(probs))
            if np.max(probs) > self.threshold:
                break
        return logits, i, float(np.mean(confs))

    @staticmethod
    def example_inputs():
        return (randn(1, 3, 8, 8),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (0, 30.0), (1, 30.0)])


class BasicBlock(nn.Module):
    def __init__(self, planes):
        super().__init__()
        self.conv1 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + x)


class GroupGetattrExit(nn.Module):
    """ResNet groups built with setattr and walked with `getattr(self, 'group{}_layer{}'...)`,
    one exit per group."""

    N_PATHS = 3
    CONSTRUCTS = ('getattr-format', 'early-return')
    WEIGHT_SEED = 1

    def __init__(self, num_classes=10):
        super().__init__()
        self.num_groups, self.num_layers = 3, 2
        self.stem = conv_bn(3, 8)
        for g in range(self.num_groups):
            for i in range(self.num_layers):
                setattr(self, "group{}_layer{}".format(g, i), BasicBlock(8))
            setattr(self, "exit{}".format(g), nn.Linear(8, num_classes))
        self.threshold = 0.5

    def forward(self, x):
        x = self.stem(x)
        for g in range(self.num_groups):
            for i in range(self.num_layers):
                x = getattr(self, "group{}_layer{}".format(g, i))(x)
            out = getattr(self, "exit{}".format(g))(F.adaptive_avg_pool2d(x, 1).view(x.size(0), -1))
            if F.softmax(out, 1).max() > self.threshold:
                return out, g
        return out, self.num_groups - 1

    @staticmethod
    def example_inputs():
        return (randn(1, 3, 8, 8),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (0, 10.0), (0, 30.0)])


class VariableThresholdExit(nn.Module):
    """Old-style code: `Variable(x)`, per-exit thresholds as a tensor moved `.to(x.device)`."""

    N_PATHS = 3
    CONSTRUCTS = ('Variable', '.to(device)', 'early-return')

    def __init__(self, num_classes=10):
        super().__init__()
        self.stem = conv_bn(3, 8)
        self.blocks = nn.ModuleList([conv_bn(8, 8), conv_bn(8, 8)])
        self.heads = nn.ModuleList([pooled_head(8, num_classes) for _ in range(2)])
        self.final = pooled_head(8, num_classes)
        self.thresholds = [0.5, 0.45]

    def forward(self, x):
        x = Variable(x)
        thresholds = torch.tensor(self.thresholds).to(x.device)
        h = self.stem(x)
        for i in range(len(self.blocks)):
            h = self.blocks[i](h)
            y = self.heads[i](h)
            if torch.max(F.softmax(y, 1)) > thresholds[i]:
                return y, i
        return self.final(h), len(self.blocks)

    @staticmethod
    def example_inputs():
        return (randn(1, 3, 8, 8),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (13, 30.0), (67, 30.0)])


class NpWhereExit(nn.Module):
    """Oracle-style evaluation inside the model: all exits, then the first confident one
    found with `np.where(np.array(confs) > t)`."""

    N_PATHS = 3
    CONSTRUCTS = ('np-on-list', 'np.array', 'np.where', '.detach()')

    def __init__(self, num_classes=10):
        super().__init__()
        self.blocks = nn.ModuleList([conv_bn(3, 8), conv_bn(8, 8), conv_bn(8, 8)])
        self.heads = nn.ModuleList([pooled_head(8, num_classes) for _ in range(3)])
        self.t = 0.5

    def forward(self, x):
        outs, confs = [], []
        for block, head in zip(self.blocks, self.heads):
            x = block(x)
            y = head(x)
            outs.append(y)
            confs.append(torch.max(F.softmax(y, 1)).detach())
        hits = np.where(np.array(confs) > self.t)[0]
        k = hits[0] if len(hits) > 0 else len(confs) - 1
        return outs[k], int(k)

    @staticmethod
    def path_key(inputs, output, trace):
        return output[1]

    @staticmethod
    def example_inputs():
        return (randn(1, 3, 8, 8),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (0, 30.0), (1, 30.0)])


class ExitConfHistory(nn.Module):
    """Exits that may only predict some classes (`logits.masked_fill_`), inplace ReLUs, and a
    confidence history written through a view (`v = hist.view(-1); v[i] = conf`)."""

    N_PATHS = 3
    CONSTRUCTS = ('masked_fill_', 'inplace-relu', 'view-store', 'early-return')

    def __init__(self, num_classes=6):
        super().__init__()
        self.blocks = nn.ModuleList([conv_bn(3, 8, inplace=True), conv_bn(8, 8, inplace=True), conv_bn(8, 8, inplace=True)])
        self.heads = nn.ModuleList([nn.Linear(8, num_classes) for _ in range(3)])
        invalid = torch.zeros(3, 1, num_classes, dtype=torch.bool)
        invalid[0, :, 3:] = True  # the first exit only knows the coarse classes
        self.register_buffer("invalid", invalid)
        self.threshold = 0.55

    def forward(self, x):
        conf_hist = torch.zeros(1, len(self.blocks))
        v = conf_hist.view(-1)
        for i, block in enumerate(self.blocks):
            x = block(x)
            logits = self.heads[i](x.mean((2, 3)))
            logits.masked_fill_(self.invalid[i], -1e4)
            conf = F.softmax(logits, 1).max()
            v[i] = conf
            if conf > self.threshold:
                return logits, conf_hist
        return logits, conf_hist

    @staticmethod
    def example_inputs():
        return (randn(1, 3, 8, 8),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (0, 10.0), (241, 30.0)])


class MultiHeadAnyMaxKey(nn.Module):
    """Several heads on one trunk: `[head(h) for head in self.heads]`, a score table filled
    with `scores[:, i] = ...`, `any(...)` over a generator and `max(range(n), key=...)`."""

    N_PATHS = 4
    CONSTRUCTS = ('list-comp', 'genexp', 'any', 'max-key', 'index-assign')
    WEIGHT_SEED = 4

    def __init__(self, num_classes=10):
        super().__init__()
        self.body = nn.Sequential(conv_bn(3, 8), nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.heads = nn.ModuleList([nn.Linear(8, num_classes) for _ in range(3)])
        self.threshold = 0.5

    def forward(self, x):
        h = self.body(x)
        logits_all = [head(h) for head in self.heads]
        scores = torch.zeros(1, len(self.heads))
        for i, l in enumerate(logits_all):
            scores[:, i] = F.softmax(l, 1).max()
        if any(scores[0, i] > self.threshold for i in range(len(self.heads))):
            k = max(range(len(self.heads)), key=lambda j: scores[0, j])
            return logits_all[k], k
        return torch.stack(logits_all).mean(0), -1

    @staticmethod
    def path_key(inputs, output, trace):
        return output[1]

    @staticmethod
    def example_inputs():
        return (randn(1, 3, 8, 8),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (0, 30.0), (1, 30.0), (3, 30.0)])


class ExitOutputsDict(nn.Module):
    """Outputs in dicts, as HuggingFace-style multi-exit code keeps them: `outputs = {}`
    filled per exit with `outputs[f"exit{i}"] = ...` through `getattr` by formatted name,
    and `{"logits": ..., "exit_layer": i, "confidence": conf}` returned at the exit."""

    N_PATHS = 3
    CONSTRUCTS = ('dict', 'getattr-format', 'early-return', 'mixed-return')

    def __init__(self, num_classes=10, threshold=0.5):
        super().__init__()
        for i in range(3):
            setattr(self, 'stage{}'.format(i), conv_bn(3 if i == 0 else 8, 8))
            setattr(self, 'exit{}'.format(i), pooled_head(8, num_classes))
        self.threshold = threshold

    def forward(self, x):
        outputs = {}
        for i in range(3):
            x = getattr(self, 'stage{}'.format(i))(x)
            outputs[f"exit{i}"] = getattr(self, 'exit{}'.format(i))(x)
            conf = F.softmax(outputs[f"exit{i}"], 1).max()
            if conf > self.threshold and i < 2:
                return {"logits": outputs[f"exit{i}"], "exit_layer": i, "confidence": conf}
        return {"logits": outputs["exit2"], "exit_layer": 2, "confidence": conf}

    @staticmethod
    def path_key(inputs, output, trace):
        return output["exit_layer"]

    @staticmethod
    def example_inputs():
        return (randn(1, 3, 8, 8),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (0, 30.0), (1, 30.0), (2, 10.0), (3, 3.0)])


class PackedTextEarlyExit(nn.Module):
    """A sentiment LSTM written as pytorch-sentiment-analysis writes it (time-major text,
    `text_lengths.to('cpu')`, `enforce_sorted=False`, dropout), with an exit after the first
    LSTM when its classifier is confident; the second LSTM reads the first one's packed
    output, and the head pools over each text's own length."""

    N_PATHS = 2
    CONSTRUCTS = ('packed', '.to(device)', 'early-return')

    def __init__(self, vocab_size=12, embedding_dim=6, hidden_dim=5, output_dim=2, threshold=0.565):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=0)
        self.rnn1 = nn.LSTM(embedding_dim, hidden_dim)
        self.rnn2 = nn.LSTM(hidden_dim, hidden_dim, bidirectional=True)
        self.exit1 = nn.Linear(hidden_dim, output_dim)
        self.fc = nn.Linear(hidden_dim * 3, output_dim)
        self.dropout = nn.Dropout(0.5)
        self.threshold = threshold

    def forward(self, text, text_lengths):
        embedded = self.dropout(self.embedding(text))
        packed_embedded = pack_padded_sequence(embedded, text_lengths.to('cpu'), enforce_sorted=False)
        packed_output, (hidden, cell) = self.rnn1(packed_embedded)
        logits = self.exit1(self.dropout(hidden[-1]))
        if F.softmax(logits, dim=1).max().item() > self.threshold:
            return logits, 1
        packed_output, (hidden, cell) = self.rnn2(packed_output)
        output, output_lengths = pad_packed_sequence(packed_output)
        pooled = output.sum(0) / output_lengths.unsqueeze(1).to(output.dtype)
        hidden = torch.cat((hidden[-2, :, :], hidden[-1, :, :]), dim=1)
        return self.fc(torch.cat((self.dropout(hidden)[:, :5], pooled), dim=1)), 2

    @staticmethod
    def example_inputs():
        return PackedTextEarlyExit.path_inputs()[0]

    @staticmethod
    def path_inputs():
        generator = torch.Generator().manual_seed(5)
        inputs = []
        for lengths in ([3, 6, 2], [6, 6, 6], [1, 4, 1], [5, 2, 6], [2, 1, 3], [4, 4, 2]):
            text = torch.randint(1, 12, (6, 3), generator=generator)
            text = text * (torch.arange(6).view(-1, 1) < torch.tensor(lengths).view(1, -1))
            inputs.append((text, torch.tensor(lengths)))
        return inputs



class HighwayException(Exception):
    def __init__(self, message, exit_layer):
        self.message = message  # Output of the highway
        self.exit_layer = exit_layer  # start from 1!


class HighwayEncoder(nn.Module):
    """DeeBERT's encoder: a highway classifier after each layer; at inference the layer loop
    raises `HighwayException` when the highway's entropy is below the layer's threshold."""

    def __init__(self, hidden=16, layers=3, classes=4):
        super().__init__()
        self.layer = nn.ModuleList([nn.Sequential(nn.Linear(hidden, hidden), nn.Tanh()) for _ in range(layers)])
        self.highway = nn.ModuleList([nn.Linear(hidden, classes) for _ in range(layers)])
        self.early_exit_entropy = [1.0, 1.1, -1.0]

    def forward(self, hidden_states):
        def entropy(x):
            exp_x = torch.exp(x)
            A = torch.sum(exp_x, dim=1)  # sum of exp(x_i)
            B = torch.sum(x * exp_x, dim=1)  # sum of x_i * exp(x_i)
            return torch.log(A) - B / A

        all_highway_exits = ()
        for i, layer_module in enumerate(self.layer):
            hidden_states = layer_module(hidden_states)
            highway_logits = self.highway[i](hidden_states[:, 0])
            if not self.training:
                highway_entropy = entropy(highway_logits)
                all_highway_exits = all_highway_exits + ((highway_logits, highway_entropy),)
                if highway_entropy < self.early_exit_entropy[i]:
                    new_output = (highway_logits, all_highway_exits)
                    raise HighwayException(new_output, i + 1)
        return hidden_states, all_highway_exits


class DeeBertHighwayExit(nn.Module):
    """DeeBERT (Xin et al., 2020): the exception raised in the encoder's layer loop is
    caught two modules up, in the classifier's forward, which returns the highway's logits
    and the exit layer."""

    N_PATHS = 3
    CONSTRUCTS = ('raise-caught', 'nested-def', 'mixed-return')

    def __init__(self, hidden=16, classes=4):
        super().__init__()
        self.embeddings = nn.Linear(8, hidden)
        self.encoder = HighwayEncoder(hidden, classes=classes)
        self.classifier = nn.Linear(hidden, classes)
        with torch.no_grad():
            for highway in self.encoder.highway:
                highway.weight.mul_(4.0)

    def bert(self, input_embeds):
        encoder_outputs = self.encoder(self.embeddings(input_embeds))
        return encoder_outputs[0]

    def forward(self, input_embeds):
        exit_layer = len(self.encoder.layer)
        try:
            sequence_output = self.bert(input_embeds)
            logits = self.classifier(sequence_output[:, 0])
        except HighwayException as e:
            outputs = e.message
            exit_layer = e.exit_layer
            logits = outputs[0]
        return logits, exit_layer

    @staticmethod
    def path_key(inputs, output, trace):
        return output[1]

    @staticmethod
    def example_inputs():
        return (randn(1, 5, 8),)

    @staticmethod
    def path_inputs():
        return images([(0, 0.3), (0, 3.0), (0, 10.0), (1, 10.0), (2, 3.0), (3, 10.0)], shape=(1, 5, 8))

MODELS = [
    SDNConfidence,
    DeeBertHighwayExit,
    PackedTextEarlyExit,
    SDNNumpyArgmax,
    BranchyNetEntropy,
    SDNEarlyExitOverride,
    SDNOnlyForwardBlocks,
    MSDNetBreak,
    SDNNumpyMaxMean,
    GroupGetattrExit,
    VariableThresholdExit,
    NpWhereExit,
    ExitConfHistory,
    MultiHeadAnyMaxKey,
    ExitOutputsDict,
]
