"""Caption decoders written the way pytorch-tutorial's image captioning, sgrvinod's
Show-Attend-Tell and seq2seq tutorials are written: greedy search with an end token,
teacher forcing with Python lists of lengths."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from tests.frontend.research.common import images, randint, randn

VOCAB, EMBED, HIDDEN = 6, 8, 8


class ShowTellSample(nn.Module):
    """pytorch-tutorial DecoderRNN.sample installed as forward: `states=None` then a tuple
    through a constant-trip loop, then the sample.py post-processing that cuts at `<end>`
    while iterating a numpy array."""

    N_PATHS = 5
    CONSTRUCTS = ('forward-override', 'states-none-tuple', 'carry-structure', 'np-on-tensor', '.cpu()')
    WEIGHT_SEED = 1

    def __init__(self, max_seq_length=5):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, EMBED)
        self.lstm = nn.LSTM(EMBED, HIDDEN, 1, batch_first=True)
        self.linear = nn.Linear(HIDDEN, VOCAB)
        self.max_seg_length = max_seq_length
        self.end_id = 1
        self.forward = self.sample

    def sample(self, features, states=None):
        """Generate captions for given image features using greedy search."""
        sampled_ids = []
        inputs = features.unsqueeze(1)
        for i in range(self.max_seg_length):
            hiddens, states = self.lstm(inputs, states)
            outputs = self.linear(hiddens.squeeze(1))
            _, predicted = outputs.max(1)
            sampled_ids.append(predicted)
            inputs = self.embed(predicted)
            inputs = inputs.unsqueeze(1)
        sampled_ids = torch.stack(sampled_ids, 1)
        sampled_caption = []
        for word_id in sampled_ids[0].cpu().numpy():
            sampled_caption.append(int(word_id))
            if word_id == self.end_id:
                break
        return sampled_ids, sampled_caption

    @staticmethod
    def path_key(inputs, output, trace):
        return len(output[1])

    @staticmethod
    def example_inputs():
        return (randn(1, EMBED),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (0, 0.3), (0, 10.0), (0, 30.0), (2, 1.0)], shape=(1, EMBED))


class ShowTellPacked(nn.Module):
    """pytorch-tutorial DecoderRNN.forward: `forward(self, features, captions, lengths)` with
    `lengths` a Python list, `pack_padded_sequence(embeddings, lengths, batch_first=True)`."""

    N_PATHS = 3
    CONSTRUCTS = ('list-arg', 'packed')

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, EMBED)
        self.lstm = nn.LSTM(EMBED, HIDDEN, 1, batch_first=True)
        self.linear = nn.Linear(HIDDEN, VOCAB)

    def forward(self, features, captions, lengths):
        embeddings = self.embed(captions)
        embeddings = torch.cat((features.unsqueeze(1), embeddings), 1)
        packed = pack_padded_sequence(embeddings, lengths, batch_first=True)
        hiddens, _ = self.lstm(packed)
        outputs = self.linear(hiddens[0])
        return outputs

    @staticmethod
    def path_key(inputs, output, trace):
        return tuple(inputs[2])

    @staticmethod
    def example_inputs():
        return (randn(2, EMBED), randint(VOCAB, 2, 4), [5, 3])

    @staticmethod
    def path_inputs():
        return [(randn(2, EMBED, seed=k), randint(VOCAB, 2, 4, seed=k), lengths) for k, lengths in enumerate([[5, 3], [4, 4], [2, 1]])]


class Attention(nn.Module):
    def __init__(self, encoder_dim, decoder_dim, attention_dim):
        super().__init__()
        self.encoder_att = nn.Linear(encoder_dim, attention_dim)
        self.decoder_att = nn.Linear(decoder_dim, attention_dim)
        self.full_att = nn.Linear(attention_dim, 1)

    def forward(self, encoder_out, decoder_hidden):
        att1 = self.encoder_att(encoder_out)
        att2 = self.decoder_att(decoder_hidden)
        att = self.full_att(F.relu(att1 + att2.unsqueeze(1))).squeeze(2)
        alpha = F.softmax(att, dim=1)
        attention_weighted_encoding = (encoder_out * alpha.unsqueeze(2)).sum(dim=1)
        return attention_weighted_encoding, alpha


class ShowAttendTell(nn.Module):
    """sgrvinod's DecoderWithAttention.forward: sort by length, `decode_lengths` a Python list
    from `.tolist()`, `for t in range(max(decode_lengths))`, `batch_size_t = sum([l > t for l in
    decode_lengths])`, and `predictions[:batch_size_t, t, :] = preds`."""

    N_PATHS = 3
    CONSTRUCTS = ('list-comp', 'index-assign', '.to(device)')

    def __init__(self, encoder_dim=8, attention_dim=8):
        super().__init__()
        self.attention = Attention(encoder_dim, HIDDEN, attention_dim)
        self.embedding = nn.Embedding(VOCAB, EMBED)
        self.decode_step = nn.LSTMCell(EMBED + encoder_dim, HIDDEN, bias=True)
        self.init_h = nn.Linear(encoder_dim, HIDDEN)
        self.init_c = nn.Linear(encoder_dim, HIDDEN)
        self.f_beta = nn.Linear(HIDDEN, encoder_dim)
        self.fc = nn.Linear(HIDDEN, VOCAB)
        self.vocab_size = VOCAB

    def init_hidden_state(self, encoder_out):
        mean_encoder_out = encoder_out.mean(dim=1)
        return self.init_h(mean_encoder_out), self.init_c(mean_encoder_out)

    def forward(self, encoder_out, encoded_captions, caption_lengths):
        batch_size = encoder_out.size(0)
        num_pixels = encoder_out.size(1)
        caption_lengths, sort_ind = caption_lengths.squeeze(1).sort(dim=0, descending=True)
        encoder_out = encoder_out[sort_ind]
        encoded_captions = encoded_captions[sort_ind]
        embeddings = self.embedding(encoded_captions)
        h, c = self.init_hidden_state(encoder_out)
        decode_lengths = (caption_lengths - 1).tolist()
        predictions = torch.zeros(batch_size, max(decode_lengths), self.vocab_size).to(encoder_out.device)
        alphas = torch.zeros(batch_size, max(decode_lengths), num_pixels).to(encoder_out.device)
        for t in range(max(decode_lengths)):
            batch_size_t = sum([l > t for l in decode_lengths])
            attention_weighted_encoding, alpha = self.attention(encoder_out[:batch_size_t], h[:batch_size_t])
            gate = torch.sigmoid(self.f_beta(h[:batch_size_t]))
            attention_weighted_encoding = gate * attention_weighted_encoding
            h, c = self.decode_step(
                torch.cat([embeddings[:batch_size_t, t, :], attention_weighted_encoding], dim=1),
                (h[:batch_size_t], c[:batch_size_t]),
            )
            preds = self.fc(h)
            predictions[:batch_size_t, t, :] = preds
            alphas[:batch_size_t, t, :] = alpha
        return predictions, encoded_captions, decode_lengths, alphas, sort_ind

    @staticmethod
    def path_key(inputs, output, trace):
        return tuple(output[2])

    @staticmethod
    def example_inputs():
        return (randn(2, 4, 8), randint(VOCAB, 2, 5), torch.tensor([[5], [3]]))

    @staticmethod
    def path_inputs():
        lengths = [[[5], [3]], [[2], [4]], [[3], [3]]]
        return [(randn(2, 4, 8, seed=k), randint(VOCAB, 2, 5, seed=k), torch.tensor(l)) for k, l in enumerate(lengths)]


class TeacherForcingLengths(nn.Module):
    """Teacher forcing over a batch sorted by length, `lengths` a Python list argument:
    `max(lengths)`, `sum([l > t for l in lengths])`, `outputs[:batch_size_t, t] = ...`, and a
    comprehension over the list in the return."""

    N_PATHS = 3
    CONSTRUCTS = ('list-arg', 'list-comp', 'index-assign')

    def __init__(self):
        super().__init__()
        self.init_h = nn.Linear(8, HIDDEN)
        self.embed = nn.Embedding(VOCAB, EMBED)
        self.cell = nn.GRUCell(EMBED, HIDDEN)
        self.fc = nn.Linear(HIDDEN, VOCAB)
        self.vocab = VOCAB

    def forward(self, feats, captions, lengths):
        h = torch.tanh(self.init_h(feats))
        emb = self.embed(captions)
        max_len = max(lengths)
        outputs = torch.zeros(len(lengths), max_len, self.vocab)
        for t in range(max_len):
            batch_size_t = sum([l > t for l in lengths])
            h = self.cell(emb[:batch_size_t, t], h[:batch_size_t])
            outputs[:batch_size_t, t] = self.fc(h)
        return outputs, [l - 1 for l in lengths]

    @staticmethod
    def path_key(inputs, output, trace):
        return tuple(inputs[2])

    @staticmethod
    def example_inputs():
        return (randn(2, 8), randint(VOCAB, 2, 4), [4, 2])

    @staticmethod
    def path_inputs():
        return [(randn(2, 8, seed=k), randint(VOCAB, 2, 4, seed=k), lengths) for k, lengths in enumerate([[4, 2], [3, 3], [2, 1]])]


class ShowAttendTellOneWord(ShowAttendTell):
    """The same decoder compiled from a batch of one-word captions (`caption_lengths` 1, so
    `decode_lengths == [0, 0]`): the example never enters the decode loop."""

    N_PATHS = 4
    CONSTRUCTS = ('unentered-loop', 'list-comp', 'index-assign')

    @staticmethod
    def example_inputs():
        return (randn(2, 4, 8, seed=7), randint(VOCAB, 2, 5, seed=7), torch.tensor([[1], [1]]))

    @staticmethod
    def path_inputs():
        lengths = [[[1], [1]], [[2], [1]], [[5], [3]], [[3], [3]]]
        return [(randn(2, 4, 8, seed=k), randint(VOCAB, 2, 5, seed=k), torch.tensor(l)) for k, l in enumerate(lengths)]


class CaptionLengthsDecoder(nn.Module):
    """Teacher forcing with `caption_lengths` a Python list argument and the decode lengths
    made by a comprehension (`[c - 1 for c in caption_lengths]`), compiled from one-word
    captions: zero decode steps in the example."""

    N_PATHS = 4
    CONSTRUCTS = ('unentered-loop', 'list-arg', 'list-comp')

    def __init__(self):
        super(CaptionLengthsDecoder, self).__init__()
        self.init_h = nn.Linear(8, HIDDEN)
        self.embed = nn.Embedding(VOCAB, EMBED)
        self.cell = nn.GRUCell(EMBED, HIDDEN)
        self.fc = nn.Linear(HIDDEN, VOCAB)

    def init_hidden(self, feats):
        return torch.tanh(self.init_h(feats))

    def forward(self, feats, captions, caption_lengths):
        decode_lengths = [c - 1 for c in caption_lengths]
        h = self.init_hidden(feats)
        embeddings = self.embed(captions)
        predictions = torch.zeros(feats.size(0), max(decode_lengths), VOCAB)
        for t in range(max(decode_lengths)):
            batch_size_t = sum([l > t for l in decode_lengths])
            h = self.cell(embeddings[:batch_size_t, t, :], h[:batch_size_t])
            predictions[:batch_size_t, t, :] = self.fc(h)
        return predictions, decode_lengths

    @staticmethod
    def path_key(inputs, output, trace):
        return tuple(output[1])

    @staticmethod
    def example_inputs():
        return (randn(2, 8), randint(VOCAB, 2, 6), [1, 1])

    @staticmethod
    def path_inputs():
        return [(randn(2, 8, seed=k), randint(VOCAB, 2, 6, seed=k), lengths) for k, lengths in enumerate([[1, 1], [2, 1], [6, 2], [3, 3]])]


class GreedyEndToken(nn.Module):
    """Greedy decoding with a GRUCell called with `hx=None` on the first step, tokens kept as
    Python ints, `break` at the end token, the end token dropped with `tokens.pop()`."""

    N_PATHS = 6
    CONSTRUCTS = ('none-start', 'pop')
    WEIGHT_SEED = 2

    def __init__(self):
        super().__init__()
        self.init_input = nn.Linear(8, EMBED)
        self.cell = nn.GRUCell(EMBED, HIDDEN)
        self.out = nn.Linear(HIDDEN, VOCAB)
        self.embed = nn.Embedding(VOCAB, EMBED)
        self.max_len = 5
        self.end_id = 1

    def forward(self, features):
        hx = None
        inp = self.init_input(features)
        logits_seq, tokens = [], []
        for _ in range(self.max_len):
            hx = self.cell(inp, hx)
            logits = self.out(hx)
            tok = logits.argmax(1)
            logits_seq.append(logits)
            tokens.append(tok.item())
            if tokens[-1] == self.end_id:
                break
            inp = self.embed(tok)
        if tokens[-1] == self.end_id:
            tokens.pop()
        return torch.stack(logits_seq, 1), tokens

    @staticmethod
    def path_key(inputs, output, trace):
        return len(output[1])

    @staticmethod
    def example_inputs():
        return (randn(1, 8),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (0, 30.0), (1, 3.0), (1, 10.0), (2, 1.0), (3, 10.0)], shape=(1, 8))


class GreedyStripEnd(nn.Module):
    """An LSTMCell whose `states` start as None and become an (h, c) tuple; the end token is
    stripped with `del tokens[-1]`; an empty caption is allowed."""

    N_PATHS = 6
    CONSTRUCTS = ('none-start', 'states-none-tuple', 'del')
    WEIGHT_SEED = 9

    def __init__(self):
        super().__init__()
        self.bridge = nn.Linear(8, EMBED)
        self.cell = nn.LSTMCell(EMBED, HIDDEN)
        self.out = nn.Linear(HIDDEN, VOCAB)
        self.embed = nn.Embedding(VOCAB, EMBED)
        self.max_len = 5
        self.end_id = 1

    def forward(self, features):
        states = None
        inp = self.bridge(features)
        tokens = []
        for t in range(self.max_len):
            states = self.cell(inp, states)
            h, c = states
            word = self.out(h).argmax(1)
            tokens.append(word)
            if word.item() == self.end_id:
                break
            inp = self.embed(word)
        if tokens[-1].item() == self.end_id:
            del tokens[-1]
        caption = torch.cat(tokens) if tokens else features.new_zeros(0, dtype=torch.long)
        return caption, len(tokens)

    @staticmethod
    def path_key(inputs, output, trace):
        return len(trace), output[1]

    @staticmethod
    def example_inputs():
        return (randn(1, 8),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (2, 1.0), (2, 10.0), (4, 3.0), (4, 10.0), (7, 10.0)], shape=(1, 8))


class GreedyNumpyCaption(nn.Module):
    """Decode the full length, then cut in numpy: `np.array(sampled)` of 0-d tensors,
    `np.where(ids == end)`, and a slice of the token list at the found length."""

    N_PATHS = 5
    CONSTRUCTS = ('np-on-list', 'np.array', 'np.where')
    WEIGHT_SEED = 8

    def __init__(self):
        super().__init__()
        self.bridge = nn.Linear(8, HIDDEN)
        self.embed = nn.Embedding(VOCAB, EMBED)
        self.cell = nn.GRUCell(EMBED, HIDDEN)
        self.out = nn.Linear(HIDDEN, VOCAB)
        self.max_len = 5
        self.end_id = 1

    def forward(self, features):
        h = torch.tanh(self.bridge(features))
        tok = torch.zeros(1, dtype=torch.long)
        sampled = []
        for _ in range(self.max_len):
            h = self.cell(self.embed(tok), h)
            tok = self.out(h).argmax(1)
            sampled.append(tok.squeeze(0))
        ids = np.array(sampled)
        ends = np.where(ids == self.end_id)[0]
        length = int(ends[0]) + 1 if len(ends) > 0 else len(ids)
        return torch.stack(sampled[:length]), length

    @staticmethod
    def path_key(inputs, output, trace):
        return output[1]

    @staticmethod
    def example_inputs():
        return (randn(1, 8),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (1, 1.0), (1, 3.0), (1, 30.0), (2, 10.0)], shape=(1, 8))


class BatchGreedyAll(nn.Module):
    """Batched greedy decoding: a list of Python bools `finished` updated per sequence,
    `if all(finished): break`."""

    N_PATHS = 7
    CONSTRUCTS = ('all', 'index-assign')
    WEIGHT_SEED = 8

    def __init__(self):
        super().__init__()
        self.bridge = nn.Linear(8, HIDDEN)
        self.embed = nn.Embedding(VOCAB, EMBED)
        self.cell = nn.GRUCell(EMBED, HIDDEN)
        self.out = nn.Linear(HIDDEN, VOCAB)
        self.max_len = 4
        self.end_id = 1

    def forward(self, features):
        h = torch.tanh(self.bridge(features))
        tokens = torch.zeros(features.size(0), dtype=torch.long)
        finished = [False] * features.size(0)
        outputs = []
        for step in range(self.max_len):
            h = self.cell(self.embed(tokens), h)
            logits = self.out(h)
            tokens = logits.argmax(1)
            outputs.append(logits)
            for b in range(len(finished)):
                if tokens[b].item() == self.end_id:
                    finished[b] = True
            if all(finished):
                break
        return torch.stack(outputs, 1), step + 1, finished

    @staticmethod
    def path_key(inputs, output, trace):
        return output[1], tuple(output[2])

    @staticmethod
    def example_inputs():
        return (randn(2, 8),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (0, 3.0), (0, 10.0), (1, 3.0), (2, 3.0), (3, 10.0), (8, 10.0)], shape=(2, 8))


class DecoderSelfHidden(nn.Module):
    """seq2seq-tutorial style: `self.hidden = self.init_hidden(b)` at the top of forward, a
    `step` helper reading and rewriting `self.hidden`, `torch.cat(tokens)` if any."""

    N_PATHS = 6
    CONSTRUCTS = ('init-hidden', 'self-attr')
    WEIGHT_SEED = 8

    def __init__(self):
        super().__init__()
        self.hidden_size = HIDDEN
        self.bridge = nn.Linear(8, HIDDEN)
        self.embed = nn.Embedding(VOCAB, EMBED)
        self.gru = nn.GRU(EMBED, HIDDEN)
        self.out = nn.Linear(HIDDEN, VOCAB)
        self.max_len = 5
        self.end_id = 1

    def init_hidden(self, batch_size):
        return torch.zeros(1, batch_size, self.hidden_size)

    def step(self, token):
        emb = self.embed(token).unsqueeze(0)
        out, self.hidden = self.gru(emb, self.hidden)
        return self.out(out.squeeze(0))

    def forward(self, features, start):
        self.hidden = self.init_hidden(features.size(0))
        self.hidden = self.hidden + torch.tanh(self.bridge(features)).unsqueeze(0)
        token = start
        tokens = []
        for _ in range(self.max_len):
            logits = self.step(token)
            token = logits.argmax(1)
            if token.item() == self.end_id:
                break
            tokens.append(token)
        if len(tokens) > 0:
            return torch.cat(tokens), len(tokens)
        return start.new_zeros(0), 0

    @staticmethod
    def path_key(inputs, output, trace):
        return output[1]

    @staticmethod
    def example_inputs():
        return (randn(1, 8), torch.tensor([0]))

    @staticmethod
    def path_inputs():
        return [(x, torch.tensor([0])) for (x,) in images([(0, 1.0), (1, 1.0), (1, 3.0), (1, 30.0), (2, 10.0), (9, 3.0)], shape=(1, 8))]


class DecoderMaxKey(nn.Module):
    """Argmax in plain Python: `best = max(range(V), key=lambda k: logits[0, k].item())`, the
    next input looked up as `self.embed.weight[best]`, the caption `[start]` extended with
    the words."""

    N_PATHS = 5
    CONSTRUCTS = ('max-key', 'extend')
    WEIGHT_SEED = 8

    def __init__(self):
        super().__init__()
        self.bridge = nn.Linear(8, HIDDEN)
        self.embed = nn.Embedding(VOCAB, EMBED)
        self.cell = nn.GRUCell(EMBED, HIDDEN)
        self.out = nn.Linear(HIDDEN, VOCAB)
        self.vocab_size = VOCAB
        self.max_len = 4
        self.start_id = 0
        self.end_id = 1

    def forward(self, features):
        h = torch.tanh(self.bridge(features))
        inp = self.embed.weight[self.start_id].unsqueeze(0)
        words = []
        for _ in range(self.max_len):
            h = self.cell(inp, h)
            logits = self.out(h)
            best = max(range(self.vocab_size), key=lambda k: logits[0, k].item())
            if best == self.end_id:
                break
            words.append(best)
            inp = self.embed.weight[best].unsqueeze(0)
        caption = [self.start_id]
        caption.extend(words)
        return caption, h

    @staticmethod
    def path_key(inputs, output, trace):
        return len(output[0])

    @staticmethod
    def example_inputs():
        return (randn(1, 8),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (1, 1.0), (1, 3.0), (1, 30.0), (2, 10.0)], shape=(1, 8))


class ChatbotEncoder(nn.Module):
    """The PyTorch chatbot tutorial's EncoderRNN: a bidirectional GRU on a packed batch, the
    two directions' outputs summed."""

    def __init__(self, hidden_size, embedding, n_layers=2):
        super().__init__()
        self.n_layers = n_layers
        self.hidden_size = hidden_size
        self.embedding = embedding
        self.gru = nn.GRU(hidden_size, hidden_size, n_layers, bidirectional=True)

    def forward(self, input_seq, input_lengths, hidden=None):
        embedded = self.embedding(input_seq)
        packed = nn.utils.rnn.pack_padded_sequence(embedded, input_lengths)
        outputs, hidden = self.gru(packed, hidden)
        outputs, _ = nn.utils.rnn.pad_packed_sequence(outputs)
        outputs = outputs[:, :, :self.hidden_size] + outputs[:, :, self.hidden_size:]
        return outputs, hidden


class LuongAttnDecoder(nn.Module):
    """The tutorial's LuongAttnDecoderRNN with `dot` attention over the encoder outputs."""

    def __init__(self, embedding, hidden_size, output_size, n_layers=2):
        super().__init__()
        self.embedding = embedding
        self.gru = nn.GRU(hidden_size, hidden_size, n_layers)
        self.concat = nn.Linear(hidden_size * 2, hidden_size)
        self.out = nn.Linear(hidden_size, output_size)

    def forward(self, input_step, last_hidden, encoder_outputs):
        embedded = self.embedding(input_step)
        rnn_output, hidden = self.gru(embedded, last_hidden)
        attn_energies = torch.sum(rnn_output * encoder_outputs, dim=2).t()
        attn_weights = F.softmax(attn_energies, dim=1).unsqueeze(1)
        context = attn_weights.bmm(encoder_outputs.transpose(0, 1))
        concat_input = torch.cat((rnn_output.squeeze(0), context.squeeze(1)), 1)
        concat_output = torch.tanh(self.concat(concat_input))
        output = F.softmax(self.out(concat_output), dim=1)
        return output, hidden


class ChatbotGreedySearch(nn.Module):
    """The chatbot tutorial's GreedySearchDecoder (lengths a tensor, as `evaluate` makes
    them), stopping at EOS: the encoder outputs are as long as the input sentence."""

    N_PATHS = 5
    CONSTRUCTS = ('packed', 'early-return')

    def __init__(self, hidden_size=EMBED, max_length=4):
        super().__init__()
        embedding = nn.Embedding(VOCAB, hidden_size)
        self.encoder = ChatbotEncoder(hidden_size, embedding)
        self.decoder = LuongAttnDecoder(embedding, hidden_size, VOCAB)
        self.max_length = max_length
        self.sos_token, self.eos_token = 1, 2

    def forward(self, input_seq, input_length):
        encoder_outputs, encoder_hidden = self.encoder(input_seq, input_length)
        decoder_hidden = encoder_hidden[:self.decoder.gru.num_layers]
        decoder_input = torch.ones(1, 1, dtype=torch.long) * self.sos_token
        all_tokens = torch.zeros([0], dtype=torch.long)
        all_scores = torch.zeros([0])
        for _ in range(self.max_length):
            decoder_output, decoder_hidden = self.decoder(decoder_input, decoder_hidden, encoder_outputs)
            decoder_scores, decoder_input = torch.max(decoder_output, dim=1)
            all_tokens = torch.cat((all_tokens, decoder_input), dim=0)
            all_scores = torch.cat((all_scores, decoder_scores), dim=0)
            if decoder_input.item() == self.eos_token:
                return all_tokens, all_scores
            decoder_input = torch.unsqueeze(decoder_input, 0)
        return all_tokens, all_scores

    @staticmethod
    def path_key(inputs, output, trace):
        return int(inputs[1][0]), len(output[0])

    @staticmethod
    def example_inputs():
        return (randint(VOCAB, 5, 1, seed=0), torch.tensor([5]))

    @staticmethod
    def path_inputs():
        return [(randint(VOCAB, 5, 1, seed=seed), torch.tensor([length])) for seed, length in [(0, 5), (7, 5), (4, 3), (3, 1), (9, 2)]]



class EndOfSequence(Exception):
    """Raised by the decoding step when it emits the end token."""

    def __init__(self, length):
        super().__init__("end of sequence")
        self.length = length


class NestedStepDecoder(nn.Module):
    """Greedy decoding whose step is a nested function (a closure over the logits list,
    the embeddings and `self`) that raises `EndOfSequence` at the end token; forward
    catches it around the decoding loop."""

    N_PATHS = 4
    CONSTRUCTS = ('raise-caught', 'nested-def', 'none-start')
    WEIGHT_SEED = 2

    def __init__(self):
        super().__init__()
        self.init_input = nn.Linear(8, EMBED)
        self.cell = nn.GRUCell(EMBED, HIDDEN)
        self.out = nn.Linear(HIDDEN, VOCAB)
        self.embed = nn.Embedding(VOCAB, EMBED)
        self.position = nn.Parameter(torch.randn(4, EMBED) * 0.1)
        self.max_len = 4
        self.end_id = 1

    def forward(self, features):
        hx = None
        inp = self.init_input(features)
        logits_seq = []

        def step(inp, hx, t):
            hx = self.cell(inp + self.position[t], hx)
            logits = self.out(hx)
            logits_seq.append(logits)
            tok = logits.argmax(1)
            if tok.item() == self.end_id:
                raise EndOfSequence(t + 1)
            return self.embed(tok), hx

        try:
            for t in range(self.max_len):
                inp, hx = step(inp, hx, t)
            length = self.max_len
        except EndOfSequence as stop:
            length = stop.length
        return torch.stack(logits_seq, 1), length

    @staticmethod
    def path_key(inputs, output, trace):
        return output[1]

    @staticmethod
    def example_inputs():
        return (randn(1, 8),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (0, 30.0), (1, 3.0), (1, 10.0), (2, 1.0), (3, 10.0), (4, 3.0), (5, 0.3)], shape=(1, 8))

MODELS = [
    ShowTellSample,
    ShowTellPacked,
    ChatbotGreedySearch,
    ShowAttendTell,
    TeacherForcingLengths,
    GreedyEndToken,
    NestedStepDecoder,
    GreedyStripEnd,
    GreedyNumpyCaption,
    BatchGreedyAll,
    DecoderSelfHidden,
    DecoderMaxKey,
    ShowAttendTellOneWord,
    CaptionLengthsDecoder,
]
