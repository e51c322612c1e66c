"""Found by `python -m dycl.fuzz --count 12 --seed 515000 --backend tvm`, seed 515004 (form
`data_dependent_size`), shrunk: "tvm backend, sub-DNN @subdnn_1: torch.export failed:
Constraints violated (L['in0'].size()[0])", on ONNX Runtime too. `len(vals)` of the values
`unique_consecutive` returns, in tensor math (`0.1 * (len(vals) + inv.float().mean())`):
the sub-DNN reads the runtime size as `prim.NumToTensor`, whose trace specialises the size,
so export refused the dynamic dim at every example size. The backends' rebuild now writes
it as `aten.scalar_tensor` of the symbolic size (`fx_rebuild`)."""

import pytest

from dycl.fuzz.oracle import check_program
from dycl.fuzz.program import Program, Research

TEXT = """\
rows23 = torch.stack([x[0], -x[0], torch.sigmoid(x[0]) - 0.5])
labels24 = (rows23.sum(1) > 0.05).long() + (rows23[:, 0] > 0.1).long()
vals25, inv26, cnt27 = labels24.unique_consecutive(return_counts=True, return_inverse=True, dim=0)
x = x + 0.1 * (len(vals25) + inv26.float().mean())"""

PROGRAM = Program(seed=515004, input_shape=(1, 4), modules={"m11": "nn.Linear(4, 3)"}, helpers={},
                  prologue=["x = x.clone()"], body=[Research(TEXT, "data_dependent_size")], epilogue=["return self.m11(x)"])


@pytest.mark.parametrize("backend", ["onnxruntime", pytest.param("tvm", marks=pytest.mark.slow)])
def test_a_runtime_size_in_tensor_math_compiles(backend):
    outcome = check_program(PROGRAM, backend)
    assert outcome.status == "ok" and outcome.inputs >= 2, outcome.detail
