"""Lists of Python ints, floats and bools whose length is known only at runtime, written as
decoders and early-exit code write them: tokens kept as ints, confidences kept as floats."""

import torch
import torch.nn as nn


class GreedyTokens(nn.Module):
    """`tokens.append(tok)` with `tok = int(h.argmax())` in a loop that may `break`, then
    `tokens[-1]`, `tokens.pop()`, `len(tokens)` and the list returned."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        tokens = []
        h = x
        for _ in range(3):
            h = torch.tanh(self.fc(h))
            tok = int(h.argmax())
            tokens.append(tok)
            if tok == 1:
                break
        if tokens[-1] == 1:
            tokens.pop()
        return h, tokens, len(tokens)


class ArgmaxWords(nn.Module):
    """`best = max(range(V), key=...)`, `words.append(best)` in a loop with `break`, the
    caption `[start]` extended with the words."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.embed = nn.Embedding(4, 4)

    def forward(self, x):
        h = x
        words = []
        for _ in range(4):
            h = torch.tanh(self.fc(h))
            best = max(range(4), key=lambda k: h[0, k].item())
            if best == 1:
                break
            words.append(best)
            h = h + self.embed.weight[best].unsqueeze(0)
        caption = [0]
        caption.extend(words)
        return caption, h


class ConfidentExits(nn.Module):
    """Confidences as Python floats, appended under a runtime condition; the last one scales
    the output."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        confs = []
        for _ in range(3):
            x = torch.relu(self.fc(x)) - 0.1
            c = float(x.max())
            if c > 0.5:
                confs.append(c)
        if len(confs) > 0:
            return x * confs[-1], confs
        return x, confs


class BranchLists(nn.Module):
    """Lists of known items of different lengths on the two paths of an `if` (ints, and
    tensors): each becomes one runtime list."""

    def forward(self, x):
        if x.sum() > 0:
            ids, parts = [1, 2], [x, x * 2]
        else:
            ids, parts = [3], [x - 1]
        ids.append(int(x.argmax()))
        return ids, len(parts), parts[-1] * ids[0]


class MixedKinds(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        out = []
        for _ in range(3):
            x = self.fc(x)
            if x.sum() > 0:
                out.append(x)
            else:
                out.append(int(x.argmax()))  # REFUSED
        return out
