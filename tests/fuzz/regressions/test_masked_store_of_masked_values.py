"""Found when tests/fuzz/test_hostile.py's fixture program (seed 601, max_conditions=1) became a
mutating program: a masked store whose value reads the masked elements,
`y1[y1.abs() > 1.0] = y1[y1.abs() > 1.0] * 0.5` (a common way to shrink outliers), fails the
pipeline instead of compiling or being refused at its line: "HCFGError: @forward: op 11
(torch.aten.index.Tensor): tensor of shape ?:float32 inside a would-be sub-DNN: its shape is
not determined by the entry shapes". (`x[x >= 0.5] = 1.0`, a constant value, compiles.)"""

import pytest

from dycl.fuzz.program import Line, Mutation, Program

PROGRAM = Program(
    seed=601, input_shape=(1, 4), modules={"m0": "nn.Linear(4, 4)"}, helpers={}, prologue=["x = x.clone()"],
    body=[Line("x = self.m0(x) * 2.0"), Mutation("x[x.abs() > 1.0] = x[x.abs() > 1.0] * 0.5", "store_mask")],
    epilogue=["return x"],
)


def test_masked_store_of_the_masked_values_compiles():
    from dycl.fuzz.oracle import check_program

    outcome = check_program(PROGRAM, None)
    assert outcome.status == "ok", outcome.detail
