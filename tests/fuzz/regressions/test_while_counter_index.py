"""Found by `python -m dycl.fuzz --count 100 --seed 50000` (seeds 50010, 50072, 50062,
frontend-error; shrunk): a per-step store indexed by a `while` loop's Python counter is
refused. `x[:, steps] = x[:, steps] * 1.5` (50010; `acc[:, steps1] = x[:, steps1]`, 50072):
"a runtime Python int (from `operand..`) is used where the captured tensor code needs a
constant, such as an index or a size"; `x[0, steps].mul_(1.5)` (50062): "in-place change of a
view that `x` shares memory with (a different view of the same tensor): make the view and the
in-place change in the same straight-line block", although view and change are one
statement. The same stores with a `for` loop's variable compiled. Both compile now: a store
at a basic index holding a runtime int is a copy into the view (`runs.subscript_store`), and
an in-place method on a subscript of a tensor changes that tensor where it is
(`compile_mutation_with_host_operands`)."""

import pytest

from dycl.fuzz.program import Cond, Mutation, Program, While


def _program(text):
    return Program(
        seed=50010, input_shape=(1, 4), modules={"m2": "nn.Linear(4, 3)"}, helpers={}, prologue=["x = x.clone()"],
        body=[While(2, Cond("x.sum()", 0), [Mutation(text, "loop_index")], "steps1")],
        epilogue=["return self.m2(x)"],
    )


@pytest.mark.parametrize("text", ["x[:, steps1] = x[:, steps1] * 1.5", "x[0, steps1].mul_(1.5)", "x[:, steps1] = 2.0", "x[0, steps1:steps1 + 1] -= 0.5"])
def test_store_indexed_by_a_while_counter_compiles(text):
    from dycl.fuzz.oracle import check_program

    outcome = check_program(_program(text), None)
    assert outcome.status == "ok", outcome.detail
