"""Found while writing the fuzzer: the shrinker emptied an `if` body into `pass`, which the
frontend rejected ("`Pass` statement") although it is plain Python with nothing to compile."""

from dycl.fuzz.program import Cond, If, Line, Program

PROGRAM = Program(
    seed=7,
    input_shape=(1, 4),
    modules={"m0": "nn.Linear(4, 4)"},
    helpers={},
    prologue=[],
    body=[If([(Cond("x.mean()", 0), [Line("pass")])], [Line("x = torch.relu(self.m0(x))")])],
    epilogue=["return x"],
)


def test_pass_in_a_branch_compiles():
    from dycl.fuzz.oracle import check_program

    outcome = check_program(PROGRAM, None)
    assert outcome.status == "ok", outcome.detail
