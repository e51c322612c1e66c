"""float()/int()/bool() of runtime Python scalars reach the compiled host program (the
reference interpreter ran `float(k)` of a runtime int, but the generated host code had no
translation for the op it was given: fuzz seed 39 on ONNX Runtime)."""

import torch
import torch.nn as nn

from tests.frontend.helpers import assert_compiled_exactly, assert_imported_exactly

INPUTS = [(torch.randn(1, 4, generator=torch.Generator().manual_seed(seed)) * scale,) for seed in range(4) for scale in (1.0, -1.0)]


class Conversions(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        k = int(x.argmax())
        b = bool(x.sum() > 0)
        f = float(x.max())
        y = self.fc(x) * float(k)
        if b:
            y = y + 1
        return y, float(k) / 3, float(b), int(b), int(f), bool(k), k


def test_conversions_are_exact():
    assert_imported_exactly(Conversions, INPUTS)


def test_conversions_compile_exactly():
    assert_compiled_exactly(Conversions, INPUTS, "onnxruntime")


def test_every_conversion_the_frontend_writes_has_a_host_translation():
    from dycl.dialects.torch_ops import op_info
    from dycl.frontend.host_expressions import conversion_op

    for func, result in ((bool, "bool"), (int, "int"), (float, "float")):
        for source in ("int", "float", "bool", "Tensor"):
            if source != result:
                name = conversion_op(func, source)
                assert op_info(name).host is not None, name


class Membership(nn.Module):
    """`k in [1, 2]` / `k not in (0, 3)` of a runtime int: `k == 1 or k == 2`, as Python
    compares (a str or None among the items is never equal)."""

    def forward(self, x):
        k = int(x.argmax())
        if k in [1, 2]:
            x = x * 2
        if k not in (0, "zero", None, 3.0):
            x = x - 1
        return x, k in {0, 1}, k not in [], float(x.sum()) in (0.5, k)


def test_membership_of_a_runtime_int_is_exact():
    assert_imported_exactly(Membership, INPUTS)


def test_membership_compiles_exactly():
    assert_compiled_exactly(Membership, INPUTS, "onnxruntime")
