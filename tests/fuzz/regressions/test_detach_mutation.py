"""Found by `python -m dycl.fuzz --count 100 --seed 50000` (seeds 50043, 50074,
hcfg-mismatch; shrunk, then reduced by hand): an in-place change through `.detach()` or
`.data` (`x.detach().mul_(0.9)`, `x.data.mul_(0.9)`, `d = x.detach(); d.mul_(0.9)`) is
dropped: the compiled program computes as if x had not changed. It predates the mutation
frontend (commit 7820c03 gives the same mismatch). docs/conventions.md ("Soundness") says the
receiver of `y.detach().mul_(2)` is a mutated name: it must be exact or refused.

Shrunk program of seed 50074 (leaf 1 differs by 9.05):

    def forward(self, x):
        x = x.clone()
        outs = []
        x.detach().mul_(-1.0)
        outs.append(x)
        return self.m9(x), torch.stack(outs)

and of seed 50043 (leaf 0 differs by 0.232):

    def forward(self, x):            # input (1, 8, 6, 6)
        x = x.clone()
        acc = torch.zeros(1, 8)
        x = x.mean((2, 3))
        x.detach().mul_(0.9)
        x = x + acc
        return self.m11(x)
"""

import pytest

from dycl.fuzz.program import Line, Mutation, Program


def _program(lines, epilogue=("return self.m0(x)",)):
    return Program(seed=7, input_shape=(1, 6), modules={"m0": "nn.Linear(6, 2)"}, helpers={},
                   prologue=["x = x.clone()", "outs = []"], body=[Line("x = torch.tanh(x)"), *lines],
                   epilogue=list(epilogue))


CASES = {
    "detach": [Mutation("x.detach().mul_(0.9)", "detach_method")],
    "data": [Mutation("x.data.mul_(0.9)", "data_method")],
    "detached_name": [Mutation("d = x.detach()\nd.mul_(0.9)", "detach_method")],
    "detach_store": [Mutation("d = x.detach()\nd[:, :2] = 0.5", "detach_method")],
}

SEED_50074 = Program(
    seed=50074, input_shape=(1, 8), modules={"m9": "nn.Linear(8, 8)"}, helpers={},
    prologue=["x = x.clone()", "outs = []"], body=[Mutation("x.detach().mul_(-1.0)", "detach_method")],
    epilogue=["outs.append(x)", "return self.m9(x), torch.stack(outs)"],
)


@pytest.mark.parametrize("case", sorted(CASES))
def test_change_through_detach_or_data_is_exact_or_refused(case):
    from dycl.fuzz.oracle import check_program

    outcome = check_program(_program(CASES[case]), None)
    assert outcome.status in ("ok", "frontend-error"), outcome.detail


def test_seed_50074_is_exact_or_refused():
    from dycl.fuzz.oracle import check_program

    outcome = check_program(SEED_50074, None)
    assert outcome.status in ("ok", "frontend-error"), outcome.detail
