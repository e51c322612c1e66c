"""Exceptions and nested functions written as published code writes them.

- DeeBERT's early exit (`HighwayException`): raised inside the encoder's layer loop (a
  submodule's forward) when a highway classifier's entropy is below the layer's threshold,
  caught two modules up in the model's forward, which reads `e.message` and `e.exit_layer`;
- `raise ValueError(f"...")` on a runtime path (a tensor's values, a runtime size) and
  `raise NotImplementedError` on a configuration path;
- `try`/`except`/`else`/`finally` whose `try` body cannot raise what is caught, and an
  exception of the model's own used to leave a decoding helper early;
- a nested `def decode(...)` in `generate` (a closure over locals and `self`, called in a
  loop) and a lambda bound to a name.
"""

from __future__ import annotations

import torch
import torch.nn as nn


# ----- DeeBERT (Xin et al. 2020, `modeling_highway_bert.py`) ----------------------------

class HighwayException(Exception):
    def __init__(self, message, exit_layer):
        self.message = message  # Output of the highway
        self.exit_layer = exit_layer  # start from 1!


def entropy(x):
    """Calculate entropy of a pre-softmax logit Tensor"""
    exp_x = torch.exp(x)
    A = torch.sum(exp_x, dim=1)  # sum of exp(x_i)
    B = torch.sum(x * exp_x, dim=1)  # sum of x_i * exp(x_i)
    return torch.log(A) - B / A


class BertHighway(nn.Module):
    def __init__(self, hidden, labels):
        super().__init__()
        self.pooler = nn.Linear(hidden, hidden)
        self.dropout = nn.Dropout(0.1)
        self.classifier = nn.Linear(hidden, labels)
        with torch.no_grad():
            self.classifier.weight.mul_(6.0)  # (confident enough to exit on some inputs)

    def forward(self, encoder_outputs):
        pooled_output = torch.tanh(self.pooler(encoder_outputs[0][:, 0]))
        logits = self.classifier(self.dropout(pooled_output))
        return logits, pooled_output


class DeeBertEncoder(nn.Module):
    def __init__(self, hidden=8, layers=4, labels=3):
        super().__init__()
        self.layer = nn.ModuleList([nn.Sequential(nn.Linear(hidden, hidden), nn.Tanh()) for _ in range(layers)])
        self.highway = nn.ModuleList([BertHighway(hidden, labels) for _ in range(layers)])
        self.early_exit_entropy = [0.3, 0.7, 0.85, -1.0]

    def forward(self, hidden_states):
        all_highway_exits = ()
        for i, layer_module in enumerate(self.layer):
            hidden_states = layer_module(hidden_states)
            current_outputs = (hidden_states,)
            highway_exit = self.highway[i](current_outputs)
            if not self.training:
                highway_logits = highway_exit[0]
                highway_entropy = entropy(highway_logits)
                highway_exit = highway_exit + (highway_entropy,)  # logits, hidden_states(?), entropy
                all_highway_exits = all_highway_exits + (highway_exit,)
                if highway_entropy < self.early_exit_entropy[i]:
                    new_output = (highway_logits,) + current_outputs[1:] + (all_highway_exits,)
                    raise HighwayException(new_output, i + 1)
            else:
                all_highway_exits = all_highway_exits + (highway_exit,)
        outputs = (hidden_states,)
        outputs = outputs + (all_highway_exits,)
        return outputs  # last-layer hidden state, all highway exits


class DeeBertModel(nn.Module):
    def __init__(self, hidden=8, labels=3):
        super().__init__()
        self.embeddings = nn.Linear(hidden, hidden)
        self.encoder = DeeBertEncoder(hidden, labels=labels)

    def forward(self, input_embeds):
        embedding_output = self.embeddings(input_embeds)
        encoder_outputs = self.encoder(embedding_output)
        sequence_output = encoder_outputs[0]
        outputs = (sequence_output,) + encoder_outputs[1:]
        return outputs


class DeeBertForSequenceClassification(nn.Module):
    def __init__(self, hidden=8, labels=3):
        super().__init__()
        self.num_layers = 4
        self.bert = DeeBertModel(hidden, labels)
        self.classifier = nn.Linear(hidden, labels)

    def forward(self, input_embeds):
        exit_layer = self.num_layers
        try:
            outputs = self.bert(input_embeds)
            pooled_output = outputs[0][:, 0]
            logits = self.classifier(pooled_output)
            outputs = (logits,) + outputs[2:]  # add hidden states and attention if they are here
        except HighwayException as e:
            outputs = e.message
            exit_layer = e.exit_layer
            logits = outputs[0]
        return logits, exit_layer


def deebert_inputs() -> list[tuple]:
    """Inputs that leave after layers 1, 2, 3 and at the end (with the weights of seed 0)."""
    torch.manual_seed(1)
    return [(torch.randn(1, 5, 8) * scale,) for scale in (0.05, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)]


# ----- `raise` on a configuration path and on a runtime path ------------------------------

class CheckedHead(nn.Module):
    """`raise ValueError(f"...")` when an argument is not what the head takes (a Python int
    argument, a tensor's values); `raise NotImplementedError` for a configuration it lacks."""

    def __init__(self, pooling="mean"):
        super().__init__()
        self.pooling = pooling
        self.proj = nn.Linear(4, 3)

    def pool(self, x):
        if self.pooling == "mean":
            return x.mean(1)
        elif self.pooling == "max":
            return x.max(1).values
        else:
            raise NotImplementedError(f"pooling {self.pooling} is not implemented")

    def forward(self, x, top_k: int):
        if top_k > 3:
            raise ValueError(f"top_k={top_k} is larger than the 3 classes")
        if torch.isnan(x).any():
            raise ValueError("NaN in the input")
        return self.proj(self.pool(x)).topk(3, dim=-1).values[:, :top_k].sum(-1)


def checked_inputs() -> list[tuple]:
    torch.manual_seed(2)
    return [(torch.randn(2, 5, 4), k) for k in (1, 2, 3)]


def checked_failing_inputs() -> list[tuple]:
    nan = torch.randn(2, 5, 4)
    nan[1, 2, 0] = float("nan")
    return [(torch.randn(2, 5, 4), 7), (nan, 2)]


class UnknownPooling(CheckedHead):
    def __init__(self):
        super().__init__(pooling="attention")


# ----- try / except / else / finally ----------------------------------------------------

class StopDecoding(Exception):
    """Raised by the decoder's step when the end token comes."""


class TryElseFinally(nn.Module):
    """A `try` whose body cannot raise what is caught (a config lookup guarded by
    `except StopDecoding`), with `else:` and `finally:`; and a step helper that raises
    `StopDecoding` (no attributes: a bare class), caught by the loop's caller."""

    def __init__(self):
        super().__init__()
        self.cell = nn.Linear(4, 4)
        self.out = nn.Linear(4, 5)
        self.eos = 0

    def step(self, h):
        h = torch.tanh(self.cell(h))
        token = self.out(h).argmax(-1)
        if token.item() == self.eos:
            raise StopDecoding()
        return h

    def forward(self, h):
        steps = 0
        trace = h.sum()
        try:
            h = h * 2
        except StopDecoding:
            h = h * 0  # never: nothing in the body raises StopDecoding
        else:
            h = h + 1
        finally:
            trace = trace + h.sum()
        try:
            for i in range(3):
                h = self.step(h)
                steps = i + 1
        except StopDecoding:
            h = -h
        finally:
            trace = trace - 1
        return h, steps, trace


def try_inputs() -> list[tuple]:
    torch.manual_seed(3)
    return [(torch.randn(1, 4) * s,) for s in (0.1, 0.5, 1.0, 2.0, 3.0, 5.0, 8.0, 13.0, 20.0, 40.0)]


class NeverRaises(nn.Module):
    def forward(self, h):
        try:
            h = h * 2
        except StopDecoding:
            h = h * 0
        else:
            h = h + 1
        finally:
            h = h - 0.5
        return h


class NeverRaisesWritten(nn.Module):
    """NeverRaises as the statements that run."""

    def forward(self, h):
        h = h * 2
        h = h + 1
        h = h - 0.5
        return h


class DivergenceCheck(nn.Module):
    """`raise RuntimeError(f"...")` inside a runtime loop (a Python int bound)."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x, n: int):
        i = 0
        while i < n:
            x = torch.tanh(self.lin(x))
            if x.sum() > 0.5:
                raise RuntimeError(f"diverged at step {i}")
            i += 1
        return x


class ReturnsOrRaises(nn.Module):
    """Early returns on two paths, a `raise` on the third: the result is undefined only
    where the host raises."""

    def forward(self, x):
        if x.sum() > 0:
            return x * 2
        elif x.sum() < -1:
            return x - 1
        raise ValueError("the sum is between -1 and 0")


class Interrupted(Exception):
    pass


class NestedTry(nn.Module):
    """A `raise` the inner `try` does not catch goes to the outer one, skipping what follows
    in both."""

    def forward(self, x):
        out = x
        try:
            try:
                if x.sum() > 0:
                    raise Interrupted()
                out = out + 1
            except StopDecoding:
                out = out * 0
            out = out * 3
        except Interrupted:
            out = out - 5
        return out


# ----- nested functions -------------------------------------------------------------------

class NestedDecode(nn.Module):
    """`generate` with a nested `decode` (closure over `memory` and `self`), called in a
    loop whose length depends on the tokens, and a lambda bound to a name."""

    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(4, 4)
        self.embed = nn.Embedding(6, 4)
        self.head = nn.Linear(4, 6)
        self.eos = 5

    def forward(self, x):
        memory = torch.tanh(self.encoder(x))
        scale = lambda t: t * 0.5  # noqa: E731

        def decode(token, state):
            state = torch.tanh(self.embed(token) + memory + state)
            return self.head(state).argmax(-1), state

        token = torch.ones(1, dtype=torch.long)
        state = torch.zeros(1, 4)
        tokens = []
        for _ in range(4):
            token, state = decode(token, state)
            tokens.append(token)
            if token.item() == self.eos:
                break
        state = scale(state)
        return torch.cat(tokens), state


def nested_inputs() -> list[tuple]:
    torch.manual_seed(4)
    return [(torch.randn(1, 4) * s,) for s in (0.1, 1.0, 3.0, 10.0, 30.0)]


# ----- refused -------------------------------------------------------------------------

class CatchesIndexError(nn.Module):
    def forward(self, x, k: int):
        try:
            y = x[k]
        except IndexError:
            y = x[0]
        return y


class UncaughtOwnException(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            raise StopDecoding()
        return x


class ReturnInsideFinally(nn.Module):
    def forward(self, x):
        try:
            return x + 1
        finally:
            x = x * 2


class AlwaysRaises(nn.Module):
    def forward(self, x):
        raise ValueError("this model is not for inference")
