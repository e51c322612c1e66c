"""Found by `python -m dycl.fuzz --count 100 --seed 50000` (seeds 50005, 50008, 50052, all
hcfg-mismatch; shrunk, then reduced by hand): a variable that an `if` arm binds to another
variable (`y = x`) while the other arm computes it (`y = x * 0.5`) is confused with that
variable after the `if` on *every* path: on the else path `x + y` computes `y + y`.

No mutation is needed (`test_alias_in_one_arm_*`), and it predates the mutation frontend
(commit 7820c03 gives the same mismatch): the generator's one-arm mutation form
(`keep1 = x; if c: <mutate x> else: x = x * 0.5; x = x + keep1`) exposed it. The ONNX
Runtime model is wrong the same way (`dycl.compile(..., check=False)` on the example path
of the then-arm, run on an input taking the else-arm). Shrunk program of seed 50005:

    def forward(self, x):
        x = x.clone()
        keep1 = x
        if (x > 0).float().mean() < 0.1562:
            x = x
        else:
            x = x * 0.5
        x = x + keep1
        x = x.mean((2, 3))
        return self.m17(x)
"""

import os
import tempfile

import pytest

from dycl.fuzz.program import Cond, If, Line, Mutation, Program

os.environ.setdefault("DYCL_CACHE_DIR", tempfile.mkdtemp(prefix="dycl-test-cache-"))


def _program(body):
    return Program(seed=7, input_shape=(1, 6), modules={"m0": "nn.Linear(6, 2)"}, helpers={},
                   prologue=["x = x.clone()"], body=body, epilogue=["return self.m0(x)"])


ALIAS_IN_ONE_ARM = _program([
    If([(Cond("x.mean()", 0), [Line("y = x")])], [Line("y = x * 0.5")]),
    Line("x = x + y"),
])

SEED_50005 = Program(
    seed=50005, input_shape=(1, 8, 4, 4), modules={"m17": "nn.Linear(8, 8)"}, helpers={}, prologue=["x = x.clone()"],
    body=[Mutation(text="keep1 = x", form="branch_one_arm"),
          If([(Cond("(x > 0).float().mean()", 5, "<"), [])], [Line("x = x * 0.5")]),
          Line("x = x + keep1"), Line("x = x.mean((2, 3))")],
    epilogue=["return self.m17(x)"],
)

# the generated form: x changes in place in one arm while `keep1` still names it; after the
# `if`, x aliases keep1 on one path only. DyCL may refuse this (docs/conventions.md,
# "Soundness") but must not compute something else.
MUTATION_IN_ONE_ARM = _program([
    Mutation("keep1 = x", "branch_one_arm"),
    If([(Cond("x.mean()", 0), [Mutation("x[0, 1] += 1.0", "aug_subscript")])], [Line("x = x * 0.5")]),
    Line("x = x + keep1"),
])


def test_alias_in_one_arm_matches_eager_in_the_interpreter():
    from dycl.fuzz.oracle import check_program

    outcome = check_program(ALIAS_IN_ONE_ARM, None)
    assert outcome.status == "ok", outcome.detail


def test_seed_50005_matches_eager_in_the_interpreter():
    from dycl.fuzz.oracle import check_program

    outcome = check_program(SEED_50005, None)
    assert outcome.status == "ok", outcome.detail


def test_mutation_in_one_arm_of_an_alias_is_exact_or_refused():
    from dycl.fuzz.oracle import check_program

    outcome = check_program(MUTATION_IN_ONE_ARM, None)
    assert outcome.status in ("ok", "frontend-error"), outcome.detail


def test_alias_in_one_arm_compiled_for_onnxruntime_matches_eager():
    import torch

    import dycl
    from dycl.fuzz.oracle import build, candidate_inputs

    model, _, _ = build(_program([If([(Cond("x.mean()", 0), [Line("y = x")])], [Line("y = x * 0.5")]),
                                  Line("x = x + y")]))  # threshold 0.0 (no calibration)
    up, down = torch.ones(1, 6), -torch.ones(1, 6)
    compiled = dycl.compile(model, (up,), backend="onnxruntime", check=False, progress=False)
    with torch.no_grad():
        for x in (up, down, *candidate_inputs(ALIAS_IN_ONE_ARM, 4)):
            assert torch.allclose(torch.as_tensor(compiled(x)), model(x), rtol=1e-3, atol=1e-4), float(x.mean())
