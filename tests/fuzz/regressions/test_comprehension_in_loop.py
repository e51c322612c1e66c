"""Found by `python -m dycl.fuzz --count 300 --seed 90000 --backend interpreter` and
`--count 40 --seed 91000` (ONNX Runtime): 11 of 340 programs (seeds 90016, 90059, 90099,
90180, 90203, 90234, 90240, 90291, 91017, 91020, 91029; reduced by hand): a list
comprehension or a generator expression in the body of a loop is refused with an internal
error about the frontend's own name for the comprehension variable:

    def forward(self, x):                   # x: (1, 4)
        x = torch.tanh(x)
        for _ in range(2):
            ys = [head(x) for head in self.r0]       # nn.ModuleList of 2 Linear(4, 4)
            x = x + ys[0]
        return self.m0(x)

"<file>:N: running lines [N, N+1] on example values failed: NameError: name '__comp3_head'
is not defined". It is the same with a `while` loop, `sum(head(x) for head in self.r0)`,
`[self.r0[j](x) for j in range(2)]` and `[x * k for k in (0.5, 1.5)]`; in straight-line code,
in an `if` arm, or in a helper called from the loop, the comprehension compiles exactly.
The oracle reports these as frontend-crash (a FrontendError about an internal name).
Cause: liveness counted the comprehension's own variable as written by the statement and, in
a loop, as read by it, so the run returned `__comp3_head`. Comprehension variables are now
local to their comprehension in `liveness.names_read`/`names_written`, as Python scopes them.
"""

import pytest

from dycl.fuzz.program import Cond, For, If, Line, Program, Research, While

HEADS = {"r0": "nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])"}
COMPREHENSIONS = {
    "modulelist": "ys = [head(x) for head in self.r0]\nx = x + ys[0]",
    "genexp": "x = x + sum(head(x) for head in self.r0)",
    "range": "ys = [self.r0[j](x) for j in range(2)]\nx = x + ys[0]",
    "tuple": "ys = [x * k for k in (0.5, 1.5)]\nx = x + ys[0]",
    "numpy_confs": "confs1 = [torch.max(F.softmax(head(x), 1)) for head in self.r0]\nx = x * (0.5 + float(np.mean(confs1)))",
}


def _program(stmt):
    return Program(seed=90016, input_shape=(1, 4), modules={"m0": "nn.Linear(4, 4)", **HEADS}, helpers={},
                   prologue=[], body=[Line("x = torch.tanh(x)"), stmt], epilogue=["return self.m0(x)"],
                   imports=["import numpy as np", "from torch.autograd import Variable"])


@pytest.mark.parametrize("loop", ["for", "while"])
@pytest.mark.parametrize("kind", sorted(COMPREHENSIONS))
def test_comprehension_in_a_loop_body(kind, loop):
    from dycl.fuzz.oracle import check_program

    body = [Research(COMPREHENSIONS[kind], "head_comprehension")]
    stmt = For(2, body) if loop == "for" else While(2, Cond("x.mean()", 0), body, "steps1")
    outcome = check_program(_program(stmt), None)
    assert outcome.status == "ok", outcome.detail


@pytest.mark.parametrize("where", ["straight", "if"])
def test_comprehension_outside_loops(where):
    from dycl.fuzz.oracle import check_program

    stmt = Research(COMPREHENSIONS["modulelist"], "head_comprehension")
    if where == "if":
        stmt = If([(Cond("x.mean()", 0), [stmt])])
    outcome = check_program(_program(stmt), None)
    assert outcome.status == "ok", outcome.detail
