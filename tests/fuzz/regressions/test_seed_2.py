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

from dycl.fuzz.program import Break, Cond, For, If, Line, Program, While  # noqa: F401

PROGRAM = Program(seed=2, input_shape=(1, 4), modules={'m6': 'nn.Linear(4, 3)'}, helpers={}, prologue=['count = 0', 'outs = []'], body=[Line(text='x = torch.tanh(x)')], epilogue=['outs.append(x)', 'return [self.m6(x), count, torch.stack(outs)]'], thresholds=[])


def test_seed_2_matches_eager():
    from dycl.fuzz.oracle import check_program

    outcome = check_program(PROGRAM, None)
    assert outcome.status == "ok", outcome.detail


def test_seed_2_returns_a_list_with_an_exact_int():
    import torch

    from dycl.frontend import import_module
    from dycl.fuzz.oracle import prepare
    from dycl.interpreter import find_function, output_tree, run_function, unflatten

    model, inputs, expected, _, _ = prepare(PROGRAM)
    imported = import_module(model, (inputs[0],))
    tree = output_tree(find_function(imported.module, imported.function_name))
    for x, eager in zip(inputs, expected):
        got = unflatten(tree, run_function(imported.module, [x], imported.weights, imported.function_name))
        assert type(got) is list and len(got) == 3
        assert type(got[1]) is int and got[1] == eager[1]
        torch.testing.assert_close(got[0], eager[0])
        torch.testing.assert_close(got[2], eager[2])
