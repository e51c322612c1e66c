"""Image captioning with soft attention (Show, Attend and Tell; Xu et al., ICML 2015).

An encoder (ResNeXt or GoogLeNet style) turns a 64×64 image into an 8×8 grid of features; an
LSTM decoder attends over the grid and greedily emits one word per step, stopping when it emits
the end token or after 10 words. ``forward`` returns the word ids, 1×length (int64), the end
token included when emitted. An input's path is ``(length, stopped_at_end_token)``.
"""

from __future__ import annotations

import functools
from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn

from dycl.zoo.calibration import (BATCHNORM_SEED, DECISION_MARGIN, CalibrationError,
                                  calibrate_batchnorm, candidate_images, example_image, seeded)
from dycl.zoo.caption_encoders import FEATURE_CHANNELS, googlenet_encoder, resnext_encoder
from dycl.zoo.entry import Inputs, ZooEntry, memoized_build, memoized_inputs
from dycl.zoo.layers import init_weights

VOCABULARY = 2000
EMBED_DIM = 256
ATTENTION_DIM = 256
HIDDEN_DIM = 256
MAX_LENGTH = 10
START_TOKEN = 1
END_TOKEN = 2
IMAGE_SIZE = 64
CANDIDATES = 48


class AttentionDecoder(nn.Module):
    def __init__(self, encoder_dim: int = FEATURE_CHANNELS):
        super().__init__()
        self.embedding = nn.Embedding(VOCABULARY, EMBED_DIM)
        self.encoder_att = nn.Linear(encoder_dim, ATTENTION_DIM)
        self.decoder_att = nn.Linear(HIDDEN_DIM, ATTENTION_DIM)
        self.full_att = nn.Linear(ATTENTION_DIM, 1)
        self.init_h = nn.Linear(encoder_dim, HIDDEN_DIM)
        self.init_c = nn.Linear(encoder_dim, HIDDEN_DIM)
        self.f_beta = nn.Linear(HIDDEN_DIM, encoder_dim)
        self.decode_step = nn.LSTMCell(EMBED_DIM + encoder_dim, HIDDEN_DIM)
        self.fc = nn.Linear(HIDDEN_DIM, VOCABULARY)

    def initial_state(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mean = features.mean(dim=1)
        return self.init_h(mean), self.init_c(mean)

    def step(self, features: torch.Tensor, word: torch.Tensor,
             state: tuple[torch.Tensor, torch.Tensor]):
        """One decoding step: attend, gate the context, advance the LSTM, score the vocabulary."""
        h, c = state
        scores = self.full_att(F.relu(self.encoder_att(features) + self.decoder_att(h)[:, None]))
        alpha = F.softmax(scores.squeeze(2), dim=1)
        context = (features * alpha[:, :, None]).sum(dim=1)
        gate = torch.sigmoid(self.f_beta(h))
        h, c = self.decode_step(torch.cat([self.embedding(word), gate * context], dim=1), (h, c))
        return self.fc(h), (h, c)


class CaptionModel(nn.Module):
    def __init__(self, encoder: nn.Module):
        super().__init__()
        self.encoder = encoder
        self.decoder = AttentionDecoder()
        self.max_length = MAX_LENGTH
        self.start_token = START_TOKEN
        self.end_token = END_TOKEN

    def encode(self, images: torch.Tensor) -> torch.Tensor:
        """Encoder features as a sequence of pixels: batch × 64 × 512."""
        return self.encoder(images).flatten(2).transpose(1, 2)

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        features = self.encode(image)
        state = self.decoder.initial_state(features)
        word = torch.tensor([self.start_token])
        words = []
        for _ in range(self.max_length):
            scores, state = self.decoder.step(features, word, state)
            word = scores.argmax(dim=1)
            words.append(word)
            if word.item() == self.end_token:
                break
        return torch.stack(words, dim=1)

    def scores_without_end(self, images: torch.Tensor) -> torch.Tensor:
        """Scores of all ``max_length`` steps for a batch, never choosing the end token.

        Until an input stops, its words do not depend on whether the end token could win, so
        this gives every step ``forward`` takes (batch × steps × vocabulary) in one batched run.
        """
        features = self.encode(images)
        state = self.decoder.initial_state(features)
        word = torch.full((len(images),), self.start_token)
        all_scores = []
        for _ in range(self.max_length):
            scores, state = self.decoder.step(features, word, state)
            all_scores.append(scores)
            word = scores.index_fill(1, torch.tensor([self.end_token]), -torch.inf).argmax(dim=1)
        return torch.stack(all_scores, dim=1)


# --- paths -------------------------------------------------------------------------------------

def _gaps(scores: torch.Tensor, end_token: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Per input and step (scores: batch × steps × vocabulary): the end token's score minus the
    best other word's (>= 0 stops), and the best other word's lead over the runner-up."""
    others = scores.index_fill(2, torch.tensor([end_token]), -torch.inf)
    top2 = others.topk(2, dim=2).values
    return scores[:, :, end_token] - top2[..., 0], top2[..., 0] - top2[..., 1]


def caption_paths(scores: torch.Tensor, end_token: int = END_TOKEN):
    """Paths ``forward`` takes, from ``scores_without_end`` (batch × steps × vocabulary).

    Returns ``(lengths, stopped, margins)``, one entry per input. The margin is the smallest gap
    a decision along the path rests on (end token against the best other word, best word
    against the runner-up): how far the input is from taking another path.
    """
    return _paths_from_gaps(*_gaps(scores, end_token))


def _paths_from_gaps(end_gap: torch.Tensor, word_gap: torch.Tensor):
    # Works on any leading dimensions: (..., batch, steps).
    steps = end_gap.shape[-1]
    stops = end_gap >= 0
    stopped = stops.any(dim=-1)
    lengths = torch.where(stopped, stops.int().argmax(dim=-1) + 1, steps)
    on_path = torch.arange(steps) < lengths[..., None]
    closeness = torch.minimum(end_gap.abs(), word_gap).masked_fill(~on_path, torch.inf)
    return lengths, stopped, closeness.amin(dim=-1)


def path_of(model: CaptionModel, inputs: Inputs) -> tuple[int, bool]:
    with torch.no_grad():
        lengths, stopped, _ = caption_paths(model.scores_without_end(*inputs), model.end_token)
    return int(lengths[0]), bool(stopped[0])


def branches_of(path: tuple[int, bool]) -> frozenset[str]:
    """The loop exit a path takes: a break within a bucket of lengths, or no break at all."""
    length, stopped = path
    if not stopped:
        return frozenset({"runs to the maximum length"})
    if length == MAX_LENGTH:
        return frozenset({"stops at the last step"})
    low = (length - 1) // 3 * 3 + 1
    return frozenset({f"stops after {low}-{low + 2} words"})


def all_branches(model: CaptionModel) -> frozenset[str]:
    """Breaks early (1-3 words), midway (4-6, 7-9), at the last step, and never."""
    return frozenset().union(*[branches_of(path) for path in
                               [(1, True), (4, True), (7, True), (MAX_LENGTH, True),
                                (MAX_LENGTH, False)]])


# --- calibration -------------------------------------------------------------------------------

@torch.no_grad()
def calibrate_decoder(model: CaptionModel, images: torch.Tensor) -> None:
    """Set the output layer's gain and the end token's output row on ``images``.

    The gain (a temperature: it never changes which word wins) spreads the scores to a standard
    deviation of 5, so greedy choices are clear. The end token's score is then rescaled and
    shifted (its weight row times a factor, its bias plus an offset) to the setting that gives
    the most distinct caption lengths whose decisions are all clear, then the most balanced.
    Until an input stops, the end token's row does not change its words, so every setting is
    evaluated from one batched decoding run.
    """
    fc = model.decoder.fc
    scores = model.scores_without_end(images)
    gain = 5.0 / scores.std()
    fc.weight *= gain
    fc.bias *= gain
    scores = scores * gain
    end_gap, word_gap = _gaps(scores, model.end_token)
    end_score = scores[:, :, model.end_token]
    best_key, best_setting = None, (1.0, 0.0)
    for factor in (1.0, 2.0, 4.0, 8.0):
        gap = end_gap + (factor - 1.0) * end_score
        ordered = torch.sort(gap.flatten()).values
        shifts = -(ordered[:-1] + ordered[1:]) / 2
        lengths, stopped, margins = _paths_from_gaps(gap + shifts[:, None, None], word_gap)
        path_ids = torch.where(margins >= DECISION_MARGIN, lengths * 2 + stopped.int(), 0)
        counts = F.one_hot(path_ids, 2 * model.max_length + 2)[:, :, 1:].sum(dim=1)
        distinct = (counts > 0).sum(dim=1)
        fewest = counts.masked_fill(counts == 0, len(images)).amin(dim=1)
        best = int(torch.argmax(distinct * (len(images) + 1) + fewest))
        key = (int(distinct[best]), int(fewest[best]))
        if best_key is None or key > best_key:
            best_key, best_setting = key, (factor, float(shifts[best]))
    factor, shift = best_setting
    fc.weight[model.end_token] *= factor
    fc.bias[model.end_token] = fc.bias[model.end_token] * factor + shift


def _build(make_encoder: Callable[[], nn.Module], seed: int) -> CaptionModel:
    with seeded(seed):
        encoder = make_encoder()
        init_weights(encoder)
        model = CaptionModel(encoder)
    calibrate_batchnorm(model, model.encode, candidate_images(16, IMAGE_SIZE, BATCHNORM_SEED))
    calibrate_decoder(model, candidate_images(CANDIDATES, IMAGE_SIZE))
    return model.eval()


def _select_path_inputs(model: CaptionModel) -> list[Inputs]:
    """One input per path (length, stopped) among the candidates, shortest first."""
    images = candidate_images(CANDIDATES, IMAGE_SIZE)
    with torch.no_grad():
        lengths, stopped, margins = caption_paths(model.scores_without_end(images), model.end_token)
    chosen: dict[tuple[int, bool], int] = {}
    for i in range(len(images)):
        if margins[i] >= DECISION_MARGIN:
            chosen.setdefault((int(lengths[i]), bool(stopped[i])), i)
    missing = all_branches(model) - frozenset().union(*map(branches_of, chosen))
    if missing:
        raise CalibrationError(f"caption candidates miss {sorted(missing)}")
    return [(images[chosen[p]:chosen[p] + 1].clone(),) for p in sorted(chosen)]


def _entry(name: str, make_encoder: Callable[[], nn.Module], summary: str) -> ZooEntry:
    build = memoized_build(functools.partial(_build, make_encoder))
    path_inputs = memoized_inputs(lambda: _select_path_inputs(build(0)))
    example_inputs = functools.partial(example_image, IMAGE_SIZE)
    return ZooEntry(name=name, family="caption", summary=summary, build=build,
                    example_inputs=example_inputs, path_inputs=path_inputs, path_of=path_of,
                    branches_of=branches_of, all_branches=all_branches)


ENTRIES = [
    _entry("caption_resnext", resnext_encoder,
           "ResNeXt-20 (8×4d) encoder + soft-attention LSTM decoder"),
    _entry("caption_googlenet", googlenet_encoder,
           "GoogLeNet (to inception 4a) encoder + the same decoder"),
]
