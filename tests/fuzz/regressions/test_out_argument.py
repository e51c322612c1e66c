"""Found by `python -m dycl.fuzz --count 100 --seed 50000` (seed 50024, frontend-error;
shrunk): `torch.tanh(x, out=o)` where x comes from a layer is refused: "cannot capture lines
[...] with torch.export (RuntimeError: tanh(): functions with out=... arguments don't support
automatic differentiation, but one of the arguments requires grad.)". Eager inference (under
`torch.no_grad()`, as the oracle runs it) is fine; the capture runs with grad enabled."""

import pytest

from dycl.fuzz.program import Line, Mutation, Program

PROGRAM = Program(
    seed=50024, input_shape=(1, 4, 6, 6), modules={"m6": "nn.Conv2d(4, 4, 3, padding=1)", "m16": "nn.Linear(4, 4)"},
    helpers={}, prologue=["x = x.clone()"],
    body=[Line("x = F.leaky_relu(self.m6(x), 0.1)"),
          Mutation("o3 = torch.zeros_like(x)\ntorch.tanh(x, out=o3)\nx = x + o3", "out_arg"),
          Line("x = torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)")],
    epilogue=["return self.m16(x)"],
)


def test_out_argument_after_a_layer_compiles():
    from dycl.fuzz.oracle import check_program

    outcome = check_program(PROGRAM, None)
    assert outcome.status == "ok", outcome.detail
