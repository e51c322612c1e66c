"""Models whose tensor sizes depend on the data, written as published code writes them:
`idx = mask.nonzero().squeeze(1)`, `x[mask]`, `masked_select`, stores at such indices,
batch-level adaptive computation time and a beam search that drops finished beams."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.autograd import Variable


class TokenPruning(nn.Module):
    """Keeps the tokens whose score passes a threshold (token pruning, one sequence), with a
    `.byte()` mask as older code writes it."""

    def __init__(self, dim=6):
        super().__init__()
        self.score = nn.Linear(dim, 1)
        self.mlp = nn.Linear(dim, dim)
        self.threshold = 0.5

    def keep_mask(self, tokens):
        return torch.sigmoid(self.score(tokens)).squeeze(-1) > self.threshold

    def forward(self, tokens):
        keep = self.keep_mask(tokens).byte()
        kept = tokens[keep]
        out = self.mlp(kept).relu()
        return out.sum(0), kept.size(0), tokens[keep.bool()].sum()


class MaskedSelect(nn.Module):
    """`masked_select` in both spellings, a mask that broadcasts, `x[x > 0].sum()`, and the
    columns `torch.where(mask)` gives, gathered by `x[:, columns]`."""

    def forward(self, x, bias):
        positive = torch.masked_select(x, x > 0)
        rows = x.masked_select(bias > 0)  # (a [1, 5] mask over [4, 5] rows)
        columns = torch.where(bias[0] > 0)[0]
        picked = x[:, columns].sum(1)
        scale = float(bias.abs().max())
        scaled = x[x < 0] * scale  # (a statement the host runs, for the float)
        return positive.sum(), rows * 2, x[x > 0].sum(), picked, scaled.sum()


class NonzeroRows(nn.Module):
    """Live rows by `nonzero`, gathered by indexing and by `index_select`, updated by a
    layer and stored back (`out[idx] = ...`, `accum[idx] += ...`, `z[mask] = ...`)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def live(self, x):
        return x.sum(1) > 0

    def forward(self, x):
        mask = self.live(x)
        idx = mask.nonzero().squeeze(1)
        rows = x.index_select(0, idx)
        out = x.data.new(x.size()).zero_()
        out[idx] = self.fc(rows)
        accum = torch.zeros_like(x).fill_(0.5)
        accum[idx] += torch.tanh(x[idx])
        z = x.clone()
        z[mask] = x[mask] * 2
        counts = [int(c) for c in mask.long()]
        return out, accum, z, len(idx), sum(counts)


class BatchEarlyExit(nn.Module):
    """Per-sample early exit inside a batch: after each block the samples whose exit is
    confident leave the batch with that exit's prediction; the rest go on."""

    def __init__(self, dim=6, classes=4, blocks=3):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(dim, dim) for _ in range(blocks)])
        self.exits = nn.ModuleList([nn.Linear(dim, classes) for _ in range(blocks)])
        self.threshold = 0.5
        self.classes = classes

    def forward(self, x):
        out = Variable(torch.zeros(x.size(0), self.classes))
        remaining = torch.arange(x.size(0))
        h = x
        for i, (block, exit_head) in enumerate(zip(self.blocks, self.exits)):
            h = torch.relu(block(h))
            logits = exit_head(h)
            confidence = F.softmax(logits, dim=1).max(1)[0]
            done = confidence > self.threshold
            if i == len(self.blocks) - 1:
                done = torch.ones_like(done)
            out[remaining[done]] = logits[done]
            h = h[~done]
            remaining = remaining[~done]
        return out, remaining.size(0)


class AdaptiveComputationTime(nn.Module):
    """Graves' adaptive computation time over a batch: each sample ponders until its
    halting probabilities add up to 1 - eps; the step runs on the live rows only."""

    def __init__(self, input_size=4, hidden_size=6, max_steps=4, eps=0.01):
        super().__init__()
        self.rnn_cell = nn.GRUCell(input_size, hidden_size)
        self.halt = nn.Linear(input_size + hidden_size, 1)
        self.max_steps, self.eps = max_steps, eps
        with torch.no_grad():  # (the halting unit reads the input's first feature: tests pick when samples halt)
            self.halt.weight.zero_()
            self.halt.weight[0, 0] = 4.0
            self.halt.bias.fill_(0.0)

    def halting_probability(self, x, h):
        return torch.sigmoid(self.halt(torch.cat([x, h], 1))).squeeze(1)

    def forward(self, x, hx):
        batch_size = x.size(0)
        hx = hx.clone()
        halting = Variable(x.data.new(batch_size).zero_())
        remainders = x.new_zeros(batch_size)
        n_updates = x.new_zeros(batch_size)
        accum = torch.zeros_like(hx)
        selector = halting < 1 - self.eps
        for step in range(self.max_steps):
            idx = selector.nonzero().squeeze(1)
            hx[idx] = self.rnn_cell(x[idx], hx[idx])
            p = self.halting_probability(x[idx], hx[idx])
            still = (halting[idx] + p) < 1 - self.eps
            weight = torch.where(still, p, 1 - halting[idx])
            remainders[idx] += torch.where(still, torch.zeros_like(p), 1 - halting[idx])
            halting[idx] += weight
            n_updates[idx] += 1
            accum[idx] += weight.unsqueeze(1) * hx[idx]
            selector = halting < 1 - self.eps
            if not selector.any():
                break
        return accum, remainders + n_updates


class BeamSearch(nn.Module):
    """A caption decoder's beam search that drops finished beams (`k -= ...`,
    `seqs[incomplete_inds]`), with the finished ones kept as it goes."""

    def __init__(self, vocab_size=6, hidden=8, beam_size=3, max_len=4, start=1, end=0):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, hidden)
        self.decode_step = nn.GRUCell(hidden, hidden)
        self.fc = nn.Linear(hidden, vocab_size)
        self.vocab_size, self.beam_size, self.max_len, self.start, self.end = vocab_size, beam_size, max_len, start, end
        with torch.no_grad():  # (the end token's score follows the encoding's first feature)
            self.fc.weight[end].zero_()
            self.fc.weight[end, 0] = 4.0

    def forward(self, encoder_out):
        k = self.beam_size
        vocab_size = self.vocab_size
        h = encoder_out.expand(k, encoder_out.size(1)).contiguous()
        k_prev_words = torch.LongTensor([[self.start]] * k)
        seqs = k_prev_words
        top_k_scores = torch.zeros(k, 1)
        complete_seqs = torch.zeros(0, self.max_len + 1, dtype=torch.long)
        complete_scores = torch.zeros(0)
        for step in range(self.max_len):
            embeddings = self.embedding(k_prev_words).squeeze(1)
            h = self.decode_step(embeddings, h)
            scores = F.log_softmax(self.fc(h), dim=1)
            scores = top_k_scores.expand_as(scores) + scores
            if step == 0:
                top_k_scores, top_k_words = scores[0].topk(self.beam_size, 0, True, True)
            else:
                top_k_scores, top_k_words = scores.view(-1).topk(self.beam_size, 0, True, True)
            top_k_scores, top_k_words = top_k_scores[:k], top_k_words[:k]
            prev_word_inds = top_k_words // vocab_size
            next_word_inds = top_k_words % vocab_size
            seqs = torch.cat([seqs[prev_word_inds], next_word_inds.unsqueeze(1)], dim=1)
            incomplete_inds = (next_word_inds != self.end).nonzero().squeeze(1)
            complete_inds = (next_word_inds == self.end).nonzero().squeeze(1)
            finished = F.pad(seqs[complete_inds], (0, self.max_len + 1 - seqs.size(1)))
            complete_seqs = torch.cat([complete_seqs, finished])
            complete_scores = torch.cat([complete_scores, top_k_scores[complete_inds]])
            k -= len(complete_inds)
            seqs = seqs[incomplete_inds]
            h = h[prev_word_inds[incomplete_inds]]
            top_k_scores = top_k_scores[incomplete_inds].unsqueeze(1)
            k_prev_words = next_word_inds[incomplete_inds].unsqueeze(1)
            if k == 0:
                break
        remaining = F.pad(seqs, (0, self.max_len + 1 - seqs.size(1)))
        complete_seqs = torch.cat([complete_seqs, remaining])
        complete_scores = torch.cat([complete_scores, top_k_scores.view(-1)])
        i = int(complete_scores.argmax())
        return complete_seqs[i], complete_scores[i], k


class ShowAttendTellBeam(nn.Module):
    """Show-Attend-Tell's `caption_image_beam_search` as published (issue 34, item 9.3): the
    beam count `k` is a Python int (`k = beam_size`, `k -= len(complete_inds)`, `if k == 0:`)
    and, at the same time, the rows of `encoder_out`, `h`, `seqs` and `top_k_scores`
    (`encoder_out.expand(k, ...)`, `encoder_out[prev_word_inds[incomplete_inds]]`), and the
    count that `topk(k, 0, True, True)` takes; the finished beams in Python lists."""

    def __init__(self, vocab_size=6, encoder_dim=8, hidden=8, beam_size=3, max_steps=4, start=1, end=0):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, hidden)
        self.init_h = nn.Linear(encoder_dim, hidden)
        self.decode_step = nn.GRUCell(hidden + encoder_dim, hidden)
        self.fc = nn.Linear(hidden, vocab_size)
        self.vocab_size, self.beam_size, self.max_steps, self.start, self.end = vocab_size, beam_size, max_steps, start, end
        with torch.no_grad():  # (the end token's score follows the encoding's first feature)
            self.fc.weight[end].zero_()
            self.fc.weight[end, 0] = 4.0

    def forward(self, encoder_out):
        k = self.beam_size
        vocab_size = self.vocab_size
        encoder_dim = encoder_out.size(-1)
        encoder_out = encoder_out.view(1, -1, encoder_dim)
        num_pixels = encoder_out.size(1)
        encoder_out = encoder_out.expand(k, num_pixels, encoder_dim)
        k_prev_words = torch.LongTensor([[self.start]] * k)
        seqs = k_prev_words
        top_k_scores = torch.zeros(k, 1)
        complete_scores = torch.zeros(0)
        step = 1
        h = self.init_h(encoder_out.mean(dim=1))
        while True:
            embeddings = self.embedding(k_prev_words).squeeze(1)
            awe = encoder_out.mean(dim=1)
            h = self.decode_step(torch.cat([embeddings, awe], dim=1), h)
            scores = F.log_softmax(self.fc(h), dim=1)
            scores = top_k_scores.expand_as(scores) + scores
            if step == 1:
                top_k_scores, top_k_words = scores[0].topk(k, 0, True, True)
            else:
                top_k_scores, top_k_words = scores.view(-1).topk(k, 0, True, True)
            prev_word_inds = top_k_words // vocab_size
            next_word_inds = top_k_words % vocab_size
            seqs = torch.cat([seqs[prev_word_inds], next_word_inds.unsqueeze(1)], dim=1)
            incomplete_inds = (next_word_inds != self.end).nonzero().squeeze(1)
            complete_inds = (next_word_inds == self.end).nonzero().squeeze(1)
            complete_scores = torch.cat([complete_scores, top_k_scores[complete_inds]])
            k -= len(complete_inds)
            if k == 0:
                break
            seqs = seqs[incomplete_inds]
            h = h[prev_word_inds[incomplete_inds]]
            encoder_out = encoder_out[prev_word_inds[incomplete_inds]]
            top_k_scores = top_k_scores[incomplete_inds].unsqueeze(1)
            k_prev_words = next_word_inds[incomplete_inds].unsqueeze(1)
            if step > self.max_steps:
                break
            step += 1
        return complete_scores, k, step


class UniqueScoreRows(nn.Module):
    def forward(self, x):
        scores = x * 3
        return torch.unique(scores, dim=0).sum()  # REFUSED


class GreedyCTC(nn.Module):
    """Greedy CTC decoding of the valid frames (a padding mask): the best label per frame,
    its runs collapsed (`unique_consecutive` with the frame-to-run map and the run lengths),
    blanks dropped."""

    def __init__(self, classes=5):
        super(GreedyCTC, self).__init__()
        self.blank = 0
        self.proj = nn.Linear(4, classes)

    def collapse(self, path):
        runs, inverse, counts = torch.unique_consecutive(path, True, True)
        return runs, inverse, counts

    def forward(self, frames, valid):
        best = self.proj(frames).argmax(-1)
        runs, inverse, counts = self.collapse(best[valid].data)
        keep = runs != self.blank
        lengths = [counts[keep].sum(), len(runs)]
        return runs[keep], counts[keep], inverse, best.unique_consecutive(), lengths


class DuplicateRows(nn.Module):
    """Score each distinct row of token ids once (n-gram deduplication): `torch.unique` with
    `dim=0`, its inverse to give every row its score back and its counts; the distinct
    columns and the runs of equal embedded rows (`unique_consecutive(dim=0)`) too."""

    def __init__(self):
        super(DuplicateRows, self).__init__()
        self.embed = nn.Embedding(6, 4)
        self.score = nn.Linear(4, 1)

    def dedup(self, ids):
        rows, inverse, counts = torch.unique(ids, dim=0, return_inverse=True, return_counts=True)
        return rows, inverse, counts

    def forward(self, ids):
        rows, inverse, counts = self.dedup(ids.data)
        scores = self.score(self.embed(rows).mean(1)).squeeze(1)
        columns = torch.unique(ids, sorted=True, dim=-1)
        runs, lengths = self.embed(ids).mean(-1).unique_consecutive(dim=0, return_counts=True)
        return scores[inverse] * counts[inverse].float(), rows, columns.sum(0), runs * lengths.unsqueeze(1).float()


class LabelPooling(nn.Module):
    """Pool the features of each distinct label (a graph-pooling / class-prototype layer):
    `torch.unique` with its inverse and counts, then a scatter-add and a mean."""

    def __init__(self):
        super(LabelPooling, self).__init__()
        self.proj = nn.Linear(4, 3)

    def pool(self, feats, labels):
        classes, inverse, counts = torch.unique(labels, return_inverse=True, return_counts=True)
        sums = Variable(torch.zeros(classes.size(0), feats.size(1)))
        sums.index_add_(0, inverse, feats)
        return sums / counts.unsqueeze(1).float(), classes

    def forward(self, x, labels):
        feats = self.proj(x)
        protos, classes = self.pool(feats, labels.data)
        scores = feats @ protos.t()
        return scores, classes, labels.unique().numel()


class ExpandBySpans(nn.Module):
    """Expand each token by its predicted duration (FastSpeech's length regulator):
    `repeat_interleave` with a tensor of repeats, and the index each frame comes from."""

    def __init__(self):
        super(ExpandBySpans, self).__init__()
        self.duration = nn.Linear(4, 1)

    def forward(self, tokens):
        durations = torch.clamp(torch.round(self.duration(tokens).squeeze(1) * 2), min=0).long()
        frames = torch.repeat_interleave(tokens, durations, dim=0)
        source = torch.repeat_interleave(durations)
        frames.mul_(0.5)
        return frames, source, tokens[:, 0].repeat_interleave(durations).sum()


class PrototypeRefresh(nn.Module):
    """k-means-style prototype refresh (few-shot / clustering heads): each prototype moves to
    the mean of the rows assigned to it, unless none are. The tests on the member count are
    written every way published code writes them: `members.numel() > 0`, `rows.size(0) == 0`,
    `kept.shape[0]`, and a conditional expression."""

    def __init__(self, k=3):
        super(PrototypeRefresh, self).__init__()
        self.k = k
        self.init_centers = nn.Parameter(torch.randn(k, 4))

    def assign(self, x, centers):
        dist = ((x.unsqueeze(1) - centers.unsqueeze(0)) ** 2).sum(2)
        return dist.argmin(1)

    def forward(self, x):
        centers = self.init_centers.data.clone()
        assign = self.assign(x, centers)
        for c in range(self.k):
            members = x[assign == c]
            if members.numel() > 0:
                centers[c] = members.mean(0)
        far = x[(x - centers[self.assign(x, centers)]).norm(dim=1) > 0.5]
        if far.size(0) == 0:
            spread = x.new_zeros(1)
        else:
            spread = far.std(0, unbiased=False).mean().view(1)
        empty = far.shape[0] == 0
        scale = 1.0 if far.size(-2) > 1 else 0.5
        return centers, spread * scale, empty


class OutputBlock(nn.Module):
    """An SDN block: `forward` is the instance's own method, set in `__init__`."""

    def __init__(self, has_output):
        super(OutputBlock, self).__init__()
        self.layer = nn.Linear(4, 4)
        self.output = nn.Linear(4, 2) if has_output else None
        if has_output:
            self.forward = self.with_output
        else:
            self.forward = self.only_forward

    def only_forward(self, x):
        return F.relu(self.layer(x)), 0, None

    def with_output(self, x):
        fwd = F.relu(self.layer(x))
        return fwd, 1, self.output(fwd)


class SDNBatchExit(nn.Module):
    """SDN's early exit per sample inside a batch: the blocks return `(x, is_output,
    output)`, and after each output block the confident samples leave the batch. A block
    without an output, called on the rows left (a size from the data), still returns the
    constant `0, None`."""

    def __init__(self):
        super(SDNBatchExit, self).__init__()
        self.layers = nn.ModuleList([OutputBlock(i % 2 == 1) for i in range(4)])
        self.end = nn.Linear(4, 2)
        self.confidence_threshold = 0.7

    def forward(self, x):
        final = torch.zeros(x.size(0), 2)
        remaining = torch.arange(x.size(0))
        fwd = x
        for layer in self.layers:
            fwd, is_output, output = layer(fwd)
            if is_output:
                conf = F.softmax(output, 1).max(1)[0]
                done = conf >= self.confidence_threshold
                final[remaining[done]] = output[done]
                fwd, remaining = fwd[~done], remaining[~done]
        final[remaining] = self.end(fwd)
        return final, remaining.numel()


class LiveRowsMean(nn.Module):
    """The mean of the live rows, or of all rows when none is live: a test on the count of
    `x[mask]` (`rows.size(0) > 0`), as batch-level early-exit code writes it."""

    def forward(self, x):
        rows = x[x.sum(1) > 0]
        if rows.size(0) > 0:
            return rows.mean(0), rows.numel()
        return x.mean(0), 0


class LiveRowsBlock(nn.Module):
    """A block returning `(x, 0, None)` (an SDN block without an output), called on the live
    rows; the caller tests the constant it returns."""

    def __init__(self):
        super(LiveRowsBlock, self).__init__()
        self.block = OutputBlock(False)

    def forward(self, x):
        fwd, is_output, output = self.block(x[x.sum(1) > 0])
        if is_output:
            fwd = fwd + output.sum()
        return fwd * 2


class ClassWiseTopK(nn.Module):
    """Detection post-processing: per class, the boxes that pass the score threshold, best
    first, at most `max_det` of them (`order = cs.argsort(descending=True)[:self.max_det]`);
    a class with none is skipped."""

    def __init__(self, classes=3, thresh=0.5, max_det=4):
        super(ClassWiseTopK, self).__init__()
        self.classes, self.thresh, self.max_det = classes, thresh, max_det
        self.cls = nn.Linear(4, classes)

    def forward(self, feats, boxes):
        scores = torch.sigmoid(self.cls(feats))
        dets = []
        for c in range(self.classes):
            s = scores[:, c]
            keep = s > self.thresh
            if keep.sum() == 0:
                continue
            cb, cs = boxes[keep], s[keep]
            order = cs.argsort(descending=True)[: self.max_det]
            dets.append(torch.cat([cb[order], cs[order].unsqueeze(1), torch.full((len(order), 1), float(c))], 1))
        if len(dets) == 0:
            return torch.zeros(0, 6)
        return torch.cat(dets, 0)


class TopScoresPadded(nn.Module):
    """The best `max_det` scores above a threshold, padded to a fixed count (a detector's
    fixed-size output): `k = min(self.max_det, kept.size(0))`, a runtime int the host
    computes from the size, then `[:k]` and `F.pad(..., self.max_det - top.size(0))`."""

    def __init__(self, max_det=3):
        super(TopScoresPadded, self).__init__()
        self.fc = nn.Linear(4, 1)
        self.max_det = max_det

    def forward(self, feats):
        s = torch.sigmoid(self.fc(feats)).squeeze(1)
        kept = s[s > 0.5]
        k = min(self.max_det, kept.size(0))
        top = kept.sort(descending=True)[0][:k]
        padded = F.pad(top, (0, self.max_det - top.size(0)), value=-1.0)
        return padded, k


class FirstLiveRows(nn.Module):
    """At most two of the live rows: `n = min(2, rows.size(0))`."""

    def forward(self, x):
        rows = x[x.sum(1) > 0]
        n = min(2, rows.size(0))
        return rows.sum(0), n


class ValidBoxes(nn.Module):
    """Features of the boxes whose corners are in order, scaled by their first two
    coordinates (`good[:, :2]`: a slice to the end of a size from the data)."""

    def __init__(self):
        super(ValidBoxes, self).__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x, boxes):
        if boxes.numel() == 0:
            return x.new_zeros(0, 2), 0
        keep = boxes[:, 0] < boxes[:, 2]
        good = boxes[keep]
        feats = self.fc(x[keep])
        return feats * good[:, :2].sum(1, keepdim=True), len(good)
