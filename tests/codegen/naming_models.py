"""Models whose host programs once came out wrong when values kept the forward's names and
loop carries were updated in place (a review of those changes found each)."""

import torch
import torch.nn as nn


class NestedForCarry(nn.Module):
    """An inner loop defines the outer loop's carry while its body still reads the old one."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        h = self.fc(x)
        for _ in range(3):
            acc = torch.zeros_like(h)
            for _ in range(2):
                acc = acc + h
                if acc.sum() > 1e9:  # a host decision: the loop stays a loop
                    acc = acc * 0.5
            h = acc
        return h


class NestedWhileCarry(nn.Module):
    """The same with a bounded inner `while` (the example input never enters it)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        h = self.fc(x)
        for _ in range(2):
            g = h * 0.5
            step = 0
            while step < 8 and g.abs().sum() < 10:
                g = g + h
                step += 1
            h = g
        return h


class UnderscoreVariable(nn.Module):
    """A variable named `_`, which generated code also uses for unused loop indices."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        h, _ = self.fc(x).max(dim=1)
        g = x
        for i in range(3):
            g = g * 2
            if g.sum() > 100:
                g = g - 1
        return g + _


class UnicodeName(nn.Module):
    """A name MLIR cannot spell as an SSA name."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        α = self.fc(x)
        if α.sum() > 0:
            α = α * 2
        return α
