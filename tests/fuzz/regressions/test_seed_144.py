"""Found by `python -m dycl.fuzz` (seed 144), shrunk: frontend-error.

FrontendError: <program>.py:1: `__dycl_condition` may be used before it is assigned [compiler.py:871]

Source of the shrunk program:

    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    import numpy as np
    from torch.autograd import Variable
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

    class OnlyForwardBlock(nn.Module):
        def __init__(self, layer, output):
            super(OnlyForwardBlock, self).__init__()
            self.layers = nn.ModuleList([layer, nn.Tanh()])
            self.output = output
            if output is None:
                self.forward = self.only_forward

        def forward(self, x):
            fwd = self.layers[1](self.layers[0](x))
            return fwd, 1, self.output(fwd)

        def only_forward(self, x):
            fwd = self.layers[1](self.layers[0](x))
            return fwd, 0, None


    class Fuzz144(nn.Module):
        def __init__(self):
            super().__init__()
            self.m15 = nn.Linear(6, 2)

        def forward(self, x, lengths):
            x = x.clone()
            count = 0
            outs = []
            for j1 in range(1):
                x[0, j1].mul_(1.5)
                toks5 = []
                for _ in range(1):
                    x = F.gelu(x)
                    toks5.append(x.argmax())
                ids6 = np.array(toks5)
                ids6_ends = np.where(ids6 == 0)[0]
                x = x * (1.0 + 0.1 * len(ids6_ends))
                rows1 = torch.stack([x[0], -x[0], torch.sigmoid(x[0]) - 0.5])
                mask2 = rows1.sum(1) < 0.0
                x = x + 0.1 * rows1[rows1 > 0].sum() / (rows1[rows1 > 0].numel() + 1)
                if x.norm() > 5.677:
                    break
            outs.append(x.clone())
            return self.m15(x), count, torch.stack(outs)"""

import pytest

from dycl.fuzz.program import (  # noqa: F401
    BoolOp, Break, Cond, CondLine, For, If, Line, Mutation, Program, Research, While, With,
)

PROGRAM = Program(seed=144, input_shape=(1, 6), modules={'m15': 'nn.Linear(6, 2)'}, helpers={}, prologue=['x = x.clone()', 'count = 0', 'outs = []'], body=[For(trips=1, body=[Mutation(text='x[0, j1].mul_(1.5)', form='loop_index'), Research(text='toks5 = []', form='decode_array'), For(trips=1, body=[Research(text='x = F.gelu(x)', form='decode_array'), Research(text='toks5.append(x.argmax())', form='decode_array')], var='_', header=''), Research(text='ids6 = np.array(toks5)\nids6_ends = np.where(ids6 == 0)[0]\nx = x * (1.0 + 0.1 * len(ids6_ends))', form='decode_array'), Research(text='rows1 = torch.stack([x[0], -x[0], torch.sigmoid(x[0]) - 0.5])\nmask2 = rows1.sum(1) < 0.0\nx = x + 0.1 * rows1[rows1 > 0].sum() / (rows1[rows1 > 0].numel() + 1)', form='data_dependent_size'), Break(cond=Cond(stat='x.norm()', index=6, op='>', form='tensor', via_attr=False, wrap=''))], var='j1', header='')], epilogue=['outs.append(x.clone())', 'return self.m15(x), count, torch.stack(outs)'], thresholds=[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 5.677], imports=['import numpy as np', 'from torch.autograd import Variable', 'from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence'], lengths=3, lengths_type='list', classes=['class OnlyForwardBlock(nn.Module):\n    def __init__(self, layer, output):\n        super(OnlyForwardBlock, self).__init__()\n        self.layers = nn.ModuleList([layer, nn.Tanh()])\n        self.output = output\n        if output is None:\n            self.forward = self.only_forward\n\n    def forward(self, x):\n        fwd = self.layers[1](self.layers[0](x))\n        return fwd, 1, self.output(fwd)\n\n    def only_forward(self, x):\n        fwd = self.layers[1](self.layers[0](x))\n        return fwd, 0, None\n'])


@pytest.mark.xfail(strict=True, reason='frontend-error: FrontendError: <program>.py:1: `__dycl_condition` may be used before it is assigned [compiler.py:871]')
def test_seed_144_matches_eager():
    from dycl.fuzz.oracle import check_program

    outcome = check_program(PROGRAM, None)
    assert outcome.status == "ok", outcome.detail
