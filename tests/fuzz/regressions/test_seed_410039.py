"""Found by `python -m dycl.fuzz --count 60 --seed 410000 --form issue34 --backend
onnxruntime`, seed 410039 (form `buffer_state`): "dycl.compile failed in the codegen stage:
RecursionError". Buffers written in a bounded `while` whose body may `break`, or go on with
`x` unchanged on one arm of a gate: the host program's analysis of which arrays the runtime
owns (`HostEmitter.ownership`, for the in-place calls of ONNX Runtime) followed the loop's
carry from the arm that yields it unchanged back to the loop, and again, forever. A carry
passed on unchanged adds no array. The program as the generator writes it, checked with the
fuzz oracle (outputs and buffers after every call); the hand-written model is
`StepCacheInAWhile` in `tests/frontend/buffer_state_models.py`."""

from dycl.fuzz.oracle import check_program
from dycl.fuzz.program import Line, Program, Research

LOOP = """\
steps1 = 0
while steps1 < 3 and x.mean() > -1.0:
    if x.sum() > 0.5:
        if x.std() > 2.0:
            break
        x = self.m1(x)
        x = x * 1.5 + 1.0
    else:
        if x.sum() < -0.5:
            break
    self.fz_cache.index_copy_(0, (self.fz_steps % 4).view(1), x.detach())
    self.fz_steps += 1
    self.fz_mean.mul_(0.5)
    self.fz_mean += 0.5 * x.detach()[0]
    steps1 += 1"""

PROGRAM = Program(
    seed=410039, input_shape=(1, 4), modules={"m0": "nn.Linear(4, 4)", "m1": "nn.Linear(4, 4)"}, helpers={}, prologue=[],
    body=[Line("x = self.m0(x)"), Research(LOOP, "buffer_state"),
          Research("x = x + 0.1 * torch.tanh(self.fz_cache.mean(0, keepdim=True)) + 0.1 * self.fz_mean[None]", "buffer_state")],
    epilogue=["return x"],
    init=['self.register_buffer("fz_steps", torch.tensor(0))', 'self.register_buffer("fz_cache", torch.zeros(4, 4))',
          'self.register_buffer("fz_mean", torch.zeros(4), persistent=False)'],
    buffers=["fz_steps", "fz_cache", "fz_mean"],
)


def test_buffers_written_in_a_while_that_may_break_on_onnxruntime():
    outcome = check_program(PROGRAM, "onnxruntime")
    assert outcome.status == "ok" and outcome.inputs >= 2, outcome.detail
