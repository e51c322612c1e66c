"""Found by `python -m dycl.fuzz --count 100 --seed 50000` (seed 50060, frontend-crash;
shrunk, then reduced by hand): a `for` loop with a `break` and an early `return` whose body
reads the loop variable crashes the frontend with "AssertionError: jump to a label outside
its statement list" [compiler.py]. No mutation is needed (`x = x + j1`); it predates the
mutation frontend (commit 7820c03 crashes too): the generator only started naming loop
variables with mutation (`x[:, j1] += 0.0`, seed 50060)."""

import pytest

from dycl.fuzz.program import Break, Cond, For, If, Line, Mutation, Program


def _program(last):
    return Program(
        seed=7, input_shape=(1, 6), modules={"m0": "nn.Linear(6, 2)"}, helpers={}, prologue=["x = x.clone()"],
        body=[For(1, [Break(Cond("x.mean()", 0)), If([(Cond("x.sum()", 1), [Line("return self.m0(x)")])]), last], "j1")],
        epilogue=["return self.m0(x)"],
    )


@pytest.mark.parametrize("last", ["x = x + j1", "x[:, j1] += 0.5"])
def test_loop_variable_read_after_break_and_return_compiles(last):
    from dycl.fuzz.oracle import check_program

    statement = Line(last) if "+=" not in last else Mutation(last, "loop_index")
    outcome = check_program(_program(statement), None)
    assert outcome.status == "ok", outcome.detail
