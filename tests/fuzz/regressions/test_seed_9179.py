"""Found by `python -m dycl.fuzz --count 20 --seed 9173`: seed 9179 ran past the 300 s timeout
in the frontend. Its `for j1 in range(4)` reads its index (`x[:, j1] = ...`), so it was
unrolled; each `if` with a `break` or an early `return` in an arm takes the iterations after
it into every arm that goes on: 4 paths an iteration go on, so 1 + 4 + 16 + 64 copies of the
body, each captured (over 1,000 s: 15% of them in 150 s). Such a loop now runs as
a runtime loop whose index is the loop counter (`loops.unrolled_copies`,
`loops.MAX_UNROLLED_COPIES`): one copy of the body (35 s for the seed, the frontend included)."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from xdsl.dialects import scf

from dycl.frontend import import_module
from dycl.frontend.loops import MAX_UNROLLED_COPIES, unrolled_copies
from tests.frontend.helpers import max_abs_error, run


class RefineWithExits(nn.Module):
    """Refinement steps written as published early-exit code: a confidence exit that returns,
    a per-step column flip by the step index, and a `break` when the state settles."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Linear(4, 4)
        self.early_head = nn.Linear(4, 2)
        self.step = nn.Linear(4, 4)
        self.refine = nn.Linear(4, 4)
        self.head = nn.Linear(4, 2)
        self.confident = 0.45

    def forward(self, x):
        x = torch.sigmoid(self.stem(x))
        acc = torch.zeros(1, 4)
        outs = []
        for i in range(4):
            if (x > 0.5).float().mean() < 0.5:
                if F.softmax(x, -1).max() > self.confident:
                    outs.append(x.clone())
                    return self.early_head(x + acc), torch.stack(outs)
                x = x * 0.9
            elif x.std() > 0.1:
                x = x + F.elu(self.step(x))
            else:
                x = torch.tanh(x)
                outs.append(x.clone())
            x[:, i] = x[:, i] * -1.0
            if x.sum() > 0.0:
                acc = acc + x
                if x.sum().item() > 3.0:
                    break
                x = torch.relu(self.refine(x))
            if x.max().item() > 2.5:
                break
        outs.append(x.clone())
        return self.head(x + acc), torch.stack(outs)


def _inputs():
    generator = torch.Generator().manual_seed(0)
    return [torch.randn(1, 4, generator=generator) * scale + shift
            for scale in (0.1, 1.0, 3.0) for shift in (-2.0, 0.0, 2.0)]


def test_the_copies_unrolling_would_compile():
    import ast
    import inspect
    import textwrap

    loop = next(n for n in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(RefineWithExits.forward))))
                if isinstance(n, ast.For))
    assert unrolled_copies(loop.body, 4) == 1 + 4 + 16 + 64 > MAX_UNROLLED_COPIES
    assert unrolled_copies(loop.body, 1) == 1
    assert unrolled_copies([ast.parse("if x.sum() > 0:\n    x = x + 1").body[0]], 10) == 10  # no exit: joins at once


def test_a_loop_that_reads_its_index_and_may_exit_is_one_runtime_loop_and_exact():
    torch.manual_seed(0)
    model = RefineWithExits().eval()
    inputs = _inputs()
    program = import_module(model, (inputs[0],))
    assert any(isinstance(op, scf.WhileOp) for op in program.module.walk())
    lengths = set()
    for x in inputs:
        with torch.no_grad():
            expected = model(x.clone())
        lengths.add(expected[1].shape[0])
        assert max_abs_error(expected, run(program, (x,))) < 1e-5
    assert len(lengths) >= 2, lengths  # inputs leave the loop at different steps
