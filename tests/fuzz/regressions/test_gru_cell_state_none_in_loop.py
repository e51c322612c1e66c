"""Found by `python -m dycl.fuzz --count 300 --seed 90000 --backend interpreter` and
`--count 40 --seed 91000` (ONNX Runtime): 16 of 340 programs, pipeline-error (seeds 90003,
90033, 90034, 90072, 90076, 90090, 90105, 90174, 90238, 90274, 90288, 90292, 91010, 91011,
91024, 91035; reduced by hand): an `nn.GRUCell` whose state is None on the first step of a
constant-trip loop,

    def forward(self, x):                   # x: (1, 4)
        state1 = None
        for i1 in range(1):                 # (any trip count)
            state1 = self.r0(x, state1)     # nn.GRUCell(4, 4)
        x = x + 0.5 * state1
        return self.m0(x)

imports, but the reference interpreter fails on the imported program:
"torch.aten.linear: Expected a proper Tensor but got None (or an undefined Tensor in C++) for
argument #0 'self'" (the None first state reaches a linear of the cell). The same loop with an
`nn.LSTMCell` (None, then a tuple) is exact, and so are `h = self.r0(x)`, `self.r0(x, None)`
and `h = self.r0(x); h = self.r0(x, h)` in straight-line code.

Cause: a variable that is None before a runtime loop and a tensor after entered the loop as
a tensor-typed stand-in for the None (right for `logits = None` that the body only assigns),
although the body read it. A None the body reads before assigning is now a change of
structure: a constant-trip loop is unrolled, a `while` refused at its line (tested below).
"""

import pytest

from dycl.fuzz.program import Cond, For, If, Line, Program, Research, While

IMPORTS = ["import numpy as np", "from torch.autograd import Variable"]


def _program(cell, trips, read="state1", in_if=False):
    body = [Research("state1 = None", "gru_cell"),
            For(trips, [Research("state1 = self.r0(x, state1)", "gru_cell")], var="i1"),
            Research(f"x = x + 0.5 * {read}", "gru_cell")]
    if in_if:
        body = [If([(Cond("x.mean()", 0), body)])]
    return Program(seed=90003, input_shape=(1, 4), modules={"m0": "nn.Linear(4, 4)", "r0": f"nn.{cell}(4, 4)"},
                   helpers={}, prologue=[], body=[Line("x = torch.tanh(x)"), *body], epilogue=["return self.m0(x)"],
                   imports=IMPORTS)


@pytest.mark.parametrize("trips, in_if", [(1, False), (2, False), (2, True)])
def test_gru_cell_with_a_state_that_starts_as_none_in_a_loop(trips, in_if):
    from dycl.fuzz.oracle import check_program

    outcome = check_program(_program("GRUCell", trips, in_if=in_if), None)
    assert outcome.status == "ok", outcome.detail


def test_lstm_cell_with_a_state_that_starts_as_none_in_a_loop():
    from dycl.fuzz.oracle import check_program

    outcome = check_program(_program("LSTMCell", 2, read="state1[0]"), None)
    assert outcome.status == "ok", outcome.detail


def test_a_none_state_read_in_a_while_loop_is_refused_at_the_loop():
    from dycl.fuzz.oracle import check_program

    body = [Research("state1 = None", "gru_cell"),
            While(2, Cond("x.mean()", 0), [Research("state1 = self.r0(x, state1)", "gru_cell"),
                                           Line("x = torch.tanh(x + state1)")], "steps1"),
            Line("x = x + 0.5")]
    program = Program(seed=90003, input_shape=(1, 4), modules={"m0": "nn.Linear(4, 4)", "r0": "nn.GRUCell(4, 4)"},
                      helpers={}, prologue=[], body=body, epilogue=["return self.m0(x)"], imports=IMPORTS)
    outcome = check_program(program, None)
    assert outcome.status == "frontend-error" and "changes structure in a runtime loop" in outcome.detail, outcome.detail
