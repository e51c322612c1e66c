"""Layer skipping written the way SkipNet, BlockDrop and ConvNet-AIG code is written."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import autograd

from tests.frontend.research.common import conv_bn, images, pooled_head, randn, tinted


def gate_pattern(masks) -> tuple:
    return tuple(int(round(float(m))) for m in masks)


class BasicBlock(nn.Module):
    """torchvision's BasicBlock: inplace ReLU, `out += residual`."""

    def __init__(self, planes):
        super().__init__()
        self.conv1 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)

    def forward(self, x):
        residual = x
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)
        out = self.conv2(out)
        out = self.bn2(out)
        out += residual
        out = self.relu(out)
        return out


class FeedforwardGate(nn.Module):
    """SkipNet's FeedforwardGateII: pooled features -> sigmoid; hard 0/1 in the forward pass,
    sigmoid gradients in the backward pass (straight-through)."""

    def __init__(self, channel=8):
        super().__init__()
        self.avg_layer = nn.AdaptiveAvgPool2d(1)
        self.linear_layer = nn.Conv2d(channel, 1, 1)
        self.prob_layer = nn.Sigmoid()

    def forward(self, x):
        x = self.avg_layer(x)
        x = self.linear_layer(x)
        prob = self.prob_layer(x)
        x = (prob > 0.5).float().detach() - prob.detach() + prob
        return x.view(x.size(0), 1, 1, 1), prob


class SkipNetFeedforward(nn.Module):
    """SkipNet ResNetFeedForwardSP: getattr-named groups, gates mixed in with the mask,
    `del masks[-1]` for the gate after the last block."""

    N_PATHS = 4
    CONSTRUCTS = ('getattr-format', 'del', '.detach()')

    def __init__(self, num_classes=10):
        super().__init__()
        self.num_layers = [2, 1]
        self.stem = conv_bn(3, 8)
        for g in range(len(self.num_layers)):
            for i in range(self.num_layers[g]):
                setattr(self, "group{}_ds{}".format(g + 1, i), None)
                setattr(self, "group{}_layer{}".format(g + 1, i), BasicBlock(8))
                setattr(self, "group{}_gate{}".format(g + 1, i), FeedforwardGate(8))
        self.gate = FeedforwardGate(8)
        self.fc = nn.Linear(8, num_classes)

    def forward(self, x):
        x = self.stem(x)
        masks = []
        gprobs = []
        mask, gprob = self.gate(x)
        gprobs.append(gprob)
        masks.append(mask.squeeze())
        prev = x
        for g in range(len(self.num_layers)):
            for i in range(0 if g > 0 else 1, self.num_layers[g]):
                if getattr(self, "group{}_ds{}".format(g + 1, i)) is not None:
                    prev = getattr(self, "group{}_ds{}".format(g + 1, i))(prev)
                x = getattr(self, "group{}_layer{}".format(g + 1, i))(x)
                prev = x = mask.expand_as(x) * x + (1 - mask).expand_as(prev) * prev
                mask, gprob = getattr(self, "group{}_gate{}".format(g + 1, i))(x)
                gprobs.append(gprob)
                masks.append(mask.squeeze())
        del masks[-1]
        del gprobs[-1]
        x = F.adaptive_avg_pool2d(x, 1)
        x = x.view(x.size(0), -1)
        x = self.fc(x)
        return x, masks, gprobs

    @staticmethod
    def path_key(inputs, output, trace):
        return gate_pattern(output[1])

    @staticmethod
    def example_inputs():
        return (randn(1, 3, 8, 8),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (0, 10.0), (1, 3.0), (3, 10.0)])


class SkipNetRNNGate(nn.Module):
    """SkipNet with a recurrent gate: `self.hidden = self.init_hidden(b)` at the top of
    forward, read and rewritten by the gate helper; blocks really skipped."""

    N_PATHS = 8
    CONSTRUCTS = ('init-hidden', 'self-attr', 'Variable', '.to(device)')
    WEIGHT_SEED = 31

    def __init__(self, num_classes=10, hidden_dim=8):
        super().__init__()
        self.hidden_dim = hidden_dim
        self.stem = conv_bn(3, 8)
        self.blocks = nn.ModuleList([BasicBlock(8) for _ in range(3)])
        self.gate_features = nn.ModuleList([nn.Conv2d(8, 8, 1) for _ in range(3)])
        self.rnn = nn.LSTM(8, hidden_dim)
        self.proj = nn.Linear(hidden_dim, 1)
        self.fc = nn.Linear(8, num_classes)

    def init_hidden(self, batch_size, device):
        return (
            autograd.Variable(torch.zeros(1, batch_size, self.hidden_dim).to(device)),
            autograd.Variable(torch.zeros(1, batch_size, self.hidden_dim).to(device)),
        )

    def gate(self, feature):
        batch_size = feature.size(0)
        out, self.hidden = self.rnn(F.adaptive_avg_pool2d(feature, 1).view(1, batch_size, -1), self.hidden)
        prob = torch.sigmoid(self.proj(out.squeeze(0)))
        return (prob > 0.5).float(), prob

    def forward(self, x):
        x = self.stem(x)
        self.hidden = self.init_hidden(x.size(0), x.device)
        masks = []
        for i, block in enumerate(self.blocks):
            mask, prob = self.gate(self.gate_features[i](x))
            masks.append(mask)
            if mask.item() == 1:
                x = block(x)
        x = F.adaptive_avg_pool2d(x, 1).view(x.size(0), -1)
        return self.fc(x), torch.cat(masks, 1)

    @staticmethod
    def example_inputs():
        return (randn(1, 3, 8, 8),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (0, 3.0), (0, 30.0), (1, 1.0), (1, 30.0), (2, 30.0), (13, 30.0), (58, 10.0)])


class BlockDropAgent(nn.Module):
    def __init__(self, num_blocks):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 4, 3, stride=2, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.logit = nn.Linear(4, num_blocks)

    def forward(self, x):
        probs = torch.sigmoid(self.logit(self.features(x)))
        return probs, None


class BlockDropSingle(nn.Module):
    """BlockDrop inference: the agent's probabilities thresholded in place
    (`policy[policy < 0.5] = 0.0`), then `forward_single` with `if policy[t] == 1`."""

    N_PATHS = 8
    CONSTRUCTS = ('masked-assign', '.data')

    def __init__(self, num_classes=10):
        super().__init__()
        self.layer_config = [1, 2]
        self.agent = BlockDropAgent(sum(self.layer_config))
        self.seed = conv_bn(3, 8)
        self.ds = nn.ModuleList([nn.Identity(), nn.Conv2d(8, 8, 1)])
        self.blocks = nn.ModuleList([nn.ModuleList([BasicBlock(8) for _ in range(n)]) for n in self.layer_config])
        self.fc = nn.Linear(8, num_classes)

    def forward(self, inputs):
        probs, _ = self.agent(inputs)
        policy = probs.data.clone()
        policy[policy < 0.5] = 0.0
        policy[policy >= 0.5] = 1.0
        return self.forward_single(inputs, policy.data.squeeze(0)), policy

    def forward_single(self, x, policy):
        x = self.seed(x)
        t = 0
        for segment, num_blocks in enumerate(self.layer_config):
            for b in range(num_blocks):
                residual = self.ds[segment](x) if b == 0 else x
                if policy[t] == 1:
                    x = residual + self.blocks[segment][b](x)
                    x = F.relu(x)
                else:
                    x = residual
                t += 1
        x = F.adaptive_avg_pool2d(x, 1)
        x = x.view(x.size(0), -1)
        return self.fc(x)

    @staticmethod
    def example_inputs():
        return (randn(1, 3, 8, 8),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (0, 3.0), (0, 30.0), (1, 10.0), (1, 30.0), (2, 30.0), (13, 10.0), (28, 10.0)])


class BlockDropBatchPolicy(nn.Module):
    """BlockDrop's ResNet `forward(x, policy)` on a batch: a block is skipped outright when
    no image wants it (`if action.data.sum() == 0: ... continue`), otherwise mixed by mask."""

    N_PATHS = 8
    CONSTRUCTS = ('Variable', '.data')

    def __init__(self, num_classes=10):
        super().__init__()
        self.layer_config = [1, 2]
        self.seed = conv_bn(3, 8)
        self.ds = nn.ModuleList([nn.Identity(), nn.Conv2d(8, 8, 1)])
        self.blocks = nn.ModuleList([nn.ModuleList([BasicBlock(8) for _ in range(n)]) for n in self.layer_config])
        self.fc = nn.Linear(8, num_classes)

    def forward(self, x, policy):
        policy = autograd.Variable(policy)
        x = self.seed(x)
        t = 0
        for segment, num_blocks in enumerate(self.layer_config):
            for b in range(num_blocks):
                action = policy[:, t].contiguous()
                residual = self.ds[segment](x) if b == 0 else x
                # early termination if all actions in the batch are zero
                if action.data.sum() == 0:
                    x = residual
                    t += 1
                    continue
                action_mask = action.float().view(-1, 1, 1, 1)
                fx = F.relu(residual + self.blocks[segment][b](x))
                x = fx * action_mask + residual * (1 - action_mask)
                t += 1
        x = F.adaptive_avg_pool2d(x, 1)
        x = x.view(x.size(0), -1)
        return self.fc(x)

    @staticmethod
    def example_inputs():
        return (randn(2, 3, 8, 8), torch.tensor([[1.0, 0.0, 1.0], [0.0, 0.0, 1.0]]))

    @staticmethod
    def path_inputs():
        patterns = [[[0, 0, 0], [0, 0, 0]], [[1, 0, 0], [0, 0, 0]], [[0, 1, 0], [0, 0, 0]], [[0, 0, 0], [0, 0, 1]],
                    [[1, 1, 0], [0, 0, 0]], [[1, 0, 0], [0, 0, 1]], [[0, 1, 0], [0, 0, 1]], [[1, 1, 1], [0, 1, 1]]]
        return [(randn(2, 3, 8, 8, seed=k), torch.tensor(p, dtype=torch.float32)) for k, p in enumerate(patterns)]


class AIGGate(nn.Module):
    """ConvNet-AIG's gate: two 1x1 convs on pooled features; at test time the hard decision."""

    def __init__(self, channels):
        super().__init__()
        self.fc1 = nn.Conv2d(channels, 4, 1)
        self.fc2 = nn.Conv2d(4, 2, 1)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        w = F.avg_pool2d(x, x.size(2))
        w = self.fc2(self.relu(self.fc1(w)))
        return (w[:, 1] > w[:, 0]).float().view(-1)


class AIGBlock(nn.Module):
    def __init__(self, planes):
        super().__init__()
        self.conv1 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.gate = AIGGate(planes)

    def forward(self, x):
        mask = self.gate(x)
        if mask.item() == 1:
            out = self.bn1(self.conv1(x))
            out.relu_()
            out = self.bn2(self.conv2(out))
            out = self.relu(out + x)
        else:
            out = x
        return out, mask


class ConvNetAIG(nn.Module):
    """ConvNet-AIG: each block's own gate decides inside the block's forward (`out.relu_()`
    in the executed branch), the parent collects the gate activations."""

    N_PATHS = 4
    CONSTRUCTS = ('relu_-in-branch', 'inplace-relu')
    WEIGHT_SEED = 7

    def __init__(self, num_classes=10):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.relu = nn.ReLU(inplace=True)
        self.blocks = nn.ModuleList([AIGBlock(8) for _ in range(2)])
        self.fc = nn.Linear(8, num_classes)

    def forward(self, x):
        gate_activations = []
        x = self.relu(self.bn(self.conv(x)))
        for block in self.blocks:
            x, a = block(x)
            gate_activations.append(a)
        x = F.adaptive_avg_pool2d(x, 1).view(x.size(0), -1)
        return self.fc(x), gate_activations

    @staticmethod
    def example_inputs():
        return (randn(1, 3, 8, 8),)

    @staticmethod
    def path_inputs():
        return tinted([(0, 1.0), (0, 10.0), (5, 10.0), (6, 10.0)])


class SkipListSurgery(nn.Module):
    """Gate bookkeeping with list surgery: `masks.pop()` drops the gate after the last block,
    `masks.insert(0, ...)` records the always-run stem, `masks[:-1]` the gated blocks."""

    N_PATHS = 4
    CONSTRUCTS = ('pop', 'insert(0)', 'slice[:-1]')
    WEIGHT_SEED = 1

    def __init__(self, num_classes=10):
        super().__init__()
        self.stem = conv_bn(3, 8)
        self.blocks = nn.ModuleList([conv_bn(8, 8) for _ in range(2)])
        self.gates = nn.ModuleList([nn.Linear(8, 1) for _ in range(3)])
        self.head = pooled_head(8, num_classes)

    def gate_mask(self, i, x):
        return (torch.sigmoid(self.gates[i](x.mean((2, 3)))) > 0.5).float()

    def forward(self, x):
        x = self.stem(x)
        masks = []
        mask = self.gate_mask(0, x)
        for i, block in enumerate(self.blocks):
            masks.append(mask)
            if mask.item() > 0.5:
                x = x + block(x)
            mask = self.gate_mask(i + 1, x)
        masks.append(mask)
        masks.pop()
        masks.insert(0, torch.ones(1, 1))
        executed = torch.cat(masks, 1)
        return self.head(x), executed, masks[:-1]

    @staticmethod
    def example_inputs():
        return (randn(1, 3, 8, 8),)

    @staticmethod
    def path_inputs():
        return tinted([(0, 1.0), (0, 10.0), (4, 10.0), (6, 1.0)])


class SkipInplaceResidual(nn.Module):
    """Blocks with inplace ReLUs and `out += residual`; gate logits clamped in place
    (`gate.clamp_(-6, 6)`); `continue` past a skipped block, counting skips."""

    N_PATHS = 4
    CONSTRUCTS = ('inplace-relu', 'augassign', 'clamp_')
    WEIGHT_SEED = 2

    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu = nn.ReLU(inplace=True)
        self.layers = nn.ModuleList([BasicBlock(8) for _ in range(2)])
        self.gate_fc = nn.ModuleList([nn.Linear(8, 1) for _ in range(2)])
        self.fc = nn.Linear(8, num_classes)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        skipped = 0
        for i, block in enumerate(self.layers):
            gate = self.gate_fc[i](F.adaptive_avg_pool2d(x, 1).flatten(1))
            gate.clamp_(-6, 6)
            if gate.sigmoid().item() < 0.5:
                skipped += 1
                continue
            x = block(x)
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x), skipped

    @staticmethod
    def example_inputs():
        return (randn(1, 3, 8, 8),)

    @staticmethod
    def path_inputs():
        return tinted([(0, 1.0), (5, 1.0), (6, 10.0), (22, 10.0)])


class SkipAllAny(nn.Module):
    """All gates decided up front from the stem features (a list of Python bools), with
    `any(...)`/`all(...)` shortcuts, `zip` over blocks and decisions, and `sum(gates)`."""

    N_PATHS = 8
    CONSTRUCTS = ('list-comp', 'any', 'all', 'mixed-return')

    def __init__(self, num_classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Linear(8, 8), nn.Tanh())
        self.gates = nn.ModuleList([nn.Linear(8, 1) for _ in range(3)])
        self.blocks = nn.ModuleList([nn.Sequential(nn.Linear(8, 8), nn.ReLU()) for _ in range(3)])
        self.head = nn.Linear(8, num_classes)

    def forward(self, x):
        x = self.stem(x)
        gates = [torch.sigmoid(g(x)).item() > 0.5 for g in self.gates]
        if not any(gates):
            return self.head(x), 0, False
        for block, on in zip(self.blocks, gates):
            if on:
                x = x + block(x)
        return self.head(x), sum(gates), all(gates)

    @staticmethod
    def example_inputs():
        return (randn(1, 8),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (0, 0.3), (1, 3.0), (3, 3.0), (4, 3.0), (9, 3.0), (11, 1.0), (55, 30.0)], shape=(1, 8))


class SkipExtendGroups(nn.Module):
    """Per-group decisions as Python ints, `all_masks.extend(group_masks)`, and the stem's
    entry put in front with `all_masks.insert(0, 1)`."""

    N_PATHS = 8
    CONSTRUCTS = ('extend', 'insert(0)')

    def __init__(self, num_classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Linear(8, 8), nn.Tanh())
        self.groups = nn.ModuleList([nn.ModuleList([nn.Linear(8, 8)]), nn.ModuleList([nn.Linear(8, 8), nn.Linear(8, 8)])])
        self.group_gates = nn.ModuleList([nn.ModuleList([nn.Linear(8, 1)]), nn.ModuleList([nn.Linear(8, 1), nn.Linear(8, 1)])])
        self.fc = nn.Linear(8, num_classes)

    def forward(self, x):
        x = self.stem(x)
        all_masks = []
        for g, group in enumerate(self.groups):
            group_masks = []
            for block, gate in zip(group, self.group_gates[g]):
                m = 1 if torch.sigmoid(gate(x)).item() > 0.5 else 0
                if m:
                    x = torch.tanh(block(x)) + x
                group_masks.append(m)
            all_masks.extend(group_masks)
        all_masks.insert(0, 1)
        return self.fc(x), all_masks

    @staticmethod
    def example_inputs():
        return (randn(1, 8),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (0, 3.0), (0, 30.0), (2, 1.0), (4, 3.0), (5, 3.0), (10, 10.0), (15, 10.0)], shape=(1, 8))


class SkipSelfCounter(nn.Module):
    """Statistics kept on the module: `self.executed = 0` and `self.gate_probs = []` written
    at the top of forward, updated in a helper, read at the end."""

    N_PATHS = 4
    CONSTRUCTS = ('self-attr',)

    def __init__(self, num_classes=10):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(8, 8) for _ in range(2)])
        self.gates = nn.ModuleList([nn.Linear(8, 1) for _ in range(2)])
        self.fc = nn.Linear(8, num_classes)

    def maybe_run(self, i, x):
        p = torch.sigmoid(self.gates[i](x))
        self.gate_probs.append(p)
        if p.item() > 0.5:
            self.executed += 1
            return torch.relu(self.blocks[i](x)) + x
        return x

    def forward(self, x):
        self.executed = 0
        self.gate_probs = []
        for i in range(len(self.blocks)):
            x = self.maybe_run(i, x)
        return self.fc(x), self.executed, torch.cat(self.gate_probs, 1)

    @staticmethod
    def example_inputs():
        return (randn(1, 8),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (1, 1.0), (2, 1.0), (4, 1.0)], shape=(1, 8))


class RLGate(nn.Module):
    """SkipNet's RL gate at inference: pooled features -> a keep probability, the greedy
    action; both kept on the gate (`self.saved_action`, `self.saved_prob`) for the trainer."""

    def __init__(self, channel=8):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.proj = nn.Conv2d(channel, 1, 1)

    def forward(self, x):
        prob = torch.sigmoid(self.proj(self.pool(x))).view(x.size(0), 1)
        action = (prob > 0.5).float()
        self.saved_action = action
        self.saved_prob = prob
        return action.view(x.size(0), 1, 1, 1)


class SkipNetGateInstances(nn.Module):
    """SkipNet / dynamic-routing RL code: the gates are registered (`self.gates`, a
    ModuleList) and also kept in a plain list `self.gate_instances`, filled in `__init__`;
    after the blocks, forward collects what each gate saved in this call
    (`[g.saved_action for g in self.gate_instances]`)."""

    N_PATHS = 5
    CONSTRUCTS = ('gate-list', 'self-attr', 'list-comp')

    def __init__(self, num_classes=10, blocks=3):
        super().__init__()
        self.stem = conv_bn(3, 8)
        self.blocks = nn.ModuleList([BasicBlock(8) for _ in range(blocks)])
        self.gates = nn.ModuleList()
        self.gate_instances = []
        for _ in range(blocks):
            gate = RLGate(8)
            self.gates.append(gate)
            self.gate_instances.append(gate)
        self.fc = pooled_head(8, num_classes)

    def forward(self, x):
        x = self.stem(x)
        for block, gate in zip(self.blocks, self.gates):
            action = gate(x)
            if action.sum() > 0:
                x = block(x)
        actions = torch.cat([g.saved_action for g in self.gate_instances], 1)
        probs = torch.cat([inst.saved_prob for inst in self.gate_instances], 1)
        return self.fc(x), actions, probs

    @staticmethod
    def path_key(inputs, output, trace):
        return gate_pattern(output[1].flatten())

    @staticmethod
    def example_inputs():
        return tinted([(0, 1.0)])[0]

    @staticmethod
    def path_inputs():
        return tinted([(0, 0.2), (0, 2.0), (2, 3.0), (3, 2.0), (6, 3.0), (0, 1.0)])


MODELS = [
    SkipNetFeedforward,
    SkipNetRNNGate,
    BlockDropSingle,
    BlockDropBatchPolicy,
    ConvNetAIG,
    SkipListSurgery,
    SkipInplaceResidual,
    SkipAllAny,
    SkipExtendGroups,
    SkipSelfCounter,
    SkipNetGateInstances,
]
