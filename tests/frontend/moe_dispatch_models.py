"""The sparsely gated mixture of experts as published (davidmrau/mixture-of-experts, the
PyTorch port of Shazeer et al., 2017), at inference: `SparseDispatcher` is a plain Python
helper object built in forward, whose `__init__` sorts `torch.nonzero(gates)`, whose
`dispatch` splits the routed rows by counts from `.tolist()`, and whose `combine` puts the
experts' outputs back with `index_add`. Also `topk(k)` with k computed from the data, and a
shrinking beam search whose step (with its `topk(k)`) is a module captured whole."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions.normal import Normal


class SparseDispatcher(object):
    """Helper for implementing a mixture of experts (as published).

    The purpose of this class is to create input minibatches for the experts and to
    combine the results of the experts to form a unified output tensor."""

    def __init__(self, num_experts, gates):
        """Create a SparseDispatcher."""

        self._gates = gates
        self._num_experts = num_experts
        # sort experts
        sorted_experts, index_sorted_experts = torch.nonzero(gates).sort(0)
        # drop indices
        _, self._expert_index = sorted_experts.split(1, dim=1)
        # get according batch index for each expert
        self._batch_index = torch.nonzero(gates)[index_sorted_experts[:, 1], 0]
        # calculate num samples that each expert gets
        self._part_sizes = (gates > 0).sum(0).tolist()
        # expand gates to match with self._batch_index
        gates_exp = gates[self._batch_index.flatten()]
        self._nonzero_gates = torch.gather(gates_exp, 1, self._expert_index)

    def dispatch(self, inp):
        """Create one input Tensor for each expert."""

        # assigns samples to experts whose gate is nonzero

        # expand according to batch index so we can just split by _part_sizes
        inp_exp = inp[self._batch_index].squeeze(1)
        return torch.split(inp_exp, self._part_sizes, dim=0)

    def combine(self, expert_out, multiply_by_gates=True):
        """Sum together the expert output, weighted by the gates."""
        # apply exp to expert outputs, so we are not longer in log space
        stitched = torch.cat(expert_out, 0)

        if multiply_by_gates:
            stitched = stitched.mul(self._nonzero_gates)
        zeros = torch.zeros(self._gates.size(0), expert_out[-1].size(1), requires_grad=True, device=stitched.device)
        # combine samples that have been processed by the same k experts
        combined = zeros.index_add(0, self._batch_index, stitched.float())
        return combined

    def expert_to_gates(self):
        """Gate values corresponding to the examples in the per-expert `Tensor`s."""
        # split nonzero gates for each expert
        return torch.split(self._nonzero_gates, self._part_sizes, dim=0)


class MLP(nn.Module):
    def __init__(self, input_size, output_size, hidden_size):
        super(MLP, self).__init__()
        self.fc1 = nn.Linear(input_size, hidden_size)
        self.fc2 = nn.Linear(hidden_size, output_size)
        self.relu = nn.ReLU()
        self.soft = nn.Softmax(1)

    def forward(self, x):
        out = self.fc1(x)
        out = self.relu(out)
        out = self.fc2(out)
        out = self.soft(out)
        return out


class MoE(nn.Module):
    """Call a Sparsely gated mixture of experts layer with 1-layer Feed-Forward networks as
    experts (as published; the gate weights drawn at random rather than zeros, so that
    routing depends on the input)."""

    def __init__(self, input_size=6, output_size=5, num_experts=4, hidden_size=8, noisy_gating=True, k=2):
        super(MoE, self).__init__()
        self.noisy_gating = noisy_gating
        self.num_experts = num_experts
        self.output_size = output_size
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.k = k
        # instantiate experts
        self.experts = nn.ModuleList([MLP(self.input_size, self.output_size, self.hidden_size) for i in range(self.num_experts)])
        self.w_gate = nn.Parameter(torch.randn(input_size, num_experts), requires_grad=True)
        self.w_noise = nn.Parameter(torch.zeros(input_size, num_experts), requires_grad=True)

        self.softplus = nn.Softplus()
        self.softmax = nn.Softmax(1)
        self.register_buffer("mean", torch.tensor([0.0]))
        self.register_buffer("std", torch.tensor([1.0]))
        assert(self.k <= self.num_experts)

    def cv_squared(self, x):
        """The squared coefficient of variation of a sample."""
        eps = 1e-10
        # if only num_experts = 1

        if x.shape[0] == 1:
            return torch.tensor([0], device=x.device, dtype=x.dtype)
        return x.float().var() / (x.float().mean()**2 + eps)

    def _gates_to_load(self, gates):
        """Compute the true load per expert, given the gates."""
        return (gates > 0).sum(0)

    def _prob_in_top_k(self, clean_values, noisy_values, noise_stddev, noisy_top_values):
        """Helper function to NoisyTopKGating (training only)."""
        batch = clean_values.size(0)
        m = noisy_top_values.size(1)
        top_values_flat = noisy_top_values.flatten()

        threshold_positions_if_in = torch.arange(batch, device=clean_values.device) * m + self.k
        threshold_if_in = torch.unsqueeze(torch.gather(top_values_flat, 0, threshold_positions_if_in), 1)
        is_in = torch.gt(noisy_values, threshold_if_in)
        threshold_positions_if_out = threshold_positions_if_in - 1
        threshold_if_out = torch.unsqueeze(torch.gather(top_values_flat, 0, threshold_positions_if_out), 1)
        # is each value currently in the top k.
        normal = Normal(self.mean, self.std)
        prob_if_in = normal.cdf((clean_values - threshold_if_in) / noise_stddev)
        prob_if_out = normal.cdf((clean_values - threshold_if_out) / noise_stddev)
        prob = torch.where(is_in, prob_if_in, prob_if_out)
        return prob

    def noisy_top_k_gating(self, x, train, noise_epsilon=1e-2):
        """Noisy top-k gating."""
        clean_logits = x @ self.w_gate
        if self.noisy_gating and train:
            raw_noise_stddev = x @ self.w_noise
            noise_stddev = ((self.softplus(raw_noise_stddev) + noise_epsilon))
            noisy_logits = clean_logits + (torch.randn_like(clean_logits) * noise_stddev)
            logits = noisy_logits
        else:
            logits = clean_logits

        # calculate topk + 1 that will be needed for the noisy gates
        top_logits, top_indices = logits.topk(min(self.k + 1, self.num_experts), dim=1)
        top_k_logits = top_logits[:, :self.k]
        top_k_indices = top_indices[:, :self.k]
        top_k_gates = self.softmax(top_k_logits)

        zeros = torch.zeros_like(logits, requires_grad=True)
        gates = zeros.scatter(1, top_k_indices, top_k_gates)

        if self.noisy_gating and self.k < self.num_experts and train:
            load = (self._prob_in_top_k(clean_logits, noisy_logits, noise_stddev, top_logits)).sum(0)
        else:
            load = self._gates_to_load(gates)
        return gates, load

    def forward(self, x, loss_coef=1e-2):
        """Args: x: tensor shape [batch_size, input_size]; loss_coef: a scalar multiplier
        on the load-balancing losses. Returns y: [batch_size, output_size], and the
        load-balancing loss."""
        gates, load = self.noisy_top_k_gating(x, self.training)
        # calculate importance loss
        importance = gates.sum(0)
        #
        loss = self.cv_squared(importance) + self.cv_squared(load)
        loss *= loss_coef

        dispatcher = SparseDispatcher(self.num_experts, gates)
        expert_inputs = dispatcher.dispatch(x)
        gates = dispatcher.expert_to_gates()
        expert_outputs = [self.experts[i](expert_inputs[i]) for i in range(self.num_experts)]
        y = dispatcher.combine(expert_outputs)
        return y, loss


class MoETop1(MoE):
    """The same layer routing each row to one expert (`k=1`)."""

    def __init__(self):
        super().__init__(k=1)


class MoEExpertBatches(MoE):
    """The layer returning what each expert received: the per-expert batches of
    `dispatch` and gates of `expert_to_gates` (each of a runtime length, 0 included)."""

    def forward(self, x, loss_coef=1e-2):
        gates, load = self.noisy_top_k_gating(x, self.training)
        dispatcher = SparseDispatcher(self.num_experts, gates)
        expert_inputs = dispatcher.dispatch(x)
        gates = dispatcher.expert_to_gates()
        expert_outputs = [self.experts[i](expert_inputs[i]) for i in range(self.num_experts)]
        y = dispatcher.combine(expert_outputs, multiply_by_gates=False)
        return y, expert_inputs, gates, load


class TwoDispatchers(MoE):
    """Two dispatchers at once: the first is used after the second is built (refused: DyCL
    keeps the attributes of one object of a class at a time)."""

    def forward(self, x):
        gates, load = self.noisy_top_k_gating(x, self.training)
        first = SparseDispatcher(self.num_experts, gates)
        second = SparseDispatcher(self.num_experts, gates * 2)
        expert_inputs = first.dispatch(x)  # REFUSED
        return second.combine(list(expert_inputs))


class AdaptiveTopK(nn.Module):
    """A router that keeps as many experts as score above a threshold (k from the data: 0
    to all of them), their scores, as `topk(k)` values, and their sum."""

    def __init__(self, size=6, experts=5, threshold=0.0):
        super().__init__()
        self.router = nn.Linear(size, experts)
        self.threshold = threshold

    def forward(self, x):
        scores = self.router(x)
        k = int((scores[0] > self.threshold).sum())
        top_scores, _ = scores[0].topk(k)
        return top_scores, top_scores.sum(), k


class AdaptiveTopKIndices(AdaptiveTopK):
    """`topk(k)` with k from the data, its indices read: refused (which of equal values
    topk returns first is its own, which torch leaves unspecified)."""

    def forward(self, x):
        scores = self.router(x)
        k = int((scores[0] > self.threshold).sum())
        top_scores, top_experts = scores[0].topk(k)  # REFUSED
        return top_scores, top_experts


class BeamStep(nn.Module):
    """One step of a caption decoder's beam search, a module without control flow (DyCL
    captures its forward whole): scores of the live beams, and their `topk(k)` over the
    flattened scores, with `k` the number of beams left."""

    def __init__(self, vocab_size=6, hidden=8):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, hidden)
        self.decode_step = nn.GRUCell(hidden, hidden)
        self.fc = nn.Linear(hidden, vocab_size)

    def forward(self, k_prev_words, h, top_k_scores, k):
        embeddings = self.embedding(k_prev_words).squeeze(1)
        h = self.decode_step(embeddings, h)
        scores = F.log_softmax(self.fc(h), dim=1)
        scores = top_k_scores.expand_as(scores) + scores
        top_k_scores, top_k_words = scores.view(-1).topk(k, 0, True, True)  # REFUSED
        return h, top_k_scores, top_k_words


class ShrinkingBeamSearch(nn.Module):
    """The published beam search (a-PyTorch-Tutorial-to-Image-Captioning's `caption.py`):
    `topk(k, 0, True, True)` with `k` the beams left, which shrinks as beams finish."""

    def __init__(self, vocab_size=6, hidden=8, beam_size=3, max_len=4, start=1, end=0):
        super().__init__()
        self.step = BeamStep(vocab_size, hidden)
        self.vocab_size, self.beam_size, self.max_len, self.start, self.end = vocab_size, beam_size, max_len, start, end

    def forward(self, encoder_out):
        k = self.beam_size
        h = encoder_out.expand(k, encoder_out.size(1)).contiguous()
        k_prev_words = torch.LongTensor([[self.start]] * k)
        seqs = k_prev_words
        top_k_scores = torch.zeros(k, 1)
        for step in range(self.max_len):
            h, top_k_scores, top_k_words = self.step(k_prev_words, h, top_k_scores, k)
            prev_word_inds = top_k_words // self.vocab_size
            next_word_inds = top_k_words % self.vocab_size
            seqs = torch.cat([seqs[prev_word_inds], next_word_inds.unsqueeze(1)], dim=1)
            incomplete_inds = (next_word_inds != self.end).nonzero().squeeze(1)
            k -= len(next_word_inds) - len(incomplete_inds)
            seqs = seqs[incomplete_inds]
            h = h[prev_word_inds[incomplete_inds]]
            top_k_scores = top_k_scores[incomplete_inds].unsqueeze(1)
            k_prev_words = next_word_inds[incomplete_inds].unsqueeze(1)
            if k == 0:
                break
        return seqs, k


class RunningStats(object):
    """A plain helper object: attributes set in `__init__`, changed by a method with a
    runtime condition (`if y.max() > self.peak:`), an int counter, a class attribute."""

    SCALE = 0.5

    def __init__(self, x):
        self.total = x.sum(0)
        self.count = x.size(0)
        self.peak = x.max()

    def add(self, y):
        self.total = self.total + y.sum(0)
        self.count += y.size(0)
        if y.max() > self.peak:
            self.peak = y.max()

    def mean(self):
        return self.total / self.count * self.SCALE


def summarize(stats, y):
    """A plain function given the object: it changes it and reads it."""
    stats.add(y * 2)
    return stats.mean()


class StatsObject(nn.Module):
    """The object built in forward, its methods called as statements and inside an
    expression, passed to a function, its attributes read in forward."""

    def __init__(self, size=4):
        super().__init__()
        self.fc = nn.Linear(size, size)

    def forward(self, x):
        stats = RunningStats(self.fc(x))
        stats.add(torch.tanh(x))
        m = summarize(stats, x)
        return m + stats.mean(), stats.peak, stats.count


class StatsSetOutside(StatsObject):
    def forward(self, x):
        stats = RunningStats(x)
        stats.extra = x * 2  # REFUSED
        return stats.mean()


class StatsUnknownAttribute(StatsObject):
    def forward(self, x):
        stats = RunningStats(x)
        return stats.mean() + stats.variance  # REFUSED


class StatsInADict(StatsObject):
    def forward(self, x):
        held = {}
        held["stats"] = RunningStats(x)  # REFUSED
        return held["stats"].mean()



class GatheredRowsSqueezed(nn.Module):
    """`dispatch`'s `inp[self._batch_index].squeeze(1)`: a squeeze of a dim of size 6 (no
    dim dropped) of rows of a runtime count."""

    def forward(self, x):
        batch_index = torch.nonzero(x[:, 0] > 0)[:, 0]
        return x[batch_index].squeeze(1) * 2
