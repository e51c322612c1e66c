"""Found by `python -m dycl.fuzz` (seed 2), shrunk: frontend-error.

FrontendError: <program>.py:0: a runtime list of non-tensors: only lists of tensors can depend on runtime conditions [compiler.py:362]

Source of the shrunk program:

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Fuzz2(nn.Module):
        def __init__(self):
            super().__init__()
            self.m6 = nn.Linear(4, 3)

        def forward(self, x):
            count = 0
            outs = []
            x = torch.tanh(x)
            outs.append(x)
            return [self.m6(x), count, torch.stack(outs)]"""

import pytest

from dycl.fuzz.program import Break, Cond, For, If, Line, Program, While  # noqa: F401

PROGRAM = Program(seed=2, input_shape=(1, 4), modules={'m6': 'nn.Linear(4, 3)'}, helpers={}, prologue=['count = 0', 'outs = []'], body=[Line(text='x = torch.tanh(x)')], epilogue=['outs.append(x)', 'return [self.m6(x), count, torch.stack(outs)]'], thresholds=[])


@pytest.mark.xfail(strict=True, reason='frontend-error: FrontendError: <program>.py:0: a runtime list of non-tensors: only lists of tensors can depend on runtime conditions [compiler.py:362]')
def test_seed_2_matches_eager():
    from dycl.fuzz.oracle import check_program

    outcome = check_program(PROGRAM, None)
    assert outcome.status == "ok", outcome.detail
