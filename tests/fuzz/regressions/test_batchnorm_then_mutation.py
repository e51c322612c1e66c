"""Found by `python -m dycl.fuzz --count 100 --seed 50000` (seeds 50039, 50063, 50094,
50095, 50099, frontend-error; 50039 shrunk): an in-place change in a run that also applies a
`BatchNorm2d` (eval) cannot be captured: "cannot capture lines [...] with torch.export
(AssertionError: aot_autograd expected to have an entirely functional graph, but found
%_native_batch_norm_legit ...)". This refuses the most common block of research CNNs,
conv -> BatchNorm -> `nn.ReLU(inplace=True)`. Shrunk program of seed 50039:

    def forward(self, x):            # input (1, 4, 6, 6); m0 = nn.BatchNorm2d(4)
        x = x.clone()
        count = 0
        x = self.m0(x)
        x = x.mean((2, 3))
        x[None, :, 2] = 1.0
        return self.m9(x), count
"""

import pytest

from dycl.fuzz.program import Line, Mutation, Program

MODULES = {"c": "nn.Conv2d(4, 4, 3, padding=1)", "b": "nn.BatchNorm2d(4)", "r": "nn.ReLU(inplace=True)",
           "h": "nn.Linear(4, 3)"}
CASES = {
    "conv_bn_relu_inplace": [Line("x = self.r(self.b(self.c(x)))")],
    "bn_relu_": [Line("x = self.b(x)"), Mutation("x.relu_()", "relu_")],
    "bn_store": [Line("x = self.b(x)"), Mutation("x[:, 0] = 0.0", "store_int")],
    "seed_50039": [Line("x = self.b(x)"), Line("x = x.mean((2, 3))"), Mutation("x[None, :, 2] = 1.0", "store_none")],
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_batchnorm_then_in_place_change_compiles(case):
    from dycl.fuzz.oracle import check_program

    body = CASES[case] + ([] if case == "seed_50039" else [Line("x = x.mean((2, 3))")])
    program = Program(seed=50039, input_shape=(1, 4, 6, 6), modules=MODULES, helpers={}, prologue=["x = x.clone()"],
                      body=body, epilogue=["return self.h(x)"])
    outcome = check_program(program, None)
    assert outcome.status == "ok", outcome.detail
